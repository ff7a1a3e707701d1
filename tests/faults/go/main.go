// The Go side of the fault proofs, chaos and soak (see tests/faults/driver.py for the protocol):
//
//	faultdriver URLS MODE TIMEOUT_MS
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	tk "example.invalid/throttlekit/go"
)

type command struct {
	Cmd         string   `json:"cmd"`
	Calls       *int     `json:"calls"`
	Seconds     float64  `json:"seconds"`
	Keys        []string `json:"keys"`
	Limit       uint64   `json:"limit"`
	WindowMs    uint64   `json:"window_ms"`
	StopOnDeny  bool     `json:"stop_on_deny"`
	Concurrency int      `json:"concurrency"`
	Prefix      string   `json:"prefix"`
	PaceMs      int      `json:"pace_ms"`
}

type result struct {
	Calls        int            `json:"calls"`
	Allowed      int            `json:"allowed"`
	Denied       int            `json:"denied"`
	Errors       int            `json:"errors"`
	Codes        map[string]int `json:"codes"`
	AllowedByKey map[string]int `json:"allowed_by_key"`
	WorstMs      float64        `json:"worst_ms"`
	P99Ms        float64        `json:"p99_ms"`
	// The sleeper's stall events, [from_ms, to_ms, ms] (tests/faults/stalls.py).
	Stalls [][3]float64 `json:"stalls"`
}

// meter holds this process's scheduling stalls since the last run began: a goroutine that
// sleeps 10 ms at a time records each wake-up that came late, as [woke - late, woke, late] in
// ms since the process started. Each run reports them (stalls), and the orchestrator adds to a
// call's bound the most of them that overlap one call (tests/faults/stalls.py): a call hit
// by two stalls took both, so the worst single one is not enough.
var meter struct {
	sync.Mutex
	events [][3]float64
	wakes  int64
}

var origin = time.Now()

func ms(d time.Duration) float64 { return math.Round(float64(d.Microseconds())/10) / 100 }

func startStallMeter() {
	go func() {
		for {
			t := time.Now()
			time.Sleep(10 * time.Millisecond)
			woke := time.Now()
			late := woke.Sub(t) - 10*time.Millisecond
			meter.Lock()
			meter.wakes++
			if late > 0 {
				at := ms(woke.Sub(origin))
				meter.events = append(meter.events, [3]float64{at - ms(late), at, ms(late)})
			}
			meter.Unlock()
		}
	}()
}

// takeStalls hands over the stall events since the last take. It first waits (at most 2 s)
// for two more wake-ups, so a stall still going on (the meter not yet awake to record it) is in.
func takeStalls() [][3]float64 {
	meter.Lock()
	wakes := meter.wakes
	meter.Unlock()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		meter.Lock()
		done := meter.wakes >= wakes+2
		meter.Unlock()
		if done {
			break
		}
		time.Sleep(time.Millisecond)
	}
	meter.Lock()
	defer meter.Unlock()
	events := meter.events
	meter.events = [][3]float64{}
	if events == nil {
		events = [][3]float64{}
	}
	return events
}

func open(urls, mode string, timeout uint64) (*tk.Store, error) {
	// MODE is standalone, cluster or sentinel:SERVICE.
	opts := tk.RedisOptions{Mode: tk.RedisStandalone, TimeoutMs: timeout}
	if mode == "cluster" {
		opts.Mode = tk.RedisCluster
	} else if strings.HasPrefix(mode, "sentinel:") {
		opts.Mode = tk.RedisSentinel
		opts.ServiceName = strings.TrimPrefix(mode, "sentinel:")
	}
	return tk.ConnectRedis(urls, opts)
}

// openRetrying gives the first connection a few tries: it is set-up, not under test.
func openRetrying(urls, mode string, timeout uint64) (*tk.Store, error) {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		var s *tk.Store
		if s, err = open(urls, mode, timeout); err == nil {
			return s, nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil, err
}

func run(store *tk.Store, c command) (result, error) {
	strategy, err := tk.GCRA(c.Limit, c.WindowMs, 0)
	if err != nil {
		return result{}, err
	}
	limiter, err := tk.NewLimiter(strategy, &tk.Options{Store: store, Prefix: c.Prefix, FailPolicy: tk.Raise})
	if err != nil {
		return result{}, err
	}
	defer limiter.Close()
	out := result{Codes: map[string]int{}, AllowedByKey: map[string]int{}}
	meter.Lock()
	meter.events = nil
	meter.Unlock()
	var mu sync.Mutex
	var latencies []float64
	next, stop := 0, false
	var deadline time.Time
	if c.Seconds > 0 {
		deadline = time.Now().Add(time.Duration(c.Seconds * float64(time.Second)))
	}
	worker := func() {
		for {
			mu.Lock()
			if stop || (c.Calls != nil && next >= *c.Calls) || (!deadline.IsZero() && time.Now().After(deadline)) {
				mu.Unlock()
				return
			}
			key := c.Keys[next%len(c.Keys)]
			next++
			mu.Unlock()
			started := time.Now()
			d, err := limiter.Check(key, 1)
			took := float64(time.Since(started).Microseconds()) / 1000
			mu.Lock()
			latencies = append(latencies, took)
			out.Calls++
			var e *tk.Error
			switch {
			case err == nil && d.Allowed:
				out.Allowed++
				out.AllowedByKey[key]++
			case err == nil:
				out.Denied++
				if c.StopOnDeny {
					stop = true
				}
			case errors.As(err, &e):
				out.Errors++
				out.Codes[string(e.Code)]++
			default:
				out.Errors++
				out.Codes["exception"]++
			}
			mu.Unlock()
			if c.PaceMs > 0 {
				time.Sleep(time.Duration(c.PaceMs) * time.Millisecond)
			}
		}
	}
	n := c.Concurrency
	if n < 1 {
		n = 1
	}
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); worker() }()
	}
	wg.Wait()
	sort.Float64s(latencies)
	if len(latencies) > 0 {
		out.WorstMs = latencies[len(latencies)-1]
		out.P99Ms = latencies[len(latencies)*99/100]
	}
	out.Stalls = takeStalls()
	return out, nil
}

func main() {
	urls, mode := os.Args[1], os.Args[2]
	timeout, _ := strconv.ParseUint(os.Args[3], 10, 64)
	startStallMeter()
	store, err := openRetrying(urls, mode, timeout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "connect:", err)
		os.Exit(1)
	}
	in := bufio.NewScanner(os.Stdin)
	enc := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var c command
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			fmt.Fprintln(os.Stderr, "bad command:", err)
			os.Exit(2)
		}
		var reply interface{}
		switch c.Cmd {
		case "run":
			r, err := run(store, c)
			if err != nil {
				reply = map[string]string{"error": err.Error()}
			} else {
				reply = r
			}
		case "reopen":
			store.Close()
			if store, err = openRetrying(urls, mode, timeout); err != nil {
				reply = map[string]string{"error": err.Error()}
			} else {
				reply = map[string]bool{"ok": true}
			}
		case "collect":
			// Before soak.py samples this process's memory: garbage counts only once retained,
			// and FreeOSMemory returns the freed heap to the system after a collection.
			debug.FreeOSMemory()
			reply = map[string]bool{"ok": true}
		case "close":
			store.Close()
			reply = map[string]bool{"ok": true}
		case "quit":
			return
		default:
			reply = map[string]string{"error": "unknown command " + c.Cmd}
		}
		_ = enc.Encode(reply)
	}
}
