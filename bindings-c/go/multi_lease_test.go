package throttlekit

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// newMulti builds a multi limiter (rule All) over a tenant limited to limit per window and an
// IP limited to 1000 per window.
func newMulti(t *testing.T, limit uint64, opts *Options) (*MultiLimiter, error) {
	t.Helper()
	tenant, _ := FixedWindow(limit, uint64(leaseWindow))
	ip, _ := FixedWindow(1000, uint64(leaseWindow))
	return NewMultiLimiter(All, []Dimension{{"tenant", tenant, 1}, {"ip", ip, 1}}, opts)
}

func TestMultiLeaseOptionsAreValidated(t *testing.T) {
	for _, c := range []struct {
		opts  Options
		field string
	}{
		{Options{Mode: ModeLeased, Lease: LeaseOptions{Batch: 1<<53 + 1}}, "lease.batch"},
		{Options{Mode: ModeLeased, Lease: LeaseOptions{Batch: 5, LowWater: 1}}, "lease.lowWater"},
		{Options{Mode: ModeCachedDeny, Lease: LeaseOptions{MaxKeys: -1}}, "lease.maxKeys"},
		{Options{Mode: Mode(7)}, "mode 7"},
		{Options{Lease: LeaseOptions{Batch: 10}}, "lease options need mode"},
	} {
		m, err := newMulti(t, 20, &c.opts)
		var e *Error
		if m != nil || !errors.As(err, &e) || e.Code != CodeConfigInvalid || !strings.Contains(e.Message, c.field) {
			t.Errorf("%+v: want config_invalid naming %s, got %v", c.opts, c.field, err)
		}
	}
	for _, mode := range []Mode{ModeStrict, ModeCachedDeny, ModeLeased} {
		m, err := newMulti(t, 20, &Options{Mode: mode})
		if err != nil || m.Mode() != mode {
			t.Fatalf("mode %d: %v", mode, err)
		}
		m.Close()
	}
}

// On a memory store: 18 requests in one window admit the same as strict with 4 fused leases
// (one store call each) instead of 18 calls; the 2 credits each dimension key still holds go
// back on ReleaseLeases, so the store admits them again.
func TestMultiLeasedCreditsAreSpentLocallyAndGivenBack(t *testing.T) {
	clock, _ := NewManualClock(leaseT0)
	store, _ := NewMemoryStore()
	leased, err := newMulti(t, 20, &Options{Store: store, Clock: clock, Mode: ModeLeased, Lease: LeaseOptions{Batch: 5}})
	if err != nil {
		t.Fatal(err)
	}
	defer leased.Close()
	keys := []string{"acme", "10.0.0.1"}
	for i := 0; i < 18; i++ {
		if d, err := leased.Check(keys, 1); err != nil || !d.Allowed {
			t.Fatalf("check %d: %+v %v", i, d, err)
		}
	}
	if s, _ := leased.TierStats(); s.Leases != 4 || s.LocalAdmits != 14 {
		t.Fatalf("stats %+v, want 4 leases and 14 local admits", s)
	}
	if back, err := leased.ReleaseLeases(ReleaseAllKeys); err != nil || back != 4 {
		t.Fatalf("released %d, %v; want 2 per dimension key", back, err)
	}
	strict, _ := newMulti(t, 20, &Options{Store: store, Clock: clock})
	defer strict.Close()
	if d, err := strict.Check(keys, 2); err != nil || !d.Allowed || d.Remaining != 0 {
		t.Fatalf("after the give-back the store should admit the last 2: %+v %v", d, err)
	}
	if s, _ := strict.TierStats(); s != (TierStats{}) {
		t.Fatalf("strict has no tier: %+v", s)
	}
}

// multiFleet runs n multi limiters (each on its own Redis connection) on one tenant, taking
// turns, 100 steps of 0.6 s per window for windows windows, and returns the admissions per
// window and the script calls the server ran.
func multiFleet(t *testing.T, url, prefix string, n int, limit uint64, opts Options, windows int) ([]int, uint64) {
	clock, _ := NewManualClock(leaseT0)
	ms := make([]*MultiLimiter, n)
	for i := range ms {
		store, err := ConnectRedis(url, RedisOptions{TimeoutMs: 5000})
		if err != nil {
			t.Fatal(err)
		}
		o := opts
		o.Store, o.Clock, o.Prefix = store, clock, prefix
		if ms[i], err = newMulti(t, limit, &o); err != nil {
			t.Fatal(err)
		}
		store.Close()
	}
	keys := []string{"hot", "10.0.0.1"}
	before := scriptCalls(t, url)
	per := make([]int, windows)
	for w := 0; w < windows; w++ {
		for step := int64(0); step < 100; step++ {
			clock.Set(leaseT0 + int64(w)*leaseWindow + step*leaseWindow/100)
			for _, m := range ms {
				d, err := m.Check(keys, 1)
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
	for _, m := range ms {
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return per, calls
}

// Leased multi limiters on Redis: at most 1/20 of strict's script calls (counted by the server),
// exactly the tenant's limit per window when coupled, within limit + N·(batch−1) when not.
func TestMultiLeasedFleetOnRedis(t *testing.T) {
	url := privateRedis(t)
	const n, limit, batch, windows = 3, 20, 5, 5
	strictPer, strictCalls := multiFleet(t, url, "go-multi-strict", n, limit, Options{}, windows)
	coupledPer, coupledCalls := multiFleet(t, url, "go-multi-coupled", n, limit,
		Options{Mode: ModeLeased, Lease: LeaseOptions{Batch: batch, WindowCoupled: true}}, windows)
	leasedPer, leasedCalls := multiFleet(t, url, "go-multi-leased", n, limit,
		Options{Mode: ModeLeased, Lease: LeaseOptions{Batch: batch}}, windows)
	for w := 0; w < windows; w++ {
		if strictPer[w] != limit || coupledPer[w] != limit {
			t.Errorf("window %d: strict %d, coupled %d, want exactly %d", w, strictPer[w], coupledPer[w], limit)
		}
		if leasedPer[w] < limit || leasedPer[w] > limit+n*(batch-1) {
			t.Errorf("window %d: leased admitted %d, want %d..%d", w, leasedPer[w], limit, limit+n*(batch-1))
		}
	}
	if strictCalls != n*100*windows {
		t.Errorf("strict should run one script per decision: %d", strictCalls)
	}
	if coupledCalls*20 > strictCalls || leasedCalls*20 > strictCalls {
		t.Errorf("script calls: strict %d, leased coupled %d, leased %d", strictCalls, coupledCalls, leasedCalls)
	}
	fmt.Printf("go multi lease fleet: %d decisions; script calls (INFO commandstats): strict %d, leased coupled %d, leased %d; per window strict %v coupled %v leased %v\n",
		n*100*windows, strictCalls, coupledCalls, leasedCalls, strictPer, coupledPer, leasedPer)
}
