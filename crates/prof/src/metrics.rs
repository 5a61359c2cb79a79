//! Metrics derived from a trace, each from the best source the trace holds and
//! labelled with it. Without core counters the local memory access ratio is not
//! guessed: the proxies (page locality, NUMA-balancing hint-fault locality) carry
//! their own names.

use crate::counters::scaled_delta;
use crate::system::get_reading;
use crate::trace::{ObjKind, Sample, Trace};
use std::collections::BTreeMap;

/// A metric the trace can (or cannot) give.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricInfo {
    /// Name used by `dump --metric`.
    pub name: &'static str,
    /// Unit.
    pub unit: &'static str,
    /// Objects it is given for.
    pub scope: &'static str,
    /// Source it comes from.
    pub source: &'static str,
    /// What it means.
    pub meaning: &'static str,
    /// None when derivable from this trace, else why not.
    pub missing: Option<String>,
}

/// One value of a metric.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// End of the interval, ns since the start.
    pub t_ns: u64,
    /// Object id ("t1234", "n0", "p99/n1", "sys").
    pub obj: String,
    /// Value.
    pub value: f64,
}

/// Samples per object, in time order.
pub struct Index<'a> {
    /// The trace.
    pub trace: &'a Trace,
    by_obj: BTreeMap<&'a str, Vec<&'a Sample>>,
}

impl<'a> Index<'a> {
    /// Index a trace.
    pub fn new(trace: &'a Trace) -> Index<'a> {
        let mut by_obj: BTreeMap<&str, Vec<&Sample>> = BTreeMap::new();
        for s in &trace.samples {
            by_obj.entry(s.obj.as_str()).or_default().push(s);
        }
        for v in by_obj.values_mut() {
            v.sort_by_key(|s| s.t_ns);
        }
        Index { trace, by_obj }
    }

    /// Samples of an object.
    pub fn of(&self, obj: &str) -> &[&'a Sample] {
        self.by_obj.get(obj).map_or(&[], |v| v.as_slice())
    }

    /// The CPUs an object was seen on and their nodes, ascending.
    pub fn placement(&self, obj: &str) -> (Vec<u32>, Vec<u32>) {
        let cpus: std::collections::BTreeSet<u32> = self
            .of(obj)
            .iter()
            .filter_map(|x| x.v.get("cpu").map(|c| *c as u32))
            .collect();
        let nodes: std::collections::BTreeSet<u32> = cpus
            .iter()
            .filter_map(|c| self.trace.node_of_cpu(*c))
            .collect();
        (cpus.into_iter().collect(), nodes.into_iter().collect())
    }

    fn ids(&self, kind: ObjKind) -> Vec<&'a str> {
        self.trace.objects_of(kind).map(|o| o.id.as_str()).collect()
    }

    fn has_field(&self, kind: ObjKind, f: &str) -> bool {
        self.ids(kind)
            .iter()
            .any(|id| self.of(id).iter().any(|s| s.v.contains_key(f)))
    }

    fn has_prefix(&self, kind: ObjKind, p: &str) -> bool {
        self.ids(kind).iter().any(|id| {
            self.of(id)
                .iter()
                .any(|s| s.v.keys().any(|k| k.starts_with(p) && !k.contains("_ns")))
        })
    }
}

const ALL: [(&str, &str, &str, &str, &str); 13] = [
    ("node.cpu_busy", "%", "node", "proc-stat", "busy share of the node's CPUs"),
    ("node.alloc_rate", "pages/s", "node", "numastat", "pages allocated on the node (numa_hit): allocations, not accesses"),
    ("node.alloc_miss_rate", "pages/s", "node", "numastat", "pages allocated here although another node was preferred (numa_miss)"),
    ("node.mem_free", "MiB", "node", "node-meminfo", "free memory"),
    ("node.read_bw", "MB/s", "node", "perf-uncore", "memory-controller read bandwidth (CAS reads × 64 B)"),
    ("node.write_bw", "MB/s", "node", "perf-uncore", "memory-controller write bandwidth (CAS writes × 64 B)"),
    ("system.hint_local_ratio", "ratio", "system", "vmstat", "NUMA-balancing hint faults that were local (proxy; system-wide, only while balancing scans)"),
    ("system.migrate_rate", "pages/s", "system", "vmstat", "pages migrated by NUMA balancing"),
    ("thread.node", "node", "thread", "proc", "node of the CPU the thread last ran on"),
    ("thread.util", "%", "thread", "proc", "share of the interval the thread ran"),
    ("thread.migrations", "count", "thread", "proc-sched", "CPU migrations since the thread appeared"),
    ("thread.page_locality", "ratio", "thread", "numa_maps+proc", "page locality (proxy): share of its process's resident pages on the node the thread runs on; which pages the thread touches is unknown without counters"),
    ("thread.local_access_ratio", "ratio", "thread", "perf-core", "local memory access ratio: local / (local + remote) DRAM fills, scaled for multiplexing"),
];

/// Also offered: resident bytes per node of each process ("p1234/n0").
pub const PROCESS_MEM: (&str, &str, &str, &str, &str) = (
    "process.mem",
    "MiB",
    "process×node",
    "numa_maps",
    "resident memory of the process on each node",
);

/// Every metric with whether this trace can give it.
pub fn catalogue(ix: &Index) -> Vec<MetricInfo> {
    let t = ix.trace;
    let src = |s: &str| {
        if t.source_ok(s) {
            None
        } else {
            Some(
                t.source_why(s)
                    .unwrap_or("source not recorded in this trace")
                    .to_string(),
            )
        }
    };
    ALL.iter()
        .chain(std::iter::once(&PROCESS_MEM))
        .map(|(name, unit, scope, source, meaning)| {
            let missing = match *name {
                "node.read_bw" if !ix.has_prefix(ObjKind::Node, "cas_read") => src("perf-uncore").or(Some("no memory-controller reads in the samples".into())),
                "node.write_bw" if !ix.has_prefix(ObjKind::Node, "cas_write") => src("perf-uncore").or(Some("no memory-controller writes in the samples".into())),
                "thread.local_access_ratio" if !ix.has_field(ObjKind::Thread, "dram_local") => Some(
                    t.header
                        .counters
                        .iter()
                        .find(|c| c.field == "dram_local")
                        .and_then(|c| c.error.clone())
                        .or_else(|| src("perf-core"))
                        .unwrap_or_else(|| "no local/remote DRAM counts in the samples".into()),
                ),
                "thread.page_locality" | "process.mem" if !ix.has_prefix(ObjKind::Process, "mem.") => {
                    Some(src("numa_maps").unwrap_or_else(|| "no process page placement in the samples (monitor traces have no processes)".into()))
                }
                "system.hint_local_ratio" | "system.migrate_rate" if !ix.has_field(ObjKind::System, "numa_hint_faults") => src("vmstat"),
                n if n.starts_with("thread.") && ix.ids(ObjKind::Thread).is_empty() => {
                    Some("no threads in this trace (a monitor trace)".into())
                }
                "thread.migrations" if !ix.has_field(ObjKind::Thread, "migrations") => src("proc-sched"),
                "node.cpu_busy" if !ix.has_field(ObjKind::Node, "cpu_busy") => src("proc-stat"),
                "node.alloc_rate" | "node.alloc_miss_rate" if !ix.has_field(ObjKind::Node, "numa_hit") => src("numastat"),
                "node.mem_free" if !ix.has_field(ObjKind::Node, "mem_free") => src("node-meminfo"),
                _ => None,
            };
            MetricInfo { name, unit, scope, source, meaning, missing }
        })
        .collect()
}

/// Names of every metric (for error messages).
pub fn names() -> Vec<&'static str> {
    ALL.iter().map(|m| m.0).chain([PROCESS_MEM.0]).collect()
}

fn rate(a: &Sample, b: &Sample, f: &str) -> Option<f64> {
    let dt = (b.t_ns.checked_sub(a.t_ns)?) as f64 / 1e9;
    let d = b.v.get(f)? - a.v.get(f)?;
    (dt > 0.0 && d >= 0.0).then(|| d / dt)
}

/// Sum over fields with a prefix of the scaled count difference × scale.
fn counter_sum(ix: &Index, a: &Sample, b: &Sample, prefix: &str) -> Option<f64> {
    let mut sum = None;
    for k in
        b.v.keys()
            .filter(|k| k.starts_with(prefix) && !k.ends_with("_ns"))
    {
        let (Some(ra), Some(rb)) = (get_reading(&a.v, k), get_reading(&b.v, k)) else {
            continue;
        };
        let scale = ix
            .trace
            .header
            .counters
            .iter()
            .find(|c| &c.field == k)
            .map_or(1.0, |c| c.scale);
        if let Some(d) = scaled_delta(&ra, &rb) {
            *sum.get_or_insert(0.0) += d * scale;
        }
    }
    sum
}

fn pairs<'s>(v: &'s [&'s Sample]) -> impl Iterator<Item = (&'s Sample, &'s Sample)> + 's {
    v.windows(2).map(|w| (w[0], w[1]))
}

/// The latest sample of `obj` at or before `t` (samples are in time order).
fn at<'s>(ix: &'s Index, obj: &str, t: u64) -> Option<&'s Sample> {
    let s = ix.of(obj);
    let i = s.partition_point(|x| x.t_ns <= t);
    i.checked_sub(1).map(|i| s[i])
}

/// Share of the process's resident bytes on `node` at time t.
fn page_share(ix: &Index, pid_obj: &str, node: u32, t: u64) -> Option<f64> {
    let s = at(ix, pid_obj, t).or_else(|| ix.of(pid_obj).first().copied())?;
    let total = *s.v.get("mem")?;
    (total > 0.0).then(|| s.v.get(&format!("mem.{node}")).copied().unwrap_or(0.0) / total)
}

fn parent_of<'t>(t: &'t Trace, id: &str) -> Option<&'t str> {
    t.objects.iter().find(|o| o.id == id)?.parent.as_deref()
}

/// A metric's time series (empty when the trace cannot give it).
pub fn series(ix: &Index, name: &str) -> Vec<Point> {
    let mut out = Points(vec![]);
    match name {
        "node.cpu_busy"
        | "node.alloc_rate"
        | "node.alloc_miss_rate"
        | "node.read_bw"
        | "node.write_bw" => node_rates(ix, name, &mut out),
        "node.mem_free" => {
            for id in ix.ids(ObjKind::Node) {
                for s in ix.of(id) {
                    out.push(s.t_ns, id, s.v.get("mem_free").map(|b| b / 1048576.0));
                }
            }
        }
        "system.hint_local_ratio" | "system.migrate_rate" => system_rates(ix, name, &mut out),
        "thread.node" | "thread.util" | "thread.migrations" => threads(ix, name, &mut out),
        "thread.page_locality" | "thread.local_access_ratio" => thread_memory(ix, name, &mut out),
        "process.mem" => {
            for id in ix.ids(ObjKind::Process) {
                for s in ix.of(id) {
                    for (k, v) in s.v.iter().filter(|(k, _)| k.starts_with("mem.")) {
                        out.push(s.t_ns, &format!("{id}/n{}", &k[4..]), Some(v / 1048576.0));
                    }
                }
            }
        }
        _ => {}
    }
    out.0
}

/// A series being built: points with no finite value are left out.
struct Points(Vec<Point>);

impl Points {
    fn push(&mut self, t_ns: u64, obj: &str, value: Option<f64>) {
        if let Some(value) = value.filter(|v| v.is_finite()) {
            self.0.push(Point {
                t_ns,
                obj: obj.to_string(),
                value,
            });
        }
    }
}

/// Per-node rates between consecutive samples: CPU busy %, allocations, bandwidth.
fn node_rates(ix: &Index, name: &str, out: &mut Points) {
    for id in ix.ids(ObjKind::Node) {
        for (a, b) in pairs(ix.of(id)) {
            let dt = (b.t_ns - a.t_ns) as f64 / 1e9;
            let d = |f: &str| Some(b.v.get(f)? - a.v.get(f)?);
            let v = match name {
                "node.cpu_busy" => d("cpu_busy")
                    .zip(d("cpu_total"))
                    .and_then(|(x, y)| (y > 0.0).then(|| 100.0 * x / y)),
                "node.alloc_rate" => rate(a, b, "numa_hit"),
                "node.alloc_miss_rate" => rate(a, b, "numa_miss"),
                // Counters scale to MiB: × 1.048576 per s gives MB/s.
                "node.read_bw" => counter_sum(ix, a, b, "cas_read").map(|m| m * 1.048576 / dt),
                _ => counter_sum(ix, a, b, "cas_write").map(|m| m * 1.048576 / dt),
            };
            out.push(b.t_ns, id, v);
        }
    }
}

/// The system's NUMA-balancing hint locality and page migration rate.
fn system_rates(ix: &Index, name: &str, out: &mut Points) {
    for (a, b) in pairs(ix.of("sys")) {
        let v = if name == "system.migrate_rate" {
            rate(a, b, "numa_pages_migrated")
        } else {
            let d = |f: &str| Some(b.v.get(f)? - a.v.get(f)?);
            d("numa_hint_faults_local")
                .zip(d("numa_hint_faults"))
                .and_then(|(l, all)| (all > 0.0).then(|| l / all))
        };
        out.push(b.t_ns, "sys", v);
    }
}

/// Per thread: the node it ran on, its CPU utilisation, its migrations so far.
fn threads(ix: &Index, name: &str, out: &mut Points) {
    let t = ix.trace;
    for id in ix.ids(ObjKind::Thread) {
        let samples = ix.of(id);
        match name {
            "thread.node" => {
                for s in samples {
                    let node = s.v.get("cpu").and_then(|c| t.node_of_cpu(*c as u32));
                    out.push(s.t_ns, id, node.map(f64::from));
                }
            }
            "thread.util" => {
                for (a, b) in pairs(samples) {
                    out.push(b.t_ns, id, rate(a, b, "run_ns").map(|r| r / 1e9 * 100.0));
                }
            }
            _ => {
                let first = samples.first().and_then(|s| s.v.get("migrations").copied());
                for s in samples {
                    let m = s.v.get("migrations").zip(first).map(|(m, f)| m - f);
                    out.push(s.t_ns, id, m);
                }
            }
        }
    }
}

/// Per thread: the share of its process's pages on its node, and (with counters) the
/// share of its DRAM accesses that were local.
fn thread_memory(ix: &Index, name: &str, out: &mut Points) {
    let t = ix.trace;
    for id in ix.ids(ObjKind::Thread) {
        if name == "thread.page_locality" {
            let Some(p) = parent_of(t, id) else { continue };
            for s in ix.of(id) {
                let node = s.v.get("cpu").and_then(|c| t.node_of_cpu(*c as u32));
                out.push(s.t_ns, id, node.and_then(|n| page_share(ix, p, n, s.t_ns)));
            }
            continue;
        }
        for (a, b) in pairs(ix.of(id)) {
            let l = counter_sum(ix, a, b, "dram_local");
            let r = counter_sum(ix, a, b, "dram_remote");
            let v = l
                .zip(r)
                .and_then(|(l, r)| (l + r > 0.0).then(|| l / (l + r)));
            out.push(b.t_ns, id, v);
        }
    }
}

/// One line of the summary.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// What ("page locality", "hot node", …).
    pub what: String,
    /// Object it is about ("all", "t1234", "n0").
    pub obj: String,
    /// Value as text (with unit).
    pub value: String,
    /// Source label.
    pub source: String,
}

/// Run-time weighted value of a per-thread ratio series (weights: Δrun_ns).
fn weighted(ix: &Index, pts: &[Point], obj: Option<&str>) -> Option<f64> {
    let mut num = 0.0;
    let mut den = 0.0;
    for p in pts.iter().filter(|p| obj.is_none_or(|o| p.obj == o)) {
        let s = ix.of(&p.obj);
        let i = s.binary_search_by_key(&p.t_ns, |x| x.t_ns).ok()?;
        let w = if i == 0 {
            s[0].v.get("run_ns").copied().unwrap_or(0.0)
        } else {
            s[i].v.get("run_ns").copied().unwrap_or(0.0)
                - s[i - 1].v.get("run_ns").copied().unwrap_or(0.0)
        };
        num += w * p.value;
        den += w;
    }
    (den > 0.0).then(|| num / den)
}

/// The headline findings: locality (measured or proxy), migrations, hot node.
pub fn findings(ix: &Index) -> Vec<Finding> {
    let mut out = vec![];
    let mut add = |what: &str, obj: &str, value: String, source: &str| {
        out.push(Finding {
            what: what.into(),
            obj: obj.into(),
            value,
            source: source.into(),
        });
    };
    let threads: Vec<&str> = ix.ids(ObjKind::Thread);
    for (metric, what, source) in [
        (
            "thread.local_access_ratio",
            "local memory access ratio",
            "perf-core",
        ),
        (
            "thread.page_locality",
            "page locality (proxy: process pages on the thread's node, run-time weighted)",
            "numa_maps+proc",
        ),
    ] {
        let pts = series(ix, metric);
        if pts.is_empty() {
            continue;
        }
        if let Some(v) = weighted(ix, &pts, None) {
            add(what, "all threads", format!("{:.3}", v), source);
        }
        for id in &threads {
            if let Some(v) = weighted(ix, &pts, Some(id)) {
                add(what, id, format!("{:.3}", v), source);
            }
        }
    }
    hint_faults(ix, &mut add);
    migrations(ix, &threads, &mut add);
    hot_node(ix, &mut add);
    out
}

/// The NUMA-balancing local hint-fault ratio over the trace (system-wide).
fn hint_faults(ix: &Index, add: &mut impl FnMut(&str, &str, String, &str)) {
    if let Some(v) = {
        let s = ix.of("sys");
        let d = |f: &str| Some(s.last()?.v.get(f)? - s.first()?.v.get(f)?);
        d("numa_hint_faults_local").zip(d("numa_hint_faults"))
    } {
        let text = if v.1 > 0.0 {
            format!("{:.3} ({} of {} hint faults)", v.0 / v.1, v.0, v.1)
        } else {
            "no hint faults during the trace (NUMA balancing off or idle)".into()
        };
        add(
            "NUMA-balancing local hint-fault ratio (system-wide)",
            "sys",
            text,
            "vmstat",
        );
    }
}

/// Each thread's CPUs, migrations and node changes between samples.
fn migrations(ix: &Index, threads: &[&str], add: &mut impl FnMut(&str, &str, String, &str)) {
    let t = ix.trace;
    for id in threads {
        let s = ix.of(id);
        let m = s
            .first()
            .zip(s.last())
            .and_then(|(a, b)| Some(b.v.get("migrations")? - a.v.get("migrations")?));
        let nodes: Vec<u32> = s
            .iter()
            .filter_map(|x| t.node_of_cpu(*x.v.get("cpu")? as u32))
            .collect();
        let changes = nodes.windows(2).filter(|w| w[0] != w[1]).count();
        let cpus: Vec<String> = ix.placement(id).0.iter().map(|c| c.to_string()).collect();
        add(
            "CPUs seen, migrations, node changes between samples",
            id,
            format!(
                "cpus {}; {}; {}",
                cpus.join(","),
                m.map_or("? migrations".into(), |m| numalab_results::words::count(
                    m as u64,
                    "migration"
                )),
                numalab_results::words::count(changes as u64, "node change")
            ),
            "proc, proc-sched",
        );
    }
}

/// Hot node: one node holding most of the pages (or serving most of the bandwidth).
fn hot_node(ix: &Index, add: &mut impl FnMut(&str, &str, String, &str)) {
    let t = ix.trace;
    let n = t.header.nodes.len();
    let mem_nodes = t
        .header
        .nodes
        .iter()
        .filter(|x| x.mem_bytes > 0)
        .count()
        .max(1);
    for p in ix.ids(ObjKind::Process) {
        let Some(s) = ix.of(p).last() else { continue };
        let Some(total) = s.v.get("mem").filter(|m| **m > 0.0) else {
            continue;
        };
        let (node, bytes) =
            s.v.iter()
                .filter(|(k, _)| k.starts_with("mem."))
                .max_by(|a, b| a.1.total_cmp(b.1))
                .map(|(k, v)| (k[4..].to_string(), *v))
                .unwrap_or_default();
        let share = bytes / total;
        let verdict = if mem_nodes < 2 {
            format!("n/a: one memory node ({node} holds {:.0}%)", share * 100.0)
        } else if share >= 0.5 && share > 1.5 / mem_nodes as f64 {
            format!(
                "node {node} holds {:.0}% of the pages: hot node",
                share * 100.0
            )
        } else {
            format!("none (largest share {:.0}% on node {node})", share * 100.0)
        };
        add("hot node by pages", p, verdict, "numa_maps");
    }
    let bw = series(ix, "node.read_bw");
    if n >= 2 && !bw.is_empty() {
        let mut per: BTreeMap<&str, f64> = BTreeMap::new();
        for p in &bw {
            *per.entry(p.obj.as_str()).or_default() += p.value;
        }
        let total: f64 = per.values().sum();
        if let Some((node, v)) = per.iter().max_by(|a, b| a.1.total_cmp(b.1)) {
            if total > 0.0 {
                let share = v / total;
                let verdict = if share >= 0.5 && share > 1.5 / n as f64 {
                    format!(
                        "{node} serves {:.0}% of read bandwidth: hot node",
                        share * 100.0
                    )
                } else {
                    format!("none (largest share {:.0}% on {node})", share * 100.0)
                };
                add("hot node by bandwidth", "all nodes", verdict, "perf-uncore");
            }
        }
    }
}
