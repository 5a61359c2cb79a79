//! Where each rank runs: the placement language resolved for the ranks on one host,
//! each rank pinned to its CPU and the pinning proved, and the relation between two
//! ranks named (SMT sibling … other machine).
//!
//! Default order: `compact` with SMT siblings last (one rank per core in topology
//! order, then the second hardware threads) — the order Open MPI's own default
//! (map and bind by core) gives small jobs, so numalab's figures and a peer
//! benchmark's under a plain `mpirun` describe the same pairs of cores.

use crate::error::{Error, Result};
use numalab_topo::plan::resolve_threads;
use numalab_topo::{CoreKind, Host, Machine, Smt, ThreadRequest, ThreadSpec};
use serde::{Deserialize, Serialize};

/// One rank's placement: asked, resolved and verified.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankPlacement {
    /// MPI rank in the world communicator.
    pub rank: usize,
    /// Host name.
    pub host: String,
    /// Rank among those on its host.
    pub local_rank: usize,
    /// The CPU asked for (OS number).
    pub cpu: u32,
    /// Core (logical index), for SMT sibling relations.
    pub core: u32,
    /// L3 domain (logical index), where the machine has one.
    pub l3: Option<u32>,
    /// NUMA node (OS index) of the CPU.
    pub node: Option<u32>,
    /// Package (logical index).
    pub package: Option<u32>,
    /// The CPU the rank was seen running on after pinning.
    pub observed_cpu: Option<u32>,
    /// The pinning was read back and the rank ran on its CPU.
    pub verified: bool,
    /// Other ranks on this host given the same CPU (more ranks than CPUs).
    pub shares_cpu: bool,
}

/// How two ranks relate, nearest first: the rows of the matrix's grouping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Relation {
    /// The same CPU (ranks sharing one hardware thread).
    SameCpu,
    /// Two hardware threads of one core.
    SmtSibling,
    /// Different cores sharing an L3.
    SameL3,
    /// Same NUMA node, different L3 (or none).
    SameNode,
    /// Same package, different node.
    SamePackage,
    /// Same machine, different package.
    OtherPackage,
    /// Different hosts.
    OtherMachine,
}

impl Relation {
    /// The relation's name as tables print it.
    pub fn name(self) -> &'static str {
        match self {
            Relation::SameCpu => "same CPU",
            Relation::SmtSibling => "SMT sibling",
            Relation::SameL3 => "same L3",
            Relation::SameNode => "same node",
            Relation::SamePackage => "same package",
            Relation::OtherPackage => "other package",
            Relation::OtherMachine => "other machine",
        }
    }

    /// The relation of two placed ranks.
    pub fn between(a: &RankPlacement, b: &RankPlacement) -> Relation {
        if a.host != b.host {
            Relation::OtherMachine
        } else if a.cpu == b.cpu {
            Relation::SameCpu
        } else if a.core == b.core {
            Relation::SmtSibling
        } else if a.l3.is_some() && a.l3 == b.l3 {
            Relation::SameL3
        } else if a.node == b.node {
            Relation::SameNode
        } else if a.package == b.package {
            Relation::SamePackage
        } else {
            Relation::OtherPackage
        }
    }
}

/// The CPUs of the ranks on one host, in local-rank order: `spec` resolved for
/// `local_ranks` ranks; with more ranks than the spec's CPUs they go round again.
pub fn host_cpus(m: &Machine, spec: &ThreadSpec, local_ranks: usize) -> Result<Vec<u32>> {
    let usable = m.pus.len();
    let count = match spec {
        ThreadSpec::List(_) => None,
        _ => Some(local_ranks.min(usable).max(1)),
    };
    let req = ThreadRequest {
        spec: spec.clone(),
        count,
        smt: Smt::Last,
        kind: CoreKind::Any,
    };
    let placed = resolve_threads(m, &req)?;
    if placed.is_empty() {
        return Err(Error::Usage(format!(
            "invalid --rank-cpus '{spec}': it names no usable CPU; usable CPUs: {}",
            m.cpu_list()
        )));
    }
    Ok((0..local_ranks)
        .map(|r| placed[r % placed.len()].pu.os)
        .collect())
}

/// The CPUs this process was started on (sched_getaffinity), when they are fewer than
/// `m`'s usable CPUs: the share of the machine a host's cpuset, a batch system or the
/// user's `taskset` gave the ranks. None when it holds them all or cannot be read.
pub fn started_on(m: &Machine) -> Option<Vec<u32>> {
    // SAFETY: a zeroed cpu_set_t is empty; the call is sized to it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: as above; pid 0 is the calling thread.
    if unsafe { libc::sched_getaffinity(0, size, &mut set) } != 0 {
        return None;
    }
    let mine: Vec<u32> = m
        .pus
        .iter()
        .map(|p| p.os)
        // SAFETY: CPU_ISSET reads the set within its size.
        .filter(|&c| {
            (c as usize) < libc::CPU_SETSIZE as usize
                && unsafe { libc::CPU_ISSET(c as usize, &set) }
        })
        .collect();
    (!mine.is_empty() && mine.len() < m.pus.len()).then_some(mine)
}

/// `m` with only `cpus` usable (the others count as not allowed): ranks placed on it
/// stay inside the share of the machine they were given, so hosts that share a
/// machine's cores do not all pin their first rank to CPU 0.
pub fn narrowed(m: &Machine, cpus: &[u32]) -> Machine {
    let mut n = m.clone();
    n.pus.retain(|p| cpus.contains(&p.os));
    n.disallowed_cpus
        .extend(m.pus.iter().map(|p| p.os).filter(|c| !cpus.contains(c)));
    n.disallowed_cpus.sort_unstable();
    n
}

/// Pin the calling rank's thread to its CPU, chosen by `spec` among `within`'s usable
/// CPUs (the host's share of the machine), and describe the result.
pub fn pin_rank(
    host: &Host,
    within: &Machine,
    spec: &ThreadSpec,
    rank: usize,
    local_rank: usize,
    local_ranks: usize,
    hostname: &str,
) -> Result<RankPlacement> {
    let cpus = host_cpus(within, spec, local_ranks)?;
    let cpu = cpus[local_rank];
    let pu = host
        .machine
        .pu(cpu)
        .ok_or_else(|| Error::System(format!("CPU {cpu} vanished from the topology")))?;
    let proof = numalab_topo::bind::pin_current_thread(host, cpu);
    let (observed_cpu, verified) = match &proof {
        Ok(p) => (Some(p.observed_cpu), true),
        Err(_) => (None, false),
    };
    if let Err(e) = proof {
        return Err(Error::System(format!("rank {rank}: {e}")));
    }
    Ok(RankPlacement {
        rank,
        host: hostname.to_string(),
        local_rank,
        cpu,
        core: pu.core,
        l3: pu.l3,
        node: pu.node,
        package: pu.package,
        observed_cpu,
        verified,
        shares_cpu: cpus.iter().filter(|&&c| c == cpu).count() > 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_topo::TopologySource;

    fn machine(name: &str) -> Machine {
        let src = TopologySource::Xml(numalab_fixtures::topology(name));
        Host::load(&src).unwrap().machine
    }

    #[test]
    fn compact_fills_cores_before_siblings_and_wraps_beyond_the_cpus() {
        // 4 packages × 2 cores × 2 threads.
        let m = machine("16em64t-4s2c2t.xml");
        let cpus = host_cpus(&m, &ThreadSpec::Compact, 4).unwrap();
        let cores: Vec<u32> = cpus.iter().map(|c| m.pu(*c).unwrap().core).collect();
        assert_eq!(cores, [0, 1, 2, 3], "one rank per core first: {cpus:?}");
        let many = host_cpus(&m, &ThreadSpec::Compact, 20).unwrap();
        assert_eq!(many.len(), 20);
        assert_eq!(many[16], many[0]);
    }

    #[test]
    fn a_narrowed_machine_places_ranks_only_on_its_share() {
        let m = machine("16em64t-4s2c2t.xml");
        let all: Vec<u32> = m.pus.iter().map(|p| p.os).collect();
        let share = [all[5], all[9]];
        let n = narrowed(&m, &share);
        assert_eq!(
            host_cpus(&n, &ThreadSpec::Compact, 3).unwrap(),
            [share[0], share[1], share[0]]
        );
        assert_eq!(n.disallowed_cpus.len(), all.len() - 2);
        let e = host_cpus(&n, &ThreadSpec::parse(&all[0].to_string()).unwrap(), 1).unwrap_err();
        assert!(e.to_string().contains("not allowed"), "{e}");
    }

    #[test]
    fn scatter_and_lists_follow_the_placement_language() {
        let m = machine("16em64t-4s2c2t.xml");
        let s = host_cpus(&m, &ThreadSpec::parse("scatter:package").unwrap(), 4).unwrap();
        let pk: Vec<Option<u32>> = s.iter().map(|c| m.pu(*c).unwrap().package).collect();
        assert_eq!(pk, [Some(0), Some(1), Some(2), Some(3)]);
        let l = host_cpus(&m, &ThreadSpec::parse("3,5").unwrap(), 3).unwrap();
        assert_eq!(l, [3, 5, 3]);
        assert!(host_cpus(&m, &ThreadSpec::parse("99").unwrap(), 2).is_err());
    }

    fn rp(host: &str, cpu: u32, core: u32, l3: u32, node: u32, pkg: u32) -> RankPlacement {
        RankPlacement {
            rank: 0,
            host: host.into(),
            local_rank: 0,
            cpu,
            core,
            l3: Some(l3),
            node: Some(node),
            package: Some(pkg),
            observed_cpu: Some(cpu),
            verified: true,
            shares_cpu: false,
        }
    }

    #[test]
    fn relations_are_named_nearest_first() {
        let a = rp("h", 0, 0, 0, 0, 0);
        assert_eq!(
            Relation::between(&a, &rp("h", 0, 0, 0, 0, 0)),
            Relation::SameCpu
        );
        assert_eq!(
            Relation::between(&a, &rp("h", 1, 0, 0, 0, 0)),
            Relation::SmtSibling
        );
        assert_eq!(
            Relation::between(&a, &rp("h", 2, 1, 0, 0, 0)),
            Relation::SameL3
        );
        assert_eq!(
            Relation::between(&a, &rp("h", 2, 1, 1, 0, 0)),
            Relation::SameNode
        );
        assert_eq!(
            Relation::between(&a, &rp("h", 2, 1, 1, 1, 0)),
            Relation::SamePackage
        );
        assert_eq!(
            Relation::between(&a, &rp("h", 2, 1, 1, 1, 1)),
            Relation::OtherPackage
        );
        assert_eq!(
            Relation::between(&a, &rp("g", 0, 0, 0, 0, 0)),
            Relation::OtherMachine
        );
        assert!(Relation::SmtSibling < Relation::OtherMachine);
    }
}
