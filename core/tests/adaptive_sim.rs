//! Issue 35's proof on the deterministic simulator (`support/sim.rs`): for each algorithm with
//! its defaults, over several seeds, every figure the issue names. Each test prints its figures
//! per algorithm and seed (`cargo test -p throttlekit --test adaptive_sim -- --nocapture
//! --test-threads 1`); docs/adaptive.md quotes them.
//!
//! The service: lognormal service time (median 50 ms, sigma 0.5: mean 56.7 ms, unloaded p99
//! 160 ms) on `workers` workers behind a FIFO queue; Poisson arrivals. `fixed` is the control: its
//! limit never moves, so only the figures that do not ask it to adapt are asserted for it (with
//! its default limit of 20 on 20 workers).

#[path = "support/sim.rs"]
mod sim;

use sim::{Phase, Run, Service};
use throttlekit::concurrency::{AdaptiveConfig, AlgorithmKind};

const ALL: [AlgorithmKind; 4] =
    [AlgorithmKind::Fixed, AlgorithmKind::Aimd, AlgorithmKind::Vegas, AlgorithmKind::Gradient2];
const ADAPTIVE: [AlgorithmKind; 3] = [AlgorithmKind::Aimd, AlgorithmKind::Vegas, AlgorithmKind::Gradient2];
const SEEDS: [u64; 4] = [1, 2, 3, 4];
const SERVICE: Service = Service { median_s: 0.05, sigma: 0.5 };

fn config(a: AlgorithmKind) -> AdaptiveConfig {
    AdaptiveConfig::new(a)
}

fn phase(seconds: f64, workers: usize, rate: f64) -> Phase {
    Phase { seconds, workers, rate, hang_s: None }
}

/// Mean and coefficient of variation of the limit over the second half of `phase`'s windows.
fn steady(run: &Run, phase: usize) -> (f64, f64) {
    let l = run.phase_limits(phase);
    let tail = &l[l.len() / 2..];
    let mean = tail.iter().sum::<f64>() / tail.len() as f64;
    let var = tail.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / tail.len() as f64;
    (mean, var.sqrt() / mean)
}

/// Windows after `phase` starts until the limit, averaged over 5 windows (one window's limit is
/// a sample of a sawtooth), is within ±25 % of `target`.
fn settle(run: &Run, phase: usize, target: f64) -> usize {
    let l = run.phase_limits(phase);
    (0..l.len().saturating_sub(5))
        .find(|&k| ((l[k..k + 5].iter().sum::<f64>() / 5.0) - target).abs() <= 0.25 * target)
        .unwrap_or(usize::MAX)
}

#[test]
fn goodput_and_latency_at_half_load_and_at_2x_overload() {
    let workers = 20;
    let cap = SERVICE.capacity(workers);
    for a in ALL {
        for seed in SEEDS {
            for load in [0.5, 2.0] {
                let phases = [phase(60.0, workers, load * cap)];
                let run = sim::run(&config(a), SERVICE, &phases, seed);
                let goodput = run.goodput(&phases, 0, 20.0) / (load.min(1.0) * cap);
                let p99 = run.p99(&phases, 0, 20.0) / SERVICE.p99_s();
                println!(
                    "{a:?} seed {seed} load {load}x: goodput {goodput:.3} of min(offered, capacity), p99 {p99:.2}x unloaded"
                );
                assert!(goodput >= 0.9, "{a:?} seed {seed} load {load}: goodput {goodput:.3}");
                assert!(p99 <= 2.0, "{a:?} seed {seed} load {load}: p99 {p99:.2}x");
                assert_eq!(run.over_limit, 0);
            }
        }
    }
}

#[test]
fn capacity_steps_20_10_40_converge_within_10_windows_and_stay_steady() {
    // A constant offered load of 2x the largest capacity: 4x, 8x, then 2x overload.
    let rate = 2.0 * SERVICE.capacity(40);
    let phases = [20, 10, 40].map(|w| phase(60.0, w, rate));
    for a in ADAPTIVE {
        for seed in SEEDS {
            let run = sim::run(&config(a), SERVICE, &phases, seed);
            let figures: Vec<_> = (0..3).map(|p| steady(&run, p)).collect();
            let settled: Vec<_> = (1..3).map(|p| settle(&run, p, figures[p].0)).collect();
            println!(
                "{a:?} seed {seed}: steady limit {:.1} / {:.1} / {:.1} (cv {:.3} / {:.3} / {:.3}); windows to ±25 % after 20→10: {}, after 10→40: {}",
                figures[0].0,
                figures[1].0,
                figures[2].0,
                figures[0].1,
                figures[1].1,
                figures[2].1,
                settled[0],
                settled[1]
            );
            for (p, (_, cv)) in figures.iter().enumerate() {
                assert!(*cv <= 0.25, "{a:?} seed {seed} phase {p}: cv {cv:.3}");
            }
            for (i, s) in settled.iter().enumerate() {
                assert!(*s <= 10, "{a:?} seed {seed} step {i}: {s} windows");
            }
            for (p, w) in [20.0, 10.0, 40.0].iter().enumerate() {
                let goodput = run.goodput(&phases, p, 30.0) / SERVICE.capacity(*w as usize);
                assert!(goodput >= 0.9, "{a:?} seed {seed} phase {p}: goodput {goodput:.3}");
            }
        }
    }
}

#[test]
fn cold_start_reaches_0_9_of_a_capacity_of_200_within_30_windows() {
    let phases = [phase(20.0, 200, 2.0 * SERVICE.capacity(200))];
    for a in ADAPTIVE {
        for seed in SEEDS {
            let run = sim::run(&config(a), SERVICE, &phases, seed);
            let windows = run.limits.iter().position(|p| p.limit >= 180).map_or(usize::MAX, |i| i + 1);
            println!("{a:?} seed {seed}: limit >= 180 after {windows} windows (from 20)");
            assert!(windows <= 30, "{a:?} seed {seed}: {windows} windows");
        }
    }
}

/// The mean limit over the windows of the 10 s ending at `t`, or the limit in force at `t` if
/// no window closed then (a window at a low limit can take minutes when every request hangs).
fn limit_at(run: &Run, t: f64) -> f64 {
    match run.limits.iter().filter(|p| p.t >= t - 10.0 && p.t < t).count() {
        0 => run.limits.iter().rfind(|p| p.t < t).map_or(20.0, |p| p.limit as f64),
        _ => run.mean_limit(t - 10.0, t),
    }
}

#[test]
fn no_ratchet_after_10_minutes_at_2x_overload() {
    let phases = [phase(600.0, 20, 2.0 * SERVICE.capacity(20))];
    for a in ALL {
        for seed in [1, 2] {
            let run = sim::run(&config(a), SERVICE, &phases, seed);
            let (one, ten) = (limit_at(&run, 60.0), limit_at(&run, 600.0));
            println!("{a:?} seed {seed}: 2x overload, limit {one:.1} after 1 min, {ten:.1} after 10 min");
            assert!(ten <= 1.1 * one, "{a:?} seed {seed}: {one:.1} -> {ten:.1}");
        }
    }
}

#[test]
fn no_ratchet_when_every_request_times_out_at_5_s() {
    let phases = [Phase { seconds: 600.0, workers: 20, rate: 2.0 * SERVICE.capacity(20), hang_s: Some(5.0) }];
    for a in ALL {
        let run = sim::run(&config(a), SERVICE, &phases, 1);
        let (one, ten) = (limit_at(&run, 60.0), limit_at(&run, 600.0));
        println!("{a:?}: every request dropped at 5 s, limit {one:.1} after 1 min, {ten:.1} after 10 min");
        assert!(ten <= 1.1 * one, "{a:?}: {one:.1} -> {ten:.1}");
        if a != AlgorithmKind::Fixed {
            assert!(one < 20.0, "{a:?}: a service that only times out is shed from (limit {one:.1})");
        }
    }
}
