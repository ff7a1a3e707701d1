package tkgin_test

import (
	"fmt"
	"io"
	"net/http/httptest"
	"testing"

	throttlekit "example.invalid/throttlekit/go"
	"example.invalid/throttlekit/go/internal/testdocs"
	"example.invalid/throttlekit/go/tkgin"
	"example.invalid/throttlekit/go/tkhttp"
	"github.com/gin-gonic/gin"
)

// The quick start of docs/http-go.md ("Go: gin middleware") and bindings-c/README.md, run: 5
// requests a minute per client IP on one route group, the sixth denied.
func Example() {
	// quick start begins
	strategy, _ := throttlekit.GCRA(5, 60_000, 5) // 5 per minute, burst 5
	limiter, _ := throttlekit.NewLimiter(strategy, nil)
	limit, err := tkgin.New(limiter,
		tkhttp.WithClientKeyOptions(tkhttp.ClientKeyOptions{TrustedProxies: []string{"10.0.0.0/8"}}),
		tkgin.WithSkip(func(c *gin.Context) bool { return c.GetHeader("X-Internal") == "1" }))
	if err != nil {
		panic(err) // a *throttlekit.Error with Code config_invalid
	}
	router := gin.New()
	api := router.Group("/api", limit) // or router.Use(limit), or one route's chain
	api.GET("/hello", func(c *gin.Context) { c.String(200, "hello") })
	// quick start ends

	defer limiter.Close()
	srv := httptest.NewServer(router)
	defer srv.Close()
	for i := 0; i < 6; i++ {
		resp, _ := srv.Client().Get(srv.URL + "/api/hello")
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, resp.Header.Get("RateLimit-Policy"))
	}
	// Output:
	// 200 "default";q=5;w=60
	// 200 "default";q=5;w=60
	// 200 "default";q=5;w=60
	// 200 "default";q=5;w=60
	// 200 "default";q=5;w=60
	// 429 "default";q=5;w=60
}

// Every doc that shows this package's quick start shows this example's code verbatim.
func TestDocsShowThisExample(t *testing.T) {
	testdocs.ShowQuickStart(t, "../../../docs/http-go.md", "../../README.md")
}
