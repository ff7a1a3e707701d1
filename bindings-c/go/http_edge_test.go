package throttlekit

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unsafe"
)

// The edge gives the same key and the same header lines as the JSON entry points, for every
// family and with pk; lines that do not fit the by-value buffer take the slow path intact.
func TestHTTPEdgeMatchesTheJSONEntryPoints(t *testing.T) {
	s, err := GCRA(5, 60_000, 5)
	if err != nil {
		t.Fatal(err)
	}
	clock, _ := NewManualClock(0)
	defer clock.Close()
	l, err := NewLimiter(s, &Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	long := strings.Repeat("p", 250)
	for _, opts := range []string{`{}`, `{"family":"draft-7"}`, `{"family":"draft-6"}`, `{"family":"legacy"}`,
		`{"partitionKeySecret":"s3cret"}`, `{"policyName":"` + long + `","partitionKeySecret":"s3cret"}`} {
		edge, err := NewHTTPEdge(opts, "", Raise, false)
		if err != nil {
			t.Fatal(opts, err)
		}
		for i := 0; i < 7; i++ { // allowed, then denied (Retry-After)
			key := fmt.Sprintf("k%d", len(opts))
			a, err := edge.Check(l, key, 1, int64(i*100))
			if err != nil {
				t.Fatal(opts, err)
			}
			d, lines := a.Decision, a.HeaderLines()
			if wantAction := map[bool]EdgeAction{true: ActionForward, false: ActionDeny}[d.Allowed]; a.Action != wantAction ||
				a.Status != map[bool]int{true: 0, false: 429}[d.Allowed] {
				t.Fatalf("%s check %d: action %d status %d for %+v", opts, i, a.Action, a.Status, d)
			}
			dec, _ := json.Marshal(map[string]any{"allowed": d.Allowed, "limit": d.Limit, "remaining": d.Remaining,
				"resetAt": d.ResetAt, "retryAfterMs": d.RetryAfterMs})
			want, err := HTTPHeaders(fmt.Sprintf(`{"options":%s,"nowMs":%d,"limits":[{"key":%q,"strategy":%s,"decision":%s}]}`,
				opts, i*100, key, l.StrategySpec(), dec))
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(lines) != fmt.Sprint(want) {
				t.Fatalf("%s check %d: edge %q, JSON %q", opts, i, lines, want)
			}
			if i == 6 && (d.Allowed || lines[len(lines)-1].Name != "Retry-After") {
				t.Fatalf("%s: sixth check %+v %q", opts, d, lines)
			}
		}
		edge.Close()
	}
}

func TestHTTPEdgeClientKey(t *testing.T) {
	edge, err := NewHTTPEdge("", `{"trustedProxies":["10.0.0.0/8"]}`, FailPolicyDefault, false)
	if err != nil {
		t.Fatal(err)
	}
	defer edge.Close()
	for _, c := range []struct{ peer, xff, fwd, want string }{
		{"10.0.0.1:5000", "6.6.6.6, 203.0.113.7", "", "203.0.113.7"},
		{"10.0.0.1:5000", "203.0.113.7\n10.2.2.2", "for=198.51.100.1", "203.0.113.7"}, // two lines, XFF read
		{"192.0.2.1:80", "203.0.113.7", "", "192.0.2.1"},                              // untrusted peer
		{"[2001:db8::1]:443", "", "", "2001:db8::/64"},
		{"10.0.0.1:1", "\xff", "", "10.0.0.1"}, // not UTF-8: kept lossily, the hop ends the walk
	} {
		got, err := edge.ClientKey(c.peer, c.xff, c.fwd)
		if err != nil || got != c.want {
			t.Errorf("%q %q %q: %q %v, want %q", c.peer, c.xff, c.fwd, got, err, c.want)
		}
	}
	var tkErr *Error
	if _, err := edge.ClientKey("not-an-ip", "", ""); !errors.As(err, &tkErr) || tkErr.Code != CodeConfigInvalid {
		t.Fatalf("bad peer: %v", err)
	}
	if _, err := NewHTTPEdge(`{"family":"draft-99"}`, "", Raise, false); !errors.As(err, &tkErr) || tkErr.Code != CodeConfigInvalid {
		t.Fatalf("bad family: %v", err)
	}
}

// Limiter.Check passes Go's counted string: an empty key and any UTF-8 key count as themselves;
// a key that is not UTF-8 is invalid_utf8, and one with a NUL byte (which no C-string key can
// hold) is config_invalid, never silently cut short.
func TestCheckCountedKeys(t *testing.T) {
	s, _ := GCRA(2, 60_000, 2)
	l, err := NewLimiter(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, key := range []string{"", "a", "ключ"} {
		d1, err1 := l.Check(key, 1)
		d2, err2 := l.Check(key, 1)
		d3, err3 := l.Check(key, 1)
		if err1 != nil || err2 != nil || err3 != nil || !d1.Allowed || !d2.Allowed || d3.Allowed {
			t.Fatalf("key %q: %+v %+v %+v %v %v %v", key, d1, d2, d3, err1, err2, err3)
		}
	}
	var tkErr *Error
	if _, err := l.Check("a\x00b", 1); !errors.As(err, &tkErr) || tkErr.Code != CodeConfigInvalid {
		t.Fatalf("a NUL inside a key: %v", err)
	}
	if _, err := l.Check("\xff", 1); !errors.As(err, &tkErr) || tkErr.Code != CodeInvalidUTF8 {
		t.Fatalf("invalid UTF-8: %v", err)
	}
	if _, err := l.Check("k", 0); !errors.As(err, &tkErr) || tkErr.Code != CodeConfigInvalid {
		t.Fatalf("cost 0: %v", err)
	}
}

// CheckRequest (one call) answers exactly as ClientKey followed by Check on a twin limiter:
// the same key, decision and lines, for every family, with pk, through forwarding headers, and
// with lines too long for the by-value buffer. A bad peer is config_invalid with the library's
// message and consumes nothing.
func TestHTTPEdgeCheckRequestIsClientKeyThenCheck(t *testing.T) {
	s, err := GCRA(3, 60_000, 3)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("p", 250)
	for _, opts := range []string{`{}`, `{"family":"draft-7"}`, `{"family":"draft-6"}`, `{"family":"legacy"}`,
		`{"partitionKeySecret":"s3cret"}`, `{"policyName":"` + long + `","partitionKeySecret":"s3cret"}`} {
		edge, err := NewHTTPEdge(opts, `{"trustedProxies":["10.0.0.0/8"]}`, Raise, false)
		if err != nil {
			t.Fatal(opts, err)
		}
		one, err1 := NewLimiter(s, nil)
		two, err2 := NewLimiter(s, nil)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		for i := 0; i < 5; i++ { // allowed three times, then denied with Retry-After
			for _, c := range []struct{ peer, xff, fwd string }{
				{"192.0.2.1:80", "", ""},
				{"10.0.0.1:5000", "6.6.6.6\n203.0.113.7, 10.1.1.1", "for=198.51.100.1"},
				{"[2001:db8::1]:443", "", ""},
			} {
				now := int64(1_700_000_000_000 + i*10)
				a, err := edge.CheckRequest(one, c.peer, c.xff, c.fwd, 1, now)
				if err != nil {
					t.Fatal(opts, c, err)
				}
				key, err := edge.ClientKey(c.peer, c.xff, c.fwd)
				if err != nil {
					t.Fatal(err)
				}
				b, err := edge.Check(two, key, 1, now)
				if err != nil {
					t.Fatal(err)
				}
				d, lines := b.Decision, b.HeaderLines()
				if a.Action != b.Action || a.Status != b.Status {
					t.Fatalf("%s %v check %d: one call %d/%d, two calls %d/%d", opts, c, i, a.Action, a.Status, b.Action, b.Status)
				}
				if a.Key != key || a.Decision != d || fmt.Sprint(a.HeaderLines()) != fmt.Sprint(lines) {
					t.Fatalf("%s %v check %d: one call %q %+v %q, two calls %q %+v %q", opts, c, i, a.Key, a.Decision,
						a.HeaderLines(), key, d, lines)
				}
				if i == 4 && (d.Allowed || lines[len(lines)-1].Name != "Retry-After") {
					t.Fatalf("%s: fifth check %+v %q", opts, d, lines)
				}
			}
		}
		var tkErr *Error
		if _, err := edge.CheckRequest(one, "not-an-ip", "", "", 1, 0); !errors.As(err, &tkErr) ||
			tkErr.Code != CodeConfigInvalid || !strings.Contains(tkErr.Message, "peer") {
			t.Fatalf("bad peer: %v", err)
		}
		if _, err := edge.CheckRequest(one, "192.0.2.1", "", "", 0, 0); !errors.As(err, &tkErr) || tkErr.Code != CodeConfigInvalid {
			t.Fatalf("cost 0: %v", err)
		}
		one.Close()
		two.Close()
		edge.Close()
	}
}

// CheckRequestInto answers as CheckRequest whatever the buffer's size: the key and the lines in
// the buffer itself when they fit (no copy), lines rendered apart when only the key fits, and
// config_invalid (after the check) when not even the key fits. An empty buffer is
// config_invalid and checks nothing; a failure's message is the library's.
func TestHTTPEdgeCheckRequestIntoAnyBuffer(t *testing.T) {
	s, err := GCRA(100, 60_000, 100)
	if err != nil {
		t.Fatal(err)
	}
	edge, err := NewHTTPEdge(`{"partitionKeySecret":"s3cret"}`, "", Raise, false)
	if err != nil {
		t.Fatal(err)
	}
	defer edge.Close()
	one, _ := NewLimiter(s, nil)
	two, _ := NewLimiter(s, nil)
	defer one.Close()
	defer two.Close()
	const now = 1_700_000_000_000
	for _, size := range []int{1, 8, 12, 40, EdgeBufferSize, 4096} {
		buf := make([]byte, size)
		got, err := edge.CheckRequestInto(buf, one, "192.0.2.123:80", "", "", 1, now)
		want, werr := edge.CheckRequest(two, "192.0.2.123:80", "", "", 1, now)
		if werr != nil {
			t.Fatal(werr)
		}
		if size <= len(want.Key) {
			var tkErr *Error
			if !errors.As(err, &tkErr) || tkErr.Code != CodeConfigInvalid {
				t.Fatalf("buffer of %d: %v", size, err)
			}
			continue
		}
		if err != nil || got.Key != want.Key || got.Decision != want.Decision || got.Lines != want.Lines {
			t.Fatalf("buffer of %d: %q %+v %q %v, want %q %+v %q", size, got.Key, got.Decision, got.Lines, err,
				want.Key, want.Decision, want.Lines)
		}
		fits := len(want.Key)+len(want.Lines) < size
		if inBuf := (*[2]uintptr)(unsafe.Pointer(&got.Lines))[0] == uintptr(unsafe.Pointer(&buf[len(want.Key)])); inBuf != fits {
			t.Fatalf("buffer of %d: lines in the buffer %v, want %v", size, inBuf, fits)
		}
	}
	var tkErr *Error
	if _, err := edge.CheckRequestInto(nil, one, "192.0.2.123:80", "", "", 1, now); !errors.As(err, &tkErr) || tkErr.Code != CodeConfigInvalid {
		t.Fatalf("empty buffer: %v", err)
	}
	if _, err := edge.CheckRequestInto(make([]byte, 64), one, "not-an-ip", "", "", 1, now); !errors.As(err, &tkErr) ||
		tkErr.Code != CodeConfigInvalid || !strings.Contains(tkErr.Message, "peer") {
		t.Fatalf("bad peer: %v", err)
	}
	a, _ := edge.CheckRequest(one, "192.0.2.123:80", "", "", 1, now)
	b, _ := edge.CheckRequest(two, "192.0.2.123:80", "", "", 1, now)
	if a.Decision != b.Decision { // the empty buffer and the bad peer checked nothing
		t.Fatalf("%+v vs %+v", a.Decision, b.Decision)
	}
}

// The hot paths allocate nothing of their own: Limiter.Check none, CheckRequestInto none (its
// answer lives in the caller's buffer), CheckRequest one (its buffer).
func TestHotPathsAllocate(t *testing.T) {
	s, _ := GCRA(1_000_000_000, 60_000, 1_000_000_000)
	l, err := NewLimiter(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	edge, err := NewHTTPEdge("", "", Raise, false)
	if err != nil {
		t.Fatal(err)
	}
	defer edge.Close()
	buf := make([]byte, EdgeBufferSize)
	for _, c := range []struct {
		name string
		want float64
		f    func()
	}{
		{"Limiter.Check", 0, func() { _, _ = l.Check("user:1", 1) }},
		{"CheckRequestInto", 0, func() { _, _ = edge.CheckRequestInto(buf, l, "192.0.2.1:80", "", "", 1, 1_700_000_000_000) }},
		{"CheckRequest", 1, func() { _, _ = edge.CheckRequest(l, "192.0.2.1:80", "", "", 1, 1_700_000_000_000) }},
	} {
		if got := testing.AllocsPerRun(1000, c.f); got != c.want {
			t.Errorf("%s: %v allocations a call, want %v", c.name, got, c.want)
		}
	}
}

// A multi limiter's request through the edge gives the lines the JSON entry point gives for
// the same decisions (binding dimension first), with no JSON on the way; lines longer than the
// first buffer (many dimensions with long names) are rendered again, intact; the outcome's
// Binding names the binding dimension.
func TestHTTPEdgeCheckMultiMatchesTheJSONEntryPoint(t *testing.T) {
	long := strings.Repeat("n", 200)
	for _, names := range [][]string{{"ip", "global"}, {long + "1", long + "2", long + "3", long + "4", long + "5"}} {
		var dims []Dimension
		var specs []string
		for i, name := range names {
			s, err := FixedWindow(uint64(2+i), 60_000)
			if err != nil {
				t.Fatal(err)
			}
			dims = append(dims, Dimension{Name: name, Strategy: s, CostMultiplier: 1})
			spec, _ := s.SpecJSON()
			specs = append(specs, spec)
		}
		m, err := NewMultiLimiter(All, dims, nil)
		if err != nil {
			t.Fatal(err)
		}
		twin, err := NewMultiLimiter(All, dims, nil)
		if err != nil {
			t.Fatal(err)
		}
		edge, err := NewHTTPEdge(`{"partitionKeySecret":"s"}`, "", Raise, false)
		if err != nil {
			t.Fatal(err)
		}
		keys := make([]string, len(names))
		for i := range keys {
			keys[i] = fmt.Sprintf("k%d", i)
		}
		for i := 0; i < 4; i++ {
			now := int64(1_700_000_000_000 + i)
			a, err := edge.CheckMulti(m, keys, 1, now)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]EdgeAction{true: ActionForward, false: ActionDeny}[a.Decision.Allowed]; a.Action != want {
				t.Fatalf("check %d: action %d for %+v", i, a.Action, a.Decision)
			}
			// The same request on a twin limiter gives every dimension's own decision, which the
			// JSON request lists binding dimension first (that one with the request's decision).
			td, err := twin.CheckAt(keys, 1, now)
			if err != nil || td.Decision != a.Decision || td.Binding != names[a.Binding] {
				t.Fatalf("check %d: twin %+v %v, edge %+v", i, td, err, a)
			}
			var limits []string
			for _, j := range append([]int{a.Binding}, others(len(names), a.Binding)...) {
				d := td.Dimensions[j]
				if j == a.Binding {
					d = td.Decision
				}
				dec, _ := json.Marshal(map[string]any{"allowed": d.Allowed, "limit": d.Limit, "remaining": d.Remaining,
					"resetAt": d.ResetAt, "retryAfterMs": d.RetryAfterMs})
				limits = append(limits, fmt.Sprintf(`{"name":%q,"key":%q,"strategy":%s,"decision":%s}`, names[j], keys[j], specs[j], dec))
			}
			want, err := HTTPHeaders(fmt.Sprintf(`{"options":{"partitionKeySecret":"s"},"nowMs":%d,"limits":[%s]}`, now,
				strings.Join(limits, ",")))
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(a.HeaderLines()) != fmt.Sprint(want) {
				t.Fatalf("check %d: edge %q\nJSON %q", i, a.HeaderLines(), want)
			}
		}
		edge.Close()
		m.Close()
		twin.Close()
	}
}

// others are 0..n-1 without skip, in order.
func others(n, skip int) []int {
	var out []int
	for i := 0; i < n; i++ {
		if i != skip {
			out = append(out, i)
		}
	}
	return out
}

// The bodies come from core: the 429 body names the same wait as Retry-After, the 503 body is
// HTTPProblemBody(nil), and an undecided request's answer depends on its error's code.
func TestHTTPEdgeBodiesAndErrorResponses(t *testing.T) {
	d := Decision{Limit: 5, ResetAt: 60_000, RetryAfterMs: 1_500}
	deny := EdgeAnswer{Action: ActionDeny, Status: 429, Decision: d}
	got, err := deny.Body()
	want, _ := HTTPProblemBody(&d)
	if err != nil || got != want || !strings.Contains(got, "retry in 2 seconds") {
		t.Fatalf("deny body %q %v, want %q", got, err, want)
	}
	unavailable := EdgeAnswer{Action: ActionUnavailable, Status: 503}
	got, err = unavailable.Body()
	want, _ = HTTPProblemBody(nil)
	if err != nil || got != want {
		t.Fatalf("503 body %q %v, want %q", got, err, want)
	}
	for _, a := range []EdgeAnswer{{Action: ActionForward}, {Action: ActionShadow, Decision: d}} {
		if got, err := a.Body(); err != nil || got != "" {
			t.Fatalf("forwarded %d: body %q %v", a.Action, got, err)
		}
	}
	var tkErr *Error
	if _, err := (&EdgeAnswer{Action: 9}).Body(); !errors.As(err, &tkErr) || tkErr.Code != CodeConfigInvalid {
		t.Fatalf("unknown action: %v", err)
	}
	if status, body := HTTPErrorResponse("store_unavailable"); status != 503 || body != want {
		t.Fatalf("store_unavailable: %d %q", status, body)
	}
	status, body := HTTPErrorResponse("config_invalid")
	if status != 500 || body != `{"type":"about:blank","title":"Internal Server Error","status":500,"detail":"rate limiter: config_invalid"}` {
		t.Fatalf("config_invalid: %d %q", status, body)
	}
}
