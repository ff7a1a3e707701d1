//! The Ruby binding's fast path for the adaptive limiter: `try_acquire` and `release` as plain
//! C functions over integers, attached by `ruby/lib/throttlekit/adaptive_fast.rb`.
//!
//! Why beside the generated API: uniffi's Ruby code makes each call two FFI calls, a call-status
//! struct and a RustBuffer per string or optional, and gives each permit a native object with a
//! GC finalizer; an acquire + release cost 13 to 17 µs that way, the limiter well under 0.1 µs
//! of it. Here a limiter is a handle (the address of its [`FastPath`], valid while its
//! `AdaptiveLimiter` lives, which the Ruby permit keeps alive), a partition an index, a permit
//! an id into a slab of core permits, and an outcome a C string core parses. A permit the Ruby
//! side lost is released by [`tk_rb_adaptive_sweep`] (core counts it as `ignore` and leaked).
//!
//! Every function is a panic boundary (nothing unwinds into Ruby); errors are core's, their
//! text copied into a caller's buffer by [`tk_rb_adaptive_last_error`].

use std::cell::RefCell;
use std::collections::HashSet;
use std::ffi::{CStr, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;

use throttlekit::concurrency::{self as core, Admission, Outcome, Permit, Rejection};

/// One limiter's fast path: the limiter, its partitions' names, and the permits Ruby holds.
pub struct FastPath {
    limiter: core::AdaptiveLimiter,
    partitions: Vec<String>,
    slab: Mutex<Slab>,
}

/// Held permits by id: the low 32 bits are a slot, the high ones the slot's generation, so the
/// id of a released permit never names its slot's next permit (a second release is a no-op).
#[derive(Default)]
struct Slab {
    slots: Vec<Entry>,
    free: Vec<u32>,
    held: usize,
}

#[derive(Default)]
struct Entry {
    generation: u32,
    permit: Option<Permit>,
    /// Missing from the latest sweep's live ids: released as leaked if missing from the next.
    suspect: bool,
}

thread_local! {
    /// The calling thread's latest rejection, read by [`tk_rb_adaptive_rejected`].
    static REJECTION: RefCell<Option<Rejection>> = const { RefCell::new(None) };
    /// The calling thread's latest error, read by [`tk_rb_adaptive_last_error`].
    static ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

impl FastPath {
    pub(crate) fn new(limiter: core::AdaptiveLimiter, partitions: Vec<String>) -> FastPath {
        FastPath { limiter, partitions, slab: Mutex::new(Slab::default()) }
    }

    fn slab(&self) -> std::sync::MutexGuard<'_, Slab> {
        self.slab.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Slab {
    fn insert(&mut self, permit: Permit) -> i64 {
        self.held += 1;
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(Entry::default());
                (self.slots.len() - 1) as u32
            }
        };
        let entry = &mut self.slots[slot as usize];
        entry.generation = entry.generation.wrapping_add(1) & 0x7fff_ffff;
        entry.permit = Some(permit);
        entry.suspect = false;
        Self::id(entry.generation, slot)
    }

    fn id(generation: u32, slot: u32) -> i64 {
        (i64::from(generation) << 32) | i64::from(slot)
    }

    fn take(&mut self, id: i64) -> Option<Permit> {
        let (generation, slot) = ((id >> 32) as u32, id as u32);
        let entry = self.slots.get_mut(slot as usize)?;
        if entry.generation != generation {
            return None;
        }
        let permit = entry.permit.take()?;
        self.free.push(slot);
        self.held -= 1;
        Some(permit)
    }

    /// The held permits missing from `live` twice in a row, taken out. Twice: a permit granted
    /// to another Ruby thread just before a sweep may not have its Ruby object yet, but will by
    /// the next sweep (after another collection).
    fn lost(&mut self, live: &HashSet<i64>) -> Vec<Permit> {
        let mut lost = Vec::new();
        for slot in 0..self.slots.len() as u32 {
            let entry = &mut self.slots[slot as usize];
            if entry.permit.is_none() {
                continue;
            }
            let id = Self::id(entry.generation, slot);
            match (live.contains(&id), entry.suspect) {
                (true, _) => entry.suspect = false,
                (false, false) => entry.suspect = true,
                (false, true) => lost.extend(self.take(id)),
            }
        }
        lost
    }
}

/// Runs `f` behind a panic boundary; a panic is `on_panic` with its text as the last error.
fn guarded<T>(on_panic: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        fail(&format!("internal: a panic in the adaptive fast path: {}", throttlekit::panic_message(&*payload)));
        on_panic
    })
}

fn fail(message: &str) {
    ERROR.with(|e| message.clone_into(&mut e.borrow_mut()));
}

/// # Safety
/// `handle` is a live [`FastPath`]'s address (from `AdaptiveLimiter.fast_path`).
unsafe fn path<'a>(handle: u64) -> &'a FastPath {
    // SAFETY: the caller's contract.
    unsafe { &*(handle as usize as *const FastPath) }
}

/// The index of partition `name` (a NUL-terminated string), or -1 when it is not configured.
///
/// # Safety
/// `handle` is a live fast path; `name` a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_rb_adaptive_partition(handle: u64, name: *const c_char) -> i32 {
    guarded(-1, || {
        if name.is_null() {
            return -1;
        }
        // SAFETY: the caller's contract (and not NULL).
        let (fast, name) = unsafe { (path(handle), CStr::from_ptr(name)) };
        let name = name.to_str().unwrap_or("");
        fast.partitions.iter().position(|p| p == name).map_or(-1, |i| i as i32)
    })
}

/// `try_acquire`: a permit's id (> 0), 0 when refused (the rejection is then the thread's, for
/// [`tk_rb_adaptive_rejected`]), -1 on an error (for [`tk_rb_adaptive_last_error`]).
/// `partition` is an index from [`tk_rb_adaptive_partition`], or -1 for none.
///
/// # Safety
/// `handle` is a live fast path.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_rb_adaptive_try_acquire(handle: u64, partition: i32) -> i64 {
    guarded(-1, || {
        // SAFETY: the caller's contract.
        let fast = unsafe { path(handle) };
        let name = usize::try_from(partition).ok().and_then(|i| fast.partitions.get(i)).map(String::as_str);
        match fast.limiter.try_acquire(name) {
            Ok(Admission::Granted(permit)) => fast.slab().insert(permit),
            Ok(Admission::Rejected(r)) => {
                REJECTION.with(|x| *x.borrow_mut() = Some(r));
                0
            }
            Err(e) => {
                fail(&e.to_string());
                -1
            }
        }
    })
}

/// The thread's latest rejection: `field` 0 the limit, 1 the in-flight count, 2 the retry hint
/// in ms, 3 the `Retry-After` seconds (0 before any rejection or for another field).
#[unsafe(no_mangle)]
pub extern "C" fn tk_rb_adaptive_rejected(field: u32) -> u64 {
    guarded(0, || {
        REJECTION.with(|x| match (*x.borrow(), field) {
            (Some(r), 0) => u64::from(r.limit),
            (Some(r), 1) => u64::from(r.inflight),
            (Some(r), 2) => r.retry_after_ms,
            (Some(r), 3) => r.retry_after_secs(),
            _ => 0,
        })
    })
}

/// Releases permit `id` with `outcome` (`"success"`, `"ignore"`, `"dropped"`), the round trip
/// measured by core, or `rtt_ns` when `has_rtt` is not 0: 1 released, 0 already released (or
/// an unknown id), -1 an error (a bad outcome or a negative round trip: the permit stays held).
///
/// # Safety
/// `handle` is a live fast path; `outcome` a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_rb_adaptive_release(
    handle: u64,
    id: i64,
    outcome: *const c_char,
    has_rtt: i32,
    rtt_ns: i64,
) -> i32 {
    guarded(-1, || {
        if outcome.is_null() {
            fail("config_invalid: outcome must be \"success\", \"ignore\" or \"dropped\"");
            return -1;
        }
        // SAFETY: the caller's contract (and not NULL).
        let (fast, outcome) = unsafe { (path(handle), CStr::from_ptr(outcome)) };
        let parsed = Outcome::parse(outcome.to_str().unwrap_or(""));
        let checked = parsed.and_then(|o| match has_rtt != 0 && rtt_ns < 0 {
            true => Err(throttlekit::Error::config("rtt", "must not be negative")),
            false => Ok(o),
        });
        let o = match checked {
            Ok(o) => o,
            Err(e) => {
                fail(&e.to_string());
                return -1;
            }
        };
        let Some(mut permit) = fast.slab().take(id) else { return 0 };
        match has_rtt {
            0 => permit.release(o),
            _ => permit.release_with_rtt_ns(o, rtt_ns).unwrap_or(false),
        };
        1
    })
}

/// Releases, as leaked, every held permit whose id was missing from the `n` ids at `live` (the
/// Ruby permits still reachable) in this sweep and the one before; returns how many.
///
/// # Safety
/// `handle` is a live fast path; `live` points to `n` ids (or `n` is 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_rb_adaptive_sweep(handle: u64, live: *const i64, n: usize) -> u64 {
    guarded(0, || {
        // SAFETY: the caller's contract.
        let fast = unsafe { path(handle) };
        let live: HashSet<i64> = match n {
            0 => HashSet::new(),
            // SAFETY: the caller's contract.
            _ => unsafe { std::slice::from_raw_parts(live, n) }.iter().copied().collect(),
        };
        let lost = fast.slab().lost(&live);
        // Dropped without a release (outside the slab's lock): core counts each as `ignore` and
        // leaked.
        lost.len() as u64
    })
}

/// Permits held by Ruby now (released ones excluded): the sweep is skipped at 0.
///
/// # Safety
/// `handle` is a live fast path.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_rb_adaptive_held(handle: u64) -> u64 {
    // SAFETY: the caller's contract.
    guarded(0, || unsafe { path(handle) }.slab().held as u64)
}

/// Copies the thread's latest error text into `buf` (up to `cap` bytes) and returns its length.
///
/// # Safety
/// `buf` is writable for `cap` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_rb_adaptive_last_error(buf: *mut u8, cap: usize) -> usize {
    guarded(0, || {
        ERROR.with(|e| {
            let e = e.borrow();
            let n = e.len().min(cap);
            // SAFETY: the caller's contract; n <= cap.
            unsafe { std::ptr::copy_nonoverlapping(e.as_ptr(), buf, n) };
            n
        })
    })
}
