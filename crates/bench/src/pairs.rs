//! How far apart the CPUs of a figure measured on several CPUs at once were: the CAS
//! round trip from the first CPU to each of the others (`numalab_probe::pingpong::
//! distance`), recorded in the record's `placement.distance` so that `compare` can tell
//! a vCPU pair the hypervisor placed elsewhere from a change (`numalab_results::distance`).

use numalab_probe::{pingpong, Timer};
use numalab_results::distance::CpuDistance;
use numalab_topo::buffer::Buffer;
use numalab_topo::{Host, MemPlacement};

/// Most CPUs whose distance to the first is probed. Each probe is 9 samples of 100
/// round trips (well under a millisecond) plus two pinned threads' start; a few pairs
/// say whether the CPUs sit as they did, while probing every CPU of a 128-CPU stream
/// would add a noticeable pause before each step for little more.
pub const MOST: usize = 4;

/// The CPUs after the first (other requestors, then helpers) whose distance to it is
/// probed: up to [`MOST`], each once, never the first itself.
pub fn partners(first: u32, others: impl IntoIterator<Item = u32>) -> Vec<u32> {
    let mut out: Vec<u32> = Vec::new();
    for c in others {
        if c != first && !out.contains(&c) && out.len() < MOST {
            out.push(c);
        }
    }
    out
}

/// The distance from `cpus[0]` to each of [`partners`] of the rest, probed on a line of
/// `mem`; a probe that fails leaves a warning, not a failed step. Empty for one CPU.
pub fn probe(
    host: &Host,
    timer: &Timer,
    mem: &MemPlacement,
    cpus: &[u32],
    warnings: &mut Vec<String>,
) -> Vec<CpuDistance> {
    let Some((&first, rest)) = cpus.split_first() else {
        return Vec::new();
    };
    let to = partners(first, rest.iter().copied());
    if to.is_empty() {
        return Vec::new();
    }
    let buf = match Buffer::allocate(host, mem, 4096) {
        Ok(b) => b,
        Err(e) => {
            warnings.push(format!(
                "could not measure how far apart CPUs {} are ({e}); compare cannot tell whether they moved",
                numalab_topo::cpulist::format(cpus)
            ));
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for b in to {
        match pingpong::distance(host, timer, first, b, &buf) {
            Ok(d) => out.push(d),
            Err(e) => warnings.push(format!(
                "could not measure how far apart CPUs {first} and {b} are ({e}); compare cannot tell whether they moved"
            )),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partners_are_the_other_cpus_once_each_and_at_most_a_few() {
        assert_eq!(partners(0, [1]), [1]);
        assert_eq!(partners(0, [0, 1, 1, 2]), [1, 2]);
        assert!(partners(3, []).is_empty());
        assert_eq!(partners(0, 1..100).len(), MOST);
    }

    #[test]
    fn two_cpus_give_one_distance_naming_them_and_one_cpu_none() {
        let host = Host::load(&numalab_topo::TopologySource::ThisSystem).unwrap();
        let m = &host.machine;
        let mem = numalab_topo::plan::resolve_memory(
            m,
            &numalab_topo::MemSpec::Node(m.memory_nodes()[0]),
            numalab_topo::PageSize::Base,
            &[],
        )
        .unwrap();
        let timer = Timer::best();
        let mut w = Vec::new();
        let (a, b) = (m.pus[0].os, m.pus.last().unwrap().os);
        assert!(probe(&host, &timer, &mem, &[a], &mut w).is_empty());
        if a == b {
            return;
        }
        let d = probe(&host, &timer, &mem, &[a, b], &mut w);
        assert_eq!(d.len(), 1, "{w:?}");
        assert_eq!(d[0].cpus, [a, b]);
        assert!(d[0].rtt_ns.is_finite() && d[0].rtt_ns > 0.0, "{d:?}");
        assert!(w.is_empty(), "{w:?}");
    }
}
