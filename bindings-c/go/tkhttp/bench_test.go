package tkhttp_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	throttlekit "example.invalid/throttlekit/go"
	"example.invalid/throttlekit/go/tkhttp"
)

// Where tkhttp's time per request goes (go test -run - -bench . ./tkhttp/), as the pieces the
// middleware calls: the client key, the edge check with its lines, and the whole handler.
func benchSetup(b *testing.B) (*throttlekit.Limiter, *throttlekit.HTTPEdge, []*http.Request) {
	s, _ := throttlekit.GCRA(1_000_000_000, 60_000, 1_000_000_000)
	l, err := throttlekit.NewLimiter(s, nil)
	if err != nil {
		b.Fatal(err)
	}
	edge, err := throttlekit.NewHTTPEdge("", "", throttlekit.Raise, false)
	if err != nil {
		b.Fatal(err)
	}
	reqs := make([]*http.Request, 1000)
	for i := range reqs {
		reqs[i] = httptest.NewRequest(http.MethodGet, "/limited", nil)
		reqs[i].RemoteAddr = fmt.Sprintf("10.%d.%d.%d:40000", i>>16&255, i>>8&255, i&255)
	}
	return l, edge, reqs
}

func BenchmarkClientKey(b *testing.B) {
	_, edge, reqs := benchSetup(b)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := edge.ClientKey(reqs[i%1000].RemoteAddr, "", ""); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEdgeCheck(b *testing.B) {
	l, edge, _ := benchSetup(b)
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprintf("10.0.%d.%d", i>>8, i&255)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := edge.Check(l, keys[i%1000], 1, 1_700_000_000_000); err != nil {
			b.Fatal(err)
		}
	}
}

// The client key, the check and the lines in one call (tkhttp's path since it replaced
// ClientKey + Check).
func BenchmarkEdgeCheckRequest(b *testing.B) {
	l, edge, reqs := benchSetup(b)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := edge.CheckRequest(l, reqs[i%1000].RemoteAddr, "", "", 1, 1_700_000_000_000); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLimiterCheck(b *testing.B) {
	l, _, _ := benchSetup(b)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := l.Check("one", 1); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHandler(b *testing.B) {
	l, _, reqs := benchSetup(b)
	m, err := tkhttp.New(l)
	if err != nil {
		b.Fatal(err)
	}
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		h.ServeHTTP(httptest.NewRecorder(), reqs[i%1000])
	}
}

func BenchmarkPlainHandler(b *testing.B) {
	_, _, reqs := benchSetup(b)
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		h.ServeHTTP(httptest.NewRecorder(), reqs[i%1000])
	}
}

func BenchmarkLimiterCheck100k(b *testing.B) {
	// 10 per second, burst 1e9: every key's state stays live between visits (bench/go-http).
	s, _ := throttlekit.GCRA(10, 1000, 1_000_000_000)
	l, err := throttlekit.NewLimiter(s, nil)
	if err != nil {
		b.Fatal(err)
	}
	keys := make([]string, 100_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("user:%d", i)
		_, _ = l.Check(keys[i], 1)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := l.Check(keys[i%100_000], 1); err != nil {
			b.Fatal(err)
		}
	}
}
