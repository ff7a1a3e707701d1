//! The adaptive vectors: acquire/release timelines with the limit expected after each event.
//!
//! Every binding replays the same file through its own public API (`throttlekit conformance`
//! for Rust and the CLI), so a binding that adds arithmetic, drops an outcome or measures a round
//! trip differently shows up as a mismatch with its case id and event index. The file is
//! recorded from core by `cargo run -p throttlekit --example record_adaptive_vectors` (`make
//! vectors`); `conformance-vectors/FORMAT.md` describes the format.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{AdaptiveConfig, AdaptiveLimiter, Admission, Outcome, Permit, VirtualClock};
use crate::conformance::Report;
use crate::error::{Error, Result};

/// The `format` field of an adaptive vectors file.
pub const FORMAT: &str = "throttlekit-adaptive/1";

/// A vectors file.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdaptiveVectorFile {
    /// Always [`FORMAT`].
    pub format: String,
    /// What the file holds and how it was made.
    pub comment: String,
    /// The timelines.
    pub cases: Vec<Case>,
}

/// One limiter and one timeline.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Case {
    /// Printed on failure.
    pub id: String,
    /// Why the expectations are what they are.
    pub comment: String,
    /// The limiter's configuration, as [`AdaptiveConfig`]'s JSON.
    pub config: Value,
    /// Building the limiter fails with this code (then there are no events).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_error: Option<String>,
    /// The timeline.
    #[serde(default)]
    pub events: Vec<Event>,
}

/// What an event does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// `try_acquire(partition)`; the permit is stored under `permit` if granted.
    Acquire,
    /// `release` (round trip from the clock) or `release_with_rtt` (`rttUs`) with `outcome`.
    Release,
    /// The permit is dropped without a release (a leak).
    Drop,
    /// The virtual clock moves forward `us` microseconds.
    Advance,
}

/// One step of a timeline.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Event {
    /// What to do.
    pub op: Op,
    /// The permit's name (acquire, release, drop).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permit: Option<String>,
    /// acquire: the partition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    /// release: `success`, `ignore` or `dropped`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// release: the caller's round trip in microseconds (absent: measured on the clock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_us: Option<i64>,
    /// advance: microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub us: Option<u64>,
    /// The state after the event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Expect>,
    /// The event fails with this code instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_error: Option<String>,
}

/// The limiter's state after an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Expect {
    /// acquire: whether a permit was granted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub granted: Option<bool>,
    /// release: whether this call released the permit (`false`: it already was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub released: Option<bool>,
    /// `limit()` after the event.
    pub limit: u32,
    /// `inflight()` after the event.
    pub inflight: u32,
}

/// What an event produced: the state, or an error code.
pub type Got = std::result::Result<Expect, String>;

/// Whether `text` is an adaptive vectors file (its top level has `"format":
/// "throttlekit-adaptive/1"`).
pub fn is_adaptive_vectors(text: &str) -> bool {
    crate::conformance::file_format(text).as_deref() == Some(FORMAT)
}

/// Parses an adaptive vectors file strictly.
pub fn parse(text: &str) -> Result<AdaptiveVectorFile> {
    let file: AdaptiveVectorFile = serde_json::from_str(text)
        .map_err(|e| Error::config("vectors", &format!("adaptive file is not valid: {e}")))?;
    if file.format != FORMAT {
        return Err(Error::config("vectors", &format!("format must be {FORMAT}")));
    }
    Ok(file)
}

/// Builds the case's limiter on a virtual clock at 0.
pub fn build(case: &Case) -> Result<(AdaptiveLimiter, VirtualClock)> {
    let config: AdaptiveConfig = serde_json::from_value(case.config.clone())
        .map_err(|e| Error::config("adaptive", &format!("config is not valid: {e}")))?;
    let clock = VirtualClock::new(0);
    Ok((AdaptiveLimiter::with_clock(config, Arc::new(clock.clone()))?, clock))
}

/// Runs a case's events; `Err` if the limiter cannot be built.
pub fn run_case(case: &Case) -> Result<Vec<Got>> {
    let (limiter, clock) = build(case)?;
    let mut permits: HashMap<String, Permit> = HashMap::new();
    let state =
        |l: &AdaptiveLimiter| Expect { granted: None, released: None, limit: l.limit(), inflight: l.inflight() };
    Ok(case
        .events
        .iter()
        .map(|e| {
            let name = e.permit.clone().unwrap_or_default();
            let got = match e.op {
                Op::Advance => {
                    clock.advance(e.us.unwrap_or(0).saturating_mul(1000));
                    Ok(state(&limiter))
                }
                Op::Acquire => limiter.try_acquire(e.partition.as_deref()).map(|a| {
                    let granted = matches!(a, Admission::Granted(_));
                    if let Admission::Granted(p) = a {
                        permits.insert(name, p);
                    }
                    Expect { granted: Some(granted), ..state(&limiter) }
                }),
                Op::Release => {
                    let outcome = Outcome::parse(e.outcome.as_deref().unwrap_or(""));
                    match (permits.get_mut(&name), outcome) {
                        (None, _) => Err(Error::config("permit", &format!("{name:?} was never granted"))),
                        (_, Err(err)) => Err(err),
                        (Some(p), Ok(o)) => match e.rtt_us {
                            None => Ok(p.release(o)),
                            Some(us) => p.release_with_rtt_ns(o, us.saturating_mul(1000)),
                        },
                    }
                    .map(|released| Expect { released: Some(released), ..state(&limiter) })
                }
                Op::Drop => {
                    permits.remove(&name);
                    Ok(state(&limiter))
                }
            };
            got.map_err(|err| err.code().as_str().to_string())
        })
        .collect())
}

/// Replays a file: one pass or failure per event (and per `expectError` case).
pub fn replay(file: &AdaptiveVectorFile) -> Report {
    let mut report = Report::default();
    for case in &file.cases {
        let gots = match (run_case(case), &case.expect_error) {
            (Err(e), Some(want)) if e.code().as_str() == want => {
                report.passed += 1;
                continue;
            }
            (Err(e), _) => {
                report.failed += 1;
                report.failures.push(format!("{}: expected {:?}, got error {e}", case.id, case.expect_error));
                continue;
            }
            (Ok(_), Some(want)) => {
                report.failed += 1;
                report.failures.push(format!("{}: expected error {want}, got a limiter", case.id));
                continue;
            }
            (Ok(gots), None) => gots,
        };
        for (i, (event, got)) in case.events.iter().zip(gots).enumerate() {
            let want: Got = match &event.expect_error {
                Some(code) => Err(code.clone()),
                None => Ok(event.expect.unwrap_or(Expect { granted: None, released: None, limit: 0, inflight: 0 })),
            };
            if want == got {
                report.passed += 1;
            } else {
                report.failed += 1;
                report.failures.push(format!("{} event {i} ({:?}): expected {want:?}, got {got:?}", case.id, event.op));
            }
        }
    }
    report
}

/// Fills in every expectation from what core does now (the recorder's second half).
pub fn record(case: &mut Case) {
    match run_case(case) {
        Err(e) => {
            case.expect_error = Some(e.code().as_str().to_string());
            case.events.clear();
        }
        Ok(gots) => {
            case.expect_error = None;
            for (event, got) in case.events.iter_mut().zip(gots) {
                match got {
                    Ok(state) => (event.expect, event.expect_error) = (Some(state), None),
                    Err(code) => (event.expect, event.expect_error) = (None, Some(code)),
                }
            }
        }
    }
}
