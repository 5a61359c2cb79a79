//! LMWC's bulk prefetch on in-process ranks: at an acquire, a rank asks ahead, in one
//! request per writer, only for the pages a write notice names that it fetched before
//! (diffs, or a base on trial until an acquire finds it untouched); results still match
//! the sequential program, with and without collections.

use numalab_dsm::apps::{max_rel_diff, App};
use numalab_dsm::proto::single::DEFAULT_FREEZE;
use numalab_dsm::region::PAGE;
use numalab_dsm::{run_local, Config, Ctx, ProtocolKind};
use std::time::Duration;

fn cfg(protocol: ProtocolKind, gc_bytes: usize) -> Config {
    Config {
        threads: 1,
        protocol,
        net_delay: Duration::ZERO,
        pages: 8,
        locks: 1,
        base: None,
        watchdog: Duration::from_secs(60),
        gc_bytes,
        freeze: DEFAULT_FREEZE,
    }
}

const WORDS: usize = PAGE / 8;
const ROUNDS: u64 = 5;
/// Where rank 1 keeps what it read (page 6: homed on rank 1, which alone writes it).
const OUT: usize = 6 * WORDS;

/// Each round rank 0 writes word 0 of pages 0..4; rank 1 reads pages 0 and 1 every round
/// and page 2 in round 0 only (so page 2 is shared, noticed every round, tried once), and
/// never page 3.
struct Readers;

impl App for Readers {
    fn name(&self) -> &'static str {
        "readers"
    }
    fn pages(&self) -> usize {
        8
    }
    fn run(&self, c: &Ctx) {
        let g = c.at::<u64>(0);
        // SAFETY (every access): in the region; each word has one writer, read only after
        // the barrier that follows its write.
        unsafe {
            for r in 0..ROUNDS {
                if c.rank() == 0 {
                    for p in 0..4 {
                        g.add(p * WORDS).write_volatile(100 * r + p as u64);
                    }
                }
                c.barrier();
                if c.rank() == 1 {
                    let seen = if r == 0 { 3 } else { 2 };
                    for p in 0..seen {
                        let v = g.add(p * WORDS).read_volatile();
                        g.add(OUT + 3 * r as usize + p).write_volatile(v);
                    }
                }
                c.barrier();
            }
        }
    }
    fn result(&self, c: &Ctx) -> Vec<f64> {
        let g = c.at::<u64>(0);
        // SAFETY: in the region, after the final barrier.
        let word = |k: usize| unsafe { g.add(k).read_volatile() } as f64;
        let mut v: Vec<f64> = (0..4).map(|p| word(p * WORDS)).collect();
        v.extend((0..3 * ROUNDS as usize).map(|k| word(OUT + k)));
        v
    }
    fn sequential(&self) -> Vec<f64> {
        let mut v: Vec<f64> = (0..4).map(|p| (100 * (ROUNDS - 1) + p) as f64).collect();
        for r in 0..ROUNDS {
            for p in 0..3 {
                let read = p < 2 || r == 0;
                v.push(if read { (100 * r + p) as f64 } else { 0.0 });
            }
        }
        v
    }
}

#[test]
fn prefetch_asks_once_per_writer_for_the_noticed_pages_it_fetched_before_and_tries_bases_once() {
    let out = run_local(2, cfg(ProtocolKind::Lmwc, 1 << 20), &Readers).unwrap();
    let got = out[0].result.as_ref().unwrap();
    assert_eq!(max_rel_diff(got, &Readers.sequential()), 0.0, "{got:?}");
    let s = &out[1].stats;
    // Round 0 brings the bases of pages 0..2, and of page 3 too (the stride read-ahead
    // after pages 1 and 2 asked for it), so round 1 asks ahead for all four on trial; its
    // reads of 0 and 1 keep them asked in rounds 2..4, and pages 2 and 3, untouched since,
    // are not asked again: 4 + 2 + 2 + 2 pages, one request per round.
    assert_eq!((s.prefetched, s.prefetch_msgs), (10, 4), "{s:?}");
    // Only the first touches of pages 0..2 homed on rank 0 go remote: no diff fault.
    assert_eq!(s.remote_faults, 3, "{s:?}");
    assert_eq!(
        out[0].stats.prefetched, 0,
        "rank 0 read nothing of rank 1's"
    );
}

#[test]
fn prefetch_verifies_with_collections_and_lmw_never_prefetches() {
    for (protocol, gc_bytes) in [
        (ProtocolKind::Lmwc, 1),
        (ProtocolKind::Lmwc, 1 << 20),
        (ProtocolKind::Lmw, 1 << 20),
    ] {
        let out = run_local(2, cfg(protocol, gc_bytes), &Readers).unwrap();
        let got = out[0].result.as_ref().unwrap();
        assert_eq!(
            max_rel_diff(got, &Readers.sequential()),
            0.0,
            "{protocol:?} gc {gc_bytes}: {got:?}"
        );
        let s = &out[1].stats;
        if protocol == ProtocolKind::Lmw {
            assert_eq!((s.prefetched, s.prefetch_msgs), (0, 0), "{s:?}");
        } else {
            assert!(s.prefetched > 0, "{protocol:?} gc {gc_bytes}: {s:?}");
        }
        if gc_bytes == 1 {
            assert!(s.gcs > 0, "no collection ran");
        }
    }
}
