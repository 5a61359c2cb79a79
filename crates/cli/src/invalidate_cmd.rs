//! `numalab invalidate`: snbench's sharer-count sweep (Table 4.19).

use crate::common::{bad, check_measurable, provenance, CliError, CommonArgs};
use clap::Args;
use numalab_bench::invalidate::{self, InvalidatePlan, Step};
use numalab_probe::Timer;
use numalab_results::output::table;
use numalab_results::stats::median;
use numalab_results::Record;
use numalab_topo::plan::resolve_memory;
use numalab_topo::spec::parse_size;
use numalab_topo::{fmt_bytes, MemSpec, PageSize, ThreadSpec};
use serde_json::json;
use std::fmt::Write;

/// Arguments of `numalab invalidate`.
#[derive(Args, Debug)]
pub struct InvalidateArgs {
    /// The requestor (one CPU; the language of `numalab plan`).
    #[arg(long = "cpu", default_value = "compact")]
    cpu: String,
    /// Home node of the lines (default: the requestor's node, as in snbench).
    #[arg(long = "mem-node", default_value = "local")]
    mem_node: String,
    /// Sharers per node (snbench: 1, a node at a time).
    #[arg(long, default_value_t = 1)]
    per_node: usize,
    /// Largest sharer count (default: every node's sharers).
    #[arg(long)]
    sharers: Option<usize>,
    /// Bytes of shared lines (default: half the L2, so each sharer holds them all).
    #[arg(long)]
    size: Option<String>,
    /// Timed passes per measurement.
    #[arg(long, default_value_t = 5)]
    iterations: usize,
    /// Print the sharer order without measuring.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    common: CommonArgs,
}

fn params(p: &InvalidatePlan, k: usize) -> serde_json::Value {
    let s = &p.sharers[..k];
    json!({
        "sharers": k,
        "requestor_cpu": p.requestor.pu.os,
        "requestor_node": p.requestor.pu.node,
        "home_node": p.home(),
        "sharer_cpus": s.iter().map(|x| x.thread.pu.os).collect::<Vec<_>>(),
        "sharer_nodes": s.iter().map(|x| x.node).collect::<Vec<_>>(),
        "newest_node": s[k - 1].node,
        "hops": s[k - 1].hops,
        "size_bytes": p.size,
        "iterations": p.iterations,
        "state": format!("shrd:{k}"),
        "method": "lines flushed, then the sharers read them; rdex: the requestor's modify chase; upgrade: the requestor reads them too, untimed, then the modify chase; bandwidth kernels rdex/upgrade/zero store one word per line",
    })
}

/// Run `numalab invalidate`.
pub fn run(a: InvalidateArgs) -> Result<(), CliError> {
    a.common.validate()?;
    let spec = ThreadSpec::parse(&a.cpu)?;
    let mem_spec = MemSpec::parse(&a.mem_node)?;
    if a.per_node == 0 {
        return Err(bad("invalid --per-node '0': at least 1 sharer per node"));
    }
    if a.iterations == 0 {
        return Err(bad("invalid --iterations '0': at least 1 timed pass"));
    }
    let size = a.size.as_deref().map(parse_size).transpose()?;
    check_measurable(&a.common, a.dry_run)?;
    let host = a.common.host()?;
    let m = &host.machine;
    let req = vec![crate::crew_args::one(m, spec)?];
    let mem = resolve_memory(m, &mem_spec, PageSize::Base, &req)?;
    let size = size.unwrap_or_else(|| numalab_bench::sizing::half_private_cache(m));
    if size < 4096 {
        return Err(bad(format!(
            "invalid --size '{}': at least 4K",
            a.size.as_deref().unwrap_or_default()
        )));
    }
    let plan = InvalidatePlan::new(
        m,
        req[0].clone(),
        mem,
        a.per_node,
        a.sharers,
        size,
        a.iterations,
    )?;
    let (prov, mut warnings) = provenance(&host);
    warnings.extend(plan.warnings.iter().cloned());
    let n = plan.sharers.len();
    if a.dry_run {
        let mut r = Record::new(
            "invalidate-plan",
            &format!("1..{n} sharers"),
            prov,
            params(&plan, n),
        );
        r.placement = Some(
            json!({ "resolved": { "requestor": plan.requestor, "sharers": plan.sharers, "memory": plan.mem } }),
        );
        r.warnings = warnings;
        return a.common.emit(std::slice::from_ref(&r), || {
            render(&plan, None, &r.warnings)
        });
    }
    let timer = Timer::best();
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let steps = invalidate::measure(&host, &timer, &plan, |k, n| {
        if tty {
            eprint!("\rinvalidate: {k}/{n} sharers   ");
        }
    })?;
    if tty {
        eprintln!();
    }
    let records: Vec<Record> = steps
        .iter()
        .map(|s| {
            let mut r = Record::new(
                "invalidate",
                &format!("{} sharers", s.sharers),
                prov.clone(),
                params(&plan, s.sharers),
            );
            r.add_samples("rdex_latency", "ns", &s.rdex_ns);
            r.add_samples("upgrade_latency", "ns", &s.upgrade_ns);
            r.add_samples("rdex_bandwidth", "GB/s", &s.rdex_gbps);
            r.add_samples("upgrade_bandwidth", "GB/s", &s.upgrade_gbps);
            r.add_samples("zero_bandwidth", "GB/s", &s.zero_gbps);
            match &s.uown_ns {
                Some(u) => r.add_samples("uown_rdex_latency", "ns", u),
                None => r.unavailable.push(numalab_results::record::Unavailable {
                    feature: "uown_rdex_latency".into(),
                    reason:
                        "the newest sharer's node has no memory to home an unowned reference on"
                            .into(),
                }),
            }
            r.placement = Some(json!({ "verified": { "threads": s.pins } }));
            r.data = Some(json!({ "samples": s }));
            r.warnings = warnings.clone();
            r
        })
        .collect();
    a.common
        .emit(&records, || render(&plan, Some(&steps), &warnings))
}

fn render(plan: &InvalidatePlan, steps: Option<&[Step]>, warnings: &[String]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Invalidation sweep: requestor CPU {} (node {}), lines homed on node {}, {} of shared lines{}\n",
        plan.requestor.pu.os,
        plan.requestor.pu.node.map(|n| n.to_string()).unwrap_or("?".into()),
        plan.home(),
        fmt_bytes(plan.size),
        if steps.is_some() {
            format!(", median of {} passes", plan.iterations)
        } else {
            " (plan only)".into()
        }
    );
    let f = |v: &[f64]| median(v).map(|x| format!("{x:.1}")).unwrap_or("-".into());
    let g = |v: &[f64]| median(v).map(|x| format!("{x:.2}")).unwrap_or("-".into());
    let rows: Vec<Vec<String>> = plan
        .sharers
        .iter()
        .enumerate()
        .map(|(i, sh)| {
            let mut row = vec![
                (i + 1).to_string(),
                sh.thread.pu.os.to_string(),
                sh.node.map(|n| n.to_string()).unwrap_or("?".into()),
                sh.hops.map(|h| h.to_string()).unwrap_or("?".into()),
            ];
            if let Some(st) = steps.and_then(|v| v.get(i)) {
                row.extend([
                    f(&st.rdex_ns),
                    f(&st.upgrade_ns),
                    st.uown_ns.as_deref().map(f).unwrap_or("-".into()),
                    g(&st.rdex_gbps),
                    g(&st.upgrade_gbps),
                    g(&st.zero_gbps),
                ]);
            }
            row
        })
        .collect();
    let mut header = vec!["#sh", "+cpu", "node", "hops"];
    if steps.is_some() {
        header.extend([
            "RDEX ns",
            "UPGRD ns",
            "UOWN ns",
            "RDEX GB/s",
            "UPGRD GB/s",
            "zero GB/s",
        ]);
    }
    s.push_str(&table(&header, &rows));
    s.push('\n');
    if steps.is_some() {
        let _ = writeln!(s, "\nUOWN: unowned RDEX latency from the requestor to the newest sharer's node (snbench Figure 4.12's reference). UPGRD latency overlaps stores, as snbench notes; it is not an isolated invalidation.");
    }
    for w in warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}
