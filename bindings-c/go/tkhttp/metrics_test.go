package tkhttp_test

// The middleware counts through the limiter's metrics: over a Redis limiter, each 200 is one
// allowed decision, a 429 one denied, and a 503 (Redis gone, fail policy raise) one
// store_unavailable error; a skipped path counts nothing.

import (
	"fmt"
	"testing"

	throttlekit "example.invalid/throttlekit/go"
	"example.invalid/throttlekit/go/internal/testredis"
)

func TestA200A429AndA503AreEachCountedOnce(t *testing.T) {
	url, pid := testredis.Start(t)
	store, err := throttlekit.ConnectRedis(url, throttlekit.RedisOptions{TimeoutMs: 500})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	s, err := throttlekit.GCRA(2, 3_600_000, 2)
	if err != nil {
		t.Fatal(err)
	}
	l, err := throttlekit.NewLimiter(s, &throttlekit.Options{Store: store, FailPolicy: throttlekit.Raise, Prefix: "http-metrics", Metrics: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	srv := serve(t, newMiddleware(t, l))
	var got []int
	for i := 0; i < 3; i++ {
		got = append(got, get(t, srv.URL+"/limited").status)
	}
	testredis.Kill(t, pid)
	got = append(got, get(t, srv.URL+"/limited").status, get(t, srv.URL+"/healthz").status)
	if fmt.Sprint(got) != "[200 200 429 503 200]" {
		t.Fatalf("statuses %v, want 200 200 429 503 and the skipped path's 200", got)
	}
	m, err := l.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	var errors uint64
	for _, n := range m.Errors {
		errors += n
	}
	if m.Allowed != 2 || m.Denied != 1 || m.FallbackAllowed+m.FallbackDenied != 0 || m.Errors["store_unavailable"] != 1 || errors != 1 {
		t.Fatalf("metrics %+v", m)
	}
}
