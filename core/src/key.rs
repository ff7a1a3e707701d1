//! The single definition of how a limiter's prefix and a caller's key combine.

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
    fn an_empty_prefix_leaves_the_key_bare() {
        assert_eq!(join("", "user:1"), "user:1");
    }

    #[test]
    fn a_prefix_is_joined_with_one_colon() {
        assert_eq!(join("api", "user:1"), "api:user:1");
    }
}
