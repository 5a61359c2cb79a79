//! The sequential reference of a run, timed on the quietest CPU of the host.
//!
//! Rank 0 times the sequential program after the parallel run, on its own CPU. On a
//! busy machine that CPU may be shared with another program: with a busy loop on CPU 0,
//! SOR's sequential run (paper input) took 282–375 ms of wall time with only 143–191 ms
//! on a CPU, so the speedups read 1.84–2.01, which were not the program's (issue 43).
//! The other ranks wait without spinning meanwhile
//! ([`numalab_mpi::World::barrier_gently`]), so their CPUs count as free, and the
//! reference moves to the least-taken CPU of the same node, L3 domain and core kind
//! (`Machine::peers`, the CPUs the survey's single-CPU steps may move to) when that is
//! clearly less taken. Unlike the survey's choice, an SMT sibling's load is not
//! weighed: the ranks sit one per core.

use crate::apps::{timed_sequential, App, Sequential};
use numalab_results::disturb::{busy_now, CpuBusy};
use numalab_topo::{bind, Host};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How long the CPUs' shares are read before choosing.
pub const WINDOW: Duration = Duration::from_millis(100);
/// How much less taken (share of the window) another CPU must be to time there.
pub const MOVE_GAIN: f64 = 0.2;

/// Where the reference was timed when not on the rank's own CPU, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Moved {
    /// The CPU it was timed on.
    pub cpu: u32,
    /// The rank's own CPU.
    pub from: u32,
    /// How busy the rank's own CPU was: "100 % busy with another process (pid 4242 sh)".
    pub why: String,
}

/// The CPU to time on instead of `here`: the least taken of `busy`, when it is less
/// taken than `here` by [`MOVE_GAIN`]; with what made `here` busy.
pub fn choose(here: u32, busy: &[CpuBusy]) -> Option<Moved> {
    let mine = busy.iter().find(|b| b.cpu == here)?;
    let best = busy.iter().min_by(|a, b| a.taken().total_cmp(&b.taken()))?;
    (best.cpu != here && best.taken() + MOVE_GAIN <= mine.taken()).then(|| Moved {
        cpu: best.cpu,
        from: here,
        why: mine.words(),
    })
}

/// The sequential program timed ([`timed_sequential`]) on the quietest CPU ([`choose`]);
/// where, when it moved. Where the move cannot be made (no CPU to read, a binding
/// refused), it is timed here, as before.
pub fn timed(host: &Host, app: &dyn App) -> (Sequential, Option<Moved>) {
    let moved = bind::this_cpu()
        .ok()
        .map(|here| (here, host.machine.peers(here)))
        .filter(|(_, cpus)| host.machine.this_system && cpus.len() > 1)
        .and_then(|(here, cpus)| choose(here, &busy_now(&cpus, WINDOW)));
    if let Some(m) = moved {
        if let Ok((seq, _)) = bind::run_on_cpu(host, m.cpu, || timed_sequential(app)) {
            return (seq, Some(m));
        }
    }
    (timed_sequential(app), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(cpu: u32, busy: f64, steal: f64) -> CpuBusy {
        CpuBusy {
            cpu,
            busy,
            niced: 0.0,
            steal,
            niced_competes: false,
            running: if busy >= 0.2 {
                vec!["pid 4242 (sh)".into()]
            } else {
                Vec::new()
            },
        }
    }

    #[test]
    fn the_reference_moves_off_a_busy_cpu_only_to_a_clearly_quieter_one() {
        // CPU 0 taken by a busy loop, CPU 1 free: time on CPU 1, saying why.
        let m = choose(0, &[cpu(0, 1.0, 0.0), cpu(1, 0.02, 0.0)]).unwrap();
        assert_eq!((m.cpu, m.from), (1, 0));
        assert!(
            m.why.starts_with("100 % busy with another process"),
            "{}",
            m.why
        );
        // Both about as busy, or this one the quietest: stay.
        assert_eq!(choose(0, &[cpu(0, 0.5, 0.0), cpu(1, 0.4, 0.0)]), None);
        assert_eq!(choose(1, &[cpu(0, 1.0, 0.0), cpu(1, 0.02, 0.0)]), None);
        // Stolen time counts: a CPU the hypervisor takes is not a quiet one.
        assert_eq!(choose(0, &[cpu(0, 0.3, 0.0), cpu(1, 0.0, 0.5)]), None);
        // A CPU not in the reading: nothing to compare, stay.
        assert_eq!(choose(5, &[cpu(0, 1.0, 0.0)]), None);
    }
}
