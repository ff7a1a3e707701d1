//! Rust in-memory peer benchmarks: throttlekit's `MemoryStore` against governor 0.10, in one
//! process, same machine, same workload, same kind of clock (each library's default real clock).
//!
//! Usage: `throttlekit-bench [--quick]`. Prints human-readable lines and, for bench/run.sh, one
//! `ROW<TAB>scenario<TAB>peer<TAB>ratio<TAB>target<TAB>detail` line per scenario, where ratio is
//! peer cost / our cost (> 1: we are faster / smaller).

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Instant;

use governor::{Quota, RateLimiter};
use throttlekit::{DirectLimiter, Limiter, MemoryStore, Strategy};

// ---------------------------------------------------------------------------------------------
// A counting allocator: live bytes requested, and live bytes as glibc malloc really spends them
// (a chunk is the request plus an 8-byte header, rounded up to 16, at least 32 bytes).

struct Counting;
static REQUESTED: AtomicIsize = AtomicIsize::new(0);
static CHUNKS: AtomicIsize = AtomicIsize::new(0);

fn chunk(size: usize) -> isize {
    ((size + 8).div_ceil(16) * 16).max(32) as isize
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        REQUESTED.fetch_add(layout.size() as isize, Ordering::Relaxed);
        CHUNKS.fetch_add(chunk(layout.size()), Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        REQUESTED.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        CHUNKS.fetch_sub(chunk(layout.size()), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        REQUESTED.fetch_add(new_size as isize - layout.size() as isize, Ordering::Relaxed);
        CHUNKS.fetch_add(chunk(new_size) - chunk(layout.size()), Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn live() -> (isize, isize) {
    (REQUESTED.load(Ordering::SeqCst), CHUNKS.load(Ordering::SeqCst))
}

// ---------------------------------------------------------------------------------------------
// Workload.

const KEYS: usize = 100_000;
/// Generous, and slow enough that a key's state outlives the benchmark: 3600 an hour (a TAT
/// step of 1 s per check) with a burst of 10^9, so every check is allowed, reads the key's live
/// state and writes it back; no key ever expires or is denied during a run.
const PER_HOUR: u32 = 3600;
const BURST: u32 = 1_000_000_000;

/// A small deterministic PRNG (splitmix64), so every run visits the keys in the same order.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// `user:<16 hex digits>` (21 bytes), distinct.
fn key(i: usize) -> String {
    format!("user:{:016x}", (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// The keys in a random visiting order, allocated in that order (a caller's key is usually hot
/// in its cache; the table lookup is what should miss, not the benchmark's own key array).
fn visit_order(seed: u64) -> Vec<String> {
    let mut idx: Vec<usize> = (0..KEYS).collect();
    let mut rng = Rng(seed);
    for i in (1..idx.len()).rev() {
        idx.swap(i, (rng.next() % (i as u64 + 1)) as usize);
    }
    idx.into_iter().map(key).collect()
}

fn generous_strategy() -> Strategy {
    Strategy::gcra(PER_HOUR as u64, 3_600_000, Some(BURST as u64)).unwrap()
}

fn ours_generous() -> Limiter {
    Limiter::builder(generous_strategy()).store(Arc::new(MemoryStore::new())).build()
}

fn generous_quota() -> Quota {
    Quota::per_hour(NonZeroU32::new(PER_HOUR).unwrap()).allow_burst(NonZeroU32::new(BURST).unwrap())
}

// ---------------------------------------------------------------------------------------------
// Measurement: several repetitions, ours and the peer's interleaved, median and spread.

struct Stats {
    median: f64,
    min: f64,
    max: f64,
    /// Every repetition's ns/op, in the order they ran.
    runs: Vec<f64>,
}

fn stats(runs: Vec<f64>) -> Stats {
    let mut v = runs.clone();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
    Stats { median, min: v[0], max: v[n - 1], runs }
}

/// The worst of the per-repetition ratios peer / ours (each repetition ran both back to back),
/// for targets stated as "the minimum of N runs".
fn min_ratio(ours: &Stats, peer: &Stats) -> f64 {
    ours.runs.iter().zip(&peer.runs).map(|(o, p)| p / o).fold(f64::INFINITY, f64::min)
}

impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:7.1} ns/op (min {:.1}, max {:.1})", self.median, self.min, self.max)
    }
}

/// Runs `ours` and `peer` (each returns ns/op for one repetition) `reps` times, interleaved.
fn duel(reps: usize, mut ours: impl FnMut() -> f64, mut peer: impl FnMut() -> f64) -> (Stats, Stats) {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for r in 0..reps {
        // Alternate who goes first, so a noisy neighbour does not always hit the same side.
        if r % 2 == 0 {
            a.push(ours());
            b.push(peer());
        } else {
            b.push(peer());
            a.push(ours());
        }
    }
    (stats(a), stats(b))
}

/// Like [`duel`], but each repetition is `slices` slices of each side taken in turn (ours,
/// peer, peer, ours, ...; `ours(s)` and `peer(s)` run slice `s`), and a repetition's ns/op is
/// the mean of its slices'. Why: on a shared machine a neighbour's burst lasts tens of
/// milliseconds; with one side's whole repetition run before the other's, a burst lands on one
/// side only and that repetition's ratio is off by 2x, which a "minimum of N runs" target then
/// reports. Slices a few milliseconds long share such a burst between the sides.
///
/// Not shorter slices: each side's first calls after the other's slice refill what the other
/// evicted (the L2 cache, the TLB); a 100k-keys slice cut to 10k keys measured our side
/// 1.3-1.5x slower and the peer 1.1x, so finer interleaving measures the refill, not the calls.
///
/// The sides are timed with [`cpu_per_op`]; the last result is the same repetitions in wall-clock
/// time, for the printed comparison.
fn duel_sliced(
    reps: usize,
    slices: usize,
    mut ours: impl FnMut(usize) -> f64,
    mut peer: impl FnMut(usize) -> f64,
) -> (Stats, Stats, Wall) {
    // One slice: its CPU ns/op, and its wall ns/op from what `cpu_per_op` summed meanwhile.
    let timed = |f: &mut dyn FnMut(usize) -> f64, s: usize| {
        let (w0, c0) = *WALL_NS.lock().unwrap();
        let cpu = f(s);
        let (w1, c1) = *WALL_NS.lock().unwrap();
        (cpu, cpu * (w1 - w0) / (c1 - c0))
    };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let mut wall = Wall { ours: Vec::new(), ratios: Vec::new() };
    for _ in 0..reps {
        let (mut x, mut y, mut xw, mut yw) = (0.0, 0.0, 0.0, 0.0);
        for s in 0..slices {
            let (o, p) = if s % 2 == 0 {
                let o = timed(&mut ours, s);
                (o, timed(&mut peer, s))
            } else {
                let p = timed(&mut peer, s);
                (timed(&mut ours, s), p)
            };
            (x, xw, y, yw) = (x + o.0, xw + o.1, y + p.0, yw + p.1);
        }
        a.push(x / slices as f64);
        b.push(y / slices as f64);
        wall.ours.push(xw / slices as f64);
        wall.ratios.push(yw / xw);
    }
    (stats(a), stats(b), wall)
}

/// [`duel_sliced`]'s repetitions in wall-clock time: ours in ns/op, and each repetition's ratio
/// (peer / ours).
struct Wall {
    ours: Vec<f64>,
    ratios: Vec<f64>,
}

impl Wall {
    /// "wall-clock ratios: median a.aax, minimum b.bbx".
    fn describe(&self) -> String {
        let r = stats(self.ratios.clone());
        format!("wall-clock ratios: median {:.2}x, minimum {:.2}x", r.median, r.min)
    }
}

/// This thread's CPU time in ns (`CLOCK_THREAD_CPUTIME_ID`).
fn thread_cpu_ns() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid clock id and a valid out pointer.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64
}

/// Wall-clock ns of all the calls of [`cpu_per_op`] so far, per op, summed (printed beside the CPU
/// figures, so a reader sees how much a run waited for the machine).
static WALL_NS: std::sync::Mutex<(f64, f64)> = std::sync::Mutex::new((0.0, 0.0));

/// This thread's CPU time per op over `ops` ops of `f`, for the one-thread rows.
///
/// Why CPU time and not wall time: on the shared 2-core machine this bench runs on, a
/// repetition's wall time includes every millisecond the thread sat descheduled while a
/// neighbour (a compiler, another engineer's test) ran on its core. Those waits land on one side
/// of a repetition more than on the other, and with our side 3-4x shorter than the peer's a wait
/// of the same length moves our side's ns/op several times as much: that, not the code, made a
/// "minimum of N runs" read 2.2-3.2x while the medians read 3.3-5.2x (docs/performance.md). The
/// thread's CPU time leaves the waits out and keeps what the calls themselves cost, cache misses
/// after a neighbour ran included. Both sides are timed the same way; the wall-clock ratio is
/// printed too.
fn cpu_per_op(ops: usize, f: impl FnOnce()) -> f64 {
    let wall = Instant::now();
    let start = thread_cpu_ns();
    f();
    let cpu = thread_cpu_ns() - start;
    let mut w = WALL_NS.lock().unwrap();
    w.0 += wall.elapsed().as_nanos() as f64;
    w.1 += cpu;
    cpu / ops as f64
}

/// The wall-clock time of the [`cpu_per_op`] calls since the last call of this, over their CPU
/// time: 1.0 on an idle machine, higher the longer the thread waited for a core.
fn wall_over_cpu() -> f64 {
    let mut w = WALL_NS.lock().unwrap();
    let r = w.0 / w.1;
    *w = (0.0, 0.0);
    r
}

/// Aggregate wall-clock ns per op over `threads` threads, each running `work(thread)` on `ops`
/// ops (wall time: the two-thread rows measure throughput, which waiting for each other and for
/// the machine's two cores is part of).
fn time_threads(threads: usize, ops: usize, work: &(impl Fn(usize) + Sync)) -> f64 {
    let barrier = std::sync::Barrier::new(threads + 1);
    std::thread::scope(|s| {
        for t in 0..threads {
            let barrier = &barrier;
            s.spawn(move || {
                barrier.wait();
                work(t);
                barrier.wait();
            });
        }
        barrier.wait();
        let start = Instant::now();
        barrier.wait();
        start.elapsed().as_nanos() as f64 / (threads * ops) as f64
    })
}

/// The time a cache line takes to pass from one thread to the other and back, halved (ns per
/// one-way handoff, the median of 5 rounds of 200k round trips): what two threads sharing keys
/// pay per contended access. Why print it: on this VM it is bimodal, 30-45 ns when the host
/// runs the two vCPUs close together and 160 ns when it does not (the placement changes
/// between runs, `docs/performance.md`), and the 2-thread rows of both libraries move with it.
fn handoff_ns() -> f64 {
    use std::sync::atomic::AtomicU64;
    const ROUND_TRIPS: u64 = 200_000;
    let mut rounds: Vec<f64> = (0..5)
        .map(|_| {
            let flag = AtomicU64::new(0);
            let start = Instant::now();
            std::thread::scope(|s| {
                s.spawn(|| {
                    for i in 0..ROUND_TRIPS {
                        while flag.load(Ordering::Acquire) != 2 * i + 1 {
                            std::hint::spin_loop();
                        }
                        flag.store(2 * i + 2, Ordering::Release);
                    }
                });
                for i in 0..ROUND_TRIPS {
                    while flag.load(Ordering::Acquire) != 2 * i {
                        std::hint::spin_loop();
                    }
                    flag.store(2 * i + 1, Ordering::Release);
                }
            });
            start.elapsed().as_nanos() as f64 / (2 * ROUND_TRIPS) as f64
        })
        .collect();
    rounds.sort_by(f64::total_cmp);
    rounds[2]
}

fn row(scenario: &str, peer: &str, ratio: f64, target: &str, detail: &str) {
    println!("ROW\t{scenario}\t{peer}\t{ratio:.2}\t{target}\t{detail}");
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    // At least 5 in quick mode too: the 100k-keys target is the minimum of 5 runs.
    let reps = if quick { 5 } else { 9 };
    let passes = if quick { 2 } else { 5 };
    let one_key_ops = if quick { 1_000_000 } else { 5_000_000 };

    println!("throttlekit {} vs governor 0.10.4; {reps} repetitions, medians (min, max)", throttlekit::VERSION);

    // --- memory per key (counted before anything else runs, so nothing else is live) ---
    let keys = visit_order(1);
    let (req0, chk0) = live();
    let ours = ours_generous();
    for k in &keys {
        assert!(ours.check_sync(k, 1).unwrap().allowed);
    }
    let (req1, chk1) = live();
    let peer = RateLimiter::keyed(generous_quota());
    for k in &keys {
        assert!(peer.check_key(k).is_ok());
    }
    let (req2, chk2) = live();
    let per_key = |b: isize| b as f64 / KEYS as f64;
    let (ours_req, ours_chk) = (per_key(req1 - req0), per_key(chk1 - chk0));
    let (peer_req, peer_chk) = (per_key(req2 - req1), per_key(chk2 - chk1));
    println!(
        "memory per key, {KEYS} keys of 21 bytes: throttlekit {ours_chk:.1} B ({ours_req:.1} B requested), governor keyed {peer_chk:.1} B ({peer_req:.1} B requested)"
    );
    row(
        "Memory per key, in-memory store (100k keys, malloc chunks)",
        "governor keyed",
        ours_chk / peer_chk,
        "<=1.0",
        &format!("{ours_chk:.1} B vs {peer_chk:.1} B ({ours_req:.1} vs {peer_req:.1} B requested)"),
    );

    // --- 100k keys, random order, 1 thread ---
    let order = visit_order(2);
    let ops = passes * KEYS;
    // Each side's repetition is `passes` passes over every key, taken one pass at a time in
    // turn with the peer's (see `duel_sliced`).
    // Each side's repetition is `passes` passes over every key, taken one pass at a time in
    // turn with the peer's (see `duel_sliced`).
    let (a, b, wall) = duel_sliced(
        reps,
        passes,
        |_| {
            cpu_per_op(KEYS, || {
                for k in &order {
                    black_box(ours.check_sync(black_box(k), 1).unwrap());
                }
            })
        },
        |_| {
            cpu_per_op(KEYS, || {
                for k in &order {
                    black_box(peer.check_key(black_box(k)).is_ok());
                }
            })
        },
    );
    let worst = min_ratio(&a, &b);
    let waited = wall_over_cpu();
    let each: Vec<String> = a.runs.iter().zip(&b.runs).map(|(o, p)| format!("{:.2}", p / o)).collect();
    println!(
        "100k keys, 1 thread:   throttlekit {a}   governor keyed {b}   ratio {:.2}x (minimum of {reps} runs {worst:.2}x; each run in order: {}); thread CPU time, wall/CPU {waited:.2}; the same runs' {}",
        b.median / a.median,
        each.join(" "),
        wall.describe()
    );
    // The target is on the minimum of the runs (each run one repetition of both sides).
    row(
        &format!("Rust check_sync, GCRA, 100k string keys, 1 thread (minimum of {reps} runs)"),
        "governor 0.10 keyed",
        worst,
        ">=3",
        &format!(
            "median {:.2}x; {:.1} vs {:.1} ns/op thread CPU time (wall/CPU {waited:.2}; the same runs' {})",
            b.median / a.median,
            a.median,
            b.median,
            wall.describe()
        ),
    );
    // Wall clock, for the comparison with the two-thread rows (which are wall clock).
    let ours_1t = stats(wall.ours).median;

    // --- 1 limit, no key: DirectLimiter against governor's direct limiter ---
    // Both hold one limit's state in one atomic word; neither hashes a key. This is the issue's
    // "1 key" row: a caller with one limit for everything uses the direct shape of each library.
    let direct = RateLimiter::direct(generous_quota());
    let ours_direct = DirectLimiter::new(generous_strategy()).unwrap();
    // Slices of 100k calls (a few milliseconds), in turn with the peer's (see `duel_sliced`).
    let slice = 100_000;
    let (a, b, _) = duel_sliced(
        reps,
        one_key_ops / slice,
        |_| {
            cpu_per_op(slice, || {
                for _ in 0..slice {
                    black_box(ours_direct.check(black_box(1)).unwrap());
                }
            })
        },
        |_| {
            cpu_per_op(slice, || {
                for _ in 0..slice {
                    black_box(direct.check().is_ok());
                }
            })
        },
    );
    let waited = wall_over_cpu();
    println!(
        "1 limit, no key:       throttlekit DirectLimiter {a}   governor direct {b}   ratio {:.2}x; thread CPU time, wall/CPU {waited:.2}",
        b.median / a.median
    );
    row(
        "Rust DirectLimiter::check, GCRA, 1 limit without a key",
        "governor direct",
        b.median / a.median,
        ">=0.8",
        &format!("{:.1} vs {:.1} ns/op thread CPU time (wall/CPU {waited:.2})", a.median, b.median),
    );

    // --- 1 key through the keyed limiters: the same key every call ---
    let keyed = RateLimiter::keyed(generous_quota());
    let one = String::from("user:1");
    let (a, b, _) = duel_sliced(
        reps,
        one_key_ops / slice,
        |_| {
            cpu_per_op(slice, || {
                for _ in 0..slice {
                    black_box(ours.check_sync(black_box("user:1"), 1).unwrap());
                }
            })
        },
        |_| {
            cpu_per_op(slice, || {
                for _ in 0..slice {
                    black_box(keyed.check_key(black_box(&one)).is_ok());
                }
            })
        },
    );
    let waited = wall_over_cpu();
    println!(
        "1 key, keyed:          throttlekit {a}   governor keyed {b}   ratio {:.2}x; thread CPU time, wall/CPU {waited:.2}",
        b.median / a.median
    );
    row(
        "Rust check_sync, GCRA, 1 key of a keyed limiter",
        "governor keyed, same key",
        b.median / a.median,
        ">=0.8",
        &format!("{:.1} vs {:.1} ns/op thread CPU time (wall/CPU {waited:.2})", a.median, b.median),
    );

    // --- 100k keys, 2 threads, aggregate ---
    let orders = [visit_order(3), visit_order(4)];
    let handoff_before = handoff_ns();
    let (a, b) = duel(
        reps,
        || {
            time_threads(2, ops, &|t| {
                for _ in 0..passes {
                    for k in &orders[t] {
                        black_box(ours.check_sync(black_box(k), 1).unwrap());
                    }
                }
            })
        },
        || {
            time_threads(2, ops, &|t| {
                for _ in 0..passes {
                    for k in &orders[t] {
                        black_box(peer.check_key(black_box(k)).is_ok());
                    }
                }
            })
        },
    );
    let handoff = format!("cross-vCPU cache-line handoff {handoff_before:.0} ns before, {:.0} ns after", handoff_ns());
    println!(
        "100k keys, 2 threads:  throttlekit {a}   governor keyed {b}   ratio {:.2}x (aggregate time per op); ours vs our 1 thread {:.2}x; {handoff}",
        b.median / a.median,
        ours_1t / a.median
    );
    row(
        "Rust check_sync, GCRA, 100k keys, 2 threads (aggregate)",
        "governor keyed, 2 threads",
        b.median / a.median,
        ">=3",
        &format!("{:.1} vs {:.1} ns/op; {handoff}", a.median, b.median),
    );
    row(
        "  same, 2 threads vs our own 1 thread",
        "throttlekit, 1 thread",
        ours_1t / a.median,
        ">=1.5",
        &format!("{:.1} vs {:.1} ns/op; {handoff}", a.median, ours_1t),
    );

    // --- denied path: 100k keys, every check denied ---
    let strict =
        Limiter::builder(Strategy::gcra(1, 3_600_000, Some(1)).unwrap()).store(Arc::new(MemoryStore::new())).build();
    let strict_peer = RateLimiter::keyed(Quota::per_hour(NonZeroU32::new(1).unwrap()));
    for k in &keys {
        strict.check_sync(k, 1).unwrap();
        let _ = strict_peer.check_key(k);
    }
    let (a, b) = duel(
        reps,
        || {
            cpu_per_op(ops, || {
                for _ in 0..passes {
                    for k in &order {
                        assert!(!black_box(strict.check_sync(black_box(k), 1).unwrap()).allowed);
                    }
                }
            })
        },
        || {
            cpu_per_op(ops, || {
                for _ in 0..passes {
                    for k in &order {
                        assert!(black_box(strict_peer.check_key(black_box(k))).is_err());
                    }
                }
            })
        },
    );
    let waited = wall_over_cpu();
    println!(
        "denied, 100k keys:     throttlekit {a}   governor keyed {b}   ratio {:.2}x; thread CPU time, wall/CPU {waited:.2}",
        b.median / a.median
    );
    row(
        "Rust check_sync, GCRA, 100k keys, denied path",
        "governor 0.10 keyed",
        b.median / a.median,
        "-",
        &format!("{:.1} vs {:.1} ns/op thread CPU time (wall/CPU {waited:.2})", a.median, b.median),
    );
}
