//! [`MemoryStore`], and reading a limiter's `store`, `clock` and `failPolicy` options.

use std::sync::Arc;

use throttlekit::{FailPolicy, MemoryLimits, Store};
use wasm_bindgen::prelude::*;

use crate::clock::HostClock;
use crate::convert::Options;
use crate::error::{CoreResult, OrThrow, config};
use crate::instance::{self, Item};
use crate::rest::Link;

/// The in-process store: state lives in this isolate's memory (see docs/edge.md).
#[wasm_bindgen]
pub struct MemoryStore {
    pub(crate) inner: Arc<throttlekit::MemoryStore>,
    id: u32,
}

impl Drop for MemoryStore {
    fn drop(&mut self) {
        instance::forget(self.id);
    }
}

fn bound(o: &Options, name: &str, default: usize) -> throttlekit::Result<usize> {
    match o.number(name)? {
        None => Ok(default),
        Some(n) if n == f64::INFINITY => Ok(usize::MAX),
        Some(n) => Ok(throttlekit::validate::integer_at_least(&format!("memoryStore.{name}"), n, 1.0)? as usize),
    }
}

#[wasm_bindgen]
impl MemoryStore {
    /// A store of at most `maxKeys` keys of at most `maxKeyLength` bytes (the core's defaults).
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<MemoryStore, JsValue> {
        let inner = (|| {
            let o = Options::read(&options, "memoryStore", &["maxKeys", "maxKeyLength"], true)?;
            throttlekit::MemoryStore::with_limits(MemoryLimits {
                max_keys: bound(&o, "maxKeys", MemoryLimits::DEFAULT_MAX_KEYS)?,
                max_key_length: bound(&o, "maxKeyLength", MemoryLimits::DEFAULT_MAX_KEY_LENGTH)?,
            })
        })()
        .or_throw()?;
        let inner = Arc::new(inner);
        let id = instance::register(Item::Store(inner.clone()));
        Ok(MemoryStore { inner, id })
    }

    /// The instance's id (see instance.rs).
    #[wasm_bindgen(getter = __tk)]
    pub fn tk(&self) -> u32 {
        self.id
    }

    /// Keys held.
    #[wasm_bindgen(getter)]
    pub fn size(&self) -> u32 {
        u32::try_from(self.inner.len()).unwrap_or(u32::MAX)
    }

    /// Keys evicted to stay within `maxKeys`.
    #[wasm_bindgen(getter)]
    pub fn evictions(&self) -> f64 {
        self.inner.evictions() as f64
    }
}

/// Where a limiter's state lives.
pub enum Backend {
    /// In this isolate (a `MemoryStore`).
    Memory(Arc<dyn Store>),
    /// On a Redis behind a REST server (a `RedisRestStore`): every check is a request.
    Rest(Link),
    /// In a Durable Object or a Deno KV database: every check is an RPC or a commit.
    Held(crate::held::Link),
}

/// The `store` option of a limiter or a shaper: a `MemoryStore`, a `RedisRestStore` or a
/// held-state store, else a fresh `MemoryStore`.
pub fn backend_from_options(o: &Options) -> CoreResult<Backend> {
    if let Some(v) = o.get("store") {
        match instance::of(v, &o.path("store"))? {
            Some(Item::Rest(locking, book)) => return Ok(Backend::Rest(Link::new(v.clone(), locking, book))),
            Some(Item::Held(holder)) => return Ok(Backend::Held(crate::held::Link::new(v.clone(), holder))),
            _ => {}
        }
    }
    from_options(o).map(Backend::Memory)
}

/// The `store` option of `who` (a multi limiter or a shaper), which runs on a `MemoryStore` or
/// a `RedisRestStore` but not on a held-state store: the store to build it with (unused on
/// REST, where every call is a request) and the REST link.
pub fn memory_or_rest(o: &Options, who: &str) -> CoreResult<(Arc<dyn Store>, Option<Link>)> {
    match backend_from_options(o)? {
        Backend::Memory(s) => Ok((s, None)),
        Backend::Rest(link) => Ok((Arc::new(throttlekit::MemoryStore::new()), Some(link))),
        Backend::Held(_) => Err(config(
            &o.path("store"),
            &format!(
                "must be a MemoryStore or a RedisRestStore (a {who} does not run on a Durable Object or Deno KV store)"
            ),
        )),
    }
}

/// The `store` option when it is a `MemoryStore` (the other stores are
/// [`backend_from_options`]'s), else a fresh one.
fn from_options(o: &Options) -> CoreResult<Arc<dyn Store>> {
    let Some(v) = o.get("store") else { return Ok(Arc::new(throttlekit::MemoryStore::new())) };
    let path = o.path("store");
    match instance::of(v, &path)? {
        Some(Item::Store(s)) => Ok(s),
        Some(_) => Err(config(&path, "is not a constructed instance")),
        // The Node binding's message: the same options read the same in both builds.
        None => Err(config(&path, "must be a MemoryStore or a RedisRestStore")),
    }
}

/// The `clock` option: a `ManualClock`, else the host's `Date.now()`.
pub fn clock_from_options(o: &Options) -> CoreResult<Arc<dyn throttlekit::Clock>> {
    let Some(v) = o.get("clock") else { return Ok(Arc::new(HostClock)) };
    let path = o.path("clock");
    match instance::of(v, &path)? {
        Some(Item::Clock(c)) => Ok(Arc::new(c)),
        Some(_) => Err(config(&path, "is not a constructed instance")),
        None => Err(config(&path, "must be a ManualClock (omit it for the system clock)")),
    }
}

/// The `failPolicy` option.
pub fn fail_policy_from_options(o: &Options) -> CoreResult<Option<FailPolicy>> {
    o.string("failPolicy")?
        .map(|s| {
            FailPolicy::parse(&s)
                .map_err(|_| config(&o.path("failPolicy"), "must be 'fail_closed', 'fail_open' or 'raise'"))
        })
        .transpose()
}

/// A fail policy as JavaScript spells it.
pub fn fail_policy_name(p: FailPolicy) -> &'static str {
    match p {
        FailPolicy::FailClosed => "fail_closed",
        FailPolicy::FailOpen => "fail_open",
        FailPolicy::Raise => "raise",
    }
}
