//! Adaptive concurrency: a limit on requests in flight that follows the service's latency.
//!
//! A rate limit protects a service from a client; it cannot protect a service from itself. When
//! a dependency slows down, a fixed rate still lets work pile up. An [`AdaptiveLimiter`] admits a
//! request only while fewer than its limit are in flight, and moves the limit once per window of
//! round trips with one of four rules ([`AlgorithmKind`]): `fixed`, `aimd`, `vegas` and
//! `gradient2`. `docs/adaptive.md` has each rule, its defaults, and the simulator's figures.
//!
//! The parts: [`AdaptiveConfig`] (plain data, validated once), the limiter (admission, waiting,
//! partitions), a [`Permit`] per admitted request (released once with an [`Outcome`]), the
//! window and the rules (pure functions), and an injected monotonic clock ([`Ticks`]).

mod aimd;
mod algorithm;
mod clock;
mod config;
mod fixed;
mod gradient2;
mod limiter;
mod metrics;
mod outcome;
mod partition;
mod permit;
mod shard;
pub mod vectors;
mod vegas;
mod waiter;
mod window;

pub use clock::{MonotonicClock, Ticks, VirtualClock};
pub use config::{AdaptiveConfig, AlgorithmKind, PartitionConfig, QueueOrder, snake_case_fields};
pub use limiter::{AdaptiveLimiter, Admission};
pub use metrics::AdaptiveMetrics;
pub use outcome::{Outcome, Rejection};
pub use permit::{Permit, PermitGuard};
pub use waiter::Cancel;

/// The limiter's lock and atomics: loom's under `--cfg loom`, so the model explores their
/// interleavings.
mod sync {
    #[cfg(loom)]
    pub(crate) use loom::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};
    #[cfg(loom)]
    pub(crate) use loom::sync::{Mutex, MutexGuard};
    #[cfg(not(loom))]
    pub(crate) use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};
    #[cfg(not(loom))]
    pub(crate) use std::sync::{Mutex, MutexGuard};
}

/// Locks a std mutex, recovering from poisoning (no code under these locks can panic midway
/// through an update, so the data is consistent).
fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
