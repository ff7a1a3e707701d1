// Package tkgin is throttlekit's gin middleware: a gin.HandlerFunc for router.Use, a group's
// Use, or one route's handler chain.
//
// It is tkhttp's net/http middleware in gin's shape, not a second implementation: the check,
// the fail policy, shadow mode, the header lines, the client key and the problem bodies are
// tkhttp's, which takes each of them from the Rust core, so a gin server sends byte for byte
// what every other throttlekit middleware sends. Any tkhttp.Option applies; the With*
// functions here are the ones whose callbacks take a *gin.Context instead of an *http.Request.
//
// The client key is core's, from the peer address and the forwarding header of a proxy listed in
// tkhttp.ClientKeyOptions.TrustedProxies; gin's own SetTrustedProxies and c.ClientIP are not
// consulted, so every language agrees on who the client is.
package tkgin

import (
	"context"
	"net/http"

	throttlekit "example.invalid/throttlekit/go"
	"example.invalid/throttlekit/go/tkhttp"
	"github.com/gin-gonic/gin"
)

// contextKey carries the request's *gin.Context through tkhttp's *http.Request callbacks.
type contextKey struct{}

// New returns middleware that limits every request it runs for with limiter. A bad option
// (header family, trusted proxies, ...) is a config_invalid *throttlekit.Error here, never at
// the first request.
func New(limiter *throttlekit.Limiter, opts ...tkhttp.Option) (gin.HandlerFunc, error) {
	m, err := tkhttp.New(limiter, opts...)
	if err != nil {
		return nil, err
	}
	return handler(m), nil
}

// NewMulti is New for a multi-dimensional limiter (one key per dimension: WithKeysFunc).
func NewMulti(limiter *throttlekit.MultiLimiter, opts ...tkhttp.Option) (gin.HandlerFunc, error) {
	m, err := tkhttp.NewMulti(limiter, opts...)
	if err != nil {
		return nil, err
	}
	return handler(m), nil
}

// Shed returns middleware that sheds load with an adaptive concurrency limiter: tkhttp's
// Shedder (503 with Retry-After when the limit is full; the rest of the chain's 503 or 504, or a
// panic, released as dropped).
func Shed(limiter *throttlekit.AdaptiveLimiter, opts ...tkhttp.ShedOption) (gin.HandlerFunc, error) {
	s, err := tkhttp.NewShedder(limiter, opts...)
	if err != nil {
		return nil, err
	}
	return wrap(s.Handler), nil
}

// handler runs tkhttp's decision around the rest of gin's chain.
func handler(m *tkhttp.Middleware) gin.HandlerFunc { return wrap(m.Handler) }

// wrap runs a net/http middleware around the rest of gin's chain: when the request is
// forwarded, the chain continues (c.Next) with the middleware's header fields already on
// c.Writer's header; when it is answered (429, 503, or a key function's 500), the chain stops
// (c.Abort).
func wrap(middleware func(http.Handler) http.Handler) gin.HandlerFunc {
	return func(c *gin.Context) {
		forwarded := false
		next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
			forwarded = true
			c.Next()
		})
		r := c.Request.WithContext(context.WithValue(c.Request.Context(), contextKey{}, c))
		middleware(next).ServeHTTP(c.Writer, r)
		if !forwarded {
			c.Abort()
		}
	}
}

// Context is the *gin.Context of a request that this package's middleware is deciding, for a
// tkhttp callback that takes the *http.Request; nil for any other request.
func Context(r *http.Request) *gin.Context {
	c, _ := r.Context().Value(contextKey{}).(*gin.Context)
	return c
}

// WithKeyFunc derives the key from the request (a user id, an API key header, a route
// parameter) instead of the client IP. An error answers 500.
func WithKeyFunc(f func(*gin.Context) (string, error)) tkhttp.Option {
	return tkhttp.WithKeyFunc(func(r *http.Request) (string, error) { return f(Context(r)) })
}

// WithKeysFunc gives a multi limiter one key per dimension, in declaration order.
func WithKeysFunc(f func(*gin.Context) ([]string, error)) tkhttp.Option {
	return tkhttp.WithKeysFunc(func(r *http.Request) ([]string, error) { return f(Context(r)) })
}

// WithCostFunc sets the cost of a request (default 1).
func WithCostFunc(f func(*gin.Context) uint64) tkhttp.Option {
	return tkhttp.WithCostFunc(func(r *http.Request) uint64 { return f(Context(r)) })
}

// WithSkip exempts requests: skipped ones are neither counted nor given fields.
func WithSkip(f func(*gin.Context) bool) tkhttp.Option {
	return tkhttp.WithSkip(func(r *http.Request) bool { return f(Context(r)) })
}

// WithDenyResponse replaces the 429 problem+json answer. The rate-limit fields are already on
// c.Writer's header when f runs; f writes the status and the body (c.JSON, c.String, ...).
// The chain is aborted after it either way.
func WithDenyResponse(f func(c *gin.Context, d throttlekit.Decision)) tkhttp.Option {
	return tkhttp.WithDenyResponse(func(_ http.ResponseWriter, r *http.Request, d throttlekit.Decision) {
		f(Context(r), d)
	})
}
