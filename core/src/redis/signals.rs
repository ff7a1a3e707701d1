//! Signals held off a caller's thread while it waits on a blocking Redis socket.
//!
//! The blocking path bounds each read with the socket's `SO_RCVTIMEO`. Linux never restarts a
//! `recv` on such a socket after a signal handler runs, whatever `SA_RESTART` says (signal(7)),
//! so any handled signal landing on the caller's thread mid-call turned a reply on its way into
//! `store_unavailable: Interrupted system call`. Go sends exactly such signals to its own
//! threads (`SIGURG`, for preemption), and a cgo call runs on one: the Go suite lost a leased
//! fleet test to it. The call cannot be retried at that point — redis-rs has consumed part of
//! the reply and counts it as owed, and a call that may have reached the server is never sent
//! again — so the signal must not interrupt the read in the first place.
//!
//! [`HeldSignals`] blocks every asynchronous signal on the calling thread for the call and
//! restores the thread's own mask afterwards. A signal that arrives meanwhile stays pending and
//! runs its handler the moment the call returns, at most one call timeout late; one sent to the
//! process goes to another thread that does not hold it. Faults raised by the thread itself
//! (`SIGSEGV`, `SIGBUS`, `SIGFPE`, `SIGILL`, `SIGTRAP`, `SIGSYS`) are never held.

/// The calling thread's signal mask as it was before [`HeldSignals::hold`]; restored on drop.
pub(crate) struct HeldSignals {
    #[cfg(unix)]
    previous: libc::sigset_t,
    /// A mask belongs to one thread: the guard must drop where it was made.
    _on_this_thread: std::marker::PhantomData<*const ()>,
}

impl HeldSignals {
    /// Blocks every asynchronous signal on the calling thread until the guard drops.
    pub(crate) fn hold() -> HeldSignals {
        #[cfg(unix)]
        // SAFETY: both sets are initialised (`sigfillset`, and `pthread_sigmask` writes
        // `previous`) before use, and `pthread_sigmask` changes the calling thread's mask only.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut set);
            for synchronous in [libc::SIGSEGV, libc::SIGBUS, libc::SIGFPE, libc::SIGILL, libc::SIGTRAP, libc::SIGSYS] {
                libc::sigdelset(&mut set, synchronous);
            }
            let mut previous: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut previous);
            HeldSignals { previous, _on_this_thread: std::marker::PhantomData }
        }
        #[cfg(not(unix))]
        HeldSignals { _on_this_thread: std::marker::PhantomData }
    }
}

impl Drop for HeldSignals {
    fn drop(&mut self) {
        #[cfg(unix)]
        // SAFETY: `previous` is the mask `pthread_sigmask` reported in `hold`, and the guard is
        // `!Send`, so this is the thread that made it.
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &self.previous, std::ptr::null_mut());
        }
    }
}
