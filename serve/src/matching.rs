//! Which configured limit a request descriptor meets: envoyproxy/ratelimit's walk.
//!
//! Per entry, in order: the child with the exact key and value; else the first of the
//! parent's wildcard children (in declaration order) whose key is equal and whose pattern
//! matches the value; else the child with the key alone. There is no backtracking: once a
//! child is chosen, a dead end below it means no limit. A limit applies only when the
//! request's last entry lands on a node carrying one (the request's depth must equal the
//! config's); a node with neither limit nor children ends the walk with no limit (a
//! whitelist entry).

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::config::{Config, LimitSet, Node};

/// A `(key, value)` pair as [`Node::exact`] is keyed, looked up from borrowed strings: the
/// owned key `(String, String)` borrows as `dyn Pair`, so a lookup copies nothing (it used to
/// build two `String`s per entry per request, also against an empty map).
trait Pair {
    fn pair(&self) -> (&str, &str);
}

impl Pair for (String, String) {
    fn pair(&self) -> (&str, &str) {
        (&self.0, &self.1)
    }
}

impl Pair for (&str, &str) {
    fn pair(&self) -> (&str, &str) {
        (self.0, self.1)
    }
}

impl<'a> Borrow<dyn Pair + 'a> for (String, String) {
    fn borrow(&self) -> &(dyn Pair + 'a) {
        self
    }
}

/// Hashes as `(String, String)` does: each field in order.
impl Hash for dyn Pair + '_ {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let (k, v) = self.pair();
        k.hash(state);
        v.hash(state);
    }
}

impl PartialEq for dyn Pair + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.pair() == other.pair()
    }
}

impl Eq for dyn Pair + '_ {}

/// A value pattern: `*` matches any run of characters (also none), anywhere in the value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern {
    parts: Vec<String>,
}

impl Pattern {
    /// Compiles `pattern` (split at each `*`).
    pub fn new(pattern: &str) -> Pattern {
        Pattern { parts: pattern.split('*').map(str::to_owned).collect() }
    }

    /// Whether `value` matches. With `*` the only metacharacter, taking each literal part at
    /// its leftmost occurrence is exact (no backtracking is ever needed).
    pub fn matches(&self, value: &str) -> bool {
        let n = self.parts.len();
        if n == 1 {
            return value == self.parts[0];
        }
        let (first, last) = (&self.parts[0], &self.parts[n - 1]);
        if value.len() < first.len() + last.len()
            || !value.starts_with(first.as_str())
            || !value.ends_with(last.as_str())
        {
            return false;
        }
        let mut rest = &value[first.len()..value.len() - last.len()];
        for part in &self.parts[1..n - 1] {
            match rest.find(part.as_str()) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
        true
    }
}

/// A descriptor that met a limit: the limits and the counter's name.
#[derive(Clone, Debug)]
pub struct Matched<'a> {
    /// The node's limits.
    pub limits: &'a Arc<LimitSet>,
    /// The counter's name below the domain: `key_value` per entry joined by `.`; a
    /// `share_threshold` wildcard contributes its pattern instead of the value.
    pub counter: String,
}

/// Walks `domain`'s tree with the request's `(key, value)` entries. `None`: no limit applies
/// (unknown domain, no match, depth mismatch, a whitelist node).
pub fn find<'a, K: AsRef<str>, V: AsRef<str>>(
    config: &'a Config,
    domain: &str,
    entries: &[(K, V)],
) -> Option<Matched<'a>> {
    let mut node: &Node = config.domains.get(domain)?;
    // Sized for the common walk, so the name is built without growing.
    let mut counter = String::with_capacity(entries.iter().map(|(k, v)| k.as_ref().len() + v.as_ref().len() + 2).sum());
    for (i, (key, value)) in entries.iter().enumerate() {
        let (key, value) = (key.as_ref(), value.as_ref());
        let (next, shown) = step(node, key, value)?;
        if !counter.is_empty() {
            counter.push('.');
        }
        counter.push_str(key);
        counter.push('_');
        counter.push_str(shown);
        if i + 1 == entries.len() {
            return next.limits.as_ref().map(|limits| Matched { limits, counter });
        }
        if !next.has_children() {
            return None;
        }
        node = next;
    }
    None
}

/// One step of the walk: the chosen child and what the counter name shows for the value.
fn step<'a, 'v>(node: &'a Node, key: &str, value: &'v str) -> Option<(&'a Node, &'v str)>
where
    'a: 'v,
{
    if !node.exact.is_empty()
        && let Some(n) = node.exact.get(&(key, value) as &dyn Pair)
    {
        return Some((n, value));
    }
    if let Some(w) = node.wildcards.iter().find(|w| w.key == key && w.pattern.matches(value)) {
        let shown = if w.share_threshold { w.raw.as_str() } else { value };
        return Some((&w.node, shown));
    }
    node.key_only.get(key).map(|n| (n, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_star_anywhere() {
        let p = Pattern::new("api/*/items/*");
        assert!(p.matches("api/v1/items/7"));
        assert!(p.matches("api//items/"));
        assert!(!p.matches("api/v1/item/7"));
        assert!(Pattern::new("*").matches(""));
        assert!(Pattern::new("foo*").matches("foo"));
        assert!(Pattern::new("*bar").matches("foobar"));
        assert!(!Pattern::new("*bar").matches("barfoo"));
        assert!(Pattern::new("a*a").matches("aa"));
        assert!(!Pattern::new("a*a").matches("a"));
        assert!(Pattern::new("exact").matches("exact"));
        assert!(!Pattern::new("exact").matches("exactly"));
    }

    /// A reference matcher (dynamic programming over every split) for the property test.
    fn reference(p: &str, v: &str) -> bool {
        let (p, v): (Vec<char>, Vec<char>) = (p.chars().collect(), v.chars().collect());
        let mut dp = vec![vec![false; v.len() + 1]; p.len() + 1];
        dp[0][0] = true;
        for i in 1..=p.len() {
            for j in 0..=v.len() {
                dp[i][j] = if p[i - 1] == '*' {
                    dp[i - 1][j] || (j > 0 && dp[i][j - 1])
                } else {
                    j > 0 && dp[i - 1][j - 1] && p[i - 1] == v[j - 1]
                };
            }
        }
        dp[p.len()][v.len()]
    }

    proptest::proptest! {
        #[test]
        fn pattern_agrees_with_a_reference_glob(p in "[ab*]{0,6}", v in "[ab]{0,8}") {
            proptest::prop_assert_eq!(Pattern::new(&p).matches(&v), reference(&p, &v));
        }
    }
}
