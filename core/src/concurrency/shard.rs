//! The release side's sample buffers, one per thread group, merged when a window closes.
//!
//! Why sharded: with one shared buffer every release of every thread takes the same lock, and
//! threads queue on it (2 threads on 2 cores were 5 times slower per operation than one). A
//! release pushes its sample into its own thread's shard (a lock no other thread takes, except
//! the one that closes a window) and bumps one shared counter; the window's owner drains every
//! shard into the window when the counter says the window is full. The window holds the same
//! samples as one buffer would, so its percentile, and every decision, is the same.
//!
//! Why a spin lock ([`ShardLock`], the memory store's): a shard is held for one push, and only
//! its own threads and a window's close ever meet on it, so a waiter spins briefly at worst;
//! its unlock is a plain release store, one locked instruction fewer per release than a
//! mutex's (about a tenth of an uncontended acquire + release).

use super::sync::{AtomicU64, Ordering};
use super::window::Window;
use crate::store::shard_lock::{ShardGuard, ShardLock};

/// Shards per limiter: enough that a machine's threads rarely share one.
#[cfg(not(loom))]
pub(crate) const SHARDS: usize = 16;
/// Two under loom: the model's two threads, each in a shard of its own.
#[cfg(loom)]
pub(crate) const SHARDS: usize = 2;

/// The counters a release or a rejection bumps, beside the samples of the open window.
#[derive(Debug, Default)]
pub(crate) struct ShardData {
    pub window: Window,
    pub succeeded: u64,
    pub dropped: u64,
    pub ignored: u64,
    pub leaked: u64,
    pub short_rtts: u64,
}

/// One shard, on cache lines of its own (two threads' shards never share a line).
#[repr(align(128))]
pub(crate) struct Shard {
    /// Refusals by this shard's threads.
    pub rejected: AtomicU64,
    data: ShardLock<ShardData>,
}

impl Default for Shard {
    fn default() -> Shard {
        Shard { rejected: AtomicU64::new(0), data: ShardLock::new(ShardData::default()) }
    }
}

impl Shard {
    pub(crate) fn lock(&self) -> ShardGuard<'_, ShardData> {
        self.data.lock()
    }

    pub(crate) fn rejected(&self) -> u64 {
        self.rejected.load(Ordering::Relaxed)
    }
}

/// The calling thread's shard: threads take shard numbers in turn as they first release.
#[cfg(not(loom))]
pub(crate) fn index() -> usize {
    use std::sync::atomic::AtomicUsize;
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    std::thread_local! {
        static INDEX: usize = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % SHARDS;
    }
    // Shard 0 for a release made while the thread's locals are being destroyed (a permit held
    // in another thread-local).
    INDEX.try_with(|i| *i).unwrap_or(0)
}

/// Under loom every model thread runs on one OS thread: the shard follows loom's thread id
/// (the main thread 0, the spawned one 1), so the model drains two shards.
#[cfg(loom)]
pub(crate) fn index() -> usize {
    // loom numbers its threads from 0 in spawn order; the Debug form is "ThreadId(n)".
    let id = format!("{:?}", loom::thread::current().id());
    id.bytes().filter(u8::is_ascii_digit).fold(0usize, |n, d| n * 10 + usize::from(d - b'0')) % SHARDS
}
