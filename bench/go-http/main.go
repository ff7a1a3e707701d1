// Command gohttp measures tkhttp's overhead per request against a plain handler and against
// the common Go peer: a per-client-IP golang.org/x/time/rate middleware (the usual hand-written
// glue: a mutex-guarded map of limiters, Allow, 429 when denied; it sends no rate-limit fields).
//
// Every request runs in process through handler.ServeHTTP with a response recorder, so the
// numbers are the middleware's CPU cost, without sockets. Requests rotate over 1000 client
// addresses and the limits are high enough that every request is admitted (the common path).
// Handlers are measured interleaved, round by round, and each one's fastest round is reported
// with the spread of its rounds: on a machine shared with other work, the fastest round is the
// one least disturbed by it, and a ratio of medians swings with the load. Times are the
// process's CPU time (user + system, every thread, so the garbage collector's work counts) per
// request: wall time on a loaded machine adds the waits for a core, which grow with the load
// and with how long a round runs (the fastest wall-clock round is printed beside it).
//
//	go run . [-seconds 1] [-rounds 5]
package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"sync"
	"syscall"
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

// cpuNs is the CPU time the process has used so far (user + system, every thread: the garbage
// collector's workers count too).
func cpuNs() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// timing is one round of one case: CPU time and wall time per call, in ns.
type timing struct{ cpu, wall float64 }

// nsPerRequest runs h for about d and returns the mean time per request.
func nsPerRequest(h http.Handler, reqs []*http.Request, d time.Duration) timing {
	n := 0
	start, cpu0 := time.Now(), cpuNs()
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
	return timing{float64(cpuNs()-cpu0) / float64(n), float64(time.Since(start).Nanoseconds()) / float64(n)}
}

func median(xs []float64) float64 {
	sort.Float64s(xs)
	return xs[len(xs)/2]
}

func main() {
	seconds := flag.Float64("seconds", 1, "seconds per handler per round")
	rounds := flag.Int("rounds", 9, "rounds (the fastest is reported, with the spread)")
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
	samples := make([][]timing, len(handlers))
	for r := 0; r < *rounds; r++ {
		for i, h := range handlers {
			samples[i] = append(samples[i], nsPerRequest(h.h, reqs, d))
		}
	}
	ns := make([]float64, len(handlers))
	for i, h := range handlers {
		lo, hi, med, wall := fastest(samples[i])
		ns[i] = lo
		fmt.Printf("%-32s %9.0f ns/request CPU (rounds %.0f-%.0f, median %.0f; fastest wall-clock round %.0f)\n", h.name, lo, lo, hi, med, wall)
	}
	plain, peer, ours := ns[0], ns[1], ns[2]
	fmt.Printf("overhead over the plain handler: x/time/rate %.0f ns, tkhttp %.0f ns\n", peer-plain, ours-plain)
	fmt.Printf("tkhttp vs x/time/rate middleware, per request  %.0f ns vs %.0f ns  ratio %.2fx (peer time / our time; target >= 0.5x, i.e. at most 2x its time)\n",
		ours, peer, peer/ours)
	checkRows(d, *rounds)
}

// nsPerOp runs f(i) for about d and returns the mean time per call.
func nsPerOp(f func(i int), d time.Duration) timing {
	n := 0
	start, cpu0 := time.Now(), cpuNs()
	for time.Since(start) < d {
		for i := 0; i < 1024; i++ {
			f(n)
			n++
		}
	}
	return timing{float64(cpuNs()-cpu0) / float64(n), float64(time.Since(start).Nanoseconds()) / float64(n)}
}

// fastest is a case's fastest round in CPU time, the range and median of its rounds, and its
// fastest round in wall time.
func fastest(ts []timing) (best, hi, med, wall float64) {
	cpu, walls := make([]float64, len(ts)), make([]float64, len(ts))
	for i, t := range ts {
		cpu[i], walls[i] = t.cpu, t.wall
	}
	best, hi = minMax(cpu)
	wall, _ = minMax(walls)
	return best, hi, median(cpu), wall
}

// checkRows measures Limiter.Check against golang.org/x/time/rate without HTTP: one key
// against a single rate.Limiter's Allow, and 100k keys against the usual keyed form, a
// mutex-guarded map[string]*rate.Limiter (get or create, then Allow). Both sides admit every
// call (the common path) and read the system clock per call; rounds interleave, the fastest reported.
//
// Both run 10 per second with a burst of 1e9: every call is admitted, and each key's state
// stays live between its visits (a key's debt grows by 100 ms per call), as for an active
// client. (With a rate so high that the state lapses between visits, our memory store drops
// the lapsed entry and inserts it again on the next call, which the map never does.)
//
// The 100k keys' state is made on both sides in one order (user:0, user:1, ..., as clients
// first arrive) and then visited in a fixed random order, with the key strings of the visits
// built in that order, apart from the ones the map stores (a request's key is a fresh string,
// and the lookup, not the bench's own key array, is what should miss: bench/rust does the
// same). Visited in the order the state was made, the peer's *rate.Limiter objects, allocated
// one after the other, are read as one sequential sweep the CPU prefetches ahead (and the map
// compares each key with itself by pointer): that measured the prefetcher, not a keyed lookup,
// and read 175-235 ns a call for the peer against 530-1260 ns in the random order, where our
// side stayed at 240-340 ns (docs/bench-bindings.md). That order is still printed, with no target.
func checkRows(d time.Duration, rounds int) {
	strategy := must(throttlekit.GCRA(10, 1000, 1_000_000_000))
	limiter := must(throttlekit.NewLimiter(strategy, nil))
	newPeer := func() *rate.Limiter { return rate.NewLimiter(10, 1_000_000_000) }
	const nkeys = 100_000
	keys := make([]string, nkeys) // in the order the state is made
	for i := range keys {
		keys[i] = fmt.Sprintf("user:%d", i)
	}
	visits := make([]string, nkeys) // a fixed random order, each visit's key a string of its own
	for i, p := range rand.New(rand.NewSource(2)).Perm(nkeys) {
		visits[i] = fmt.Sprintf("user:%d", p)
	}
	one := newPeer()
	var mu sync.Mutex
	keyed := map[string]*rate.Limiter{}
	peerKeyed := func(k string) {
		mu.Lock()
		l, ok := keyed[k]
		if !ok {
			l = newPeer()
			keyed[k] = l
		}
		mu.Unlock()
		if !l.Allow() {
			panic("x/time/rate denied")
		}
	}
	check := func(key string) {
		dec, err := limiter.Check(key, 1)
		if err != nil || !dec.Allowed {
			fmt.Fprintln(os.Stderr, "Limiter.Check failed or denied:", err)
			os.Exit(1)
		}
	}
	cases := []struct {
		name string
		f    func(int)
	}{
		{"rate.Limiter.Allow (1 key)", func(int) {
			if !one.Allow() {
				panic("x/time/rate denied")
			}
		}},
		{"Limiter.Check (1 key)", func(int) { check("one") }},
		{"map[string]*rate.Limiter (100k keys)", func(i int) { peerKeyed(visits[i%nkeys]) }},
		{"Limiter.Check (100k keys)", func(i int) { check(visits[i%nkeys]) }},
		{"map[string]*rate.Limiter (100k keys, creation order)", func(i int) { peerKeyed(keys[i%nkeys]) }},
		{"Limiter.Check (100k keys, creation order)", func(i int) { check(keys[i%nkeys]) }},
	}
	for _, k := range keys { // every key's state exists on both sides, made in this order
		peerKeyed(k)
		check(k)
	}
	for _, c := range cases { // warm up
		nsPerOp(c.f, d/4)
	}
	samples := make([][]timing, len(cases))
	for r := 0; r < rounds; r++ {
		for i, c := range cases {
			samples[i] = append(samples[i], nsPerOp(c.f, d))
		}
	}
	ns := make([]float64, len(cases))
	for i, c := range cases {
		lo, hi, med, wall := fastest(samples[i])
		ns[i] = lo
		fmt.Printf("%-52s %7.1f ns/call CPU (rounds %.1f-%.1f, median %.1f; fastest wall-clock round %.1f)\n", c.name, lo, lo, hi, med, wall)
	}
	fmt.Printf("Go Limiter.Check vs rate.Limiter.Allow, 1 key  %.1f ns vs %.1f ns  ratio %.2fx (target >= 0.5x)\n",
		ns[1], ns[0], ns[0]/ns[1])
	fmt.Printf("Go Limiter.Check vs mutex map of rate.Limiter, 100k keys  %.1f ns vs %.1f ns  ratio %.2fx (target >= 1.0x)\n",
		ns[3], ns[2], ns[2]/ns[3])
	fmt.Printf("(no target) the same 100k keys visited in the order their state was made  %.1f ns vs %.1f ns  ratio %.2fx\n",
		ns[5], ns[4], ns[4]/ns[5])
}

func minMax(xs []float64) (float64, float64) {
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		if x < lo {
			lo = x
		}
		if x > hi {
			hi = x
		}
	}
	return lo, hi
}
