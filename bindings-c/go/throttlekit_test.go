package throttlekit

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestErrorsCarryCodeAndDetail(t *testing.T) {
	_, err := ParseStrategy(`{"kind":"gcra","options":{"limit":10,"periodMs":1000,"burst":0}}`)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeConfigInvalid || !strings.Contains(e.Message, "burst") {
		t.Fatalf("want config_invalid naming burst, got %#v", err)
	}
	if !errors.Is(err, ErrConfigInvalid) || errors.Is(err, ErrStoreUnavailable) {
		t.Fatal("errors.Is must match on the code only")
	}
	if _, err := CostFromFloat(1.5); !errors.Is(err, ErrConfigInvalid) {
		t.Fatalf("a fractional cost must be config_invalid, got %v", err)
	}
	if _, err := NewMultiLimiter(Rule(9), nil, nil); !errors.Is(err, ErrConfigInvalid) {
		t.Fatalf("an unknown rule must be config_invalid, got %v", err)
	}
	if Version() == "" {
		t.Fatal("empty version")
	}
}

func TestClockReadingCallsFollowTheManualClock(t *testing.T) {
	clock, _ := NewManualClock(1000)
	s, _ := FixedWindow(1, 1000)
	l, err := NewLimiter(s, &Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := l.Check("k", 1); !d.Allowed || d.ResetAt != 2000 {
		t.Fatalf("first check: %+v", d)
	}
	if d, _ := l.Check("k", 1); d.Allowed || d.RetryAfterMs != 1000 {
		t.Fatalf("second check: %+v", d)
	}
	if now, _ := clock.Advance(1000); now != 2000 {
		t.Fatalf("advance: %d", now)
	}
	if d, _ := l.Peek("k"); !d.Allowed || d.Remaining != 1 {
		t.Fatalf("peek in the next window: %+v", d)
	}
}

func TestMultiReportsTheBindingDimension(t *testing.T) {
	ip, _ := FixedWindow(1, 1000)
	user, _ := FixedWindow(5, 1000)
	m, err := NewMultiLimiter(All, []Dimension{{"ip", ip, 1}, {"user", user, 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m.CheckAt([]string{"1.2.3.4", "bob"}, 1, 0)
	d, err := m.CheckAt([]string{"1.2.3.4", "bob"}, 1, 0)
	if err != nil || d.Allowed || d.Binding != "ip" || d.Dimensions[1].Remaining != 3 {
		t.Fatalf("got %+v, %v", d, err)
	}
	if _, err := m.CheckAt([]string{"only-one"}, 1, 0); !errors.Is(err, ErrConfigInvalid) {
		t.Fatalf("a wrong key count must be config_invalid, got %v", err)
	}
}

// Decisions on one key stay atomic across goroutines (which cgo runs on many OS threads).
func TestConcurrentChecksAdmitExactlyTheLimit(t *testing.T) {
	s, _ := FixedWindow(250, 60000)
	l, _ := NewLimiter(s, nil)
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				d, err := l.CheckAt("shared", 1, 1)
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					mu.Lock()
					allowed++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if allowed != 250 {
		t.Fatalf("allowed %d, want 250", allowed)
	}
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startRedis starts a private redis-server, connects to it, and returns the store and a
// function that kills the server and waits until it is gone. A port free when asked may be
// taken before the server binds it (other suites start servers too), so each attempt takes a
// fresh port, and a connection only counts while our own process is still running.
func startRedis(t *testing.T, bin string) (*Store, func()) {
	for attempt := 0; attempt < 6; attempt++ {
		port := freePort(t)
		cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		kill := func() { cmd.Process.Kill(); <-exited }
		url := fmt.Sprintf("redis://127.0.0.1:%d/0", port)
		for i := 0; i < 100 && !isClosed(exited); i++ {
			if store, err := ConnectRedis(url, RedisOptions{TimeoutMs: 300}); err == nil {
				if !isClosed(exited) {
					return store, kill
				}
				store.Close()
			}
			time.Sleep(50 * time.Millisecond)
		}
		kill()
	}
	t.Fatal("redis-server did not start on any of 6 fresh ports")
	return nil, nil
}

// isClosed reports whether ch is closed, without blocking.
func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// When Redis goes away, each fail policy answers as documented.
func TestFailPoliciesWhenRedisGoesAway(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		// Reason: needs a redis-server binary to start and kill; bindings-c/test.sh installs it.
		t.Skip("redis-server is not installed")
	}
	store, killRedis := startRedis(t, bin)
	s, _ := GCRA(10, 1000, 2)
	open, _ := NewLimiter(s, &Options{Store: store, FailPolicy: FailOpen})
	closed, _ := NewLimiter(s, &Options{Store: store, FailPolicy: FailClosed})
	raise, _ := NewLimiter(s, &Options{Store: store, FailPolicy: Raise})
	if d, err := raise.Check("k", 1); err != nil || !d.Allowed || d.Fallback {
		t.Fatalf("with Redis up: %+v %v", d, err)
	}
	killRedis()
	if d, err := open.Check("k", 1); err != nil || !d.Allowed || !d.Fallback {
		t.Fatalf("fail open: %+v %v", d, err)
	}
	if d, err := closed.Check("k", 1); err != nil || d.Allowed || !d.Fallback {
		t.Fatalf("fail closed: %+v %v", d, err)
	}
	if _, err := raise.Check("k", 1); !errors.Is(err, ErrStoreUnavailable) {
		t.Fatalf("raise: %v", err)
	}
	_ = os.Stderr
}

// Bad Redis options are config_invalid naming the option, before any socket opens.
func TestBadRedisOptionsAreConfigInvalid(t *testing.T) {
	cases := []struct {
		urls string
		opts RedisOptions
		name string
	}{
		{"redis://127.0.0.1:1", RedisOptions{Mode: RedisMode(7)}, "redis.mode"},
		{"redis://127.0.0.1:1", RedisOptions{Scripting: RedisScripting(9)}, "redis.scripting"},
		{"redis://127.0.0.1:1", RedisOptions{TLSCAFile: "/etc/hostname"}, "redis.tls_ca_file"},
		{"redis://127.0.0.1:1", RedisOptions{Mode: RedisSentinel}, "redis.service_name"},
		{"redis://127.0.0.1:1,redis://127.0.0.1:2", RedisOptions{}, "redis.urls"},
		{"http://127.0.0.1:1", RedisOptions{}, "redis.urls"},
		{"redis://127.0.0.1:1", RedisOptions{DurableReplicas: 65}, "redis.durable_replicas"},
		{"redis://127.0.0.1:1", RedisOptions{DurableReplicas: 1, TimeoutMs: 100, DurableTimeoutMs: 100}, "redis.durable_timeout_ms"},
		{"redis://127.0.0.1:1", RedisOptions{DurableReplicas: 1, DeterministicReplay: true}, "redis.durable_replicas"},
		{"redis://127.0.0.1:1", RedisOptions{SentinelPassword: "pw"}, "redis.sentinel_password"},
		{"redis://127.0.0.1:1", RedisOptions{Mode: RedisSentinel, ServiceName: "m", SentinelUsername: "u"}, "redis.sentinel_password"},
	}
	for _, c := range cases {
		_, err := ConnectRedis(c.urls, c.opts)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeConfigInvalid || !strings.Contains(e.Message, c.name) {
			t.Errorf("%s %+v: want config_invalid naming %s, got %v", c.urls, c.opts, c.name, err)
		}
	}
}

// A CA that did not sign the server's certificate is store_unavailable, never a plaintext fallback.
func TestWrongTLSCAIsStoreUnavailable(t *testing.T) {
	url, dir := os.Getenv("TK_REDIS_TLS_URL"), os.Getenv("TK_REDIS_TLS_DIR")
	if url == "" || dir == "" {
		// Reason: needs a disposable TLS server and its CAs; bindings-c/test.sh starts one.
		t.Skip("TK_REDIS_TLS_URL/TK_REDIS_TLS_DIR are not set (bindings-c/test.sh sets them)")
	}
	_, err := ConnectRedis(url, RedisOptions{TLSCAFile: dir + "/other-ca.crt", TimeoutMs: 5000})
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeStoreUnavailable || !strings.Contains(e.Message, "certificate") {
		t.Fatalf("want store_unavailable naming the certificate, got %v", err)
	}
	store, err := ConnectRedis(url, RedisOptions{TLSCAFile: dir + "/ca.crt", TimeoutMs: 5000})
	if err != nil {
		t.Fatalf("the right CA must connect: %v", err)
	}
	store.Close()
}

// Mutual TLS: the client certificate and key are presented; without them the server refuses.
func TestMutualTLS(t *testing.T) {
	url, dir := os.Getenv("TK_REDIS_MTLS_URL"), os.Getenv("TK_REDIS_MTLS_DIR")
	if url == "" || dir == "" {
		// Reason: needs a disposable server requiring client certificates; bindings-c/test.sh starts one.
		t.Skip("TK_REDIS_MTLS_URL/TK_REDIS_MTLS_DIR are not set (bindings-c/test.sh sets them)")
	}
	strategy, err := FixedWindow(1, 60000)
	if err != nil {
		t.Fatal(err)
	}
	defer strategy.Close()
	// Each check connects anew (a TLS handshake): one minute's window for all of them.
	clock := thisMinute(t)
	check := func(opts RedisOptions) (Decision, error) {
		store, err := ConnectRedis(url, opts)
		if err != nil {
			return Decision{}, err
		}
		defer store.Close()
		l, err := NewLimiter(strategy, &Options{Store: store, Prefix: "go-mtls", Clock: clock})
		if err != nil {
			return Decision{}, err
		}
		defer l.Close()
		return l.Check("k", 1)
	}
	full := RedisOptions{TLSCAFile: dir + "/ca.crt", TLSCertFile: dir + "/client.crt", TLSKeyFile: dir + "/client.key", TimeoutMs: 5000}
	if d, err := check(full); err != nil || !d.Allowed {
		t.Fatalf("with the client certificate: %+v %v", d, err)
	}
	if d, err := check(full); err != nil || d.Allowed {
		t.Fatalf("the limit holds: %+v %v", d, err)
	}
	if _, err := check(RedisOptions{TLSCAFile: dir + "/ca.crt", TimeoutMs: 5000}); !errors.Is(err, ErrStoreUnavailable) {
		t.Fatalf("without a client certificate: want store_unavailable, got %v", err)
	}
}
