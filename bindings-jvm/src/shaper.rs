//! `Shaper`: the leaky-bucket shaper (`reserve`, `schedule`, `reset`).

use jni_sys::{JNIEnv, jbyteArray, jclass, jint, jlong, jobject};
use serde::Deserialize;
use throttlekit::{LeakyBucketOptions, Shaper};

use crate::{guard, handle, scratch};

/// `Shaper.Builder`'s options as Java sends them (JSON, camelCase).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ShaperConfig {
    rate_per_sec: f64,
    max_queue_ms: f64,
    #[serde(default)]
    prefix: String,
    server_clock: Option<bool>,
    #[serde(default)]
    metrics: bool,
}

#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_shaperNew(
    env: *mut JNIEnv,
    _: jclass,
    config: jbyteArray,
    store: jlong,
    clock: jlong,
) -> jlong {
    guard(env, || {
        let c: ShaperConfig = unsafe { crate::env::options(env, config, "Shaper")? };
        let (store, server_clock, _) = crate::store::resolve(store)?;
        let options = LeakyBucketOptions { rate_per_sec: c.rate_per_sec, max_queue_ms: c.max_queue_ms };
        let s = Shaper::new(&options)?
            .with_store(store)
            .with_clock(crate::store::clock(clock)?)
            .with_prefix(c.prefix)
            .with_server_clock(c.server_clock.unwrap_or(server_clock))
            // After the prefix: the metrics are labelled with it.
            .with_metrics(c.metrics);
        Ok(handle::leak(s))
    })
}

handle::handle_exports!(
    Shaper,
    "shaper",
    shaper,
    Java_dev_throttlekit_internal_Native_shaperClose,
    Java_dev_throttlekit_internal_Native_shaperFree
);

/// `reserve` (op 0), `schedule` (op 1: reserve, then sleep the delay; `queue_full` when
/// rejected) and `reset` (op 3); the reservation goes to the scratch buffer.
#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_shaperOp(
    env: *mut JNIEnv,
    _: jclass,
    h: jlong,
    op: jint,
    addr: jlong,
    len: jint,
    cost: jlong,
) {
    guard(env, || unsafe {
        let s = shaper(h)?;
        let key = scratch::key(addr, len)?;
        match op {
            1 => scratch::put_reservation(addr, &s.schedule_blocking(key, scratch::cost(cost)?)?),
            3 => s.reset_sync(key)?,
            _ => scratch::put_reservation(addr, &s.reserve_sync(key, scratch::cost(cost)?)?),
        }
        Ok(())
    })
}

/// The `CompletableFuture<long[]>` twin of [`Java_dev_throttlekit_internal_Native_shaperOp`]
/// (`[accepted, delayMs]`, or empty for reset).
#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_shaperAsync(
    env: *mut JNIEnv,
    _: jclass,
    h: jlong,
    op: jint,
    key: jbyteArray,
    cost: jlong,
    future: jobject,
) {
    guard(env, || unsafe {
        let s: &'static Shaper = shaper(h)?;
        let key = crate::env::text(env, key, "key")?;
        let cost = if op == 3 { 1 } else { scratch::cost(cost)? };
        crate::runtime::spawn(env, future, async move {
            let r = match op {
                1 => s.schedule(&key, cost).await?,
                3 => {
                    s.reset(&key).await?;
                    return Ok(Vec::new());
                }
                _ => s.reserve(&key, cost).await?,
            };
            Ok(vec![i64::from(r.accepted), r.delay_ms])
        })
    })
}
