//! LMWC's read-ahead of first touches on a stride, on in-process ranks: a rank reading
//! one page in four of a block another rank wrote asks for the pages ahead on that
//! stride, fewer of its reads wait for a round trip, a guess at pages nobody touched
//! claims none of them, and every result still matches the sequential program.

use numalab_dsm::apps::{max_rel_diff, App};
use numalab_dsm::proto::single::DEFAULT_FREEZE;
use numalab_dsm::region::PAGE;
use numalab_dsm::{run_local, Config, Ctx, ProtocolKind};
use std::time::Duration;

const WORDS: usize = PAGE / 8;
/// Pages rank 0 writes: those homed on rank 0 (so its sweep claims no page beyond them).
const WRITTEN: usize = 32;
/// Rank 1 reads word 0 of every STEP-th page up to READ (the last four nobody wrote).
const STEP: usize = 4;
const READ: usize = 48;
/// Rank 1's output page (homed on rank 1).
const OUT: usize = 60;

struct Strided;

impl App for Strided {
    fn name(&self) -> &'static str {
        "strided"
    }
    fn pages(&self) -> usize {
        64
    }
    fn run(&self, c: &Ctx) {
        let g = c.at::<u64>(0);
        // SAFETY (every access): in the region; rank 0 writes before the barrier, rank 1
        // reads after it and alone writes its output page.
        unsafe {
            if c.rank() == 0 {
                for p in 0..WRITTEN {
                    g.add(p * WORDS).write_volatile(p as u64 + 1);
                }
            }
            c.barrier();
            if c.rank() == 1 {
                for (i, p) in (0..READ).step_by(STEP).enumerate() {
                    let v = g.add(p * WORDS).read_volatile();
                    g.add(OUT * WORDS + i).write_volatile(v);
                }
            }
            c.barrier();
        }
    }
    fn result(&self, c: &Ctx) -> Vec<f64> {
        let g = c.at::<u64>(0);
        // SAFETY: in the region, after the final barrier.
        (0..READ / STEP)
            .map(|i| unsafe { g.add(OUT * WORDS + i).read_volatile() } as f64)
            .collect()
    }
    fn sequential(&self) -> Vec<f64> {
        (0..READ)
            .step_by(STEP)
            .map(|p| if p < WRITTEN { p as f64 + 1.0 } else { 0.0 })
            .collect()
    }
}

fn cfg(protocol: ProtocolKind) -> Config {
    Config {
        threads: 1,
        protocol,
        net_delay: Duration::ZERO,
        pages: Strided.pages(),
        locks: 1,
        base: None,
        watchdog: Duration::from_secs(60),
        gc_bytes: 1 << 20,
        freeze: DEFAULT_FREEZE,
    }
}

#[test]
fn first_touches_on_a_stride_are_asked_ahead_and_guesses_claim_nothing() {
    let out = run_local(2, cfg(ProtocolKind::Lmwc), &Strided).unwrap();
    let got = out[0].result.as_ref().unwrap();
    assert_eq!(max_rel_diff(got, &Strided.sequential()), 0.0, "{got:?}");
    let s = &out[1].stats;
    // Eight pages rank 0 wrote are read; pages 0, 4 and 8 show the stride, so the rest
    // are asked ahead except where the faults run past the pages asked.
    assert!(s.touched_ahead > 0 && s.ahead_msgs > 0, "{s:?}");
    let read_written = WRITTEN.div_ceil(STEP) as u64;
    assert!(
        s.remote_faults < read_written,
        "{} remote faults for {read_written} pages: {s:?}",
        s.remote_faults
    );
    assert_eq!(s.pages_received, read_written, "one base per page read");
    // The guesses past page 32 found pages nobody touched: handed back, and the pages
    // rank 1 then read (32 to 44) are its own, private, as is its output page.
    assert!(s.ahead_untouched > 0, "{s:?}");
    assert_eq!(
        s.private_pages, 5,
        "32, 36, 40, 44 and the output page: {s:?}"
    );
    assert_eq!(
        out[0].stats.touched_ahead, 0,
        "rank 0 read nothing of rank 1's"
    );
}

#[test]
fn lmw_never_reads_ahead_and_agrees() {
    let out = run_local(2, cfg(ProtocolKind::Lmw), &Strided).unwrap();
    let got = out[0].result.as_ref().unwrap();
    assert_eq!(max_rel_diff(got, &Strided.sequential()), 0.0, "{got:?}");
    assert!(out.iter().all(|o| o.stats.touched_ahead == 0));
}
