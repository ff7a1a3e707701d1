//! `PostgresStore` and `SqliteStore` handles: core's SQL stores, configured from the Java
//! builders' options (JSON, camelCase; absent = core's default). Every check of a value is
//! core's; this file only maps names.

use std::sync::Arc;
use std::time::Duration;

use jni_sys::{JNIEnv, jbyteArray, jclass, jlong};
use serde::Deserialize;
use throttlekit::postgres::{PostgresOptions, PostgresStore};
use throttlekit::store::sqlite::{SqliteOptions, SqliteStore, Synchronous};
use throttlekit::{Error, FailPolicy};

use crate::store::StoreHandle;
use crate::{guard, handle};

/// `PostgresStore.Builder`'s options (durations in whole ms).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PostgresConfig {
    url: String,
    table: Option<String>,
    migrate: Option<bool>,
    unlogged: Option<bool>,
    synchronous_commit_off: Option<bool>,
    pool_size: Option<i64>,
    timeout_ms: Option<i64>,
    connect_timeout_ms: Option<i64>,
    sweep_interval_ms: Option<i64>,
    sweep_batch: Option<i64>,
    sweep_grace_ms: Option<i64>,
    #[serde(default)]
    server_clock: bool,
    fail_policy: Option<FailPolicy>,
}

/// `SqliteStore.Builder`'s options.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SqliteConfig {
    path: String,
    table: Option<String>,
    busy_timeout_ms: Option<i64>,
    synchronous: Option<String>,
    migrate: Option<bool>,
    max_key_length: Option<i64>,
    sweep: Option<bool>,
    fail_policy: Option<FailPolicy>,
}

/// A non-negative count as core takes it (negative: `config_invalid` naming the option).
fn count(v: i64, name: &str) -> Result<u64, Error> {
    u64::try_from(v).map_err(|_| Error::config(name, "must be >= 0"))
}

fn ms(v: i64, name: &str) -> Result<Duration, Error> {
    Ok(Duration::from_millis(count(v, name)?))
}

impl PostgresConfig {
    fn options(&self) -> Result<PostgresOptions, Error> {
        let mut o = PostgresOptions::new(self.url.clone());
        if let Some(t) = &self.table {
            o.table = t.clone();
        }
        o.migrate = self.migrate.unwrap_or(o.migrate);
        o.unlogged = self.unlogged.unwrap_or(o.unlogged);
        o.synchronous_commit_off = self.synchronous_commit_off.unwrap_or(o.synchronous_commit_off);
        if let Some(n) = self.pool_size {
            o.pool_size = usize::try_from(count(n, "poolSize")?).unwrap_or(usize::MAX);
        }
        if let Some(t) = self.timeout_ms {
            o.timeout = ms(t, "timeout")?;
        }
        if let Some(t) = self.connect_timeout_ms {
            o.connect_timeout = ms(t, "connectTimeout")?;
        }
        if let Some(t) = self.sweep_interval_ms {
            // 0 turns the sweeper off (expiry on read still holds).
            o.sweep_interval = Some(ms(t, "sweepInterval")?).filter(|d| !d.is_zero());
        }
        if let Some(n) = self.sweep_batch {
            o.sweep_batch = i64::try_from(count(n, "sweepBatch")?).unwrap_or(i64::MAX);
        }
        if let Some(t) = self.sweep_grace_ms {
            o.sweep_grace = ms(t, "sweepGrace")?;
        }
        Ok(o)
    }
}

#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_postgresStoreConnect(
    env: *mut JNIEnv,
    _: jclass,
    config: jbyteArray,
) -> jlong {
    guard(env, || {
        let c: PostgresConfig = unsafe { crate::env::options(env, config, "PostgresStore")? };
        let store = PostgresStore::connect_blocking(c.options()?)?;
        Ok(handle::leak(StoreHandle {
            store: Arc::new(store),
            memory: None,
            server_clock: c.server_clock,
            fail_policy: c.fail_policy,
        }))
    })
}

/// Creates (or brings up to date) the table and functions the options name: the deploy step
/// for stores built with `migrate(false)`.
#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_postgresMigrate(
    env: *mut JNIEnv,
    _: jclass,
    config: jbyteArray,
) {
    guard(env, || {
        let c: PostgresConfig = unsafe { crate::env::options(env, config, "PostgresStore")? };
        let options = c.options()?;
        crate::runtime::block_on(async move { PostgresStore::migrate(options).await })?
    })
}

#[unsafe(no_mangle)]
extern "system" fn Java_dev_throttlekit_internal_Native_sqliteStoreOpen(
    env: *mut JNIEnv,
    _: jclass,
    config: jbyteArray,
) -> jlong {
    guard(env, || {
        let c: SqliteConfig = unsafe { crate::env::options(env, config, "SqliteStore")? };
        let mut o = SqliteOptions::new(c.path);
        if let Some(t) = c.table {
            o.table = t;
        }
        if let Some(t) = c.busy_timeout_ms {
            o.busy_timeout_ms = count(t, "busyTimeout")?;
        }
        if let Some(s) = &c.synchronous {
            o.synchronous = Synchronous::parse(s)?;
        }
        o.migrate = c.migrate.unwrap_or(o.migrate);
        o.sweep = c.sweep.unwrap_or(o.sweep);
        if let Some(n) = c.max_key_length {
            if n < 1 {
                return Err(Error::config("maxKeyLength", "must be >= 1"));
            }
            o.max_key_length = usize::try_from(n).unwrap_or(usize::MAX);
        }
        let store = SqliteStore::with_options(o)?;
        Ok(handle::leak(StoreHandle {
            store: Arc::new(store),
            memory: None,
            server_clock: false,
            fail_policy: c.fail_policy,
        }))
    })
}
