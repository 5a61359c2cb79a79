//! The DSM's own OS threads against the cores they run on.
//!
//! A rank's compute thread, service thread and (for pages) MPI progress usually share
//! the rank's one pinned CPU. Linux's EEVDF scheduler lets a running thread finish its
//! slice (0.75 ms × (1 + log2 CPUs)) before a woken one runs: a service thread woken by
//! a page request would wait that long behind its own rank's compute thread, and a
//! remote fault cost about one slice instead of the tens of µs the mechanism takes.
//! A thread that asks for a short slice (sched_attr.sched_runtime, Linux 6.12+) gets an
//! earlier deadline and preempts on wakeup.
//!
//! Not SCHED_FIFO for the service thread, though root may: tried (2026-11), SOR under
//! LMW at the paper's input ran 10–15× slower and LMWC 2–6× (busy machine). The likely
//! cause, not proven: a real-time poller that preempts the compute thread inside Open
//! MPI spins on a lock that thread holds, which cannot run on that CPU meanwhile.
//! Where permitted (root, CAP_SYS_NICE), the service thread runs at nice
//! [`SERVICE_NICE`] instead: still fair-shared, but weighted ~9× an ordinary thread, so a
//! woken one gets an early deadline against other programs' threads too.
//!
//! With one core kept busy by another program, a traced SOR run (issue 43, 2-vCPU VM,
//! kernel 6.18, HZ 250, `scripts/dsm-sched.py --futex`) showed the service thread woken
//! within ~15 µs, then waiting for the rank's state lock 3 times, 2.9–3.7 ms each: the
//! compute thread holding it had been switched out at a tick and the other program ran
//! until the next one. Raising the compute thread to [`SERVICE_NICE`] while it held the
//! lock (a priority ceiling, two `setpriority` calls per hold) made remote faults slower,
//! not faster: median 844 µs against 246 µs without it (10 interleaved rounds each,
//! loaded), cause not established; not kept. The other waits of that trace, doorbell
//! sleeps past a message already sent, are fixed in [`crate::mpi_transport`].

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicI32, AtomicI64, Ordering};

/// The slice the service thread asks for: the scheduler's minimum custom slice
/// (`NUMALAB_DSM_SLICE_NS` overrides; 0 leaves the default, to compare).
pub const SERVICE_SLICE_NS: u64 = 100_000;
/// The nice value the service thread asks for (refused without privilege).
pub const SERVICE_NICE: i32 = -10;
/// Timer slack of the polling threads: their 10–20 µs sleeps would otherwise last 60–70.
const SLACK_NS: libc::c_ulong = 1_000;

/// What the last [`latency_thread`] got: the slice in ns, 0 when refused or not asked,
/// -1 before any.
static GRANTED: AtomicI64 = AtomicI64::new(-1);
/// The nice value the last [`latency_thread`] got (0 when refused).
static NICE: AtomicI32 = AtomicI32::new(0);

/// How a rank's threads sit on the CPUs (a `dsm-rank` record's `cores`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoreShare {
    /// CPUs this rank's threads may run on (its affinity mask).
    pub cpus: usize,
    /// Ranks of the job on this host.
    pub ranks_on_host: usize,
    /// CPUs online on this host.
    pub host_cpus: usize,
    /// OS threads of a rank that want a CPU at once: compute and service.
    pub busy_threads: usize,
    /// The compute and service threads share CPUs (fewer CPUs in the mask than busy
    /// threads, or more busy threads on the host than CPUs).
    pub shared: bool,
    /// The service thread's scheduler slice in ns, when the kernel granted a short one.
    pub service_slice_ns: Option<u64>,
    /// The service thread's nice value (negative where the process may raise it).
    #[serde(default)]
    pub service_nice: i32,
}

impl CoreShare {
    /// This rank (call on its compute thread), one of `ranks_on_host` on this host.
    pub fn here(ranks_on_host: usize) -> CoreShare {
        let cpus = affinity_cpus();
        // SAFETY: sysconf has no preconditions.
        let host_cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
        let busy_threads = 2;
        let g = GRANTED.load(Ordering::Relaxed);
        CoreShare {
            cpus,
            ranks_on_host,
            host_cpus,
            busy_threads,
            shared: cpus < busy_threads || ranks_on_host * busy_threads > host_cpus,
            service_slice_ns: (g > 0).then_some(g as u64),
            service_nice: NICE.load(Ordering::Relaxed),
        }
    }
}

/// CPUs in the calling thread's affinity mask.
fn affinity_cpus() -> usize {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return 1;
        }
        libc::CPU_COUNT(&set).max(1) as usize
    }
}

/// Make the calling thread (the service thread) quick to run when woken: a short
/// scheduler slice and a 1 µs timer slack. Best effort; what was granted is recorded.
pub fn latency_thread() {
    // SAFETY: PR_SET_TIMERSLACK only changes the calling thread's timer slack.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, SLACK_NS, 0, 0, 0) };
    // SAFETY: setpriority on the calling thread's own id (Linux nice is per thread).
    let niced = unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, SERVICE_NICE) == 0
    };
    NICE.store(if niced { SERVICE_NICE } else { 0 }, Ordering::Relaxed);
    // Checked when numalab starts (numalab_results::envvars): a bad value never gets here.
    let ns = numalab_results::envvars::whole("NUMALAB_DSM_SLICE_NS")
        .ok()
        .flatten()
        .unwrap_or(SERVICE_SLICE_NS);
    let got = if ns > 0 && short_slice(ns).is_ok() {
        ns
    } else {
        0
    };
    GRANTED.store(got as i64, Ordering::Relaxed);
}

#[repr(C)]
#[derive(Default)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
}

/// Ask for a `ns` slice for the calling thread (SCHED_OTHER, same nice); Err says why
/// the kernel refused (before 6.12 the field is ignored, which is not an error here).
pub fn short_slice(ns: u64) -> Result<(), String> {
    let mut a = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        ..Default::default()
    };
    // SAFETY: sched_getattr fills at most `size` bytes of `a` for thread 0 (the caller).
    let r = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            0,
            &mut a as *mut SchedAttr,
            a.size,
            0,
        )
    };
    if r != 0 {
        return Err(format!(
            "sched_getattr: {}",
            std::io::Error::last_os_error()
        ));
    }
    a.size = std::mem::size_of::<SchedAttr>() as u32;
    a.runtime = ns;
    // SAFETY: a is a valid sched_attr of the size it states; pid 0 is the caller.
    let r = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &a as *const SchedAttr, 0) };
    if r != 0 {
        return Err(format!(
            "sched_setattr: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}
