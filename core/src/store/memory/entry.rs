//! One entry of the memory store's tables: key, deadline and state in 48 bytes, and the probe
//! a key is looked up with.

use std::ptr;

use crate::state::{Log, Slot as RingSlot, State};

/// Longest key stored inline.
pub(super) const INLINE: usize = 22;
/// Byte 22 of the key area: the inline length, or this for a boxed key.
pub(super) const HEAP: u8 = 0xFF;
/// Byte 23 of the key area: the state's tag (low bits) and the CLOCK reference bit.
pub(super) const META: usize = 23;
pub(super) const TAG_MASK: u8 = 0x07;
pub(super) const REFERENCED: u8 = 0x80;

pub(super) const T_NONE: u8 = 0;
pub(super) const T_TAT: u8 = 1;
pub(super) const T_BUCKET: u8 = 2;
pub(super) const T_COUNTER: u8 = 3;
pub(super) const T_RING: u8 = 4;
pub(super) const T_LOG: u8 = 5;

/// The word mask that ignores the meta byte (byte 23, the last byte of word 2).
pub(super) const NO_META: u64 = u64::from_ne_bytes([0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0]);

/// A stored key and its state.
///
/// `key` is 24 bytes: bytes 0..22 hold an inline key zero-padded, byte 22 its length; or, for a
/// key longer than 22 bytes, words 0 and 1 hold the pointer and length of a boxed `[u8]` and
/// byte 22 is [`HEAP`]. Byte 23 is the meta byte. The state lives in `a`/`b` by tag: TAT bits;
/// bucket tokens bits and last; counter start and count; ring pointer and length (a leaked
/// `Box<[RingSlot]>`); log pointer (a leaked `Box<Log>`, kept while the key lives so rewriting
/// the log never reallocates its holder).
#[repr(C)]
pub(super) struct Entry {
    pub(super) key: [u64; 3],
    /// Epoch ms after which the state is gone (`now > deadline`).
    pub(super) deadline: i64,
    pub(super) a: u64,
    pub(super) b: u64,
}

// SAFETY: the raw pointers an entry holds (boxed key, ring, log) are owned by it alone.
unsafe impl Send for Entry {}

/// A key prepared for comparison against entries.
pub(super) enum Probe<'k> {
    /// The inline encoding, meta byte zero.
    Inline([u64; 3]),
    /// A key too long to be inline.
    Heap(&'k [u8]),
}

impl<'k> Probe<'k> {
    #[inline(always)]
    pub(super) fn new(key: &'k [u8]) -> Probe<'k> {
        if key.len() <= INLINE {
            let [w0, w1, w2] = inline_words(key);
            Probe::Inline([w0, w1, w2 | len_byte(key.len())])
        } else {
            Probe::Heap(key)
        }
    }

    /// The inline probe of `prefix:key` (the `key::join` format) when it is at most
    /// [`INLINE`] bytes long, computed from the two parts without writing the joined key to
    /// memory. Why: a key just written to a buffer and read straight back with wider loads
    /// stalls on store forwarding; that cost a prefixed check about 20 ns.
    #[inline]
    pub(super) fn joined(prefix: &[u8], key: &[u8]) -> Option<Probe<'static>> {
        let len = prefix.len() + 1 + key.len();
        if len > INLINE || cfg!(not(target_endian = "little")) {
            return None;
        }
        let as_wide = |[w0, w1, w2]: [u64; 3]| (w0 as u128 | (w1 as u128) << 64, w2 as u128);
        let (p_lo, p_hi) = as_wide(inline_words(prefix));
        let (k_lo, k_hi) = as_wide(inline_words(key));
        // The key's bytes move up past the prefix and the colon: a 192-bit shift by 8..=176.
        let shift = 8 * (prefix.len() as u32 + 1);
        let (k_lo, k_hi) = if shift < 128 {
            (k_lo << shift, k_hi << shift | k_lo >> (128 - shift))
        } else {
            (0, k_lo << (shift - 128))
        };
        let (colon_lo, colon_hi) = if prefix.len() < 16 {
            ((b':' as u128) << (8 * prefix.len() as u32), 0)
        } else {
            (0, (b':' as u128) << (8 * (prefix.len() as u32 - 16)))
        };
        let lo = p_lo | colon_lo | k_lo;
        let hi = (p_hi | colon_hi | k_hi) as u64 | len_byte(len);
        Some(Probe::Inline([lo as u64, (lo >> 64) as u64, hi]))
    }
}

/// Word 2 of an inline key with only its length byte (byte 22 of the key area) set.
#[inline]
pub(super) fn len_byte(len: usize) -> u64 {
    let mut bytes = [0u8; 8];
    bytes[INLINE - 16] = len as u8;
    u64::from_ne_bytes(bytes)
}

/// The first 22 bytes' encoding of a key of at most [`INLINE`] bytes: its bytes in memory
/// order, zero-padded to three words (no length byte).
#[inline(always)]
pub(super) fn inline_words(key: &[u8]) -> [u64; 3] {
    let len = key.len();
    debug_assert!(len <= INLINE);
    #[cfg(target_endian = "little")]
    {
        if len >= 8 {
            // Overlapping 8-byte loads, shifted so the bytes past the key read as zero.
            let load = |at: usize| u64::from_le_bytes(key[at..at + 8].try_into().expect("8 bytes"));
            let w0 = load(0);
            return if len >= 16 {
                [w0, load(8), if len == 16 { 0 } else { load(len - 8) >> (8 * (24 - len)) }]
            } else {
                [w0, if len == 8 { 0 } else { load(len - 8) >> (8 * (16 - len)) }, 0]
            };
        }
        // Overlapping loads again; the overlap holds the same bytes, so OR joins them.
        let w0 = if len >= 4 {
            let load = |at: usize| u32::from_le_bytes(key[at..at + 4].try_into().expect("4 bytes")) as u64;
            load(0) | load(len - 4) << (8 * (len - 4))
        } else if len > 0 {
            key[0] as u64 | (key[len / 2] as u64) << (8 * (len / 2)) | (key[len - 1] as u64) << (8 * (len - 1))
        } else {
            0
        };
        [w0, 0, 0]
    }
    #[cfg(not(target_endian = "little"))]
    {
        let mut bytes = [0u8; 24];
        bytes[..len].copy_from_slice(key);
        words(bytes)
    }
}

/// The 128-bit product of `a` and `b`, its halves xored: the mixing step of foldhash.
#[cfg(not(target_arch = "wasm32"))]
#[inline(always)]
pub(super) fn folded_multiply(a: u64, b: u64) -> u64 {
    let p = (a as u128) * (b as u128);
    (p as u64) ^ ((p >> 64) as u64)
}

/// foldhash's mixing step for targets without a 64x64->128 multiply: wasm32 has none, and a
/// `u128` product there is a call to compiler-builtins' `__multi3`. This is foldhash's own
/// 32-bit fold (what its `FixedState` runs on wasm32 for the long keys too): the four 32x32->64
/// partial products, the carries replaced by xor, four inline `i64.mul`s. The hash differs from
/// the 64-bit targets' but is no format: a store's table lives in one process. On HashDoS it
/// changes nothing: neither fold is keyed by a secret (the seed and the constants are fixed),
/// so keys can be crafted to collide on either, and what bounds their cost is the store's key
/// bound (`MemoryLimits::max_keys`).
#[cfg(target_arch = "wasm32")]
#[inline(always)]
pub(super) fn folded_multiply(a: u64, b: u64) -> u64 {
    let (la, ha) = (a as u32 as u64, a >> 32);
    let (lb, hb) = (b as u32 as u64, b >> 32);
    (ha * hb ^ la * lb) ^ (ha * lb ^ la * hb).rotate_right(32)
}

/// Hash of an inline key's words (meta byte zero). Every bit of the result depends on every
/// key bit, which the table (low bits, top 7) and the shard choice (bits 40 and up) need.
#[inline(always)]
pub(super) fn hash_words(w: &[u64; 3]) -> u64 {
    const K: [u64; 3] = [0x243f_6a88_85a3_08d3, 0x1319_8a2e_0370_7344, 0xa409_3822_299f_31d0];
    folded_multiply(folded_multiply(w[0] ^ K[0], w[1] ^ K[1]) ^ w[2], K[2])
}

#[inline]
pub(super) fn words(b: [u8; 24]) -> [u64; 3] {
    let w = |i: usize| u64::from_ne_bytes(b[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
    [w(0), w(1), w(2)]
}

impl Entry {
    pub(super) fn new(probe: &Probe<'_>, deadline: i64, state: Option<State>) -> Entry {
        let key = match *probe {
            Probe::Inline(w) => w,
            Probe::Heap(k) => {
                let raw = Box::into_raw(Box::<[u8]>::from(k));
                let mut bytes = [0u8; 24];
                bytes[..8].copy_from_slice(&(raw as *mut u8 as u64).to_ne_bytes());
                bytes[8..16].copy_from_slice(&(k.len() as u64).to_ne_bytes());
                bytes[INLINE] = HEAP;
                words(bytes)
            }
        };
        let mut e = Entry { key, deadline, a: 0, b: 0 };
        e.put_state(state);
        e.touch();
        e
    }

    #[inline]
    pub(super) fn bytes(&self) -> &[u8; 24] {
        // SAFETY: [u64; 3] and [u8; 24] have the same size, and u8 has no alignment.
        unsafe { &*(self.key.as_ptr() as *const [u8; 24]) }
    }

    #[inline]
    pub(super) fn meta_mut(&mut self) -> &mut u8 {
        // SAFETY: as in `bytes`.
        unsafe { &mut (*(self.key.as_mut_ptr() as *mut [u8; 24]))[META] }
    }

    #[inline]
    pub(super) fn is_heap(&self) -> bool {
        self.bytes()[INLINE] == HEAP
    }

    /// The key's bytes.
    #[inline]
    pub(super) fn key(&self) -> &[u8] {
        if self.is_heap() {
            // SAFETY: a boxed key's pointer and length, owned by this entry.
            unsafe { std::slice::from_raw_parts(self.key[0] as usize as *const u8, self.key[1] as usize) }
        } else {
            &self.bytes()[..self.bytes()[INLINE] as usize]
        }
    }

    #[inline]
    pub(super) fn matches(&self, probe: &Probe<'_>) -> bool {
        match probe {
            Probe::Inline(w) => self.key[0] == w[0] && self.key[1] == w[1] && self.key[2] & NO_META == w[2],
            Probe::Heap(k) => self.is_heap() && self.key() == *k,
        }
    }

    #[inline]
    pub(super) fn tag(&self) -> u8 {
        self.bytes()[META] & TAG_MASK
    }

    #[inline]
    pub(super) fn set_tag(&mut self, tag: u8) {
        let m = self.meta_mut();
        *m = (*m & !TAG_MASK) | tag;
    }

    /// Marks the entry used since the CLOCK hand last passed.
    #[inline]
    pub(super) fn touch(&mut self) {
        *self.meta_mut() |= REFERENCED;
    }

    /// Clears the reference mark; returns whether it was set.
    #[inline]
    pub(super) fn untouch(&mut self) -> bool {
        let m = self.meta_mut();
        let was = *m & REFERENCED != 0;
        *m &= !REFERENCED;
        was
    }

    /// Moves the state out, leaving the entry hollow: tag none, or for a log the holder box
    /// with an empty log in it (so putting a log back reuses it).
    #[inline]
    pub(super) fn take_state(&mut self) -> Option<State> {
        let state = match self.tag() {
            T_NONE => return None,
            T_TAT => State::Tat(f64::from_bits(self.a)),
            T_BUCKET => State::Bucket { tokens: f64::from_bits(self.a), last: self.b as i64 },
            T_COUNTER => State::Counter { start: self.a as i64, count: self.b },
            _ => return Some(self.take_boxed()),
        };
        self.set_tag(T_NONE);
        Some(state)
    }

    /// [`Entry::take_state`] for the shapes that live on the heap.
    #[cold]
    #[inline(never)]
    pub(super) fn take_boxed(&mut self) -> State {
        if self.tag() == T_RING {
            let raw = ptr::slice_from_raw_parts_mut(self.a as usize as *mut RingSlot, self.b as usize);
            self.set_tag(T_NONE);
            // SAFETY: a `Box<[RingSlot]>` leaked by `put_state`; the tag is cleared above.
            State::Ring(unsafe { Box::from_raw(raw) })
        } else {
            // SAFETY: a `Box<Log>` leaked by `put_state`; it keeps a valid (empty) log.
            State::Log(unsafe { ptr::replace(self.a as usize as *mut Log, Log::new()) })
        }
    }

    /// Stores `state` into a hollow entry (see [`Entry::take_state`]).
    #[inline]
    pub(super) fn put_state(&mut self, state: Option<State>) {
        let (tag, a, b) = match state {
            None => (T_NONE, 0, 0),
            Some(State::Tat(t)) => (T_TAT, t.to_bits(), 0),
            Some(State::Bucket { tokens, last }) => (T_BUCKET, tokens.to_bits(), last as u64),
            Some(State::Counter { start, count }) => (T_COUNTER, start as u64, count),
            Some(boxed) => return self.put_boxed(boxed),
        };
        if self.tag() == T_LOG {
            self.free_log_holder();
        }
        self.a = a;
        self.b = b;
        self.set_tag(tag);
    }

    /// [`Entry::put_state`] for the shapes that live on the heap.
    #[cold]
    #[inline(never)]
    pub(super) fn put_boxed(&mut self, state: State) {
        let (tag, a, b) = match state {
            State::Ring(ring) => {
                let len = ring.len();
                (T_RING, Box::into_raw(ring) as *mut RingSlot as usize as u64, len as u64)
            }
            State::Log(log) => {
                if self.tag() == T_LOG {
                    // SAFETY: this entry's own holder box.
                    unsafe { *(self.a as usize as *mut Log) = log };
                    return;
                }
                (T_LOG, Box::into_raw(Box::new(log)) as usize as u64, 0)
            }
            other => return self.put_state(Some(other)),
        };
        self.free_log_holder();
        self.a = a;
        self.b = b;
        self.set_tag(tag);
    }

    /// Frees a hollow entry's log holder, if any.
    #[cold]
    pub(super) fn free_log_holder(&mut self) {
        if self.tag() == T_LOG {
            // SAFETY: the `Box<Log>` leaked by `put_state`; the tag is cleared right after.
            drop(unsafe { Box::from_raw(self.a as usize as *mut Log) });
            self.set_tag(T_NONE);
        }
    }

    /// Forgets the state (an expired key starts fresh).
    #[inline]
    pub(super) fn clear_state(&mut self) {
        if self.tag() != T_NONE {
            drop(self.take_state());
            self.free_log_holder();
        }
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        self.clear_state();
        if self.is_heap() {
            let raw = ptr::slice_from_raw_parts_mut(self.key[0] as usize as *mut u8, self.key[1] as usize);
            // SAFETY: the boxed key leaked by `Entry::new`, dropped once.
            drop(unsafe { Box::from_raw(raw) });
        }
    }
}
