package throttlekit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// A start aligned to a minute (fixed windows are aligned to the epoch) and a window of 60 s of
// the manual clock: the sync path sends the limiter's now to Redis, so window boundaries are
// exact, and Redis expires a window's key 60 s of real time after writing it, far longer than
// a test takes.
const (
	leaseT0     = int64(1700000040000)
	leaseWindow = int64(60000)
)

func TestLeaseOptionsAreValidated(t *testing.T) {
	fw, _ := FixedWindow(10, 1000)
	g, _ := GCRA(10, 1000, 0)
	cases := []struct {
		s     *Strategy
		opts  Options
		field string
	}{
		{fw, Options{Mode: ModeLeased, Lease: LeaseOptions{Batch: 1<<53 + 1}}, "lease.batch"},
		{fw, Options{Mode: ModeLeased, Lease: LeaseOptions{Batch: 4, LowWater: 4}}, "lease.lowWater"},
		{fw, Options{Mode: ModeLeased, Lease: LeaseOptions{MaxKeys: -1}}, "lease.maxKeys"},
		{fw, Options{Mode: ModeCachedDeny, Lease: LeaseOptions{MaxKeys: -1}}, "lease.maxKeys"},
		{g, Options{Mode: ModeLeased, Lease: LeaseOptions{WindowCoupled: true}}, "lease.windowCoupled"},
		{fw, Options{Mode: Mode(7)}, "mode 7"},
		{fw, Options{Lease: LeaseOptions{Batch: 10}}, "lease options need mode"},
	}
	for _, c := range cases {
		l, err := NewLimiter(c.s, &c.opts)
		var e *Error
		if l != nil || !errors.As(err, &e) || e.Code != CodeConfigInvalid || !strings.Contains(e.Message, c.field) {
			t.Errorf("%+v: want config_invalid naming %s, got %v", c.opts, c.field, err)
		}
	}
	for _, m := range []Mode{ModeStrict, ModeCachedDeny, ModeLeased} {
		l, err := NewLimiter(fw, &Options{Mode: m})
		if err != nil || l.Mode() != m {
			t.Fatalf("mode %d: %v", m, err)
		}
		l.Close()
	}
}

// One limiter on a memory store: one lease of Batch, the rest spent locally, given back on
// ReleaseLeases and on Close.
func TestLeasedCreditsAreSpentLocallyAndGivenBack(t *testing.T) {
	clock, _ := NewManualClock(leaseT0)
	fw, _ := FixedWindow(10, uint64(leaseWindow))
	store, _ := NewMemoryStore()
	l, err := NewLimiter(fw, &Options{Store: store, Clock: clock, Mode: ModeLeased, Lease: LeaseOptions{Batch: 4, WindowCoupled: true}})
	if err != nil {
		t.Fatal(err)
	}
	strict, _ := NewLimiter(fw, &Options{Store: store, Clock: clock})
	defer strict.Close()
	for i := 0; i < 2; i++ {
		if d, err := l.Check("k", 1); err != nil || !d.Allowed || d.ResetAt != leaseT0+leaseWindow {
			t.Fatalf("check %d: %+v %v", i, d, err)
		}
	}
	if s, _ := l.TierStats(); s.Leases != 1 || s.LocalAdmits != 1 {
		t.Fatalf("stats %+v", s)
	}
	if d, _ := strict.Peek("k"); d.Remaining != 6 {
		t.Fatalf("the store should have counted the whole batch: %+v", d)
	}
	if n, err := l.ReleaseLeases(ReleaseAllKeys); err != nil || n != 2 {
		t.Fatalf("released %d, %v", n, err)
	}
	l.Check("k", 1)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if d, _ := strict.Peek("k"); d.Remaining != 7 {
		t.Fatalf("Close should give the 3 unspent credits back: %+v", d)
	}
}

// privateRedis starts a redis-server of this test's own (stopped at cleanup), so INFO
// commandstats counts only this test's calls. Each attempt takes a fresh port, and a
// connection only counts while our own process is still running (as startRedis).
func privateRedis(t *testing.T) string {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		// Reason: needs a redis-server binary; bindings-c/test.sh installs it.
		t.Skip("redis-server is not installed")
	}
	for attempt := 0; attempt < 6; attempt++ {
		port := freePort(t)
		cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		kill := func() { cmd.Process.Kill(); <-exited }
		url := fmt.Sprintf("redis://127.0.0.1:%d/0", port)
		for i := 0; i < 100 && !isClosed(exited); i++ {
			if store, err := ConnectRedis(url, RedisOptions{TimeoutMs: 300}); err == nil {
				store.Close()
				if !isClosed(exited) {
					t.Cleanup(kill)
					return url
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		kill()
	}
	t.Fatal("redis-server did not start on any of 6 fresh ports")
	return ""
}

// scriptCalls is the number of script calls the server at url has run (INFO commandstats:
// fcall, fcall_ro, evalsha, eval), read over a plain RESP connection.
func scriptCalls(t *testing.T, url string) uint64 {
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "redis://"), "/0")
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprint(conn, "INFO commandstats\r\n")
	r := bufio.NewReader(conn)
	head, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(head, "$") {
		t.Fatalf("INFO reply %q: %v", head, err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(head[1:]))
	body := make([]byte, n+2)
	if _, err := io.ReadFull(r, body); err != nil {
		t.Fatal(err)
	}
	var calls uint64
	for _, line := range strings.Split(string(body), "\r\n") {
		for _, cmd := range []string{"fcall", "fcall_ro", "evalsha", "eval"} {
			if prefix := "cmdstat_" + cmd + ":calls="; strings.HasPrefix(line, prefix) {
				rest := strings.TrimPrefix(line, prefix)
				v, _ := strconv.ParseUint(rest[:strings.IndexByte(rest, ',')], 10, 64)
				calls += v
			}
		}
	}
	return calls
}

// fleet runs n limiters (each on its own Redis connection) on one key of a fixed window
// (limit per 60 s of a manual clock), taking turns, 100 steps of 0.6 s per window for windows
// windows, and returns the admissions per window (by the time they were made) and the script
// calls the server ran. With carry, every limiter checks only once in even windows, at the
// last step (leasing a batch and keeping batch−1 credits).
func fleet(t *testing.T, url, prefix string, n int, limit uint64, opts Options, windows int, carry bool) ([]int, uint64) {
	fw, _ := FixedWindow(limit, uint64(leaseWindow))
	clock, _ := NewManualClock(leaseT0)
	ls := make([]*Limiter, n)
	for i := range ls {
		store, err := ConnectRedis(url, RedisOptions{TimeoutMs: 5000})
		if err != nil {
			t.Fatal(err)
		}
		o := opts
		o.Store, o.Clock, o.Prefix = store, clock, prefix
		if ls[i], err = NewLimiter(fw, &o); err != nil {
			t.Fatal(err)
		}
		store.Close()
	}
	ls[0].Reset("hot")
	before := scriptCalls(t, url)
	per := make([]int, windows)
	for w := 0; w < windows; w++ {
		for step := int64(0); step < 100; step++ {
			if carry && w%2 == 0 && step != 99 {
				continue
			}
			clock.Set(leaseT0 + int64(w)*leaseWindow + step*leaseWindow/100)
			for _, l := range ls {
				d, err := l.Check("hot", 1)
				if err != nil {
					t.Fatal(err)
				}
				if d.Allowed {
					per[w]++
				}
			}
		}
	}
	calls := scriptCalls(t, url) - before
	for _, l := range ls {
		l.Close()
	}
	return per, calls
}

// Leased mode on Redis: far fewer script calls than strict (counted by the server), exactly
// the limit per window when coupled, within limit + N·(batch−1) when not.
func TestLeasedFleetOnRedis(t *testing.T) {
	url := privateRedis(t)
	const n, limit, batch, windows = 3, 20, 5, 5
	strictPer, strictCalls := fleet(t, url, "go-strict", n, limit, Options{}, windows, false)
	coupledPer, coupledCalls := fleet(t, url, "go-coupled", n, limit,
		Options{Mode: ModeLeased, Lease: LeaseOptions{Batch: batch, WindowCoupled: true}}, windows, false)
	leasedPer, leasedCalls := fleet(t, url, "go-leased", n, limit,
		Options{Mode: ModeLeased, Lease: LeaseOptions{Batch: batch}}, windows, false)
	for w := 0; w < windows; w++ {
		if strictPer[w] != limit || coupledPer[w] != limit {
			t.Errorf("window %d: strict %d, coupled %d, want exactly %d", w, strictPer[w], coupledPer[w], limit)
		}
		if leasedPer[w] > limit+n*(batch-1) {
			t.Errorf("window %d: leased admitted %d > %d", w, leasedPer[w], limit+n*(batch-1))
		}
	}
	if strictCalls != n*100*windows {
		t.Errorf("strict should run one script per decision: %d", strictCalls)
	}
	if coupledCalls*20 > strictCalls || leasedCalls*20 > strictCalls {
		t.Errorf("script calls: strict %d, leased coupled %d, leased %d", strictCalls, coupledCalls, leasedCalls)
	}
	// Credits carried over into a flooded window: coupled still admits exactly the limit,
	// uncoupled the bound itself, limit + N·(batch−1).
	coupledCarry, _ := fleet(t, url, "go-coupled-carry", n, limit,
		Options{Mode: ModeLeased, Lease: LeaseOptions{Batch: batch, WindowCoupled: true}}, windows, true)
	leasedCarry, _ := fleet(t, url, "go-leased-carry", n, limit,
		Options{Mode: ModeLeased, Lease: LeaseOptions{Batch: batch}}, windows, true)
	for w := 0; w < windows; w++ {
		want, wantLeased := n, n
		if w%2 == 1 {
			want, wantLeased = limit, limit+n*(batch-1)
		}
		if coupledCarry[w] != want || leasedCarry[w] != wantLeased {
			t.Errorf("carry window %d: coupled %d (want %d), leased %d (want %d)", w, coupledCarry[w], want, leasedCarry[w], wantLeased)
		}
	}
	fmt.Printf("go lease fleet, credits carried over: per window coupled %v, leased %v (bound %d)\n", coupledCarry, leasedCarry, limit+n*(batch-1))
	fmt.Printf("go lease fleet: %d decisions; script calls (INFO commandstats): strict %d, leased coupled %d, leased %d; per window strict %v coupled %v leased %v\n",
		n*100*windows, strictCalls, coupledCalls, leasedCalls, strictPer, coupledPer, leasedPer)
}

// Goroutines share leased limiters on one key at one instant: whatever the leases in flight
// and the strict calls beside them interleave, the units admitted plus those still held as
// credits (given back at the end) are exactly the limit.
func TestLeasedConcurrentGoroutinesOnRedis(t *testing.T) {
	url := privateRedis(t)
	fw, _ := FixedWindow(200, uint64(leaseWindow))
	clock, _ := NewManualClock(leaseT0 + 5)
	var admitted, calls int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	before := scriptCalls(t, url)
	var ls []*Limiter
	for i := 0; i < 3; i++ {
		store, _ := ConnectRedis(url, RedisOptions{TimeoutMs: 5000})
		l, err := NewLimiter(fw, &Options{Store: store, Clock: clock, Prefix: "go-conc", Mode: ModeLeased, Lease: LeaseOptions{Batch: 10}})
		store.Close()
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; j < 100; j++ {
					d, err := l.Check("hot", 1)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					if d.Allowed {
						admitted++
					}
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	calls = int64(scriptCalls(t, url) - before)
	var held uint64
	for _, l := range ls {
		n, err := l.ReleaseLeases(ReleaseAllKeys)
		if err != nil {
			t.Fatal(err)
		}
		held += n
		l.Close()
	}
	if admitted+int64(held) != 200 || admitted < 200-3*9 {
		t.Fatalf("admitted %d of 1200 and %d credits held, want 200 in all", admitted, held)
	}
	fmt.Printf("go lease goroutines: 12 goroutines on 3 limiters, 1200 decisions: %d admitted + %d credits given back = limit 200; %d script calls\n", admitted, held, calls)
	if calls*4 > 1200 {
		t.Fatalf("%d script calls for 1200 decisions", calls)
	}
}

// cached_deny answers a denial without Redis: no script call while it holds, and it holds
// even after another limiter reset the key in the store, until its retry time.
func TestCachedDenyAnswersWithoutRedis(t *testing.T) {
	url := privateRedis(t)
	fw, _ := FixedWindow(3, uint64(leaseWindow))
	clock, _ := NewManualClock(leaseT0 + 1000)
	store, _ := ConnectRedis(url, RedisOptions{TimeoutMs: 5000})
	defer store.Close()
	cached, err := NewLimiter(fw, &Options{Store: store, Clock: clock, Prefix: "go-deny", Mode: ModeCachedDeny})
	if err != nil {
		t.Fatal(err)
	}
	defer cached.Close()
	strict, _ := NewLimiter(fw, &Options{Store: store, Clock: clock, Prefix: "go-deny"})
	defer strict.Close()
	for i := 0; i < 4; i++ {
		d, _ := cached.Check("k", 1)
		if d.Allowed != (i < 3) {
			t.Fatalf("check %d: %+v", i, d)
		}
	}
	strict.Reset("k")
	before := scriptCalls(t, url)
	for i := 0; i < 100; i++ {
		if d, _ := cached.Check("k", 1); d.Allowed || d.RetryAfterMs != leaseWindow-1000 {
			t.Fatalf("cached denial %d: %+v", i, d)
		}
	}
	if got := scriptCalls(t, url) - before; got != 0 {
		t.Fatalf("%d script calls while the denial was cached", got)
	}
	if s, _ := cached.TierStats(); s.LocalDenials != 100 || s.Leases != 0 {
		t.Fatalf("stats %+v", s)
	}
	clock.Set(leaseT0 + leaseWindow)
	if d, _ := cached.Check("k", 1); !d.Allowed {
		t.Fatalf("after the retry time the store is asked again: %+v", d)
	}
}
