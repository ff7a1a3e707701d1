//! The per-thread direct buffer the hot path shares with Java (`internal/Scratch.java`).
//!
//! Layout, native byte order: six `long`s of results at [`OUT`] (a decision: allowed, limit,
//! remaining, resetAt, retryAfterMs, fallback; a reservation: accepted, delayMs), then the key's
//! UTF-8 bytes at [`KEY`]. Java writes the key, calls with the buffer's address and the key's
//! length, and reads the results: nothing crosses as a Java object.

use jni_sys::{jint, jlong};
use throttlekit::{Decision, Error, Reservation};

/// Where the results start.
const OUT: usize = 0;
/// Where the key starts (Java's `Scratch.KEY`).
const KEY: usize = 64;

/// The key Java wrote at `addr` (`len` bytes of UTF-8).
///
/// An ASCII key (the usual one) is checked by `is_ascii`, inlined and a word at a time, and
/// taken as is; anything else goes through `from_utf8`. Java's encoder (`Scratch.key`) only
/// writes valid UTF-8, but the bytes are still checked: a `&str` that is not UTF-8 would be
/// undefined behaviour in core.
///
/// # Safety
/// `addr` is a live scratch buffer with at least `KEY + len` bytes.
#[inline(always)]
pub(crate) unsafe fn key<'a>(addr: jlong, len: jint) -> Result<&'a str, Error> {
    if addr == 0 || len < 0 {
        return Err(bad_key(addr));
    }
    let bytes = unsafe { std::slice::from_raw_parts((addr as *const u8).add(KEY), len as usize) };
    if bytes.is_ascii() {
        // SAFETY: ASCII is UTF-8.
        return Ok(unsafe { std::str::from_utf8_unchecked(bytes) });
    }
    std::str::from_utf8(bytes).map_err(|_| Error::config("key", "must be valid UTF-8"))
}

/// [`key`]'s errors, out of the hot path.
#[cold]
#[inline(never)]
fn bad_key(addr: jlong) -> Error {
    if addr == 0 {
        Error::config("key", "buffer is missing (internal)")
    } else {
        Error::config("key", "length must be >= 0")
    }
}

/// Writes `values` at the results.
///
/// # Safety
/// As for [`key`]; at most six values.
#[inline]
pub(crate) unsafe fn put(addr: jlong, values: &[i64]) {
    debug_assert!(values.len() <= 6);
    let out = unsafe { (addr as *mut u8).add(OUT) as *mut i64 };
    for (i, v) in values.iter().enumerate() {
        unsafe { out.add(i).write_unaligned(*v) };
    }
}

/// A decision's fields as the six result longs.
#[inline]
pub(crate) fn decision_longs(d: &Decision) -> [i64; 6] {
    [i64::from(d.allowed), d.limit, d.remaining, d.reset_at, d.retry_after_ms, i64::from(d.fallback)]
}

/// Writes a decision.
///
/// Each field is read on its own, at its own width (`read_volatile`), because `d` is usually
/// the `Result<Decision>` core's `check_sync` has just written to the stack: left to itself the
/// compiler reads two of its fields with one 16-byte load, which cannot be forwarded from the
/// two 8-byte stores that wrote them and waits for them to reach the cache (the export's
/// hottest instruction in a profile of the 1-key check, ~4 ns a call).
///
/// # Safety
/// As for [`key`].
#[inline]
pub(crate) unsafe fn put_decision(addr: jlong, d: &Decision) {
    let v = |x: &i64| unsafe { std::ptr::read_volatile(x) };
    let b = |x: &bool| i64::from(unsafe { std::ptr::read_volatile(x) });
    unsafe {
        put(addr, &[b(&d.allowed), v(&d.limit), v(&d.remaining), v(&d.reset_at), v(&d.retry_after_ms), b(&d.fallback)])
    }
}

/// Writes a reservation.
///
/// # Safety
/// As for [`key`].
#[inline]
pub(crate) unsafe fn put_reservation(addr: jlong, r: &Reservation) {
    unsafe { put(addr, &[i64::from(r.accepted), r.delay_ms]) }
}

/// A request cost as Java passes it (a `long`): core's rule, so 0 and negatives are
/// `config_invalid` with core's message.
#[inline]
pub(crate) fn cost(c: jlong) -> Result<u64, Error> {
    match u64::try_from(c) {
        Ok(c) => throttlekit::validate::cost(c),
        Err(_) => throttlekit::validate::cost_from_f64(c as f64),
    }
}

/// [`cost`] for `Limiter::check_sync`, which checks the upper bound itself: a positive cost
/// passes without a call (the hot path), anything else gets core's error.
#[inline(always)]
pub(crate) fn hot_cost(c: jlong) -> Result<u64, Error> {
    if c >= 1 { Ok(c as u64) } else { cost(c) }
}

/// Keys packed by Java's `Keys.pack`: each a little-endian `u32` length then its UTF-8 bytes.
pub(crate) fn unpack_keys(packed: &[u8]) -> Result<Vec<String>, Error> {
    let bad = || Error::config("keys", "are malformed (internal)");
    let mut keys = Vec::new();
    let mut rest = packed;
    while !rest.is_empty() {
        let (len, tail) = rest.split_first_chunk::<4>().ok_or_else(bad)?;
        let len = u32::from_le_bytes(*len) as usize;
        if tail.len() < len {
            return Err(bad());
        }
        let (k, tail) = tail.split_at(len);
        keys.push(String::from_utf8(k.to_vec()).map_err(|_| Error::config("key", "must be valid UTF-8"))?);
        rest = tail;
    }
    Ok(keys)
}
