package tkhttp

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	throttlekit "example.invalid/throttlekit/go"
)

// Middleware rate-limits every request through a throttlekit limiter. Safe for concurrent use.
//
// Defaults: the key is the client IP from the socket peer (r.RemoteAddr; no trusted proxies,
// IPv6 grouped by /64), cost 1, nothing skipped, draft-10 fields with policy name "default",
// shadow mode off, and core's RFC 9457 body on a 429.
//
// The middleware has its own fail policy (WithFailPolicy), applied when the limiter reports
// store_unavailable: Raise (the default) answers 503 with core's temporary-reduced-capacity
// problem body; FailOpen forwards the request with no rate-limit fields; FailClosed answers 429
// with Retry-After: 1. A limiter built with FailOpen or FailClosed of its own never reports
// store_unavailable, so its fallback decision is served as any other decision.
//
// A single limiter's requests take core's HTTP edge directly (throttlekit.HTTPEdge: no JSON
// per request); a multi limiter's header lines still go through the JSON entry point.
type Middleware struct {
	edge   *throttlekit.HTTPEdge
	single *throttlekit.Limiter
	multi  *throttlekit.MultiLimiter
	names  []string          // multi: dimension names
	specs  []json.RawMessage // the strategy spec of the limiter, or of each dimension
	cfg    config
	large  atomic.Bool // answers need largeAnswer (see smallAnswer)
}

// New builds the middleware for a single limiter. Invalid header or client-key options are a
// *throttlekit.Error with code config_invalid.
func New(limiter *throttlekit.Limiter, opts ...Option) (*Middleware, error) {
	if limiter == nil {
		return nil, &throttlekit.Error{Code: throttlekit.CodeConfigInvalid, Message: "config_invalid: tkhttp: limiter is nil"}
	}
	m := &Middleware{single: limiter, specs: []json.RawMessage{json.RawMessage(limiter.StrategySpec())}}
	return m.configure(opts)
}

// NewMulti builds the middleware for a multi limiter: one RateLimit list member per dimension,
// the binding one first. Every dimension gets the request's key unless WithKeysFunc is set.
func NewMulti(limiter *throttlekit.MultiLimiter, opts ...Option) (*Middleware, error) {
	if limiter == nil {
		return nil, &throttlekit.Error{Code: throttlekit.CodeConfigInvalid, Message: "config_invalid: tkhttp: limiter is nil"}
	}
	m := &Middleware{multi: limiter, names: limiter.Names()}
	for _, s := range limiter.StrategySpecs() {
		m.specs = append(m.specs, json.RawMessage(s))
	}
	return m.configure(opts)
}

// configure applies the options and lets core validate them once, up front.
func (m *Middleware) configure(opts []Option) (*Middleware, error) {
	m.cfg = defaults()
	for _, o := range opts {
		o(&m.cfg)
	}
	policy := m.cfg.failPolicy
	if policy == throttlekit.FailPolicyDefault {
		policy = throttlekit.Raise
	}
	edge, err := throttlekit.NewHTTPEdge(string(m.cfg.headerOptions), string(m.cfg.clientOptions), policy)
	if err != nil {
		return nil, err
	}
	m.edge = edge
	probe := []limitInput{{Strategy: m.specs[0], Decision: decisionInput(throttlekit.Decision{Allowed: true, Limit: 1, Remaining: 1})}}
	if _, err := m.headers(probe, 0); err != nil {
		return nil, err
	}
	return m, nil
}

// Handler wraps next: func(http.Handler) http.Handler.
func (m *Middleware) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m.cfg.skip != nil && m.cfg.skip(r) {
			next.ServeHTTP(w, r)
			return
		}
		m.serve(w, r, next)
	})
}

// Limit is New followed by Handler, for the common case:
//
//	limit, err := tkhttp.Limit(limiter, tkhttp.WithSkip(isHealthz))
//	http.ListenAndServe(addr, limit(mux))
func Limit(limiter *throttlekit.Limiter, opts ...Option) (func(http.Handler) http.Handler, error) {
	m, err := New(limiter, opts...)
	if err != nil {
		return nil, err
	}
	return m.Handler, nil
}

// serve decides one request: the check, the header lines, the hook, then forward or deny.
func (m *Middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if m.single != nil && m.cfg.keyFunc == nil {
		// The common case, one crossing into the library: the client key, the check and the
		// header lines together.
		cost := m.cost(r)
		text, values := m.answerMemory()
		a, err := m.edge.CheckRequestInto(text, m.single, r.RemoteAddr, fieldLines(r.Header["X-Forwarded-For"]),
			fieldLines(r.Header["Forwarded"]), cost, m.cfg.now())
		if err != nil {
			m.failed(w, err)
			return
		}
		if len(a.Key)+len(a.Lines) >= len(text) || strings.Count(a.Lines, "\n") > cap(values) {
			m.large.Store(true) // this middleware's answers need the larger memory from now on
		}
		addLines(w.Header(), a.Lines, values)
		m.decided(w, r, next, a.Key, a.Decision, "")
		return
	}
	key, err := m.key(r)
	if err != nil {
		internalError(w, err)
		return
	}
	cost := m.cost(r)
	// One clock reading for the decision and for its header lines.
	now := m.cfg.now()
	var decision throttlekit.Decision
	var lines []throttlekit.HeaderLine
	var binding string
	if m.single != nil {
		decision, lines, err = m.edge.Check(m.single, key, cost, now)
	} else {
		decision, lines, binding, err = m.checkMulti(r, key, cost, now)
	}
	if err != nil {
		m.failed(w, err)
		return
	}
	h := w.Header()
	for _, l := range lines {
		// Set the name exactly as core spells it (not canonicalised to "Ratelimit").
		h[l.Name] = append(h[l.Name], l.Value)
	}
	m.decided(w, r, next, key, decision, binding)
}

func (m *Middleware) cost(r *http.Request) uint64 {
	if m.cfg.costFunc != nil {
		return m.cfg.costFunc(r)
	}
	return 1
}

// failed answers a request whose check failed: 503 for an unavailable store (the Raise
// policy), 500 for anything else (a bad peer, a key function's error).
func (m *Middleware) failed(w http.ResponseWriter, err error) {
	var tkErr *throttlekit.Error
	if errors.As(err, &tkErr) && tkErr.Code == throttlekit.CodeStoreUnavailable {
		body, _ := throttlekit.HTTPProblemBody(nil)
		problem(w, http.StatusServiceUnavailable, body)
		return
	}
	internalError(w, err)
}

// smallAnswer and largeAnswer are everything a request's rate-limit fields need, in one
// allocation: the library writes the client key and the header lines into text, and the
// header values (strings over text) go into values, whose one-element slices become the new
// header names' values. The response keeps them, so each request has its own (no pool: the
// header map holds them after the handler returns). A middleware starts with the small one (a
// 144-byte object: an IPv4 key and draft-10's two lines with a short policy name fit) and
// switches to the large one for good once an answer did not fit (longer keys or names, pk,
// more lines); that answer's lines were rendered apart.
type smallAnswer struct {
	values [2]string
	text   [112]byte
}

type largeAnswer struct {
	values [4]string
	text   [throttlekit.EdgeBufferSize]byte
}

// answerMemory is a fresh request's text and values (length 0) memory.
func (m *Middleware) answerMemory() ([]byte, []string) {
	if m.large.Load() {
		a := new(largeAnswer)
		return a.text[:], a.values[:0]
	}
	a := new(smallAnswer)
	return a.text[:], a.values[:0]
}

// addLines adds core's "Name: value\n" lines to h, each name exactly as core spells it (not
// canonicalised to "Ratelimit"). The values share lines' memory, and the new names' value
// slices are one-element slices of fresh (cap: how many it can take; more are allocated).
func addLines(h http.Header, lines string, fresh []string) {
	for lines != "" {
		line := lines
		if i := strings.IndexByte(lines, '\n'); i >= 0 {
			line, lines = lines[:i], lines[i+1:]
		} else {
			lines = ""
		}
		name, value, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		if old, ok := h[name]; ok {
			h[name] = append(old, value)
			continue
		}
		if len(fresh) == cap(fresh) {
			fresh = make([]string, 0, strings.Count(lines, "\n")+1)
		}
		fresh = append(fresh, value)
		h[name] = fresh[len(fresh)-1 : len(fresh) : len(fresh)]
	}
}

// decided forwards or denies a decided request: the hook, shadow mode, the deny handler or
// core's 429 body.
func (m *Middleware) decided(w http.ResponseWriter, r *http.Request, next http.Handler, key string, decision throttlekit.Decision, binding string) {
	if decision.Allowed {
		next.ServeHTTP(w, r)
		return
	}
	if m.cfg.onLimited != nil {
		m.cfg.onLimited(LimitedEvent{Key: key, Decision: decision, Binding: binding, Shadow: m.cfg.shadow, Request: r})
	}
	if m.cfg.shadow {
		next.ServeHTTP(w, r)
		return
	}
	if m.cfg.deny != nil {
		m.cfg.deny(w, r, decision)
		return
	}
	body, err := throttlekit.HTTPProblemBody(&decision)
	if err != nil {
		internalError(w, err)
		return
	}
	problem(w, http.StatusTooManyRequests, body)
}

// checkMulti runs the multi limiter (the edge's fail policy when its store is unavailable) and
// renders the lines through HTTPHeaders, the binding dimension first.
func (m *Middleware) checkMulti(r *http.Request, key string, cost uint64, now int64) (throttlekit.Decision, []throttlekit.HeaderLine, string, error) {
	limits, binding, err := m.check(r, key, cost, now)
	var tkErr *throttlekit.Error
	if errors.As(err, &tkErr) && tkErr.Code == throttlekit.CodeStoreUnavailable {
		d, ferr := m.edge.MultiFallback(m.multi, now)
		if ferr != nil {
			return throttlekit.Decision{}, nil, "", ferr
		}
		limits, binding, err = []limitInput{{Key: key, Strategy: m.specs[0], Decision: decisionInput(d), decision: d}}, "", nil
	}
	if err != nil {
		return throttlekit.Decision{}, nil, "", err
	}
	lines, err := m.headers(limits, now)
	if err != nil {
		return throttlekit.Decision{}, nil, "", err
	}
	return limits[0].decision, lines, binding, nil
}

// check runs the multi limiter and returns the limits for HTTPHeaders, binding dimension first.
func (m *Middleware) check(r *http.Request, key string, cost uint64, now int64) ([]limitInput, string, error) {
	keys := make([]string, len(m.names))
	if m.cfg.keysFunc != nil {
		var err error
		if keys, err = m.cfg.keysFunc(r); err != nil {
			return nil, "", err
		}
		if len(keys) != len(m.names) {
			return nil, "", fmt.Errorf("tkhttp: keys function gave %d keys for %d dimensions", len(keys), len(m.names))
		}
	} else {
		for i := range keys {
			keys[i] = key
		}
	}
	d, err := m.multi.CheckAt(keys, cost, now)
	if err != nil {
		return nil, "", err
	}
	// The binding dimension first, then the others in declaration order (docs/http.md).
	limits := make([]limitInput, 0, len(m.names))
	var rest []limitInput
	for i, name := range m.names {
		l := limitInput{Name: name, Key: keys[i], Strategy: m.specs[i], Decision: decisionInput(d.Dimensions[i]), decision: d.Dimensions[i]}
		if name == d.Binding && len(limits) == 0 {
			l.decision = d.Decision
			l.Decision = decisionInput(d.Decision)
			limits = append(limits, l)
		} else {
			rest = append(rest, l)
		}
	}
	return append(limits, rest...), d.Binding, nil
}

// key is the key function's key, or core's client key from the peer and forwarding headers.
func (m *Middleware) key(r *http.Request) (string, error) {
	if m.cfg.keyFunc != nil {
		return m.cfg.keyFunc(r)
	}
	// Only the two forwarding headers can matter; repeated lines are passed in order (core
	// reads bytes that are not UTF-8 lossily, never drops them).
	return m.edge.ClientKey(r.RemoteAddr, fieldLines(r.Header["X-Forwarded-For"]), fieldLines(r.Header["Forwarded"]))
}

// fieldLines is a header's lines as the edge takes them: joined with "\n" (no copy for one).
func fieldLines(values []string) string {
	switch len(values) {
	case 0:
		return ""
	case 1:
		return values[0]
	}
	return strings.Join(values, "\n")
}

// limitInput is one limit of a HeadersRequest (conformance-vectors/FORMAT.md).
type limitInput struct {
	Name     string               `json:"name,omitempty"`
	Key      string               `json:"key,omitempty"`
	Strategy json.RawMessage      `json:"strategy"`
	Decision decisionJSON         `json:"decision"`
	decision throttlekit.Decision // the same decision, for the hook and the problem body
}

type decisionJSON struct {
	Allowed      bool  `json:"allowed"`
	Limit        int64 `json:"limit"`
	Remaining    int64 `json:"remaining"`
	ResetAt      int64 `json:"resetAt"`
	RetryAfterMs int64 `json:"retryAfterMs"`
	Fallback     bool  `json:"fallback"`
}

func decisionInput(d throttlekit.Decision) decisionJSON {
	return decisionJSON{d.Allowed, d.Limit, d.Remaining, d.ResetAt, d.RetryAfterMs, d.Fallback}
}

func (m *Middleware) headers(limits []limitInput, now int64) ([]throttlekit.HeaderLine, error) {
	req, err := json.Marshal(struct {
		Options json.RawMessage `json:"options"`
		NowMs   int64           `json:"nowMs"`
		Limits  []limitInput    `json:"limits"`
	}{m.cfg.headerOptions, now, limits})
	if err != nil {
		return nil, err
	}
	return throttlekit.HTTPHeaders(string(req))
}

func problem(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// internalError answers 500 for a key function's error or a bad peer: a server
// misconfiguration, not the client's fault.
func internalError(w http.ResponseWriter, err error) {
	code := "internal"
	var tkErr *throttlekit.Error
	if errors.As(err, &tkErr) {
		code = string(tkErr.Code)
	}
	body, _ := json.Marshal(map[string]any{
		"type": "about:blank", "title": "Internal Server Error", "status": 500, "detail": "rate limiter: " + code,
	})
	problem(w, http.StatusInternalServerError, string(body))
}
