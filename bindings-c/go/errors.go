package throttlekit

// #include <throttlekit.h>
import "C"

import "unsafe"

// Code is a stable, machine-readable error code. Core's codes are shared by every language;
// the last three only exist at the C boundary.
type Code string

// The error codes (only ever added, never renamed).
const (
	CodeConfigInvalid     Code = "config_invalid"
	CodeStoreUnavailable  Code = "store_unavailable"
	CodeRateLimitExceeded Code = "rate_limit_exceeded"
	CodeQueueFull         Code = "queue_full"
	CodeNotImplemented    Code = "not_implemented"
	CodeNullParameter     Code = "null_parameter"
	CodePanic             Code = "panic"
	CodeInvalidUTF8       Code = "invalid_utf8"
)

// Error is every failure this package returns. Branch on Code (or use errors.Is with the
// Err* sentinels); Message is for humans and not stable. A denied request is not an error.
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Code)
	}
	return e.Message
}

// Is makes errors.Is(err, ErrConfigInvalid) true for every config_invalid error.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && (t.Message == "" || t.Message == e.Message)
}

// Sentinels for errors.Is.
var (
	ErrConfigInvalid     = &Error{Code: CodeConfigInvalid}
	ErrStoreUnavailable  = &Error{Code: CodeStoreUnavailable}
	ErrRateLimitExceeded = &Error{Code: CodeRateLimitExceeded}
	ErrQueueFull         = &Error{Code: CodeQueueFull}
	ErrNotImplemented    = &Error{Code: CodeNotImplemented}
)

// lastError builds the error for result r from the library's per-thread detail message; the
// caller must still be on the OS thread that made the failing call.
func lastError(r C.tk_result) *Error {
	var buf [512]byte
	C.tk_last_error_message((*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)), nil)
	return &Error{Code: Code(C.GoString(C.tk_result_code(C.uint32_t(r)))), Message: C.GoString((*C.char)(unsafe.Pointer(&buf[0])))}
}
