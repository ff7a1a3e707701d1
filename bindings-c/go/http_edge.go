package throttlekit

/*
#include <stdlib.h>
#include <throttlekit.h>

// Small answers come back by value (Go keeps them on its stack) and Go strings go in as they
// are: the per-request HTTP path allocates only the strings it returns.
#define GO_EDGE_TEXT 512

typedef struct { tk_result result; size_t n; char text[GO_EDGE_TEXT]; } go_edge_text;

typedef struct { tk_result result; tk_http_outcome outcome; size_t n; char text[GO_EDGE_TEXT]; } go_edge_checked;

// Handles come as integers: they are C memory, and pointer arguments would make cgo check them
// on every call.
static inline go_edge_text go_edge_client_key(uintptr_t e, _GoString_ peer, _GoString_ xff, _GoString_ fwd) {
	go_edge_text out;
	out.result = tk_http_edge_client_key((const tk_http_edge *)e, _GoStringPtr(peer), _GoStringLen(peer), _GoStringPtr(xff),
		_GoStringLen(xff), _GoStringPtr(fwd), _GoStringLen(fwd), out.text, GO_EDGE_TEXT, &out.n);
	return out;
}

static inline go_edge_checked go_edge_check(uintptr_t e, uintptr_t l, _GoString_ key, uint64_t cost,
		int64_t now_ms) {
	go_edge_checked out;
	out.result = tk_http_edge_check((const tk_http_edge *)e, (const tk_limiter *)l, _GoStringPtr(key), _GoStringLen(key), cost, now_ms, &out.outcome,
		out.text, GO_EDGE_TEXT, &out.n);
	return out;
}

typedef struct {
	tk_result result;
	tk_http_outcome outcome;
	size_t key_n;
	size_t n;
	char *message;
} go_edge_request;

static char *go_edge_message(void) {
	char *m = malloc(GO_EDGE_TEXT);
	if (m != NULL) {
		tk_last_error_message(m, GO_EDGE_TEXT, NULL);
	}
	return m;
}

// One request in one crossing: the client key, the check and the header lines, written
// straight into the caller's buffer (Go memory that becomes the caller's strings: nothing is
// copied on the way back, and only this small answer comes back by value). On a failure the
// library's detail message is read here, in the same call and so on the same OS thread, into a
// malloc'd string the caller frees: Go need not lock the goroutine to its thread around the call.
static inline go_edge_request go_edge_check_request(uintptr_t e, uintptr_t l, _GoString_ peer, _GoString_ xff,
		_GoString_ fwd, uint64_t cost, int64_t now_ms, char *buf, size_t len) {
	go_edge_request out;
	out.result = tk_http_edge_check_request((const tk_http_edge *)e, (const tk_limiter *)l, _GoStringPtr(peer),
		_GoStringLen(peer), _GoStringPtr(xff), _GoStringLen(xff), _GoStringPtr(fwd), _GoStringLen(fwd), cost, now_ms,
		&out.outcome, buf, len, &out.key_n, &out.n);
	out.message = out.result == TK_RESULT_OK ? NULL : go_edge_message();
	return out;
}

// A multi limiter's request: the keys as C strings the caller allocated, the lines into buf.
static inline go_edge_request go_edge_check_multi(uintptr_t e, uintptr_t m, char **keys, size_t n_keys, uint64_t cost,
		int64_t now_ms, tk_decision *dims, char *buf, size_t len) {
	go_edge_request out;
	out.key_n = 0;
	out.result = tk_http_edge_check_multi((const tk_http_edge *)e, (const tk_multi_limiter *)m, (const char *const *)keys,
		n_keys, cost, now_ms, &out.outcome, dims, buf, len, &out.n);
	out.message = out.result == TK_RESULT_OK ? NULL : go_edge_message();
	return out;
}

static inline tk_result go_edge_lines(const tk_http_edge *e, const tk_limiter *l, _GoString_ key,
		const tk_decision *d, int64_t now_ms, char *buf, size_t len, size_t *n) {
	return tk_http_edge_lines(e, l, _GoStringPtr(key), _GoStringLen(key), d, now_ms, buf, len, n);
}
*/
import "C"

import (
	"runtime"
	"strings"
	"unsafe"
)

// HTTPEdge is a middleware's validated HTTP options (core's HttpEdge): the header family,
// policy name and partition-key secret, the client identity rules, the middleware's own fail
// policy and shadow mode. Built once; its per-request calls pass Go strings to the core without
// JSON and return core's outcome (EdgeAnswer). Safe for concurrent use.
type HTTPEdge struct {
	p *C.tk_http_edge
}

// NewHTTPEdge builds an edge from core's HeaderOptions and ClientKeyOptions as JSON ("" for
// the defaults). failPolicy is the middleware's answer when its limiter reports
// store_unavailable: FailOpen, FailClosed, or Raise (FailPolicyDefault means Raise here: a 503).
// shadow turns shadow mode on: a denied request is reported (ActionShadow) but forwarded. Bad
// options are config_invalid.
func NewHTTPEdge(headerOptionsJSON, clientKeyOptionsJSON string, failPolicy FailPolicy, shadow bool) (*HTTPEdge, error) {
	h, c := optString(headerOptionsJSON), optString(clientKeyOptionsJSON)
	defer free(h)
	defer free(c)
	var p *C.tk_http_edge
	if err := call(func() C.tk_result { return C.tk_http_edge_new(h, c, C.uint32_t(failPolicy), C.bool(shadow), &p) }); err != nil {
		return nil, err
	}
	e := &HTTPEdge{p: p}
	runtime.SetFinalizer(e, (*HTTPEdge).Close)
	return e, nil
}

// Close releases the edge (idempotent; not concurrently with other calls on it).
func (e *HTTPEdge) Close() error {
	if e.p != nil {
		C.tk_http_edge_free(e.p)
		e.p = nil
		runtime.SetFinalizer(e, nil)
	}
	return nil
}

// ClientKey is the key a request counts against: peer is the socket peer (r.RemoteAddr),
// xForwardedFor and forwarded the values of those headers, a header's repeated lines joined
// with "\n" ("" when absent). Only the header the options name is read. A peer that is not an
// IP address is config_invalid.
func (e *HTTPEdge) ClientKey(peer, xForwardedFor, forwarded string) (string, error) {
	runtime.LockOSThread()
	out := C.go_edge_client_key(handle(unsafe.Pointer(e.p)), peer, xForwardedFor, forwarded)
	if out.result != C.TK_RESULT_OK {
		err := lastError(out.result)
		runtime.UnlockOSThread()
		return "", err
	}
	runtime.UnlockOSThread()
	runtime.KeepAlive(e)
	if int(out.n) >= len(out.text) { // a key is an address or a network: never this long
		return "", &Error{Code: CodeConfigInvalid, Message: "config_invalid: client key too long"}
	}
	return textOf(&out.text, out.n), nil
}

// Check checks cost units for key on limiter at nowMs (epoch ms) and returns core's outcome
// (the edge's fail policy and shadow mode applied) with its header lines. An unavailable store
// is not an error: under Raise it is ActionUnavailable.
func (e *HTTPEdge) Check(limiter *Limiter, key string, cost uint64, nowMs int64) (EdgeAnswer, error) {
	runtime.LockOSThread()
	out := C.go_edge_check(handle(unsafe.Pointer(e.p)), handle(unsafe.Pointer(limiter.p)), key, C.uint64_t(cost), C.int64_t(nowMs))
	if out.result != C.TK_RESULT_OK {
		err := lastError(out.result)
		runtime.UnlockOSThread()
		return EdgeAnswer{}, err
	}
	runtime.UnlockOSThread()
	var text string
	if int(out.n) < len(out.text) {
		text = textOf(&out.text, out.n)
	} else {
		// Rare (a long policy name): the check is done; render its lines into a larger buffer.
		var err error
		if text, err = e.lines(limiter, key, out.outcome.decision, nowMs, int(out.n)+1); err != nil {
			return EdgeAnswer{}, err
		}
	}
	runtime.KeepAlive(e)
	runtime.KeepAlive(limiter)
	return answerOf(key, &out.outcome, text), nil
}

// EdgeAction is what the middleware does with a request (core's http::Action).
type EdgeAction uint32

const (
	// ActionForward: admitted (or admitted by fail-open); call the handler with the lines set.
	ActionForward EdgeAction = C.TK_HTTP_ACTION_FORWARD
	// ActionShadow: denied in shadow mode; call the hook, then the handler with the lines set.
	ActionShadow EdgeAction = C.TK_HTTP_ACTION_SHADOW
	// ActionDeny: denied; call the hook, then answer Status (429) with the lines and Body.
	ActionDeny EdgeAction = C.TK_HTTP_ACTION_DENY
	// ActionUnavailable: the store did not answer and the fail policy raises; answer Status
	// (503) with Body and no rate-limit field.
	ActionUnavailable EdgeAction = C.TK_HTTP_ACTION_UNAVAILABLE
)

// Limited reports whether the request was denied, so the on-limited hook is told (shadow mode
// included).
func (a EdgeAction) Limited() bool { return a == ActionShadow || a == ActionDeny }

// EdgeAnswer is what the edge decided for a request: core's outcome and header lines, which a
// middleware copies into its response.
type EdgeAnswer struct {
	Key    string     // the client key the request counted against (CheckRequest)
	Action EdgeAction // forward, shadow, deny or unavailable
	Status int        // the status the middleware answers with itself: 429, 503, or 0 to forward
	// Decision is the limiter's decision, or the fail policy's fallback (Fallback set); zero for
	// ActionUnavailable. A multi limiter's is its binding dimension's.
	Decision Decision
	Binding  int // a multi limiter's binding dimension (its index in declaration order)
	// Lines are the response's header lines, "Name: value\n" each (split them with
	// HeaderLines, or add them to an http.Header as they are).
	Lines string
}

// HeaderLines are a.Lines as name/value pairs.
func (a *EdgeAnswer) HeaderLines() []HeaderLine { return splitLines(a.Lines) }

// Body is the body of the middleware's own answer (content type application/problem+json):
// core's RFC 9457 quota-exceeded body for ActionDeny, temporary-reduced-capacity for
// ActionUnavailable, "" when the request is forwarded.
func (a *EdgeAnswer) Body() (string, error) {
	o := C.tk_http_outcome{action: C.uint32_t(a.Action), status: C.uint32_t(a.Status), decision: cDecision(a.Decision), binding: C.size_t(a.Binding)}
	return textOut(func(buf *C.char, n C.size_t, need *C.size_t) C.tk_result {
		return C.tk_http_outcome_body(&o, buf, n, need)
	})
}

func answerOf(key string, o *C.tk_http_outcome, lines string) EdgeAnswer {
	return EdgeAnswer{Key: key, Action: EdgeAction(o.action), Status: int(o.status), Decision: decisionFrom(&o.decision), Binding: int(o.binding), Lines: lines}
}

// CheckRequest is ClientKey followed by Check, in one call into the library: the request's
// client key from its peer and forwarding headers (as ClientKey), then cost units checked for
// that key on limiter at nowMs, core's outcome and its header lines. A peer that is not an IP
// address is config_invalid and nothing is checked.
//
// One cgo call and one allocation (the key and the lines share one string); CheckRequestInto
// writes them into the caller's memory instead.
func (e *HTTPEdge) CheckRequest(limiter *Limiter, peer, xForwardedFor, forwarded string, cost uint64, nowMs int64) (EdgeAnswer, error) {
	return e.CheckRequestInto(make([]byte, EdgeBufferSize), limiter, peer, xForwardedFor, forwarded, cost, nowMs)
}

// EdgeBufferSize is a buffer size for CheckRequestInto that holds the key and the lines of
// every header family with a short policy name and no partition key.
const EdgeBufferSize = 192

// CheckRequestInto is CheckRequest writing the key and the header lines into buf: the
// answer's Key and Lines are strings over buf's memory, not copies, so buf must not be written
// again while they are in use (tkhttp gives each request a buffer of its own, which the
// response's header values then keep). Lines longer than buf are rendered into a new string
// (the check is not repeated); a buffer shorter than the key is an error (config_invalid)
// after the check. buf must not be empty.
func (e *HTTPEdge) CheckRequestInto(buf []byte, limiter *Limiter, peer, xForwardedFor, forwarded string, cost uint64, nowMs int64) (EdgeAnswer, error) {
	if len(buf) == 0 {
		return EdgeAnswer{}, &Error{Code: CodeConfigInvalid, Message: "config_invalid: CheckRequestInto: empty buffer"}
	}
	out := C.go_edge_check_request(handle(unsafe.Pointer(e.p)), handle(unsafe.Pointer(limiter.p)), peer, xForwardedFor,
		forwarded, C.uint64_t(cost), C.int64_t(nowMs), (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)))
	runtime.KeepAlive(e)
	runtime.KeepAlive(limiter)
	if out.result != C.TK_RESULT_OK {
		return EdgeAnswer{}, takenError(out.result, out.message)
	}
	keyN, n := int(out.key_n), int(out.n)
	if keyN >= len(buf) { // a key is an address or a network: only a tiny buffer is this short
		return EdgeAnswer{}, &Error{Code: CodeConfigInvalid, Message: "config_invalid: client key longer than the buffer"}
	}
	if n < len(buf) {
		text := aliasString(buf[:n])
		return answerOf(text[:keyN], &out.outcome, text[keyN:]), nil
	}
	// Rare (a long policy name): the check is done; render its lines into a larger buffer.
	key := string(buf[:keyN])
	lines, err := e.lines(limiter, key, out.outcome.decision, nowMs, n-keyN+1)
	if err != nil {
		return EdgeAnswer{}, err
	}
	return answerOf(key, &out.outcome, lines), nil
}

// aliasString is b's bytes as a string without a copy (Go 1.19 has no unsafe.String): b must
// not be written afterwards.
func aliasString(b []byte) string { return *(*string)(unsafe.Pointer(&b)) }

func (e *HTTPEdge) lines(limiter *Limiter, key string, decision C.tk_decision, nowMs int64, size int) (string, error) {
	d := decision // escapes to the heap (its address goes to C), on this rare path only
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	buf := (*C.char)(C.malloc(C.size_t(size)))
	defer C.free(unsafe.Pointer(buf))
	var n C.size_t
	if r := C.go_edge_lines(e.p, limiter.p, key, &d, C.int64_t(nowMs), buf, C.size_t(size), &n); r != C.TK_RESULT_OK {
		return "", lastError(r)
	}
	return C.GoStringN(buf, C.int(n)), nil
}

// textOf copies the first n bytes of a by-value answer into a Go string (C.GoStringN would make
// the answer escape to the heap).
func textOf(text *[C.GO_EDGE_TEXT]C.char, n C.size_t) string {
	return string(unsafe.Slice((*byte)(unsafe.Pointer(&text[0])), int(n)))
}

// handle passes a C pointer as an integer (see the preamble).
func handle(p unsafe.Pointer) C.uintptr_t { return C.uintptr_t(uintptr(p)) }

// splitLines cuts core's "Name: value\n" lines; the pieces share text's memory.
func splitLines(text string) []HeaderLine {
	lines := make([]HeaderLine, 0, strings.Count(text, "\n"))
	for text != "" {
		line := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		if name, value, ok := strings.Cut(line, ": "); ok {
			lines = append(lines, HeaderLine{Name: name, Value: value})
		}
	}
	return lines
}

// CheckMulti checks cost units for keys (one per dimension, in declaration order) on a multi
// limiter at nowMs and returns core's outcome with its header lines: one list member per
// dimension, the binding one first (Binding is its index). An unavailable store is not an
// error: under Raise it is ActionUnavailable.
func (e *HTTPEdge) CheckMulti(limiter *MultiLimiter, keys []string, cost uint64, nowMs int64) (EdgeAnswer, error) {
	ckeys := cStrings(keys)
	defer freeStrings(ckeys, len(keys))
	dims := make([]C.tk_decision, len(keys)+1) // never empty: its address goes to C
	buf := make([]byte, 4*EdgeBufferSize)
	out := C.go_edge_check_multi(handle(unsafe.Pointer(e.p)), handle(unsafe.Pointer(limiter.p)), ckeys, C.size_t(len(keys)),
		C.uint64_t(cost), C.int64_t(nowMs), &dims[0], (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)))
	if out.result != C.TK_RESULT_OK {
		runtime.KeepAlive(e)
		runtime.KeepAlive(limiter)
		return EdgeAnswer{}, takenError(out.result, out.message)
	}
	n := int(out.n)
	var lines string
	if n < len(buf) {
		lines = aliasString(buf[:n])
	} else {
		// Rare (many dimensions, long names): the check is done; render its lines again.
		more := make([]byte, n+1)
		var need C.size_t
		err := call(func() C.tk_result {
			return C.tk_http_edge_multi_lines(e.p, limiter.p, ckeys, C.size_t(len(keys)), &out.outcome, &dims[0], C.int64_t(nowMs),
				(*C.char)(unsafe.Pointer(&more[0])), C.size_t(len(more)), &need)
		})
		if err != nil {
			return EdgeAnswer{}, err
		}
		lines = aliasString(more[:int(need)])
	}
	runtime.KeepAlive(e)
	runtime.KeepAlive(limiter)
	return answerOf("", &out.outcome, lines), nil
}

// HTTPErrorResponse is core's answer to a request that could not be decided because of an
// error whose code is code ("config_invalid" for a bad peer or a key function's error,
// "internal" for an error without a code): status 503 for "store_unavailable", else 500, and
// its application/problem+json body.
func HTTPErrorResponse(code string) (int, string) {
	c := C.CString(code)
	defer C.free(unsafe.Pointer(c))
	var status C.uint32_t
	body, err := textOut(func(buf *C.char, n C.size_t, need *C.size_t) C.tk_result {
		return C.tk_http_error_response(c, &status, buf, n, need)
	})
	if err != nil { // only for a code with a NUL byte, which no caller makes
		return 500, ""
	}
	return int(status), body
}
