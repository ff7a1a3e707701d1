//! A [`State`] as one row's columns and back: integers only, so a state read back is bit for bit
//! the state written (a float is kept as its IEEE-754 bits: a `REAL` column would turn a NaN
//! into `NULL`, and its text form is not what anyone reads anyway).
//!
//! | `kind` | state               | `a`                 | `b`            | `runs`                       |
//! |--------|---------------------|---------------------|----------------|------------------------------|
//! | 1      | GCRA TAT / shaper   | the TAT's f64 bits  | 0              | `NULL`                       |
//! | 2      | token bucket        | the tokens' f64 bits| `last` (ms)    | `NULL`                       |
//! | 3      | period counter      | `start` (ms)        | `count`        | `NULL`                       |
//! | 4      | sliding-window ring | 0                   | 0              | `(tick, count)` per slot     |
//! | 5      | sliding-window log  | 0                   | 0              | `(stamp, units)` per run     |
//!
//! A blob is a sequence of 16-byte pairs, each two little-endian 64-bit integers. Counts are
//! `u64` stored as the `i64` of the same bits.

use std::collections::VecDeque;

use crate::error::{Error, Result};
use crate::state::{Log, Slot, State};

/// One row's state columns: `kind`, `a`, `b`, `runs`.
#[derive(Debug, PartialEq)]
pub(super) struct Columns {
    pub kind: i64,
    pub a: i64,
    pub b: i64,
    pub runs: Option<Vec<u8>>,
}

const TAT: i64 = 1;
const BUCKET: i64 = 2;
const COUNTER: i64 = 3;
const RING: i64 = 4;
const LOG: i64 = 5;

fn pairs(it: impl Iterator<Item = (i64, u64)>) -> Vec<u8> {
    let mut out = Vec::new();
    for (x, y) in it {
        out.extend_from_slice(&x.to_le_bytes());
        out.extend_from_slice(&y.to_le_bytes());
    }
    out
}

fn unpairs(blob: &[u8]) -> Result<impl Iterator<Item = (i64, u64)> + '_> {
    if !blob.len().is_multiple_of(16) {
        return Err(Error::store(format!("sqlite: a state blob of {} bytes (not whole 16-byte pairs)", blob.len())));
    }
    Ok(blob.chunks_exact(16).map(|c| {
        let (x, y) = c.split_at(8);
        (i64::from_le_bytes(x.try_into().unwrap_or_default()), u64::from_le_bytes(y.try_into().unwrap_or_default()))
    }))
}

/// The columns that hold `state`.
pub(super) fn encode(state: &State) -> Columns {
    let plain = |kind, a, b| Columns { kind, a, b, runs: None };
    match state {
        State::Tat(tat) => plain(TAT, tat.to_bits() as i64, 0),
        State::Bucket { tokens, last } => plain(BUCKET, tokens.to_bits() as i64, *last),
        State::Counter { start, count } => plain(COUNTER, *start, *count as i64),
        State::Ring(slots) => {
            Columns { kind: RING, a: 0, b: 0, runs: Some(pairs(slots.iter().map(|s| (s.tick, s.count)))) }
        }
        State::Log(log) => Columns { kind: LOG, a: 0, b: 0, runs: Some(pairs(log.iter().copied())) },
    }
}

/// The state these columns hold; `store_unavailable` for a row no version of this store wrote.
pub(super) fn decode(c: &Columns) -> Result<State> {
    let blob = || c.runs.as_deref().unwrap_or_default();
    Ok(match c.kind {
        TAT => State::Tat(f64::from_bits(c.a as u64)),
        BUCKET => State::Bucket { tokens: f64::from_bits(c.a as u64), last: c.b },
        COUNTER => State::Counter { start: c.a, count: c.b as u64 },
        RING => State::Ring(unpairs(blob())?.map(|(tick, count)| Slot { tick, count }).collect()),
        LOG => {
            let runs: VecDeque<(i64, u64)> = unpairs(blob())?.collect();
            if !runs.iter().zip(runs.iter().skip(1)).all(|(x, y)| x.0 < y.0) {
                return Err(Error::store("sqlite: a sliding-window log whose runs are not ascending"));
            }
            State::Log(Log::from(runs))
        }
        other => return Err(Error::store(format!("sqlite: a row of unknown state kind {other}"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_reads_back_bit_for_bit() {
        let mut log = Log::new();
        for (s, u) in [(5, 1), (9, 3), (9, 1), (12, u64::MAX)] {
            log.add(s, u);
        }
        let states = [
            State::Tat(1_700_000_000_123.25),
            State::Tat(f64::NAN),
            State::Tat(-0.0),
            State::Bucket { tokens: 2.5e-300, last: -7 },
            State::Counter { start: i64::MIN, count: u64::MAX },
            State::Ring(vec![Slot::EMPTY, Slot { tick: 3, count: 9 }].into_boxed_slice()),
            State::Log(log),
            State::Log(Log::new()),
        ];
        for s in states {
            let back = decode(&encode(&s)).unwrap();
            match (&s, &back) {
                (State::Tat(x), State::Tat(y)) => assert_eq!(x.to_bits(), y.to_bits()),
                _ => assert_eq!(back, s),
            }
        }
    }

    #[test]
    fn a_row_no_store_wrote_is_store_unavailable() {
        for c in [
            Columns { kind: 9, a: 0, b: 0, runs: None },
            Columns { kind: LOG, a: 0, b: 0, runs: Some(vec![0; 15]) },
            Columns { kind: LOG, a: 0, b: 0, runs: Some(pairs([(5, 1), (5, 1)].into_iter())) },
        ] {
            assert_eq!(decode(&c).unwrap_err().code(), crate::ErrorCode::StoreUnavailable, "{c:?}");
        }
    }
}
