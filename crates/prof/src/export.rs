//! Chrome trace-event JSON, which the Perfetto UI (and chrome://tracing) opens:
//! one process per recorded process with a track per thread showing where it ran
//! (slices named by CPU and node), and one pseudo-process per NUMA node with
//! counter tracks for the node metrics.

use crate::metrics::{series, Index};
use crate::trace::{ObjKind, Object, Trace};
use serde_json::{json, Value};

/// Pseudo process ids for nodes sit above any real pid (pid_max ≤ 2^22).
const NODE_PID_BASE: i64 = 1 << 23;

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// The trace as a Chrome trace-event JSON document.
pub fn perfetto(t: &Trace) -> Value {
    let ix = Index::new(t);
    let mut ev: Vec<Value> = vec![];
    for o in t.objects_of(ObjKind::Process) {
        ev.push(json!({"ph":"M","name":"process_name","pid":o.pid,"tid":o.pid,"args":{"name":format!("{} ({})", o.name, o.pid.unwrap_or(0))}}));
    }
    for o in t.objects_of(ObjKind::Thread) {
        ev.push(json!({"ph":"M","name":"thread_name","pid":o.pid,"tid":o.tid,"args":{"name":format!("{} ({})", o.name, o.tid.unwrap_or(0))}}));
        thread_slices(t, &ix, o, &mut ev);
    }
    events(t, &mut ev);
    node_counters(t, &ix, &mut ev);
    json!({
        "traceEvents": ev,
        "displayTimeUnit": "ms",
        "metadata": {
            "source": "numalab trace",
            "mode": t.header.mode,
            "target": t.header.target,
            "host": t.header.provenance.hostname,
            "interval_ms": t.header.interval_ms,
        }
    })
}

/// One slice per stretch a thread stayed on one CPU: from the first interval it ran
/// there to the last (intervals asleep between them included, since it stayed placed
/// there); a new slice only when it moves to another CPU.
fn thread_slices(t: &Trace, ix: &Index, o: &Object, ev: &mut Vec<Value>) {
    let s = ix.of(&o.id);
    let mut open: Option<(u64, u32, u64, f64)> = None; // start, cpu, end, run ns
    let flush = |open: &mut Option<(u64, u32, u64, f64)>, ev: &mut Vec<Value>| {
        if let Some((a, cpu, b, run)) = open.take() {
            if b > a {
                let node = t.node_of_cpu(cpu).map_or("?".into(), |n| n.to_string());
                ev.push(json!({"ph":"X","name":format!("cpu {cpu} (node {node})"),"cat":"placement","pid":o.pid,"tid":o.tid,"ts":us(a),"dur":us(b - a),"args":{"cpu":cpu,"node":node,"run_ms":run / 1e6}}));
            }
        }
    };
    for w in s.windows(2) {
        let (a, b) = (w[0], w[1]);
        let Some(cpu) = b.v.get("cpu").map(|c| *c as u32) else {
            continue;
        };
        let run =
            b.v.get("run_ns")
                .zip(a.v.get("run_ns"))
                .map_or(0.0, |(x, y)| x - y);
        match &mut open {
            Some((_, c, end, r)) if *c == cpu => {
                if run > 0.0 {
                    *end = b.t_ns;
                    *r += run;
                }
            }
            _ => {
                flush(&mut open, ev);
                if run > 0.0 {
                    open = Some((a.t_ns, cpu, b.t_ns, run));
                }
            }
        }
    }
    flush(&mut open, ev);
}

/// The trace's events as instants on their thread's track (a process's on its main
/// thread's), each once: a process's exit and its main thread's, seen in the same
/// round, are one exit on one track.
fn events(t: &Trace, ev: &mut Vec<Value>) {
    let mut said: Vec<(Option<i32>, Option<i32>, u64, &str)> = Vec::new();
    for e in &t.events {
        let Some(o) = t.objects.iter().find(|o| o.id == e.obj) else {
            continue;
        };
        let key = (o.pid, o.tid.or(o.pid), e.t_ns, e.what.as_str());
        if said.contains(&key) {
            continue;
        }
        said.push(key);
        ev.push(json!({"ph":"i","s":"t","name":e.what,"pid":o.pid,"tid":o.tid.or(o.pid),"ts":us(e.t_ns),"args":{"detail":e.detail}}));
    }
}

/// The nodes as processes with counter tracks, and each process's pages per node.
fn node_counters(t: &Trace, ix: &Index, ev: &mut Vec<Value>) {
    for n in &t.header.nodes {
        let pid = NODE_PID_BASE + n.id as i64;
        ev.push(json!({"ph":"M","name":"process_name","pid":pid,"tid":pid,"args":{"name":format!("NUMA node {}", n.id)}}));
        ev.push(json!({"ph":"M","name":"process_sort_index","pid":pid,"tid":pid,"args":{"sort_index":-100 + n.id as i64}}));
    }
    for (metric, label) in [
        ("node.cpu_busy", "cpu busy %"),
        ("node.alloc_rate", "pages allocated/s (numastat)"),
        ("node.mem_free", "free MiB"),
        ("node.read_bw", "read MB/s (memory controller)"),
        ("node.write_bw", "write MB/s (memory controller)"),
    ] {
        for p in series(ix, metric) {
            let node: i64 = p.obj.trim_start_matches('n').parse().unwrap_or(0);
            ev.push(json!({"ph":"C","name":label,"pid":NODE_PID_BASE + node,"ts":us(p.t_ns),"args":{"value":p.value}}));
        }
    }
    for p in series(ix, "process.mem") {
        let Some((proc_id, node)) = p.obj.split_once('/') else {
            continue;
        };
        let pid: i64 = proc_id.trim_start_matches('p').parse().unwrap_or(0);
        ev.push(json!({"ph":"C","name":format!("resident MiB on node {}", node.trim_start_matches('n')),"pid":pid,"ts":us(p.t_ns),"args":{"value":p.value}}));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Event, Sample};

    fn sample(t_s: u64, obj: &str, cpu: f64, run_ms: f64) -> Sample {
        let mut v = std::collections::BTreeMap::new();
        v.insert("cpu".into(), cpu);
        v.insert("run_ns".into(), run_ms * 1e6);
        Sample {
            t_ns: t_s * 1_000_000_000,
            obj: obj.into(),
            v,
        }
    }

    #[test]
    fn a_thread_gets_one_slice_per_cpu_stretch_and_each_exit_is_said_once() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/two-socket.trace"
        );
        let mut t = crate::trace::read(std::path::Path::new(path)).unwrap();
        // t100 runs on CPU 1, sleeps an interval, runs on CPU 1 again, then moves to 5.
        t.samples.retain(|s| s.obj != "t100");
        let run = [
            (0, 1.0, 0.0),
            (1, 1.0, 10.0),
            (2, 1.0, 10.0),
            (3, 1.0, 20.0),
            (4, 5.0, 30.0),
        ];
        t.samples
            .extend(run.iter().map(|(s, c, r)| sample(*s, "t100", *c, *r)));
        t.samples.sort_by_key(|s| s.t_ns);
        for obj in ["p100", "t100"] {
            t.events.push(Event {
                t_ns: 4_000_000_000,
                obj: obj.into(),
                what: "exit".into(),
                detail: String::new(),
            });
        }
        let v = perfetto(&t);
        let ev = v["traceEvents"].as_array().unwrap();
        let slices: Vec<&str> = ev
            .iter()
            .filter(|e| e["ph"] == "X" && e["tid"] == 100)
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(slices.len(), 2, "{slices:?}");
        assert!(slices[0].starts_with("cpu 1 ") && slices[1].starts_with("cpu 5 "));
        let exits = ev
            .iter()
            .filter(|e| e["ph"] == "i" && e["name"] == "exit" && e["pid"] == 100)
            .count();
        assert_eq!(exits, 1);
    }
}
