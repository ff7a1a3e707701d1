package throttlekit

/*
#include <stdlib.h>
#include <throttlekit.h>

// The result and the decision by value: Go keeps both on its stack (a pointer handed to C
// would move the decision to the heap on every call), and the key is passed as Go's own
// counted string, not copied into a NUL-terminated one.
//
// On a failure the library's detail message (kept per OS thread) is copied here, inside the
// same cgo call and so on the same thread, into a malloc'd string the caller frees: Go need not
// lock the goroutine to its thread around the call. (NULL if malloc failed.)
typedef struct { tk_result result; tk_decision decision; char *message; } go_checked;

#define GO_MESSAGE_MAX 512

static char *go_last_message(void) {
	char *m = malloc(GO_MESSAGE_MAX);
	if (m != NULL) {
		tk_last_error_message(m, GO_MESSAGE_MAX, NULL);
	}
	return m;
}

// The limiter comes as an integer: it is C memory, and a pointer argument would make cgo check
// it on every call (and box the check's arguments).
static inline go_checked go_limiter_check(uintptr_t l, _GoString_ key, uint64_t cost) {
	go_checked out;
	out.result = tk_limiter_check_n((const tk_limiter *)l, _GoStringPtr(key), _GoStringLen(key), cost, &out.decision);
	out.message = out.result == TK_RESULT_OK ? NULL : go_last_message();
	return out;
}
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// FailPolicy decides what a limiter answers when its store is unavailable.
type FailPolicy uint32

// Fail policies.
const (
	FailPolicyDefault FailPolicy = C.TK_FAIL_POLICY_DEFAULT     // closed for quotas, raise otherwise
	FailClosed        FailPolicy = C.TK_FAIL_POLICY_FAIL_CLOSED // deny, Fallback = true
	FailOpen          FailPolicy = C.TK_FAIL_POLICY_FAIL_OPEN   // allow, Fallback = true
	Raise             FailPolicy = C.TK_FAIL_POLICY_RAISE       // return ErrStoreUnavailable
)

// Options are the optional settings of a Limiter, MultiLimiter or Shaper; the zero value
// means a private memory store, the system clock, no prefix and the default fail policy.
type Options struct {
	Store      *Store // nil: a fresh private memory store
	Clock      *Clock // nil: the system clock (only the calls without an explicit now read it)
	Prefix     string // keys are stored as "prefix:key"
	FailPolicy FailPolicy
	HashTag    string // MultiLimiter only: the Redis Cluster hash tag ("": the prefix, or "tk")
	Metrics    bool   // keep counters, read with Metrics() (Limiter, MultiLimiter, Shaper)
	// Mode is the two-tier mode (ModeStrict, ModeCachedDeny, ModeLeased) and Lease
	// its options (zero: core's defaults; set with ModeStrict: ErrConfigInvalid). Limiter and
	// MultiLimiter (whose Lease.LowWater must be 0).
	Mode  Mode
	Lease LeaseOptions
}

func (o *Options) handles() (*C.tk_store, *C.tk_clock) {
	var s *C.tk_store
	var c *C.tk_clock
	if o.Store != nil {
		s = o.Store.p
	}
	if o.Clock != nil {
		c = o.Clock.p
	}
	return s, c
}

// Limiter is a strategy bound to a store, a clock and a key prefix. Safe for concurrent use.
type Limiter struct {
	p    *C.tk_limiter
	spec string // the strategy's JSON spec, for HTTP header requests
}

// NewLimiter builds a limiter for strategy (copied); opts may be nil.
func NewLimiter(strategy *Strategy, opts *Options) (*Limiter, error) {
	if opts == nil {
		opts = &Options{}
	}
	spec, err := strategy.SpecJSON()
	if err != nil {
		return nil, err
	}
	store, clock := opts.handles()
	prefix := optString(opts.Prefix)
	defer free(prefix)
	cfg := C.tk_limiter_config{store: store, clock: clock, prefix: prefix, fail_policy: C.uint32_t(opts.FailPolicy), metrics: C.bool(opts.Metrics), mode: C.uint32_t(opts.Mode)}
	lease, freeLease := opts.Lease.cOptions()
	defer freeLease()
	cfg.lease = lease
	var p *C.tk_limiter
	err = call(func() C.tk_result { return C.tk_limiter_new(strategy.p, &cfg, &p) })
	runtime.KeepAlive(strategy)
	runtime.KeepAlive(opts)
	if err != nil {
		return nil, err
	}
	l := &Limiter{p: p, spec: spec}
	runtime.SetFinalizer(l, (*Limiter).free)
	return l, nil
}

func (l *Limiter) decide(key string, f func(*C.char, *C.tk_decision) C.tk_result) (Decision, error) {
	ckey := cString(key)
	defer free(ckey)
	var d C.tk_decision
	err := call(func() C.tk_result { return f(ckey, &d) })
	runtime.KeepAlive(l)
	if err != nil {
		return Decision{}, err
	}
	return decisionFrom(&d), nil
}

// Check decides a request of cost units for key now (the limiter's clock), consuming them
// when allowed. A denial is a Decision with Allowed == false, not an error.
//
// This is the hot path: one cgo call, the key passed without a copy, nothing allocated.
func (l *Limiter) Check(key string, cost uint64) (Decision, error) {
	// No runtime.LockOSThread: the wrapper reads the per-thread error detail in the same call.
	out := C.go_limiter_check(handle(unsafe.Pointer(l.p)), key, C.uint64_t(cost))
	runtime.KeepAlive(l)
	if out.result != C.TK_RESULT_OK {
		return Decision{}, takenError(out.result, out.message)
	}
	return decisionFrom(&out.decision), nil
}

// takenError is the error for result r whose detail message a C wrapper copied into a malloc'd
// string (NULL: no detail); it frees the string.
func takenError(r C.tk_result, message *C.char) *Error {
	e := &Error{Code: Code(C.GoString(C.tk_result_code(C.uint32_t(r))))}
	if message != nil {
		e.Message = C.GoString(message)
		C.free(unsafe.Pointer(message))
	}
	return e
}

// CheckAt is Check at an explicit time (epoch ms).
func (l *Limiter) CheckAt(key string, cost uint64, nowMs int64) (Decision, error) {
	return l.decide(key, func(k *C.char, d *C.tk_decision) C.tk_result {
		return C.tk_limiter_check_at(l.p, k, C.uint64_t(cost), C.int64_t(nowMs), d)
	})
}

// Peek reports key's current capacity without consuming.
func (l *Limiter) Peek(key string) (Decision, error) {
	return l.decide(key, func(k *C.char, d *C.tk_decision) C.tk_result { return C.tk_limiter_peek(l.p, k, d) })
}

// PeekAt is Peek at an explicit time.
func (l *Limiter) PeekAt(key string, nowMs int64) (Decision, error) {
	return l.decide(key, func(k *C.char, d *C.tk_decision) C.tk_result {
		return C.tk_limiter_peek_at(l.p, k, C.int64_t(nowMs), d)
	})
}

// Forecast is the decision a Check of cost would get, consuming nothing.
func (l *Limiter) Forecast(key string, cost uint64) (Decision, error) {
	return l.decide(key, func(k *C.char, d *C.tk_decision) C.tk_result {
		return C.tk_limiter_forecast(l.p, k, C.uint64_t(cost), d)
	})
}

// ForecastAt is Forecast at an explicit time.
func (l *Limiter) ForecastAt(key string, cost uint64, nowMs int64) (Decision, error) {
	return l.decide(key, func(k *C.char, d *C.tk_decision) C.tk_result {
		return C.tk_limiter_forecast_at(l.p, k, C.uint64_t(cost), C.int64_t(nowMs), d)
	})
}

// Reset forgets key's state.
func (l *Limiter) Reset(key string) error {
	ckey := cString(key)
	defer free(ckey)
	err := call(func() C.tk_result { return C.tk_limiter_reset(l.p, ckey) })
	runtime.KeepAlive(l)
	return err
}

// Close gives unspent leased credits back (ModeLeased; an error of the store's is returned,
// the limiter is released anyway), then releases the limiter (idempotent; not concurrently
// with other calls on it).
func (l *Limiter) Close() error {
	var err error
	if l.p != nil {
		_, err = l.ReleaseLeases(ReleaseAllKeys)
	}
	l.free()
	return err
}

// free releases the handle without store I/O (the finalizer's part of Close).
func (l *Limiter) free() {
	if l.p != nil {
		C.tk_limiter_free(l.p)
		l.p = nil
		runtime.SetFinalizer(l, nil)
	}
}

// StrategySpec is the JSON spec of the limiter's strategy (Strategy.SpecJSON), which the HTTP
// middleware hands to HTTPHeaders.
func (l *Limiter) StrategySpec() string { return l.spec }

// Metrics are the counters of a limiter (a multi limiter: its combined decisions; a shaper:
// reservations accepted as allowed, rejected as denied), all cumulative since it was made:
// feed them to OpenTelemetry observable counters and an explicit-bucket histogram.
type Metrics struct {
	Enabled         bool              // false (and all zero) unless made with Options.Metrics
	Allowed         uint64            // checks the store allowed
	Denied          uint64            // checks the store denied
	FallbackAllowed uint64            // checks the fail policy allowed (store unavailable)
	FallbackDenied  uint64            // checks the fail policy denied (store unavailable)
	Peeks           uint64            // peeks answered, apart from the checks
	Forecasts       uint64            // forecasts answered, apart from the checks
	Errors          map[string]uint64 // failed calls by error code ("config_invalid", ...)
	// Latency of calls to a store outside the process: LatencyCounts[i] calls took at most
	// LatencyBoundsUs[i] µs (and more than the bound before); the last count is the rest.
	LatencyBoundsUs []uint64
	LatencyCounts   []uint64
	LatencyCount    uint64
	LatencySumUs    uint64
}

// Metrics returns the limiter's counters.
func (l *Limiter) Metrics() (Metrics, error) {
	var m C.tk_metrics
	err := call(func() C.tk_result { return C.tk_limiter_metrics(l.p, &m) })
	runtime.KeepAlive(l)
	if err != nil {
		return Metrics{}, err
	}
	return metricsOf(&m), nil
}

// metricsOf copies the C struct every Metrics() fills.
func metricsOf(m *C.tk_metrics) Metrics {
	out := Metrics{
		Enabled: bool(m.enabled), Allowed: uint64(m.allowed), Denied: uint64(m.denied),
		FallbackAllowed: uint64(m.fallback_allowed), FallbackDenied: uint64(m.fallback_denied),
		Peeks: uint64(m.peeks), Forecasts: uint64(m.forecasts),
		Errors: map[string]uint64{}, LatencyCount: uint64(m.latency_count), LatencySumUs: uint64(m.latency_sum_us),
	}
	for code := 1; code < len(m.errors); code++ {
		if name := C.GoString(C.tk_result_code(C.uint32_t(code))); name != "unknown result" {
			out.Errors[name] = uint64(m.errors[code])
		}
	}
	for _, b := range m.latency_bounds_us {
		out.LatencyBoundsUs = append(out.LatencyBoundsUs, uint64(b))
	}
	for _, n := range m.latency_counts {
		out.LatencyCounts = append(out.LatencyCounts, uint64(n))
	}
	return out
}
