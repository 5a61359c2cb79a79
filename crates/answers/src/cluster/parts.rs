//! The parts of a cluster run as its journal keys them: each host's settings and memory
//! (`host/NAME`), each latency round (`latency/round R`), each bandwidth shift step
//! (`bandwidth/shift D`) and the collectives. A part's journal entry holds its records:
//! the host's `cluster-host` record, the `cluster-collectives` record, or, for a round
//! or a step, one `cluster-part` record with the matrix cells it measured (a round of N
//! hosts holds N/2 cells, never a matrix: the journal of N hosts stays O(N²) cells).

use super::plan::Plan;
use numalab_results::journal::{Journal, PlannedStep};
use serde::{Deserialize, Serialize};

/// Record kind of a round's or a shift step's cells (journal entries only: the run's
/// records hold the matrices built from them).
pub const KIND_PART: &str = "cluster-part";

/// One part of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// Host (rank) i's settings and memory check.
    Host(usize),
    /// Latency round r (from 0).
    Round(usize),
    /// Bandwidth shift step d (1 ≤ d < N).
    Shift(usize),
    /// The allreduce and the barrier.
    Collectives,
}

/// Every part of the plan, in the order the run measures them.
pub fn parts(plan: &Plan) -> Vec<Part> {
    let n = plan.hosts.len();
    (0..n)
        .map(Part::Host)
        .chain((0..plan.latency_rounds).map(Part::Round))
        .chain((1..n).map(Part::Shift))
        .chain([Part::Collectives])
        .collect()
}

impl Part {
    /// The journal key: unique within the plan.
    pub fn id(&self, plan: &Plan) -> String {
        match self {
            Part::Host(i) => format!("host/{}", plan.hosts[*i]),
            Part::Round(r) => format!("latency/round {}", r + 1),
            Part::Shift(d) => format!("bandwidth/shift {d}"),
            Part::Collectives => "collectives".into(),
        }
    }

    /// Its place in [`parts`].
    pub fn index(&self, plan: &Plan) -> usize {
        let (n, rounds) = (plan.hosts.len(), plan.latency_rounds);
        match self {
            Part::Host(i) => *i,
            Part::Round(r) => n + r,
            Part::Shift(d) => n + rounds + d - 1,
            Part::Collectives => n + rounds + n - 1,
        }
    }

    /// What it measures, in words.
    pub fn title(&self, plan: &Plan) -> String {
        match self {
            Part::Host(i) => format!("settings and memory of {}", plan.hosts[*i]),
            Part::Round(r) => format!("latency round {} of {}", r + 1, plan.latency_rounds),
            Part::Shift(d) => format!("bandwidth shift step {d} of {}", plan.shift_steps),
            Part::Collectives => "allreduce and barrier".into(),
        }
    }

    /// The options that shape its figures (a resume with others is refused).
    fn args(&self, plan: &Plan) -> Vec<String> {
        let o = &plan.options;
        let pairs: Vec<(&str, String)> = match self {
            // --mem-size only when given, so journals from before it resume as before.
            Part::Host(_) => std::iter::once(("--mem-iterations", o.mem_iterations.to_string()))
                .chain(o.mem_size.map(|b| ("--mem-size", b.to_string())))
                .collect(),
            Part::Round(_) => vec![("--lat-iterations", o.lat_iterations.to_string())],
            Part::Shift(_) => vec![
                ("--bw-size", o.bw_size.to_string()),
                ("--bw-window", o.bw_window.to_string()),
                ("--bw-iterations", o.bw_iterations.to_string()),
            ],
            Part::Collectives => vec![("--coll-iterations", o.coll_iterations.to_string())],
        };
        pairs
            .into_iter()
            .flat_map(|(f, v)| [f.to_string(), v])
            .collect()
    }
}

/// The plan's parts as the journal records them.
pub fn planned(plan: &Plan) -> Vec<PlannedStep> {
    parts(plan)
        .iter()
        .map(|p| PlannedStep {
            id: p.id(plan),
            title: p.title(plan),
            args: p.args(plan),
            skip: None,
        })
        .collect()
}

/// The hosts a journal's plan names, in rank order.
pub fn hosts_of(j: &Journal) -> Vec<String> {
    j.header
        .plan
        .iter()
        .filter_map(|s| s.id.strip_prefix("host/"))
        .map(str::to_string)
        .collect()
}

/// Why a journal of the hosts `was` cannot be continued with the hosts `now`, naming
/// the difference in one line; None when they are the same, in the same order.
pub fn other_hosts(was: &[String], now: &[String]) -> Option<String> {
    if was == now {
        return None;
    }
    let only = |a: &[String], b: &[String]| -> Vec<String> {
        a.iter().filter(|h| !b.contains(h)).cloned().collect()
    };
    let (gone, new) = (only(was, now), only(now, was));
    let mut said = Vec::new();
    if !gone.is_empty() {
        said.push(format!("{} in the journal only", gone.join(", ")));
    }
    if !new.is_empty() {
        said.push(format!("{} in the hostfile only", new.join(", ")));
    }
    if said.is_empty() {
        said.push("the same hosts in another order (ranks follow the hostfile)".into());
    }
    Some(format!(
        "other hosts: {}; the journal's are {}, the hostfile's {} (give the hostfile it was started with)",
        said.join(", "),
        was.join(", "),
        now.join(", ")
    ))
}

/// One measured cell: `[from][to]` and its value.
pub type Cell = (usize, usize, f64);

/// `data` of a `cluster-part` record: the cells one round or shift step measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cells {
    /// Latency cells, ns (lower host first; the matrix is symmetric).
    pub latency_ns: Vec<Cell>,
    /// Send bandwidth cells, GB/s.
    pub send_gbps: Vec<Cell>,
    /// Receive bandwidth cells, `[sender][receiver]`, GB/s.
    pub recv_gbps: Vec<Cell>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::Options;

    fn plan_of(hosts: &[&str]) -> Plan {
        let o = Options {
            hosts: Some(hosts.len()),
            ..Options::default()
        };
        let mut p = Plan::resolve(&o).unwrap();
        p.hosts = hosts.iter().map(|h| h.to_string()).collect();
        p
    }

    #[test]
    fn every_part_has_one_key_and_the_keys_name_the_hosts() {
        for n in 2..=9 {
            let names: Vec<String> = (1..=n).map(|i| format!("h{i}")).collect();
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            let p = plan_of(&refs);
            let steps = planned(&p);
            // N hosts, the rounds, N − 1 shift steps and the collectives.
            assert_eq!(steps.len(), n + p.latency_rounds + (n - 1) + 1);
            let mut ids: Vec<&str> = steps.iter().map(|s| s.id.as_str()).collect();
            ids.sort_unstable();
            ids.dedup();
            assert_eq!(ids.len(), steps.len(), "n={n}: a key twice");
            let j = Journal::new(numalab_results::journal::Header {
                format: numalab_results::journal::FORMAT.into(),
                tool_version: "t".into(),
                command_line: Vec::new(),
                fingerprint: numalab_results::journal::Fingerprint::of(
                    &numalab_results::Provenance::collect("1 node", "this machine"),
                ),
                plan: steps,
                continues: None,
                run: None,
            });
            assert_eq!(hosts_of(&j), names);
        }
        let p = plan_of(&["a", "b", "c"]);
        for (i, x) in parts(&p).iter().enumerate() {
            assert_eq!(x.index(&p), i, "{x:?}");
        }
        let ids: Vec<String> = parts(&p).iter().map(|x| x.id(&p)).collect();
        assert_eq!(
            ids,
            [
                "host/a",
                "host/b",
                "host/c",
                "latency/round 1",
                "latency/round 2",
                "latency/round 3",
                "bandwidth/shift 1",
                "bandwidth/shift 2",
                "collectives"
            ]
        );
    }

    #[test]
    fn the_options_that_shape_a_part_are_in_its_plan_entry() {
        let mut p = plan_of(&["a", "b"]);
        let before = planned(&p);
        p.options.lat_iterations = 7;
        let after = planned(&p);
        let changed: Vec<&str> = before
            .iter()
            .zip(&after)
            .filter(|(x, y)| x != y)
            .map(|(x, _)| x.id.as_str())
            .collect();
        assert_eq!(changed, ["latency/round 1"]);
        assert!(after[2].args.contains(&"7".to_string()), "{:?}", after[2]);
    }

    #[test]
    fn other_hosts_name_the_difference() {
        let v = |s: &[&str]| s.iter().map(|h| h.to_string()).collect::<Vec<_>>();
        assert_eq!(other_hosts(&v(&["a", "b"]), &v(&["a", "b"])), None);
        let e = other_hosts(&v(&["a", "b", "c"]), &v(&["a", "b", "d"])).unwrap();
        assert!(
            e.contains("c in the journal only, d in the hostfile only"),
            "{e}"
        );
        let e = other_hosts(&v(&["a", "b"]), &v(&["b", "a"])).unwrap();
        assert!(e.contains("another order"), "{e}");
        let e = other_hosts(&v(&["a", "b", "c"]), &v(&["a", "b"])).unwrap();
        assert!(
            e.contains("c in the journal only") && !e.contains("hostfile only,"),
            "{e}"
        );
    }
}
