//! Conformance vectors: the language-neutral JSON suites every binding and the Lua path replay.
//!
//! The format (see `conformance-vectors/FORMAT.md`) is a strict superset of ThrottleKit 1.5.2's
//! golden vectors. Parsing is strict — an unknown field is an error — so a typo in a vectors
//! file cannot silently turn an assertion off. [`replay`] runs a file against fresh stores from
//! a factory and reports one result per op.

use std::fmt::Write as _;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use crate::clock::ManualClock;
use crate::decision::{Decision, Reservation};
use crate::error::{Error, ErrorCode, Result};
use crate::limiter::{FailPolicy, Limiter};
use crate::multi::{Dimension, MultiLimiter};
use crate::shaper::Shaper;
use crate::spec::{LeakyBucketOptions, StrategySpec};
use crate::store::{Rule, Store};
use crate::strategy::Strategy;
use crate::validate;

/// A vectors file.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VectorFile {
    /// Upstream metadata.
    #[serde(default)]
    pub contract_version: Option<String>,
    /// Upstream metadata.
    #[serde(default)]
    pub generated_from: Option<String>,
    /// Upstream metadata.
    #[serde(default)]
    pub frozen: Option<bool>,
    /// Upstream metadata.
    #[serde(default)]
    pub decision_fields: Option<Vec<String>>,
    /// Provenance note.
    #[serde(default)]
    pub note: Option<String>,
    /// What the file covers.
    #[serde(default)]
    pub description: Option<String>,
    /// The suites.
    pub suites: Vec<Suite>,
}

/// What a suite exercises.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Primitive {
    /// A [`Limiter`] over one strategy.
    #[default]
    RateLimit,
    /// A [`MultiLimiter`].
    Multi,
    /// A [`Shaper`].
    Shaper,
}

/// One dimension of a multi suite.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DimensionVector {
    /// Its name.
    pub name: String,
    /// Its strategy spec (kept raw so invalid specs can be tested).
    pub strategy: Value,
    /// Its cost multiplier (default 1).
    #[serde(default)]
    pub cost_multiplier: Option<f64>,
}

/// One suite: a fresh limiter on a fresh store, and a timeline of ops.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Suite {
    /// Stable identifier.
    #[serde(default)]
    pub id: Option<String>,
    /// Upstream identifier.
    #[serde(default)]
    pub name: Option<String>,
    /// Why the expectations are what they are.
    #[serde(default)]
    pub comment: Option<String>,
    /// What is exercised.
    #[serde(default)]
    pub primitive: Primitive,
    /// `rateLimit`: the strategy spec (raw, so invalid specs can be tested).
    #[serde(default)]
    pub strategy: Option<Value>,
    /// `shaper`: the shaper options (raw).
    #[serde(default)]
    pub shaper: Option<Value>,
    /// `multi`: the rule.
    #[serde(default)]
    pub rule: Option<Rule>,
    /// `multi`: the dimensions.
    #[serde(default)]
    pub dimensions: Option<Vec<DimensionVector>>,
    /// The key of every op.
    #[serde(default)]
    pub key: Option<String>,
    /// `multi`: one key per dimension.
    #[serde(default)]
    pub keys: Option<Vec<String>>,
    /// The limiter prefix.
    #[serde(default)]
    pub prefix: Option<String>,
    /// Building the limiter must fail with this code.
    #[serde(default)]
    pub expect_error: Option<String>,
    /// The timeline.
    #[serde(default)]
    pub ops: Vec<Op>,
}

/// What an op does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum OpKind {
    /// A consuming check.
    Check,
    /// Current capacity.
    Peek,
    /// A non-consuming check.
    Forecast,
    /// Forget the key.
    Reset,
    /// A shaper reservation.
    Reserve,
}

/// One op of a timeline.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Op {
    /// Epoch ms.
    pub now: f64,
    /// What to do (default: check, or reserve for shapers).
    #[serde(default)]
    pub op: Option<OpKind>,
    /// The cost (default 1), as a raw number so bad costs can be tested.
    #[serde(default)]
    pub cost: Option<f64>,
    /// Overrides the suite's key.
    #[serde(default)]
    pub key: Option<String>,
    /// Overrides the suite's keys (multi).
    #[serde(default)]
    pub keys: Option<Vec<String>>,
    /// The expected result.
    #[serde(default)]
    pub expect: Option<Expect>,
    /// The op must fail with this code.
    #[serde(default)]
    pub expect_error: Option<String>,
    /// Optional note.
    #[serde(default)]
    pub comment: Option<String>,
}

/// Expected fields; each one present is compared exactly.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Expect {
    /// Decision field.
    pub allowed: Option<bool>,
    /// Decision field.
    pub limit: Option<i64>,
    /// Decision field.
    pub remaining: Option<i64>,
    /// Decision field.
    pub reset_at: Option<i64>,
    /// Decision field.
    pub retry_after_ms: Option<i64>,
    /// Multi: the binding dimension's name.
    pub binding: Option<String>,
    /// Reservation field.
    pub accepted: Option<bool>,
    /// Reservation field.
    pub delay_ms: Option<i64>,
}

/// What an op produced, in the shape of [`Expect`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Got {
    /// A decision (and for multi, the binding dimension).
    Decision(Decision, Option<String>),
    /// A reservation.
    Reservation(Reservation),
    /// A reset.
    Done,
    /// An error code.
    Error(ErrorCode, String),
}

impl Expect {
    /// Whether `got` matches every present field.
    pub fn matches(&self, got: &Got) -> bool {
        fn eq<T: PartialEq>(want: &Option<T>, got: T) -> bool {
            want.as_ref().is_none_or(|w| *w == got)
        }
        match got {
            Got::Decision(d, binding) => {
                self.accepted.is_none()
                    && self.delay_ms.is_none()
                    && eq(&self.allowed, d.allowed)
                    && eq(&self.limit, d.limit)
                    && eq(&self.remaining, d.remaining)
                    && eq(&self.reset_at, d.reset_at)
                    && eq(&self.retry_after_ms, d.retry_after_ms)
                    && self.binding.as_ref().is_none_or(|b| Some(b) == binding.as_ref())
            }
            Got::Reservation(r) => {
                *self == Expect { accepted: self.accepted, delay_ms: self.delay_ms, ..Expect::default() }
                    && eq(&self.accepted, r.accepted)
                    && eq(&self.delay_ms, r.delay_ms)
            }
            Got::Done | Got::Error(..) => false,
        }
    }
}

impl std::fmt::Display for Got {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Got::Decision(d, b) => {
                write!(
                    f,
                    "{{allowed: {}, limit: {}, remaining: {}, resetAt: {}, retryAfterMs: {}",
                    d.allowed, d.limit, d.remaining, d.reset_at, d.retry_after_ms
                )?;
                if let Some(b) = b {
                    write!(f, ", binding: {b:?}")?;
                }
                f.write_str("}")
            }
            Got::Reservation(r) => write!(f, "{{accepted: {}, delayMs: {}}}", r.accepted, r.delay_ms),
            Got::Done => f.write_str("done"),
            Got::Error(code, msg) => write!(f, "error {code} ({msg})"),
        }
    }
}

impl Suite {
    /// The identifier printed on failure: `id`, else `name`, else `#index`.
    pub fn label(&self, index: usize) -> String {
        self.id.clone().or_else(|| self.name.clone()).unwrap_or_else(|| format!("#{index}"))
    }
}

/// The top-level `format` field of a vectors file, if it has one: how a runner tells the HTTP
/// and adaptive files from the decision vectors (which have none).
pub fn file_format(text: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Probe {
        format: Option<String>,
    }
    serde_json::from_str::<Probe>(text).ok().and_then(|p| p.format)
}

/// Parses a vectors file strictly.
pub fn parse(text: &str) -> Result<VectorFile> {
    serde_json::from_str(text).map_err(|e| Error::config("vectors", &format!("file is not valid: {e}")))
}

/// Builds a strategy from a raw spec value, mapping every problem to `config_invalid`.
pub fn strategy_from_value(v: &Value) -> Result<Strategy> {
    let spec: StrategySpec = serde_json::from_value(v.clone())
        .map_err(|e| Error::config("strategy", &format!("is not a valid spec: {e}")))?;
    spec.build()
}

/// The outcome of replaying vectors.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Ops (and `expectError` suites) that matched.
    pub passed: usize,
    /// Ops that did not.
    pub failed: usize,
    /// One line per failure: suite, op index, expected, got.
    pub failures: Vec<String>,
}

impl Report {
    /// Adds another report's counts.
    pub fn merge(&mut self, other: Report) {
        self.passed += other.passed;
        self.failed += other.failed;
        self.failures.extend(other.failures);
    }

    /// The closing line every runner prints: `N passed, M failed`.
    pub fn summary(&self) -> String {
        format!("{} passed, {} failed", self.passed, self.failed)
    }
}

enum Subject {
    Limiter(Limiter, String),
    Multi(MultiLimiter, Vec<String>),
    Shaper(Shaper, String),
}

fn build(suite: &Suite, store: Arc<dyn Store>, clock: &ManualClock) -> Result<Subject> {
    let prefix = suite.prefix.clone().unwrap_or_default();
    let clock: Arc<dyn crate::Clock> = Arc::new(clock.clone());
    match suite.primitive {
        Primitive::RateLimit => {
            let spec = suite.strategy.as_ref().ok_or_else(|| Error::config("strategy", "is required"))?;
            let strategy = strategy_from_value(spec)?;
            // A store that fails is an error here, with its message (`Got::Error`), never the
            // store's fail policy: a fallback decision read as a wrong answer with no cause (a
            // RESP call timed out on a loaded machine and the REST-vs-RESP comparison failed
            // showing only two decisions, one with `fallback: true`).
            let limiter = Limiter::builder(strategy)
                .store(store)
                .clock(clock)
                .prefix(prefix)
                .fail_policy(FailPolicy::Raise)
                .build();
            Ok(Subject::Limiter(limiter, suite.key.clone().unwrap_or_default()))
        }
        Primitive::Shaper => {
            let raw = suite.shaper.as_ref().ok_or_else(|| Error::config("shaper", "is required"))?;
            let options: LeakyBucketOptions = serde_json::from_value(raw.clone())
                .map_err(|e| Error::config("shaper", &format!("is not valid: {e}")))?;
            let shaper = Shaper::new(&options)?.with_store(store).with_clock(clock).with_prefix(prefix);
            Ok(Subject::Shaper(shaper, suite.key.clone().unwrap_or_default()))
        }
        Primitive::Multi => {
            let rule = suite.rule.ok_or_else(|| Error::config("rule", "is required"))?;
            let dims = suite.dimensions.as_ref().ok_or_else(|| Error::config("dimensions", "is required"))?;
            let dims = dims
                .iter()
                .map(|d| {
                    let m =
                        validate::integer_at_least("dimensions.costMultiplier", d.cost_multiplier.unwrap_or(1.0), 1.0)?;
                    Ok(Dimension::new(d.name.clone(), strategy_from_value(&d.strategy)?).cost_multiplier(m as u64))
                })
                .collect::<Result<Vec<_>>>()?;
            let multi = MultiLimiter::new(rule, dims)?.with_store(store).with_clock(clock).with_prefix(prefix);
            Ok(Subject::Multi(multi, suite.keys.clone().unwrap_or_default()))
        }
    }
}

fn run_op(subject: &Subject, op: &Op, clock: &ManualClock) -> Result<Got> {
    clock.set(validate::now_from_f64(op.now)?);
    let cost = || validate::cost_from_f64(op.cost.unwrap_or(1.0));
    match subject {
        Subject::Limiter(limiter, key) => {
            let key = op.key.as_deref().unwrap_or(key);
            let d = match op.op.unwrap_or(OpKind::Check) {
                OpKind::Check => limiter.check_sync(key, cost()?)?,
                OpKind::Peek => limiter.peek_sync(key)?,
                OpKind::Forecast => limiter.forecast_sync(key, cost()?)?,
                OpKind::Reset => {
                    limiter.reset_sync(key)?;
                    return Ok(Got::Done);
                }
                OpKind::Reserve => return Err(Error::not_implemented("reserve on a rate limiter")),
            };
            Ok(Got::Decision(d, None))
        }
        Subject::Shaper(shaper, key) => {
            let key = op.key.as_deref().unwrap_or(key);
            match op.op.unwrap_or(OpKind::Reserve) {
                OpKind::Reserve => Ok(Got::Reservation(shaper.reserve_sync(key, cost()?)?)),
                OpKind::Reset => {
                    shaper.reset_sync(key)?;
                    Ok(Got::Done)
                }
                other => Err(Error::not_implemented(&format!("{other:?} on a shaper"))),
            }
        }
        Subject::Multi(multi, keys) => {
            let keys: Vec<&str> = op.keys.as_ref().unwrap_or(keys).iter().map(String::as_str).collect();
            match op.op.unwrap_or(OpKind::Check) {
                OpKind::Check => {
                    let m = multi.check_sync(&keys, cost()?)?;
                    Ok(Got::Decision(m.decision, Some(m.binding)))
                }
                OpKind::Reset => {
                    multi.reset_sync(&keys)?;
                    Ok(Got::Done)
                }
                other => Err(Error::not_implemented(&format!("{other:?} on a multi limiter"))),
            }
        }
    }
}

/// Runs one suite on `store`: what each op returned, in order. `Err` when the limiter could
/// not be built (which an `expectError` suite expects).
pub fn run_suite(suite: &Suite, store: Arc<dyn Store>) -> Result<Vec<Got>> {
    let clock = ManualClock::new(0);
    let subject = build(suite, store, &clock)?;
    Ok(suite
        .ops
        .iter()
        .map(|op| run_op(&subject, op, &clock).unwrap_or_else(|e| Got::Error(e.code(), e.message().to_string())))
        .collect())
}

fn op_passes(op: &Op, got: &Got) -> bool {
    match (&op.expect_error, &op.expect, got) {
        (Some(want), _, Got::Error(code, _)) => code.as_str() == want,
        (Some(_), _, _) => false,
        (None, Some(expect), got) => expect.matches(got),
        (None, None, got) => !matches!(got, Got::Error(..)),
    }
}

/// Replays every suite of `file`, each on a fresh store from `new_store`.
pub fn replay(file: &VectorFile, new_store: &mut dyn FnMut() -> Result<Arc<dyn Store>>) -> Report {
    let mut report = Report::default();
    for (index, suite) in file.suites.iter().enumerate() {
        let label = suite.label(index);
        let outcome = new_store().and_then(|store| run_suite(suite, store));
        let gots = match (outcome, &suite.expect_error) {
            (Err(e), Some(want)) if e.code().as_str() == want => {
                report.passed += 1;
                continue;
            }
            (Err(e), want) => {
                report.failed += suite.ops.len().max(1);
                let want = want.as_deref().unwrap_or("a limiter");
                report.failures.push(format!("{label}: setup: expected {want}, got error {e}"));
                continue;
            }
            (Ok(_), Some(want)) => {
                report.failed += 1;
                report.failures.push(format!("{label}: setup: expected error {want}, got a limiter"));
                continue;
            }
            (Ok(gots), None) => gots,
        };
        for (i, (op, got)) in suite.ops.iter().zip(&gots).enumerate() {
            if op_passes(op, got) {
                report.passed += 1;
                continue;
            }
            report.failed += 1;
            let mut line = format!("{label}: op {i} (now {}): expected ", op.now);
            match (&op.expect_error, &op.expect) {
                (Some(code), _) => write!(line, "error {code}").ok(),
                (None, Some(e)) => write!(line, "{e:?}").ok(),
                (None, None) => write!(line, "no error").ok(),
            };
            write!(line, ", got {got}").ok();
            report.failures.push(line);
        }
    }
    report
}

/// Reads, parses and replays the file at `path`: a decisions file, or an HTTP vectors file
/// (recognised by its `"format": "throttlekit-http/1"`).
pub fn replay_path(path: &std::path::Path, new_store: &mut dyn FnMut() -> Result<Arc<dyn Store>>) -> Result<Report> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::config("vectors", &format!("file {} could not be read: {e}", path.display())))?;
    if crate::http::vectors::is_http_vectors(&text) {
        // HTTP vectors (header lines, client keys) need no store.
        return Ok(crate::http::vectors::replay(&crate::http::vectors::parse(&text)?));
    }
    if crate::concurrency::vectors::is_adaptive_vectors(&text) {
        // Adaptive concurrency timelines need no store either.
        return Ok(crate::concurrency::vectors::replay(&crate::concurrency::vectors::parse(&text)?));
    }
    Ok(replay(&parse(&text)?, new_store))
}
