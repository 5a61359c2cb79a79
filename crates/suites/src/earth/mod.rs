//! The EARTH-MANNA study (seed 001) with the KSR (seed 002 §6) and CVM (seed 003
//! §4.1) threading results: what remote operations cost, and how much latency
//! multithreading hides. Today "remote" is a line homed on another node, a line
//! Modified in another core, or a request served by a helper thread on another core
//! (EARTH's synchronization unit). This module picks the CPUs; `earth_ops` and
//! `earth_hide` measure.

mod experiment;
pub mod mpi;
mod present;
pub mod sizing;
pub use present::{BestG, EarthData, EarthPresenter};
pub mod hide;
pub mod ops;
mod text;
mod view;
pub use experiment::{run as run_suite, Options, Plan, PlanData, NOISE_BUDGET};
pub use text::text;

use crate::domains;
use numalab_bench::helpers::closeness;
use numalab_topo::{Error, Machine, Result, ThreadPlacement};
use serde::Serialize;

/// A part of the suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Part {
    /// Operation cost table (seed Table 1).
    Ops,
    /// Issuer overhead versus server cost, and one remote load step by step (Tables 2, 4).
    Split,
    /// Coroutine and OS thread switch, creation and join (KSR Table 4).
    Switch,
    /// Latency masking versus thread size with Livermore Loop 7 (Fig. 3).
    Mask,
    /// Memory-level parallelism of one core: G chains, interleaved or coroutines.
    Mlp,
    /// Compute/communication overlap with 1…5 threads on one CPU (KSR Table 5).
    Threads,
}

impl Part {
    /// Every part in the order the suite runs them.
    pub const ALL: [Part; 6] = [
        Part::Ops,
        Part::Split,
        Part::Switch,
        Part::Mask,
        Part::Mlp,
        Part::Threads,
    ];

    /// Parse a part name.
    pub fn parse(s: &str) -> std::result::Result<Part, String> {
        Ok(match s {
            "ops" => Part::Ops,
            "split" => Part::Split,
            "switch" => Part::Switch,
            "mask" => Part::Mask,
            "mlp" => Part::Mlp,
            "threads" => Part::Threads,
            _ => {
                return Err(format!(
                    "invalid --parts item '{s}': one of ops, split, switch, mask, mlp, threads"
                ))
            }
        })
    }

    /// Name used in records.
    pub fn name(self) -> &'static str {
        match self {
            Part::Ops => "ops",
            Part::Split => "split",
            Part::Switch => "switch",
            Part::Mask => "mask",
            Part::Mlp => "mlp",
            Part::Threads => "threads",
        }
    }
}

/// Where the suite runs.
#[derive(Debug, Clone, Serialize)]
pub struct Cpus {
    /// The worker (issuer) thread.
    pub worker: ThreadPlacement,
    /// The helper (server, owner of remote lines): on another core, in another domain
    /// at the default level when the machine has one.
    pub helper: ThreadPlacement,
    /// A node other than the worker's with memory, nearest first, if any.
    pub remote_node: Option<u32>,
}

fn placed(m: &Machine, cpu: u32, thread: usize) -> Option<ThreadPlacement> {
    m.pu(cpu).map(|p| ThreadPlacement {
        thread,
        pu: p.clone(),
    })
}

/// Choose the worker and helper CPUs; a helper equal to the worker, or on its core,
/// is a user error naming the value.
pub fn cpus(m: &Machine, worker: Option<u32>, helper: Option<u32>) -> Result<Cpus> {
    let first = crate::memory::first_cpu(m)?;
    let w = worker.unwrap_or(first);
    let worker = placed(m, w, 0).ok_or_else(|| {
        Error::bad(
            "--cpu",
            w.to_string(),
            format!("a usable CPU: {}", m.cpu_list()),
        )
    })?;
    let helper = match helper {
        Some(h) => {
            let hp = placed(m, h, 1).ok_or_else(|| {
                Error::bad(
                    "--helper",
                    h.to_string(),
                    format!("a usable CPU: {}", m.cpu_list()),
                )
            })?;
            if hp.pu.core == worker.pu.core {
                return Err(Error::bad(
                    "--helper",
                    h.to_string(),
                    format!("a CPU on another core than the worker's CPU {w} (it must serve while the worker runs)"),
                ));
            }
            hp
        }
        None => {
            // The nearest CPU in another domain of the default level, else any other core.
            let level = m.default_level();
            let doms = domains::order(m, level, w)?;
            let other = doms
                .iter()
                .skip(1)
                .flat_map(|d| d.cpus.iter().copied())
                .next()
                .or_else(|| {
                    let mut c: Vec<_> = m.pus.iter().filter(|p| p.core != worker.pu.core).collect();
                    c.sort_by_key(|p| closeness(m, &worker.pu, p));
                    c.first().map(|p| p.os)
                });
            let h = other.ok_or_else(|| {
                Error::Unsatisfiable(format!(
                    "the earth suite needs a helper on another core than the worker's CPU {w}; this topology has only {}",
                    m.cpu_list()
                ))
            })?;
            placed(m, h, 1).expect("a usable CPU")
        }
    };
    let mut remote: Vec<u32> = m
        .memory_nodes()
        .into_iter()
        .filter(|&n| Some(n) != worker.pu.node)
        .collect();
    if let Some(wn) = worker.pu.node {
        remote.sort_by_key(|&n| (m.distances.hops_between(wn, n).unwrap_or(u32::MAX), n));
    }
    Ok(Cpus {
        worker,
        helper,
        remote_node: remote.first().copied(),
    })
}

/// A list of positive numbers no larger than `max`; errors name the value.
pub fn check_list(what: &'static str, v: &[usize], max: usize, valid: &str) -> Result<()> {
    match v.iter().find(|&&x| x == 0 || x > max) {
        Some(&x) => Err(Error::bad(
            what,
            x.to_string(),
            format!("1 to {max} ({valid})"),
        )),
        None if v.is_empty() => Err(Error::bad(
            what,
            "",
            format!("at least one value in 1 to {max}"),
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_topo::{Host, TopologySource};

    #[test]
    fn the_helper_sits_in_another_domain_and_never_on_the_workers_core() {
        let m = Host::load(&TopologySource::Synthetic("pack:2 l3:2 core:2 pu:2".into()))
            .unwrap()
            .machine;
        let c = cpus(&m, None, None).unwrap();
        assert_ne!(c.helper.pu.core, c.worker.pu.core);
        // The default level is L3: the helper is in the nearest other L3, same package.
        assert_ne!(c.helper.pu.l3, c.worker.pu.l3);
        assert_eq!(c.helper.pu.package, c.worker.pu.package);
        let sibling = m
            .pus
            .iter()
            .find(|p| p.core == c.worker.pu.core && p.os != c.worker.pu.os)
            .unwrap()
            .os;
        let e = cpus(&m, None, Some(sibling)).unwrap_err();
        assert!(
            e.is_user_error() && e.to_string().contains(&format!("'{sibling}'")),
            "{e}"
        );
        let e = cpus(&m, None, Some(0)).unwrap_err();
        assert!(e.to_string().contains("--helper '0'"), "{e}");
        let one = Host::load(&TopologySource::Synthetic("pack:1 core:1 pu:1".into()))
            .unwrap()
            .machine;
        assert!(cpus(&one, None, None).is_err());
    }

    #[test]
    fn lists_are_checked_against_their_bound() {
        assert!(check_list("--groups", &[1, 64], 64, "chains").is_ok());
        let e = check_list("--groups", &[0], 64, "chains").unwrap_err();
        assert!(e.to_string().contains("--groups '0'"), "{e}");
        let e = check_list("--chunks", &[5000], 4096, "the loop length").unwrap_err();
        assert!(
            e.to_string().contains("'5000'") && e.to_string().contains("1 to 4096"),
            "{e}"
        );
    }
}
