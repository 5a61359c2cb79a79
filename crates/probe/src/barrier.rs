//! A spinning barrier for pinned measurement threads.
//!
//! std's Barrier puts waiters to sleep in the kernel. Between timed passes that
//! lets a CPU go idle (and a virtual CPU halt), and waking it costs microseconds to
//! milliseconds and a clock ramp that lands inside the next timed pass. Spinning
//! keeps every measurement CPU busy and releases all waiters within a cache-line
//! transfer. Each thread has its own CPU, so spinning steals from no one; after a
//! long wait a waiter yields in case the OS does put two on one CPU.
//! No crate offers a plain reusable spin barrier, hence this small one.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Spins before a waiter starts yielding to the scheduler between checks.
const SPINS_BEFORE_YIELD: u32 = 1 << 20;

/// A reusable barrier for `n` threads that spins instead of sleeping.
pub struct SpinBarrier {
    n: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
}

impl SpinBarrier {
    /// A barrier for `n` threads (at least 1).
    pub fn new(n: usize) -> SpinBarrier {
        SpinBarrier {
            n: n.max(1),
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
        }
    }

    /// Wait until all `n` threads have called `wait` for this generation.
    pub fn wait(&self) {
        let gen = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.n {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
            return;
        }
        let mut spins = 0u32;
        while self.generation.load(Ordering::Acquire) == gen {
            if spins < SPINS_BEFORE_YIELD {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn no_thread_passes_before_all_arrive_in_any_round() {
        let b = SpinBarrier::new(3);
        let count = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    for round in 0..50u64 {
                        count.fetch_add(1, Ordering::SeqCst);
                        b.wait();
                        // Everyone of this round has counted, no one of the next yet.
                        assert!(count.load(Ordering::SeqCst) >= 3 * (round + 1));
                        b.wait();
                        assert!(count.load(Ordering::SeqCst) <= 3 * (round + 2));
                    }
                });
            }
        });
        assert_eq!(count.load(Ordering::SeqCst), 150);
    }
}
