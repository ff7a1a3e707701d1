package throttlekit

/*
#include <stdlib.h>
#include <throttlekit.h>
*/
import "C"

import (
	"encoding/json"
	"runtime"
	"unsafe"
)

// HeaderLine is one response header line: a field name and its value.
type HeaderLine struct {
	Name  string
	Value string
}

// textCall runs tk_http_headers or tk_http_client_key with a buffer that grows until the
// answer fits (the library reports the full length), on one OS thread so that a failure's
// detail message is read from the thread that made the call.
func textCall(f func(req *C.char, buf *C.char, n C.size_t, need *C.size_t) C.tk_result, request string) (string, error) {
	req := cString(request)
	defer free(req)
	return textOut(func(buf *C.char, n C.size_t, need *C.size_t) C.tk_result { return f(req, buf, n, need) })
}

// textOut runs a C function that copies a text answer into a caller's buffer, growing the
// buffer until the answer fits, on one OS thread (see textCall).
func textOut(f func(buf *C.char, n C.size_t, need *C.size_t) C.tk_result) (string, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	size := 256
	for {
		buf := make([]byte, size)
		var need C.size_t
		if r := f((*C.char)(unsafe.Pointer(&buf[0])), C.size_t(size), &need); r != C.TK_RESULT_OK {
			return "", lastError(r)
		}
		if int(need) < size {
			return string(buf[:need]), nil
		}
		size = int(need) + 1
	}
}

// HTTPHeaders returns the response header lines for a request's limiting decision(s), computed
// by the core (docs/http.md). requestJSON is the HeadersRequest object of
// conformance-vectors/FORMAT.md: {"options": {...}, "nowMs": N, "limits": [{"name"?, "key"?,
// "strategy": spec, "decision": {...}}]}, the binding limit first. Bad input is
// config_invalid.
func HTTPHeaders(requestJSON string) ([]HeaderLine, error) {
	text, err := textCall(func(req, buf *C.char, n C.size_t, need *C.size_t) C.tk_result {
		return C.tk_http_headers(req, buf, n, need)
	}, requestJSON)
	if err != nil {
		return nil, err
	}
	var pairs [][2]string
	if err := json.Unmarshal([]byte(text), &pairs); err != nil {
		return nil, &Error{Code: CodeConfigInvalid, Message: "headers: " + err.Error()}
	}
	lines := make([]HeaderLine, len(pairs))
	for i, p := range pairs {
		lines[i] = HeaderLine{Name: p[0], Value: p[1]}
	}
	return lines, nil
}

// HTTPClientKey returns the key a request counts against: the socket peer, or the rightmost
// untrusted forwarding hop behind trusted proxies, IPv6 grouped by prefix. requestJSON is the
// ClientKeyRequest object of conformance-vectors/FORMAT.md: {"peer": "10.0.0.1", "headers":
// [["X-Forwarded-For", "..."]], "options": {...}}. Bad input is config_invalid.
func HTTPClientKey(requestJSON string) (string, error) {
	return textCall(func(req, buf *C.char, n C.size_t, need *C.size_t) C.tk_result {
		return C.tk_http_client_key(req, buf, n, need)
	}, requestJSON)
}

// HTTPProblemBody is core's RFC 9457 application/problem+json body: for a denied decision the
// 429 "quota-exceeded" body, whose detail names the same wait as Retry-After; for nil the 503
// "temporary-reduced-capacity" body a middleware sends when the store could not decide.
func HTTPProblemBody(denied *Decision) (string, error) {
	if denied == nil {
		return textOut(func(buf *C.char, n C.size_t, need *C.size_t) C.tk_result {
			return C.tk_http_problem_body(nil, buf, n, need)
		})
	}
	d := cDecision(*denied)
	return textOut(func(buf *C.char, n C.size_t, need *C.size_t) C.tk_result {
		return C.tk_http_problem_body(&d, buf, n, need)
	})
}

// SpecJSON is the strategy's JSON spec (the vectors' format), which ParseStrategy reads back to
// the same strategy and HTTPHeaders takes as a limit's "strategy".
func (s *Strategy) SpecJSON() (string, error) {
	out, err := textOut(func(buf *C.char, n C.size_t, need *C.size_t) C.tk_result {
		return C.tk_strategy_to_json(s.p, buf, n, need)
	})
	runtime.KeepAlive(s)
	return out, err
}
