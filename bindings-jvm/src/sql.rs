//! `PostgresStore` and `SqliteStore` handles: core's SQL stores, configured from the Java
//! builders' options (JSON, camelCase; absent = core's default). Core maps every store option
//! and checks its value.

use std::sync::Arc;

use jni_sys::{JNIEnv, jbyteArray, jclass, jlong};
use serde::Deserialize;
use serde_json::{Map, Value};
use throttlekit::postgres::{PostgresOptions, PostgresStore};
use throttlekit::store::sql_options::OptionValue;
use throttlekit::store::sqlite::{SqliteOptions, SqliteStore};
use throttlekit::{Error, FailPolicy};

use crate::store::StoreHandle;
use crate::{guard, handle};

/// `PostgresStore.Builder`'s options: the URL and the limiters' defaults here, every other
/// option core's to map (`options`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PostgresConfig {
    url: String,
    #[serde(default)]
    server_clock: bool,
    fail_policy: Option<FailPolicy>,
    #[serde(flatten)]
    options: Map<String, Value>,
}

/// `SqliteStore.Builder`'s options, as [`PostgresConfig`].
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SqliteConfig {
    path: String,
    fail_policy: Option<FailPolicy>,
    #[serde(flatten)]
    options: Map<String, Value>,
}

/// The builder's options as core's `(name, value)` pairs, each named as the builder's method
/// (`timeoutMs` is `timeout(Duration)`), which is how core's errors name it.
fn pairs(options: &Map<String, Value>) -> Result<Vec<(&str, Option<OptionValue>)>, Error> {
    options
        .iter()
        .map(|(key, value)| {
            let name = key.strip_suffix("Ms").unwrap_or(key);
            let value = match value {
                Value::Null => None, // absent: core's default
                Value::String(s) => Some(OptionValue::Text(s.clone())),
                Value::Bool(b) => Some(OptionValue::Flag(*b)),
                Value::Number(n) => {
                    Some(OptionValue::Int(n.as_i64().ok_or_else(|| Error::config(name, "must be an integer"))?))
                }
                _ => return Err(Error::config(name, "must be a string, a boolean or an integer")),
            };
            Ok((name, value))
        })
        .collect()
}

impl PostgresConfig {
    fn options(&self) -> Result<PostgresOptions, Error> {
        PostgresOptions::from_pairs(self.url.clone(), pairs(&self.options)?)
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
        let o = SqliteOptions::from_pairs(c.path, pairs(&c.options)?)?;
        let store = SqliteStore::with_options(o)?;
        Ok(handle::leak(StoreHandle {
            store: Arc::new(store),
            memory: None,
            server_clock: false,
            fail_policy: c.fail_policy,
        }))
    })
}
