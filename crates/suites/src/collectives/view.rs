//! What a run of the collectives suite holds, its text's first line, and the plan as text.

use super::run::{Measured, PairResult, Plan};
use super::Kind;
use numalab_results::linfit::LinearFit;
use numalab_results::output::table;
use numalab_topo::fmt_bytes;
use std::fmt::Write;

/// What a run produced.
pub struct Results {
    /// Remote-read pairs.
    pub pairs: Vec<PairResult>,
    /// Collectives.
    pub items: Vec<Measured>,
    /// Fitted models per collective.
    pub fits: Vec<(Kind, Vec<Result<LinearFit, String>>)>,
}

/// The facts the first line shows.
pub(super) struct Head<'a> {
    /// The machine, as provenance summarises it.
    pub topology: &'a str,
    /// Level ordering the threads.
    pub level: &'a str,
    /// Its domains, described ("A=0-3 B=4-7").
    pub domains: &'a str,
    /// Thread counts.
    pub threads: &'a [usize],
    /// Lines per block, per size.
    pub block_lines: &'a [usize],
    /// Line size in bytes.
    pub line: usize,
    /// The barrier between stages.
    pub sync: &'a str,
    /// Timed passes.
    pub iterations: u64,
}

/// The first line: machine, thread order, sizes.
pub(super) fn head(h: &Head) -> String {
    let threads: Vec<String> = h.threads.iter().map(|p| p.to_string()).collect();
    format!(
        "collectives suite (KSR seed 002) on {}: threads in order of {} domains {}; P = {}; blocks of {}; barrier between stages: {}; {}\n",
        h.topology,
        h.level,
        h.domains,
        threads.join(", "),
        h.block_lines.iter().map(|l| fmt_bytes((l * h.line) as u64)).collect::<Vec<_>>().join(", "),
        h.sync,
        numalab_results::words::passes(h.iterations as usize)
    )
}

/// The first line of a plan.
pub(super) fn plan_head(topology: &str, plan: &Plan, iterations: u64) -> String {
    head(&Head {
        topology,
        level: plan.level.name(),
        domains: &crate::domains::describe(&plan.domains),
        threads: &plan.threads,
        block_lines: &plan.block_lines,
        line: plan.line,
        sync: plan.sync.name(),
        iterations,
    })
}

/// The plan without measuring.
pub(super) fn plan_text(plan: &Plan) -> String {
    let mut s = String::new();
    if !plan.pairs.is_empty() {
        let _ = writeln!(
            s,
            "\nremote read: root CPU {} writes {}, then each reader reads them:",
            plan.cpus[0],
            numalab_results::words::count(plan.pair_lines as u64, "line")
        );
        let rows: Vec<Vec<String>> = plan
            .pairs
            .iter()
            .map(|p| {
                vec![
                    p.reader.to_string(),
                    p.shares.clone(),
                    p.hops.map(|h| h.to_string()).unwrap_or("-".into()),
                ]
            })
            .collect();
        s.push_str(&table(&["reader", "shares", "hops"], &rows));
        s.push('\n');
    }
    for &p in &plan.threads {
        let names: Vec<String> = {
            let mut v: Vec<String> = plan
                .items
                .iter()
                .filter(|i| i.p == p)
                .map(|i| i.kind.name())
                .collect();
            v.dedup();
            v
        };
        let _ = writeln!(
            s,
            "\nP={p} on CPUs {}:\n  {}",
            numalab_topo::cpulist::format(&plan.cpus[..p]),
            names.join(", ")
        );
    }
    let _ = writeln!(
        s,
        "\n{}",
        numalab_results::words::count((plan.items.len() + plan.pairs.len()) as u64, "measurement")
    );
    s
}
