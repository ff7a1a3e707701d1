//! The two-tier modes' plumbing that `Limiter` and `MultiLimiter` share: the `mode`/`lease`
//! options as Java sends them, `releaseLeases`' idle time, the tier's counters as longs, and
//! `Lease.DEFAULTS`. Core validates and decides; this only translates.

use jni_sys::{JNIEnv, jclass, jlong, jlongArray};
use serde::Deserialize;
use throttlekit::lease::TierStats;
use throttlekit::{Error, LeaseOptions, Mode};

use crate::guard;

/// `Lease`'s fields, as numbers for core's `LeaseOptions::from_fields` (which validates them).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct LeaseConfig {
    batch: Option<f64>,
    low_water: Option<f64>,
    window_coupled: Option<bool>,
    max_keys: Option<f64>,
}

/// The mode a builder asks for, checked by core: `name` is `strict`, `cached_deny` or `leased`
/// (`Mode`'s names); absent: strict, or leased when `lease` is given (as Python's
/// `mode=None, lease={...}`).
pub(crate) fn mode(name: Option<&str>, lease: Option<&LeaseConfig>) -> Result<Mode, Error> {
    let options = match lease {
        None => LeaseOptions::default(),
        Some(l) => LeaseOptions::from_fields(l.batch, l.low_water, l.window_coupled, l.max_keys)?,
    };
    match (name, lease) {
        (Some(name), _) => Mode::parse(name, options),
        (None, Some(_)) => Ok(Mode::Leased(options)),
        (None, None) => Ok(Mode::Strict),
    }
}

/// A counter as a Java `long` (saturating).
pub(crate) fn as_long(v: u64) -> jlong {
    jlong::try_from(v).unwrap_or(jlong::MAX)
}

/// `releaseLeases`' idle time in ms as Java passes it: `Long.MIN_VALUE` for every key.
pub(crate) fn idle(ms: jlong) -> Result<Option<i64>, Error> {
    match ms {
        jlong::MIN => Ok(None),
        ms if ms >= 0 => Ok(Some(ms)),
        _ => Err(Error::config("idle", "must be >= 0")),
    }
}

/// The tier's counters (`TierStats`' order) and the mode (`Mode`'s ordinal), as a Java array.
///
/// # Safety
/// `env` is the calling thread's JNI environment.
pub(crate) unsafe fn tier_longs(env: *mut JNIEnv, s: TierStats, mode: Mode) -> jlongArray {
    let mode = match mode {
        Mode::Strict => 0,
        Mode::CachedDeny { .. } => 1,
        Mode::Leased(_) => 2,
    };
    let out = [s.local_admits, s.local_denials, s.leases, s.late_credits_dropped, s.credits_returned].map(as_long);
    unsafe { crate::env::new_longs(env, &[&out[..], &[mode]].concat()) }
}

/// A limiter type's `...Tier` and `...Release` exports (Java's `Tiered`): its tier's counters and
/// mode ([`tier_longs`]), and `releaseLeases` on the calling thread (the units given back). `$get`
/// is the type's handle getter (`handle::handle_exports!`); the type has `tier_stats()`, `mode()`
/// and `release_leases_sync`.
macro_rules! tier_exports {
    ($get:ident, $tier:ident, $release:ident) => {
        /// The tier's counters and mode, as `crate::lease::tier_longs` writes them.
        #[unsafe(no_mangle)]
        extern "system" fn $tier(
            env: *mut jni_sys::JNIEnv,
            _: jni_sys::jclass,
            h: jni_sys::jlong,
        ) -> jni_sys::jlongArray {
            $crate::guard(env, || unsafe {
                let l = $get(h)?;
                Ok($crate::lease::tier_longs(env, l.tier_stats(), l.mode()))
            })
        }

        /// `releaseLeases` on the calling thread: the units given back.
        #[unsafe(no_mangle)]
        extern "system" fn $release(
            env: *mut jni_sys::JNIEnv,
            _: jni_sys::jclass,
            h: jni_sys::jlong,
            idle_ms: jni_sys::jlong,
        ) -> jni_sys::jlong {
            $crate::guard(env, || unsafe {
                Ok($crate::lease::as_long($get(h)?.release_leases_sync($crate::lease::idle(idle_ms)?)?))
            })
        }
    };
}
pub(crate) use tier_exports;

/// Core's `LeaseOptions::default()` for `Lease.DEFAULTS`: batch, lowWater, windowCoupled, maxKeys.
#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_leaseDefaults(env: *mut JNIEnv, _: jclass) -> jlongArray {
    guard(env, || {
        let d = LeaseOptions::default();
        let out = [as_long(d.batch), as_long(d.low_water), jlong::from(d.window_coupled), as_long(d.max_keys as u64)];
        Ok(unsafe { crate::env::new_longs(env, &out) })
    })
}
