// Package throttlekit is the Go binding of throttlekit: rate limiting (GCRA, token bucket,
// fixed and sliding windows, sliding-window log, calendar quotas), a leaky-bucket shaper and
// multi-dimensional all/any limits, in memory, in a SQLite file (OpenSqlite) or atomically on
// Redis (ConnectRedis) or Postgres (ConnectPostgres; MigratePostgres is its deploy step for
// PostgresOptions.NoMigrate).
//
// Every decision is made by the Rust core through libthrottlekit (the C ABI, found with
// pkg-config); this package only converts types, so Go decides exactly as Rust, C, Python and
// Node do. Handles (Store, Clock, Strategy, Limiter, MultiLimiter, Shaper) are safe for
// concurrent use; Close releases one early, otherwise a finalizer does.
package throttlekit

/*
#cgo pkg-config: throttlekit
#include <stdlib.h>
#include <throttlekit.h>
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Version is the version of the loaded libthrottlekit.
func Version() string { return C.GoString(C.tk_version()) }

// Decision is the result of a check, peek or forecast.
type Decision struct {
	Allowed      bool  // admitted (and, for a check, consumed)
	Limit        int64 // the effective ceiling (GCRA's burst, a bucket's capacity, a window's limit)
	Remaining    int64 // whole units still admissible, never negative
	ResetAt      int64 // epoch ms at which the limit is fully replenished
	RetryAfterMs int64 // 0 when allowed, else at least 1
	Fallback     bool  // the store was unavailable and the fail policy decided
}

func decisionFrom(d *C.tk_decision) Decision {
	return Decision{
		Allowed:      bool(d.allowed),
		Limit:        int64(d.limit),
		Remaining:    int64(d.remaining),
		ResetAt:      int64(d.reset_at),
		RetryAfterMs: int64(d.retry_after_ms),
		Fallback:     bool(d.fallback),
	}
}

// cDecision is d as the C struct (a decision handed back to the library).
func cDecision(d Decision) C.tk_decision {
	return C.tk_decision{
		allowed:        C.bool(d.Allowed),
		limit:          C.int64_t(d.Limit),
		remaining:      C.int64_t(d.Remaining),
		reset_at:       C.int64_t(d.ResetAt),
		retry_after_ms: C.int64_t(d.RetryAfterMs),
		fallback:       C.bool(d.Fallback),
	}
}

// Reservation is the shaper's answer: wait DelayMs before departing, or (not Accepted) the
// queue is DelayMs too long.
type Reservation struct {
	Accepted bool
	DelayMs  int64
}

// call runs one C call and turns a failure into an *Error. The detail message is per OS
// thread in the library, so the goroutine stays on its thread until it has been read.
func call(f func() C.tk_result) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if r := f(); r != C.TK_RESULT_OK {
		return lastError(r)
	}
	return nil
}

// cString copies s for C; the caller frees it with C.free.
func cString(s string) *C.char { return C.CString(s) }

// optString is cString, with "" meaning NULL (the library's "not set").
func optString(s string) *C.char {
	if s == "" {
		return nil
	}
	return C.CString(s)
}

func free(p *C.char) {
	if p != nil {
		C.free(unsafe.Pointer(p))
	}
}

// cStrings copies keys into a C array of C strings; release it with freeStrings.
func cStrings(keys []string) **C.char {
	n := len(keys)
	if n == 0 {
		return nil
	}
	arr := (*[1 << 28]*C.char)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))[:n:n]
	for i, k := range keys {
		arr[i] = C.CString(k)
	}
	return &arr[0]
}

func freeStrings(p **C.char, n int) {
	if p == nil {
		return
	}
	arr := (*[1 << 28]*C.char)(unsafe.Pointer(p))[:n:n]
	for _, s := range arr {
		C.free(unsafe.Pointer(s))
	}
	C.free(unsafe.Pointer(p))
}

// CostFromFloat converts a cost that arrived as a float (JSON, user input) by the library's
// rule: a whole number in [1, 2^53], else an ErrConfigInvalid error.
func CostFromFloat(cost float64) (uint64, error) {
	var out C.uint64_t
	err := call(func() C.tk_result { return C.tk_cost_from_double(C.double(cost), &out) })
	return uint64(out), err
}

// NowFromFloat converts an epoch-ms time that arrived as a float: a whole number within ±2^53.
func NowFromFloat(now float64) (int64, error) {
	var out C.int64_t
	err := call(func() C.tk_result { return C.tk_now_from_double(C.double(now), &out) })
	return int64(out), err
}
