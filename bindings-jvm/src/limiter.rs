//! `Limiter`: construction from Java's options, the hot path (`check`, `tryAcquire`), the other
//! calls, their `CompletableFuture` twins, and metrics.

use jni_sys::{JNIEnv, jboolean, jbyteArray, jclass, jint, jlong, jlongArray, jobject};
use serde::Deserialize;
use throttlekit::{Error, FailPolicy, Limiter, StrategySpec};

use crate::lease::{LeaseConfig, as_long, idle};
use crate::scratch::{self, decision_longs};
use crate::{guard, handle, jbool};

/// `Limiter.Builder`'s options as Java sends them (JSON, camelCase).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct LimiterConfig {
    strategy: StrategySpec,
    #[serde(default)]
    prefix: String,
    server_clock: Option<bool>,
    fail_policy: Option<FailPolicy>,
    #[serde(default)]
    metrics: bool,
    /// `strict`, `cached_deny` or `leased` (`crate::lease::mode`).
    mode: Option<String>,
    lease: Option<LeaseConfig>,
}

#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_limiterNew(
    env: *mut JNIEnv,
    _: jclass,
    config: jbyteArray,
    store: jlong,
    clock: jlong,
) -> jlong {
    guard(env, || {
        let c: LimiterConfig = unsafe { crate::env::options(env, config, "Limiter")? };
        let mode = crate::lease::mode(c.mode.as_deref(), c.lease.as_ref())?;
        let (store, server_clock, fail_policy) = crate::store::resolve(store)?;
        let mut b = Limiter::builder(c.strategy.build()?)
            .store(store)
            .clock(crate::store::clock(clock)?)
            .prefix(c.prefix)
            .server_clock(c.server_clock.unwrap_or(server_clock))
            .metrics(c.metrics);
        if let Some(p) = c.fail_policy.or(fail_policy) {
            b = b.fail_policy(p);
        }
        Ok(handle::leak(b.mode(mode)?.build()))
    })
}

handle::handle_exports!(
    Limiter,
    "limiter",
    limiter,
    Java_dev_throttlekit_internal_Native_limiterClose,
    Java_dev_throttlekit_internal_Native_limiterFree,
    // Unspent leased credits go back to the store (best effort, as core's `close`); the store
    // itself stays open: other limiters may share it.
    on_close = |l: &Limiter| {
        let _ = l.release_leases_sync(None);
    }
);

/// The hot path: a consuming check; the decision goes to the scratch buffer.
#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_check(
    env: *mut JNIEnv,
    _: jclass,
    h: jlong,
    addr: jlong,
    len: jint,
    cost: jlong,
) {
    guard(env, || unsafe {
        let result = limiter(h)?.check_sync(scratch::key(addr, len)?, scratch::hot_cost(cost)?);
        // Read in place (see `put_decision`), not moved out by `?` first.
        match &result {
            Ok(d) => scratch::put_decision(addr, d),
            Err(_) => return result.map(drop),
        }
        Ok(())
    })
}

/// The allocation-free path: only whether it was allowed.
#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_tryAcquire(
    env: *mut JNIEnv,
    _: jclass,
    h: jlong,
    addr: jlong,
    len: jint,
    cost: jlong,
) -> jboolean {
    guard(env, || unsafe {
        Ok(jbool(limiter(h)?.check_sync(scratch::key(addr, len)?, scratch::hot_cost(cost)?)?.allowed))
    })
}

/// `peek` (op 1), `forecast` (op 2) and `reset` (op 3); reset writes nothing.
#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_limiterOp(
    env: *mut JNIEnv,
    _: jclass,
    h: jlong,
    op: jint,
    addr: jlong,
    len: jint,
    cost: jlong,
) {
    guard(env, || unsafe {
        let l = limiter(h)?;
        let key = scratch::key(addr, len)?;
        match op {
            1 => scratch::put_decision(addr, &l.peek_sync(key)?),
            2 => scratch::put_decision(addr, &l.forecast_sync(key, scratch::cost(cost)?)?),
            3 => l.reset_sync(key)?,
            _ => scratch::put_decision(addr, &l.check_sync(key, scratch::cost(cost)?)?),
        }
        Ok(())
    })
}

/// `checkMany`: the keys packed (see `scratch::unpack_keys`), six longs per decision back.
#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_checkMany(
    env: *mut JNIEnv,
    _: jclass,
    h: jlong,
    packed: jbyteArray,
    cost: jlong,
) -> jlongArray {
    guard(env, || unsafe {
        let l = limiter(h)?;
        let keys = scratch::unpack_keys(&crate::env::bytes(env, packed))?;
        let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        let out: Vec<i64> = l.check_many_sync(&refs, scratch::cost(cost)?)?.iter().flat_map(decision_longs).collect();
        Ok(crate::env::new_longs(env, &out))
    })
}

/// The `CompletableFuture<long[]>` twins: op 0 check, 1 peek, 2 forecast, 3 reset (empty
/// result), 4 checkMany (`key` holds the packed keys), 5 releaseLeases (`cost` holds the idle
/// time as [`idle`] reads it; the units given back).
#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_limiterAsync(
    env: *mut JNIEnv,
    _: jclass,
    h: jlong,
    op: jint,
    key: jbyteArray,
    cost: jlong,
    future: jobject,
) {
    guard(env, || unsafe {
        // The limiter is shared with the task: a handle's box lives until the Java object is
        // unreachable, and the Java side keeps the object reachable from the future.
        let l: &'static Limiter = limiter(h)?;
        let bytes = crate::env::bytes(env, key);
        if op == 5 {
            let idle = idle(cost)?;
            return crate::runtime::spawn(env, future, async move { Ok(vec![as_long(l.release_leases(idle).await?)]) });
        }
        let cost = if op == 1 || op == 3 { 1 } else { scratch::cost(cost)? };
        if op == 4 {
            let keys = scratch::unpack_keys(&bytes)?;
            return crate::runtime::spawn(env, future, async move {
                let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
                Ok(l.check_many(&refs, cost).await?.iter().flat_map(decision_longs).collect())
            });
        }
        let key = String::from_utf8(bytes).map_err(|_| Error::config("key", "must be valid UTF-8"))?;
        crate::runtime::spawn(env, future, async move {
            let d = match op {
                1 => l.peek(&key).await?,
                2 => l.forecast(&key, cost).await?,
                3 => {
                    l.reset(&key).await?;
                    return Ok(Vec::new());
                }
                _ => l.check(&key, cost).await?,
            };
            Ok(decision_longs(&d).to_vec())
        })
    })
}

/// The metrics snapshot as longs (`crate::metrics::longs`).
#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_limiterMetrics(
    env: *mut JNIEnv,
    _: jclass,
    h: jlong,
) -> jlongArray {
    guard(env, || unsafe {
        let l = limiter(h)?;
        Ok(crate::env::new_longs(env, &crate::metrics::longs(l.metrics())))
    })
}

/// Strategy facts for `Limiter.strategy()`/`limit()`: the limit its decisions report.
#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_limiterLimit(env: *mut JNIEnv, _: jclass, h: jlong) -> jlong {
    guard(env, || Ok(unsafe { limiter(h)? }.strategy().limit()))
}

crate::lease::tier_exports!(
    limiter,
    Java_dev_throttlekit_internal_Native_limiterTier,
    Java_dev_throttlekit_internal_Native_limiterRelease
);
