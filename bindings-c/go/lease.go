package throttlekit

// #include <stdlib.h>
// #include <throttlekit.h>
import "C"

import (
	"runtime"
	"unsafe"
)

// Mode is a limiter's two-tier mode (docs/leasing.md): how a hot key is spared store calls.
type Mode uint32

// Modes.
const (
	// ModeStrict: every decision is one store call (the default).
	ModeStrict Mode = C.TK_MODE_STRICT
	// ModeCachedDeny: a denial is kept until its RetryAfterMs and answered without the store.
	// Exact: it never admits more than strict mode.
	ModeCachedDeny Mode = C.TK_MODE_CACHED_DENY
	// ModeLeased: units are leased Batch at a time and spent locally; N processes over-admit
	// at most N·(Batch−1) beyond the strategy's bound, nothing with WindowCoupled.
	ModeLeased Mode = C.TK_MODE_LEASED
)

// LeaseOptions are the options of ModeLeased (and MaxKeys of ModeCachedDeny). A zero field
// takes core's default; a value out of range is ErrConfigInvalid naming the field.
type LeaseOptions struct {
	Batch         uint64 // units per lease, the asking request's included (0: 100; at most 2^53)
	LowWater      uint64 // a spend leaving this many credits or fewer tops them up; below Batch
	WindowCoupled bool   // credits expire at the window's reset: exactly limit per window (fixed window, quotas)
	MaxKeys       int    // keys the tier remembers (0: 10000; negative: ErrConfigInvalid)
}

// ReleaseAllKeys is ReleaseLeases's idleMs for every key, however recently used.
const ReleaseAllKeys = int64(C.TK_RELEASE_ALL_KEYS)

// lease is the C options for opts (nil: core's defaults, which the zero LeaseOptions means).
func (o LeaseOptions) lease() *C.tk_lease_options {
	if o == (LeaseOptions{}) {
		return nil
	}
	c := C.tk_lease_options_default()
	if o.Batch != 0 {
		c.batch = C.uint64_t(o.Batch)
	}
	c.low_water = C.uint64_t(o.LowWater)
	c.window_coupled = C.bool(o.WindowCoupled)
	switch {
	case o.MaxKeys > 0:
		c.max_keys = C.size_t(o.MaxKeys)
	case o.MaxKeys < 0:
		c.max_keys = 0 // refused by core: lease.maxKeys must be at least 1
	}
	return &c
}

// cOptions is lease() in C memory, for a config struct handed to C (cgo forbids Go memory
// holding Go pointers): nil for the defaults; call free when the C call has returned.
func (o LeaseOptions) cOptions() (p *C.tk_lease_options, free func()) {
	lease := o.lease()
	if lease == nil {
		return nil, func() {}
	}
	p = (*C.tk_lease_options)(C.malloc(C.sizeof_tk_lease_options))
	*p = *lease
	return p, func() { C.free(unsafe.Pointer(p)) }
}

// TierStats are a limiter's local tier counters, cumulative since it was made (all zero in
// ModeStrict).
type TierStats struct {
	LocalAdmits        uint64 // admitted from local credits (no store call)
	LocalDenials       uint64 // denied from a cached denial (no store call)
	Leases             uint64 // leases sent to the store (one store call each)
	LateCreditsDropped uint64 // credits dropped because their grant arrived after its expiry
	CreditsReturned    uint64 // credits given back to the store
}

// Mode is the limiter's two-tier mode.
func (l *Limiter) Mode() Mode {
	var m C.uint32_t
	if err := call(func() C.tk_result { return C.tk_limiter_mode(l.p, &m) }); err != nil {
		return ModeStrict // only a closed limiter fails, and it has no tier
	}
	runtime.KeepAlive(l)
	return Mode(m)
}

// TierStats returns the limiter's tier counters.
func (l *Limiter) TierStats() (TierStats, error) {
	var s C.tk_tier_stats
	err := call(func() C.tk_result { return C.tk_limiter_tier_stats(l.p, &s) })
	runtime.KeepAlive(l)
	if err != nil {
		return TierStats{}, err
	}
	return tierStatsFrom(&s), nil
}

func tierStatsFrom(s *C.tk_tier_stats) TierStats {
	return TierStats{
		LocalAdmits: uint64(s.local_admits), LocalDenials: uint64(s.local_denials), Leases: uint64(s.leases),
		LateCreditsDropped: uint64(s.late_credits_dropped), CreditsReturned: uint64(s.credits_returned),
	}
}

// ReleaseLeases gives back the unspent leased credits of keys unused for idleMs
// (ReleaseAllKeys: every key) where the strategy can take them back, and returns the units
// taken back. Close does it for every key. 0 in ModeStrict.
func (l *Limiter) ReleaseLeases(idleMs int64) (uint64, error) {
	var n C.uint64_t
	err := call(func() C.tk_result { return C.tk_limiter_release_leases(l.p, C.int64_t(idleMs), &n) })
	runtime.KeepAlive(l)
	return uint64(n), err
}

// Mode is the multi limiter's two-tier mode.
func (m *MultiLimiter) Mode() Mode {
	var mode C.uint32_t
	if err := call(func() C.tk_result { return C.tk_multi_limiter_mode(m.p, &mode) }); err != nil {
		return ModeStrict // only a closed limiter fails, and it has no tier
	}
	runtime.KeepAlive(m)
	return Mode(mode)
}

// TierStats returns the multi limiter's tier counters: LocalAdmits and LocalDenials count
// requests, Leases fused lease calls (one store call each).
func (m *MultiLimiter) TierStats() (TierStats, error) {
	var s C.tk_tier_stats
	err := call(func() C.tk_result { return C.tk_multi_limiter_tier_stats(m.p, &s) })
	runtime.KeepAlive(m)
	if err != nil {
		return TierStats{}, err
	}
	return tierStatsFrom(&s), nil
}

// ReleaseLeases gives back each dimension key's unspent leased credits (keys unused for
// idleMs; ReleaseAllKeys: every key) where that dimension's strategy can take them back, and
// returns the units taken back. Close does it for every key. 0 in ModeStrict.
func (m *MultiLimiter) ReleaseLeases(idleMs int64) (uint64, error) {
	var n C.uint64_t
	err := call(func() C.tk_result { return C.tk_multi_limiter_release_leases(m.p, C.int64_t(idleMs), &n) })
	runtime.KeepAlive(m)
	return uint64(n), err
}
