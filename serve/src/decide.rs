//! One `ShouldRateLimit` request, decided: match each descriptor, hand every limit to core in
//! one multi apply, and turn core's decisions back into per-descriptor statuses.
//!
//! This module converts; core decides. All descriptors of a request go to the store in one
//! fused multi apply, core's [`multi::apply_calls`] (what every strict check of core's
//! `MultiLimiter` runs: one round trip on Redis, one Lua script, the fail policy's fallback for
//! every limit when the store cannot answer), under [`Rule::All`]: when
//! one limit refuses, no limit is charged. Every key of a request carries the domain as its
//! Redis Cluster hash tag, so the keys of one request always share a slot and the guarantee
//! holds on a cluster too (the price: one domain's counters live on one shard).
//!
//! When the enforced apply refuses under [`Rule::All`], nothing was charged, so each limit that
//! would have admitted is read again with core's peek (a read that charges nothing, at the same
//! instant) and reports what it has left, not the charge the multi apply would have made.
//!
//! Shadow-mode descriptors are decided in a second apply under [`Rule::Any`], so a limit that
//! never refuses cannot stop the enforced ones from being charged. `count_rejected` decides
//! the enforced limits under [`Rule::Any`] as well: each limit that admits is charged even when
//! another refuses, as envoyproxy/ratelimit charges every descriptor.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use futures_util::future::join_all;
use throttlekit::http::{HeaderOptions, LimitStatus, rate_limit_headers, reset_seconds};
use throttlekit::multi::{self, binding};
use throttlekit::store::{DimensionCall, Now, Rule, Transform};
use throttlekit::{Clock, Decision, Error, ErrorCode, FailPolicy, Store};

use crate::config::{Config, LimitDef, LimitSet, Unit};
use crate::matching;

/// A request descriptor, as the gRPC and HTTP doors hand it over.
#[derive(Clone, Debug, Default)]
pub struct DescriptorIn {
    /// `(key, value)` entries, in order.
    pub entries: Vec<(String, String)>,
    /// Envoy's limit override: `(requests_per_unit, unit proto number)`.
    pub limit_override: Option<(u32, i32)>,
    /// The descriptor's own `hits_addend` (0: look without consuming).
    pub hits_addend: Option<u64>,
    /// `is_negative_hits` (a refund), which core has no operation for.
    pub negative_hits: bool,
}

/// A request, as the doors hand it over.
#[derive(Clone, Debug, Default)]
pub struct RequestIn {
    /// The config domain.
    pub domain: String,
    /// The descriptors.
    pub descriptors: Vec<DescriptorIn>,
    /// The request's `hits_addend` (0 means 1, as the proto says).
    pub hits_addend: u32,
}

/// A descriptor's status code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    /// Under the limit (or no limit).
    Ok,
    /// Over the limit.
    OverLimit,
}

/// The limit a status reports (`current_limit`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CurrentLimit {
    /// The limit's name ("" when it has none).
    pub name: String,
    /// Requests per unit (or per period).
    pub requests_per_unit: u32,
    /// The unit, `None` when the period is not one unit (reported as UNKNOWN).
    pub unit: Option<Unit>,
}

/// One descriptor's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusOut {
    /// OK or OVER_LIMIT.
    pub code: Code,
    /// The binding limit; `None` when no limit applies.
    pub current_limit: Option<CurrentLimit>,
    /// Units left under the binding limit; `u32::MAX` for `unlimited: true` (as
    /// envoyproxy/ratelimit answers), 0 when no limit applies.
    pub limit_remaining: u32,
    /// Whole seconds until the binding limit resets, rounded up (core's
    /// [`reset_seconds`]): for a fixed window, envoyproxy/ratelimit's `unit - now_s % unit`,
    /// never 0. `None` without a limit.
    pub duration_until_reset_s: Option<i64>,
}

/// A request's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// OVER_LIMIT when any enforced descriptor is over (never under global shadow mode).
    pub overall: Code,
    /// One status per request descriptor, in order.
    pub statuses: Vec<StatusOut>,
    /// `response_headers_to_add`: core's rate-limit fields, when enabled.
    pub headers: Vec<(String, String)>,
    /// Descriptors over a shadow-mode limit (let through): for metrics and logs.
    pub shadow_over: usize,
    /// Whether the store failed and the fail policy answered.
    pub fallback: bool,
}

/// Why a request got no decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecideError {
    /// The request is malformed or too large (gRPC INVALID_ARGUMENT).
    Invalid(String),
    /// The store could not answer and the fail policy is `unavailable` (gRPC UNAVAILABLE).
    Unavailable(String),
    /// Anything else core refused (gRPC INTERNAL), with core's stable code.
    Internal(String),
}

/// Bounds on what one request may carry: a hostile request gets an error, never an unbounded
/// allocation.
#[derive(Clone, Copy, Debug)]
pub struct RequestLimits {
    /// Descriptors per request.
    pub max_descriptors: usize,
    /// Entries per descriptor.
    pub max_entries: usize,
    /// Bytes per key or value.
    pub max_value_bytes: usize,
}

impl Default for RequestLimits {
    fn default() -> RequestLimits {
        RequestLimits { max_descriptors: 64, max_entries: 32, max_value_bytes: 4096 }
    }
}

/// What the store failing turns into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailMode {
    /// gRPC UNAVAILABLE: Envoy's `failure_mode_deny` decides (the default).
    Unavailable,
    /// Every limit admits (flagged as a fallback).
    Allow,
    /// Every limit refuses.
    Deny,
}

impl FailMode {
    /// Parses `unavailable`, `allow` or `deny`.
    pub fn parse(s: &str) -> Option<FailMode> {
        Some(match s {
            "unavailable" => FailMode::Unavailable,
            "allow" => FailMode::Allow,
            "deny" => FailMode::Deny,
            _ => return None,
        })
    }

    fn policy(self) -> FailPolicy {
        match self {
            FailMode::Unavailable => FailPolicy::Raise,
            FailMode::Allow => FailPolicy::FailOpen,
            FailMode::Deny => FailPolicy::FailClosed,
        }
    }
}

/// The service's decision engine: the store, the clock and the policies.
pub struct Decider {
    /// Where counters live.
    pub store: Arc<dyn Store>,
    /// The clock every request reads once.
    pub clock: Arc<dyn Clock>,
    /// The key prefix.
    pub prefix: String,
    /// The store-failure policy.
    pub fail: FailMode,
    /// Global shadow mode: decide and charge as usual, answer OK.
    pub shadow_global: bool,
    /// Charge the limits that admit even when another refuses (envoyproxy/ratelimit's counting).
    pub count_rejected: bool,
    /// Rate-limit response fields to add, `None` for none.
    pub headers: Option<HeaderOptions>,
    /// Request bounds.
    pub limits: RequestLimits,
}

/// One limit that applies to a request descriptor.
struct Applied {
    descriptor: usize,
    set: Arc<LimitSet>,
    limit: usize,
    key: String,
    cost: u64,
    /// The same counter met earlier in this request: decided once, under that one.
    twin: Option<usize>,
}

impl Applied {
    fn def(&self) -> &LimitDef {
        &self.set.limits[self.limit]
    }

    fn group(&self) -> Group {
        if self.cost == 0 && self.twin.is_none() {
            Group::Look
        } else if self.set.shadow_mode {
            Group::Shadow
        } else {
            Group::Enforced
        }
    }
}

/// Which apply decides a limit: the enforced multi apply, the shadow one, or a look (a
/// `hits_addend` of 0, decided alone without charging).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Group {
    Enforced,
    Shadow,
    Look,
}

fn invalid(msg: impl Into<String>) -> DecideError {
    DecideError::Invalid(msg.into())
}

impl Decider {
    /// Checks `req` against the bounds before any work.
    pub fn validate(&self, req: &RequestIn) -> Result<(), DecideError> {
        let l = &self.limits;
        if req.domain.is_empty() {
            return Err(invalid("rate limit domain must not be empty"));
        }
        if req.domain.len() > l.max_value_bytes {
            return Err(invalid(format!("domain is longer than {} bytes", l.max_value_bytes)));
        }
        if req.descriptors.is_empty() {
            return Err(invalid("rate limit descriptor list must not be empty"));
        }
        if req.descriptors.len() > l.max_descriptors {
            return Err(invalid(format!(
                "{} descriptors in one request; at most {} are accepted",
                req.descriptors.len(),
                l.max_descriptors
            )));
        }
        for (i, d) in req.descriptors.iter().enumerate() {
            if d.entries.is_empty() {
                return Err(invalid(format!("descriptors[{i}] has no entries")));
            }
            if d.entries.len() > l.max_entries {
                return Err(invalid(format!("descriptors[{i}] has more than {} entries", l.max_entries)));
            }
            if let Some((j, _)) = d
                .entries
                .iter()
                .enumerate()
                .find(|(_, (k, v))| k.len() > l.max_value_bytes || v.len() > l.max_value_bytes)
            {
                return Err(invalid(format!(
                    "descriptors[{i}].entries[{j}]: a key or value is longer than {} bytes",
                    l.max_value_bytes
                )));
            }
            if d.negative_hits {
                return Err(invalid(format!("descriptors[{i}]: is_negative_hits (a refund) is not supported")));
            }
        }
        Ok(())
    }

    /// Decides `req` against `config`.
    pub async fn decide(&self, config: &Config, req: &RequestIn) -> Result<Outcome, DecideError> {
        self.validate(req)?;
        let now = self.clock.now_ms();
        let (applied, unlimited) = self.resolve(config, req)?;

        // Split (by `Group`, without collecting the groups): charged (cost > 0) enforced,
        // charged shadow, and looks (hits_addend 0).
        let mut decisions: Vec<Option<Decision>> = vec![None; applied.len()];
        let mut fallback = false;
        let rule = if self.count_rejected { Rule::Any } else { Rule::All };
        fallback |= self.apply(&applied, Group::Enforced, rule, now, &mut decisions).await?;
        fallback |= self.apply(&applied, Group::Shadow, Rule::Any, now, &mut decisions).await?;
        for (i, a) in applied.iter().enumerate() {
            if a.group() != Group::Look {
                continue;
            }
            let d = match self.peek(a, now).await {
                Ok(d) => d,
                Err(e) => {
                    fallback = true;
                    self.fallback(e, a.def(), now)?
                }
            };
            decisions[i] = Some(d);
        }
        Ok(self.outcome(req, &applied, &unlimited, &decisions, now, fallback))
    }

    /// What `a`'s limit has left at `now`, charging nothing (core's peek).
    async fn peek(&self, a: &Applied, now: i64) -> throttlekit::Result<Decision> {
        self.store.apply(&a.key, Now::At(now), Transform::Peek { strategy: &a.def().strategy }).await?.decision()
    }

    /// After a refusal under [`Rule::All`] (nothing charged): each limit in `admitted` reports
    /// what it has left, read by core's peek at the same instant, instead of the multi apply's
    /// would-be charge (10 left, not 9). Its code stays the multi apply's (it admitted). A peek
    /// the store cannot answer leaves that limit's multi decision: the request's answer is
    /// already decided and a report must not turn it into an error.
    async fn report_uncharged(
        &self,
        applied: &[Applied],
        admitted: Vec<usize>,
        now: i64,
        out: &mut [Option<Decision>],
    ) {
        let peeks = join_all(admitted.iter().map(|&i| self.peek(&applied[i], now))).await;
        for (i, peeked) in admitted.into_iter().zip(peeks) {
            if let (Ok(p), Some(d)) = (peeked, out[i].as_mut()) {
                d.remaining = p.remaining;
                d.reset_at = p.reset_at;
            }
        }
    }

    /// Matches every descriptor, applies `replaces`, and lays out the limits to decide, with
    /// which descriptors matched `unlimited: true`. An `unlimited` limit, like no limit,
    /// contributes nothing to decide.
    fn resolve(&self, config: &Config, req: &RequestIn) -> Result<(Vec<Applied>, Vec<bool>), DecideError> {
        let tag = hash_tag(&req.domain);
        let mut sets: Vec<Option<(Arc<LimitSet>, String)>> = Vec::with_capacity(req.descriptors.len());
        for (i, d) in req.descriptors.iter().enumerate() {
            let entries = &d.entries;
            let counter = || entries.iter().map(|(k, v)| format!("{k}_{v}")).collect::<Vec<_>>().join(".");
            sets.push(match d.limit_override {
                Some((rpu, unit)) => {
                    let unit = Unit::from_proto(unit)
                        .ok_or_else(|| invalid(format!("descriptors[{i}].limit: unknown unit {unit}")))?;
                    let def = LimitDef::from_override(rpu, unit)
                        .map_err(|m| invalid(format!("descriptors[{i}].limit: {m}")))?;
                    let set = LimitSet {
                        limits: vec![def],
                        unlimited: false,
                        replaces: Vec::new(),
                        shadow_mode: false,
                        origin: "request override".into(),
                    };
                    Some((Arc::new(set), counter()))
                }
                None => matching::find(config, &req.domain, entries).map(|m| (m.limits.clone(), m.counter)),
            });
        }
        let unlimited: Vec<bool> = sets.iter().map(|s| s.as_ref().is_some_and(|(set, _)| set.unlimited)).collect();
        let replaced: HashSet<&str> =
            sets.iter().flatten().flat_map(|(s, _)| s.replaces.iter().map(String::as_str)).collect();
        let request_hits = u64::from(req.hits_addend.max(1));
        let mut applied: Vec<Applied> = Vec::new();
        // Each key's latest entry that is not a twin. A few descriptors (the common request)
        // find it by a scan of `applied`, which hashes and copies no key; many use a map.
        let use_map = req.descriptors.len() > 8;
        let mut by_key: HashMap<String, usize> = HashMap::new();
        for (i, entry) in sets.iter().enumerate() {
            let Some((set, counter)) = entry else { continue };
            let hits = req.descriptors[i].hits_addend.unwrap_or(request_hits);
            for (j, def) in set.limits.iter().enumerate() {
                if def.name.as_deref().is_some_and(|n| replaced.contains(n)) {
                    continue;
                }
                // A zero limit refuses every hit: one more than its one-unit window holds.
                let cost = if def.blocks_all && hits > 0 { hits.saturating_mul(2) } else { hits };
                // `prefix:{tag}:counter:suffix`: core's join of the prefix (`key::join_into`,
                // the one format every store uses) followed by the body, built in one
                // allocation without `format!` (2% of serve's instructions on Redis at 64
                // streams went to formatting it).
                let body_len = tag.len() + counter.len() + def.key_suffix.len() + 4;
                let mut key = String::with_capacity(throttlekit::key::joined_len(&self.prefix, "") + body_len);
                throttlekit::key::join_into(&mut key, &self.prefix, "");
                key.push('{');
                key.push_str(&tag);
                key.push_str("}:");
                key.push_str(counter);
                key.push(':');
                key.push_str(&def.key_suffix);
                let latest = if use_map {
                    by_key.get(&key).copied()
                } else {
                    applied.iter().rposition(|a| a.twin.is_none() && a.key == key)
                };
                if let Some(k) = latest {
                    // The same counter twice in one request (Envoy sent a descriptor twice):
                    // one dimension charged with both costs, as two increments would be.
                    if applied[k].cost > 0 && cost > 0 && applied[k].set.shadow_mode == set.shadow_mode {
                        applied[k].cost = applied[k].cost.saturating_add(cost);
                        applied.push(Applied { descriptor: i, set: set.clone(), limit: j, key, cost, twin: Some(k) });
                        continue;
                    }
                }
                if use_map {
                    by_key.insert(key.clone(), applied.len());
                }
                applied.push(Applied { descriptor: i, set: set.clone(), limit: j, key, cost, twin: None });
            }
        }
        Ok((applied, unlimited))
    }

    /// One multi apply over the limits of `group`; fills `out`. Returns whether the fail
    /// policy answered.
    async fn apply(
        &self,
        applied: &[Applied],
        group: Group,
        rule: Rule,
        now: i64,
        out: &mut [Option<Decision>],
    ) -> Result<bool, DecideError> {
        let idx = || (0..applied.len()).filter(move |&i| applied[i].group() == group);
        let live = idx().filter(|&i| applied[i].twin.is_none());
        let calls: Vec<DimensionCall<'_>> = live
            .clone()
            .map(|i| DimensionCall {
                key: &applied[i].key,
                strategy: &applied[i].def().strategy,
                cost: applied[i].cost,
            })
            .collect();
        if calls.is_empty() {
            return Ok(false);
        }
        let reply =
            multi::apply_calls(&*self.store, rule, &calls, Now::At(now), &*self.clock, self.fail.policy(), None)
                .await
                .map_err(decide_error)?;
        // The fail policy's answer stands for every limit; a reply from the store is each
        // limit's own decision: under `all`, a limit that would have admitted reports OK even
        // when another refused (and nothing was charged).
        let fell_back = reply.decisions.first().is_some_and(|d| d.fallback);
        for (i, d) in live.clone().zip(&reply.decisions) {
            out[i] = Some(*d);
        }
        if rule == Rule::All && !reply.allowed && !fell_back {
            let admitted: Vec<usize> = live.filter(|&i| out[i].is_some_and(|d| d.allowed)).collect();
            self.report_uncharged(applied, admitted, now, out).await;
        }
        // A merged duplicate reads its twin's decision.
        for i in idx() {
            if let Some(t) = applied[i].twin {
                out[i] = out[t];
            }
        }
        Ok(fell_back)
    }

    fn fallback(&self, e: Error, def: &LimitDef, now: i64) -> Result<Decision, DecideError> {
        self.fail.policy().fallback(e, def.strategy.limit(), now).map_err(decide_error)
    }

    fn outcome(
        &self,
        req: &RequestIn,
        applied: &[Applied],
        unlimited: &[bool],
        decisions: &[Option<Decision>],
        now: i64,
        fallback: bool,
    ) -> Outcome {
        let mut statuses = Vec::with_capacity(req.descriptors.len());
        let mut shadow_over = 0;
        let mut header_limits: Vec<(usize, Decision)> = Vec::new();
        // A descriptor's limits, gathered only when it has more than one (one is the common
        // request, and then nothing is collected).
        let mut mine: Vec<(usize, Decision)> = Vec::new();
        let mut ds: Vec<Decision> = Vec::new();
        // `unlimited` has one entry per request descriptor.
        for (i, &is_unlimited) in unlimited.iter().enumerate() {
            let mut limits = applied
                .iter()
                .enumerate()
                .filter(|(_, a)| a.descriptor == i)
                .filter_map(|(k, _)| decisions[k].map(|d| (k, d)));
            let Some(first) = limits.next() else {
                // No limit, an `unlimited` one, or every limit replaced: OK, no limit reported.
                // `unlimited` reports u32::MAX left, as envoyproxy/ratelimit does (0 would read
                // as "nothing left"); no limit reports 0, as theirs does.
                statuses.push(StatusOut {
                    code: Code::Ok,
                    current_limit: None,
                    limit_remaining: if is_unlimited { u32::MAX } else { 0 },
                    duration_until_reset_s: None,
                });
                continue;
            };
            mine.clear();
            let (k, d) = match limits.next() {
                None => first,
                Some(second) => {
                    mine.push(first);
                    mine.push(second);
                    mine.extend(limits);
                    ds.clear();
                    ds.extend(mine.iter().map(|(_, d)| *d));
                    let admitted = ds.iter().all(|d| d.allowed);
                    mine[binding(Rule::All, admitted, &ds)]
                }
            };
            let def = applied[k].def();
            let over = !d.allowed;
            let shadowed = applied[k].set.shadow_mode;
            if over && shadowed {
                shadow_over += 1;
            }
            if !shadowed && self.headers.is_some() {
                if mine.is_empty() {
                    header_limits.push(first);
                } else {
                    header_limits.extend(mine.iter().copied());
                }
            }
            statuses.push(StatusOut {
                code: if over && !shadowed { Code::OverLimit } else { Code::Ok },
                current_limit: Some(CurrentLimit {
                    name: def.name.clone().unwrap_or_default(),
                    requests_per_unit: u32::try_from(def.requests_per_unit).unwrap_or(u32::MAX),
                    unit: def.unit,
                }),
                limit_remaining: if def.blocks_all { 0 } else { u32::try_from(d.remaining.max(0)).unwrap_or(u32::MAX) },
                duration_until_reset_s: Some(reset_seconds(&d, now)),
            });
        }
        let any_over = statuses.iter().any(|s| s.code == Code::OverLimit);
        let overall = if any_over && !self.shadow_global { Code::OverLimit } else { Code::Ok };
        let headers = self.headers(applied, &header_limits, now);
        Outcome { overall, statuses, headers, shadow_over, fallback }
    }

    /// Core's rate-limit fields for the enforced limits, the binding one first.
    fn headers(&self, applied: &[Applied], limits: &[(usize, Decision)], now: i64) -> Vec<(String, String)> {
        let Some(options) = &self.headers else { return Vec::new() };
        if limits.is_empty() {
            return Vec::new();
        }
        let ds: Vec<Decision> = limits.iter().map(|(_, d)| *d).collect();
        let admitted = ds.iter().all(|d| d.allowed);
        let b = binding(Rule::All, admitted, &ds);
        let mut order = vec![b];
        order.extend((0..limits.len()).filter(|&i| i != b));
        let statuses: Vec<LimitStatus> = order
            .iter()
            .map(|&i| {
                let (k, d) = limits[i];
                let def = applied[k].def();
                LimitStatus { name: def.name.clone(), key: None, policy: def.strategy.http_policy(), decision: d }
            })
            .collect();
        match rate_limit_headers(&statuses, options, now) {
            Ok(lines) => lines.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            Err(_) => Vec::new(),
        }
    }
}

/// A core error the fail policy did not answer, as the doors report it.
fn decide_error(e: Error) -> DecideError {
    match e.code() {
        ErrorCode::StoreUnavailable => DecideError::Unavailable(e.to_string()),
        ErrorCode::ConfigInvalid => DecideError::Invalid(e.to_string()),
        _ => DecideError::Internal(e.to_string()),
    }
}

/// The Redis Cluster hash tag of a domain's keys: every key of one request shares it, so the
/// fused multi script runs on one node. Braces would end the tag early, so they are replaced.
fn hash_tag(domain: &str) -> Cow<'_, str> {
    if domain.contains(['{', '}']) { Cow::Owned(domain.replace(['{', '}'], "_")) } else { Cow::Borrowed(domain) }
}
