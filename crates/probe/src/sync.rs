//! Barrier algorithms whose cost is itself measured (the collectives suite):
//! a central counter, a combining tree and a dissemination barrier.
//!
//! Every flag holds an epoch number that only grows, so no flag is ever reset and
//! no sense has to be reversed: a waiter for epoch `e` passes on any value `>= e`.
//! Each flag sits on its own 128-byte slot so that two flags never share a line
//! (nor an adjacent-line prefetch pair). These are textbook algorithms (Mellor-Crummey
//! and Scott); no crate offers them with per-thread ids, hence this module.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Which barrier algorithm a program's `Sync` steps use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SyncKind {
    /// One shared counter; the last arriver releases everyone through one flag.
    Central,
    /// Binary combining tree: each thread waits for its children, the root releases.
    Tree,
    /// Dissemination: in round r thread i signals thread (i + 2^r) mod P; ⌈log2 P⌉ rounds.
    Dissemination,
}

impl SyncKind {
    /// Every kind, in the order reports list them.
    pub const ALL: [SyncKind; 3] = [SyncKind::Central, SyncKind::Tree, SyncKind::Dissemination];

    /// Parse a kind name.
    pub fn parse(s: &str) -> Result<SyncKind, String> {
        match s {
            "central" | "counter" => Ok(SyncKind::Central),
            "tree" => Ok(SyncKind::Tree),
            "dissemination" => Ok(SyncKind::Dissemination),
            _ => Err(format!(
                "invalid barrier '{s}': one of central, tree, dissemination"
            )),
        }
    }

    /// The name used in output.
    pub fn name(self) -> &'static str {
        match self {
            SyncKind::Central => "central",
            SyncKind::Tree => "tree",
            SyncKind::Dissemination => "dissemination",
        }
    }
}

#[repr(align(128))]
#[derive(Default)]
struct Slot(AtomicU64);

#[repr(align(128))]
#[derive(Default)]
struct CountSlot(AtomicUsize);

/// A barrier for `n` threads with ids `0..n`; each thread keeps its own epoch.
pub struct Sync {
    kind: SyncKind,
    n: usize,
    count: CountSlot,
    release: Slot,
    /// Tree: arrival per thread. Dissemination: `rounds` flags per thread.
    flags: Vec<Slot>,
    rounds: usize,
}

/// Spins before a waiter starts yielding (only matters when threads share a CPU).
#[cfg(not(test))]
const SPINS_BEFORE_YIELD: u32 = 1 << 18;
/// The unit tests run 8 threads on as few as 2 busy CPUs: spinning a whole time slice
/// before yielding made one test take minutes there.
#[cfg(test)]
const SPINS_BEFORE_YIELD: u32 = 1 << 8;

fn spin_until(flag: &AtomicU64, epoch: u64) {
    let mut spins = 0u32;
    while flag.load(Ordering::Acquire) < epoch {
        if spins < SPINS_BEFORE_YIELD {
            spins += 1;
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

impl Sync {
    /// A barrier of `kind` for `n` threads (at least 1).
    pub fn new(kind: SyncKind, n: usize) -> Sync {
        let n = n.max(1);
        let rounds = (usize::BITS - (n - 1).leading_zeros()) as usize;
        let flags = match kind {
            SyncKind::Central => 0,
            SyncKind::Tree => n,
            SyncKind::Dissemination => n * rounds,
        };
        Sync {
            kind,
            n,
            count: CountSlot::default(),
            release: Slot::default(),
            flags: (0..flags).map(|_| Slot::default()).collect(),
            rounds,
        }
    }

    /// The algorithm.
    pub fn kind(&self) -> SyncKind {
        self.kind
    }

    /// Thread `id` waits for all `n`; `epoch` is its own counter, starting at 0.
    #[inline]
    pub fn wait(&self, id: usize, epoch: &mut u64) {
        *epoch += 1;
        let e = *epoch;
        match self.kind {
            SyncKind::Central => {
                if self.count.0.fetch_add(1, Ordering::AcqRel) + 1 == self.n {
                    // Reset before releasing: nobody re-arrives before seeing the release.
                    self.count.0.store(0, Ordering::Relaxed);
                    self.release.0.store(e, Ordering::Release);
                } else {
                    spin_until(&self.release.0, e);
                }
            }
            SyncKind::Tree => {
                for child in [2 * id + 1, 2 * id + 2] {
                    if child < self.n {
                        spin_until(&self.flags[child].0, e);
                    }
                }
                if id == 0 {
                    self.release.0.store(e, Ordering::Release);
                } else {
                    self.flags[id].0.store(e, Ordering::Release);
                    spin_until(&self.release.0, e);
                }
            }
            SyncKind::Dissemination => {
                for r in 0..self.rounds {
                    let to = (id + (1 << r)) % self.n;
                    self.flags[to * self.rounds + r]
                        .0
                        .store(e, Ordering::Release);
                    spin_until(&self.flags[id * self.rounds + r].0, e);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_thread_passes_early_with_any_algorithm_and_count() {
        for kind in SyncKind::ALL {
            for n in [1usize, 2, 3, 5, 8] {
                let s = Sync::new(kind, n);
                let arrived = AtomicUsize::new(0);
                std::thread::scope(|sc| {
                    for id in 0..n {
                        let (s, arrived) = (&s, &arrived);
                        sc.spawn(move || {
                            let mut epoch = 0;
                            for round in 0..200usize {
                                arrived.fetch_add(1, Ordering::SeqCst);
                                s.wait(id, &mut epoch);
                                let seen = arrived.load(Ordering::SeqCst);
                                assert!(seen >= n * (round + 1), "{kind:?} n={n}");
                                s.wait(id, &mut epoch);
                                assert!(arrived.load(Ordering::SeqCst) <= n * (round + 2));
                            }
                        });
                    }
                });
                assert_eq!(arrived.load(Ordering::SeqCst), n * 200);
            }
        }
    }

    #[test]
    fn names_round_trip_and_bad_names_are_named() {
        for k in SyncKind::ALL {
            assert_eq!(SyncKind::parse(k.name()), Ok(k));
        }
        assert!(SyncKind::parse("mcs").unwrap_err().contains("'mcs'"));
    }
}
