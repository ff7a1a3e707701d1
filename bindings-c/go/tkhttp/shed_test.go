package tkhttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	throttlekit "example.invalid/throttlekit/go"
	"example.invalid/throttlekit/go/tkhttp"
)

func adaptive(t *testing.T, json string) *throttlekit.AdaptiveLimiter {
	t.Helper()
	l, err := throttlekit.NewAdaptiveLimiter(json)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func fetch(t *testing.T, url string) *http.Response {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// A limit of 2 with two requests parked in the handler: the third is shed with 503 and
// Retry-After, never reaching the handler; once they finish, requests pass again, and the
// handler's 503 counts as dropped.
func TestShedderAnswers503WithRetryAfter(t *testing.T) {
	l := adaptive(t, `{"algorithm":"fixed","initialLimit":2}`)
	release := make(chan struct{})
	var entered sync.WaitGroup
	var calls int
	var mu sync.Mutex
	mux := http.NewServeMux()
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		mu.Unlock()
		entered.Done()
		<-release
		_, _ = io.WriteString(w, "ok")
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	shed, err := tkhttp.Shed(l)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(shed(mux))
	defer srv.Close()

	entered.Add(2)
	var done sync.WaitGroup
	for i := 0; i < 2; i++ {
		done.Add(1)
		go func() { defer done.Done(); fetch(t, srv.URL+"/slow") }()
	}
	entered.Wait()
	resp := fetch(t, srv.URL+"/slow")
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("want 503 with Retry-After: 1, got %d %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if calls != 2 {
		t.Fatalf("the shed request reached the handler (%d calls)", calls)
	}
	close(release)
	done.Wait()
	if resp := fetch(t, srv.URL+"/ok"); resp.StatusCode != http.StatusOK {
		t.Fatalf("after the slow ones: %d", resp.StatusCode)
	}
	if resp := fetch(t, srv.URL+"/fail"); resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "" {
		t.Fatalf("the handler's own 503 passes through: %d %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	m := l.Metrics()
	if m.Inflight != 0 || m.Rejected != 1 || m.Succeeded != 3 || m.Dropped != 1 {
		t.Fatalf("metrics: %+v", m)
	}
}

// A panicking handler releases its permit as dropped (and the panic goes on to net/http).
func TestShedderPanicIsDropped(t *testing.T) {
	l := adaptive(t, `{"algorithm":"fixed","initialLimit":1}`)
	h, err := tkhttp.NewShedder(l)
	if err != nil {
		t.Fatal(err)
	}
	handler := h.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	func() {
		defer func() { _ = recover() }()
		handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	}()
	if m := l.Metrics(); m.Inflight != 0 || m.Dropped != 1 {
		t.Fatalf("metrics: %+v", m)
	}
}

// Partitions come from the request; an unknown one is core's config_invalid as a 500. With a
// wait, a request queues for the slot instead of being shed.
func TestShedderPartitionAndWait(t *testing.T) {
	l := adaptive(t, `{"algorithm":"fixed","initialLimit":1,"partitions":[{"name":"live","percent":100}]}`)
	h, err := tkhttp.NewShedder(l, tkhttp.WithPartition(func(r *http.Request) string { return r.URL.Query().Get("p") }),
		tkhttp.WithShedWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ok := h.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	rec := httptest.NewRecorder()
	ok.ServeHTTP(rec, httptest.NewRequest("GET", "/?p=nope", nil))
	if rec.Code != http.StatusInternalServerError {
		t.Fatalf("unknown partition: %d", rec.Code)
	}
	held, _, _ := l.TryAcquire("live")
	go func() {
		time.Sleep(30 * time.Millisecond)
		held.Release(throttlekit.Ignore)
	}()
	rec = httptest.NewRecorder()
	ok.ServeHTTP(rec, httptest.NewRequest("GET", "/?p=live", nil))
	if rec.Code != http.StatusNoContent {
		t.Fatalf("a waiting request should be served: %d", rec.Code)
	}
	if _, err := tkhttp.NewShedder(nil); !errors.Is(err, throttlekit.ErrConfigInvalid) {
		t.Fatalf("nil limiter: %v", err)
	}
}

// A request whose client goes away while it waits for a permit leaves the limiter's queue at
// once (it held its place, and a thread, for the whole shed wait before), and the freed permit
// goes to no one.
func TestShedderWaitEndsWhenTheClientGoesAway(t *testing.T) {
	l := adaptive(t, `{"algorithm":"fixed","initialLimit":1}`)
	h, err := tkhttp.NewShedder(l, tkhttp.WithShedWait(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var reached atomic.Bool
	srv := httptest.NewServer(h.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Store(true) })))
	defer srv.Close()
	held, _, _ := l.TryAcquire("")
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	for l.Metrics().Waiting == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the client's request: %v", err)
	}
	// The server sees the connection close and cancels the request's context: the wait ends.
	deadline := time.Now().Add(10 * time.Second)
	for l.Metrics().Waiting != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the gone client's wait is still queued: %+v", l.Metrics())
		}
		time.Sleep(time.Millisecond)
	}
	held.Release(throttlekit.Success)
	if m := l.Metrics(); m.Inflight != 0 || m.Acquired != 1 || reached.Load() {
		t.Fatalf("the freed permit went to the gone client: %+v (handler reached: %v)", m, reached.Load())
	}
}
