//! # throttlekit
//!
//! One rate-limiting core — GCRA (the default), token bucket, fixed window, sub-bucketed
//! sliding window, sliding-window log, calendar quota, a leaky-bucket shaper, and atomic
//! multi-dimensional `all`/`any` — that decides the same way in process (the [`MemoryStore`])
//! and atomically across a fleet (the Redis store, whose Lua scripts compute the identical
//! decision in one round trip).
//!
//! ```
//! use throttlekit::{Limiter, Strategy};
//!
//! // 100 requests a minute, bursts of 10.
//! let limiter = Limiter::new(Strategy::gcra(100, 60_000, Some(10))?);
//! let d = limiter.check_sync("user:42", 1)?;
//! assert!(d.allowed);
//! assert_eq!(d.limit, 10);
//! assert_eq!(d.remaining, 9);
//! # Ok::<(), throttlekit::Error>(())
//! ```
//!
//! The moving parts are small and separate: an algorithm is a pure transition over a key's
//! [`State`]; a [`Store`] applies one transition atomically; a [`Clock`] is injected; a
//! [`Limiter`] wires the three together with a key prefix. A denied request never consumes.
#![warn(missing_docs)]
// The WebAssembly build (bindings-wasm/build.sh, always with RUSTC_BOOTSTRAP=1) compiles the
// crate for size (`opt-level = "z"`) and marks the memory store's check path
// `#[optimize(speed)]` (docs/edge.md "Speed"); no other build sees the attribute.
#![cfg_attr(target_arch = "wasm32", feature(optimize_attribute))]

pub mod algorithms;
mod clock;
pub mod concurrency;
pub mod conformance;
mod decision;
mod direct;
mod error;
pub mod http;
mod json_text;
pub mod key;
pub mod lease;
mod limiter;
mod lock;
pub mod metrics;
pub mod multi;
#[cfg(feature = "postgres")]
pub mod postgres;
mod rate;
#[cfg(feature = "redis")]
pub mod redis;
/// Without the `redis` feature, `rest` builds the Redis module's protocol half alone (no
/// networking): `redis/proto.rs`.
#[cfg(all(feature = "rest", not(feature = "redis")))]
#[path = "redis/proto.rs"]
pub mod redis;
pub mod shaper;
pub mod spec;
mod state;
pub mod store;
mod strategy;
#[cfg(any(feature = "redis", feature = "postgres"))]
mod tls_roots;
pub mod validate;

pub use clock::{Clock, ManualClock, SystemClock};
pub use decision::{Decision, Reservation};
pub use direct::DirectLimiter;
pub use error::{Error, ErrorCode, Result, panic_message};
pub use lease::{LeaseOptions, Mode};
pub use limiter::{FAIL_CLOSED_RETRY_MS, FailPolicy, Limiter, LimiterBuilder};
pub use multi::{Dimension, MultiDecision, MultiLimiter};
pub use rate::{Rate, RateStrategy};
pub use shaper::Shaper;
pub use spec::{LeakyBucketOptions, StrategySpec};
pub use state::{Log, Slot, State, Step};
pub use store::{MemoryLimits, MemoryStore, Rule, Store};
pub use strategy::Strategy;

/// The README's code blocks compile and run as doctests, so the quick start cannot rot.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// docs/adaptive.md's Rust examples run as doctests too.
#[doc = include_str!("../../docs/adaptive.md")]
#[cfg(doctest)]
pub struct AdaptiveDoctests;

/// docs/hardening.md's Rust examples run as doctests too.
#[doc = include_str!("../../docs/hardening.md")]
#[cfg(doctest)]
pub struct HardeningDoctests;

/// docs/guide.md's Rust examples (moved there from the README) run as doctests too.
#[doc = include_str!("../../docs/guide.md")]
#[cfg(doctest)]
pub struct GuideDoctests;

/// The crate version (bindings report it as their own).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
