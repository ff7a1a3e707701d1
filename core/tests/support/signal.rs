//! SIGUSR2 sent to a test's own thread while one of its Redis calls waits, with a handler that
//! notes it ran: the tests that a signal handled mid call (Go sends its preemption signal to the
//! thread of a cgo call) neither fails the call nor stretches it past its timeout.
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, Ordering};

static HANDLED: AtomicBool = AtomicBool::new(false);

extern "C" fn note(_: libc::c_int) {
    HANDLED.store(true, Ordering::SeqCst);
}

/// Installs the noting handler for SIGUSR2, with `SA_RESTART` (which a `recv` bounded by
/// `SO_RCVTIMEO` ignores: it is never restarted after a handler).
pub fn install() {
    // SAFETY: a handler that only stores to an atomic is async-signal-safe; the struct is zeroed
    // then filled before use.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = note as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGUSR2, &action, std::ptr::null_mut()), 0);
    }
}

/// The calling thread, for [`send`].
pub fn this_thread() -> libc::pthread_t {
    // SAFETY: `pthread_self` has no preconditions.
    unsafe { libc::pthread_self() }
}

/// Sends SIGUSR2 to `thread`, which must be alive (the test's thread, joining the sender).
pub fn send(thread: libc::pthread_t) {
    // SAFETY: the caller keeps `thread` alive until this returns.
    unsafe { libc::pthread_kill(thread, libc::SIGUSR2) };
}

/// Whether the handler has run in this process.
pub fn handled() -> bool {
    HANDLED.load(Ordering::SeqCst)
}
