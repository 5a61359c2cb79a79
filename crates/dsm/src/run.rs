//! Running a rank: service thread, user-level threads, the app, final barriers; and
//! in-process jobs (ranks as OS threads) for tests.

use crate::apps::{thread_cpu_ns, App};
use crate::node::{Config, Rank};
use crate::sched::install_fault_sink;
use crate::state::mono_ns;
use crate::stats::Stats;
use crate::transport::{Local, Transport};
use crate::Ctx;
use std::sync::{Arc, Mutex};

/// What one rank brings back.
#[derive(Debug, Clone)]
pub struct RankOutcome {
    /// Counters and times of the parallel section.
    pub stats: Stats,
    /// The app's result (rank 0 only).
    pub result: Option<Vec<f64>>,
}

/// Run `app` on this rank to completion.
pub fn run_rank(
    cfg: Config,
    transport: Box<dyn Transport>,
    app: &dyn App,
) -> Result<RankOutcome, String> {
    install_fault_sink()?;
    let rank = Rank::new(cfg, transport)?;
    let svc = {
        let r = rank.clone();
        std::thread::Builder::new()
            .name("dsm-service".into())
            .spawn(move || r.serve())
            .map_err(|e| e.to_string())?
    };
    let result = Mutex::new(None);
    let stats = Mutex::new(None);
    // Every rank has mapped its region: the timed section starts on all at once, so no
    // rank's time counts another's set-up as a wait at the app's first barrier.
    rank.transport.barrier();
    let svc_clock = thread_clock(&svc);
    let (t0, cpu0, svc0) = (mono_ns(), thread_cpu_ns(), clock_ns(svc_clock));
    let kill = numalab_results::envvars::whole("NUMALAB_DSM_KILL_RANK")?.map(|r| r as usize);
    // With NUMALAB_DSM_KILL_SIGNAL=SEGV the rank sends itself SIGSEGV instead, as
    // `kill -SEGV` would: the fault handler must let it end the rank.
    let signal = match numalab_results::envvars::choice("NUMALAB_DSM_KILL_SIGNAL")?.as_deref() {
        Some("SEGV") => libc::SIGSEGV,
        _ => libc::SIGKILL,
    };
    let body = |tid: usize| {
        let c = Ctx::new(&rank, tid);
        if kill == Some(c.rank()) && tid == 0 {
            // Fault injection for tests: die mid-run, as a crashed rank would, while the
            // other ranks wait on it at the app's first barrier.
            // SAFETY: raising a signal at ourselves has no memory-safety preconditions.
            unsafe { libc::raise(signal) };
        }
        app.run(&c);
        c.barrier();
        if tid == 0 {
            let mut s = rank.stats();
            s.total_ns = mono_ns() - t0;
            s.compute_cpu_ns = thread_cpu_ns().saturating_sub(cpu0);
            s.service_cpu_ns = clock_ns(svc_clock).saturating_sub(svc0);
            *stats.lock().unwrap() = Some(s);
            if c.rank() == 0 {
                *result.lock().unwrap() = Some(app.result(&c));
            }
        }
        c.barrier();
    };
    let r = crate::sched::run(&rank, &body);
    rank.stop();
    let _ = svc.join();
    r?;
    let stats = stats
        .into_inner()
        .unwrap()
        .ok_or("rank finished without stats")?;
    Ok(RankOutcome {
        stats,
        result: result.into_inner().unwrap(),
    })
}

/// The CPU-time clock of thread `h` (None where the system gives none).
fn thread_clock(h: &std::thread::JoinHandle<()>) -> Option<libc::clockid_t> {
    use std::os::unix::thread::JoinHandleExt;
    let mut id: libc::clockid_t = 0;
    // SAFETY: the thread has not been joined, so its pthread_t is valid; id is a local.
    let r = unsafe { libc::pthread_getcpuclockid(h.as_pthread_t(), &mut id) };
    (r == 0).then_some(id)
}

/// The time of `clock` in ns (0 without one).
fn clock_ns(clock: Option<libc::clockid_t>) -> u64 {
    let Some(id) = clock else { return 0 };
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime fills the timespec it is given.
    if unsafe { libc::clock_gettime(id, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Run `app` on `n` in-process ranks (OS threads, each with its own region and fault
/// registry slot): the protocols exactly as under MPI, with channels for the wire.
pub fn run_local(
    n: usize,
    cfg: Config,
    app: &(dyn App + Sync),
) -> Result<Vec<RankOutcome>, String> {
    let cfg = Config { base: None, ..cfg };
    let mesh = Local::mesh(n);
    std::thread::scope(|s| {
        let hs: Vec<_> = mesh
            .into_iter()
            .map(|t| {
                let cfg = cfg.clone();
                s.spawn(move || run_rank(cfg, Box::new(t), app))
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().map_err(|_| "a rank panicked".to_string())?)
            .collect()
    })
}

/// Keep `Arc` in the public signature stable for callers that hold ranks.
pub type RankRef = Arc<Rank>;
