//! The stores that hold state outside the module and let the core decide on it
//! (`throttlekit::store::held`: state in, decide, state out):
//!
//! - [`DurableObjectStore`]: a Worker's handle on a Durable Object namespace whose class is
//!   `ThrottlekitObject` (`@throttlekit/core/durable-object`); one RPC per decision to the object
//!   that holds the key (`idFromName`), which steps the core on its storage ([`held_step`]);
//! - [`DenoKvStore`]: a `Deno.Kv`; each decision reads the key, steps the core here and commits
//!   atomically, checked on the versionstamp, retried on a conflict up to `maxRetries` times (and
//!   on a KV file locked by another process, which wrote nothing, after a pause of a few ms).
//!
//! The drivers below only move bytes and call the core; a failure of either is
//! `store_unavailable` through the limiter's fail policy (`Limiter::held_finish`).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::Arc;

use foldhash::fast::FixedState;
use js_sys::{Reflect, Uint8Array};
use throttlekit::store::held::{self, Op, Write};
use wasm_bindgen::prelude::*;

use crate::convert::{self, Options};
use crate::error::{CoreResult, OrThrow, config};
use crate::instance::{self, Item};
use crate::limiter;

#[wasm_bindgen(inline_js = "
const why = (e) => String(e && e.message ? e.message : e)

function within(ms, promise) {
  let timer
  const late = new Promise((_, no) => { timer = setTimeout(() => no(new Error('no answer within ' + ms + ' ms')), ms) })
  return Promise.race([promise, late]).finally(() => clearTimeout(timer))
}

function stub(store, name) {
  const ns = store.namespace
  return ns.get(ns.idFromName(name))
}

export async function driveObject(store, call) {
  try {
    call.answer(await within(store.timeoutMs, stub(store, call.shard).decide(call.request())))
  } catch (e) {
    call.fail('durable object: ' + why(e))
  }
  return call.finish()
}

export async function resetObject(store, shard, key) {
  try {
    await within(store.timeoutMs, stub(store, shard).reset(key))
  } catch (e) {
    throw storeError('durable object: ' + why(e))
  }
}

// SQLite's busy error, when another process holds a KV file's write lock: nothing was written.
const LOCKED = /database is locked/

export async function driveKv(store, call) {
  const key = [...store.keyPrefix, call.key]
  try {
    for (let attempt = 1; ; attempt++) {
      let locked = false
      try {
        const entry = await store.kv.get(key)
        const write = call.step(entry.value ?? undefined)
        if (write === 'keep') break
        const op = store.kv.atomic().check(entry)
        if (write === 'put') op.set(key, call.bytes, { expireIn: call.retainMs })
        else op.delete(key)
        if ((await op.commit()).ok) break
      } catch (e) {
        if (!LOCKED.test(why(e))) throw e
        locked = true
      }
      store.conflicted()
      if (locked) await new Promise((r) => setTimeout(r, Math.min(attempt, 20)))
      if (attempt > store.maxRetries) {
        call.fail('deno kv: the commit met a conflict ' + attempt + ' times (maxRetries ' + store.maxRetries + ')')
        break
      }
    }
  } catch (e) {
    call.fail('deno kv: ' + why(e))
  }
  return call.finish()
}

export async function resetKv(store, key) {
  try {
    await store.kv.delete([...store.keyPrefix, key])
  } catch (e) {
    throw storeError('deno kv: ' + why(e))
  }
}

function storeError(message) {
  const e = new Error(message)
  e.code = 'store_unavailable'
  return e
}")]
extern "C" {
    #[wasm_bindgen(js_name = driveObject)]
    fn drive_object(store: &JsValue, call: HeldCall) -> js_sys::Promise;
    #[wasm_bindgen(js_name = resetObject)]
    fn reset_object(store: &JsValue, shard: String, key: String) -> js_sys::Promise;
    #[wasm_bindgen(js_name = driveKv)]
    fn drive_kv(store: &JsValue, call: HeldCall) -> js_sys::Promise;
    #[wasm_bindgen(js_name = resetKv)]
    fn reset_kv(store: &JsValue, key: String) -> js_sys::Promise;
}

/// Which store holds the state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holder {
    /// A Durable Object namespace.
    Object,
    /// A Deno KV database.
    Kv,
}

/// The default time a Durable Object has to answer one RPC.
const DEFAULT_TIMEOUT_MS: f64 = 1000.0;
/// The default number of retries of a Deno KV commit that met a conflict.
const DEFAULT_MAX_RETRIES: f64 = 16.0;

fn whole(o: &Options, name: &str, default: f64, min: f64) -> CoreResult<u32> {
    Ok(match o.number(name)? {
        None => default,
        Some(n) => throttlekit::validate::integer_at_least(&o.path(name), n, min)?,
    }
    .min(f64::from(u32::MAX)) as u32)
}

/// A Worker's handle on a Durable Object namespace of `ThrottlekitObject`s: each key's state
/// lives in the object `idFromName(shard)`, one per key, or one of `shards` objects.
#[wasm_bindgen]
pub struct DurableObjectStore {
    namespace: JsValue,
    shards: Option<u32>,
    timeout_ms: u32,
    id: u32,
}

impl Drop for DurableObjectStore {
    fn drop(&mut self) {
        instance::forget(self.id);
    }
}

#[wasm_bindgen]
impl DurableObjectStore {
    /// `new DurableObjectStore({ namespace, shards, timeoutMs = 1000 })`; bad options throw
    /// `config_invalid`.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<DurableObjectStore, JsValue> {
        let store = (|| {
            let o = Options::read(&options, "durableObjectStore", &["namespace", "shards", "timeoutMs"], false)?;
            let namespace = o.require("namespace")?.clone();
            let has = |m: &str| Reflect::get(&namespace, &m.into()).is_ok_and(|f| f.is_function());
            if !(has("idFromName") && has("get")) {
                return Err(config(
                    &o.path("namespace"),
                    "must be a Durable Object namespace (with idFromName and get)",
                ));
            }
            let shards = match o.number("shards")? {
                None => None,
                Some(_) => Some(whole(&o, "shards", 1.0, 1.0)?),
            };
            let timeout_ms = whole(&o, "timeoutMs", DEFAULT_TIMEOUT_MS, 1.0)?;
            Ok(DurableObjectStore { namespace, shards, timeout_ms, id: instance::register(Item::Held(Holder::Object)) })
        })();
        store.or_throw()
    }

    /// The instance's id (see instance.rs).
    #[wasm_bindgen(getter = __tk)]
    pub fn tk(&self) -> u32 {
        self.id
    }

    /// The namespace.
    #[wasm_bindgen(getter)]
    pub fn namespace(&self) -> JsValue {
        self.namespace.clone()
    }

    /// How many objects the keys are spread over (`undefined`: one object per key).
    #[wasm_bindgen(getter)]
    pub fn shards(&self) -> Option<u32> {
        self.shards
    }

    /// The time an object has to answer one RPC, in milliseconds.
    #[wasm_bindgen(getter, js_name = timeoutMs)]
    pub fn timeout_ms(&self) -> u32 {
        self.timeout_ms
    }
}

/// A `Deno.Kv` as a store: keys `[...keyPrefix, fullKey]`, values the core's state bytes.
#[wasm_bindgen]
pub struct DenoKvStore {
    kv: JsValue,
    key_prefix: JsValue,
    max_retries: u32,
    conflicts: Cell<f64>,
    id: u32,
}

impl Drop for DenoKvStore {
    fn drop(&mut self) {
        instance::forget(self.id);
    }
}

#[wasm_bindgen]
impl DenoKvStore {
    /// `new DenoKvStore({ kv, keyPrefix = ['throttlekit'], maxRetries = 16 })`; bad options throw
    /// `config_invalid`.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<DenoKvStore, JsValue> {
        let store = (|| {
            let o = Options::read(&options, "denoKvStore", &["kv", "keyPrefix", "maxRetries"], false)?;
            let kv = o.require("kv")?.clone();
            let has = |m: &str| Reflect::get(&kv, &m.into()).is_ok_and(|f| f.is_function());
            if !(has("get") && has("atomic") && has("delete")) {
                return Err(config(&o.path("kv"), "must be a Deno.Kv (from Deno.openKv())"));
            }
            let key_prefix = match o.get("keyPrefix") {
                None => js_sys::Array::of1(&JsValue::from_str("throttlekit")).into(),
                Some(p) if js_sys::Array::is_array(p) => p.clone(),
                Some(_) => return Err(config(&o.path("keyPrefix"), "must be an array (a Deno KV key prefix)")),
            };
            let max_retries = whole(&o, "maxRetries", DEFAULT_MAX_RETRIES, 0.0)?;
            let id = instance::register(Item::Held(Holder::Kv));
            Ok(DenoKvStore { kv, key_prefix, max_retries, conflicts: Cell::new(0.0), id })
        })();
        store.or_throw()
    }

    /// The instance's id (see instance.rs).
    #[wasm_bindgen(getter = __tk)]
    pub fn tk(&self) -> u32 {
        self.id
    }

    /// The database.
    #[wasm_bindgen(getter)]
    pub fn kv(&self) -> JsValue {
        self.kv.clone()
    }

    /// The key prefix of every state.
    #[wasm_bindgen(getter, js_name = keyPrefix)]
    pub fn key_prefix(&self) -> JsValue {
        self.key_prefix.clone()
    }

    /// How many times a decision retries a commit that met a conflict before it is
    /// `store_unavailable`.
    #[wasm_bindgen(getter, js_name = maxRetries)]
    pub fn max_retries(&self) -> u32 {
        self.max_retries
    }

    /// Commits that met a conflict or a file locked by another process (and were retried or
    /// given up), since the store was made.
    #[wasm_bindgen(getter)]
    pub fn conflicts(&self) -> f64 {
        self.conflicts.get()
    }

    /// Counts a conflict (the driver's).
    pub fn conflicted(&self) {
        self.conflicts.set(self.conflicts.get() + 1.0);
    }
}

/// One decision in flight on a held store (internal: the drivers' handle on the core's call).
#[wasm_bindgen]
pub struct HeldCall {
    limiter: Arc<throttlekit::Limiter>,
    call: held::HeldCall,
    shard: String,
    answer: Option<CoreResult<throttlekit::Decision>>,
    put: Option<(Vec<u8>, i64)>,
}

#[wasm_bindgen]
impl HeldCall {
    /// The full store key.
    #[wasm_bindgen(getter)]
    pub fn key(&self) -> String {
        self.call.key.clone()
    }

    /// The name of the Durable Object that holds the key.
    #[wasm_bindgen(getter)]
    pub fn shard(&self) -> String {
        self.shard.clone()
    }

    /// The RPC's argument: `{ op, key, cost, now, strategy }` (`now` null: the object's clock).
    pub fn request(&self) -> Result<JsValue, JsValue> {
        let spec = js_sys::JSON::stringify(&crate::strategy::spec_of(self.limiter.strategy()))?;
        let now = match self.call.now {
            throttlekit::store::Now::At(t) => JsValue::from_f64(t as f64),
            throttlekit::store::Now::Server => JsValue::NULL,
        };
        let o = js_sys::Object::new();
        for (k, v) in [
            ("op", JsValue::from_str(self.call.op.as_str())),
            ("key", JsValue::from_str(&self.call.key)),
            ("cost", JsValue::from_f64(self.call.cost as f64)),
            ("now", now),
            ("strategy", spec.into()),
        ] {
            let _ = Reflect::set(&o, &k.into(), &v);
        }
        Ok(o.into())
    }

    /// Steps the core on the key's bytes (`undefined`: absent) here: `'keep'`, `'put'` (then
    /// write `bytes`, kept `retainMs`) or `'delete'`.
    pub fn step(&mut self, held: Option<Uint8Array>) -> String {
        let now = self.call.now.fallback_ms(&**self.limiter.clock());
        let bytes = held.map(|h| h.to_vec());
        let stepped = held::step(self.limiter.strategy(), self.call.op, self.call.cost, now, bytes.as_deref());
        self.put = None;
        let (answer, write) = match stepped {
            Ok(s) => (Ok(s.decision), s.write),
            Err(e) => (Err(e), Write::Keep),
        };
        self.answer = Some(answer);
        match write {
            Write::Keep => "keep",
            Write::Put { bytes, retain_ms, .. } => {
                self.put = Some((bytes, retain_ms));
                "put"
            }
            Write::Delete => "delete",
        }
        .to_owned()
    }

    /// The bytes of the last `'put'` step.
    #[wasm_bindgen(getter)]
    pub fn bytes(&self) -> Option<Uint8Array> {
        self.put.as_ref().map(|(b, _)| Uint8Array::from(b.as_slice()))
    }

    /// How long the host keeps the last `'put'` step's bytes, in milliseconds.
    #[wasm_bindgen(getter, js_name = retainMs)]
    pub fn retain_ms(&self) -> f64 {
        self.put.as_ref().map_or(0.0, |p| p.1 as f64)
    }

    /// The decision an object answered.
    pub fn answer(&mut self, decision: JsValue) {
        self.answer = Some(decision_from_js(&decision));
    }

    /// The store failed (`cause`): `store_unavailable`.
    pub fn fail(&mut self, cause: String) {
        self.answer = Some(Err(throttlekit::Error::store(cause)));
    }

    /// The decision (through the fail policy), or the error.
    pub fn finish(&mut self) -> Result<JsValue, JsValue> {
        let answer = self.answer.take().unwrap_or_else(|| Err(throttlekit::Error::store("the call was not answered")));
        Ok(limiter::to_js(&self.limiter.held_finish(&self.call, answer).or_throw()?))
    }
}

/// A decision as an object answered it (the plain object `limiter::to_js` makes).
fn decision_from_js(v: &JsValue) -> CoreResult<throttlekit::Decision> {
    let field = |name: &str| -> CoreResult<JsValue> {
        Reflect::get(v, &name.into()).map_err(|_| throttlekit::Error::store("the object's answer is not a decision"))
    };
    let int = |name: &str| -> CoreResult<i64> {
        let n =
            field(name)?.as_f64().ok_or_else(|| throttlekit::Error::store("the object's answer is not a decision"))?;
        Ok(n as i64)
    };
    Ok(throttlekit::Decision {
        allowed: field("allowed")?
            .as_bool()
            .ok_or_else(|| throttlekit::Error::store("the object's answer is not a decision"))?,
        limit: int("limit")?,
        remaining: int("remaining")?,
        reset_at: int("resetAt")?,
        retry_after_ms: int("retryAfterMs")?,
        fallback: false,
    })
}

/// A limiter's link to its held store.
#[derive(Clone)]
pub struct Link {
    store: JsValue,
    holder: Holder,
}

impl Link {
    pub fn new(store: JsValue, holder: Holder) -> Link {
        Link { store, holder }
    }

    fn shards(&self) -> Option<u32> {
        Reflect::get(&self.store, &"shards".into()).ok().and_then(|v| v.as_f64()).map(|n| n as u32)
    }

    fn drive(&self, l: &Arc<throttlekit::Limiter>, call: CoreResult<held::HeldCall>) -> js_sys::Promise {
        let call = match call {
            Ok(c) => c,
            Err(e) => return js_sys::Promise::reject(&crate::error::to_js(e)),
        };
        let shard = held::shard(&call.key, self.shards());
        let call = HeldCall { limiter: l.clone(), call, shard, answer: None, put: None };
        match self.holder {
            Holder::Object => drive_object(&self.store, call),
            Holder::Kv => drive_kv(&self.store, call),
        }
    }

    /// `check`, `peek` or `forecast` of one key: one RPC, or one read and one commit (retried).
    pub fn one(&self, l: &Arc<throttlekit::Limiter>, op: Op, key: &JsValue, cost: &JsValue) -> js_sys::Promise {
        let cost = if op == Op::Peek { Ok(1) } else { convert::cost(cost) };
        let call = cost.and_then(|c| l.held_prepare(op, &convert::string(key, "key")?, c));
        self.drive(l, call)
    }

    /// `checkMany`: one check per key, all at one clock reading, sent side by side.
    pub fn many(&self, l: &Arc<throttlekit::Limiter>, keys: &JsValue, cost: &JsValue) -> js_sys::Promise {
        let calls = convert::cost(cost).and_then(|c| l.held_prepare_many(&convert::strings(keys, "keys")?, c));
        match calls {
            Ok(calls) => js_sys::Promise::all(
                &calls.into_iter().map(|c| JsValue::from(self.drive(l, Ok(c)))).collect::<js_sys::Array>(),
            ),
            Err(e) => js_sys::Promise::reject(&crate::error::to_js(e)),
        }
    }

    /// `reset`: one RPC, or one delete.
    pub fn reset(&self, l: &Arc<throttlekit::Limiter>, key: &JsValue) -> js_sys::Promise {
        match convert::string(key, "key").and_then(|k| l.held_reset_key(&k)) {
            Ok(full) => match self.holder {
                Holder::Object => reset_object(&self.store, held::shard(&full, self.shards()), full),
                Holder::Kv => reset_kv(&self.store, full),
            },
            Err(e) => js_sys::Promise::reject(&crate::error::to_js(e)),
        }
    }
}

/// The error of a sync method on a limiter whose state is in a Durable Object or Deno KV.
pub fn no_sync() -> JsValue {
    crate::error::to_js(throttlekit::Error::not_implemented(
        "the sync methods on a Durable Object or Deno KV store (it answers asynchronously: use the Promise methods)",
    ))
}

thread_local! {
    /// The strategies the object was asked to decide with, by spec (a few per limiter).
    static STRATEGIES: RefCell<HashMap<String, throttlekit::Strategy, FixedState>> = RefCell::new(HashMap::default());
}

/// The most specs [`STRATEGIES`] keeps (emptied when full: a rebuild costs one parse).
const MAX_STRATEGIES: usize = 64;

fn strategy_of(spec: &str) -> CoreResult<throttlekit::Strategy> {
    if let Some(s) = STRATEGIES.with(|m| m.borrow().get(spec).cloned()) {
        return Ok(s);
    }
    // The spec is the text `HeldCall.request` serialized. The host's `JSON.parse` reads it (the
    // module holds no JSON text parser but the REST replies' reader, which keeps no fractions),
    // and it goes through the same conversion and `from_value` path as `Strategy.fromSpec`
    // (strategy.rs), so there is one spec reader.
    let value = js_sys::JSON::parse(spec).map_err(|e| {
        let why = e.dyn_ref::<js_sys::Error>().map_or_else(|| "not JSON".to_owned(), |e| String::from(e.message()));
        config("strategy", &format!("is not a valid spec: {why}"))
    })?;
    let parsed = crate::strategy::from_value(convert::json(&value, "strategy")?)?;
    STRATEGIES.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() >= MAX_STRATEGIES {
            m.clear();
        }
        m.insert(spec.to_owned(), parsed.clone());
    });
    Ok(parsed)
}

/// The object's side of a decision (internal: `ThrottlekitObject.decide`): steps the core on
/// the key's stored bytes and answers `{ decision, write, bytes, retainMs }`.
#[wasm_bindgen(js_name = heldStep)]
pub fn held_step(strategy: &str, op: &str, cost: f64, now: f64, held: Option<Uint8Array>) -> Result<JsValue, JsValue> {
    let stepped = (|| {
        let strategy = strategy_of(strategy)?;
        let cost = if op == "peek" { 1 } else { throttlekit::validate::cost_from_f64(cost)? };
        let now = throttlekit::validate::now(now as i64)?;
        let bytes = held.map(|h| h.to_vec());
        held::step(&strategy, Op::parse(op)?, cost, now, bytes.as_deref())
    })()
    .or_throw()?;
    let o = js_sys::Object::new();
    let _ = Reflect::set(&o, &"decision".into(), &limiter::to_js(&stepped.decision));
    let write = match stepped.write {
        Write::Keep => "keep",
        Write::Delete => "delete",
        Write::Put { bytes, retain_ms, .. } => {
            let _ = Reflect::set(&o, &"bytes".into(), &Uint8Array::from(bytes.as_slice()));
            let _ = Reflect::set(&o, &"retainMs".into(), &JsValue::from_f64(retain_ms as f64));
            "put"
        }
    };
    let _ = Reflect::set(&o, &"write".into(), &write.into());
    Ok(o.into())
}

/// Whether an object may drop the stored bytes at `now` (internal: its alarm's sweep).
#[wasm_bindgen(js_name = heldSweepable)]
pub fn held_sweepable(held: Uint8Array, now: f64) -> bool {
    held::sweepable(&held.to_vec(), now as i64)
}

/// How long past a deadline a state is kept (internal: when the object's alarm sweeps again).
#[wasm_bindgen(js_name = heldGraceMs)]
pub fn held_grace_ms() -> f64 {
    held::GRACE_MS as f64
}
