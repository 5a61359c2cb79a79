//! `numalab monitor`: periodic per-node lines (snsar), optionally streamed to a trace.

use crate::common::{bad, context, CliError};
use crate::prof_args;
use clap::Args;
use numalab_prof::monitor::{self, Options};
use numalab_results::interrupt;
use numalab_topo::{Host, TopologySource};
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `numalab monitor`.
#[derive(Args, Debug)]
pub struct MonitorArgs {
    /// Nodes to show, e.g. 0 or 0-1,3 (all by default).
    #[arg(long = "node", value_name = "LIST")]
    node: Option<String>,
    /// Interval in milliseconds.
    #[arg(
        short = 'i',
        long = "interval",
        value_name = "MS",
        default_value_t = 1000
    )]
    interval: u64,
    /// Number of lines per node, then stop (default: until Ctrl-C).
    #[arg(short = 'c', long = "count", value_name = "K")]
    count: Option<u64>,
    /// Also stream the samples to this trace file.
    #[arg(short = 'o', long = "output", value_name = "TRACE")]
    output: Option<PathBuf>,
    /// Replace the trace file if it already holds one.
    #[arg(long)]
    force: bool,
    /// Pin the sampler to this CPU.
    #[arg(long, value_name = "CPU")]
    runon: Option<u32>,
    /// Do not open memory-controller counters.
    #[arg(long = "no-counters")]
    no_counters: bool,
}

/// `--node`: a node list of nodes in `all` (`listed` is how the error names them).
fn nodes(s: &str, all: &[u32], listed: &str) -> Result<Vec<u32>, CliError> {
    let v = numalab_topo::cpulist::parse("--node", s).map_err(|_| {
        bad(format!(
            "invalid --node '{s}': a node list such as 0 or 0-1,3; nodes here are {listed}"
        ))
    })?;
    if let Some(n) = v.iter().find(|n| !all.contains(n)) {
        return Err(bad(format!(
            "invalid --node '{s}': node {n} does not exist; nodes here are {}",
            numalab_topo::cpulist::format(all)
        )));
    }
    Ok(v)
}

/// Run `numalab monitor`.
pub fn run(a: MonitorArgs) -> Result<(), CliError> {
    let iv = prof_args::interval("--interval", a.interval)?;
    if a.count == Some(0) {
        return Err(bad("invalid --count '0': a number of lines, 1 or more"));
    }
    let host = Host::load(&TopologySource::ThisSystem)?;
    let all: Vec<u32> = host.machine.nodes.iter().map(|n| n.os).collect();
    let nodes = match &a.node {
        None => vec![],
        Some(s) => nodes(s, &all, &host.machine.memory_node_list())?,
    };
    let runon = prof_args::runon(&host, a.runon)?;
    let path = |p: &std::path::Path| prof_args::trace_path(p, a.force);
    a.output.as_deref().map(path).transpose()?;
    // Ctrl-C, SIGTERM and SIGHUP end the sampling: the trace gets its end entry.
    interrupt::catch();
    let prov = context(&host).prov;
    let opts = Options {
        interval: iv,
        count: a.count,
        nodes,
        output: a.output.clone(),
        runon,
        counters: !a.no_counters,
    };
    let mut first = true;
    let stop = || interrupt::pending();
    let mut out = std::io::stdout();
    monitor::monitor(&host, &opts, prov, &stop, &mut |t, lines| {
        if first {
            first = false;
            for s in t.header.sources.iter().filter(|s| !s.available) {
                let _ = writeln!(out, "# {} unavailable: {}", s.source, s.detail);
            }
            let _ = writeln!(out, "# alloc and miss count pages allocated (numastat), not accesses; migr = pages migrated/s by NUMA balancing, system-wide");
            let _ = writeln!(
                out,
                "{:>8} {:>5} {:>6} {:>10} {:>11} {:>10} {:>10} {:>10} {:>10}",
                "time s", "node", "cpu%", "free MiB", "alloc pg/s", "miss pg/s", "read MB/s", "write MB/s", "migr pg/s"
            );
        }
        for l in lines {
            let _ = writeln!(out, "{}", l.text());
        }
        let _ = out.flush();
    })
    .map_err(|e| CliError { code: if e.starts_with("invalid") { 2 } else { 1 }, msg: e })?;
    match interrupt::pending() {
        // Said on stderr, and 128 + the signal, as every command a signal ends.
        Some(sig) => Err(CliError {
            code: 128 + sig,
            msg: format!(
                "interrupted by {}: the trace ends there",
                interrupt::name(sig)
            ),
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn node_lists_never_panic_and_name_what_they_refuse(s in prop_oneof!["[0-9,-]{0,12}", "\\PC{0,16}"]) {
            let all = [0, 1, 2, 3];
            match nodes(&s, &all, "0-3") {
                Ok(v) => {
                    prop_assert!(v.iter().all(|n| all.contains(n)));
                    let printed = numalab_topo::cpulist::format(&v);
                    prop_assert_eq!(nodes(&printed, &all, "0-3").unwrap(), v);
                }
                Err(e) => {
                    prop_assert_eq!(e.code, 2);
                    prop_assert!(e.msg.contains(&format!("'{s}'")), "{}", e.msg);
                    if !s.contains(|c: char| c.is_control()) {
                        prop_assert_eq!(e.msg.lines().count(), 1);
                    }
                }
            }
        }
    }
}
