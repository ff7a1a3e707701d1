package throttlekit

// #include <stdlib.h>
// #include <throttlekit.h>
import "C"

import (
	"runtime"
	"unsafe"
)

// Rule says how a MultiLimiter admits a request.
type Rule uint32

// Rules.
const (
	All Rule = C.TK_RULE_ALL // every dimension must allow; then all commit, else none
	Any Rule = C.TK_RULE_ANY // one allowing dimension suffices; only the allowing ones commit
)

// Dimension is one named dimension of a MultiLimiter.
type Dimension struct {
	Name           string
	Strategy       *Strategy
	CostMultiplier uint64 // units charged per unit of request cost (>= 1)
}

// MultiDecision is the result of a multi-dimensional check.
type MultiDecision struct {
	Decision              // the binding dimension's decision
	Binding    string     // the binding dimension's name
	Dimensions []Decision // every dimension's own decision, in declaration order
}

// MultiLimiter decides several dimensions atomically together. Safe for concurrent use.
type MultiLimiter struct {
	p     *C.tk_multi_limiter
	names []string
	specs []string // each dimension's strategy spec, for HTTP header requests
}

// NewMultiLimiter builds a multi limiter; opts may be nil.
func NewMultiLimiter(rule Rule, dims []Dimension, opts *Options) (*MultiLimiter, error) {
	if opts == nil {
		opts = &Options{}
	}
	n := len(dims)
	// C memory, because the array holds pointers (cgo forbids Go memory holding Go pointers).
	cdims := (*C.tk_dimension)(C.calloc(C.size_t(n+1), C.size_t(unsafe.Sizeof(C.tk_dimension{}))))
	defer C.free(unsafe.Pointer(cdims))
	arr := (*[1 << 20]C.tk_dimension)(unsafe.Pointer(cdims))[:n:n]
	names := make([]string, n)
	specs := make([]string, n)
	for i, d := range dims {
		if d.Strategy != nil {
			spec, err := d.Strategy.SpecJSON()
			if err != nil {
				return nil, err
			}
			specs[i] = spec
		}
		arr[i].name = cString(d.Name)
		defer free(arr[i].name)
		if d.Strategy != nil {
			arr[i].strategy = d.Strategy.p
		}
		arr[i].cost_multiplier = C.uint64_t(d.CostMultiplier)
		names[i] = d.Name
	}
	store, clock := opts.handles()
	prefix, tag := optString(opts.Prefix), optString(opts.HashTag)
	defer free(prefix)
	defer free(tag)
	cfg := C.tk_multi_limiter_config{store: store, clock: clock, prefix: prefix,
		fail_policy: C.uint32_t(opts.FailPolicy), hash_tag: tag, metrics: C.bool(opts.Metrics),
		mode: C.uint32_t(opts.Mode)}
	lease, freeLease := opts.Lease.cOptions()
	defer freeLease()
	cfg.lease = lease
	var p *C.tk_multi_limiter
	err := call(func() C.tk_result { return C.tk_multi_limiter_new(C.uint32_t(rule), cdims, C.size_t(n), &cfg, &p) })
	runtime.KeepAlive(dims)
	runtime.KeepAlive(opts)
	if err != nil {
		return nil, err
	}
	m := &MultiLimiter{p, names, specs}
	runtime.SetFinalizer(m, (*MultiLimiter).free)
	return m, nil
}

func (m *MultiLimiter) check(keys []string, f func(**C.char, C.size_t, *C.tk_decision, *C.size_t, *C.tk_decision) C.tk_result) (MultiDecision, error) {
	ckeys := cStrings(keys)
	defer freeStrings(ckeys, len(keys))
	var d C.tk_decision
	var binding C.size_t
	// One slot per key: the library fills one per dimension and rejects any other count.
	each := (*C.tk_decision)(C.calloc(C.size_t(len(keys)+1), C.size_t(unsafe.Sizeof(C.tk_decision{}))))
	defer C.free(unsafe.Pointer(each))
	err := call(func() C.tk_result { return f(ckeys, C.size_t(len(keys)), &d, &binding, each) })
	runtime.KeepAlive(m)
	if err != nil {
		return MultiDecision{}, err
	}
	slots := (*[1 << 20]C.tk_decision)(unsafe.Pointer(each))[:len(keys):len(keys)]
	out := MultiDecision{Decision: decisionFrom(&d), Binding: m.names[binding], Dimensions: make([]Decision, len(keys))}
	for i := range slots {
		out.Dimensions[i] = decisionFrom(&slots[i])
	}
	return out, nil
}

// Check decides one request of cost against every dimension now (the limiter's clock); keys
// holds one key per dimension, in declaration order.
func (m *MultiLimiter) Check(keys []string, cost uint64) (MultiDecision, error) {
	return m.check(keys, func(k **C.char, n C.size_t, d *C.tk_decision, b *C.size_t, e *C.tk_decision) C.tk_result {
		return C.tk_multi_limiter_check(m.p, k, n, C.uint64_t(cost), d, b, e)
	})
}

// CheckAt is Check at an explicit time (epoch ms).
func (m *MultiLimiter) CheckAt(keys []string, cost uint64, nowMs int64) (MultiDecision, error) {
	return m.check(keys, func(k **C.char, n C.size_t, d *C.tk_decision, b *C.size_t, e *C.tk_decision) C.tk_result {
		return C.tk_multi_limiter_check_at(m.p, k, n, C.uint64_t(cost), C.int64_t(nowMs), d, b, e)
	})
}

// Reset forgets every dimension's state for keys.
func (m *MultiLimiter) Reset(keys []string) error {
	ckeys := cStrings(keys)
	defer freeStrings(ckeys, len(keys))
	err := call(func() C.tk_result { return C.tk_multi_limiter_reset(m.p, ckeys, C.size_t(len(keys))) })
	runtime.KeepAlive(m)
	return err
}

// Close gives unspent leased credits back (ModeLeased; an error of the store's is returned,
// the limiter is released anyway), then releases the multi limiter (idempotent; not
// concurrently with other calls on it).
func (m *MultiLimiter) Close() error {
	var err error
	if m.p != nil {
		_, err = m.ReleaseLeases(ReleaseAllKeys)
	}
	m.free()
	return err
}

// free releases the handle without store I/O (the finalizer's part of Close).
func (m *MultiLimiter) free() {
	if m.p != nil {
		C.tk_multi_limiter_free(m.p)
		m.p = nil
		runtime.SetFinalizer(m, nil)
	}
}

// Names are the dimensions' names, in declaration order.
func (m *MultiLimiter) Names() []string { return append([]string(nil), m.names...) }

// StrategySpecs are the dimensions' strategy specs (Strategy.SpecJSON), in declaration order,
// which the HTTP middleware hands to HTTPHeaders.
func (m *MultiLimiter) StrategySpecs() []string { return append([]string(nil), m.specs...) }

// Metrics returns the multi limiter's counters (each check's combined decision).
func (m *MultiLimiter) Metrics() (Metrics, error) {
	var c C.tk_metrics
	err := call(func() C.tk_result { return C.tk_multi_limiter_metrics(m.p, &c) })
	runtime.KeepAlive(m)
	if err != nil {
		return Metrics{}, err
	}
	return metricsOf(&c), nil
}
