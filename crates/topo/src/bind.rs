//! Pinning threads through hwloc, with proof of where each thread runs.

use crate::error::{Error, Result};
use crate::load::Host;
use crate::plan::ThreadPlacement;
use hwlocality::cpu::binding::CpuBindingFlags;
use hwlocality::cpu::cpuset::CpuSet;
use serde::{Deserialize, Serialize};

/// What a pinned thread observed about itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinProof {
    /// CPU asked for.
    pub cpu: u32,
    /// The binding hwloc read back for the thread (CPU list).
    pub bound_to: String,
    /// The CPU the thread was running on after pinning (sched_getcpu).
    pub observed_cpu: u32,
}

/// The CPU the calling thread runs on now (sched_getcpu).
pub fn this_cpu() -> Result<u32> {
    // SAFETY: sched_getcpu has no preconditions.
    let c = unsafe { libc::sched_getcpu() };
    if c < 0 {
        return Err(Error::System(format!(
            "sched_getcpu failed: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(c as u32)
}

/// Pin the calling thread to one CPU and prove it: the binding read back is
/// exactly that CPU and the thread is running there.
pub fn pin_current_thread(host: &Host, cpu: u32) -> Result<PinProof> {
    if !host.machine.this_system {
        return Err(Error::Unsatisfiable(format!(
            "cannot pin to CPU {cpu}: the topology comes from {}, not this machine",
            host.machine.source
        )));
    }
    if host.machine.pu(cpu).is_none() {
        return Err(Error::Unsatisfiable(format!(
            "CPU {cpu} does not exist or is not usable; usable CPUs: {}",
            host.machine.cpu_list()
        )));
    }
    let mut set = CpuSet::new();
    set.set(cpu as usize);
    host.topology
        .bind_cpu(&set, CpuBindingFlags::THREAD)
        .map_err(|e| Error::System(format!("binding the thread to CPU {cpu} failed: {e}")))?;
    let bound = host
        .topology
        .cpu_binding(CpuBindingFlags::THREAD)
        .map_err(|e| Error::System(format!("reading the thread binding back failed: {e}")))?;
    let bound_to = crate::cpulist::format(
        &bound
            .iter_set()
            .map(|i| usize::from(i) as u32)
            .collect::<Vec<_>>(),
    );
    // Linux migrates the caller before sched_setaffinity returns; a yield covers
    // kernels or hypervisors that defer it.
    let mut observed = this_cpu()?;
    for _ in 0..100 {
        if observed == cpu {
            break;
        }
        std::thread::yield_now();
        observed = this_cpu()?;
    }
    if bound != set || observed != cpu {
        return Err(Error::Verification(format!(
            "thread asked for CPU {cpu} is bound to {bound_to} and runs on CPU {observed}"
        )));
    }
    Ok(PinProof {
        cpu,
        bound_to,
        observed_cpu: observed,
    })
}

/// Run `f` on the calling thread pinned to `cpu` (proved as [`pin_current_thread`]
/// does), then give the thread back the binding it had.
pub fn run_on_cpu<T>(host: &Host, cpu: u32, f: impl FnOnce() -> T) -> Result<(T, PinProof)> {
    let before = host
        .topology
        .cpu_binding(CpuBindingFlags::THREAD)
        .map_err(|e| Error::System(format!("reading the thread binding failed: {e}")))?;
    let proof = pin_current_thread(host, cpu)?;
    let out = f();
    host.topology
        .bind_cpu(&before, CpuBindingFlags::THREAD)
        .map_err(|e| Error::System(format!("restoring the thread binding failed: {e}")))?;
    Ok((out, proof))
}

/// Start one thread per placement, pin it, and return each thread's proof.
pub fn verify_threads(host: &Host, threads: &[ThreadPlacement]) -> Result<Vec<PinProof>> {
    std::thread::scope(|s| {
        let handles: Vec<_> = threads
            .iter()
            .map(|t| s.spawn(move || pin_current_thread(host, t.pu.os)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::System("a pinned thread panicked".into())))
            })
            .collect()
    })
}
