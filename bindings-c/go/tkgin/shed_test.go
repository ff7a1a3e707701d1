package tkgin_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	throttlekit "example.invalid/throttlekit/go"
	"example.invalid/throttlekit/go/tkgin"
	"github.com/gin-gonic/gin"
)

// A limit of 1 with one request parked in the chain: the next is shed with 503 and
// Retry-After and never reaches the handler (the chain is aborted); the parked one completes
// and counts as success.
func TestShedAbortsTheChainWith503(t *testing.T) {
	l, err := throttlekit.NewAdaptiveLimiter(`{"algorithm":"fixed","initialLimit":1}`)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	mw, err := tkgin.Shed(l)
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	handled := 0
	router := gin.New()
	router.GET("/work", mw, func(c *gin.Context) {
		handled++
		if c.Query("park") != "" {
			close(entered)
			<-release
		}
		c.String(http.StatusOK, "ok")
	})
	srv := httptest.NewServer(router)
	defer srv.Close()
	done := make(chan reply)
	go func() { done <- get(t, srv.URL+"/work?park=1") }()
	<-entered
	shed := get(t, srv.URL+"/work")
	if shed.status != http.StatusServiceUnavailable || shed.header.Get("Retry-After") != "1" || handled != 1 {
		t.Fatalf("want 503 with Retry-After: 1 and no handler call, got %d %q (%d calls)", shed.status,
			shed.header.Get("Retry-After"), handled)
	}
	close(release)
	if r := <-done; r.status != http.StatusOK {
		t.Fatalf("the parked request: %d", r.status)
	}
	if m := l.Metrics(); m.Inflight != 0 || m.Succeeded != 1 || m.Rejected != 1 {
		t.Fatalf("metrics: %+v", m)
	}
}
