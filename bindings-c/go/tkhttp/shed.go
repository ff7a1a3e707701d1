package tkhttp

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	throttlekit "example.invalid/throttlekit/go"
)

// Shedder sheds load with an adaptive concurrency limiter (docs/adaptive.md): each request takes
// a permit (or waits up to WithShedWait for one); a refused request is answered 503 Service
// Unavailable with Retry-After from core's rejection and never reaches the handler. The permit
// is released when the handler returns: a 503 or 504 from the handler, or a panic, is Dropped
// (a congestion signal); a request whose client went away (its context is done) is Ignore;
// anything else is Success. Round trips are measured by core on its monotonic clock. Safe for
// concurrent use.
type Shedder struct {
	limiter   *throttlekit.AdaptiveLimiter
	partition func(*http.Request) string
	wait      time.Duration
}

// ShedOption configures a Shedder.
type ShedOption func(*Shedder)

// WithPartition names each request's partition ("" is none). An unknown name is answered 500
// with core's config_invalid problem: it is a configuration mistake, not load.
func WithPartition(f func(*http.Request) string) ShedOption {
	return func(s *Shedder) { s.partition = f }
}

// WithShedWait waits up to d for a permit (in the limiter's FIFO or LIFO order) before
// shedding. A request whose client goes away during the wait leaves the queue at once and is
// not answered (AdaptiveLimiter.Acquire on the request's context).
func WithShedWait(d time.Duration) ShedOption {
	return func(s *Shedder) { s.wait = d }
}

// NewShedder builds the shedding middleware around limiter.
func NewShedder(limiter *throttlekit.AdaptiveLimiter, opts ...ShedOption) (*Shedder, error) {
	if limiter == nil {
		return nil, &throttlekit.Error{Code: throttlekit.CodeConfigInvalid, Message: "config_invalid: tkhttp: limiter is nil"}
	}
	s := &Shedder{limiter: limiter}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// Shed is NewShedder followed by Handler:
//
//	shed, err := tkhttp.Shed(limiter)
//	http.ListenAndServe(addr, shed(mux))
func Shed(limiter *throttlekit.AdaptiveLimiter, opts ...ShedOption) (func(http.Handler) http.Handler, error) {
	s, err := NewShedder(limiter, opts...)
	if err != nil {
		return nil, err
	}
	return s.Handler, nil
}

// statusRecorder remembers the status the handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (w *statusRecorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the server's writer (Flush, deadlines).
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Handler wraps next: func(http.Handler) http.Handler.
func (s *Shedder) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		partition := ""
		if s.partition != nil {
			partition = s.partition(r)
		}
		var permit *throttlekit.Permit
		var rejection *throttlekit.Rejection
		var err error
		if s.wait > 0 {
			ctx, cancel := context.WithTimeout(r.Context(), s.wait)
			permit, rejection, err = s.limiter.Acquire(ctx, partition)
			cancel()
			if err != nil && errors.Is(err, context.Canceled) {
				return // the client went away: no one to answer
			}
		} else {
			permit, rejection, err = s.limiter.TryAcquire(partition)
		}
		switch {
		case err != nil:
			internalError(w, err)
			return
		case permit == nil:
			w.Header().Set("Retry-After", strconv.FormatUint(rejection.RetryAfterSecs, 10))
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		rec := &statusRecorder{ResponseWriter: w}
		outcome := throttlekit.Dropped // a panic leaves it so
		defer func() { _, _ = permit.Release(outcome) }()
		next.ServeHTTP(rec, r)
		switch {
		case r.Context().Err() != nil:
			outcome = throttlekit.Ignore
		case rec.status == http.StatusServiceUnavailable || rec.status == http.StatusGatewayTimeout:
			outcome = throttlekit.Dropped
		default:
			outcome = throttlekit.Success
		}
	})
}
