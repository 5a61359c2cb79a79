//! How far apart the CPUs of a figure measured on several CPUs at once were: the CAS
//! round trip from the first CPU to each of the others (`numalab_probe::pingpong::
//! distance`), recorded in the record's `placement.distance` so that `compare` can tell
//! a vCPU pair the hypervisor placed elsewhere from a change (`numalab_results::distance`).

use numalab_probe::{pingpong, Timer};
use numalab_results::distance::{self, CpuDistance};
use numalab_results::record::Settle;
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

/// [`probe`], leaving each warning once however often it is tried.
pub fn probe_once(
    host: &Host,
    timer: &Timer,
    mem: &MemPlacement,
    cpus: &[u32],
    warnings: &mut Vec<String>,
) -> Vec<CpuDistance> {
    let mut said = Vec::new();
    let out = probe(host, timer, mem, cpus, &mut said);
    for w in said {
        if !warnings.contains(&w) {
            warnings.push(w);
        }
    }
    out
}

/// How far apart a step's CPUs were, before and after its passes, and why not when a
/// probe failed.
#[derive(Debug, Clone, Default)]
pub struct Probed {
    /// Before the passes.
    pub before: Vec<CpuDistance>,
    /// The same pairs after them.
    pub after: Vec<CpuDistance>,
    /// Why a probe failed.
    pub why: Vec<String>,
}

impl Probed {
    /// Put the distances on a record of the step, and why a probe failed among its
    /// warnings.
    pub fn attach(&self, rec: &mut numalab_results::Record) {
        distance::attach(rec, &self.before);
        distance::attach_after(rec, &self.after);
        rec.warnings.extend(self.why.iter().cloned());
    }
}

/// Times a step's passes are measured again when a pair of its CPUs moved between the
/// probes around them.
pub const MAX_MOVED_REMEASURE: u32 = 1;

/// A step's passes between two probes of its CPUs' distances.
#[derive(Debug)]
pub struct Between<T> {
    /// The passes of the last try.
    pub passes: T,
    /// The distances probed before them.
    pub before: Vec<CpuDistance>,
    /// The same pairs probed after them (empty when none were probed before).
    pub after: Vec<CpuDistance>,
    /// Why the passes mix two placements, when a pair moved in every try.
    pub moved: Option<String>,
}

/// Runs `passes` between two runs of `probe`, again (up to [`MAX_MOVED_REMEASURE`]
/// times) while a pair reads in another class after them than before
/// ([`distance::moved_during`]): a hypervisor that moved a vCPU meanwhile gave passes
/// of two placements, or of one the probe before them did not see (two vCPUs on two
/// L3s of an EPYC host streamed twice what they did on one, both probed on one).
pub fn between_probes<T, E>(
    mut probe: impl FnMut() -> Vec<CpuDistance>,
    mut passes: impl FnMut() -> std::result::Result<T, E>,
) -> std::result::Result<Between<T>, E> {
    let mut tries = 0;
    loop {
        let before = probe();
        let got = passes()?;
        let after = if before.is_empty() {
            Vec::new()
        } else {
            probe()
        };
        let moved = distance::moved_during(&before, &after);
        if moved.is_none() || tries == MAX_MOVED_REMEASURE {
            return Ok(Between {
                passes: got,
                before,
                after,
                moved: moved.map(|w| format!("{w}, after {tries} re-measurement")),
            });
        }
        tries += 1;
    }
}

/// Every figure of the step unsettled, with why, when its pairs moved during the passes.
pub fn mark_moved(settles: &mut [Settle], moved: Option<&str>) {
    let Some(w) = moved else { return };
    for s in settles {
        s.settled = false;
        s.why = Some(format!("machine busy: {w}"));
    }
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

    fn d(rtt: f64) -> CpuDistance {
        CpuDistance {
            cpus: [0, 1],
            rtt_ns: rtt,
            samples: 9,
            round_trips: 100,
        }
    }

    #[test]
    fn passes_between_probes_of_two_classes_are_measured_again_then_named() {
        // Moved in every try: measured once more, then named.
        let probes = std::cell::RefCell::new(vec![d(50.0), d(220.0), d(50.0), d(225.0)]);
        let mut runs = 0;
        let b = between_probes(
            || vec![probes.borrow_mut().remove(0)],
            || -> Result<usize, ()> {
                runs += 1;
                Ok(runs)
            },
        )
        .unwrap();
        assert_eq!((b.passes, runs), (2, 2));
        let why = b.moved.unwrap();
        assert!(
            why.contains("50 ns apart before") && why.contains("225 ns after"),
            "{why}"
        );
        assert!(why.ends_with("after 1 re-measurement"), "{why}");
        // Moved in the first try only: the second try's passes, nothing named.
        let probes = std::cell::RefCell::new(vec![d(50.0), d(220.0), d(52.0), d(48.0)]);
        let b = between_probes(
            || vec![probes.borrow_mut().remove(0)],
            || -> Result<(), ()> { Ok(()) },
        )
        .unwrap();
        assert_eq!((b.before[0].rtt_ns, b.after[0].rtt_ns), (52.0, 48.0));
        assert!(b.moved.is_none());
        // No pair (one CPU): one try, no probe after it.
        let mut probed = 0;
        let b = between_probes(
            || {
                probed += 1;
                Vec::new()
            },
            || -> Result<(), ()> { Ok(()) },
        )
        .unwrap();
        assert_eq!(probed, 1);
        assert!(b.after.is_empty() && b.moved.is_none());
    }

    #[test]
    fn a_move_unsettles_every_figure_and_none_leaves_them() {
        let s = Settle::new("bandwidth", [10.0, 11.0], None);
        let mut v = vec![s.clone(), s];
        mark_moved(&mut v, None);
        assert!(v.iter().all(|s| s.settled));
        mark_moved(&mut v, Some("CPUs 0 and 1 moved"));
        assert!(v
            .iter()
            .all(|s| !s.settled && s.why.as_deref() == Some("machine busy: CPUs 0 and 1 moved")));
    }
}
