//! LMWC's page classification on in-process ranks: a page only one rank touches is never
//! twinned, diffed or noticed; a page a second rank touches turns shared and every result
//! still matches the sequential program (with three ranks, and with collections).

use numalab_dsm::apps::{max_rel_diff, App};
use numalab_dsm::proto::single::DEFAULT_FREEZE;
use numalab_dsm::region::PAGE;
use numalab_dsm::{run_local, Config, Ctx, ProtocolKind};
use std::time::Duration;

fn cfg(app: &dyn App, gc_bytes: usize) -> Config {
    Config {
        threads: 1,
        protocol: ProtocolKind::Lmwc,
        net_delay: Duration::ZERO,
        pages: app.pages(),
        locks: app.locks(),
        base: None,
        watchdog: Duration::from_secs(60),
        gc_bytes,
        freeze: DEFAULT_FREEZE,
    }
}

const WORDS: usize = PAGE / 8;

/// Each rank writes its own block of pages in five intervals and reads nothing of
/// another's; `swap` puts each rank's block on the other rank's directory home.
struct OwnBlocks {
    swap: bool,
}

impl OwnBlocks {
    fn block(&self, rank: usize) -> usize {
        if self.swap {
            1 - rank
        } else {
            rank
        }
    }
}

impl App for OwnBlocks {
    fn name(&self) -> &'static str {
        "own-blocks"
    }
    fn pages(&self) -> usize {
        8
    }
    fn run(&self, c: &Ctx) {
        let g = c.at::<u64>(0);
        let first = self.block(c.rank()) * 4 * WORDS;
        for round in 0..5u64 {
            for k in (first..first + 4 * WORDS).step_by(7) {
                // SAFETY: in the region; only this rank touches its block.
                unsafe { g.add(k).write_volatile(k as u64 * 10 + round) };
            }
            c.barrier();
        }
    }
    fn result(&self, c: &Ctx) -> Vec<f64> {
        let g = c.at::<u64>(0);
        // SAFETY: in the region, after the final barrier.
        (0..8 * WORDS)
            .map(|k| unsafe { g.add(k).read_volatile() } as f64)
            .collect()
    }
    fn sequential(&self) -> Vec<f64> {
        let mut w = vec![0.0; 8 * WORDS];
        for b in 0..2 {
            for k in (b * 4 * WORDS..(b + 1) * 4 * WORDS).step_by(7) {
                w[k] = k as f64 * 10.0 + 4.0;
            }
        }
        w
    }
}

#[test]
fn a_page_one_rank_touches_is_never_twinned() {
    for swap in [false, true] {
        let app = OwnBlocks { swap };
        let out = run_local(2, cfg(&app, 1 << 20), &app).unwrap();
        assert_eq!(
            max_rel_diff(out[0].result.as_ref().unwrap(), &app.sequential()),
            0.0,
            "swap {swap}"
        );
        for (r, o) in out.iter().enumerate() {
            let s = &o.stats;
            assert_eq!(s.private_pages, 4, "rank {r} swap {swap}: {s:?}");
            assert_eq!(
                (s.twins, s.diffs_created, s.page_intervals),
                (0, 0, 0),
                "rank {r}"
            );
            // One fault per page touched, the first touch, and none at the later
            // intervals; on either home the second touch claims the last two pages.
            let (segv, claimed) = (2, 2);
            assert_eq!(
                (s.segv, s.claimed),
                (segv, claimed),
                "rank {r} swap {swap}: {s:?}"
            );
        }
        // Pages homed on the other rank cost a message to learn they are private.
        let remote: u64 = out.iter().map(|o| o.stats.remote_faults).sum();
        assert_eq!(remote, if swap { 4 } else { 0 }, "swap {swap}");
    }
}

/// Rank 0 writes page 0 alone for three intervals; then every rank reads it and writes
/// its own word of it while rank 0 writes another; then each reads a neighbour's word.
struct Handover {
    ranks: usize,
}

fn handover_values(ranks: usize) -> Vec<u64> {
    let mut w = vec![0u64; WORDS];
    for round in 0..3u64 {
        for (k, v) in w.iter_mut().enumerate().take(8) {
            *v = k as u64 + 1 + round;
        }
    }
    let sum: u64 = w[..8].iter().sum();
    w[50] = 7;
    for r in 1..ranks {
        w[100 + r] = sum + r as u64;
    }
    for r in 0..ranks {
        w[200 + r] = w[100 + (r + 1) % ranks] + w[50];
    }
    w
}

impl App for Handover {
    fn name(&self) -> &'static str {
        "handover"
    }
    fn pages(&self) -> usize {
        4
    }
    fn run(&self, c: &Ctx) {
        let g = c.at::<u64>(0);
        let me = c.rank();
        // SAFETY (every access below): in the region; each word has one writer between
        // barriers, and words are read only after the barrier that follows their write.
        unsafe {
            for round in 0..3u64 {
                if me == 0 {
                    for k in 0..8 {
                        g.add(k).write_volatile(k as u64 + 1 + round);
                    }
                }
                c.barrier();
            }
            if me == 0 {
                g.add(50).write_volatile(7);
            } else {
                let sum: u64 = (0..8).map(|k| g.add(k).read_volatile()).sum();
                g.add(100 + me).write_volatile(sum + me as u64);
            }
            c.barrier();
            let next = g.add(100 + (me + 1) % c.ranks()).read_volatile();
            g.add(200 + me)
                .write_volatile(next + g.add(50).read_volatile());
            c.barrier();
        }
    }
    fn result(&self, c: &Ctx) -> Vec<f64> {
        let g = c.at::<u64>(0);
        // SAFETY: in the region, after the final barrier.
        (0..WORDS)
            .map(|k| unsafe { g.add(k).read_volatile() } as f64)
            .collect()
    }
    fn sequential(&self) -> Vec<f64> {
        handover_values(self.ranks)
            .into_iter()
            .map(|v| v as f64)
            .collect()
    }
}

#[test]
fn a_page_a_second_rank_touches_turns_shared_and_verifies() {
    for (ranks, gc_bytes) in [(2, 1 << 20), (3, 1 << 20), (3, 1), (4, 1)] {
        let app = Handover { ranks };
        let out = run_local(ranks, cfg(&app, gc_bytes), &app).unwrap();
        let got = out[0].result.as_ref().unwrap();
        assert_eq!(
            max_rel_diff(got, &app.sequential()),
            0.0,
            "{ranks} ranks, gc at {gc_bytes} B"
        );
        let s0 = &out[0].stats;
        // Private for three intervals: no twin, no notice; then turned shared once.
        assert_eq!(s0.reclassified, 1, "{s0:?}");
        assert!(
            s0.twins >= 1,
            "rank 0 wrote the shared page untwinned: {s0:?}"
        );
        for o in &out[1..] {
            assert!(o.stats.pages_received >= 1, "{:?}", o.stats);
        }
        if gc_bytes == 1 {
            assert!(s0.gcs > 0, "no collection ran");
        }
    }
}
