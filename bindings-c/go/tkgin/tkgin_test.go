package tkgin_test

// Real gin engines behind httptest servers on loopback ports, real http.Clients, and a real
// redis-server for the fail policy. The fields a gin server sends are compared with tkhttp's
// net/http middleware over the same limiter settings and clock: the same bytes, since both take
// them from core.

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"

	throttlekit "example.invalid/throttlekit/go"
	"example.invalid/throttlekit/go/internal/testredis"
	"example.invalid/throttlekit/go/tkgin"
	"example.invalid/throttlekit/go/tkhttp"
	"github.com/gin-gonic/gin"
)

const t0 = int64(1_700_000_000_000)

func init() { gin.SetMode(gin.TestMode) }

func limiter(t *testing.T, opts *throttlekit.Options) *throttlekit.Limiter {
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

func clock(t *testing.T) *throttlekit.Clock {
	t.Helper()
	c, err := throttlekit.NewManualClock(t0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func middleware(t *testing.T, l *throttlekit.Limiter, opts ...tkhttp.Option) gin.HandlerFunc {
	t.Helper()
	mw, err := tkgin.New(l, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return mw
}

// engine serves GET /healthz unlimited and everything under /api behind mw, counting the
// requests that reached the handler.
func engine(t *testing.T, mw gin.HandlerFunc, handled *int) *httptest.Server {
	t.Helper()
	router := gin.New()
	router.GET("/healthz", func(c *gin.Context) { c.String(200, "ok") })
	api := router.Group("/api", mw)
	api.GET("/*rest", func(c *gin.Context) {
		if handled != nil {
			*handled++
		}
		c.String(200, "ok")
	})
	srv := httptest.NewServer(router)
	t.Cleanup(srv.Close)
	return srv
}

type reply struct {
	status int
	header http.Header
	body   string
}

func get(t *testing.T, url string, headers ...[2]string) reply {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		req.Header.Set(h[0], h[1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, string(body)}
}

// fields are the rate-limit fields of a reply, as sent.
func fields(h http.Header) map[string][]string {
	out := map[string][]string{}
	for name, v := range h {
		switch strings.ToLower(name) {
		case "ratelimit", "ratelimit-policy", "retry-after":
			out[strings.ToLower(name)] = v
		}
	}
	return out
}

func TestSameFieldsAsNetHTTP(t *testing.T) {
	c := clock(t)
	handled := 0
	ginSrv := engine(t, middleware(t, limiter(t, &throttlekit.Options{Clock: c}), tkhttp.WithClock(c)), &handled)
	plain, err := tkhttp.New(limiter(t, &throttlekit.Options{Clock: c}), tkhttp.WithClock(c))
	if err != nil {
		t.Fatal(err)
	}
	netSrv := httptest.NewServer(plain.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	})))
	t.Cleanup(netSrv.Close)

	statuses := []int{}
	for i := 0; i < 7; i++ {
		g, n := get(t, ginSrv.URL+"/api/x"), get(t, netSrv.URL+"/api/x")
		if g.status != n.status || !reflect.DeepEqual(fields(g.header), fields(n.header)) || g.body != n.body {
			t.Fatalf("request %d: gin %d %q %q, net/http %d %q %q", i, g.status, fields(g.header), g.body,
				n.status, fields(n.header), n.body)
		}
		statuses = append(statuses, g.status)
	}
	if want := []int{200, 200, 200, 200, 200, 429, 429}; !reflect.DeepEqual(statuses, want) {
		t.Fatalf("statuses %v, want %v", statuses, want)
	}
	if handled != 5 {
		t.Fatalf("the handler ran %d times for 5 admitted requests", handled)
	}
	denied := get(t, ginSrv.URL+"/api/x")
	if denied.header.Get("Content-Type") != "application/problem+json" || !strings.Contains(denied.body, "quota-exceeded") {
		t.Fatalf("denied: %q %q", denied.header.Get("Content-Type"), denied.body)
	}
	if h := get(t, ginSrv.URL+"/healthz"); h.status != 200 || len(fields(h.header)) != 0 {
		t.Fatalf("healthz: %d %q", h.status, fields(h.header))
	}
}

func TestKeyFromTheGinContext(t *testing.T) {
	c := clock(t)
	var seen []string
	mw := middleware(t, limiter(t, &throttlekit.Options{Clock: c}), tkhttp.WithClock(c),
		tkgin.WithKeyFunc(func(c *gin.Context) (string, error) {
			seen = append(seen, c.FullPath())
			if k := c.GetHeader("X-API-Key"); k != "" {
				return "key:" + k, nil
			}
			return "", errors.New("no API key")
		}))
	srv := engine(t, mw, nil)
	for i := 0; i < 5; i++ {
		if r := get(t, srv.URL+"/api/a", [2]string{"X-API-Key", "alice"}); r.status != 200 {
			t.Fatalf("alice %d: %d", i, r.status)
		}
	}
	if r := get(t, srv.URL+"/api/a", [2]string{"X-API-Key", "alice"}); r.status != 429 {
		t.Fatalf("alice's sixth: %d", r.status)
	}
	// Another key has its own budget.
	if r := get(t, srv.URL+"/api/a", [2]string{"X-API-Key", "bob"}); r.status != 200 {
		t.Fatalf("bob: %d", r.status)
	}
	// A key function's error answers 500 and stops the chain.
	if r := get(t, srv.URL+"/api/a"); r.status != 500 {
		t.Fatalf("no key: %d", r.status)
	}
	if len(seen) == 0 || seen[0] != "/api/*rest" {
		t.Fatalf("the key function saw %v, not gin's route", seen)
	}
}

func TestSkipCostAndDenyResponse(t *testing.T) {
	c := clock(t)
	handled := 0
	mw := middleware(t, limiter(t, &throttlekit.Options{Clock: c}), tkhttp.WithClock(c),
		tkgin.WithSkip(func(c *gin.Context) bool { return c.Query("internal") == "1" }),
		tkgin.WithCostFunc(func(c *gin.Context) uint64 {
			if c.Request.URL.Path == "/api/bulk" {
				return 5
			}
			return 1
		}),
		tkgin.WithDenyResponse(func(c *gin.Context, d throttlekit.Decision) {
			c.JSON(429, gin.H{"error": "slow down", "retry_after_ms": d.RetryAfterMs})
		}))
	srv := engine(t, mw, &handled)
	for i := 0; i < 10; i++ {
		if r := get(t, srv.URL+"/api/x?internal=1"); r.status != 200 || len(fields(r.header)) != 0 {
			t.Fatalf("skipped request %d: %d %q", i, r.status, fields(r.header))
		}
	}
	// The bulk call takes the whole burst of 5.
	if r := get(t, srv.URL+"/api/bulk"); r.status != 200 {
		t.Fatalf("bulk: %d", r.status)
	}
	r := get(t, srv.URL+"/api/x")
	if r.status != 429 || !strings.Contains(r.body, `"error":"slow down"`) || r.header.Get("Retry-After") == "" {
		t.Fatalf("custom deny: %d %q %q", r.status, r.body, fields(r.header))
	}
	if handled != 11 {
		t.Fatalf("handler ran %d times, want 11 (10 skipped + 1 bulk)", handled)
	}
}

func TestMultiLimiterKeys(t *testing.T) {
	c := clock(t)
	perUser, _ := throttlekit.GCRA(2, 60_000, 2)
	global, _ := throttlekit.GCRA(100, 60_000, 100)
	multi, err := throttlekit.NewMultiLimiter(throttlekit.All, []throttlekit.Dimension{
		{Name: "user", Strategy: perUser, CostMultiplier: 1},
		{Name: "global", Strategy: global, CostMultiplier: 1},
	}, &throttlekit.Options{Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { multi.Close() })
	mw, err := tkgin.NewMulti(multi, tkhttp.WithClock(c),
		tkgin.WithKeysFunc(func(c *gin.Context) ([]string, error) {
			return []string{c.Param("rest"), "all"}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	srv := engine(t, mw, nil)
	got := []int{}
	for _, path := range []string{"/api/u1", "/api/u1", "/api/u1", "/api/u2"} {
		got = append(got, get(t, srv.URL+path).status)
	}
	if want := []int{200, 200, 429, 200}; !reflect.DeepEqual(got, want) {
		t.Fatalf("statuses %v, want %v", got, want)
	}
}

func TestBadOptionsFailAtNew(t *testing.T) {
	l := limiter(t, nil)
	for name, opt := range map[string]tkhttp.Option{
		"family":  tkhttp.WithHeaderOptions(tkhttp.HeaderOptions{Family: "draft-99"}),
		"proxies": tkhttp.WithClientKeyOptions(tkhttp.ClientKeyOptions{TrustedProxies: []string{"not-an-address"}}),
	} {
		_, err := tkgin.New(l, opt)
		var tkErr *throttlekit.Error
		if !errors.As(err, &tkErr) || tkErr.Code != throttlekit.CodeConfigInvalid {
			t.Errorf("%s: got %v, want config_invalid", name, err)
		}
	}
	if _, err := tkgin.New(nil); err == nil {
		t.Error("a nil limiter was accepted")
	}
}

func TestFailPolicyWithRedisDown(t *testing.T) {
	url, pid := testredis.Start(t)
	servers := map[throttlekit.FailPolicy]*httptest.Server{}
	for _, policy := range []throttlekit.FailPolicy{throttlekit.Raise, throttlekit.FailOpen} {
		store, err := throttlekit.ConnectRedis(url, throttlekit.RedisOptions{TimeoutMs: 500})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		l := limiter(t, &throttlekit.Options{Store: store, Prefix: "gin" + strconv.Itoa(int(policy))})
		servers[policy] = engine(t, middleware(t, l, tkhttp.WithFailPolicy(policy)), nil)
		if r := get(t, servers[policy].URL+"/api/x"); r.status != 200 || r.header.Get("RateLimit") == "" {
			t.Fatalf("policy %d with redis up: %d %q", policy, r.status, fields(r.header))
		}
	}
	testredis.Kill(t, pid)
	r := get(t, servers[throttlekit.Raise].URL+"/api/x")
	if r.status != 503 || !strings.Contains(r.body, "temporary-reduced-capacity") || len(fields(r.header)) != 0 {
		t.Fatalf("raise: %d %q %q", r.status, fields(r.header), r.body)
	}
	r = get(t, servers[throttlekit.FailOpen].URL+"/api/x")
	if r.status != 200 || r.body != "ok" || len(fields(r.header)) != 0 {
		t.Fatalf("fail open: %d %q %q", r.status, fields(r.header), r.body)
	}
}
