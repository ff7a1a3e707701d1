//! The mutex of the lease tiers and of the REST store's replay book: parking_lot's natively; in
//! the WebAssembly build, std's. wasm32-unknown-unknown has one thread, where std's mutex is a
//! flag (its no-threads implementation) while parking_lot's brings its parking table and word
//! lock into the module (2.4 KB of code) for a wait that cannot happen there. Either way a
//! recursive lock does not return: parking_lot's would wait forever, std's traps.

#[cfg(not(target_arch = "wasm32"))]
pub(crate) use parking_lot::Mutex as Lock;
/// Named by the REST store's replay book alone (`redis::rest`).
#[cfg(all(not(target_arch = "wasm32"), feature = "rest"))]
pub(crate) use parking_lot::MutexGuard as LockGuard;

/// The WebAssembly build's mutex: std's, with parking_lot's `lock` (no poisoning to handle: a
/// panic there aborts).
#[cfg(target_arch = "wasm32")]
#[derive(Debug, Default)]
pub(crate) struct Lock<T>(std::sync::Mutex<T>);

#[cfg(target_arch = "wasm32")]
pub(crate) type LockGuard<'a, T> = std::sync::MutexGuard<'a, T>;

#[cfg(target_arch = "wasm32")]
impl<T> Lock<T> {
    pub(crate) const fn new(value: T) -> Lock<T> {
        Lock(std::sync::Mutex::new(value))
    }

    pub(crate) fn lock(&self) -> LockGuard<'_, T> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
