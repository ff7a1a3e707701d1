package tkgin_test

import (
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	throttlekit "example.invalid/throttlekit/go"
	"example.invalid/throttlekit/go/tkgin"
	"example.invalid/throttlekit/go/tkhttp"
	"github.com/gin-gonic/gin"
)

// The quick start of docs/http.md ("Go: gin middleware") and bindings-c/README.md, run: 5
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

// Every doc that shows the gin quick start shows this example's code verbatim.
func TestDocsShowThisExample(t *testing.T) {
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	begin := strings.Index(text, "// quick start begins\n")
	end := strings.Index(text, "\t// quick start ends")
	if begin < 0 || end < begin {
		t.Fatal("quick start markers not found")
	}
	var lines []string
	for _, l := range strings.Split(text[begin+len("// quick start begins\n"):end], "\n") {
		lines = append(lines, strings.TrimPrefix(l, "\t"))
	}
	code := strings.Join(lines, "\n")
	for _, doc := range []string{"../../../docs/http.md", "../../README.md"} {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(text), "```go\n"+code+"```") {
			t.Errorf("%s does not show the quick start of tkgin/example_test.go verbatim:\n%s", doc, code)
		}
	}
}
