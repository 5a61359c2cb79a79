//! Every app under every protocol on in-process ranks, checked against its sequential run.

use numalab_dsm::apps::{
    barnes::Barnes, fft::Fft, max_rel_diff, ocean::Ocean, sor::Sor, swm::Swm, water::Water, App,
};
use numalab_dsm::proto::single::default_freeze;
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
        freeze: default_freeze(Duration::ZERO),
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
    for p in ProtocolKind::ALL {
        for t in [1, 4] {
            check(&app, 2, t, p);
        }
    }
}

#[test]
fn water_all_protocols() {
    let app = Water { n: 64, steps: 2 };
    for p in ProtocolKind::ALL {
        for t in [1, 4] {
            check(&app, 2, t, p);
        }
    }
}

#[test]
fn fft_all_protocols() {
    let app = Fft { n: 8 };
    for p in ProtocolKind::ALL {
        for t in [1, 4] {
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
    let mut c = cfg(&app, 2, ProtocolKind::Lmw);
    c.gc_bytes = 1;
    let out = run_local(2, c, &app).unwrap();
    assert!(out[0].stats.gcs > 0, "no collection ran");
    assert_eq!(
        max_rel_diff(out[0].result.as_ref().unwrap(), &app.sequential()),
        0.0
    );
}

#[test]
fn three_ranks_with_net_delay() {
    let app = Water { n: 48, steps: 1 };
    for p in ProtocolKind::ALL {
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
    for p in ProtocolKind::ALL {
        for t in [1, 4] {
            check(&app, 2, t, p);
        }
    }
}

#[test]
fn ocean_all_protocols() {
    let app = Ocean { n: 34, iters: 6 };
    for p in ProtocolKind::ALL {
        for t in [1, 4] {
            check(&app, 2, t, p);
        }
    }
}

#[test]
fn barnes_all_protocols() {
    let app = Barnes { n: 128, steps: 2 };
    for p in ProtocolKind::ALL {
        for t in [1, 4] {
            check(&app, 2, t, p);
        }
    }
}
