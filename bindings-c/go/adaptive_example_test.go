package throttlekit_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	throttlekit "example.invalid/throttlekit/go"
	"example.invalid/throttlekit/go/tkhttp"
)

var errTimeout = errors.New("timeout")

// handle is docs/adaptive.md's Go example: shed when full, report how the request ended.
func handle(limiter *throttlekit.AdaptiveLimiter, callTheService func() error) int {
	permit, rejection, err := limiter.TryAcquire("")
	if err != nil {
		return http.StatusInternalServerError
	}
	if permit == nil {
		_ = rejection.RetryAfterSecs // for the Retry-After header
		return http.StatusServiceUnavailable
	}
	outcome := throttlekit.Ignore // what a panic leaves
	defer func() { permit.Release(outcome) }()
	if err := callTheService(); errors.Is(err, errTimeout) {
		outcome = throttlekit.Dropped
		return http.StatusGatewayTimeout
	}
	outcome = throttlekit.Success
	return http.StatusOK
}

func ExampleAdaptiveLimiter() {
	limiter, err := throttlekit.NewAdaptiveLimiter(`{"algorithm":"gradient2","initialLimit":1}`)
	if err != nil {
		panic(err)
	}
	defer limiter.Close()
	fmt.Println(handle(limiter, func() error { return nil }))
	fmt.Println(handle(limiter, func() error { return errTimeout }))
	held, _, _ := limiter.TryAcquire("")
	fmt.Println(handle(limiter, func() error { return nil }))
	held.Release(throttlekit.Ignore)
	m := limiter.Metrics()
	fmt.Println(m.Succeeded, m.Dropped, m.Rejected, m.Inflight)
	// Output:
	// 200
	// 504
	// 503
	// 1 1 1 0
}

// The shedding middleware around a mux (docs/adaptive.md).
func ExampleAdaptiveLimiter_middleware() {
	limiter, err := throttlekit.NewAdaptiveLimiter(`{"algorithm":"gradient2"}`)
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	shed, err := tkhttp.Shed(limiter) // 503 + Retry-After when the limit is full
	if err != nil {
		panic(err)
	}
	handler := shed(mux)
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	fmt.Println(rec.Code, rec.Body.String())
	// Output: 200 ok
}
