//! Every app under every protocol on in-process ranks, checked against its sequential run.

use numalab_dsm::apps::{max_rel_diff, sor::Sor, App};
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
