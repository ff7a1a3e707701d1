//! Which JS value is a constructed `MemoryStore`, `ManualClock` or `Strategy` of this module.
//!
//! wasm-bindgen gives Rust no way to unwrap a class instance passed as a plain `JsValue` (an
//! option's value), so every such instance carries an id, read through its `__tk` getter, and the
//! id names its core value in this table. What the Node binding's type tags answer, this answers
//! the same way: a value without the getter is not an instance (`None`); an object that merely
//! has the class's prototype in its chain (`Object.create(MemoryStore.prototype)`) makes the
//! getter throw, and an unknown id or an id of another class is `config_invalid`, "is not a
//! constructed instance", never a wrong value.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::Arc;

use foldhash::fast::FixedState;
use js_sys::Reflect;
use wasm_bindgen::JsValue;

use crate::error::{CoreResult, config};

/// The core value behind an instance.
#[derive(Clone)]
pub enum Item {
    Store(Arc<throttlekit::MemoryStore>),
    Clock(throttlekit::ManualClock),
    Strategy(throttlekit::Strategy),
    /// A `RedisRestStore` (its endpoint stays on the JS object; the core needs its locking, and
    /// in deterministic-replay mode its book).
    Rest(throttlekit::redis::rest::Locking, Option<throttlekit::redis::rest::ReplayBook>),
    /// A `DurableObjectStore` or a `DenoKvStore` (the handle stays on the JS object).
    Held(crate::held::Holder),
}

thread_local! {
    static NEXT: Cell<u32> = const { Cell::new(1) };
    static ITEMS: RefCell<HashMap<u32, Item, FixedState>> = RefCell::new(HashMap::default());
}

/// Registers `item`; the owner calls [`forget`] when it is dropped.
pub fn register(item: Item) -> u32 {
    let id = NEXT.with(|n| {
        let id = n.get();
        n.set(id.wrapping_add(1).max(1));
        id
    });
    ITEMS.with(|m| m.borrow_mut().insert(id, item));
    id
}

/// Forgets the instance `id` (its JS object was freed).
pub fn forget(id: u32) {
    ITEMS.with(|m| m.borrow_mut().remove(&id));
}

/// The core value of `v` when it is an instance of one of this module's classes; `None` when
/// it is no instance at all.
pub fn of(v: &JsValue, field: &str) -> CoreResult<Option<Item>> {
    if !v.is_object() {
        return Ok(None);
    }
    let id = match Reflect::get(v, &"__tk".into()) {
        Ok(id) if id.is_undefined() => return Ok(None),
        Ok(id) => id.as_f64(),
        Err(_) => None,
    };
    let item = id.and_then(|id| ITEMS.with(|m| m.borrow().get(&(id as u32)).cloned()));
    item.map(Some).ok_or_else(|| config(field, "is not a constructed instance"))
}
