package throttlekit

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// rssKiB reads this process's resident memory from /proc/self/status.
func rssKiB(t testing.TB) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			var kib int64
			fmt.Sscan(strings.TrimPrefix(line, "VmRSS:"), &kib)
			return kib
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// The flood runs in a child process (this test binary re-run with TK_FLOOD_KEYS set), so
// VmRSS measures the store. CI floods 3M keys (more than 3x the bound); scripts/key-flood.sh
// floods 10M.
func TestAFloodOfDistinctKeysKeepsADefaultStoreFlatAtItsBound(t *testing.T) {
	if n := os.Getenv("TK_FLOOD_KEYS"); n != "" {
		var keys int
		fmt.Sscan(n, &keys)
		baseline := rssKiB(t)
		store, _ := NewMemoryStore()
		s, _ := GCRA(10, 60000, 5)
		l, err := NewLimiter(s, &Options{Store: store})
		if err != nil {
			t.Fatal(err)
		}
		var settled int64
		for i := 0; i < keys; i++ {
			if _, err := l.CheckAt(fmt.Sprintf("user:%d", i), 1, 1000000); err != nil {
				t.Fatal(err)
			}
			if i+1 == 2*DefaultMaxKeys {
				settled = rssKiB(t)
			}
		}
		ev, _ := store.Evictions()
		fmt.Printf("FLOOD %d %d %d %d\n", baseline, settled, rssKiB(t), ev)
		return
	}
	keys := uint64(3000000)
	if n := os.Getenv("TK_FLOOD_TOTAL"); n != "" {
		fmt.Sscan(n, &keys)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestAFloodOfDistinctKeysKeepsADefaultStoreFlatAtItsBound$", "-test.count=1")
	cmd.Env = append(os.Environ(), fmt.Sprintf("TK_FLOOD_KEYS=%d", keys))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var base, settled, end int64
	var ev uint64
	i := strings.Index(string(out), "FLOOD ")
	if i < 0 {
		t.Fatalf("no result line in %s", out)
	}
	fmt.Sscan(string(out[i+6:]), &base, &settled, &end, &ev)
	fmt.Printf("go flood of %d keys: baseline %d KiB, settled %d KiB, end %d KiB, %d evictions\n", keys, base, settled, end, ev)
	t.Logf("baseline %d KiB, settled %d KiB, end %d KiB, %d evictions", base, settled, end, ev)
	// The documented share of a full default store is 105-125 MB; Go's own heap adds a little.
	if end-base > 130*1024 {
		t.Fatalf("%d KiB resident above the baseline", end-base)
	}
	if end*50 > settled*51 {
		t.Fatalf("resident memory grew from %d to %d KiB past the bound", settled, end)
	}
	if ev < keys-uint64(DefaultMaxKeys) {
		t.Fatalf("%d evictions for %d keys", ev, keys)
	}
}

func TestMemoryLimitsAndEvictions(t *testing.T) {
	store, err := NewMemoryStoreWithLimits(MemoryLimits{MaxKeys: 64, MaxKeyLength: 8})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := GCRA(10, 60000, 10)
	l, _ := NewLimiter(s, &Options{Store: store, Prefix: "p"})
	for i := 0; i < 164; i++ {
		if _, err := l.CheckAt(fmt.Sprint(i), 1, 0); err != nil {
			t.Fatal(err)
		}
	}
	if ev, _ := store.Evictions(); ev != 100 {
		t.Fatalf("want 100 evictions, got %d", ev)
	}
	if _, err := l.CheckAt("1234567", 1, 0); !errors.Is(err, ErrConfigInvalid) || !strings.Contains(err.Error(), "maxKeyLength") {
		t.Fatalf("a 9-byte full key must be config_invalid, got %v", err)
	}
	def, _ := NewLimiter(s, nil)
	if _, err := def.CheckAt(strings.Repeat("k", DefaultMaxKeyLength), 1, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := def.CheckAt(strings.Repeat("k", DefaultMaxKeyLength+1), 1, 0); !errors.Is(err, ErrConfigInvalid) {
		t.Fatalf("want config_invalid, got %v", err)
	}
	unbounded, err := NewMemoryStoreWithLimits(MemoryLimits{MaxKeys: NoLimit, MaxKeyLength: NoLimit})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := NewLimiter(s, &Options{Store: unbounded})
	if _, err := u.CheckAt(strings.Repeat("k", 10000), 1, 0); err != nil {
		t.Fatal(err)
	}
}

func TestMetricsCountChecksByOutcome(t *testing.T) {
	s, _ := FixedWindow(2, 1000)
	off, _ := NewLimiter(s, nil)
	if m, err := off.Metrics(); err != nil || m.Enabled {
		t.Fatalf("metrics must be off unless asked: %+v %v", m, err)
	}
	l, _ := NewLimiter(s, &Options{Metrics: true})
	for i := 0; i < 5; i++ {
		if _, err := l.CheckAt("k", 1, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.CheckAt(strings.Repeat("k", 300), 1, 0); !errors.Is(err, ErrConfigInvalid) {
		t.Fatalf("want config_invalid, got %v", err)
	}
	m, err := l.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if !m.Enabled || m.Allowed != 2 || m.Denied != 3 || m.Errors["config_invalid"] != 1 || m.Errors["store_unavailable"] != 0 {
		t.Fatalf("unexpected metrics %+v", m)
	}
	if len(m.LatencyCounts) != len(m.LatencyBoundsUs)+1 || m.LatencyCount != 0 {
		t.Fatalf("unexpected histogram %+v", m)
	}
}

func TestMetricsCountPeeksForecastsMultiAndShaper(t *testing.T) {
	s, _ := FixedWindow(2, 1000)
	l, _ := NewLimiter(s, &Options{Metrics: true})
	l.CheckAt("k", 1, 0)
	l.PeekAt("k", 0)
	l.PeekAt("other", 0)
	l.ForecastAt("k", 2, 0)
	if m, err := l.Metrics(); err != nil || m.Allowed != 1 || m.Denied != 0 || m.Peeks != 2 || m.Forecasts != 1 {
		t.Fatalf("peeks and forecasts apart from checks: %+v %v", m, err)
	}

	off, _ := NewMultiLimiter(All, []Dimension{{Name: "ip", Strategy: s, CostMultiplier: 1}}, nil)
	if m, err := off.Metrics(); err != nil || m.Enabled {
		t.Fatalf("multi metrics must be off unless asked: %+v %v", m, err)
	}
	multi, err := NewMultiLimiter(All, []Dimension{{Name: "ip", Strategy: s, CostMultiplier: 1}}, &Options{Metrics: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := multi.CheckAt([]string{"10.0.0.1"}, 1, 100); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := multi.CheckAt([]string{"a", "b"}, 1, 100); !errors.Is(err, ErrConfigInvalid) {
		t.Fatalf("two keys for one dimension: want config_invalid, got %v", err)
	}
	if m, err := multi.Metrics(); err != nil || !m.Enabled || m.Allowed != 2 || m.Denied != 1 || m.Errors["config_invalid"] != 1 {
		t.Fatalf("multi: %+v %v", m, err)
	}

	sh, err := NewShaper(10, 150, &Options{Metrics: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ { // 0 and 100 ms: accepted; 200 ms: past max_queue_ms
		if _, err := sh.ReserveAt("k", 1, 1000); err != nil {
			t.Fatal(err)
		}
	}
	if m, err := sh.Metrics(); err != nil || !m.Enabled || m.Allowed != 2 || m.Denied != 1 || m.LatencyCount != 0 {
		t.Fatalf("shaper: %+v %v", m, err)
	}
}
