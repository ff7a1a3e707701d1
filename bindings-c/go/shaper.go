package throttlekit

// #include <stdlib.h>
// #include <throttlekit.h>
import "C"

import "runtime"

// Shaper is a leaky-bucket traffic shaper: it delays instead of denying. Safe for concurrent
// use.
type Shaper struct{ p *C.tk_shaper }

func newShaper(opts *Options, f func(*C.tk_shaper_config, **C.tk_shaper) C.tk_result) (*Shaper, error) {
	if opts == nil {
		opts = &Options{}
	}
	store, clock := opts.handles()
	prefix := optString(opts.Prefix)
	defer free(prefix)
	cfg := C.tk_shaper_config{store: store, clock: clock, prefix: prefix, metrics: C.bool(opts.Metrics)}
	var p *C.tk_shaper
	err := call(func() C.tk_result { return f(&cfg, &p) })
	runtime.KeepAlive(opts)
	if err != nil {
		return nil, err
	}
	s := &Shaper{p}
	runtime.SetFinalizer(s, (*Shaper).Close)
	return s, nil
}

// NewShaper releases ratePerSec units a second and accepts waits up to maxQueueMs.
func NewShaper(ratePerSec, maxQueueMs float64, opts *Options) (*Shaper, error) {
	return newShaper(opts, func(cfg *C.tk_shaper_config, out **C.tk_shaper) C.tk_result {
		return C.tk_shaper_new(C.double(ratePerSec), C.double(maxQueueMs), cfg, out)
	})
}

// ParseShaper builds a shaper from JSON options, e.g. {"ratePerSec":10,"maxQueueMs":500}.
func ParseShaper(json string, opts *Options) (*Shaper, error) {
	cjson := cString(json)
	defer free(cjson)
	return newShaper(opts, func(cfg *C.tk_shaper_config, out **C.tk_shaper) C.tk_result {
		return C.tk_shaper_new_json(cjson, cfg, out)
	})
}

func (s *Shaper) reserve(key string, f func(*C.char, *C.tk_reservation) C.tk_result) (Reservation, error) {
	ckey := cString(key)
	defer free(ckey)
	var r C.tk_reservation
	err := call(func() C.tk_result { return f(ckey, &r) })
	runtime.KeepAlive(s)
	if err != nil {
		return Reservation{}, err
	}
	return Reservation{Accepted: bool(r.accepted), DelayMs: int64(r.delay_ms)}, nil
}

// Reserve books a departure for cost units of key now (the shaper's clock).
func (s *Shaper) Reserve(key string, cost uint64) (Reservation, error) {
	return s.reserve(key, func(k *C.char, r *C.tk_reservation) C.tk_result {
		return C.tk_shaper_reserve(s.p, k, C.uint64_t(cost), r)
	})
}

// ReserveAt is Reserve at an explicit time (epoch ms).
func (s *Shaper) ReserveAt(key string, cost uint64, nowMs int64) (Reservation, error) {
	return s.reserve(key, func(k *C.char, r *C.tk_reservation) C.tk_result {
		return C.tk_shaper_reserve_at(s.p, k, C.uint64_t(cost), C.int64_t(nowMs), r)
	})
}

// Reset forgets key's queue.
func (s *Shaper) Reset(key string) error {
	ckey := cString(key)
	defer free(ckey)
	err := call(func() C.tk_result { return C.tk_shaper_reset(s.p, ckey) })
	runtime.KeepAlive(s)
	return err
}

// Close releases the shaper (idempotent).
func (s *Shaper) Close() error {
	if s.p != nil {
		C.tk_shaper_free(s.p)
		s.p = nil
		runtime.SetFinalizer(s, nil)
	}
	return nil
}

// Metrics returns the shaper's counters (reservations accepted as Allowed, rejected as Denied).
func (s *Shaper) Metrics() (Metrics, error) {
	var c C.tk_metrics
	err := call(func() C.tk_result { return C.tk_shaper_metrics(s.p, &c) })
	runtime.KeepAlive(s)
	if err != nil {
		return Metrics{}, err
	}
	return metricsOf(&c), nil
}
