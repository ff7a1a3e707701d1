package throttlekit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The vector format (conformance-vectors/FORMAT.md), decoded strictly: an unknown field is an
// error, so a typo cannot switch an assertion off.
type vectorFile struct {
	ContractVersion string        `json:"contractVersion"`
	GeneratedFrom   string        `json:"generatedFrom"`
	Frozen          bool          `json:"frozen"`
	DecisionFields  []string      `json:"decisionFields"`
	Note            string        `json:"note"`
	Description     string        `json:"description"`
	Suites          []vectorSuite `json:"suites"`
}

type vectorDimension struct {
	Name           string          `json:"name"`
	Strategy       json.RawMessage `json:"strategy"`
	CostMultiplier *float64        `json:"costMultiplier"`
}

type vectorSuite struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Comment     string            `json:"comment"`
	Primitive   string            `json:"primitive"`
	Strategy    json.RawMessage   `json:"strategy"`
	Shaper      json.RawMessage   `json:"shaper"`
	Rule        string            `json:"rule"`
	Dimensions  []vectorDimension `json:"dimensions"`
	Key         string            `json:"key"`
	Keys        []string          `json:"keys"`
	Prefix      string            `json:"prefix"`
	ExpectError string            `json:"expectError"`
	Ops         []vectorOp        `json:"ops"`
}

type vectorOp struct {
	Now         float64       `json:"now"`
	Op          string        `json:"op"`
	Cost        *float64      `json:"cost"`
	Key         *string       `json:"key"`
	Keys        []string      `json:"keys"`
	Expect      *vectorExpect `json:"expect"`
	ExpectError string        `json:"expectError"`
	Comment     string        `json:"comment"`
}

type vectorExpect struct {
	Allowed      *bool   `json:"allowed"`
	Limit        *int64  `json:"limit"`
	Remaining    *int64  `json:"remaining"`
	ResetAt      *int64  `json:"resetAt"`
	RetryAfterMs *int64  `json:"retryAfterMs"`
	Binding      *string `json:"binding"`
	Accepted     *bool   `json:"accepted"`
	DelayMs      *int64  `json:"delayMs"`
}

// got is what one op produced.
type got struct {
	decision    *Decision
	binding     string
	reservation *Reservation
	err         error
}

func (g got) String() string {
	switch {
	case g.err != nil:
		return "error " + g.err.Error()
	case g.decision != nil:
		return fmt.Sprintf("%+v binding=%q", *g.decision, g.binding)
	case g.reservation != nil:
		return fmt.Sprintf("%+v", *g.reservation)
	}
	return "done"
}

func eqI(want *int64, got int64) bool { return want == nil || *want == got }
func eqB(want *bool, got bool) bool   { return want == nil || *want == got }

func (e *vectorExpect) matches(g got) bool {
	switch {
	case g.decision != nil:
		d := g.decision
		return e.Accepted == nil && e.DelayMs == nil && eqB(e.Allowed, d.Allowed) && eqI(e.Limit, d.Limit) &&
			eqI(e.Remaining, d.Remaining) && eqI(e.ResetAt, d.ResetAt) && eqI(e.RetryAfterMs, d.RetryAfterMs) &&
			(e.Binding == nil || *e.Binding == g.binding)
	case g.reservation != nil:
		return e.Allowed == nil && e.Limit == nil && e.Remaining == nil && e.ResetAt == nil &&
			e.RetryAfterMs == nil && e.Binding == nil &&
			eqB(e.Accepted, g.reservation.Accepted) && eqI(e.DelayMs, g.reservation.DelayMs)
	}
	return false
}

func code(err error) string {
	if e, ok := err.(*Error); ok {
		return string(e.Code)
	}
	return "not a throttlekit error: " + err.Error()
}

// subject is what a suite runs against.
type subject struct {
	limiter *Limiter
	multi   *MultiLimiter
	shaper  *Shaper
	clock   *Clock
}

func (s *subject) Close() {
	for _, c := range []interface{ Close() error }{s.limiter, s.multi, s.shaper, s.clock} {
		switch v := c.(type) {
		case *Limiter:
			if v != nil {
				v.Close()
			}
		case *MultiLimiter:
			if v != nil {
				v.Close()
			}
		case *Shaper:
			if v != nil {
				v.Close()
			}
		case *Clock:
			if v != nil {
				v.Close()
			}
		}
	}
}

func build(s *vectorSuite, store *Store, clock *Clock) (*subject, error) {
	opts := &Options{Store: store, Clock: clock, Prefix: s.Prefix}
	sub := &subject{clock: clock}
	var err error
	switch s.Primitive {
	case "", "rateLimit":
		var strategy *Strategy
		if strategy, err = ParseStrategy(string(s.Strategy)); err == nil {
			sub.limiter, err = NewLimiter(strategy, opts)
			strategy.Close()
		}
	case "shaper":
		sub.shaper, err = ParseShaper(string(s.Shaper), opts)
	case "multi":
		rule := map[string]Rule{"all": All, "any": Any}[s.Rule]
		dims := make([]Dimension, len(s.Dimensions))
		for i, d := range s.Dimensions {
			dims[i] = Dimension{Name: d.Name, CostMultiplier: 1}
			if err == nil && d.CostMultiplier != nil {
				dims[i].CostMultiplier, err = CostFromFloat(*d.CostMultiplier)
			}
			if err == nil {
				dims[i].Strategy, err = ParseStrategy(string(d.Strategy))
			}
		}
		if err == nil {
			sub.multi, err = NewMultiLimiter(rule, dims, opts)
		}
		for _, d := range dims {
			if d.Strategy != nil {
				d.Strategy.Close()
			}
		}
	default:
		return nil, fmt.Errorf("unknown primitive %q", s.Primitive)
	}
	return sub, err
}

// The explicit-now forms are used here (the C runner uses the clock-reading ones), so the two
// runners together cover both.
func runOp(s *vectorSuite, sub *subject, op *vectorOp) got {
	now, err := NowFromFloat(op.Now)
	if err != nil {
		return got{err: err}
	}
	cost := func() (uint64, error) {
		if op.Cost == nil {
			return 1, nil
		}
		return CostFromFloat(*op.Cost)
	}
	key := s.Key
	if op.Key != nil {
		key = *op.Key
	}
	keys := s.Keys
	if op.Keys != nil {
		keys = op.Keys
	}
	kind := op.Op
	if kind == "" {
		kind = "check"
		if sub.shaper != nil {
			kind = "reserve"
		}
	}
	decided := func(d Decision, err error) got {
		if err != nil {
			return got{err: err}
		}
		return got{decision: &d}
	}
	switch {
	case sub.limiter != nil && kind == "check":
		c, err := cost()
		if err != nil {
			return got{err: err}
		}
		return decided(sub.limiter.CheckAt(key, c, now))
	case sub.limiter != nil && kind == "forecast":
		c, err := cost()
		if err != nil {
			return got{err: err}
		}
		return decided(sub.limiter.ForecastAt(key, c, now))
	case sub.limiter != nil && kind == "peek":
		return decided(sub.limiter.PeekAt(key, now))
	case sub.limiter != nil && kind == "reset":
		return got{err: sub.limiter.Reset(key)}
	case sub.shaper != nil && kind == "reserve":
		c, err := cost()
		if err != nil {
			return got{err: err}
		}
		r, err := sub.shaper.ReserveAt(key, c, now)
		if err != nil {
			return got{err: err}
		}
		return got{reservation: &r}
	case sub.shaper != nil && kind == "reset":
		return got{err: sub.shaper.Reset(key)}
	case sub.multi != nil && kind == "check":
		c, err := cost()
		if err != nil {
			return got{err: err}
		}
		m, err := sub.multi.CheckAt(keys, c, now)
		if err != nil {
			return got{err: err}
		}
		return got{decision: &m.Decision, binding: m.Binding}
	case sub.multi != nil && kind == "reset":
		return got{err: sub.multi.Reset(keys)}
	}
	return got{err: &Error{Code: CodeNotImplemented, Message: kind + " on this primitive"}}
}

// resetKeys empties every key a suite touches: on a shared Redis that is a fresh store.
func resetKeys(s *vectorSuite, sub *subject) {
	for i := -1; i < len(s.Ops); i++ {
		key, keys := s.Key, s.Keys
		if i >= 0 {
			if s.Ops[i].Key != nil {
				key = *s.Ops[i].Key
			}
			if s.Ops[i].Keys != nil {
				keys = s.Ops[i].Keys
			}
		}
		switch {
		case sub.limiter != nil:
			sub.limiter.Reset(key)
		case sub.shaper != nil:
			sub.shaper.Reset(key)
		case sub.multi != nil:
			sub.multi.Reset(keys)
		}
	}
}

// replay runs one file; newStore gives each suite its store (shared: reset its keys first).
func replay(t *testing.T, path string, newStore func() (*Store, bool)) (passed, failed int) {
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	var file vectorFile
	if err := dec.Decode(&file); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for i := range file.Suites {
		s := &file.Suites[i]
		label := s.ID
		if label == "" {
			label = s.Name
		}
		if label == "" {
			label = fmt.Sprintf("#%d", i)
		}
		if s.Primitive == "multi" && s.Rule != "all" && s.Rule != "any" {
			t.Fatalf("%s: unknown rule %q", label, s.Rule)
		}
		store, shared := newStore()
		clock, err := NewManualClock(0)
		if err != nil {
			t.Fatal(err)
		}
		sub, err := build(s, store, clock)
		switch {
		case err != nil && s.ExpectError != "" && code(err) == s.ExpectError:
			passed++
		case err != nil:
			failed += max(len(s.Ops), 1)
			t.Errorf("%s: setup: expected %q, got %v", label, s.ExpectError, err)
		case s.ExpectError != "":
			failed++
			t.Errorf("%s: setup: expected error %s, got a limiter", label, s.ExpectError)
		default:
			if shared {
				resetKeys(s, sub)
			}
			for j := range s.Ops {
				op := &s.Ops[j]
				g := runOp(s, sub, op)
				var ok bool
				switch {
				case op.ExpectError != "":
					ok = g.err != nil && code(g.err) == op.ExpectError
				case op.Expect != nil:
					ok = g.err == nil && op.Expect.matches(g)
				default:
					ok = g.err == nil
				}
				if ok {
					passed++
					continue
				}
				failed++
				want, _ := json.Marshal(op.Expect)
				t.Errorf("%s: op %d (now %v): expected %s / error %q, got %v", label, j, op.Now, want, op.ExpectError, g)
			}
		}
		if sub != nil {
			sub.Close()
		} else {
			clock.Close()
		}
		if !shared {
			store.Close()
		}
	}
	return passed, failed
}

func max(a, b int) int {
	if a > b {
		return a
	}
	return b
}

func vectorFiles(t *testing.T) []string {
	dir := os.Getenv("TK_VECTORS_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "conformance-vectors")
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no vectors files in %s", dir)
	}
	return files
}

func TestConformanceMemory(t *testing.T) {
	passed, failed := 0, 0
	for _, f := range vectorFiles(t) {
		p, fl := replay(t, f, func() (*Store, bool) {
			s, err := NewMemoryStore()
			if err != nil {
				t.Fatal(err)
			}
			return s, false
		})
		passed, failed = passed+p, failed+fl
	}
	t.Logf("memory: %d passed, %d failed", passed, failed)
	fmt.Printf("go conformance (memory): %d passed, %d failed\n", passed, failed)
}

// replayEach replays every vectors file on one store per file from connect, and prints the
// runner's summary line for label.
func replayEach(t *testing.T, label string, connect func() (*Store, error)) {
	passed, failed := 0, 0
	for _, f := range vectorFiles(t) {
		store, err := connect()
		if err != nil {
			t.Fatal(err)
		}
		p, fl := replay(t, f, func() (*Store, bool) { return store, true })
		store.Close()
		passed, failed = passed+p, failed+fl
	}
	t.Logf("%s: %d passed, %d failed", label, passed, failed)
	fmt.Printf("go conformance (%s): %d passed, %d failed\n", label, passed, failed)
}

// replayRedis replays every vectors file on one deterministic-replay store per file, connected
// with urls and opts.
func replayRedis(t *testing.T, label, urls string, opts RedisOptions) {
	opts.DeterministicReplay = true
	replayEach(t, label, func() (*Store, error) { return ConnectRedis(urls, opts) })
}

func TestConformanceRedis(t *testing.T) {
	url := os.Getenv("TK_REDIS_URL")
	if url == "" {
		// Reason: needs a disposable Redis; bindings-c/test.sh starts one and sets TK_REDIS_URL.
		t.Skip("TK_REDIS_URL is not set (bindings-c/test.sh sets it)")
	}
	replayRedis(t, "redis", url, RedisOptions{})
}

func TestConformanceRedisCluster(t *testing.T) {
	seeds := os.Getenv("TK_REDIS_CLUSTER_URLS")
	if seeds == "" {
		// Reason: needs a disposable 3-master cluster; bindings-c/test.sh starts one.
		t.Skip("TK_REDIS_CLUSTER_URLS is not set (bindings-c/test.sh sets it)")
	}
	replayRedis(t, "redis-cluster", seeds, RedisOptions{Mode: RedisCluster, TimeoutMs: 5000})
}

func TestConformanceRedisTLS(t *testing.T) {
	url, dir := os.Getenv("TK_REDIS_TLS_URL"), os.Getenv("TK_REDIS_TLS_DIR")
	if url == "" || dir == "" {
		// Reason: needs a disposable TLS server and its CA; bindings-c/test.sh starts one.
		t.Skip("TK_REDIS_TLS_URL/TK_REDIS_TLS_DIR are not set (bindings-c/test.sh sets them)")
	}
	replayRedis(t, "redis-tls", url, RedisOptions{TLSCAFile: filepath.Join(dir, "ca.crt"), TimeoutMs: 5000})
}

// replayPostgres replays every vectors file on one Postgres store per file (the runner resets
// every key a suite touched after it, as on Redis).
func replayPostgres(t *testing.T, label, url string) {
	replayEach(t, label, func() (*Store, error) { return ConnectPostgres(url, PostgresOptions{TimeoutMs: 5000, NoSweep: true}) })
}

func TestConformancePostgres(t *testing.T) {
	url := os.Getenv("TK_POSTGRES_URL")
	if url == "" {
		// Reason: needs a disposable Postgres; bindings-c/test.sh starts one and sets TK_POSTGRES_URL.
		t.Skip("TK_POSTGRES_URL is not set (bindings-c/test.sh sets it)")
	}
	replayPostgres(t, "postgres", url)
	_, err := ConnectPostgres(strings.Replace(url, "throttlekit:throttlekit@", "throttlekit:wrong@", 1), PostgresOptions{})
	if !errors.Is(err, ErrStoreUnavailable) {
		t.Fatalf("a wrong password: %v, want ErrStoreUnavailable", err)
	}
	if _, err := ConnectPostgres(url, PostgresOptions{Table: "Bad-Name"}); !errors.Is(err, ErrConfigInvalid) {
		t.Fatalf("a bad table name: %v, want ErrConfigInvalid", err)
	}
}

// The runner: `go test -run TestConformanceRunner -args --store redis-cluster --redis-url
// URL[,URL...] [--redis-tls-ca FILE] ...` takes the Rust CLI's flags (runner_flags_test.go).
func TestConformanceRunner(t *testing.T) {
	if *runnerStore == "" {
		// Reason: runs only when given --store (the other tests cover the default stores).
		t.Skip("no --store flag: the runner replays only when asked")
	}
	if *runnerStore == "memory" {
		TestConformanceMemory(t)
		return
	}
	if *runnerStore == "postgres" {
		replayPostgres(t, "runner postgres", *runnerPostgresURL)
		return
	}
	if *runnerStore == "sqlite" {
		if *runnerSqlitePath == "" {
			t.Fatal("--store sqlite needs --sqlite-path FILE")
		}
		replaySqlite(t, "runner sqlite", *runnerSqlitePath)
		return
	}
	urls, opts, err := runnerRedisOptions()
	if err != nil {
		t.Fatal(err)
	}
	replayRedis(t, "runner "+*runnerStore, urls, opts)
}
