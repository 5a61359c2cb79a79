//! What one interval of one rank cost and moved, beside the sequential compute it
//! splits: the figures a run slower than the sequential program is explained by.

use crate::stats::{Busiest, Stats};
use serde::{Deserialize, Serialize};

/// Per interval between two acquires (barrier departures, lock grants) of a rank: counts
/// summed over ranks ÷ acquires summed over ranks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerInterval {
    /// Ranks of the run.
    pub ranks: usize,
    /// Intervals (acquires) of each rank, on average.
    pub intervals_per_rank: f64,
    /// Bytes sent (requests, diffs, pages, notices).
    pub bytes: f64,
    /// Round trips: remote faults, bulk prefetch and read-ahead requests, and acquires (a barrier's
    /// arrival and departure, a remote lock's request and grant).
    pub round_trips: f64,
    /// Access faults (local and remote).
    pub faults: f64,
    /// mprotect calls.
    pub mprotects: f64,
    /// The sequential program's time ÷ intervals per rank, ns: the whole program's
    /// compute between two synchronizations, which the ranks split.
    pub sequential_ns: Option<f64>,
    /// Round trips × the run's mean remote-fault latency, ns (None without faults).
    pub round_trip_ns: Option<f64>,
    /// The rank with the longest application part (None in older records).
    #[serde(default)]
    pub busiest: Option<Busiest>,
}

impl PerInterval {
    /// The figures of `sum` (every rank's counts added) over the run's `ranks`, with the
    /// rank whose application part took longest; None without acquires.
    pub(crate) fn of(sum: &Stats, ranks: &[Stats], seq: Option<f64>) -> Option<PerInterval> {
        let n = sum.acquires as f64;
        if sum.acquires == 0 || ranks.is_empty() {
            return None;
        }
        let round_trips =
            (sum.remote_faults + sum.prefetch_msgs + sum.ahead_msgs + sum.acquires) as f64 / n;
        let per_rank = n / ranks.len() as f64;
        Some(PerInterval {
            ranks: ranks.len(),
            intervals_per_rank: per_rank,
            bytes: sum.bytes as f64 / n,
            round_trips,
            faults: sum.segv as f64 / n,
            mprotects: sum.mprotects as f64 / n,
            sequential_ns: seq.map(|s| s / per_rank),
            round_trip_ns: sum.per_remote_fault_ns().map(|f| f * round_trips),
            busiest: Busiest::of(ranks),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_interval_divides_by_the_intervals_of_every_rank() {
        let sum = Stats {
            acquires: 10,
            remote_faults: 6,
            prefetch_msgs: 2,
            remote_locks: 2,
            remote_fault_ns: 6 * 50_000,
            bytes: 10 * 1024,
            segv: 30,
            mprotects: 40,
            ..Stats::default()
        };
        let two = [Stats::default(), Stats::default()];
        let p = PerInterval::of(&sum, &two, Some(1e6)).unwrap();
        assert_eq!(p.intervals_per_rank, 5.0);
        // 6 faults + 2 prefetches + 10 acquires (remote locks are among the acquires).
        assert_eq!((p.bytes, p.round_trips), (1024.0, 1.8));
        assert_eq!((p.faults, p.mprotects), (3.0, 4.0));
        assert_eq!(p.sequential_ns, Some(2e5));
        assert_eq!(p.round_trip_ns, Some(50_000.0 * 1.8));
        assert_eq!(PerInterval::of(&Stats::default(), &two, Some(1e6)), None);
    }

    #[test]
    fn the_busiest_rank_is_the_one_with_the_longest_application_part() {
        let rank = |total_ns, barrier_ns, io_ns| Stats {
            total_ns,
            barrier_ns,
            io_ns,
            ..Default::default()
        };
        // Rank 0 ran longest but waited at barriers; rank 1 computed longest.
        let st = [rank(10, 6, 1), rank(9, 1, 2)];
        let b = Busiest::of(&st).unwrap();
        assert_eq!((b.rank, b.app_ns, b.io_ns), (1, 8, 2));
        let p = PerInterval::of(&rank(10, 0, 0), &st, None);
        assert_eq!(p, None, "no acquires, no interval");
    }
}
