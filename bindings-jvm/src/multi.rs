//! `MultiLimiter`: several named dimensions decided atomically together.

use jni_sys::{JNIEnv, jbyteArray, jclass, jint, jlong, jlongArray, jobject};
use serde::Deserialize;
use throttlekit::{Dimension, Error, FailPolicy, MultiDecision, MultiLimiter, Rule, StrategySpec};

use crate::lease::{LeaseConfig, as_long, idle};
use crate::scratch::{self, decision_longs};
use crate::{guard, handle};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DimensionConfig {
    name: String,
    strategy: StrategySpec,
    cost_multiplier: Option<i64>,
}

/// `MultiLimiter.Builder`'s options as Java sends them (JSON, camelCase).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct MultiConfig {
    rule: Rule,
    dimensions: Vec<DimensionConfig>,
    #[serde(default)]
    prefix: String,
    server_clock: Option<bool>,
    fail_policy: Option<FailPolicy>,
    hash_tag: Option<String>,
    #[serde(default)]
    metrics: bool,
    /// As `Limiter`'s (`crate::lease::mode`); core refuses a `lease.lowWater` above 0 here.
    mode: Option<String>,
    lease: Option<LeaseConfig>,
}

#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_multiNew(
    env: *mut JNIEnv,
    _: jclass,
    config: jbyteArray,
    store: jlong,
    clock: jlong,
) -> jlong {
    guard(env, || {
        let c: MultiConfig = unsafe { crate::env::options(env, config, "MultiLimiter")? };
        let mode = crate::lease::mode(c.mode.as_deref(), c.lease.as_ref())?;
        let mut dims = Vec::with_capacity(c.dimensions.len());
        for d in c.dimensions {
            let m = match d.cost_multiplier {
                None => 1,
                Some(m) => u64::try_from(m)
                    .ok()
                    .filter(|m| *m >= 1)
                    .ok_or_else(|| Error::config("dimensions.costMultiplier", "must be an integer >= 1"))?,
            };
            dims.push(Dimension::new(d.name, d.strategy.build()?).cost_multiplier(m));
        }
        let (store, server_clock, fail_policy) = crate::store::resolve(store)?;
        let mut m = MultiLimiter::new(c.rule, dims)?
            .with_store(store)
            .with_clock(crate::store::clock(clock)?)
            .with_prefix(c.prefix)
            .with_server_clock(c.server_clock.unwrap_or(server_clock));
        if let Some(p) = c.fail_policy.or(fail_policy) {
            m = m.with_fail_policy(p);
        }
        if let Some(tag) = c.hash_tag {
            m = m.with_hash_tag(tag)?;
        }
        // After the prefix: the metrics are labelled with it.
        m = m.with_metrics(c.metrics);
        Ok(handle::leak(m.with_mode(mode)?))
    })
}

handle::handle_exports!(
    MultiLimiter,
    "multi limiter",
    multi,
    Java_dev_throttlekit_internal_Native_multiClose,
    Java_dev_throttlekit_internal_Native_multiFree,
    // As `Limiter`'s: unspent leased credits go back (best effort); the store stays open.
    on_close = |m: &MultiLimiter| {
        let _ = m.release_leases_sync(None);
    }
);

/// A multi decision as longs: the binding dimension's index, its decision (six), then each
/// dimension's decision (six each).
fn multi_longs(m: &MultiLimiter, d: &MultiDecision) -> Vec<i64> {
    let binding = m.dimensions().iter().position(|x| x.name == d.binding).map_or(-1, |i| i as i64);
    let mut out = vec![binding];
    out.extend(decision_longs(&d.decision));
    out.extend(d.dimensions.iter().flat_map(decision_longs));
    out
}

/// `check` (op 0) or `reset` (op 3, empty result) of one request's keys (packed).
#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_multiOp(
    env: *mut JNIEnv,
    _: jclass,
    h: jlong,
    op: jint,
    packed: jbyteArray,
    cost: jlong,
) -> jlongArray {
    guard(env, || unsafe {
        let m = multi(h)?;
        let keys = scratch::unpack_keys(&crate::env::bytes(env, packed))?;
        let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        let out = if op == 3 {
            m.reset_sync(&refs)?;
            Vec::new()
        } else {
            multi_longs(m, &m.check_sync(&refs, scratch::cost(cost)?)?)
        };
        Ok(crate::env::new_longs(env, &out))
    })
}

/// The `CompletableFuture<long[]>` twin of [`Java_dev_throttlekit_internal_Native_multiOp`],
/// and op 5: releaseLeases (`cost` holds the idle time as [`idle`] reads it; the units given back).
#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_multiAsync(
    env: *mut JNIEnv,
    _: jclass,
    h: jlong,
    op: jint,
    packed: jbyteArray,
    cost: jlong,
    future: jobject,
) {
    guard(env, || unsafe {
        let m: &'static MultiLimiter = multi(h)?;
        if op == 5 {
            let idle = idle(cost)?;
            return crate::runtime::spawn(env, future, async move { Ok(vec![as_long(m.release_leases(idle).await?)]) });
        }
        let keys = scratch::unpack_keys(&crate::env::bytes(env, packed))?;
        let cost = if op == 3 { 1 } else { scratch::cost(cost)? };
        crate::runtime::spawn(env, future, async move {
            let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
            if op == 3 {
                m.reset(&refs).await?;
                return Ok(Vec::new());
            }
            Ok(multi_longs(m, &m.check(&refs, cost).await?))
        })
    })
}

crate::lease::tier_exports!(
    multi,
    Java_dev_throttlekit_internal_Native_multiTier,
    Java_dev_throttlekit_internal_Native_multiRelease
);
