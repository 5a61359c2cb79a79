//! The invalidation sweep as terminal text: the sharers nearest-first, and, when
//! measured, each sharer count's figures.

use super::data::InvalidateData;
use super::Step;
use numalab_results::output::table;
use numalab_results::present::{of, warning_lines};
use numalab_results::settle::cell_of;
use numalab_results::stats::median;
use numalab_results::Record;
use numalab_topo::fmt_bytes;
use serde_json::Value;
use std::fmt::Write;

fn opt(v: &Value) -> String {
    v.as_u64().map(|n| n.to_string()).unwrap_or("?".into())
}

/// The sweep of `records`: the plan's sharers, or each measured sharer count.
pub(super) fn render(records: &[Record]) -> Option<String> {
    let plan = of(records, "invalidate-plan").last();
    let measured: Vec<&Record> = of(records, "invalidate").collect();
    let first = plan.or(measured.first().copied())?;
    let p = &first.parameters;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Invalidation sweep: requestor CPU {} (node {}), lines homed on node {}, {} of shared lines{}\n",
        p["requestor_cpu"],
        opt(&p["requestor_node"]),
        p["home_node"],
        fmt_bytes(p["size_bytes"].as_u64().unwrap_or(0)),
        match plan {
            None => format!(
                "; latency: median of the undisturbed passes (of all where none was undisturbed), bandwidth: best of them (at least {}, more until within ±{} %)",
                numalab_results::words::passes(p["iterations"].as_u64().unwrap_or(0) as usize),
                p["tolerance_pct"].as_f64().unwrap_or(numalab_results::settle::DEFAULT_TOLERANCE_PCT)
            ),
            Some(_) => " (plan only)".into(),
        }
    );
    match plan {
        Some(r) => s.push_str(&plan_rows(r)?),
        None => s.push_str(&measured_rows(&measured)),
    }
    s.push_str(&warning_lines(records));
    Some(s)
}

/// The plan's sharers: count, CPU, node and hops from the home.
fn plan_rows(r: &Record) -> Option<String> {
    let sharers = r.placement.as_ref()?["resolved"]["sharers"]
        .as_array()?
        .clone();
    let rows: Vec<Vec<String>> = sharers
        .iter()
        .enumerate()
        .map(|(i, sh)| {
            vec![
                (i + 1).to_string(),
                sh["thread"]["os"].to_string(),
                opt(&sh["node"]),
                opt(&sh["hops"]),
            ]
        })
        .collect();
    Some(table(&["#sh", "+cpu", "node", "hops"], &rows) + "\n")
}

/// One row per sharer count: the newest sharer and the figures measured with it.
fn measured_rows(recs: &[&Record]) -> String {
    // Latency by its median, bandwidth by its best pass, as each settled; a figure
    // that did not settle says so beside it.
    let f = |st: &Step, m: &str, v: &[f64]| {
        median(v).map_or("-".into(), |x| cell_of(st.settle_of(m), format!("{x:.1}")))
    };
    let g = |st: &Step, m: &str, v: &[f64]| {
        let best = v.iter().copied().fold(f64::NAN, f64::max);
        if best.is_nan() {
            return "-".to_string();
        }
        cell_of(st.settle_of(m), format!("{best:.2}"))
    };
    let rows: Vec<Vec<String>> = recs
        .iter()
        .filter_map(|r| {
            let p = &r.parameters;
            let k = p["sharers"].as_u64()? as usize;
            let st: Step = r.data_as::<InvalidateData>().ok()?.samples;
            Some(vec![
                k.to_string(),
                p["sharer_cpus"][k - 1].to_string(),
                opt(&p["sharer_nodes"][k - 1]),
                opt(&p["hops"]),
                f(&st, "rdex_latency", &st.rdex_ns),
                f(&st, "upgrade_latency", &st.upgrade_ns),
                st.uown_ns
                    .as_deref()
                    .map(|u| f(&st, "uown_rdex_latency", u))
                    .unwrap_or("-".into()),
                g(&st, "rdex_bandwidth", &st.rdex_gbps),
                g(&st, "upgrade_bandwidth", &st.upgrade_gbps),
                g(&st, "zero_bandwidth", &st.zero_gbps),
            ])
        })
        .collect();
    let header = [
        "#sh",
        "+cpu",
        "node",
        "hops",
        "RDEX ns",
        "UPGRD ns",
        "UOWN ns",
        "RDEX GB/s",
        "UPGRD GB/s",
        "zero GB/s",
    ];
    let mut s = table(&header, &rows);
    s.push_str("\n\nUOWN: unowned RDEX latency from the requestor to the newest sharer's node (snbench Figure 4.12's reference). UPGRD latency overlaps stores, as snbench notes; it is not an isolated invalidation.\n");
    s
}
