//! The sample window: the round trips of one "round" of requests, reduced to a percentile.
//!
//! Why a window and a percentile, not every sample: peers that react to each sample (Helidon's
//! AIMD, helidon-io/helidon#9542) back off on every slow request, so 3 % slow requests shed most
//! traffic. Here a window closes after `max(window_min_samples, limit)` samples, about one round
//! trip of a full limit, and the algorithm sees its percentile: a few slow or dropped requests
//! move nothing, a window whose percentile lands among the drops is a drop signal.
//!
//! Why counted in samples, not in time: the limiter does not know the service's round trip, and
//! a window of one round trip is the shortest one whose samples all saw the current limit.

/// Samples of the open window.
#[derive(Debug, Default)]
pub(crate) struct Window {
    /// Successful round trips (ns) at or above the minimum.
    rtts: Vec<u64>,
    /// Releases with the outcome `dropped`.
    drops: usize,
    /// The highest in-flight count since the window opened.
    pub peak: u32,
}

/// What a closed window says.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Summary {
    /// The percentile of all samples, drops counted as infinitely slow: `None` when it lands
    /// among the drops (a drop signal).
    pub latency: Option<f64>,
    /// The same percentile over the successful samples alone (`None` if there are none).
    pub success_latency: Option<f64>,
    /// The highest in-flight count in the window.
    pub peak: u32,
}

impl Window {
    pub(crate) fn samples(&self) -> usize {
        self.rtts.len() + self.drops
    }

    pub(crate) fn add_rtt(&mut self, rtt_ns: u64) {
        self.rtts.push(rtt_ns);
    }

    pub(crate) fn add_drop(&mut self) {
        self.drops += 1;
    }

    /// Moves `other`'s samples into this window (a shard's, when the window closes).
    pub(crate) fn absorb(&mut self, other: &mut Window) {
        self.rtts.append(&mut other.rtts);
        self.drops += std::mem::take(&mut other.drops);
    }

    /// Closes the window (its samples are cleared, its peak restarts at `inflight`).
    pub(crate) fn close(&mut self, percentile: f64, inflight: u32) -> Summary {
        let n = self.samples();
        // The rank of the percentile among n samples (nearest-rank method).
        let rank = ((percentile * n as f64).ceil() as usize).clamp(1, n.max(1)) - 1;
        let ok = self.rtts.len();
        let success_latency = if ok == 0 {
            None
        } else {
            let r = ((percentile * ok as f64).ceil() as usize).clamp(1, ok) - 1;
            Some(*self.rtts.select_nth_unstable(r).1 as f64)
        };
        // Without drops both ranks are the same: the selection above already answered.
        let latency = match self.drops {
            0 => success_latency,
            _ if rank < ok => Some(*self.rtts.select_nth_unstable(rank).1 as f64),
            _ => None,
        };
        let summary = Summary { latency, success_latency, peak: self.peak };
        self.rtts.clear();
        self.drops = 0;
        self.peak = inflight;
        summary
    }
}

/// The no-load round trip: the lowest smoothed window percentile seen.
///
/// Why smoothed: one window's percentile is a noisy estimate, and the minimum of thousands of
/// noisy estimates sits well below the truth, which would make every algorithm shed too much. An
/// exponential average over windows (weight [`SMOOTHING`]) keeps the minimum near the real
/// no-load percentile.
///
/// Why not the first window: its samples are the requests that finished first, which are the
/// fast ones (the slow ones it started are still in flight when it closes), so its percentile is
/// low by a third on a lognormal service. The limit does not move until a baseline exists, so the
/// second window runs at the same limit and its samples include the slow ones the first left.
///
/// Why it never rises from a loaded window: a baseline that follows the current latency (Vegas's
/// periodic reset, Netflix/concurrency-limits#165; Gradient2's long average, PR #134 and #137)
/// takes sustained overload for the new normal and lets the limit ratchet up. It is re-measured
/// only where a measurement is mostly the service's own time: a window taken at the minimum
/// limit, which is how a service that really became slower is followed.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Baseline {
    seen_first: bool,
    smoothed: Option<f64>,
    ns: Option<f64>,
}

/// The weight of a new window in the smoothed percentile.
pub(crate) const SMOOTHING: f64 = 0.05;

impl Baseline {
    pub(crate) fn get(&self) -> Option<f64> {
        self.ns
    }

    pub(crate) fn observe(&mut self, window_latency: f64, at_min_limit: bool) {
        if !std::mem::replace(&mut self.seen_first, true) {
            return;
        }
        let smoothed = match self.smoothed {
            Some(s) => s + SMOOTHING * (window_latency - s),
            None => window_latency,
        };
        self.smoothed = Some(smoothed);
        self.ns = Some(match self.ns {
            Some(b) if !at_min_limit => b.min(smoothed),
            _ => smoothed,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_count_as_infinitely_slow_in_the_percentile() {
        let mut w = Window::default();
        for rtt in 1..=9 {
            w.add_rtt(rtt * 1000);
        }
        w.add_drop();
        // 10 samples, p90 is the 9th: the slowest success, not the drop.
        let s = w.close(0.9, 0);
        assert_eq!(s.latency, Some(9000.0));
        for rtt in 1..=8 {
            w.add_rtt(rtt * 1000);
        }
        w.add_drop();
        w.add_drop();
        let s = w.close(0.9, 3);
        assert_eq!(s.latency, None, "2 drops in 10 put p90 among the drops");
        assert_eq!(s.success_latency, Some(8000.0));
        assert_eq!(w.peak, 3, "the next window's peak starts at the current in-flight count");
        assert_eq!(w.samples(), 0);
    }

    #[test]
    fn the_baseline_only_falls_except_at_the_minimum_limit() {
        let mut b = Baseline::default();
        b.observe(1.0, false);
        assert_eq!(b.get(), None, "the first window is not a measurement");
        b.observe(10.0, false);
        b.observe(30.0, false);
        assert_eq!(b.get(), Some(10.0), "a loaded window does not raise it");
        for _ in 0..400 {
            b.observe(2.0, false);
        }
        assert!((b.get().unwrap() - 2.0).abs() < 0.01, "a lasting lower latency is followed");
        b.observe(100.0, true);
        assert!(b.get().unwrap() > 2.0, "re-measured at the minimum limit");
    }
}
