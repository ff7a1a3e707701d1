package throttlekit

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// RedisOptions.ServerClock reaches the C struct: a limiter on a manual clock stuck at epoch 0
// decides at Redis's clock with it (the window it opens ends within a minute after the wall
// clock, Redis running on this machine) and at 0 without it (the zero value: the window ends at
// 60000). The semantics are core's; tests/test_redis_clock.c covers multi limiters and shapers.
func TestRedisServerClockReachesTheStore(t *testing.T) {
	url := os.Getenv("TK_REDIS_URL")
	if url == "" {
		// Reason: needs a disposable Redis; bindings-c/test.sh starts one and sets TK_REDIS_URL.
		t.Skip("TK_REDIS_URL is not set (bindings-c/test.sh sets it)")
	}
	epoch, err := NewManualClock(0)
	if err != nil {
		t.Fatal(err)
	}
	defer epoch.Close()
	s, err := FixedWindow(5, 60000)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key := fmt.Sprintf("go-clock-%d-%d", time.Now().UnixNano(), os.Getpid())
	decide := func(opts RedisOptions) Decision {
		t.Helper()
		opts.TimeoutMs = 5000
		store, err := ConnectRedis(url, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		l, err := NewLimiter(s, &Options{Store: store, Clock: epoch, Prefix: fmt.Sprintf("go-clock-%t", opts.ServerClock)})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		d, err := l.Check(key, 1)
		if err != nil || !d.Allowed {
			t.Fatalf("server clock %t: %+v %v", opts.ServerClock, d, err)
		}
		return d
	}
	if d := decide(RedisOptions{}); d.ResetAt != 60000 {
		t.Fatalf("the zero RedisOptions decided at Redis's clock: reset at %d, want 60000", d.ResetAt)
	}
	before := time.Now().UnixMilli()
	d := decide(RedisOptions{ServerClock: true})
	after := time.Now().UnixMilli()
	if d.ResetAt <= before-1000 || d.ResetAt > after+61000 {
		t.Fatalf("ServerClock: reset at %d, want a minute's window opened between %d and %d", d.ResetAt, before, after)
	}
}
