//! A recorded program (a `numalab record` trace) against the measured matrix: per
//! thread, where it ran, where its process's pages are, what that costs, and the move
//! that saves most.

use super::measured::Measured;
use numalab_prof::trace::{ObjKind, Trace};
use numalab_topo::cpulist;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One move and what it is predicted to save.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Move {
    /// "move memory" or "move thread".
    pub what: String,
    /// The node it moves to.
    pub to_node: u32,
    /// Predicted mean latency after it (ns).
    pub latency_ns: f64,
    /// Predicted saving per load (ns).
    pub saving_ns: f64,
    /// The command that does it to the running program.
    pub now: String,
    /// The command for the next run.
    pub next_run: String,
}

/// What the trace says about one thread, and the advice.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ThreadAdvice {
    /// Trace object id ("t1234").
    pub obj: String,
    /// Thread name.
    pub name: String,
    /// Thread id and process id.
    pub tid: Option<i32>,
    /// Process id.
    pub pid: Option<i32>,
    /// CPUs it was seen on.
    pub cpus: Vec<u32>,
    /// The node it ran on most (by run time).
    pub node: Option<u32>,
    /// Run time seen, ms.
    pub run_ms: f64,
    /// Its process's resident pages per node, shares.
    pub pages: BTreeMap<u32, f64>,
    /// Share of the process's pages not on the thread's node (page locality proxy).
    pub remote_share: Option<f64>,
    /// Local access ratio from core counters, when the trace has them.
    pub counter_local_ratio: Option<f64>,
    /// Mean latency the matrix predicts for that spread of pages (ns).
    pub latency_ns: Option<f64>,
    /// Matrix cells used.
    pub basis: Vec<String>,
    /// The move that saves most (None when nothing is gained or it cannot be predicted).
    pub best: Option<Move>,
    /// The other move, when it saves too.
    pub alternative: Option<Move>,
    /// Why there is no advice, or what the figure rests on.
    pub notes: Vec<String>,
}

/// What the trace lacks for advice, said once.
pub fn caveats(t: &Trace) -> Vec<String> {
    let mut v = Vec::new();
    let counters = t.samples.iter().any(|s| s.v.contains_key("dram_remote"));
    if !counters {
        v.push(format!(
            "no core counters in this trace ({}): page locality is a proxy for access locality — which pages each thread touches is unknown, so every thread is charged its process's page spread",
            t.source_why("perf-core").unwrap_or("not recorded")
        ));
    }
    if !t
        .samples
        .iter()
        .any(|s| s.v.keys().any(|k| k.starts_with("mem.")))
    {
        v.push(format!(
            "no page placement in this trace ({}): where the pages are is unknown",
            t.source_why("numa_maps")
                .unwrap_or("numa_maps was not read")
        ));
    }
    if t.torn_tail {
        v.push("the trace ends in a torn line (the recorder was killed)".into());
    }
    v
}

fn expected(
    m: &Measured,
    d: u32,
    pages: &BTreeMap<u32, f64>,
    basis: &mut Vec<String>,
) -> Result<f64, String> {
    let mut total = 0.0;
    for (x, s) in pages.iter().filter(|(_, s)| **s > 0.0) {
        let c = m
            .lat(d, *x)
            .ok_or_else(|| format!("no measured latency from node {d} to node {x}"))?;
        basis.push(c.record.clone());
        total += s * c.median;
    }
    Ok(total)
}

/// The CPUs a thread was seen on, the node it ran on most (by run time), and its run time in ns.
fn where_ran(t: &Trace, obj: &str) -> (Vec<u32>, Option<u32>, f64) {
    let mut per_node: BTreeMap<u32, f64> = BTreeMap::new();
    let mut cpus: Vec<u32> = Vec::new();
    let mut prev_run = 0.0;
    for s in t.samples_of(obj) {
        let run = s.v.get("run_ns").copied().unwrap_or(prev_run);
        if let Some(c) = s.v.get("cpu").map(|c| *c as u32) {
            if !cpus.contains(&c) {
                cpus.push(c);
            }
            if let Some(n) = t.node_of_cpu(c) {
                // Every sample counts a little, so a thread seen once still has a node.
                *per_node.entry(n).or_insert(0.0) += (run - prev_run).max(1.0);
            }
        }
        prev_run = run;
    }
    cpus.sort_unstable();
    let node = per_node
        .iter()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(n, _)| *n);
    (cpus, node, prev_run)
}

/// A process's resident pages per node as shares, from the sample with most resident
/// memory (the working set at its peak); empty when the trace has none.
fn process_pages(t: &Trace, process: Option<&str>) -> BTreeMap<u32, f64> {
    let Some(p) = process else {
        return BTreeMap::new();
    };
    let raw: BTreeMap<u32, f64> = t
        .samples_of(p)
        .map(|s| {
            s.v.iter()
                .filter_map(|(k, v)| Some((k.strip_prefix("mem.")?.parse::<u32>().ok()?, *v)))
                .collect::<BTreeMap<u32, f64>>()
        })
        .max_by(|a, b| a.values().sum::<f64>().total_cmp(&b.values().sum::<f64>()))
        .unwrap_or_default();
    let total: f64 = raw.values().sum();
    if total > 0.0 {
        raw.iter().map(|(n, v)| (*n, v / total)).collect()
    } else {
        BTreeMap::new()
    }
}

/// The local access ratio from core counters over the thread's samples, when recorded.
fn counter_ratio(t: &Trace, obj: &str) -> Option<f64> {
    let samples: Vec<_> = t.samples_of(obj).collect();
    let d = |f: &str| Some(samples.last()?.v.get(f)? - samples.first()?.v.get(f)?);
    d("dram_local")
        .zip(d("dram_remote"))
        .and_then(|(l, r)| (l + r > 0.0).then(|| l / (l + r)))
}

/// Both moves for a thread on node `d` whose pages cost `now` ns: memory to `d`, or the
/// thread to the CPU node that prices its pages lowest; largest saving first.
fn moves(
    m: &Measured,
    a: &ThreadAdvice,
    d: u32,
    now: f64,
    program: &str,
    basis: &mut Vec<String>,
) -> Vec<Move> {
    let pid = a.pid.map(|p| p.to_string()).unwrap_or("PID".into());
    let tid = a.tid.map(|p| p.to_string()).unwrap_or("TID".into());
    let from: Vec<String> = a
        .pages
        .keys()
        .filter(|n| **n != d)
        .map(|n| n.to_string())
        .collect();
    let mut out: Vec<Move> = Vec::new();
    if let Some(c) = m.lat(d, d) {
        basis.push(c.record.clone());
        out.push(Move {
            what: "move memory".into(),
            to_node: d,
            latency_ns: c.median,
            saving_ns: now - c.median,
            now: format!("migratepages {pid} {} {d}", from.join(",")),
            next_run: format!("numactl --cpunodebind={d} --membind={d} {program}"),
        });
    }
    let best_node = m
        .cpu_nodes
        .iter()
        .filter(|e| **e != d)
        .filter_map(|e| Some((*e, expected(m, *e, &a.pages, &mut Vec::new()).ok()?)))
        .min_by(|x, y| x.1.total_cmp(&y.1));
    if let Some((e, v)) = best_node {
        let _ = expected(m, e, &a.pages, basis);
        let cpus_e: Vec<u32> = m
            .machine
            .pus
            .iter()
            .filter(|p| p.node == Some(e))
            .map(|p| p.os)
            .collect();
        out.push(Move {
            what: "move thread".into(),
            to_node: e,
            latency_ns: v,
            saving_ns: now - v,
            now: format!("taskset -pc {} {tid}", cpulist::format(&cpus_e)),
            next_run: format!("numactl --cpunodebind={e} {program}"),
        });
    }
    // On a tie the thread moves (no pages to copy).
    out.sort_by(|x, y| {
        y.saving_ns
            .total_cmp(&x.saving_ns)
            .then((x.what == "move memory").cmp(&(y.what == "move memory")))
    });
    out
}

/// Advice for every thread of the trace.
pub fn advise(m: &Measured, t: &Trace) -> Vec<ThreadAdvice> {
    let program = super::program(None, Some(t));
    let mut out = Vec::new();
    for o in t.objects_of(ObjKind::Thread) {
        let (cpus, node, run_ns) = where_ran(t, &o.id);
        let pages = process_pages(t, o.parent.as_deref());
        let mut a = ThreadAdvice {
            obj: o.id.clone(),
            name: o.name.clone(),
            tid: o.tid,
            pid: o.pid,
            cpus,
            node,
            run_ms: run_ns / 1e6,
            remote_share: node
                .filter(|_| !pages.is_empty())
                .map(|d| 1.0 - pages.get(&d).copied().unwrap_or(0.0)),
            pages,
            counter_local_ratio: counter_ratio(t, &o.id),
            latency_ns: None,
            basis: Vec::new(),
            best: None,
            alternative: None,
            notes: Vec::new(),
        };
        let Some(d) = node else {
            a.notes.push("never seen on a CPU: no node".into());
            out.push(a);
            continue;
        };
        if a.pages.is_empty() {
            a.notes
                .push("no page placement for its process in the trace".into());
            out.push(a);
            continue;
        }
        let mut basis = Vec::new();
        let now = match expected(m, d, &a.pages, &mut basis) {
            Ok(v) => v,
            Err(e) if a.remote_share == Some(0.0) => {
                a.notes.push(format!(
                    "every page on its node: nothing to move ({e} to price them)"
                ));
                out.push(a);
                continue;
            }
            Err(e) => {
                a.notes
                    .push(format!("{e}: the survey cannot price this thread's pages"));
                out.push(a);
                continue;
            }
        };
        a.latency_ns = Some(now);
        let mut good = moves(m, &a, d, now, &program, &mut basis)
            .into_iter()
            .filter(|x| x.saving_ns > 0.0);
        a.best = good.next();
        a.alternative = good.next();
        if a.best.is_none() {
            a.notes
                .push("its pages are already where the matrix prices them lowest".into());
        }
        basis.sort();
        basis.dedup();
        a.basis = basis;
        out.push(a);
    }
    out
}
