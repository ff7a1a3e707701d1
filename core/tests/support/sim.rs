//! A deterministic simulator of a service behind an adaptive limiter, on a virtual clock.
//!
//! The service has `workers` workers (its capacity in concurrent requests) and a FIFO queue in
//! front of them; each request takes a lognormal service time. Requests arrive as a Poisson
//! process; the limiter admits or sheds each one; an admitted request queues for a worker, is
//! served, and releases its permit with the round trip the limiter measures on the virtual clock.
//! Phases change the worker count (capacity steps) or make every request hang until a constant
//! timeout (released as `dropped`). One seed is one exact timeline: a tiny SplitMix64 generator,
//! no floating point from outside the test.
#![allow(dead_code)]

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;

use throttlekit::concurrency::{AdaptiveConfig, AdaptiveLimiter, Admission, Outcome, Permit, VirtualClock};

/// SplitMix64: tiny, seedable, good enough for arrival and service times.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0xd1b5_4a32_d192_ed03)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1).
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Exponential with mean `mean`.
    pub fn exp(&mut self, mean: f64) -> f64 {
        -mean * self.unit().ln()
    }

    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        (-2.0 * self.unit().ln()).sqrt() * (std::f64::consts::TAU * self.unit()).cos()
    }
}

/// The service's time per request: lognormal.
#[derive(Clone, Copy, Debug)]
pub struct Service {
    pub median_s: f64,
    pub sigma: f64,
}

impl Service {
    pub fn mean_s(&self) -> f64 {
        self.median_s * (self.sigma * self.sigma / 2.0).exp()
    }

    /// The p99 of the service time alone: the unloaded p99.
    pub fn p99_s(&self) -> f64 {
        self.median_s * (self.sigma * 2.326_348).exp()
    }

    /// Requests per second `workers` workers complete.
    pub fn capacity(&self, workers: usize) -> f64 {
        workers as f64 / self.mean_s()
    }

    fn sample(&self, rng: &mut Rng) -> f64 {
        self.median_s * (self.sigma * rng.normal()).exp()
    }
}

/// A stretch of simulated time.
#[derive(Clone, Copy, Debug)]
pub struct Phase {
    pub seconds: f64,
    pub workers: usize,
    /// Offered load, requests per second.
    pub rate: f64,
    /// Every admitted request hangs and is released as `dropped` after this many seconds.
    pub hang_s: Option<f64>,
}

/// The limit after one window.
#[derive(Clone, Copy, Debug)]
pub struct Point {
    pub t: f64,
    pub window: u64,
    pub limit: u32,
    pub phase: usize,
}

/// One completed request.
#[derive(Clone, Copy, Debug)]
pub struct Done {
    pub t: f64,
    pub latency: f64,
    pub phase: usize,
}

/// What a run recorded.
#[derive(Debug, Default)]
pub struct Run {
    pub limits: Vec<Point>,
    pub done: Vec<Done>,
    /// Per phase: arrivals and rejections.
    pub arrivals: Vec<u64>,
    pub rejected: Vec<u64>,
    /// The largest in-flight count seen above the limit (must stay 0).
    pub over_limit: u32,
    /// The limiter's no-load round trip at the end.
    pub baseline_us: u64,
}

impl Run {
    /// Completions per second in phase `phase`, from `from_s` seconds into it.
    pub fn goodput(&self, phases: &[Phase], phase: usize, from_s: f64) -> f64 {
        let start = phase_start(phases, phase) + from_s;
        let end = phase_start(phases, phase) + phases[phase].seconds;
        self.done.iter().filter(|d| d.phase == phase && d.t >= start).count() as f64 / (end - start)
    }

    /// The p99 latency of requests completed in `phase` after `from_s` seconds into it.
    pub fn p99(&self, phases: &[Phase], phase: usize, from_s: f64) -> f64 {
        let start = phase_start(phases, phase) + from_s;
        let mut l: Vec<f64> =
            self.done.iter().filter(|d| d.phase == phase && d.t >= start).map(|d| d.latency).collect();
        l.sort_by(f64::total_cmp);
        l[((l.len() as f64 * 0.99).ceil() as usize).clamp(1, l.len()) - 1]
    }

    /// The limits recorded in `phase`, one per window.
    pub fn phase_limits(&self, phase: usize) -> Vec<f64> {
        self.limits.iter().filter(|p| p.phase == phase).map(|p| p.limit as f64).collect()
    }

    /// The mean limit over windows that closed in `[from_s, to_s)`.
    pub fn mean_limit(&self, from_s: f64, to_s: f64) -> f64 {
        let l: Vec<f64> = self.limits.iter().filter(|p| p.t >= from_s && p.t < to_s).map(|p| p.limit as f64).collect();
        l.iter().sum::<f64>() / l.len().max(1) as f64
    }
}

pub fn phase_start(phases: &[Phase], phase: usize) -> f64 {
    phases[..phase].iter().map(|p| p.seconds).sum()
}

struct InService {
    permit: Permit,
    arrived: f64,
    outcome: Outcome,
}

const NS: f64 = 1e9;

/// Runs `phases` against a limiter built from `config`, with seed `seed`.
pub fn run(config: &AdaptiveConfig, service: Service, phases: &[Phase], seed: u64) -> Run {
    let clock = VirtualClock::new(0);
    let limiter = AdaptiveLimiter::with_clock(config.clone(), Arc::new(clock.clone())).expect("valid config");
    let mut rng = Rng::new(seed);
    let mut out = Run { arrivals: vec![0; phases.len()], rejected: vec![0; phases.len()], ..Run::default() };
    let mut slab: Vec<Option<InService>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut events: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    let mut queue: VecDeque<usize> = VecDeque::new();
    let mut busy = 0usize;
    let mut windows = 0u64;
    let end: f64 = phases.iter().map(|p| p.seconds).sum();
    let mut phase = 0usize;
    let mut phase_end = phases[0].seconds;
    let mut next_arrival = rng.exp(1.0 / phases[0].rate);
    let at = |t: f64| (t * NS) as u64;

    loop {
        let next_done = events.peek().map(|Reverse((t, _))| *t as f64 / NS);
        let arrival_first = next_done.is_none_or(|d| next_arrival <= d);
        let t = if arrival_first { next_arrival } else { next_done.expect("an event") };
        if t >= end {
            break;
        }
        while t >= phase_end && phase + 1 < phases.len() {
            phase += 1;
            phase_end += phases[phase].seconds;
        }
        let p = phases[phase];
        clock.set(at(t));
        if arrival_first {
            next_arrival = t + rng.exp(1.0 / p.rate);
            out.arrivals[phase] += 1;
            match limiter.try_acquire(None).expect("no partition") {
                Admission::Rejected(_) => out.rejected[phase] += 1,
                Admission::Granted(permit) => {
                    let m = (limiter.inflight(), limiter.limit());
                    out.over_limit = out.over_limit.max(m.0.saturating_sub(m.1));
                    let outcome = if p.hang_s.is_some() { Outcome::Dropped } else { Outcome::Success };
                    let job = InService { permit, arrived: t, outcome };
                    let id = match free.pop() {
                        Some(i) => {
                            slab[i] = Some(job);
                            i
                        }
                        None => {
                            slab.push(Some(job));
                            slab.len() - 1
                        }
                    };
                    if let Some(h) = p.hang_s {
                        events.push(Reverse((at(t + h), id)));
                    } else if busy < p.workers {
                        busy += 1;
                        events.push(Reverse((at(t + service.sample(&mut rng)), id)));
                    } else {
                        queue.push_back(id);
                    }
                }
            }
        } else {
            let Reverse((_, id)) = events.pop().expect("an event");
            let mut job = slab[id].take().expect("a job");
            free.push(id);
            job.permit.release(job.outcome);
            if job.outcome == Outcome::Success {
                busy -= 1;
                out.done.push(Done { t, latency: t - job.arrived, phase });
            }
            while busy < p.workers
                && let Some(next) = queue.pop_front()
            {
                busy += 1;
                events.push(Reverse((at(t + service.sample(&mut rng)), next)));
            }
            let m = limiter.metrics();
            if m.windows != windows {
                windows = m.windows;
                out.limits.push(Point { t, window: windows, limit: m.limit, phase });
            }
        }
    }
    out.baseline_us = limiter.metrics().baseline_rtt_us;
    out
}
