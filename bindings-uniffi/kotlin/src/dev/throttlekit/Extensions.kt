// Hand-written, on top of the generated throttlekit.kt: what uniffi cannot put on the
// generated types. uniffi gives each error case its own `code` field but none on the sealed
// base class, so `catch (e: ThrottleKitException)` could not read the code without a `when`;
// these extensions give every error its code and retry hint, and name the two stores as
// `Store` arguments. Nothing here computes anything.
package dev.throttlekit

/** The stable error code (`"config_invalid"`, `"store_unavailable"`, ...), for every case. */
val ThrottleKitException.code: String
    get() = when (this) {
        is ThrottleKitException.ConfigInvalid -> code
        is ThrottleKitException.StoreUnavailable -> code
        is ThrottleKitException.RateLimitExceeded -> code
        is ThrottleKitException.QueueFull -> code
        is ThrottleKitException.NotImplemented -> code
    }

/** How long to wait before trying again, when the error knows (`queue_full`, `rate_limit_exceeded`). */
val ThrottleKitException.retryAfterMs: Long?
    get() = when (this) {
        is ThrottleKitException.ConfigInvalid -> retryAfterMs
        is ThrottleKitException.StoreUnavailable -> retryAfterMs
        is ThrottleKitException.RateLimitExceeded -> retryAfterMs
        is ThrottleKitException.QueueFull -> retryAfterMs
        is ThrottleKitException.NotImplemented -> retryAfterMs
    }

/** This store as the `store` option of a limiter, multi limiter or shaper. */
fun MemoryStore.asStore(): Store = Store.Memory(this)

/** This store as the `store` option of a limiter, multi limiter or shaper. */
fun RedisStore.asStore(): Store = Store.Redis(this)
