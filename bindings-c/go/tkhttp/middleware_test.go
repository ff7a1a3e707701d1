package tkhttp_test

// Real servers (httptest, on loopback ports) and real http.Clients. The exact lines asserted
// here are docs/http-go.md's examples; the same rules are pinned by conformance-vectors/http.

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	throttlekit "example.invalid/throttlekit/go"
	"example.invalid/throttlekit/go/internal/testredis"
	"example.invalid/throttlekit/go/tkhttp"
)

const t0 = int64(1_700_000_000_000)

func gcraLimiter(t *testing.T, opts *throttlekit.Options) *throttlekit.Limiter {
	t.Helper()
	s, err := throttlekit.GCRA(5, 60_000, 5)
	if err != nil {
		t.Fatal(err)
	}
	l, err := throttlekit.NewLimiter(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func manualClock(t *testing.T) *throttlekit.Clock {
	t.Helper()
	c, err := throttlekit.NewManualClock(t0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// serve starts a real server with the middleware around a handler that answers "ok", with
// GET /healthz skipped.
func serve(t *testing.T, m *tkhttp.Middleware) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	srv := httptest.NewServer(m.Handler(mux))
	t.Cleanup(srv.Close)
	return srv
}

func newMiddleware(t *testing.T, l *throttlekit.Limiter, opts ...tkhttp.Option) *tkhttp.Middleware {
	t.Helper()
	opts = append([]tkhttp.Option{tkhttp.WithSkip(func(r *http.Request) bool { return r.URL.Path == "/healthz" })}, opts...)
	m, err := tkhttp.New(l, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

type reply struct {
	status int
	header http.Header
	body   string
}

func get(t *testing.T, url string, headers ...[2]string) reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		req.Header.Add(h[0], h[1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{resp.StatusCode, resp.Header, string(body)}
}

// fields are the rate-limit lines of a reply, in a fixed order, for exact comparison.
func fields(h http.Header) []string {
	var out []string
	for _, name := range []string{"RateLimit-Policy", "RateLimit", "RateLimit-Limit", "RateLimit-Remaining",
		"RateLimit-Reset", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After"} {
		for _, v := range h.Values(name) {
			out = append(out, name+": "+v)
		}
	}
	return out
}

func expectFields(t *testing.T, what string, got reply, want ...string) {
	t.Helper()
	if !reflect.DeepEqual(fields(got.header), want) {
		t.Fatalf("%s: fields %q, want %q", what, fields(got.header), want)
	}
}

func TestFiveThenDenied(t *testing.T) {
	m := newMiddleware(t, gcraLimiter(t, nil), tkhttp.WithClock(manualClock(t)))
	srv := serve(t, m)
	for i := 0; i < 5; i++ {
		r := get(t, srv.URL+"/limited")
		if r.status != 200 || r.body != "ok" {
			t.Fatalf("request %d: %d %q", i+1, r.status, r.body)
		}
		expectFields(t, "request "+strconv.Itoa(i+1), r, `RateLimit-Policy: "default";q=5;w=60`,
			`RateLimit: "default";r=`+strconv.Itoa(4-i)+`;t=12`)
	}
	r := get(t, srv.URL+"/limited")
	if r.status != http.StatusTooManyRequests {
		t.Fatalf("sixth request: %d", r.status)
	}
	expectFields(t, "denied", r, `RateLimit-Policy: "default";q=5;w=60`, `RateLimit: "default";r=0;t=12`, "Retry-After: 12")
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("content type %q", ct)
	}
	var problem map[string]any
	if err := json.Unmarshal([]byte(r.body), &problem); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"type": "https://iana.org/assignments/http-problem-types#quota-exceeded",
		"title": "Too Many Requests", "status": 429.0, "detail": "Rate limit exceeded; retry in 12 seconds."}
	if !reflect.DeepEqual(problem, want) {
		t.Fatalf("problem %v", problem)
	}
	// Never limited, and no fields.
	h := get(t, srv.URL+"/healthz")
	if h.status != 200 || len(fields(h.header)) != 0 {
		t.Fatalf("healthz: %d %q", h.status, fields(h.header))
	}
}

// The sixth request at one instant, in each family (docs/http.md, "The four families").
func TestEveryFamilyOnTheWire(t *testing.T) {
	cases := map[tkhttp.Family][]string{
		tkhttp.FamilyDraft10: {`RateLimit-Policy: "default";q=5;w=60`, `RateLimit: "default";r=0;t=12`, "Retry-After: 12"},
		tkhttp.FamilyDraft7:  {"RateLimit-Policy: 5;w=60", "RateLimit: limit=5, remaining=0, reset=60", "Retry-After: 12"},
		tkhttp.FamilyDraft6: {"RateLimit-Policy: 5;w=60", "RateLimit-Limit: 5", "RateLimit-Remaining: 0",
			"RateLimit-Reset: 60", "Retry-After: 12"},
		tkhttp.FamilyLegacy: {"X-RateLimit-Limit: 5", "X-RateLimit-Remaining: 0", "X-RateLimit-Reset: 1700000060",
			"Retry-After: 12"},
	}
	for family, want := range cases {
		t.Run(string(family), func(t *testing.T) {
			srv := serve(t, newMiddleware(t, gcraLimiter(t, nil), tkhttp.WithClock(manualClock(t)),
				tkhttp.WithHeaderOptions(tkhttp.HeaderOptions{Family: family})))
			for i := 0; i < 5; i++ {
				get(t, srv.URL+"/limited")
			}
			r := get(t, srv.URL+"/limited")
			if r.status != 429 {
				t.Fatalf("status %d", r.status)
			}
			expectFields(t, string(family), r, want...)
		})
	}
}

func TestPolicyNameAndPartitionKey(t *testing.T) {
	srv := serve(t, newMiddleware(t, gcraLimiter(t, nil), tkhttp.WithClock(manualClock(t)),
		tkhttp.WithHeaderOptions(tkhttp.HeaderOptions{PolicyName: "per-ip", PartitionKeySecret: "s3cret"})))
	r := get(t, srv.URL+"/limited")
	p, l := r.header.Get("RateLimit-Policy"), r.header.Get("RateLimit")
	if !strings.HasPrefix(p, `"per-ip";q=5;w=60;pk=:`) || !strings.HasPrefix(l, `"per-ip";r=4;t=12;pk=:`) {
		t.Fatalf("fields %q / %q", p, l)
	}
	if strings.Contains(p+l, "127.0.0.1") {
		t.Fatal("the raw key leaked")
	}
}

func TestShadowModeNeverBlocksAndReports(t *testing.T) {
	var mu sync.Mutex
	var events []tkhttp.LimitedEvent
	srv := serve(t, newMiddleware(t, gcraLimiter(t, nil), tkhttp.WithClock(manualClock(t)), tkhttp.WithShadow(true),
		tkhttp.WithOnLimited(func(e tkhttp.LimitedEvent) { mu.Lock(); events = append(events, e); mu.Unlock() })))
	for i := 0; i < 5; i++ {
		get(t, srv.URL+"/limited")
	}
	for i := 0; i < 2; i++ {
		r := get(t, srv.URL+"/limited")
		if r.status != 200 || r.body != "ok" {
			t.Fatalf("shadow blocked: %d", r.status)
		}
		expectFields(t, "shadow", r, `RateLimit-Policy: "default";q=5;w=60`, `RateLimit: "default";r=0;t=12`, "Retry-After: 12")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 2 || !events[0].Shadow || events[0].Key != "127.0.0.1" || events[0].Decision.Allowed ||
		events[0].Request.URL.Path != "/limited" {
		t.Fatalf("events %+v", events)
	}
}

func TestHookCostKeyAndDenyResponse(t *testing.T) {
	hooked := 0
	srv := serve(t, newMiddleware(t, gcraLimiter(t, nil), tkhttp.WithClock(manualClock(t)),
		tkhttp.WithKeyFunc(func(r *http.Request) (string, error) {
			if r.Header.Get("X-User") == "" {
				return "", errors.New("no user")
			}
			return "user:" + r.Header.Get("X-User"), nil
		}),
		tkhttp.WithCostFunc(func(r *http.Request) uint64 { return 3 }),
		tkhttp.WithOnLimited(func(e tkhttp.LimitedEvent) {
			if e.Key == "user:a" && !e.Shadow {
				hooked++
			}
		}),
		tkhttp.WithDenyResponse(func(w http.ResponseWriter, r *http.Request, d throttlekit.Decision) {
			w.WriteHeader(http.StatusTeapot)
			_, _ = io.WriteString(w, "slow down, retry in ms "+strconv.FormatInt(d.RetryAfterMs, 10))
		})))
	r := get(t, srv.URL+"/limited", [2]string{"X-User", "a"})
	// Cost 3 of 5 leaves 2; the next unit is back in 12 s (t is not the time to full).
	expectFields(t, "cost 3", r, `RateLimit-Policy: "default";q=5;w=60`, `RateLimit: "default";r=2;t=12`)
	r = get(t, srv.URL+"/limited", [2]string{"X-User", "a"})
	if r.status != http.StatusTeapot || r.body != "slow down, retry in ms 12000" || hooked != 1 {
		t.Fatalf("deny response: %d %q hooked %d", r.status, r.body, hooked)
	}
	expectFields(t, "replaced deny", r, `RateLimit-Policy: "default";q=5;w=60`, `RateLimit: "default";r=2;t=12`, "Retry-After: 12")
	if r := get(t, srv.URL+"/limited", [2]string{"X-User", "b"}); r.status != 200 {
		t.Fatalf("another user: %d", r.status)
	}
	if r := get(t, srv.URL+"/limited"); r.status != 500 || r.header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("key error: %d", r.status)
	}
}

func TestUntrustedForwardingIsIgnored(t *testing.T) {
	srv := serve(t, newMiddleware(t, gcraLimiter(t, nil), tkhttp.WithClock(manualClock(t))))
	for i := 0; i < 5; i++ {
		get(t, srv.URL+"/limited", [2]string{"X-Forwarded-For", "203.0.113." + strconv.Itoa(i)})
	}
	for _, h := range [][2]string{{"X-Forwarded-For", "198.51.100.9"}, {"Forwarded", "for=198.51.100.9"}} {
		if r := get(t, srv.URL+"/limited", h); r.status != 429 {
			t.Fatalf("spoofed %s got a fresh bucket: %d", h[0], r.status)
		}
	}
}

func TestTrustedForwardingAndIPv6Grouping(t *testing.T) {
	var mu sync.Mutex
	keys := map[string]bool{}
	srv := serve(t, newMiddleware(t, gcraLimiter(t, nil), tkhttp.WithClock(manualClock(t)),
		// The test client connects from 127.0.0.1, which plays the trusted proxy.
		tkhttp.WithClientKeyOptions(tkhttp.ClientKeyOptions{TrustedProxies: []string{"127.0.0.0/8"}}),
		tkhttp.WithShadow(true),
		tkhttp.WithOnLimited(func(e tkhttp.LimitedEvent) { mu.Lock(); keys[e.Key] = true; mu.Unlock() })))
	remaining := func(xff string) string {
		return get(t, srv.URL+"/limited", [2]string{"X-Forwarded-For", xff}).header.Get("RateLimit")
	}
	if got := remaining("203.0.113.7"); got != `"default";r=4;t=12` {
		t.Fatalf("first client: %q", got)
	}
	// The rightmost untrusted hop is the client: a spoofed left hop changes nothing.
	if got := remaining("6.6.6.6, 203.0.113.7"); got != `"default";r=3;t=12` {
		t.Fatalf("same client behind a spoofed hop: %q", got)
	}
	if got := remaining("203.0.113.8"); got != `"default";r=4;t=12` {
		t.Fatalf("another client: %q", got)
	}
	// IPv6 clients in one /64 share a bucket; the next /64 is another.
	for i, want := range []string{"r=4", "r=3", "r=2", "r=1", "r=0", "r=0"} {
		addr := "2001:db8:cafe:1::" + strconv.Itoa(i+1)
		if got := remaining(addr); !strings.HasPrefix(got, `"default";`+want+";") {
			t.Fatalf("%s: %q, want %s", addr, got, want)
		}
	}
	if got := remaining("2001:db8:cafe:2::1"); got != `"default";r=4;t=12` {
		t.Fatalf("next /64: %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if !reflect.DeepEqual(keys, map[string]bool{"2001:db8:cafe:1::/64": true}) {
		t.Fatalf("limited keys %v", keys)
	}
}

func TestMultiLimiterListsEveryDimensionBindingFirst(t *testing.T) {
	perIP, _ := throttlekit.GCRA(5, 60_000, 5)
	global, _ := throttlekit.FixedWindow(3, 60_000)
	multi, err := throttlekit.NewMultiLimiter(throttlekit.All, []throttlekit.Dimension{
		{Name: "ip", Strategy: perIP, CostMultiplier: 1}, {Name: "global", Strategy: global, CostMultiplier: 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer multi.Close()
	m, err := tkhttp.NewMulti(multi, tkhttp.WithClock(manualClock(t)),
		tkhttp.WithKeysFunc(func(r *http.Request) ([]string, error) { return []string{"ip:" + r.RemoteAddr, "all"}, nil }))
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, m)
	r := get(t, srv.URL+"/x")
	// global (2 of 3 left) binds, so it comes first. Its fixed window is epoch-aligned: t0 is
	// 20 s into a minute, so 40 s are left.
	expectFields(t, "first", r, `RateLimit-Policy: "global";q=3;w=60, "ip";q=5;w=60`,
		`RateLimit: "global";r=2;t=40, "ip";r=4;t=12`)
	get(t, srv.URL+"/x")
	get(t, srv.URL+"/x")
	r = get(t, srv.URL+"/x")
	if r.status != 429 || r.header.Get("Retry-After") != "40" {
		t.Fatalf("fourth: %d %q", r.status, fields(r.header))
	}
}

func TestInvalidOptionsAreConfigInvalid(t *testing.T) {
	l := gcraLimiter(t, nil)
	for name, opt := range map[string]tkhttp.Option{
		"family":  tkhttp.WithHeaderOptions(tkhttp.HeaderOptions{Family: "draft-99"}),
		"proxies": tkhttp.WithClientKeyOptions(tkhttp.ClientKeyOptions{TrustedProxies: []string{"10.0.0.0/99"}}),
		"prefix":  tkhttp.WithClientKeyOptions(tkhttp.ClientKeyOptions{IPv6Prefix: 129}),
		"header":  tkhttp.WithClientKeyOptions(tkhttp.ClientKeyOptions{ForwardedHeader: "x-real-ip"}),
	} {
		_, err := tkhttp.New(l, opt)
		var tkErr *throttlekit.Error
		if !errors.As(err, &tkErr) || tkErr.Code != throttlekit.CodeConfigInvalid {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := tkhttp.New(nil); err == nil {
		t.Error("nil limiter accepted")
	}
}

func TestFailPolicyWithRedisDown(t *testing.T) {
	url, pid := testredis.Start(t)
	servers := map[throttlekit.FailPolicy]*httptest.Server{}
	for _, policy := range []throttlekit.FailPolicy{throttlekit.Raise, throttlekit.FailOpen, throttlekit.FailClosed} {
		store, err := throttlekit.ConnectRedis(url, throttlekit.RedisOptions{TimeoutMs: 500})
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		l := gcraLimiter(t, &throttlekit.Options{Store: store, FailPolicy: policy, Prefix: "p" + strconv.Itoa(int(policy))})
		servers[policy] = serve(t, newMiddleware(t, l))
		// While Redis is up, the store decides.
		if r := get(t, servers[policy].URL+"/limited"); r.status != 200 || !strings.HasPrefix(r.header.Get("RateLimit"), `"default";r=4;`) {
			t.Fatalf("policy %d with redis up: %d %q", policy, r.status, fields(r.header))
		}
	}
	testredis.Kill(t, pid)

	r := get(t, servers[throttlekit.Raise].URL+"/limited")
	if r.status != 503 || r.header.Get("Content-Type") != "application/problem+json" ||
		!strings.Contains(r.body, "temporary-reduced-capacity") || len(fields(r.header)) != 0 {
		t.Fatalf("raise: %d %q %q", r.status, fields(r.header), r.body)
	}
	r = get(t, servers[throttlekit.FailOpen].URL+"/limited")
	if r.status != 200 || r.body != "ok" || len(fields(r.header)) != 0 {
		t.Fatalf("fail open: %d %q", r.status, fields(r.header))
	}
	r = get(t, servers[throttlekit.FailClosed].URL+"/limited")
	if r.status != 429 || !strings.Contains(r.body, "quota-exceeded") {
		t.Fatalf("fail closed: %d %q", r.status, r.body)
	}
	expectFields(t, "fail closed", r, "Retry-After: 1")
	if h := get(t, servers[throttlekit.Raise].URL+"/healthz"); h.status != 200 {
		t.Fatalf("healthz with redis down: %d", h.status)
	}
}

// The middleware's fail policy is its own (WithFailPolicy): limiters that raise (their own
// policy) are served as the middleware says, for a single and for a multi limiter; a limiter
// that falls back by itself never reports the failure, so its own fallback decision is served.
func TestMiddlewareFailPolicyIsItsOwn(t *testing.T) {
	url, pid := testredis.Start(t)
	connect := func() *throttlekit.Store {
		store, err := throttlekit.ConnectRedis(url, throttlekit.RedisOptions{TimeoutMs: 500})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		return store
	}
	servers := map[string]*httptest.Server{}
	for name, policy := range map[string]throttlekit.FailPolicy{
		"default": throttlekit.FailPolicyDefault, "open": throttlekit.FailOpen, "closed": throttlekit.FailClosed,
	} {
		l := gcraLimiter(t, &throttlekit.Options{Store: connect(), FailPolicy: throttlekit.Raise, Prefix: "own-" + name})
		servers[name] = serve(t, newMiddleware(t, l, tkhttp.WithFailPolicy(policy)))
	}
	// The limiter's own fail-open wins over the middleware's fail-closed.
	l := gcraLimiter(t, &throttlekit.Options{Store: connect(), FailPolicy: throttlekit.FailOpen, Prefix: "own-limiter"})
	servers["limiter-open"] = serve(t, newMiddleware(t, l, tkhttp.WithFailPolicy(throttlekit.FailClosed)))
	perIP, _ := throttlekit.GCRA(5, 60_000, 5)
	multi, err := throttlekit.NewMultiLimiter(throttlekit.All, []throttlekit.Dimension{{Name: "ip", Strategy: perIP, CostMultiplier: 1}},
		&throttlekit.Options{Store: connect(), FailPolicy: throttlekit.Raise, Prefix: "own-multi"})
	if err != nil {
		t.Fatal(err)
	}
	defer multi.Close()
	mm, err := tkhttp.NewMulti(multi, tkhttp.WithFailPolicy(throttlekit.FailClosed))
	if err != nil {
		t.Fatal(err)
	}
	servers["multi-closed"] = serve(t, mm)
	for name, srv := range servers {
		if r := get(t, srv.URL+"/limited"); r.status != 200 || r.header.Get("RateLimit") == "" {
			t.Fatalf("%s with redis up: %d %q", name, r.status, fields(r.header))
		}
	}
	testredis.Kill(t, pid)

	r := get(t, servers["default"].URL+"/limited")
	if r.status != 503 || !strings.Contains(r.body, "temporary-reduced-capacity") || len(fields(r.header)) != 0 {
		t.Fatalf("default (raise): %d %q %q", r.status, fields(r.header), r.body)
	}
	for _, name := range []string{"open", "limiter-open"} {
		if r := get(t, servers[name].URL+"/limited"); r.status != 200 || r.body != "ok" || len(fields(r.header)) != 0 {
			t.Fatalf("%s: %d %q", name, r.status, fields(r.header))
		}
	}
	for _, name := range []string{"closed", "multi-closed"} {
		r := get(t, servers[name].URL+"/limited")
		if r.status != 429 || !strings.Contains(r.body, "quota-exceeded") {
			t.Fatalf("%s: %d %q", name, r.status, r.body)
		}
		expectFields(t, name, r, "Retry-After: 1")
	}
}

func TestUnknownFailPolicyIsConfigInvalid(t *testing.T) {
	_, err := tkhttp.New(gcraLimiter(t, nil), tkhttp.WithFailPolicy(throttlekit.FailPolicy(99)))
	var tkErr *throttlekit.Error
	if !errors.As(err, &tkErr) || tkErr.Code != throttlekit.CodeConfigInvalid {
		t.Fatalf("fail policy 99: %v", err)
	}
}

// Each request's fields live in memory of its own: in process (the recorder keeps the
// handler's header map), every response's fields are the edge's lines for its request, before
// and after a middleware moves to its larger answer memory (pk, a long policy name, draft-6's
// five lines, an IPv6 key), and an earlier response's fields stay intact after later requests.
func TestFieldsPerRequestAcrossAnswerSizes(t *testing.T) {
	long := strings.Repeat("p", 150)
	for name, opts := range map[string]tkhttp.HeaderOptions{
		"draft-10":   {},
		"pk":         {PartitionKeySecret: "s3cret"},
		"long name":  {PolicyName: long, PartitionKeySecret: "s3cret"},
		"draft-6":    {Family: tkhttp.FamilyDraft6},
		"legacy, pk": {Family: tkhttp.FamilyLegacy, PartitionKeySecret: "s3cret"},
	} {
		t.Run(name, func(t *testing.T) {
			clock := manualClock(t)
			m := newMiddleware(t, gcraLimiter(t, nil), tkhttp.WithClock(clock), tkhttp.WithHeaderOptions(opts))
			h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
			hopts, _ := json.Marshal(opts)
			edge, err := throttlekit.NewHTTPEdge(string(hopts), "", throttlekit.Raise, false)
			if err != nil {
				t.Fatal(err)
			}
			defer edge.Close()
			twin := gcraLimiter(t, nil)
			var kept [][]string
			var keptFields [][]string
			for i, peer := range []string{"192.0.2.1:80", "203.0.113.255:443", "[2001:db8:aaaa:bbbb::1]:443", "192.0.2.1:80",
				"10.0.0.1:1", "[2001:db8::2]:80", "192.0.2.1:80"} {
				req := httptest.NewRequest(http.MethodGet, "/limited", nil)
				req.RemoteAddr = peer
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				a, err := edge.CheckRequest(twin, peer, "", "", 1, t0)
				if err != nil {
					t.Fatal(err)
				}
				var want []string
				for _, l := range a.HeaderLines() {
					want = append(want, l.Name+": "+l.Value)
				}
				got := rawFields(w.Result().Header)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("request %d (%s): fields %q, want %q", i, peer, got, want)
				}
				kept = append(kept, rawFields(w.Header()))
				keptFields = append(keptFields, want)
			}
			for i := range kept {
				if !reflect.DeepEqual(kept[i], keptFields[i]) {
					t.Fatalf("request %d's fields changed later: %q, want %q", i, kept[i], keptFields[i])
				}
			}
		})
	}
}

// rawFields is fields for a header map made in process, whose names are as core spells them
// (not canonicalised, so Values would not find them).
func rawFields(h http.Header) []string {
	var out []string
	for _, name := range []string{"RateLimit-Policy", "RateLimit", "RateLimit-Limit", "RateLimit-Remaining",
		"RateLimit-Reset", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After"} {
		for _, v := range h[name] {
			out = append(out, name+": "+v)
		}
	}
	return out
}
