//! Every app under every protocol on in-process ranks, checked against its sequential run.

use numalab_dsm::apps::{
    barnes::Barnes, fft::Fft, max_rel_diff, ocean::Ocean, sor::Sor, swm::Swm, water::Water, App,
};
use numalab_dsm::proto::single::DEFAULT_FREEZE;
use numalab_dsm::{run_local, Config, ProtocolKind};
use std::time::Duration;

fn cfg(app: &dyn App, t: usize, p: ProtocolKind) -> Config {
    Config {
        threads: t,
        protocol: p,
        net_delay: Duration::ZERO,
        pages: app.pages(),
        locks: app.locks(),
        base: None,
        watchdog: Duration::from_secs(60),
        gc_bytes: 1 << 20,
        freeze: DEFAULT_FREEZE,
    }
}

fn check(app: &(dyn App + Sync), ranks: usize, t: usize, p: ProtocolKind) {
    let out = run_local(ranks, cfg(app, t, p), app).unwrap();
    let got = out[0].result.clone().unwrap();
    let want = app.sequential();
    let d = max_rel_diff(&got, &want);
    assert!(
        d <= app.tolerance(),
        "{} {:?} T={t}: differs by {d}",
        app.name(),
        p
    );
}

#[test]
fn sor_all_protocols() {
    let app = Sor {
        rows: 34,
        cols: 256,
        iters: 3,
    };
    for p in ProtocolKind::EVERY {
        for t in [1, 2, 4] {
            check(&app, 2, t, p);
        }
    }
}

#[test]
fn water_all_protocols() {
    let app = Water { n: 64, steps: 2 };
    for p in ProtocolKind::EVERY {
        for t in [1, 2, 4] {
            check(&app, 2, t, p);
        }
    }
}

#[test]
fn fft_all_protocols() {
    let app = Fft { n: 8 };
    for p in ProtocolKind::EVERY {
        for t in [1, 2, 4] {
            check(&app, 2, t, p);
        }
    }
}

#[test]
fn lmw_makes_diffs_lazily() {
    // Each rank writes its rows in every iteration, but only the boundary pages are ever
    // asked for: eager creation would diff every written page at every interval.
    let app = Sor {
        rows: 34,
        cols: 256,
        iters: 6,
    };
    let out = run_local(2, cfg(&app, 2, ProtocolKind::Lmw), &app).unwrap();
    let created: u64 = out.iter().map(|o| o.stats.diffs_created).sum();
    let eager: u64 = out.iter().map(|o| o.stats.page_intervals).sum();
    let used: u64 = out.iter().map(|o| o.stats.diffs_used).sum();
    assert!(used > 0, "no diff was used");
    assert!(
        created * 4 < eager,
        "lazy LMW made {created} diffs for {eager} written page-intervals"
    );
}

#[test]
fn lmw_garbage_collects_and_stays_correct() {
    let app = Sor {
        rows: 34,
        cols: 256,
        iters: 6,
    };
    for p in [ProtocolKind::Lmw, ProtocolKind::Lmwc] {
        let mut c = cfg(&app, 2, p);
        c.gc_bytes = 1;
        let out = run_local(2, c, &app).unwrap();
        assert!(out[0].stats.gcs > 0, "{p:?}: no collection ran");
        assert_eq!(
            max_rel_diff(out[0].result.as_ref().unwrap(), &app.sequential()),
            0.0,
            "{p:?}"
        );
    }
}

#[test]
fn three_ranks_with_net_delay() {
    let app = Water { n: 48, steps: 1 };
    for p in ProtocolKind::EVERY {
        let mut c = cfg(&app, 2, p);
        c.net_delay = Duration::from_micros(200);
        let out = run_local(3, c, &app).unwrap();
        let d = max_rel_diff(out[0].result.as_ref().unwrap(), &app.sequential());
        assert!(d <= app.tolerance(), "{p:?}: {d}");
    }
}

#[test]
fn swm_all_protocols() {
    let app = Swm { n: 32, steps: 2 };
    for p in ProtocolKind::EVERY {
        for t in [1, 2, 4] {
            check(&app, 2, t, p);
        }
    }
}

#[test]
fn ocean_all_protocols() {
    let app = Ocean { n: 34, iters: 6 };
    for p in ProtocolKind::EVERY {
        for t in [1, 2, 4] {
            check(&app, 2, t, p);
        }
    }
}

#[test]
fn barnes_all_protocols() {
    let app = Barnes { n: 128, steps: 2 };
    for p in ProtocolKind::EVERY {
        for t in [1, 2, 4] {
            check(&app, 2, t, p);
        }
    }
}

/// Rank 0 writes one page in five intervals (a lock around each write); rank 1 then
/// copies it to a second page, which rank 0 reads back.
struct FiveIntervals;

impl App for FiveIntervals {
    fn name(&self) -> &'static str {
        "five-intervals"
    }
    fn pages(&self) -> usize {
        2
    }
    fn locks(&self) -> usize {
        1
    }
    fn run(&self, c: &numalab_dsm::Ctx) {
        let src = c.at::<u64>(0);
        let dst = c.at::<u64>(numalab_dsm::region::PAGE);
        if c.rank() == 0 {
            for k in 0..5 {
                c.lock(0);
                // SAFETY: in the region; only rank 0 writes page 0, under the lock.
                unsafe { src.add(k).write_volatile(k as u64 + 1) };
                c.unlock(0);
            }
        }
        c.barrier();
        if c.rank() == 1 {
            for k in 0..5 {
                // SAFETY: in the region; page 0 is read after the barrier that published it.
                unsafe { dst.add(k).write_volatile(src.add(k).read_volatile()) };
            }
        }
    }
    fn result(&self, c: &numalab_dsm::Ctx) -> Vec<f64> {
        let dst = c.at::<u64>(numalab_dsm::region::PAGE);
        // SAFETY: in the region, after the final barrier.
        (0..5)
            .map(|k| unsafe { dst.add(k).read_volatile() } as f64)
            .collect()
    }
    fn sequential(&self) -> Vec<f64> {
        (1..=5).map(|k| k as f64).collect()
    }
}

#[test]
fn lmw_one_diff_covers_a_page_written_in_five_intervals() {
    let out = run_local(2, cfg(&FiveIntervals, 1, ProtocolKind::Lmw), &FiveIntervals).unwrap();
    assert_eq!(out[0].result, Some(FiveIntervals.sequential()));
    let (r0, r1) = (&out[0].stats, &out[1].stats);
    // Eager creation would make five diffs of page 0 on rank 0; lazily, rank 1's fault
    // gets one diff covering all five intervals. (Page 1's diff is made when rank 0 reads
    // the result, which may overlap rank 1 taking its counters: not counted here.)
    assert_eq!(r0.page_intervals, 5);
    assert_eq!((r0.diffs_created, r1.diffs_used), (1, 1));
}

#[test]
fn scaled_sor_and_water_match_their_sequential_programs() {
    use numalab_dsm::apps::{by_name_scaled, Input};
    for name in ["sor", "water-nsq"] {
        let app = by_name_scaled(name, Input::Small, 2).unwrap();
        for p in [ProtocolKind::Lmw, ProtocolKind::Lmwc] {
            check(app.as_ref(), 2, 2, p);
        }
    }
}

/// Rank 0 writes the same 4 neighbouring pages in each of `ITERS` intervals; rank 1 reads
/// them between (two barriers an iteration, so no request meets an open interval) and
/// keeps their sums on its own page.
struct Band;

const BAND: usize = 4;
const ITERS: usize = 10;
const WORDS: usize = BAND * numalab_dsm::region::PAGE / 8;

impl App for Band {
    fn name(&self) -> &'static str {
        "band"
    }
    fn pages(&self) -> usize {
        BAND + 1
    }
    fn run(&self, c: &numalab_dsm::Ctx) {
        let band = c.at::<f64>(0);
        let sums = c.at::<f64>(BAND * numalab_dsm::region::PAGE);
        for k in 0..ITERS {
            if c.rank() == 0 {
                for i in 0..WORDS {
                    // SAFETY: in the region; only rank 0 writes the band, between barriers.
                    unsafe { band.add(i).write_volatile((k * WORDS + i) as f64) };
                }
            }
            c.barrier();
            if c.rank() == 1 {
                // SAFETY: in the region; read after the barrier that published it.
                let s: f64 = (0..WORDS)
                    .map(|i| unsafe { band.add(i).read_volatile() })
                    .sum();
                // SAFETY: only rank 1 writes its page.
                unsafe { sums.add(k).write_volatile(s) };
            }
            c.barrier();
        }
    }
    fn result(&self, c: &numalab_dsm::Ctx) -> Vec<f64> {
        let sums = c.at::<f64>(BAND * numalab_dsm::region::PAGE);
        // SAFETY: in the region, after the final barrier.
        (0..ITERS)
            .map(|k| unsafe { sums.add(k).read_volatile() })
            .collect()
    }
    fn sequential(&self) -> Vec<f64> {
        (0..ITERS)
            .map(|k| (0..WORDS).map(|i| (k * WORDS + i) as f64).sum())
            .collect()
    }
}

#[test]
fn lmwc_opens_a_band_written_every_interval_with_one_fault() {
    let faults = |p| {
        let out = run_local(2, cfg(&Band, 1, p), &Band).unwrap();
        assert_eq!(out[0].result, Some(Band.sequential()), "{p:?}");
        out[0].stats.segv
    };
    // LMW write-protects the band at each interval's end: a write fault per page per
    // interval. LMWC opens the pages the last interval wrote with the first one's fault:
    // after the interval that shares the band (first touches, then one fault a page),
    // one fault an interval.
    let (lmw, lmwc) = (faults(ProtocolKind::Lmw), faults(ProtocolKind::Lmwc));
    assert!(
        lmw >= (BAND * (ITERS - 1)) as u64,
        "LMW: {lmw} write faults"
    );
    assert!(lmwc <= (ITERS + 2 * BAND) as u64, "LMWC: {lmwc} faults");
}
