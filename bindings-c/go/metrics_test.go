package throttlekit

// Every call counted once: N calls of fresh limiters, a multi limiter and a shaper down each Go
// entry point (Check, CheckAt, Peek, PeekAt, Forecast, ForecastAt, the leased mode,
// MultiLimiter.Check and CheckAt, Shaper.Reserve and ReserveAt) move the counters by exactly N,
// on memory and on each Redis bindings-c/test.sh starts (one node, a cluster, Sentinel).

import (
	"os"
	"testing"
)

const metricsN = 7

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func errorsTotal(m Metrics) uint64 {
	var n uint64
	for _, v := range m.Errors {
		n += v
	}
	return n
}

func pathsCountOnce(t *testing.T, store *Store, tag string) {
	timed := uint64(0)
	if store != nil {
		timed = metricsN
	}
	// Four an hour, bursts of 4: nothing refills while the test runs.
	s, err := GCRA(4, 3_600_000, 4)
	mustOK(t, err)
	paths := map[string]func(l *Limiter) error{
		"Check":   func(l *Limiter) error { _, err := l.Check("k", 1); return err },
		"CheckAt": func(l *Limiter) error { _, err := l.CheckAt("k", 1, 1000); return err },
	}
	for name, path := range paths {
		l, err := NewLimiter(s, &Options{Store: store, Prefix: "go-metrics-" + tag + "-" + name, Metrics: true})
		mustOK(t, err)
		mustOK(t, l.Reset("k"))
		for i := 0; i < metricsN; i++ {
			mustOK(t, path(l))
		}
		m, err := l.Metrics()
		mustOK(t, err)
		if m.Allowed != 4 || m.Denied != 3 || m.Peeks+m.Forecasts+m.FallbackAllowed+m.FallbackDenied+errorsTotal(m) != 0 || m.LatencyCount != timed {
			t.Errorf("%s %s: %+v", tag, name, m)
		}
	}
	l, err := NewLimiter(s, &Options{Store: store, Prefix: "go-metrics-" + tag + "-reads", Metrics: true})
	mustOK(t, err)
	for i := 0; i < metricsN; i++ {
		_, err1 := l.Peek("k")
		_, err2 := l.PeekAt("k", 1000)
		_, err3 := l.Forecast("k", 1)
		_, err4 := l.ForecastAt("k", 1, 1000)
		for _, err := range []error{err1, err2, err3, err4} {
			mustOK(t, err)
		}
	}
	m, err := l.Metrics()
	mustOK(t, err)
	if m.Peeks != 2*metricsN || m.Forecasts != 2*metricsN || m.Allowed+m.Denied != 0 || m.LatencyCount != 4*timed {
		t.Errorf("%s reads: %+v", tag, m)
	}
	l, err = NewLimiter(s, &Options{Store: store, Prefix: "go-metrics-" + tag + "-leased", Metrics: true, Mode: ModeLeased})
	mustOK(t, err)
	mustOK(t, l.Reset("k"))
	for i := 0; i < metricsN; i++ {
		_, err := l.Check("k", 1)
		mustOK(t, err)
	}
	if m, err = l.Metrics(); err != nil || m.Allowed+m.Denied != metricsN || m.Allowed > 4 {
		t.Errorf("%s leased: %+v %v", tag, m, err)
	}

	multi, err := NewMultiLimiter(All, []Dimension{{"a", s, 1}, {"b", s, 1}}, &Options{Store: store, Prefix: "go-metrics-" + tag + "-multi", Metrics: true})
	mustOK(t, err)
	mustOK(t, multi.Reset([]string{"x", "y"}))
	for i := 0; i < metricsN; i++ {
		_, err1 := multi.Check([]string{"x", "y"}, 1)
		_, err2 := multi.CheckAt([]string{"x", "y"}, 1, 1000)
		mustOK(t, err1)
		mustOK(t, err2)
	}
	if m, err = multi.Metrics(); err != nil || m.Allowed != 4 || m.Denied != 2*metricsN-4 || m.LatencyCount != 2*timed {
		t.Errorf("%s multi: %+v %v", tag, m, err)
	}
	shaper, err := NewShaper(1000, 60_000, &Options{Store: store, Prefix: "go-metrics-" + tag + "-shaper", Metrics: true})
	mustOK(t, err)
	mustOK(t, shaper.Reset("x"))
	mustOK(t, shaper.Reset("y"))
	for i := 0; i < metricsN; i++ {
		_, err1 := shaper.Reserve("x", 1)
		_, err2 := shaper.ReserveAt("y", 1, 1000)
		mustOK(t, err1)
		mustOK(t, err2)
	}
	if m, err = shaper.Metrics(); err != nil || m.Allowed+m.Denied != 2*metricsN || m.LatencyCount != 2*timed {
		t.Errorf("%s shaper: %+v %v", tag, m, err)
	}
}

func TestEveryPathCountsEachCallOnceOnMemory(t *testing.T) {
	pathsCountOnce(t, nil, "memory")
}

func TestEveryPathCountsEachCallOnceOnRedis(t *testing.T) {
	stores := []struct {
		tag, env string
		opts     RedisOptions
	}{
		{"node", "TK_REDIS_URL", RedisOptions{TimeoutMs: 5000}},
		{"cluster", "TK_REDIS_CLUSTER_URLS", RedisOptions{Mode: RedisCluster, TimeoutMs: 5000}},
		{"sentinel", "TK_REDIS_SENTINEL_PW_URLS", RedisOptions{Mode: RedisSentinel, ServiceName: "tkmain", SentinelPassword: "spw", TimeoutMs: 5000}},
	}
	for _, s := range stores {
		urls := os.Getenv(s.env)
		if urls == "" {
			// Reason: needs the servers bindings-c/test.sh starts and names in these variables.
			t.Skipf("%s is not set (bindings-c/test.sh sets it)", s.env)
		}
		store, err := ConnectRedis(urls, s.opts)
		mustOK(t, err)
		pathsCountOnce(t, store, s.tag)
		mustOK(t, store.Close())
	}
}
