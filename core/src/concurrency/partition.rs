//! Partitions: shares of one limit (say live 90 %, batch 10 %), enforced only when it is full.
//!
//! The rule keeps the limit hard (in-flight never exceeds it) and stays work-conserving: a
//! request of partition `p` is admitted when the limit has room and either `p` is below its own
//! share, or the room left after it would still cover what the *other active* partitions are
//! guaranteed and not yet using. A partition is active while it has work in flight or has asked in
//! the current or the previous window, so an idle partition's share is lent out, and returns to
//! it as the borrowers' permits are released. Requests without a partition have a share of 0.

use super::config::PartitionConfig;

/// One partition's live counts.
#[derive(Clone, Debug, Default)]
pub(crate) struct PartitionState {
    pub inflight: u32,
    /// The window index of this partition's latest request (`None`: it never asked).
    pub last_seen: Option<u64>,
}

/// The configured shares, as fractions, with their live counts.
#[derive(Debug, Default)]
pub(crate) struct Partitions {
    names: Vec<String>,
    shares: Vec<f64>,
    pub(crate) states: Vec<PartitionState>,
}

impl Partitions {
    pub(crate) fn new(config: &[PartitionConfig]) -> Partitions {
        Partitions {
            names: config.iter().map(|p| p.name.clone()).collect(),
            shares: config.iter().map(|p| p.percent / 100.0).collect(),
            states: vec![PartitionState::default(); config.len()],
        }
    }

    pub(crate) fn names(&self) -> &[String] {
        &self.names
    }

    /// The slots `share` of `limit` guarantees (rounded up, so a small share is never 0).
    fn guaranteed(share: f64, limit: u32) -> u32 {
        (share * limit as f64).ceil() as u32
    }

    /// Whether one more request of `partition` fits, with `inflight` of `limit` taken.
    pub(crate) fn admits(&self, partition: Option<usize>, limit: u32, inflight: u32, window: u64) -> bool {
        if inflight >= limit {
            return false;
        }
        if self.states.is_empty() {
            return true;
        }
        if let Some(p) = partition
            && self.states[p].inflight < Self::guaranteed(self.shares[p], limit)
        {
            return true;
        }
        let reserved: u32 = (0..self.states.len())
            .filter(|&q| Some(q) != partition)
            .filter(|&q| self.states[q].inflight > 0 || self.states[q].last_seen.is_some_and(|w| w + 1 >= window))
            .map(|q| Self::guaranteed(self.shares[q], limit).saturating_sub(self.states[q].inflight))
            .sum();
        inflight + reserved < limit
    }

    /// Notes that `partition` asked, in window `window`.
    pub(crate) fn seen(&mut self, partition: Option<usize>, window: u64) {
        if let Some(p) = partition {
            self.states[p].last_seen = Some(window);
        }
    }

    pub(crate) fn add(&mut self, partition: Option<usize>, delta: i32) {
        if let Some(p) = partition {
            let s = &mut self.states[p];
            s.inflight = s.inflight.saturating_add_signed(delta);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live_batch() -> Partitions {
        Partitions::new(&[
            PartitionConfig { name: "live".into(), percent: 90.0 },
            PartitionConfig { name: "batch".into(), percent: 10.0 },
        ])
    }

    #[test]
    fn an_idle_partitions_share_is_lent_and_returned() {
        let mut p = live_batch();
        // Window 5; live last asked long ago: batch may take the whole limit of 10.
        p.states[0].last_seen = Some(0);
        p.seen(Some(1), 5);
        for inflight in 0..10 {
            assert!(p.admits(Some(1), 10, inflight, 5));
            p.add(Some(1), 1);
        }
        assert!(!p.admits(Some(1), 10, 10, 5), "never past the limit");
        // Live shows up: nothing is free, so it waits; as batch releases, live gets each slot.
        p.seen(Some(0), 5);
        assert!(!p.admits(Some(0), 10, 10, 5));
        p.add(Some(1), -1);
        assert!(!p.admits(Some(1), 10, 9, 5), "batch is over its share and live is active");
        assert!(p.admits(Some(0), 10, 9, 5), "live is under its share");
    }

    #[test]
    fn with_both_active_each_keeps_its_share() {
        let mut p = live_batch();
        p.seen(Some(0), 1);
        p.seen(Some(1), 1);
        p.states[0].inflight = 50;
        p.states[1].inflight = 5;
        assert!(p.admits(Some(1), 100, 55, 1), "batch is under its 10");
        p.states[1].inflight = 10;
        assert!(!p.admits(Some(1), 100, 60, 1), "40 free slots are live's unused guarantee");
        assert!(p.admits(Some(0), 100, 60, 1));
        // Live goes idle (nothing in flight, not seen for two windows): batch borrows everything.
        p.states[0].inflight = 0;
        assert!(p.admits(Some(1), 100, 10, 3));
        assert!(!p.admits(Some(1), 100, 10, 2), "seen in the previous window: still active");
    }
}
