//! One DSM rank under `mpirun` (used by the tests and by `numalab dsm run`):
//! `numalab-dsm-rank APP PROTOCOL THREADS [NET_DELAY_NS] [small|paper] [FREEZE_NS]`
//! (the LSW/SEQ freeze defaults to proto::single::DEFAULT_FREEZE, none).
//! Every rank prints one line `stats RANK {json}`; rank 0 also prints `check APP DIFF TOL`
//! and exits 1 when the result differs from the sequential run.

use numalab_dsm::apps::{by_name, max_rel_diff, Input};
use numalab_dsm::mpi_transport::Mpi;
use numalab_dsm::{run_rank, Config, ProtocolKind};
use std::time::Duration;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() < 4 {
        eprintln!("usage: numalab-dsm-rank APP lmw|lsw|seq THREADS [NET_DELAY_NS] [small|paper]");
        std::process::exit(2);
    }
    let input = a
        .get(5)
        .map_or(Some(Input::Small), |s| Input::parse(s))
        .unwrap_or_else(|| {
            eprintln!("invalid input '{}': small or paper", a[5]);
            std::process::exit(2)
        });
    let costs = a[1] == "costs";
    let app: Box<dyn numalab_dsm::apps::App> = if costs {
        Box::new(numalab_dsm::apps::costs::Costs { reps: 50 })
    } else {
        by_name(&a[1], input).unwrap_or_else(|| {
            eprintln!("unknown app '{}'", a[1]);
            std::process::exit(2)
        })
    };
    let protocol = ProtocolKind::parse(&a[2]).unwrap_or_else(|| {
        eprintln!("unknown protocol '{}': lmw, lsw or seq", a[2]);
        std::process::exit(2)
    });
    let threads: usize = a[3]
        .parse()
        .ok()
        .filter(|&t| (1..=64).contains(&t))
        .unwrap_or_else(|| {
            eprintln!("invalid threads '{}': 1 to 64", a[3]);
            std::process::exit(2)
        });
    let delay: u64 = a.get(4).map_or(0, |s| s.parse().unwrap_or(0));
    let freeze = match a.get(6) {
        None => numalab_dsm::proto::single::DEFAULT_FREEZE,
        Some(s) => Duration::from_nanos(s.parse().unwrap_or_else(|_| {
            eprintln!("invalid freeze '{s}': nanoseconds");
            std::process::exit(2)
        })),
    };
    let (universe, level) = mpi::initialize_with_threading(mpi::Threading::Multiple)
        .unwrap_or_else(|| {
            eprintln!("MPI could not be initialised");
            std::process::exit(1)
        });
    let mpi = std::sync::Arc::new(
        Mpi::new(universe.world(), level == mpi::Threading::Multiple).unwrap_or_else(|e| {
            eprintln!("{e}");
            std::process::exit(1)
        }),
    );
    let cfg = Config {
        threads,
        protocol,
        net_delay: Duration::from_nanos(delay),
        pages: app.pages(),
        locks: app.locks(),
        base: Some(numalab_dsm::region::DEFAULT_BASE),
        watchdog: Duration::from_secs(60),
        gc_bytes: 64 << 20,
        freeze,
    };
    let out = run_rank(cfg, Box::new(mpi.clone()), app.as_ref()).unwrap_or_else(|e| {
        eprintln!("rank failed: {e}");
        std::process::exit(1)
    });
    mpi.shutdown();
    let me = numalab_dsm::transport::Transport::rank(&*mpi);
    println!("stats {me} {}", serde_json::to_string(&out.stats).unwrap());
    if let (true, Some(r)) = (costs, &out.result) {
        for (n, v) in numalab_dsm::apps::costs::COST_NAMES.iter().zip(r) {
            println!("cost {n}: {:.1} us", v / 1000.0);
        }
        return;
    }
    if let Some(r) = out.result {
        let d = max_rel_diff(&r, &app.sequential());
        println!("check {} {d:e} {:e}", app.name(), app.tolerance());
        if d > app.tolerance() {
            std::process::exit(1);
        }
    }
}
