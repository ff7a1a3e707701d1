//! The random timelines of the dual-path proofs (redis_dual_path.rs, postgres.rs): one seed, one
//! decision stream as text, the same on every store that decides as the memory store does.
#![allow(dead_code)]

use std::fmt::Write as _;
use std::sync::Arc;

use throttlekit::spec::{QuotaOptions, ResetCadence};
use throttlekit::{Dimension, LeakyBucketOptions, Limiter, ManualClock, MultiLimiter, Rule, Shaper, Store, Strategy};

/// xorshift64*: small, seedable, good enough to spread cases.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// A random strategy and its characteristic period (used to aim steps at boundaries).
pub fn strategy(rng: &mut Rng) -> (Strategy, i64) {
    let limit = rng.range(1, 8);
    let period = [1, 7, 100, 999, 1000, 2500, 60_000][rng.below(7) as usize];
    let s = match rng.below(10) {
        0 | 1 => Strategy::gcra(limit, period, Some(rng.range(1, 8))),
        2 => Strategy::from_json(&format!(
            r#"{{"kind":"gcra","options":{{"limit":{limit},"periodMs":{}.5,"burst":{}}}}}"#,
            period,
            rng.range(1, 5)
        )),
        3 => {
            let rate = [0.5, 1.0, 3.0, 7.25, 10.0, 1000.0][rng.below(6) as usize];
            Strategy::token_bucket(limit, rate)
        }
        4 => Strategy::fixed_window(limit, period),
        5 => Strategy::sliding_window(limit, period, Some([1, 2, 3, 10][rng.below(4) as usize])),
        6 => Strategy::sliding_window_log(limit, period),
        _ => {
            let cadence = [
                ResetCadence::CalendarDay,
                ResetCadence::CalendarWeek,
                ResetCadence::CalendarMonth,
                ResetCadence::Fixed,
                ResetCadence::Rolling,
            ][rng.below(5) as usize];
            let periodic = matches!(cadence, ResetCadence::Fixed | ResetCadence::Rolling);
            Strategy::quota(QuotaOptions {
                limit: limit as f64,
                reset_cadence: cadence,
                period_ms: periodic.then_some(period as f64),
                anchor: (cadence == ResetCadence::Fixed && rng.chance(50)).then(|| rng.range(0, 5000) as f64),
                offset_minutes: (!periodic && rng.chance(60)).then(|| rng.range(0, 1680) as f64 - 840.0),
                week_starts_on: (cadence == ResetCadence::CalendarWeek).then(|| rng.below(7) as f64),
                buckets: (cadence == ResetCadence::Rolling && rng.chance(50)).then(|| rng.range(1, 4) as f64),
            })
        }
    };
    let period = match s.as_ref().map(|s| s.kind()) {
        Ok("quota") if period < 1000 => 86_400_000,
        _ => period as i64,
    };
    (s.expect("a valid generated strategy"), period)
}

/// The next instant: mostly small steps, some exact period multiples (boundaries, deadlines),
/// some long idles past every TTL, some backward jumps.
pub fn step(rng: &mut Rng, now: i64, period: i64) -> i64 {
    match rng.below(20) {
        0..=8 => now + rng.below(period as u64 / 4 + 2) as i64,
        9 | 10 => now,
        11 | 12 => (now / period + 1) * period - rng.below(2) as i64,
        13 => now + period,
        14 => now + period + 1,
        15 => now + period * rng.range(2, 40) as i64,
        16 | 17 => now - rng.range(1, period as u64 + 1) as i64,
        _ => now + rng.below(3 * period as u64) as i64,
    }
}

pub fn cost(rng: &mut Rng, limit: i64) -> u64 {
    if rng.chance(8) { rng.range(limit.max(1) as u64, limit.max(1) as u64 + 3) } else { rng.range(1, 3) }
}

pub fn start_time(rng: &mut Rng) -> i64 {
    1_700_000_000_000 + rng.below(200_000_000_000) as i64
}

/// One timeline on `store`; the decision stream as text.
pub fn run_timeline(seed: u64, store: Arc<dyn Store>) -> String {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut out = String::new();
    let clock = ManualClock::new(0);
    let mut now = start_time(&mut rng);
    let ops = rng.range(10, 40);
    let key = format!("t{seed}");
    match rng.below(10) {
        0 => {
            let options = LeakyBucketOptions {
                rate_per_sec: [0.5, 3.0, 10.0, 333.0][rng.below(4) as usize],
                max_queue_ms: [0.0, 100.0, 1000.0, 2500.5][rng.below(4) as usize],
            };
            let shaper = Shaper::new(&options).unwrap().with_store(store).with_clock(Arc::new(clock.clone()));
            writeln!(out, "shaper {options:?}").ok();
            for _ in 0..ops {
                now = step(&mut rng, now, 1000);
                if rng.chance(5) {
                    writeln!(out, "{now} reset {:?}", shaper.reset_sync(&key)).ok();
                    continue;
                }
                let c = rng.range(1, 4);
                writeln!(out, "{now} reserve {c} {:?}", shaper.reserve_sync_at(&key, c, now)).ok();
            }
        }
        1 | 2 => {
            let n = rng.range(1, 3);
            let mut dims = Vec::new();
            let mut period = i64::MAX;
            for i in 0..n {
                let (s, p) = strategy(&mut rng);
                period = period.min(p);
                dims.push(Dimension::new(format!("d{i}"), s).cost_multiplier(rng.range(1, 2)));
            }
            let rule = if rng.chance(50) { Rule::All } else { Rule::Any };
            writeln!(out, "multi {rule:?} {dims:?}").ok();
            let multi = MultiLimiter::new(rule, dims)
                .unwrap()
                .with_store(store)
                .with_clock(Arc::new(clock.clone()))
                .with_prefix(key.as_str());
            let keys: Vec<String> = (0..n).map(|i| format!("k{}", i % 2)).collect();
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            for _ in 0..ops {
                now = step(&mut rng, now, period);
                let c = cost(&mut rng, 3);
                writeln!(out, "{now} check {c} {:?}", multi.check_sync_at(&keys, c, now)).ok();
            }
        }
        _ => {
            let (s, period) = strategy(&mut rng);
            writeln!(out, "limiter {:?}", s.spec()).ok();
            let limit = s.limit();
            let limiter = Limiter::builder(s).store(store).clock(Arc::new(clock.clone())).build();
            for _ in 0..ops {
                now = step(&mut rng, now, period);
                let k = if rng.chance(10) { format!("{key}:other") } else { key.clone() };
                match rng.below(20) {
                    0 => writeln!(out, "{now} reset {:?}", limiter.reset_sync(&k)),
                    1 | 2 => writeln!(out, "{now} peek {:?}", limiter.peek_sync_at(&k, now)),
                    3 | 4 => {
                        let c = cost(&mut rng, limit);
                        writeln!(out, "{now} forecast {c} {:?}", limiter.forecast_sync_at(&k, c, now))
                    }
                    _ => {
                        let c = cost(&mut rng, limit);
                        writeln!(out, "{now} check {c} {:?}", limiter.check_sync_at(&k, c, now))
                    }
                }
                .ok();
            }
        }
    }
    out
}
