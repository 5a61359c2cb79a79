//! Loaded-latency records as terminal text: the plan, or the latency-versus-injected
//! bandwidth curve from the unloaded point to the smallest delay.

use super::data::{LoadedData, LoadedPlanData};
use numalab_results::output::table;
use numalab_results::present::{of, warning_lines};
use numalab_results::stats::{median, percentile};
use numalab_results::Record;
use numalab_topo::fmt_bytes;
use std::fmt::Write;

fn bytes(r: &Record, key: &str) -> String {
    fmt_bytes(r.parameters[key].as_u64().unwrap_or(0))
}

/// The dry run's plan: the chase, the injectors, the memory and the delays.
pub(super) fn plan_text(r: &Record) -> Option<String> {
    let delays = r.data_as::<LoadedPlanData>().ok()?.delays;
    let (p, placed) = (&r.parameters, r.placement.as_ref()?);
    let injectors = placed["resolved"]["injectors"]
        .as_array()
        .map_or(0, |v| v.len());
    let nodes: Vec<u32> =
        serde_json::from_value(placed["resolved"]["memory"]["nodes"].clone()).ok()?;
    let mut s = format!(
        "loaded latency: chase on CPU {} over {}, {} {} injector(s) on CPUs {} with {} each, memory {}; an unloaded point, then delays {:?}\n",
        p["requestor_cpu"],
        bytes(r, "chase_bytes"),
        injectors,
        p["traffic"].as_str().unwrap_or("?"),
        p["injector_cpus"].as_str().unwrap_or(""),
        bytes(r, "inject_bytes"),
        numalab_topo::cpulist::format(&nodes),
        delays
    );
    s.push_str(&warning_lines(std::slice::from_ref(r)));
    Some(s)
}

/// The curve: per delay, injected bandwidth and the chase's latency (median, min, p90).
pub(super) fn curve_text(records: &[Record]) -> Option<String> {
    let recs: Vec<&Record> = of(records, "loaded-latency").collect();
    let first = recs.first()?;
    let injectors = recs
        .iter()
        .filter_map(|r| r.parameters["injectors"].as_u64())
        .max();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Loaded latency: chase on CPU {} over {}; {} {} injector(s); median of {} passes\n",
        first.parameters["requestor_cpu"],
        bytes(first, "chase_bytes"),
        injectors.unwrap_or(0),
        first.parameters["traffic"].as_str().unwrap_or("?"),
        first.parameters["iterations"]
    );
    let f = |v: Option<f64>, p: usize| v.map(|x| format!("{x:.p$}")).unwrap_or("-".into());
    let rows: Vec<Vec<String>> = recs
        .iter()
        .filter_map(|r| r.data_as::<LoadedData>().ok())
        .map(|d| {
            let p = d.samples;
            let mut l = p.latency_ns.clone();
            l.sort_by(f64::total_cmp);
            vec![
                p.delay.map(|d| d.to_string()).unwrap_or("unloaded".into()),
                if p.delay.is_some() {
                    f(median(&p.injected_gbps), 2)
                } else {
                    "-".into()
                },
                f(median(&p.latency_ns), 1),
                f(l.first().copied(), 1),
                f(Some(percentile(&l, 0.9)), 1),
            ]
        })
        .collect();
    s.push_str(&table(
        &["delay", "injected GB/s", "latency ns", "min", "p90"],
        &rows,
    ));
    s.push('\n');
    let _ = writeln!(s, "\ninjected GB/s counts memory traffic: 64 bytes per line read, 128 per line written (read-for-ownership plus writeback)");
    s.push_str(&warning_lines(records));
    Some(s)
}
