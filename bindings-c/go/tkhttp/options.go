// Package tkhttp is throttlekit's net/http middleware: func(http.Handler) http.Handler.
//
// It is a thin adapter. Every decision, header line, client key and problem body comes from
// the Rust core through the C ABI (throttlekit.HTTPEdge, HTTPHeaders, HTTPProblemBody),
// so a Go server sends byte for byte what the Rust, Python and Node middleware send for the
// same decisions. The option names follow the Rust tower layer's (docs/http-rust.md).
package tkhttp

import (
	"encoding/json"
	"net/http"
	"time"

	throttlekit "example.invalid/throttlekit/go"
)

// Family is a header family: FamilyDraft10 (the default), FamilyDraft7, FamilyDraft6 or
// FamilyLegacy (X-RateLimit-*, reset in epoch seconds).
type Family string

// The header families (docs/http.md, "The four families").
const (
	FamilyDraft10 Family = "draft-10"
	FamilyDraft7  Family = "draft-7"
	FamilyDraft6  Family = "draft-6"
	FamilyLegacy  Family = "legacy"
)

// HeaderOptions chooses the fields sent (core's HeaderOptions). Zero values mean the defaults:
// draft-10, policy name "default", no pk.
type HeaderOptions struct {
	Family             Family `json:"family,omitempty"`
	PolicyName         string `json:"policyName,omitempty"`
	PartitionKeySecret string `json:"partitionKeySecret,omitempty"`
}

// ClientKeyOptions are the client identity rules of the default key (core's
// ClientKeyOptions): which proxies' forwarding header to believe, the IPv6 grouping, and which
// header to read ("x-forwarded-for", the default, or "forwarded"). Zero values mean the
// defaults: no trusted proxies, /64.
type ClientKeyOptions struct {
	TrustedProxies  []string `json:"trustedProxies,omitempty"`
	IPv6Prefix      int      `json:"ipv6Prefix,omitempty"`
	ForwardedHeader string   `json:"forwardedHeader,omitempty"`
}

// LimitedEvent is what the OnLimited hook is told about each denied request (in shadow mode
// too, with Shadow set).
type LimitedEvent struct {
	Key      string               // the key the request counted against (the first dimension's for a multi limiter)
	Decision throttlekit.Decision // the decision (a multi limiter's binding dimension's)
	Binding  string               // the binding dimension's name, for a multi limiter
	Shadow   bool                 // shadow mode let the request through anyway
	Request  *http.Request
}

// Option configures a Middleware.
type Option func(*config)

type config struct {
	headerOptions []byte // HeaderOptions as JSON, validated by core in New
	clientOptions []byte // ClientKeyOptions as JSON, validated by core in New
	keyFunc       func(*http.Request) (string, error)
	keysFunc      func(*http.Request) ([]string, error)
	costFunc      func(*http.Request) uint64
	skip          func(*http.Request) bool
	onLimited     func(LimitedEvent)
	deny          func(http.ResponseWriter, *http.Request, throttlekit.Decision)
	shadow        bool
	failPolicy    throttlekit.FailPolicy
	now           func() int64
}

func defaults() config {
	return config{
		headerOptions: []byte("{}"),
		clientOptions: []byte("{}"),
		now:           func() int64 { return time.Now().UnixMilli() },
	}
}

// WithHeaderOptions sets the header family, policy name and partition-key secret. Invalid
// options make New fail with config_invalid.
func WithHeaderOptions(o HeaderOptions) Option {
	return func(c *config) { c.headerOptions, _ = json.Marshal(o) }
}

// WithClientKeyOptions sets the identity rules of the default key. Invalid options make New
// fail with config_invalid.
func WithClientKeyOptions(o ClientKeyOptions) Option {
	return func(c *config) { c.clientOptions, _ = json.Marshal(o) }
}

// WithKeyFunc replaces the default key (the client IP). An error answers 500.
func WithKeyFunc(f func(*http.Request) (string, error)) Option {
	return func(c *config) { c.keyFunc = f }
}

// WithKeysFunc gives a multi limiter one key per dimension, in declaration order (default: the
// request's key for every dimension). An error answers 500.
func WithKeysFunc(f func(*http.Request) ([]string, error)) Option {
	return func(c *config) { c.keysFunc = f }
}

// WithCostFunc sets the cost of a request (default 1).
func WithCostFunc(f func(*http.Request) uint64) Option {
	return func(c *config) { c.costFunc = f }
}

// WithSkip exempts requests: skipped ones are neither counted nor given fields.
func WithSkip(f func(*http.Request) bool) Option {
	return func(c *config) { c.skip = f }
}

// WithFailPolicy sets what the middleware answers when its limiter reports store_unavailable
// (the middleware's own policy, independent of the limiter's Options.FailPolicy):
// throttlekit.Raise (the default) answers 503 with core's temporary-reduced-capacity problem
// body, throttlekit.FailOpen forwards the request with no rate-limit fields, and
// throttlekit.FailClosed answers 429 with Retry-After: 1 and core's problem body. Core computes
// the fallback decision, as in every other binding's middleware.
func WithFailPolicy(p throttlekit.FailPolicy) Option {
	return func(c *config) { c.failPolicy = p }
}

// WithShadow turns shadow mode on: decide, send every field a denial would carry (Retry-After
// included), call the hook, but always forward the request.
func WithShadow(on bool) Option {
	return func(c *config) { c.shadow = on }
}

// WithOnLimited sets a hook called for every denied request, also in shadow mode.
func WithOnLimited(f func(LimitedEvent)) Option {
	return func(c *config) { c.onLimited = f }
}

// WithDenyResponse replaces the 429 problem+json response. The rate-limit fields are already
// set on w's header when f runs; f writes the status and the body.
func WithDenyResponse(f func(w http.ResponseWriter, r *http.Request, d throttlekit.Decision)) Option {
	return func(c *config) { c.deny = f }
}

// WithClock reads the time (epoch ms) from a throttlekit clock, e.g. a manual one in tests,
// instead of the system clock. The middleware reads it once per request, for the decision and
// for its header lines.
func WithClock(clock *throttlekit.Clock) Option {
	return func(c *config) {
		c.now = func() int64 {
			now, err := clock.Now()
			if err != nil {
				return time.Now().UnixMilli()
			}
			return now
		}
	}
}
