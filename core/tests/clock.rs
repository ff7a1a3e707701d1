//! The system clock agrees with the wall clock (it may read the CPU's counter for speed, but
//! must never stray), from several threads, across its anchor renewals.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use throttlekit::{Clock, SystemClock};

fn wall_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

#[test]
fn the_system_clock_stays_within_a_millisecond_of_the_wall_clock() {
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                let until = std::time::Instant::now() + Duration::from_millis(400);
                let mut last = i64::MIN;
                let mut reads = 0u64;
                while std::time::Instant::now() < until {
                    let before = wall_ms();
                    let ours = SystemClock.now_ms();
                    let after = wall_ms();
                    assert!(ours >= before - 1 && ours <= after + 1, "{before} <= {ours} <= {after} (±1 ms)");
                    assert!(ours >= last.saturating_sub(1), "went backwards: {last} -> {ours}");
                    last = ours;
                    reads += 1;
                    if reads.is_multiple_of(1000) {
                        // Let anchors age and renew between bursts of reads.
                        std::thread::sleep(Duration::from_millis(7));
                    }
                }
                assert!(reads > 1000);
            });
        }
    });
}
