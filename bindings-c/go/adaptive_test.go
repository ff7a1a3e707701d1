package throttlekit

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func newFixed(t *testing.T, limit int) *AdaptiveLimiter {
	t.Helper()
	l, err := NewAdaptiveLimiter(`{"algorithm":"fixed","initialLimit":` + strconv.Itoa(limit) + `}`)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestAdaptiveBadOptionsNameTheField(t *testing.T) {
	for json, field := range map[string]string{
		`{"initialLimit":0}`:                                                   "initialLimit",
		`{"algorithm":"fixed","initialLimit":-1}`:                              "initialLimit",
		`{"partitions":[{"name":"a","percent":60},{"name":"b","percent":50}]}`: "partitions",
		`{"algorithm":"vegas","backoff":0.5}`:                                  "backoff",
		`{"limit":3}`:                                                          "limit",
	} {
		_, err := NewAdaptiveLimiter(json)
		if !errors.Is(err, ErrConfigInvalid) || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: want config_invalid naming %s, got %v", json, field, err)
		}
	}
}

func TestAdaptiveTryAcquireAndRelease(t *testing.T) {
	l := newFixed(t, 2)
	a, _, err := l.TryAcquire("")
	if err != nil || a == nil {
		t.Fatal(a, err)
	}
	b, _, _ := l.TryAcquire("")
	c, rej, err := l.TryAcquire("")
	if err != nil || c != nil || rej == nil || rej.Limit != 2 || rej.Inflight != 2 || rej.RetryAfterSecs != 1 {
		t.Fatalf("want a rejection at 2 of 2, got %v %+v %v", c, rej, err)
	}
	if ok, err := a.Release(Success); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, err := a.Release(Dropped); ok || err != nil {
		t.Fatalf("a second release: want false, got %v %v", ok, err)
	}
	if _, err := b.ReleaseRTT(Success, -time.Microsecond); !errors.Is(err, ErrConfigInvalid) || !strings.Contains(err.Error(), "rtt") {
		t.Fatalf("negative rtt: %v", err)
	}
	if _, err := b.Release(Outcome(9)); !errors.Is(err, ErrConfigInvalid) {
		t.Fatalf("unknown outcome: %v", err)
	}
	if l.Inflight() != 1 {
		t.Fatalf("b stays held after bad releases: inflight %d", l.Inflight())
	}
	b.free() // garbage collected without a release: a leak
	m := l.Metrics()
	if m.Inflight != 0 || m.Acquired != 2 || m.Rejected != 1 || m.Succeeded != 1 || m.Leaked != 1 || m.Ignored != 1 {
		t.Fatalf("metrics: %+v", m)
	}
	if _, _, err := l.TryAcquire("batch"); !errors.Is(err, ErrConfigInvalid) {
		t.Fatalf("unknown partition: %v", err)
	}
	if err := l.AdvanceVirtual(time.Second); !errors.Is(err, ErrNotImplemented) {
		t.Fatalf("AdvanceVirtual on a real clock: %v", err)
	}
	if _, err := ParseOutcome("timeout"); !errors.Is(err, ErrConfigInvalid) {
		t.Fatalf("ParseOutcome(timeout): %v", err)
	}
}

// serveOne is the documented shape: a deferred release whose outcome the body sets.
func serveOne(l *AdaptiveLimiter, work func() error) (shed bool, err error) {
	permit, _, err := l.TryAcquire("")
	if err != nil || permit == nil {
		return permit == nil, err
	}
	outcome := Ignore
	defer func() { permit.Release(outcome) }()
	if err := work(); err != nil {
		outcome = Dropped
		return false, err
	}
	outcome = Success
	return false, nil
}

func TestAdaptiveDeferredRelease(t *testing.T) {
	l, err := NewAdaptiveLimiterVirtual(`{"algorithm":"fixed","initialLimit":1}`)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if shed, err := serveOne(l, func() error { return nil }); shed || err != nil {
		t.Fatal(shed, err)
	}
	if shed, _ := serveOne(l, func() error { return errors.New("timeout below") }); shed {
		t.Fatal("shed with a free slot")
	}
	m := l.Metrics()
	if m.Inflight != 0 || m.Succeeded != 1 || m.Dropped != 1 {
		t.Fatalf("metrics: %+v", m)
	}
}

func TestAdaptiveAcquireWaitsAndTimesOut(t *testing.T) {
	l := newFixed(t, 1)
	held, _, _ := l.TryAcquire("")
	start := time.Now()
	p, rej, err := l.AcquireTimeout("", 50*time.Millisecond)
	if err != nil || p != nil || rej == nil || rej.Inflight != 1 || time.Since(start) < 49*time.Millisecond {
		t.Fatalf("want a rejection after 50 ms, got %v %+v %v after %v", p, rej, err, time.Since(start))
	}
	go func() {
		time.Sleep(30 * time.Millisecond)
		held.Release(Ignore)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, _, err = l.Acquire(ctx, "")
	if err != nil || p == nil {
		t.Fatalf("the waiter should get the released slot: %v %v", p, err)
	}
	// Full again: a context deadline is core's rejection; a cancel is ctx.Err() at once.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 40*time.Millisecond)
	defer cancel2()
	q, rej, err := l.Acquire(ctx2, "")
	if err != nil || q != nil || rej == nil || rej.Limit != 1 {
		t.Fatalf("deadline: want core's rejection, got %v %+v %v", q, rej, err)
	}
	p.Release(Success)
}

func TestAdaptiveAcquireCancelledLeavesTheQueueAndTakesNoPermit(t *testing.T) {
	l := newFixed(t, 1)
	// Already cancelled: ctx.Err() without asking, even with room.
	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	if p, r, err := l.Acquire(done, ""); p != nil || r != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled ctx: want context.Canceled, got %v %+v %v", p, r, err)
	}
	if m := l.Metrics(); m.Acquired != 0 || m.Inflight != 0 || m.Waiting != 0 {
		t.Fatalf("a cancelled ctx took something: %+v", m)
	}

	// Cancelled while waiting (no deadline: the wait could last a day): ctx.Err() at once, and
	// the waiter leaves the queue with it: no place held, and the freed slot goes to no one.
	held, _, _ := l.TryAcquire("")
	ctx, cancel := context.WithCancel(context.Background())
	type answer struct {
		p   *Permit
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		p, _, err := l.Acquire(ctx, "")
		ch <- answer{p, err}
	}()
	for l.Metrics().Waiting == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	a := <-ch
	if a.p != nil || !errors.Is(a.err, context.Canceled) {
		t.Fatalf("cancel: want context.Canceled, got %v %v", a.p, a.err)
	}
	if m := l.Metrics(); m.Waiting != 0 || m.Rejected != 0 {
		t.Fatalf("the cancelled wait is still queued, or counted as the limiter's refusal: %+v", m)
	}
	held.Release(Success)
	if m := l.Metrics(); m.Inflight != 0 || m.Acquired != 1 || m.Ignored != 0 {
		t.Fatalf("the freed slot went to the cancelled wait: %+v", m)
	}
	// And the limiter serves the next caller.
	if p, _, err := l.TryAcquire(""); err != nil || p == nil {
		t.Fatalf("after the cancel: %v %v", p, err)
	} else {
		p.Release(Success)
	}
}

func TestAdaptiveInflightNeverExceedsLimitUnder8Goroutines(t *testing.T) {
	l := newFixed(t, 3)
	var wg sync.WaitGroup
	var mu sync.Mutex
	maxSeen := uint32(0)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				p, _, err := l.TryAcquire("")
				if err != nil {
					t.Error(err)
					return
				}
				if p == nil {
					continue
				}
				n := l.Inflight()
				mu.Lock()
				if n > maxSeen {
					maxSeen = n
				}
				mu.Unlock()
				p.Release(Success)
			}
		}()
	}
	wg.Wait()
	if maxSeen > 3 || l.Inflight() != 0 {
		t.Fatalf("max in flight %d (limit 3), %d left", maxSeen, l.Inflight())
	}
}
