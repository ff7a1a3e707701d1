package tkhttp_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	throttlekit "example.invalid/throttlekit/go"
	"example.invalid/throttlekit/go/internal/testdocs"
	"example.invalid/throttlekit/go/tkhttp"
)

// The quick start of docs/http-go.md ("Go: net/http middleware") and bindings-c/README.md, run
// against a real server: TestDocsShowThisExample keeps the docs' copy identical.
func Example() {
	// quick start begins
	strategy, _ := throttlekit.GCRA(5, 60_000, 5) // 5 per minute, burst 5
	limiter, _ := throttlekit.NewLimiter(strategy, &throttlekit.Options{FailPolicy: throttlekit.FailOpen})
	limit, err := tkhttp.Limit(limiter,
		tkhttp.WithHeaderOptions(tkhttp.HeaderOptions{Family: tkhttp.FamilyDraft10, PolicyName: "default"}),
		tkhttp.WithClientKeyOptions(tkhttp.ClientKeyOptions{TrustedProxies: []string{"10.0.0.0/8"}}),
		tkhttp.WithSkip(func(r *http.Request) bool { return r.URL.Path == "/healthz" }),
		tkhttp.WithOnLimited(func(e tkhttp.LimitedEvent) { fmt.Println("limited", e.Key) }))
	if err != nil {
		panic(err) // a *throttlekit.Error with Code config_invalid
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/limited", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	handler := limit(mux) // http.ListenAndServe(":8080", handler)
	// quick start ends

	srv := httptest.NewServer(handler)
	defer srv.Close()
	for i := 0; i < 6; i++ {
		resp, err := http.Get(srv.URL + "/limited")
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode, resp.Header.Get("RateLimit-Policy"), resp.Header.Get("RateLimit")[:13],
			resp.Header.Get("Retry-After") != "")
	}
	// Output:
	// 200 "default";q=5;w=60 "default";r=4 false
	// 200 "default";q=5;w=60 "default";r=3 false
	// 200 "default";q=5;w=60 "default";r=2 false
	// 200 "default";q=5;w=60 "default";r=1 false
	// 200 "default";q=5;w=60 "default";r=0 false
	// limited 127.0.0.1
	// 429 "default";q=5;w=60 "default";r=0 true
}

// Every doc that shows this package's quick start shows this example's code verbatim.
func TestDocsShowThisExample(t *testing.T) {
	testdocs.ShowQuickStart(t, "../../../docs/http-go.md", "../../README.md")
}
