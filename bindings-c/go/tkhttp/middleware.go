package tkhttp

import (
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
// The whole flow is core's HTTP edge (throttlekit.HTTPEdge): per request one call returns the
// outcome (forward, shadow, deny 429, unavailable 503), the header lines and, for the middleware's
// own answers, the body; this type copies them into the response and calls the user's hooks. No
// JSON is made per request, for a single or a multi limiter.
type Middleware struct {
	edge   *throttlekit.HTTPEdge
	single *throttlekit.Limiter
	multi  *throttlekit.MultiLimiter
	names  []string // multi: dimension names
	cfg    config
	large  atomic.Bool // answers need largeAnswer (see smallAnswer)
}

// New builds the middleware for a single limiter. Invalid header or client-key options are a
// *throttlekit.Error with code config_invalid.
func New(limiter *throttlekit.Limiter, opts ...Option) (*Middleware, error) {
	if limiter == nil {
		return nil, &throttlekit.Error{Code: throttlekit.CodeConfigInvalid, Message: "config_invalid: tkhttp: limiter is nil"}
	}
	m := &Middleware{single: limiter}
	return m.configure(opts)
}

// NewMulti builds the middleware for a multi limiter: one RateLimit list member per dimension,
// the binding one first. Every dimension gets the request's key unless WithKeysFunc is set.
func NewMulti(limiter *throttlekit.MultiLimiter, opts ...Option) (*Middleware, error) {
	if limiter == nil {
		return nil, &throttlekit.Error{Code: throttlekit.CodeConfigInvalid, Message: "config_invalid: tkhttp: limiter is nil"}
	}
	m := &Middleware{multi: limiter, names: limiter.Names()}
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
	edge, err := throttlekit.NewHTTPEdge(string(m.cfg.headerOptions), string(m.cfg.clientOptions), policy, m.cfg.shadow)
	if err != nil {
		return nil, err
	}
	m.edge = edge
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

// serve decides one request: core's outcome and header lines, then the hook, and forward or
// answer as core said.
func (m *Middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if m.single != nil && m.cfg.keyFunc == nil {
		// The common case, one crossing into the library: the client key, the check, the
		// outcome and the header lines together.
		cost := m.cost(r)
		text, values := m.answerMemory()
		a, err := m.edge.CheckRequestInto(text, m.single, r.RemoteAddr, fieldLines(r.Header["X-Forwarded-For"]),
			fieldLines(r.Header["Forwarded"]), cost, m.cfg.now())
		if err != nil {
			internalError(w, err)
			return
		}
		if len(a.Key)+len(a.Lines) >= len(text) || strings.Count(a.Lines, "\n") > cap(values) {
			m.large.Store(true) // this middleware's answers need the larger memory from now on
		}
		addLines(w.Header(), a.Lines, values)
		m.decided(w, r, next, &a)
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
	var a throttlekit.EdgeAnswer
	if m.single != nil {
		a, err = m.edge.Check(m.single, key, cost, now)
	} else {
		var keys []string
		if keys, err = m.keys(r, key); err == nil {
			a, err = m.edge.CheckMulti(m.multi, keys, cost, now)
		}
	}
	if err != nil {
		internalError(w, err)
		return
	}
	a.Key = key
	addLines(w.Header(), a.Lines, nil)
	m.decided(w, r, next, &a)
}

func (m *Middleware) cost(r *http.Request) uint64 {
	if m.cfg.costFunc != nil {
		return m.cfg.costFunc(r)
	}
	return 1
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

// decided carries out core's outcome: the hook for a denial (shadow mode included), then
// forward, or answer with core's status and body (or the user's deny response).
func (m *Middleware) decided(w http.ResponseWriter, r *http.Request, next http.Handler, a *throttlekit.EdgeAnswer) {
	if a.Action.Limited() && m.cfg.onLimited != nil {
		binding := ""
		if m.multi != nil {
			binding = m.names[a.Binding]
		}
		m.cfg.onLimited(LimitedEvent{Key: a.Key, Decision: a.Decision, Binding: binding, Shadow: m.cfg.shadow, Request: r})
	}
	switch a.Action {
	case throttlekit.ActionForward, throttlekit.ActionShadow:
		next.ServeHTTP(w, r)
		return
	case throttlekit.ActionDeny:
		if m.cfg.deny != nil {
			m.cfg.deny(w, r, a.Decision)
			return
		}
	}
	body, err := a.Body()
	if err != nil {
		internalError(w, err)
		return
	}
	problem(w, a.Status, body)
}

// keys are a multi limiter's keys, one per dimension: the keys function's, or key for each.
func (m *Middleware) keys(r *http.Request, key string) ([]string, error) {
	if m.cfg.keysFunc != nil {
		keys, err := m.cfg.keysFunc(r)
		if err != nil {
			return nil, err
		}
		if len(keys) != len(m.names) {
			return nil, fmt.Errorf("tkhttp: keys function gave %d keys for %d dimensions", len(keys), len(m.names))
		}
		return keys, nil
	}
	keys := make([]string, len(m.names))
	for i := range keys {
		keys[i] = key
	}
	return keys, nil
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

func problem(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// internalError answers a request that could not be decided (a key function's error, a
// RemoteAddr that is not an IP address): core's status (500, a server misconfiguration, not
// the client's fault) and problem body naming the error's code.
func internalError(w http.ResponseWriter, err error) {
	code := "internal"
	var tkErr *throttlekit.Error
	if errors.As(err, &tkErr) {
		code = string(tkErr.Code)
	}
	status, body := throttlekit.HTTPErrorResponse(code)
	problem(w, status, body)
}
