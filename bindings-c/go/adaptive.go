package throttlekit

// #include <stdlib.h>
// #include <throttlekit.h>
import "C"

import (
	"context"
	"runtime"
	"sync"
	"time"
)

// Outcome is how a request that held an adaptive permit ended.
type Outcome uint32

const (
	// Success: the request completed; its round trip is a latency sample.
	Success Outcome = C.TK_OUTCOME_SUCCESS
	// Ignore: not a latency signal (a client error, a cancelled request, a cache hit).
	Ignore Outcome = C.TK_OUTCOME_IGNORE
	// Dropped: a timeout or a 503 from below, a congestion signal.
	Dropped Outcome = C.TK_OUTCOME_DROPPED
)

// ParseOutcome is the Outcome named "success", "ignore" or "dropped"; another name is
// ErrConfigInvalid.
func ParseOutcome(name string) (Outcome, error) {
	cname := cString(name)
	defer free(cname)
	var o C.uint32_t
	if err := call(func() C.tk_result { return C.tk_outcome_from_name(cname, &o) }); err != nil {
		return 0, err
	}
	return Outcome(o), nil
}

// Rejection is a refused acquire: the limit was full (or the wait ran out).
type Rejection struct {
	Limit          uint32 // the limit when the request was refused
	Inflight       uint32 // the requests in flight then
	RetryAfterMs   uint64 // a retry hint: the latest window's latency percentile
	RetryAfterSecs uint64 // the Retry-After header's value (whole seconds, at least 1)
}

// AdaptiveMetrics is a snapshot of an adaptive limiter's counters.
type AdaptiveMetrics struct {
	Limit, Inflight, Waiting                     uint32
	Acquired, Rejected                           uint64
	Succeeded, Dropped, Ignored, Leaked          uint64
	ShortRTTs, Windows, BaselineRTTUs, LatencyUs uint64
	SlowStart                                    bool
}

// AdaptiveLimiter is a concurrency limit that follows the service's latency (docs/adaptive.md).
// Safe for concurrent use; Close releases it (permits still held stay valid).
type AdaptiveLimiter struct{ p *C.tk_adaptive }

// Permit is one admitted request. Release it once with its outcome, usually deferred:
//
//	permit, rej, err := limiter.TryAcquire("")
//	if permit == nil { ... shed with rej ... }
//	outcome := throttlekit.Ignore
//	defer func() { permit.Release(outcome) }()
//	... outcome = throttlekit.Success ...
//
// Releasing twice is harmless (the second returns false). A permit that is garbage collected
// without a release is released as Ignore and counted in Leaked.
type Permit struct {
	mu sync.Mutex
	p  *C.tk_adaptive_permit
}

func newAdaptive(json string, f func(*C.char, **C.tk_adaptive) C.tk_result) (*AdaptiveLimiter, error) {
	cjson := cString(json)
	defer free(cjson)
	var p *C.tk_adaptive
	if err := call(func() C.tk_result { return f(cjson, &p) }); err != nil {
		return nil, err
	}
	l := &AdaptiveLimiter{p}
	runtime.SetFinalizer(l, (*AdaptiveLimiter).Close)
	return l, nil
}

// NewAdaptiveLimiter builds a limiter from core's JSON configuration ("{}": gradient2 with every
// default; e.g. {"algorithm":"aimd","initialLimit":10}). Bad options are ErrConfigInvalid naming
// the field.
func NewAdaptiveLimiter(json string) (*AdaptiveLimiter, error) {
	return newAdaptive(json, func(j *C.char, out **C.tk_adaptive) C.tk_result { return C.tk_adaptive_new(j, out) })
}

// NewAdaptiveLimiterVirtual is NewAdaptiveLimiter on a virtual clock at 0 that moves only with
// AdvanceVirtual (for tests and the vectors).
func NewAdaptiveLimiterVirtual(json string) (*AdaptiveLimiter, error) {
	return newAdaptive(json, func(j *C.char, out **C.tk_adaptive) C.tk_result {
		return C.tk_adaptive_new_virtual(j, out)
	})
}

// AdvanceVirtual moves a virtual limiter's clock forward; ErrNotImplemented on a real one.
func (l *AdaptiveLimiter) AdvanceVirtual(d time.Duration) error {
	err := call(func() C.tk_result { return C.tk_adaptive_advance_virtual(l.p, C.uint64_t(d.Nanoseconds())) })
	runtime.KeepAlive(l)
	return err
}

// admit is TryAcquire (timeoutMs < 0), AcquireTimeout, or (cancel not nil) Acquire's wait that
// cancel ends: one cgo call, no closure (the hot path), on one OS thread so that a failure's
// message is this call's.
func (l *AdaptiveLimiter) admit(partition string, timeoutMs int64, cancel *C.tk_cancel) (*Permit, *Rejection, error) {
	cpart := optString(partition)
	defer free(cpart)
	var p *C.tk_adaptive_permit
	var r C.tk_adaptive_rejection
	var err error
	runtime.LockOSThread()
	var res C.tk_result
	if cancel != nil {
		res = C.tk_adaptive_acquire_cancellable(l.p, cpart, C.uint64_t(timeoutMs), cancel, &p, &r)
	} else if timeoutMs < 0 {
		res = C.tk_adaptive_try_acquire(l.p, cpart, &p, &r)
	} else {
		res = C.tk_adaptive_acquire(l.p, cpart, C.uint64_t(timeoutMs), &p, &r)
	}
	if res != C.TK_RESULT_OK {
		err = lastError(res)
	}
	runtime.UnlockOSThread()
	runtime.KeepAlive(l)
	if err != nil {
		return nil, nil, err
	}
	if p == nil {
		return nil, &Rejection{uint32(r.limit), uint32(r.inflight), uint64(r.retry_after_ms), uint64(r.retry_after_secs)}, nil
	}
	permit := &Permit{p: p}
	runtime.SetFinalizer(permit, (*Permit).free)
	return permit, nil, nil
}

// TryAcquire asks for a permit without waiting: a permit, or a nil permit and the rejection.
// partition "" is none; an unknown one is ErrConfigInvalid.
func (l *AdaptiveLimiter) TryAcquire(partition string) (*Permit, *Rejection, error) {
	return l.admit(partition, -1, nil)
}

// AcquireTimeout waits up to timeout for a permit (in the configured FIFO or LIFO order),
// blocking the calling goroutine's thread; running out is a rejection.
func (l *AdaptiveLimiter) AcquireTimeout(partition string, timeout time.Duration) (*Permit, *Rejection, error) {
	return l.admit(partition, millis(timeout), nil)
}

func millis(d time.Duration) int64 {
	if ms := d.Milliseconds(); ms > 0 {
		return ms
	}
	return 0
}

// maxWait bounds a wait whose context has no deadline (the C call needs a timeout).
const maxWait = 24 * time.Hour

// Acquire waits for a permit until ctx's deadline (core's rejection when it passes). A ctx
// already cancelled returns ctx.Err() without asking; one cancelled during the wait returns
// ctx.Err() at once, and the wait leaves the limiter's queue with it (it holds no place, thread
// or permit afterwards: a permit granted just before the cancel is released as Ignore).
func (l *AdaptiveLimiter) Acquire(ctx context.Context, partition string) (*Permit, *Rejection, error) {
	timeout := maxWait
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if ctx.Done() == nil {
		return l.AcquireTimeout(partition, timeout)
	}
	var cancel *C.tk_cancel
	if err := call(func() C.tk_result { return C.tk_cancel_new(&cancel) }); err != nil {
		return nil, nil, err
	}
	defer C.tk_cancel_free(cancel)
	// A cancel ends the library's wait; a deadline does not: the wait ends at the same
	// deadline with core's own answer (a rejection, counted).
	ended := make(chan struct{})
	fired := make(chan bool, 1)
	go func() {
		select {
		case <-ctx.Done():
			if ctx.Err() == context.Canceled {
				C.tk_cancel_fire(cancel)
				fired <- true
				return
			}
		case <-ended:
		}
		fired <- false
	}()
	p, r, err := l.admit(partition, millis(timeout), cancel)
	close(ended)
	if <-fired {
		if p != nil {
			p.Release(Ignore)
		}
		return nil, nil, ctx.Err()
	}
	return p, r, err
}

// Limit is the current limit.
func (l *AdaptiveLimiter) Limit() uint32 {
	var n C.uint32_t
	C.tk_adaptive_limit(l.p, &n)
	runtime.KeepAlive(l)
	return uint32(n)
}

// Inflight is the number of permits held now.
func (l *AdaptiveLimiter) Inflight() uint32 {
	var n C.uint32_t
	C.tk_adaptive_inflight(l.p, &n)
	runtime.KeepAlive(l)
	return uint32(n)
}

// Metrics is a consistent snapshot of the limiter's counters.
func (l *AdaptiveLimiter) Metrics() AdaptiveMetrics {
	var m C.tk_adaptive_snapshot
	C.tk_adaptive_metrics(l.p, &m)
	runtime.KeepAlive(l)
	return AdaptiveMetrics{
		Limit: uint32(m.limit), Inflight: uint32(m.inflight), Waiting: uint32(m.waiting),
		Acquired: uint64(m.acquired), Rejected: uint64(m.rejected),
		Succeeded: uint64(m.succeeded), Dropped: uint64(m.dropped), Ignored: uint64(m.ignored), Leaked: uint64(m.leaked),
		ShortRTTs: uint64(m.short_rtts), Windows: uint64(m.windows),
		BaselineRTTUs: uint64(m.baseline_rtt_us), LatencyUs: uint64(m.latency_us),
		SlowStart: bool(m.slow_start),
	}
}

// Close releases the limiter (idempotent).
func (l *AdaptiveLimiter) Close() error {
	if l.p != nil {
		C.tk_adaptive_free(l.p)
		l.p = nil
		runtime.SetFinalizer(l, nil)
	}
	return nil
}

// release releases the live handle (measured when measured, else with rttNs) and frees it; a
// released permit answers false without a call.
func (p *Permit) release(outcome Outcome, measured bool, rttNs int64) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.p == nil {
		return false, nil
	}
	var released C.bool
	var err error
	runtime.LockOSThread()
	var res C.tk_result
	if measured {
		res = C.tk_adaptive_permit_release(p.p, C.uint32_t(outcome), &released)
	} else {
		res = C.tk_adaptive_permit_release_rtt(p.p, C.uint32_t(outcome), C.int64_t(rttNs), &released)
	}
	if res != C.TK_RESULT_OK {
		err = lastError(res)
	}
	runtime.UnlockOSThread()
	if err != nil {
		return false, err
	}
	C.tk_adaptive_permit_free(p.p)
	p.p = nil
	runtime.SetFinalizer(p, nil)
	return bool(released), nil
}

// Release ends the request with outcome, its round trip measured by core since the grant.
// It returns whether this call released the permit (false: it already was). An outcome
// other than Success, Ignore or Dropped is ErrConfigInvalid and leaves the permit held.
func (p *Permit) Release(outcome Outcome) (bool, error) {
	return p.release(outcome, true, 0)
}

// ReleaseRTT is Release with a round trip the caller measured (negative: ErrConfigInvalid,
// and the permit stays held).
func (p *Permit) ReleaseRTT(outcome Outcome, rtt time.Duration) (bool, error) {
	return p.release(outcome, false, rtt.Nanoseconds())
}

// free is the finalizer: a permit never released is a leak (core counts it, as Ignore).
func (p *Permit) free() {
	p.mu.Lock()
	defer p.mu.Unlock()
	C.tk_adaptive_permit_free(p.p)
	p.p = nil
}
