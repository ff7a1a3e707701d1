//! The hot path allocates nothing for an existing key: a counting global allocator watches
//! `check_sync` after the key exists.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use throttlekit::{Limiter, ManualClock, Strategy};

struct Counting;

thread_local! {
    /// Allocations made by this thread. Per thread, so the test harness's own threads (which
    /// may allocate while a test runs) cannot be mistaken for the code under test.
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // `try_with`: a thread being torn down has no counter left, and must still allocate.
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_during(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

#[test]
fn the_counter_sees_an_allocation() {
    assert!(allocations_during(|| drop(std::hint::black_box(String::from("x")))) >= 1);
}

#[test]
fn check_sync_on_an_existing_key_does_not_allocate() {
    let strategies = [
        Strategy::gcra(1_000_000, 1000, None).unwrap(),
        Strategy::token_bucket(1_000_000, 1000.0).unwrap(),
        Strategy::fixed_window(1_000_000, 1000).unwrap(),
        Strategy::sliding_window(1_000_000, 1000, None).unwrap(),
    ];
    for strategy in strategies {
        let kind = strategy.kind();
        let clock = ManualClock::new(1_700_000_000_000);
        let limiter = Limiter::builder(strategy).clock(std::sync::Arc::new(clock.clone())).prefix("api").build();
        // Warm up: create the key and grow the thread's key buffer.
        limiter.check_sync("user:12345", 1).unwrap();
        let n = allocations_during(|| {
            for _ in 0..1000 {
                clock.advance(1).unwrap();
                assert!(limiter.check_sync("user:12345", 1).unwrap().allowed);
            }
        });
        assert_eq!(n, 0, "{kind}: check_sync allocated {n} times for an existing key");
    }
}
