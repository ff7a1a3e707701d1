package throttlekit

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// Durable charges (DurableReplicas, DurableTimeoutMs) and passworded sentinels
// (SentinelPassword, SentinelUsername): the options reach core through the C struct, and
// core's answers come back. The semantics are core's (core/tests/redis_durable.rs,
// redis_sentinel.rs); these tests prove the mapping against real servers.

// thisMinute is a clock standing still at the start of the current minute, for tests that count
// a minute's window across slow steps (a connection, a replica's acknowledgement): on the system
// clock a minute boundary between two checks would start the count over. Redis expires the
// window's key on its own clock at the window's end, a whole minute away.
func thisMinute(t *testing.T) *Clock {
	t.Helper()
	now := time.Now().UnixMilli()
	clock, err := NewManualClock(now - now%60_000)
	if err != nil {
		t.Fatal(err)
	}
	return clock
}

func fixedLimiter(t *testing.T, store *Store, prefix string, policy FailPolicy) *Limiter {
	t.Helper()
	s, err := FixedWindow(3, 60000)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l, err := NewLimiter(s, &Options{Store: store, Prefix: prefix, FailPolicy: policy, Clock: thisMinute(t)})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// With no replica attached, a durable charge is store_unavailable naming the option, after the
// server's WAIT (durable_timeout_ms) and well within timeout_ms.
func TestDurableChargeWithoutAReplicaAnswersWithinItsTimeout(t *testing.T) {
	url := os.Getenv("TK_REDIS_URL")
	if url == "" {
		// Reason: needs a disposable Redis with no replica; bindings-c/test.sh starts one.
		t.Skip("TK_REDIS_URL is not set (bindings-c/test.sh sets it)")
	}
	store, err := ConnectRedis(url, RedisOptions{TimeoutMs: 1000, DurableReplicas: 1, DurableTimeoutMs: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	l := fixedLimiter(t, store, "go-durable", Raise)
	defer l.Close()
	start := time.Now()
	_, err = l.Check("k", 1)
	took := time.Since(start)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeStoreUnavailable || !strings.Contains(e.Message, "0 of 1 replicas") ||
		!strings.Contains(e.Message, "durable_replicas") {
		t.Fatalf("want store_unavailable naming durable_replicas, got %v", err)
	}
	if took < 100*time.Millisecond || took >= 1100*time.Millisecond {
		t.Fatalf("answered after %v: want WAIT's 100 ms, and within the 1000 ms timeout + 100 ms", took)
	}
	open := fixedLimiter(t, store, "go-durable", FailOpen)
	defer open.Close()
	if d, err := open.Check("k", 1); err != nil || !d.Allowed || !d.Fallback {
		t.Fatalf("fail open admits as a fallback: %+v %v", d, err)
	}
}

// Sentinels that require a password refuse a store without SentinelPassword; with it (and
// DurableReplicas 1, the master having a replica) every charge is admitted, exactly the limit.
func TestPasswordedSentinelsAndDurableCharges(t *testing.T) {
	urls := os.Getenv("TK_REDIS_SENTINEL_PW_URLS")
	if urls == "" {
		// Reason: needs a passworded Sentinel setup; bindings-c/test.sh starts one.
		t.Skip("TK_REDIS_SENTINEL_PW_URLS is not set (bindings-c/test.sh sets it)")
	}
	base := RedisOptions{Mode: RedisSentinel, ServiceName: "tkmain", TimeoutMs: 2000}
	_, err := ConnectRedis(urls, base)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeStoreUnavailable ||
		!(strings.Contains(e.Message, "NOAUTH") || strings.Contains(e.Message, "uthentication")) {
		t.Fatalf("without sentinel_password: want store_unavailable from the sentinels, got %v", err)
	}
	wrong := base
	wrong.SentinelPassword = "nope"
	if _, err := ConnectRedis(urls, wrong); !errors.Is(err, ErrStoreUnavailable) {
		t.Fatalf("a wrong sentinel password: want store_unavailable, got %v", err)
	}
	// A generous WAIT timeout: on a loaded machine the replica's acknowledgement can take a while.
	good := base
	good.TimeoutMs, good.SentinelUsername, good.SentinelPassword = 5000, "default", "spw"
	good.DurableReplicas, good.DurableTimeoutMs = 1, 4000
	store, err := ConnectRedis(urls, good)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	l := fixedLimiter(t, store, "go-sentinel-pw", Raise)
	defer l.Close()
	if err := l.Reset("k"); err != nil {
		t.Fatal(err)
	}
	var got []bool
	for i := 0; i < 4; i++ {
		d, err := l.Check("k", 1)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, d.Allowed)
	}
	if got[0] != true || got[1] != true || got[2] != true || got[3] != false {
		t.Fatalf("a limit of 3 through passworded sentinels, durable: %v", got)
	}
}
