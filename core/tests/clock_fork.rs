//! A forked child does not inherit the parent's clock ticker (threads do not survive `fork`),
//! so it must not read the value the ticker last published before the fork, frozen forever.
//! (Python's `multiprocessing` and pre-forking servers fork processes that already used the
//! clock.) Its own file: the child of a process runs only the forking thread.

#![cfg(unix)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use throttlekit::{Clock, SystemClock};

fn wall_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

#[test]
fn a_forked_child_reads_a_live_clock() {
    // The parent's ticker is running and has published.
    for _ in 0..20 {
        SystemClock.now_ms();
        std::thread::sleep(Duration::from_millis(1));
    }
    // SAFETY: the child only reads clocks, sleeps, and leaves with `_exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let start = SystemClock.now_ms();
        let mut ok = true;
        for _ in 0..30 {
            std::thread::sleep(Duration::from_millis(5));
            let (ours, wall) = (SystemClock.now_ms(), wall_ms());
            // Never ahead; and a frozen value would fall behind by the whole 150 ms. The lag
            // itself is not bounded tighter: a loaded machine can hold the child's new ticker
            // off the CPU for tens of milliseconds.
            ok &= ours <= wall && wall - ours < 1000;
        }
        // It moved with time: 30 sleeps of at least 5 ms each.
        ok &= SystemClock.now_ms() - start >= 100;
        // SAFETY: leaves the child at once, without running the parent's exit handlers.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let mut status = 0;
    // SAFETY: waits for the child forked above.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "the child's clock was stale: status {status}");
}
