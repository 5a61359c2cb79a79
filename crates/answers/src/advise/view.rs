//! Advice as records, as text and as an HTML section (the report renders it from
//! saved records, so the section reads records, not the typed advice).

use super::{Advice, Candidate, Memory, ThreadAdvice};
use numalab_results::output::table;
use numalab_results::report::{esc, html_table};
use numalab_results::{Provenance, Record};
use serde::{Deserialize, Serialize};
use serde_json::json;
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
        Memory::Weighted { nodes, weights } => format!(
            "weighted interleave {} (measured weights {})",
            join(nodes),
            join(weights)
        ),
        Memory::Tiered { tier } => format!("local, overflow to CPU-less node {tier}"),
    }
}

/// The data of an "advice" record: one ranked placement, one traced thread, or the
/// notes. Written with `section` naming the variant ("placement", "thread"; the notes
/// have none).
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum AdviceData {
    /// A placement with its prediction.
    Placement {
        /// Always "placement".
        section: String,
        /// The memory policy in words.
        memory_name: String,
        /// The placement.
        candidate: Candidate,
    },
    /// A traced thread and its move.
    Thread {
        /// Always "thread".
        section: String,
        /// The thread's advice.
        thread: ThreadAdvice,
    },
    /// What the advice rests on, or lacks.
    Notes {
        /// The notes.
        notes: Vec<String>,
    },
}

#[derive(Deserialize)]
struct PlacementData {
    memory_name: String,
    candidate: Candidate,
}

#[derive(Deserialize)]
struct ThreadData {
    thread: ThreadAdvice,
}

#[derive(Deserialize)]
struct NotesData {
    notes: Vec<String>,
}

#[derive(Deserialize)]
struct Tag {
    section: Option<String>,
}

impl AdviceData {
    /// An advice record's data. Read by its `section` first, then as that variant's
    /// type: serde's untagged and internally tagged enums buffer the data and then
    /// cannot read the per-node maps' integer keys, which JSON writes as strings.
    pub fn of(r: &Record) -> Result<AdviceData, numalab_results::record::DataError> {
        let tag: Tag = r.data_as()?;
        Ok(match tag.section.as_deref() {
            Some("placement") => {
                let d: PlacementData = r.data_as()?;
                AdviceData::Placement {
                    section: "placement".into(),
                    memory_name: d.memory_name,
                    candidate: d.candidate,
                }
            }
            Some("thread") => AdviceData::Thread {
                section: "thread".into(),
                thread: r.data_as::<ThreadData>()?.thread,
            },
            _ => AdviceData::Notes {
                notes: r.data_as::<NotesData>()?.notes,
            },
        })
    }
}

/// The advice as records of kind "advice": one per placement, one per traced thread, one of notes.
pub fn records(a: &Advice, prov: &Provenance) -> Vec<Record> {
    let mut out = Vec::new();
    let params = json!({ "workload": a.workload });
    let mut notes = Record::new("advice", "notes", prov.clone(), params.clone());
    notes.set_data(&AdviceData::Notes {
        notes: a.notes.clone(),
    });
    out.push(notes);
    for c in &a.placements {
        let mut r = Record::new(
            "advice",
            &format!("placement {} + {}", c.threads, mem_name(&c.memory)),
            prov.clone(),
            params.clone(),
        );
        r.set_data(&AdviceData::Placement {
            section: "placement".into(),
            memory_name: mem_name(&c.memory),
            candidate: c.clone(),
        });
        out.push(r);
    }
    for t in &a.threads {
        let mut r = Record::new(
            "advice",
            &format!("thread {} ({})", t.obj, t.name),
            prov.clone(),
            json!({ "tid": t.tid, "pid": t.pid }),
        );
        r.set_data(&AdviceData::Thread {
            section: "thread".into(),
            thread: t.clone(),
        });
        out.push(r);
    }
    out
}

fn f1(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.1}")).unwrap_or_else(|| "-".into())
}

fn placement_rows(cs: &[(String, Candidate)]) -> Vec<Vec<String>> {
    cs.iter()
        .map(|(memory_name, c)| {
            vec![
                match c.rank {
                    0 => "-".into(),
                    r => r.to_string(),
                },
                c.threads.clone(),
                numalab_topo::cpulist::format(&c.cpus),
                memory_name.clone(),
                f1(c.latency_ns),
                f1(c.bandwidth_gbps),
                c.unavailable.clone().unwrap_or_default(),
            ]
        })
        .collect()
}

fn thread_rows(ts: &[ThreadAdvice]) -> Vec<Vec<String>> {
    ts.iter()
        .map(|t| {
            let pages = t
                .pages
                .iter()
                .map(|(n, s)| format!("n{n} {:.0}%", s * 100.0))
                .collect::<Vec<_>>()
                .join(" ");
            vec![
                format!("{} {}", t.obj, t.name),
                t.node.map(|n| n.to_string()).unwrap_or("-".into()),
                pages,
                t.remote_share
                    .map(|v| format!("{:.0}%", v * 100.0))
                    .unwrap_or("-".into()),
                f1(t.latency_ns),
                match &t.best {
                    None => t.notes.first().cloned().unwrap_or("-".into()),
                    Some(b) => format!(
                        "{} to node {}: {:.1} ns saved per load",
                        b.what, b.to_node, b.saving_ns
                    ),
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

/// The parts of advice records: notes, placements (with their memory names), threads.
#[allow(clippy::type_complexity)]
fn parts(records: &[Record]) -> (Vec<String>, Vec<(String, Candidate)>, Vec<ThreadAdvice>) {
    let mut notes = Vec::new();
    let mut places = Vec::new();
    let mut threads = Vec::new();
    for r in records.iter().filter(|r| r.kind == "advice") {
        match AdviceData::of(r) {
            Ok(AdviceData::Placement {
                memory_name,
                candidate,
                ..
            }) => places.push((memory_name, candidate)),
            Ok(AdviceData::Thread { thread, .. }) => threads.push(thread),
            Ok(AdviceData::Notes { notes: n }) => notes.extend(n),
            Err(e) => notes.push(e.to_string()),
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
            "Workload: {}, footprint {} ({}), {}% reads, {}\n",
            numalab_results::words::count(w.threads as u64, "thread"),
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
        s.push_str(&table(&PLACEMENT_HEADER, &placement_rows(&places)));
        s.push('\n');
        for c in a.placements.iter().filter(|c| c.rank >= 1 && c.rank <= 3) {
            best_lines(&mut s, c);
        }
    }
    if !threads.is_empty() {
        s.push_str("\nThreads of the trace (latency: the survey's matrix priced at the process's page spread):\n");
        s.push_str(&table(&THREAD_HEADER, &thread_rows(&threads)));
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
    for (tool, cmd) in in_order(&c.commands) {
        let _ = writeln!(s, "    {tool:8} {cmd}");
    }
    let _ = writeln!(s, "    from: {}", c.basis.join("; "));
}

/// A placement's commands in the order they are run: the sysfs lines that set
/// weighted-interleave weights come before the commands that use them.
fn in_order(
    commands: &std::collections::BTreeMap<String, String>,
) -> impl Iterator<Item = (&String, &String)> {
    let (pre, rest): (Vec<_>, Vec<_>) = commands.iter().partition(|(k, _)| *k == "sysfs");
    pre.into_iter().chain(rest)
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
        s.push_str("<h3>Placements, best first</h3>");
        s.push_str(&html_table(&PLACEMENT_HEADER, &placement_rows(&places)));
        for (memory_name, c) in places.iter().filter(|(_, c)| (1..=3).contains(&c.rank)) {
            let _ = write!(
                s,
                "<p>#{} {} + {}:</p><pre>",
                c.rank,
                esc(&c.threads),
                esc(memory_name)
            );
            for (tool, cmd) in in_order(&c.commands) {
                let _ = writeln!(s, "{tool:8} {}", esc(cmd));
            }
            s.push_str("</pre>");
        }
    }
    if !threads.is_empty() {
        s.push_str("<h3>Threads of the trace</h3>");
        s.push_str(&html_table(&THREAD_HEADER, &thread_rows(&threads)));
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
    fn answer(&self, answers: &[Record]) -> Option<numalab_results::summary::Block> {
        super::headline(answers)
    }
}
