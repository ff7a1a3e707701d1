// Command gohttp measures tkhttp's overhead per request against a plain handler and against
// the common Go peer: a per-client-IP golang.org/x/time/rate middleware (the usual hand-written
// glue: a mutex-guarded map of limiters, Allow, 429 when denied; it sends no rate-limit fields).
//
// Every request runs in process through handler.ServeHTTP with a response recorder, so the
// numbers are the middleware's CPU cost, without sockets. Requests rotate over 1000 client
// addresses and the limits are high enough that every request is admitted (the common path).
// Handlers are measured interleaved, round by round, and the median round is reported.
//
//	go run . [-seconds 1] [-rounds 5]
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"sync"
	"time"

	"golang.org/x/time/rate"

	throttlekit "example.invalid/throttlekit/go"
	"example.invalid/throttlekit/go/tkhttp"
)

const clients = 1000

// xrateMiddleware is the peer: per-IP token buckets from golang.org/x/time/rate.
func xrateMiddleware(limit rate.Limit, burst int) func(http.Handler) http.Handler {
	var mu sync.Mutex
	limiters := map[string]*rate.Limiter{}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ip, _, err := net.SplitHostPort(r.RemoteAddr)
			if err != nil {
				http.Error(w, "bad peer", http.StatusInternalServerError)
				return
			}
			mu.Lock()
			l, ok := limiters[ip]
			if !ok {
				l = rate.NewLimiter(limit, burst)
				limiters[ip] = l
			}
			mu.Unlock()
			if !l.Allow() {
				http.Error(w, http.StatusText(http.StatusTooManyRequests), http.StatusTooManyRequests)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	return v
}

// nsPerRequest runs h for about d and returns the mean time per request.
func nsPerRequest(h http.Handler, reqs []*http.Request, d time.Duration) float64 {
	n := 0
	start := time.Now()
	for time.Since(start) < d {
		for i := 0; i < 256; i++ {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, reqs[n%len(reqs)])
			if w.Code != http.StatusOK {
				fmt.Fprintf(os.Stderr, "request denied (%d): the bench measures the admitted path\n", w.Code)
				os.Exit(1)
			}
			n++
		}
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}

func median(xs []float64) float64 {
	sort.Float64s(xs)
	return xs[len(xs)/2]
}

func main() {
	seconds := flag.Float64("seconds", 1, "seconds per handler per round")
	rounds := flag.Int("rounds", 5, "rounds (the median is reported)")
	flag.Parse()

	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	// A sustained 1e9 per minute, burst 1e9: nothing is ever denied, on either side.
	strategy := must(throttlekit.GCRA(1_000_000_000, 60_000, 1_000_000_000))
	limiter := must(throttlekit.NewLimiter(strategy, nil))
	tk := must(tkhttp.New(limiter))
	handlers := []struct {
		name string
		h    http.Handler
	}{
		{"plain handler", ok},
		{"x/time/rate per-IP middleware", xrateMiddleware(rate.Limit(1_000_000_000.0/60), 1_000_000_000)(ok)},
		{"tkhttp (draft-10 fields)", tk.Handler(ok)},
	}
	reqs := make([]*http.Request, clients)
	for i := range reqs {
		reqs[i] = httptest.NewRequest(http.MethodGet, "/limited", nil)
		reqs[i].RemoteAddr = fmt.Sprintf("10.%d.%d.%d:40000", i>>16&255, i>>8&255, i&255)
	}
	d := time.Duration(*seconds * float64(time.Second))
	for _, h := range handlers { // warm up: every client's state exists before measuring
		nsPerRequest(h.h, reqs, d/4)
	}
	samples := make([][]float64, len(handlers))
	for r := 0; r < *rounds; r++ {
		for i, h := range handlers {
			samples[i] = append(samples[i], nsPerRequest(h.h, reqs, d))
		}
	}
	ns := make([]float64, len(handlers))
	for i, h := range handlers {
		ns[i] = median(samples[i])
		fmt.Printf("%-32s %9.0f ns/request\n", h.name, ns[i])
	}
	plain, peer, ours := ns[0], ns[1], ns[2]
	fmt.Printf("overhead over the plain handler: x/time/rate %.0f ns, tkhttp %.0f ns\n", peer-plain, ours-plain)
	fmt.Printf("tkhttp vs x/time/rate middleware, per request  %.0f ns vs %.0f ns  ratio %.2fx (peer time / our time; below 1 means slower)\n",
		ours, peer, peer/ours)
}
