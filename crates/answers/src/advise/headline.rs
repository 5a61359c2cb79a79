//! The first screen's advice: what `numalab advise` says of the survey's answers for
//! a default workload (every CPU, a footprint of half the first memory node), in one
//! or two lines: the best placement, or why the survey cannot rank any.

use super::{Options, Plan};
use numalab_results::report::esc;
use numalab_results::summary::Block;
use numalab_results::Record;

/// The advice block, None when the answers hold no topology to advise on.
pub fn headline(answers: &[Record]) -> Option<Block> {
    answers.iter().find(|r| r.kind == "topo")?;
    let plan = Plan::resolve(answers, None, &default_options(answers)?).ok()?;
    let a = plan.compute().ok()?;
    let w = a.workload.as_ref()?;
    let ask = format!(
        "{} streaming {}",
        numalab_results::words::count(w.threads as u64, "thread"),
        numalab_topo::fmt_bytes(w.footprint)
    );
    let other = "numalab advise DIR --threads N --footprint SIZE asks about another workload";
    let line = match a.placements.iter().find(|c| c.unavailable.is_none()) {
        Some(best) => {
            let mut pred = Vec::new();
            if let Some(b) = best.bandwidth_gbps {
                pred.push(format!("{b:.1} GB/s"));
            }
            if let Some(l) = best.latency_ns {
                pred.push(format!("{l:.0} ns mean load latency"));
            }
            let cmd = best.commands.get("numactl").cloned().unwrap_or_default();
            format!(
                "Advice for {ask}: threads {} (CPUs {}), predicted {}: {cmd}. ({other}.)",
                best.threads,
                numalab_topo::cpulist::format(&best.cpus),
                pred.join(", ")
            )
        }
        None => {
            let why = a.notes.last().cloned().unwrap_or_default();
            format!("Advice for {ask}: none; {why}. ({other}.)")
        }
    };
    Some(Block {
        html: format!("<p class=\"advice\">{}</p>", esc(&line)),
        text: numalab_results::summary::wrap(&line, 100),
    })
}

/// Every CPU of the surveyed machine over half its first memory node.
fn default_options(answers: &[Record]) -> Option<Options> {
    let m = super::measured::Measured::from_records(answers).ok()?;
    let node = *m.mem_nodes.first()?;
    let half = m.capacity(node) / 2;
    (half > 0).then(|| Options {
        threads: Some(m.machine.pus.len()),
        footprint: Some(half.to_string()),
        ..Options::default()
    })
}
