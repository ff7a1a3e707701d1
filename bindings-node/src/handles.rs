//! Numeric handles for `Limiter`s and `RateLimitFields`: how the fast paths (fast.rs,
//! `__checkSync` and `__fieldsCheck`) find their receiver. Each kind has a table of its own.
//!
//! Why: finding a napi-rs class instance from `this` costs `napi_unwrap` plus a type-tag check,
//! two V8 private-property lookups (~50 ns, a quarter of a whole `checkSync`). Instead each
//! `Limiter` is registered once in a per-environment [`Handles`] table, index.js keeps the
//! number in a private class field of the JS object, and a call passes it back as a plain number.
//!
//! Soundness does not depend on JavaScript playing along: the table owns an `Arc` of every core
//! limiter it lists, so any number resolves either to a live limiter or to `None`
//! (`config_invalid` at the boundary). A handle is `generation << INDEX_BITS | index`; a slot's
//! generation moves on when it is freed, so a stale handle never reaches the slot's next owner,
//! and a slot whose generation would wrap is retired instead of reused.
//!
//! One table per JS environment (main thread or worker), reached through the napi callbacks'
//! data pointer: no locks, no thread-locals. A slot is freed when the napi `Limiter` that
//! registered it is finalized (its [`Registration`] drops), so creating and dropping limiters
//! does not grow the table.

use std::cell::{OnceCell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use crate::error::{CoreResult, config};

/// Bits of a handle that hold the slot index (the rest, up to 2^53, the generation).
const INDEX_BITS: u32 = 32;
/// The last generation a slot may have; one more free retires it.
const MAX_GENERATION: u64 = (1 << (53 - INDEX_BITS)) - 1;

/// The limiters (or, with another `T`, the fields) of one JS environment, by handle.
pub struct Handles<T = throttlekit::Limiter> {
    slots: Vec<Slot<T>>,
    /// Indices of empty, reusable slots (most recently freed last).
    free: Vec<u32>,
    live: usize,
}

impl<T> Default for Handles<T> {
    fn default() -> Handles<T> {
        Handles { slots: Vec::new(), free: Vec::new(), live: 0 }
    }
}

struct Slot<T> {
    /// Starts at 1, so the handle 0 (and every handle with generation 0) is never valid.
    generation: u64,
    limiter: Option<Arc<T>>,
}

/// A table shared by an environment's callbacks and by the objects registered in it.
pub type Shared<T = throttlekit::Limiter> = Rc<RefCell<Handles<T>>>;

impl<T> Handles<T> {
    /// Lists `limiter` and returns its handle.
    fn insert(&mut self, limiter: Arc<T>) -> CoreResult<u64> {
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                let i = u32::try_from(self.slots.len()).map_err(|_| config("limiter", "too many live limiters"))?;
                self.slots.push(Slot { generation: 1, limiter: None });
                i
            }
        };
        let slot = &mut self.slots[index as usize];
        slot.limiter = Some(limiter);
        self.live += 1;
        Ok(slot.generation << INDEX_BITS | u64::from(index))
    }

    /// The limiter of `handle` (a JS number), `None` for anything that is not a live handle:
    /// not a whole number, out of range, freed, or never issued.
    #[inline]
    pub fn get(&self, handle: f64) -> Option<&T> {
        let h = handle as u64; // saturating: NaN and negatives become 0, which is never valid
        if h as f64 != handle {
            return None;
        }
        let slot = self.slots.get((h & ((1 << INDEX_BITS) - 1)) as usize)?;
        if slot.generation != h >> INDEX_BITS {
            return None;
        }
        slot.limiter.as_deref()
    }

    fn remove(&mut self, handle: u64) {
        let index = (handle & ((1 << INDEX_BITS) - 1)) as u32;
        let Some(slot) = self.slots.get_mut(index as usize) else { return };
        if slot.generation != handle >> INDEX_BITS || slot.limiter.take().is_none() {
            return;
        }
        self.live -= 1;
        slot.generation += 1;
        if slot.generation <= MAX_GENERATION {
            self.free.push(index);
        }
    }

    /// How many limiters are listed (for the test that finalization frees slots).
    pub fn live(&self) -> usize {
        self.live
    }
}

/// A limiter's entry in a table; dropping it (when napi-rs finalizes the `Limiter`) frees the
/// slot. It holds the table alive, since finalizers may run after the environment's callbacks
/// are gone (at worker or process teardown).
pub struct Registration<T = throttlekit::Limiter> {
    table: Shared<T>,
    handle: u64,
}

impl<T> Registration<T> {
    /// Lists `limiter` in `table`.
    pub fn new(table: &Shared<T>, limiter: Arc<T>) -> CoreResult<Registration<T>> {
        let handle = table.try_borrow_mut().map_err(|_| config("this", "is busy"))?.insert(limiter)?;
        Ok(Registration { table: table.clone(), handle })
    }

    /// The handle, exact as a JS number (below 2^53).
    pub fn handle(&self) -> f64 {
        self.handle as f64
    }

    /// Whether this entry is in `table` (a `Limiter` belongs to the environment that made it).
    pub fn is_in(&self, table: &Shared<T>) -> bool {
        Rc::ptr_eq(&self.table, table)
    }
}

/// The handle in `table` of the object whose entry `cell` keeps, listing `entry()` there on
/// first use; `config_invalid` when the entry is in another environment's table (an object
/// belongs to the environment that made it).
pub fn handle_in<T>(
    cell: &OnceCell<Registration<T>>,
    table: &Shared<T>,
    entry: impl FnOnce() -> Arc<T>,
) -> CoreResult<f64> {
    if cell.get().is_none() {
        let r = Registration::new(table, entry())?;
        // Cannot fail: the cell was empty and nothing in between touched it.
        let _ = cell.set(r);
    }
    match cell.get() {
        Some(r) if r.is_in(table) => Ok(r.handle()),
        _ => Err(config("this", "belongs to another thread's environment")),
    }
}

impl<T> Drop for Registration<T> {
    fn drop(&mut self) {
        // The table is only ever borrowed within one callback, which never runs finalizers; if
        // it ever were busy, keeping the slot (and its Arc) is a leak, never a dangling handle.
        if let Ok(mut t) = self.table.try_borrow_mut() {
            t.remove(self.handle);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter() -> Arc<throttlekit::Limiter> {
        let strategy = throttlekit::Strategy::gcra(1, 1000, None).expect("valid strategy");
        Arc::new(throttlekit::Limiter::builder(strategy).build())
    }

    #[test]
    fn a_registered_limiter_is_found_by_its_handle_until_dropped() {
        let table = Shared::<throttlekit::Limiter>::default();
        let l = limiter();
        let r = Registration::new(&table, l.clone()).expect("registered");
        let h = r.handle();
        assert!(std::ptr::eq(table.borrow().get(h).expect("live"), &*l));
        assert_eq!(table.borrow().live(), 1);
        drop(r);
        assert!(table.borrow().get(h).is_none(), "stale handle");
        assert_eq!(table.borrow().live(), 0);
        assert_eq!(Arc::strong_count(&l), 1, "the table let go of the limiter");
    }

    #[test]
    fn a_reused_slot_does_not_answer_to_the_old_handle() {
        let table = Shared::<throttlekit::Limiter>::default();
        let old = Registration::new(&table, limiter()).expect("registered").handle();
        let new = Registration::new(&table, limiter()).expect("registered");
        assert_eq!(table.borrow().slots.len(), 1, "the slot was reused");
        assert_ne!(new.handle(), old);
        assert!(table.borrow().get(old).is_none());
        assert!(table.borrow().get(new.handle()).is_some());
    }

    #[test]
    fn numbers_that_are_not_handles_find_nothing() {
        let table = Shared::<throttlekit::Limiter>::default();
        let r = Registration::new(&table, limiter()).expect("registered");
        let h = r.handle();
        for forged in [0.0, -0.0, 1.0, h + 1.0, h - 0.5, -h, f64::NAN, f64::INFINITY, 2f64.powi(53), h + 2f64.powi(32)]
        {
            assert!(table.borrow().get(forged).is_none(), "{forged}");
        }
    }

    #[test]
    fn a_slot_retires_instead_of_wrapping_its_generation() {
        let table = Shared::<throttlekit::Limiter>::default();
        table.borrow_mut().slots.push(Slot { generation: MAX_GENERATION, limiter: None });
        table.borrow_mut().free.push(0);
        let r = Registration::new(&table, limiter()).expect("registered");
        drop(r);
        assert!(table.borrow().free.is_empty(), "retired");
        let r = Registration::new(&table, limiter()).expect("registered");
        assert_eq!(r.handle(), (1u64 << INDEX_BITS | 1) as f64, "a new slot");
    }

    #[test]
    fn registrations_in_another_table_are_told_apart() {
        let (a, b) = (Shared::<throttlekit::Limiter>::default(), Shared::<throttlekit::Limiter>::default());
        let r = Registration::new(&a, limiter()).expect("registered");
        assert!(r.is_in(&a));
        assert!(!r.is_in(&b));
    }
}
