//! Who owns which slot: `CLUSTER SLOTS` read into a map of 16384 entries, each the master that
//! serves that slot (or none while a failover leaves it uncovered).

use std::sync::Arc;

use crate::redis::engine::value::Value;

use super::slot::SLOTS;

/// A master's address as the cluster announces it.
pub(crate) type Addr = (String, u16);

/// One slot range of a `CLUSTER SLOTS` reply and its master.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Range {
    pub start: u16,
    pub end: u16,
    pub master: Addr,
}

/// Reads a `CLUSTER SLOTS` reply. A master announced with an empty or `?` host (an endpoint
/// the node does not know) is at `asked`'s host, as the spec says.
pub(crate) fn parse_slots(reply: &Value, asked: &str) -> Option<Vec<Range>> {
    let Value::Array(ranges) = reply else { return None };
    let mut out = Vec::with_capacity(ranges.len());
    for r in ranges {
        let Value::Array(items) = r else { return None };
        let (Some(Value::Int(start)), Some(Value::Int(end)), Some(Value::Array(master))) =
            (items.first(), items.get(1), items.get(2))
        else {
            return None;
        };
        let host = match master.first()? {
            Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
            Value::SimpleString(s) => s.clone(),
            _ => return None,
        };
        let host = if host.is_empty() || host == "?" { asked.to_string() } else { host };
        let Some(Value::Int(port)) = master.get(1) else { return None };
        let (start, end, port) = (u16::try_from(*start).ok()?, u16::try_from(*end).ok()?, u16::try_from(*port).ok()?);
        if start > end || usize::from(end) >= SLOTS {
            return None;
        }
        out.push(Range { start, end, master: (host, port) });
    }
    Some(out)
}

/// Per slot, its master (an index into `masters`), `u16::MAX` when none serves it.
pub(crate) struct SlotMap<N> {
    owner: Box<[u16]>,
    pub masters: Vec<Arc<N>>,
}

const NONE: u16 = u16::MAX;

impl<N> SlotMap<N> {
    /// No slot served (before the first `CLUSTER SLOTS`).
    pub fn empty() -> SlotMap<N> {
        SlotMap { owner: vec![NONE; SLOTS].into_boxed_slice(), masters: Vec::new() }
    }

    /// The map `ranges` describe; `node` gives each master's node (shared with older maps).
    pub fn build(ranges: &[Range], mut node: impl FnMut(&Addr) -> Arc<N>, addr: impl Fn(&N) -> &Addr) -> SlotMap<N> {
        let mut map = SlotMap::empty();
        for r in ranges {
            let i = match map.masters.iter().position(|m| addr(m) == &r.master) {
                Some(i) => i,
                None => {
                    map.masters.push(node(&r.master));
                    map.masters.len() - 1
                }
            };
            map.owner[usize::from(r.start)..=usize::from(r.end)].fill(i as u16);
        }
        map
    }

    /// The master of `slot`, if one serves it.
    pub fn get(&self, slot: u16) -> Option<&Arc<N>> {
        match self.owner[usize::from(slot)] {
            NONE => None,
            i => self.masters.get(usize::from(i)),
        }
    }

    /// A copy where `slot` is served by `master` (a `MOVED` learnt before the next refresh).
    pub fn with(&self, slot: u16, master: Arc<N>, addr: impl Fn(&N) -> &Addr) -> SlotMap<N> {
        let mut owner = self.owner.clone();
        let mut masters = self.masters.clone();
        let i = match masters.iter().position(|m| addr(m) == addr(&master)) {
            Some(i) => i,
            None => {
                masters.push(master);
                masters.len() - 1
            }
        };
        owner[usize::from(slot)] = i as u16;
        SlotMap { owner, masters }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn cluster_slots_parse_with_unknown_hosts_at_the_asked_node() {
        let reply = Value::Array(vec![
            Value::Array(vec![
                Value::Int(0),
                Value::Int(5460),
                Value::Array(vec![bulk("10.0.0.1"), Value::Int(7000), bulk("id1")]),
                Value::Array(vec![bulk("10.0.0.4"), Value::Int(7003), bulk("id4")]),
            ]),
            Value::Array(vec![Value::Int(5461), Value::Int(16383), Value::Array(vec![bulk(""), Value::Int(7001)])]),
        ]);
        let ranges = parse_slots(&reply, "seed").unwrap();
        assert_eq!(ranges[0], Range { start: 0, end: 5460, master: ("10.0.0.1".into(), 7000) });
        assert_eq!(ranges[1].master, ("seed".into(), 7001));
        let map = SlotMap::build(&ranges, |a| Arc::new(a.clone()), |n| n);
        assert_eq!(map.get(0).unwrap().1, 7000);
        assert_eq!(map.get(16383).unwrap().1, 7001);
        assert_eq!(map.masters.len(), 2);
        let moved = map.with(3, Arc::new(("x".to_string(), 1)), |n| n);
        assert_eq!(moved.get(3).unwrap().1, 1);
        assert_eq!(moved.get(4).unwrap().1, 7000);
        assert!(parse_slots(&Value::Array(vec![Value::Array(vec![Value::Int(9), Value::Int(3)])]), "s").is_none());
        assert!(SlotMap::<Addr>::empty().get(5).is_none());
    }
}
