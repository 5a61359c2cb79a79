//! Advice as records, as text and as an HTML section (the report renders it from
//! saved records, so the section reads records, not the typed advice).

use super::{Advice, Candidate, Memory};
use numalab_results::output::table;
use numalab_results::report::{esc, html_table};
use numalab_results::{Provenance, Record};
use serde_json::{json, Value};
use std::fmt::Write;

fn mem_name(m: &Memory) -> String {
    let join = |v: &[u32]| {
        v.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    match m {
        Memory::Local => "local (first touch)".into(),
        Memory::Bind { node } => format!("bind node {node}"),
        Memory::Interleave { nodes } => format!("interleave {}", join(nodes)),
        Memory::Tiered { tier } => format!("local, overflow to CPU-less node {tier}"),
    }
}

/// The advice as records of kind "advice": one per placement, one per traced thread, one of notes.
pub fn records(a: &Advice, prov: &Provenance) -> Vec<Record> {
    let mut out = Vec::new();
    let params = json!({ "workload": a.workload });
    let mut notes = Record::new("advice", "notes", prov.clone(), params.clone());
    notes.data = Some(json!({ "notes": a.notes }));
    out.push(notes);
    for c in &a.placements {
        let mut r = Record::new(
            "advice",
            &format!("placement {} + {}", c.threads, mem_name(&c.memory)),
            prov.clone(),
            params.clone(),
        );
        r.data = Some(
            json!({ "section": "placement", "memory_name": mem_name(&c.memory), "candidate": c }),
        );
        out.push(r);
    }
    for t in &a.threads {
        let mut r = Record::new(
            "advice",
            &format!("thread {} ({})", t.obj, t.name),
            prov.clone(),
            json!({ "tid": t.tid, "pid": t.pid }),
        );
        r.data = Some(json!({ "section": "thread", "thread": t }));
        out.push(r);
    }
    out
}

fn f1(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.1}")).unwrap_or_else(|| "-".into())
}

fn placement_rows(cs: &[&Value]) -> Vec<Vec<String>> {
    cs.iter()
        .map(|c| {
            let c = &c["candidate"];
            vec![
                match c["rank"].as_u64() {
                    Some(0) | None => "-".into(),
                    Some(r) => r.to_string(),
                },
                c["threads"].as_str().unwrap_or("").into(),
                numalab_topo::cpulist::format(
                    &c["cpus"]
                        .as_array()
                        .map(|v| {
                            v.iter()
                                .filter_map(|x| x.as_u64().map(|x| x as u32))
                                .collect::<Vec<_>>()
                        })
                        .unwrap_or_default(),
                ),
                c.get("memory_name")
                    .and_then(|v| v.as_str())
                    .unwrap_or("")
                    .to_string(),
                f1(c["latency_ns"].as_f64()),
                f1(c["bandwidth_gbps"].as_f64()),
                c["unavailable"].as_str().unwrap_or("").into(),
            ]
        })
        .collect()
}

fn thread_rows(ts: &[&Value]) -> Vec<Vec<String>> {
    ts.iter()
        .map(|t| {
            let t = &t["thread"];
            let pages = t["pages"]
                .as_object()
                .map(|o| {
                    o.iter()
                        .map(|(n, s)| format!("n{n} {:.0}%", s.as_f64().unwrap_or(0.0) * 100.0))
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .unwrap_or_default();
            let best = &t["best"];
            vec![
                format!(
                    "{} {}",
                    t["obj"].as_str().unwrap_or(""),
                    t["name"].as_str().unwrap_or("")
                ),
                t["node"]
                    .as_u64()
                    .map(|n| n.to_string())
                    .unwrap_or("-".into()),
                pages,
                t["remote_share"]
                    .as_f64()
                    .map(|v| format!("{:.0}%", v * 100.0))
                    .unwrap_or("-".into()),
                f1(t["latency_ns"].as_f64()),
                if best.is_null() {
                    t["notes"][0].as_str().unwrap_or("-").to_string()
                } else {
                    format!(
                        "{} to node {}: {:.1} ns saved per load",
                        best["what"].as_str().unwrap_or(""),
                        best["to_node"],
                        best["saving_ns"].as_f64().unwrap_or(0.0)
                    )
                },
            ]
        })
        .collect()
}

const PLACEMENT_HEADER: [&str; 7] = [
    "rank",
    "threads",
    "CPUs",
    "memory",
    "latency ns",
    "bandwidth GB/s",
    "not predicted",
];
const THREAD_HEADER: [&str; 6] = [
    "thread",
    "ran on node",
    "process pages",
    "remote",
    "latency ns",
    "best move",
];

/// The parts of advice records: notes, placements, threads (with memory names put in).
fn parts(records: &[Record]) -> (Vec<String>, Vec<Value>, Vec<Value>) {
    let mut notes = Vec::new();
    let mut places = Vec::new();
    let mut threads = Vec::new();
    for r in records.iter().filter(|r| r.kind == "advice") {
        let Some(d) = &r.data else { continue };
        match d["section"].as_str() {
            Some("placement") => {
                let mut d = d.clone();
                d["candidate"]["memory_name"] = d["memory_name"].clone();
                places.push(d);
            }
            Some("thread") => threads.push(d.clone()),
            _ => notes.extend(
                d["notes"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|n| n.as_str().map(String::from)),
            ),
        }
    }
    (notes, places, threads)
}

/// The advice as text: placements ranked with the best ones' commands, threads with their moves.
pub fn text(a: &Advice, records: &[Record]) -> String {
    let (notes, places, threads) = parts(records);
    let mut s = String::new();
    if let Some(w) = &a.workload {
        let _ = writeln!(
            s,
            "Workload: {} thread(s), footprint {} ({}), {}% reads, {}\n",
            w.threads,
            numalab_topo::fmt_bytes(w.footprint),
            if w.shared {
                "shared by all threads"
            } else {
                "a slice per thread"
            },
            w.reads,
            if w.streaming {
                "streaming (bandwidth-bound)"
            } else {
                "random dependent loads (latency-bound)"
            }
        );
    }
    if !places.is_empty() {
        let refs: Vec<&Value> = places.iter().collect();
        s.push_str(&table(&PLACEMENT_HEADER, &placement_rows(&refs)));
        s.push('\n');
        for c in a.placements.iter().filter(|c| c.rank >= 1 && c.rank <= 3) {
            best_lines(&mut s, c);
        }
    }
    if !threads.is_empty() {
        let refs: Vec<&Value> = threads.iter().collect();
        s.push_str("\nThreads of the trace (latency: the survey's matrix priced at the process's page spread):\n");
        s.push_str(&table(&THREAD_HEADER, &thread_rows(&refs)));
        s.push('\n');
        for t in a.threads.iter() {
            if let Some(b) = &t.best {
                let _ = writeln!(s, "  {} {}: {} to node {} saves {:.1} ns per load ({:.1} → {:.1} ns)\n      now:      {}\n      next run: {}", t.obj, t.name, b.what, b.to_node, b.saving_ns, t.latency_ns.unwrap_or(0.0), b.latency_ns, b.now, b.next_run);
                if let Some(alt) = &t.alternative {
                    let _ = writeln!(
                        s,
                        "      or {} to node {}: saves {:.1} ns\n      now:      {}\n      next run: {}",
                        alt.what, alt.to_node, alt.saving_ns, alt.now, alt.next_run
                    );
                }
                let _ = writeln!(s, "      from: {}", t.basis.join("; "));
            }
        }
    }
    for n in &notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

fn best_lines(s: &mut String, c: &Candidate) {
    let _ = writeln!(
        s,
        "#{} {} + {}: {} ns, {} GB/s predicted",
        c.rank,
        c.threads,
        mem_name(&c.memory),
        f1(c.latency_ns),
        f1(c.bandwidth_gbps)
    );
    for (tool, cmd) in &c.commands {
        let _ = writeln!(s, "    {tool:8} {cmd}");
    }
    let _ = writeln!(s, "    from: {}", c.basis.join("; "));
}

/// The body of the report's advice section, from saved advice records (None when
/// there are none).
pub fn html(records: &[Record]) -> Option<String> {
    let (notes, places, threads) = parts(records);
    if places.is_empty() && threads.is_empty() && notes.is_empty() {
        return None;
    }
    let mut s = String::new();
    if !places.is_empty() {
        let refs: Vec<&Value> = places.iter().collect();
        s.push_str("<h3>Placements, best first</h3>");
        s.push_str(&html_table(&PLACEMENT_HEADER, &placement_rows(&refs)));
        for p in places
            .iter()
            .filter(|p| matches!(p["candidate"]["rank"].as_u64(), Some(1..=3)))
        {
            let c = &p["candidate"];
            let _ = write!(
                s,
                "<p>#{} {} + {}:</p><pre>",
                c["rank"],
                esc(c["threads"].as_str().unwrap_or("")),
                esc(p["memory_name"].as_str().unwrap_or(""))
            );
            for (tool, cmd) in c["commands"].as_object().into_iter().flatten() {
                let _ = writeln!(s, "{tool:8} {}", esc(cmd.as_str().unwrap_or("")));
            }
            s.push_str("</pre>");
        }
    }
    if !threads.is_empty() {
        let refs: Vec<&Value> = threads.iter().collect();
        s.push_str("<h3>Threads of the trace</h3>");
        s.push_str(&html_table(&THREAD_HEADER, &thread_rows(&refs)));
    }
    if !notes.is_empty() {
        s.push_str("<ul>");
        for n in &notes {
            let _ = write!(s, "<li>{}</li>", esc(n));
        }
        s.push_str("</ul>");
    }
    Some(s)
}

/// The report's presentation of advice records (the command prints its own text, with
/// the workload it was asked about).
pub struct AdvicePresenter;

impl numalab_results::present::Presenter for AdvicePresenter {
    fn kinds(&self) -> &'static [&'static str] {
        &["advice"]
    }
    fn section(&self) -> Option<(&'static str, &'static str)> {
        Some(("advice", "Advice"))
    }
    fn html(&self, records: &[Record]) -> Option<String> {
        html(records)
    }
}
