//! The single definition of how a limiter's prefix and a caller's key combine.

use crate::error::{Error, Result};

/// The longest full key (`prefix:key`, in bytes) a store accepts unless configured otherwise:
/// 256. Rate-limit keys are ids, addresses and routes; a longer one is most likely a caller
/// passing a body or a URL with its query string.
///
/// One rule for every store: the memory store checks it itself (its bound is configurable, see
/// [`crate::MemoryLimits`]), and the limiter, multi limiter and shaper check it against
/// [`crate::Store::max_key_length`] before any other store sees a key, so a key refused on
/// one store is refused on all of them with the same `config_invalid` error, and a Redis
/// server never stores (or a client never sends) a kilobyte-long key by mistake.
pub const DEFAULT_MAX_LENGTH: usize = 256;

/// The length of `prefix:key` (the [`join_into`] format), without building it.
#[inline(always)]
pub fn joined_len(prefix: &str, key: &str) -> usize {
    if prefix.is_empty() { key.len() } else { prefix.len() + 1 + key.len() }
}

/// `config_invalid` when a full key of `len` bytes is longer than `max`.
#[inline(always)]
pub fn check_length(len: usize, max: usize) -> Result<()> {
    if len > max { Err(too_long(len, max)) } else { Ok(()) }
}

#[cold]
#[inline(never)]
fn too_long(len: usize, max: usize) -> Error {
    Error::config("key", &format!("must be at most {max} bytes (the store's maxKeyLength, prefix included), got {len}"))
}

/// `prefix:key`, or the bare key when the prefix is empty.
///
/// Every store and every limiter calls this, so two components can never split one keyspace by
/// formatting it two different ways. It writes into a reused buffer, so the hot path allocates
/// nothing once the buffer has grown to the longest key.
pub fn join_into(buf: &mut String, prefix: &str, key: &str) {
    buf.clear();
    if !prefix.is_empty() {
        buf.push_str(prefix);
        buf.push(':');
    }
    buf.push_str(key);
}

/// Longest joined key [`with_joined`] builds on the stack.
const ON_STACK: usize = 128;

/// Runs `f` on `prefix:key` (the [`join_into`] format) without allocating: the bare key when
/// the prefix is empty, a stack copy when the result is at most 128 bytes, a reused
/// thread-local buffer beyond.
///
/// Why the stack copy: the sync hot path joins on every call, and a thread-local costs a
/// `__tls_get_addr` call in a shared library (every binding is one) plus a borrow check;
/// copying twenty-odd bytes costs less than either (measured from Node: 26 ns a call through
/// the thread-local buffer).
#[inline]
pub fn with_joined<R>(prefix: &str, key: &str, f: impl FnOnce(&str) -> R) -> R {
    if prefix.is_empty() {
        return f(key);
    }
    let len = prefix.len() + 1 + key.len();
    if len > ON_STACK {
        return with_joined_long(prefix, key, f);
    }
    let mut buf = [0u8; ON_STACK];
    buf[..prefix.len()].copy_from_slice(prefix.as_bytes());
    buf[prefix.len()] = b':';
    buf[prefix.len() + 1..len].copy_from_slice(key.as_bytes());
    // SAFETY: two `str`s joined by an ASCII colon are UTF-8.
    f(unsafe { std::str::from_utf8_unchecked(&buf[..len]) })
}

/// [`with_joined`] for keys too long for the stack buffer.
#[cold]
fn with_joined_long<R>(prefix: &str, key: &str, f: impl FnOnce(&str) -> R) -> R {
    thread_local! {
        static BUF: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
    }
    BUF.with(|buf| match buf.try_borrow_mut() {
        Ok(mut buf) => {
            join_into(&mut buf, prefix, key);
            f(&buf)
        }
        // Re-entered from inside `f` (a store calling back into a limiter): a fresh String.
        Err(_) => f(&join(prefix, key)),
    })
}

/// [`join_into`] into a new `String`.
pub fn join(prefix: &str, key: &str) -> String {
    let mut s = String::with_capacity(prefix.len() + 1 + key.len());
    join_into(&mut s, prefix, key);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_length_rule_counts_the_prefix_and_its_colon() {
        assert_eq!(joined_len("", "abc"), 3);
        assert_eq!(joined_len("api", "abc"), join("api", "abc").len());
        assert!(check_length(256, DEFAULT_MAX_LENGTH).is_ok());
        let err = check_length(257, DEFAULT_MAX_LENGTH).unwrap_err();
        assert_eq!(err.code(), crate::ErrorCode::ConfigInvalid);
        assert!(err.to_string().contains("at most 256 bytes"), "{err}");
    }

    #[test]
    fn an_empty_prefix_leaves_the_key_bare() {
        assert_eq!(join("", "user:1"), "user:1");
    }

    #[test]
    fn a_prefix_is_joined_with_one_colon() {
        assert_eq!(join("api", "user:1"), "api:user:1");
    }

    #[test]
    fn with_joined_gives_the_join_on_every_path() {
        for prefix in ["", "p", "a longer prefix: ünïcode"] {
            for len in [0, 1, 60, 126 - prefix.len(), 127 - prefix.len(), 128 - prefix.len(), 300] {
                let key: String = "kéy".chars().cycle().take(len).collect();
                assert_eq!(with_joined(prefix, &key, str::to_owned), join(prefix, &key), "{prefix:?} + {len} chars");
                // Nested (a callback that joins again) works on the long path's shared buffer too.
                let nested = with_joined(prefix, &key, |outer| with_joined(prefix, outer, str::to_owned));
                assert_eq!(nested, join(prefix, &join(prefix, &key)));
            }
        }
    }
}
