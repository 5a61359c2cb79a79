//! One DSM rank under `mpirun` (used by the tests and by `numalab dsm run`):
//! `numalab-dsm-rank APP PROTOCOL THREADS [NET_DELAY_NS] [small|paper] [FREEZE_NS] [SCALE]`
//! (the LSW/SEQ freeze defaults to proto::single::DEFAULT_FREEZE, 30 µs; 0 turns it off;
//! SCALE, 1, 2, 4 or 8, multiplies the input's size as `numalab dsm run --scale` does).
//! Every rank prints one line `stats RANK {json}`; rank 0 also prints `check APP DIFF TOL`
//! and exits 1 when the result differs from the sequential run.

use numalab_dsm::apps::{by_name_scaled, max_rel_diff, App, Input, SCALES};
use numalab_dsm::mpi_transport::Mpi;
use numalab_dsm::{run_rank, Config, ProtocolKind};
use std::sync::Arc;
use std::time::Duration;

/// Die with exit 2 (a usage error) after saying why.
fn usage(msg: String) -> ! {
    eprintln!("{msg}");
    std::process::exit(2)
}

/// Die with exit 1 (a run failure) after saying why.
fn fail(msg: String) -> ! {
    eprintln!("{msg}");
    std::process::exit(1)
}

/// The application named in argv (`costs` is the cost micro-benchmark, not a CVM app).
fn app_arg(a: &[String]) -> Box<dyn App> {
    let input = a
        .get(5)
        .map_or(Some(Input::Small), |s| Input::parse(s))
        .unwrap_or_else(|| usage(format!("invalid input '{}': small or paper", a[5])));
    let scale = scale_arg(a);
    if a[1] == "costs" {
        return Box::new(numalab_dsm::apps::costs::Costs { reps: 50 });
    }
    by_name_scaled(&a[1], input, scale).unwrap_or_else(|| usage(format!("unknown app '{}'", a[1])))
}

/// The input's scale from argv (the seventh argument; 1 when absent).
fn scale_arg(a: &[String]) -> usize {
    let Some(s) = a.get(7) else { return 1 };
    s.parse()
        .ok()
        .filter(|k| SCALES.contains(k))
        .unwrap_or_else(|| usage(format!("invalid scale '{s}': 1, 2, 4 or 8")))
}

/// The rank's run parameters from argv, sized for `app`.
fn config_arg(a: &[String], app: &dyn App) -> Config {
    let protocol = ProtocolKind::parse(&a[2]).unwrap_or_else(|| {
        usage(format!(
            "unknown protocol '{}': lmw, lsw, seq or lmwc",
            a[2]
        ))
    });
    let threads: usize = a[3]
        .parse()
        .ok()
        .filter(|&t| (1..=64).contains(&t))
        .unwrap_or_else(|| usage(format!("invalid threads '{}': 1 to 64", a[3])));
    let delay: u64 = a.get(4).map_or(0, |s| s.parse().unwrap_or(0));
    let freeze = match a.get(6) {
        None => numalab_dsm::proto::single::DEFAULT_FREEZE,
        Some(s) => Duration::from_nanos(
            s.parse()
                .unwrap_or_else(|_| usage(format!("invalid freeze '{s}': nanoseconds"))),
        ),
    };
    Config {
        threads,
        protocol,
        net_delay: Duration::from_nanos(delay),
        pages: app.pages(),
        locks: app.locks(),
        base: Some(numalab_dsm::region::DEFAULT_BASE),
        watchdog: Duration::from_secs(60),
        gc_bytes: 64 << 20,
        freeze,
    }
}

/// Initialise MPI (multi-threaded when the library allows) and wrap the world; MPI is
/// finalised when the returned universe drops, so main keeps it to the end.
fn start_mpi() -> (mpi::environment::Universe, Arc<Mpi>) {
    let (universe, level) = mpi::initialize_with_threading(mpi::Threading::Multiple)
        .unwrap_or_else(|| fail("MPI could not be initialised".to_string()));
    let world = universe.world();
    let mpi = Mpi::new(world, level == mpi::Threading::Multiple).unwrap_or_else(|e| fail(e));
    (universe, Arc::new(mpi))
}

/// Rank 0's result lines: the costs, or the check against the sequential run (exit 1 if off).
fn report_result(app: &dyn App, costs: bool, result: Option<Vec<f64>>) {
    let Some(r) = result else { return };
    if costs {
        for (n, v) in numalab_dsm::apps::costs::COST_NAMES.iter().zip(&r) {
            if v.is_finite() {
                println!("cost {n}: {:.1} us", v / 1000.0);
            } else {
                println!("cost {n}: not measured (needs 3 ranks: mpirun -n 3)");
            }
        }
        return;
    }
    let d = max_rel_diff(&r, &app.sequential());
    println!("check {} {d:e} {:e}", app.name(), app.tolerance());
    if d > app.tolerance() {
        std::process::exit(1);
    }
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if let Err(e) = numalab_results::envvars::check_all() {
        usage(e);
    }
    if a.len() < 4 {
        usage(
            "usage: numalab-dsm-rank APP lmw|lsw|seq|lmwc THREADS [NET_DELAY_NS] [small|paper] [FREEZE_NS] [SCALE]".into(),
        );
    }
    let app = app_arg(&a);
    let cfg = config_arg(&a, app.as_ref());
    // The costs need a second rank to fault from (and a third for the 3-hop lock):
    // refuse before MPI starts rather than fail an assertion inside the run.
    // Outside any job this is one rank; a job that does not say its size is let run.
    let ranks = numalab_mpi::env::JobEnv::detect().map_or(1, |j| j.size);
    if a[1] == "costs" && (1..2).contains(&ranks) {
        usage(format!(
            "costs needs 2 or 3 ranks (3 for the 3-hop lock acquire), this is {ranks}: run it as `mpirun -n 3 numalab-dsm-rank costs {} 1`",
            a[2]
        ));
    }
    let (_universe, mpi) = start_mpi();
    let out = run_rank(cfg, Box::new(mpi.clone()), app.as_ref())
        .unwrap_or_else(|e| fail(format!("rank failed: {e}")));
    mpi.shutdown();
    let me = numalab_dsm::transport::Transport::rank(&*mpi);
    // Nothing of MPI but the finalize after this (see numalab_mpi::finalize).
    let size = numalab_dsm::transport::Transport::ranks(&*mpi);
    drop(mpi);
    numalab_mpi::finalize::before_finalize(size, me);
    // An app run's counters as one JSON line per rank (tests count them); the costs
    // print only their named figures, never a raw JSON line.
    if a[1] != "costs" {
        println!("stats {me} {}", serde_json::to_string(&out.stats).unwrap());
    }
    report_result(app.as_ref(), a[1] == "costs", out.result);
}
