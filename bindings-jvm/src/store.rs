//! `MemoryStore`, `RedisStore` and `ManualClock` handles.

use std::sync::Arc;

use jni_sys::{JNIEnv, jbyteArray, jclass, jlong};
use serde::Deserialize;
use throttlekit::redis::{RedisMode, RedisOptions, Scripting};
use throttlekit::{Error, FailPolicy, ManualClock, MemoryLimits};

use crate::{guard, handle};

/// A store with the defaults a limiter on it takes (Redis carries them with the connection).
pub(crate) struct StoreHandle {
    pub(crate) store: Arc<dyn throttlekit::Store>,
    pub(crate) memory: Option<Arc<throttlekit::MemoryStore>>,
    pub(crate) server_clock: bool,
    pub(crate) fail_policy: Option<FailPolicy>,
}

/// `RedisStore.Builder`'s options as Java sends them (JSON, camelCase; absent = core's default).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RedisConfig {
    urls: Vec<String>,
    mode: Option<String>,
    service_name: Option<String>,
    tls_ca_file: Option<String>,
    tls_cert_file: Option<String>,
    tls_key_file: Option<String>,
    scripting: Option<String>,
    timeout_ms: Option<i64>,
    #[serde(default)]
    deterministic_replay: bool,
    #[serde(default)]
    server_clock: bool,
    fail_policy: Option<FailPolicy>,
    durable_replicas: Option<i64>,
    durable_timeout_ms: Option<i64>,
    sentinel_password: Option<String>,
    sentinel_username: Option<String>,
}

/// A bound as Java passes it: `Long.MIN_VALUE` for core's default, else at least 1.
fn bound(v: jlong, default: usize, name: &str) -> Result<usize, Error> {
    match v {
        jlong::MIN => Ok(default),
        n if n >= 1 => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
        _ => Err(Error::config(name, "must be >= 1")),
    }
}

#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_memoryStoreNew(
    env: *mut JNIEnv,
    _: jclass,
    max_keys: jlong,
    max_key_length: jlong,
) -> jlong {
    guard(env, || {
        let limits = MemoryLimits {
            max_keys: bound(max_keys, MemoryLimits::DEFAULT_MAX_KEYS, "maxKeys")?,
            max_key_length: bound(max_key_length, MemoryLimits::DEFAULT_MAX_KEY_LENGTH, "maxKeyLength")?,
        };
        let memory = Arc::new(throttlekit::MemoryStore::with_limits(limits)?);
        Ok(handle::leak(StoreHandle {
            store: memory.clone(),
            memory: Some(memory),
            server_clock: false,
            fail_policy: None,
        }))
    })
}

/// A memory store's counter: 0 evictions, 1 keys held.
#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_memoryStoreStat(
    env: *mut JNIEnv,
    _: jclass,
    h: jlong,
    which: jni_sys::jint,
) -> jlong {
    guard(env, || {
        let s = unsafe { handle::get::<StoreHandle>(h, "store")? };
        let m = s.memory.as_ref().ok_or_else(|| Error::not_implemented("this on a Redis store"))?;
        let v = if which == 0 { m.evictions() } else { m.len() as u64 };
        Ok(jlong::try_from(v).unwrap_or(jlong::MAX))
    })
}

#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_redisStoreConnect(
    env: *mut JNIEnv,
    _: jclass,
    config: jbyteArray,
) -> jlong {
    guard(env, || {
        let text = unsafe { crate::env::text(env, config, "options")? };
        let c: RedisConfig =
            serde_json::from_str(&text).map_err(|e| Error::config("RedisStore options", &e.to_string()))?;
        // Core splits comma-separated lists, as every binding and the CLI take them.
        let mut core = RedisOptions::from_urls(&c.urls.join(","));
        if let Some(mode) = &c.mode {
            core.mode = RedisMode::parse(mode)?;
        }
        if let Some(s) = &c.scripting {
            core.scripting = Scripting::parse(s)?;
        }
        core.service_name = c.service_name;
        core.tls_ca_file = c.tls_ca_file.map(Into::into);
        core.tls_cert_file = c.tls_cert_file.map(Into::into);
        core.tls_key_file = c.tls_key_file.map(Into::into);
        if let Some(t) = c.timeout_ms {
            core.timeout_ms = u64::try_from(t).map_err(|_| Error::config("timeout", "must be >= 0"))?;
        }
        core.deterministic_replay = c.deterministic_replay;
        if let Some(n) = c.durable_replicas {
            if n < 0 {
                return Err(Error::config("redis.durable_replicas", "must be >= 0"));
            }
            // Past u32, core's "at most 64" is the message that applies.
            core.durable_replicas = u32::try_from(n).unwrap_or(u32::MAX);
        }
        if let Some(t) = c.durable_timeout_ms {
            core.durable_timeout_ms =
                u64::try_from(t).map_err(|_| Error::config("redis.durable_timeout_ms", "must be >= 0"))?;
        }
        core.sentinel_password = c.sentinel_password;
        core.sentinel_username = c.sentinel_username;
        let store = throttlekit::redis::RedisStore::connect_blocking(core)?;
        Ok(handle::leak(StoreHandle {
            store: Arc::new(store),
            memory: None,
            server_clock: c.server_clock,
            fail_policy: c.fail_policy,
        }))
    })
}

/// Closes a store (Redis: its connections; later calls fail with `store_unavailable`).
#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_storeClose(env: *mut JNIEnv, _: jclass, h: jlong) {
    guard(env, || {
        if let Some(s) = unsafe { handle::close::<StoreHandle>(h) }
            && s.memory.is_none()
        {
            let store = s.store.clone();
            crate::runtime::block_on(async move { store.close().await })??;
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_storeFree(env: *mut JNIEnv, _: jclass, h: jlong) {
    guard(env, || {
        unsafe { handle::free::<StoreHandle>(h) };
        Ok(())
    })
}

/// A store as a limiter takes it, with the store's `server_clock` and fail policy defaults.
pub(crate) type Resolved = (Arc<dyn throttlekit::Store>, bool, Option<FailPolicy>);

/// The store a limiter uses: the named one, or a fresh memory store of its own (`h == 0`).
pub(crate) fn resolve(h: jlong) -> Result<Resolved, Error> {
    if h == 0 {
        return Ok((Arc::new(throttlekit::MemoryStore::new()), false, None));
    }
    let s = unsafe { handle::get::<StoreHandle>(h, "store")? };
    Ok((s.store.clone(), s.server_clock, s.fail_policy))
}

#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_clockNew(env: *mut JNIEnv, _: jclass, now: jlong) -> jlong {
    guard(env, || Ok(handle::leak(Arc::new(ManualClock::new(throttlekit::validate::now(now)?)))))
}

/// A manual clock's operations: 0 read, 1 set to `v`, 2 advance by `v` (returns the new time).
#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_clockOp(
    env: *mut JNIEnv,
    _: jclass,
    h: jlong,
    op: jni_sys::jint,
    v: jlong,
) -> jlong {
    guard(env, || {
        let c = unsafe { handle::get::<Arc<ManualClock>>(h, "clock")? };
        match op {
            1 => {
                c.set(throttlekit::validate::now(v)?);
                Ok(v)
            }
            2 => c.advance(v),
            _ => Ok(throttlekit::Clock::now_ms(&**c)),
        }
    })
}

#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_clockFree(env: *mut JNIEnv, _: jclass, h: jlong) {
    guard(env, || {
        unsafe { handle::free::<Arc<ManualClock>>(h) };
        Ok(())
    })
}

/// The clock a limiter uses: the manual clock `h`, or the system clock (`h == 0`).
pub(crate) fn clock(h: jlong) -> Result<Arc<dyn throttlekit::Clock>, Error> {
    if h == 0 {
        return Ok(Arc::new(throttlekit::SystemClock));
    }
    Ok(unsafe { handle::get::<Arc<ManualClock>>(h, "clock")? }.clone())
}
