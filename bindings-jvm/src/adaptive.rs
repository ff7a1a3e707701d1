//! `AdaptiveLimiter` and its `Permit`: core's adaptive concurrency limiter.
//!
//! The limiter is a [`handle::Handle`] like every other object. A permit is a plain box (a
//! `Mutex<Permit>`, so a release racing another is safe) whose address Java keeps until it frees
//! it: right after the first release, or from the `Cleaner` when the permit was never released
//! (core then releases it as `ignore` and counts a leak). The partition arrives in the scratch
//! buffer as a key (length 0: none), and a rejection's numbers go back there.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use jni_sys::{JNIEnv, jboolean, jbyteArray, jclass, jint, jlong, jlongArray};
use throttlekit::Error;
use throttlekit::concurrency::{AdaptiveConfig, AdaptiveLimiter, Admission, Outcome, Permit, VirtualClock};

use crate::{guard, handle, jbool, scratch};

/// The limiter, and its virtual clock when it was built on one.
struct Adaptive {
    limiter: AdaptiveLimiter,
    clock: Option<VirtualClock>,
}

#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_adaptiveNew(
    env: *mut JNIEnv,
    _: jclass,
    config: jbyteArray,
    virtual_clock: jboolean,
) -> jlong {
    guard(env, || {
        let json = unsafe { crate::env::text(env, config, "options")? };
        let config = AdaptiveConfig::from_json(&json)?;
        let a = if virtual_clock != 0 {
            let clock = VirtualClock::new(0);
            Adaptive { limiter: AdaptiveLimiter::with_clock(config, Arc::new(clock.clone()))?, clock: Some(clock) }
        } else {
            Adaptive { limiter: AdaptiveLimiter::new(config)?, clock: None }
        };
        Ok(handle::leak(a))
    })
}

handle::handle_exports!(
    Adaptive,
    "adaptive limiter",
    adaptive,
    Java_dev_throttlekit_internal_Native_adaptiveClose,
    Java_dev_throttlekit_internal_Native_adaptiveFree
);

/// `try_acquire` (`timeout_ms < 0`) or `acquire_blocking`, for the partition in the scratch
/// buffer (length 0: none). Granted: the permit's address. Refused: 0, with limit, inflight,
/// retryAfterMs and retryAfterSecs in the scratch buffer's results.
#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_adaptiveAcquire(
    env: *mut JNIEnv,
    _: jclass,
    h: jlong,
    addr: jlong,
    len: jint,
    timeout_ms: jlong,
) -> jlong {
    guard(env, || unsafe {
        let a = adaptive(h)?;
        let partition = scratch::key(addr, len)?;
        let partition = (!partition.is_empty()).then_some(partition);
        let admission = match u64::try_from(timeout_ms) {
            Err(_) => a.limiter.try_acquire(partition)?,
            Ok(ms) => a.limiter.acquire_blocking(partition, Duration::from_millis(ms))?,
        };
        Ok(match admission {
            Admission::Granted(p) => Box::into_raw(Box::new(Mutex::new(p))) as jlong,
            Admission::Rejected(r) => {
                let secs = r.retry_after_secs();
                scratch::put(addr, &[i64::from(r.limit), i64::from(r.inflight), r.retry_after_ms as i64, secs as i64]);
                0
            }
        })
    })
}

/// Releases permit `p` with `outcome` (0 success, 1 ignore, 2 dropped), measured by core, or
/// with `rtt_ns` when `measured` is false. Returns whether this call released it.
#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_adaptiveRelease(
    env: *mut JNIEnv,
    _: jclass,
    p: jlong,
    outcome: jint,
    measured: jboolean,
    rtt_ns: jlong,
) -> jboolean {
    guard(env, || {
        if p == 0 {
            return Err(Error::config("permit", "is missing (internal)"));
        }
        let o = match outcome {
            0 => Outcome::Success,
            1 => Outcome::Ignore,
            2 => Outcome::Dropped,
            _ => return Err(Error::config("outcome", "must be success, ignore or dropped")),
        };
        // SAFETY: Java passes a permit address it has not freed (it frees under the same lock).
        let permit = unsafe { &*(p as *const Mutex<Permit>) };
        let mut permit = permit.lock().unwrap_or_else(|e| e.into_inner());
        let released = if measured != 0 { permit.release(o) } else { permit.release_with_rtt_ns(o, rtt_ns)? };
        Ok(jbool(released))
    })
}

/// Frees permit `p` (a permit never released is released as `ignore` and counted as leaked).
#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_adaptivePermitFree(env: *mut JNIEnv, _: jclass, p: jlong) {
    guard(env, || {
        if p != 0 {
            // SAFETY: Java frees each permit address once, after its last use.
            drop(unsafe { Box::from_raw(p as *mut Mutex<Permit>) });
        }
        Ok(())
    })
}

/// limit, inflight, waiting, acquired, rejected, succeeded, dropped, ignored, leaked, shortRtts,
/// windows, baselineRttUs, latencyUs, slowStart (0/1).
#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_adaptiveMetrics(
    env: *mut JNIEnv,
    _: jclass,
    h: jlong,
) -> jlongArray {
    guard(env, || unsafe {
        let m = adaptive(h)?.limiter.metrics();
        let l = |v: u64| jlong::try_from(v).unwrap_or(jlong::MAX);
        let values = [
            i64::from(m.limit),
            i64::from(m.inflight),
            i64::from(m.waiting),
            l(m.acquired),
            l(m.rejected),
            l(m.succeeded),
            l(m.dropped),
            l(m.ignored),
            l(m.leaked),
            l(m.short_rtts),
            l(m.windows),
            l(m.baseline_rtt_us),
            l(m.latency_us),
            i64::from(m.slow_start),
        ];
        Ok(crate::env::new_longs(env, &values))
    })
}

/// `limit()` (op 0), `inflight()` (op 1), or moves the virtual clock forward `v` ns (op 2;
/// `not_implemented` on a limiter on the monotonic clock).
#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_adaptiveOp(
    env: *mut JNIEnv,
    _: jclass,
    h: jlong,
    op: jint,
    v: jlong,
) -> jlong {
    guard(env, || unsafe {
        let a = adaptive(h)?;
        Ok(match op {
            0 => i64::from(a.limiter.limit()),
            1 => i64::from(a.limiter.inflight()),
            _ => {
                let clock = a.clock.as_ref().ok_or_else(|| {
                    Error::new(
                        throttlekit::ErrorCode::NotImplemented,
                        "not_implemented: this limiter has no virtual clock",
                    )
                })?;
                clock.advance(u64::try_from(v).map_err(|_| Error::config("advance", "must not be negative"))?);
                0
            }
        })
    })
}
