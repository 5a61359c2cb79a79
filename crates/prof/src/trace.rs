//! The trace file: JSON Lines, one self-describing entry per line, written as a
//! stream (header first, then objects, samples and events as they happen, an end
//! entry last) and flushed every interval, so a recorder killed mid-run leaves a
//! readable prefix. Readers skip a torn last line and say so.

use numalab_results::Provenance;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{BufRead, Read};
use std::path::Path;

mod writer;
pub use writer::Writer;

/// The format name in every header.
pub const FORMAT: &str = "numalab-trace";
/// The version this build writes; readers accept this one and older.
pub const VERSION: u32 = 1;

/// One line of a trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Entry {
    /// Always first: what was recorded, how, on which machine.
    Header(Box<Header>),
    /// A thread, process, node or the system appears.
    Object(Object),
    /// Values of one object at one time.
    Sample(Sample),
    /// Something happened to an object (exit, exec, counter failure).
    Event(Event),
    /// The recording ended (absent when the recorder was killed).
    End(End),
}

/// The header: format, provenance, the machine's nodes, every field and source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Always "numalab-trace".
    pub format: String,
    /// Format version.
    pub version: u32,
    /// "monitor" or "record".
    pub mode: String,
    /// The recorded command (record mode), else empty.
    pub target: Vec<String>,
    /// Sampling interval in ms.
    pub interval_ms: u64,
    /// Process page placement is read every this many intervals.
    pub pages_every: u32,
    /// CPU the sampler was pinned to, if any.
    pub runon: Option<u32>,
    /// NUMA nodes with their CPUs and memory.
    pub nodes: Vec<NodeInfo>,
    /// Where the trace was taken.
    pub provenance: Provenance,
    /// Every source tried and whether it works here.
    pub sources: Vec<SourceStatus>,
    /// Hardware counters opened (or tried), with their encodings.
    pub counters: Vec<CounterDesc>,
    /// Every sampled field: object kind, unit, cumulative or gauge, source.
    pub fields: Vec<FieldDesc>,
}

/// A node as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeInfo {
    /// OS node number.
    pub id: u32,
    /// CPUs local to it.
    pub cpus: Vec<u32>,
    /// Memory in bytes (0 when CPU-less or unknown).
    pub mem_bytes: u64,
}

/// A source of data and whether it can be read here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceStatus {
    /// Source name, e.g. "perf-uncore", "perf-core", "numastat".
    pub source: String,
    /// True when it delivered data.
    pub available: bool,
    /// What it is, or why it is unavailable.
    pub detail: String,
}

/// A hardware counter: name, where it was resolved, its encoding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterDesc {
    /// The field name samples carry ("dram_local", "cas_read").
    pub field: String,
    /// The vendor event name ("ls_any_fills_from_sys.dram_io_near").
    pub event: String,
    /// PMU directory name ("cpu", "uncore_imc_0").
    pub pmu: String,
    /// Terms as in sysfs ("event=0x44,umask=0x08").
    pub encoding: String,
    /// perf_event_attr type and config.
    pub perf_type: u32,
    /// perf_event_attr config.
    pub config: u64,
    /// Multiply counts by this to get `unit` (sysfs .scale), 1 when none.
    pub scale: f64,
    /// Unit after scaling (sysfs .unit), "count" when none.
    pub unit: String,
    /// "thread" or "node".
    pub scope: String,
    /// Node the counter belongs to (node scope).
    pub node: Option<u32>,
    /// None when opened; else why not.
    pub error: Option<String>,
}

/// One sampled field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldDesc {
    /// Object kind carrying it: "thread", "process", "node", "system".
    pub object: String,
    /// Field name in samples.
    pub name: String,
    /// Unit.
    pub unit: String,
    /// True when the value only grows (take differences); false for gauges.
    pub cumulative: bool,
    /// Source name (matches a SourceStatus).
    pub source: String,
    /// What it counts.
    pub meaning: String,
}

impl FieldDesc {
    /// A field description.
    pub fn new(
        object: &str,
        name: &str,
        unit: &str,
        cumulative: bool,
        source: &str,
        meaning: &str,
    ) -> FieldDesc {
        FieldDesc {
            object: object.into(),
            name: name.into(),
            unit: unit.into(),
            cumulative,
            source: source.into(),
            meaning: meaning.into(),
        }
    }
}

/// Kinds of objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObjKind {
    /// The whole machine.
    System,
    /// A NUMA node.
    Node,
    /// A process of the target.
    Process,
    /// A thread of the target.
    Thread,
}

/// An object appears.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Object {
    /// Nanoseconds since the recording started.
    pub t_ns: u64,
    /// Id used by samples: "sys", "n0", "p1234", "t1235".
    pub id: String,
    /// Kind.
    pub kind: ObjKind,
    /// Process id (process and thread).
    pub pid: Option<i32>,
    /// Thread id (thread).
    pub tid: Option<i32>,
    /// Node number (node).
    pub node: Option<u32>,
    /// Command name.
    pub name: String,
    /// Parent object id (a thread's process, a process's parent process).
    pub parent: Option<String>,
}

/// Values of one object at one time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Nanoseconds since the recording started.
    pub t_ns: u64,
    /// Object id.
    pub obj: String,
    /// Field values (names in the header's fields or counters).
    pub v: BTreeMap<String, f64>,
}

/// Something happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Nanoseconds since the recording started.
    pub t_ns: u64,
    /// Object id.
    pub obj: String,
    /// "fork", "exec" and "rename" (detail: the new name), "exit", "counter-failed".
    pub what: String,
    /// Details.
    pub detail: String,
}

/// The recording ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct End {
    /// Nanoseconds since the recording started.
    pub t_ns: u64,
    /// Why it ended ("target exited", "count reached", "interrupted").
    pub reason: String,
    /// Target's exit code, when it exited.
    pub exit_code: Option<i32>,
    /// Signal that ended the target, when one did.
    pub signal: Option<i32>,
    /// CPU time the sampler used while sampling (user + system), its cost to the machine.
    #[serde(default)]
    pub sampler_cpu_ns: Option<u64>,
}

/// A trace read back.
#[derive(Debug, Clone)]
pub struct Trace {
    /// The header.
    pub header: Header,
    /// Objects, in order of appearance.
    pub objects: Vec<Object>,
    /// Samples, in file order (time order per object).
    pub samples: Vec<Sample>,
    /// Events.
    pub events: Vec<Event>,
    /// The end entry, absent when the recorder was killed.
    pub end: Option<End>,
    /// A torn last line was skipped (the recorder died mid-write).
    pub torn_tail: bool,
}

/// Errors reading a trace.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// Cannot open or read.
    #[error("cannot read trace '{path}': {why}")]
    Io {
        /// Path.
        path: String,
        /// Reason.
        why: String,
    },
    /// Not a file numalab reads (a FIFO, a device, too large): the line names it.
    #[error("{0}")]
    Input(String),
    /// Not a numalab trace, or a newer version, or a damaged line.
    #[error("invalid trace '{path}': {why}")]
    Invalid {
        /// Path.
        path: String,
        /// Reason.
        why: String,
    },
}

/// True when the file starts with a numalab trace header.
pub fn is_trace(path: &Path) -> bool {
    // Only a regular file is opened: a FIFO would block the open, a device stream forever.
    if numalab_results::outpath::check_input(path).is_err() {
        return false;
    }
    let Ok(f) = std::fs::File::open(path) else {
        return false;
    };
    let mut first = String::new();
    let header_bound = 1 << 20;
    if std::io::BufReader::new(f.take(header_bound))
        .read_line(&mut first)
        .is_err()
    {
        return false;
    }
    // Parsed, not matched by prefix: a trace re-saved by another JSON writer (spaces
    // after colons, keys reordered) is still a trace.
    serde_json::from_str::<serde_json::Value>(&first).is_ok_and(|v| {
        v.get("type").and_then(|t| t.as_str()) == Some("header")
            && v.get("format").and_then(|f| f.as_str()) == Some(FORMAT)
    })
}

/// Read a trace; a torn last line is skipped and flagged, any other damage is an error.
pub fn read(path: &Path) -> Result<Trace, TraceError> {
    let p = path.display().to_string();
    let text = numalab_results::outpath::read_input_bytes(path)
        .map_err(|e| TraceError::Input(e.to_string()))?;
    parse(&text).map_err(|why| TraceError::Invalid { path: p, why })
}

/// Parse trace bytes.
pub fn parse(bytes: &[u8]) -> Result<Trace, String> {
    let text = String::from_utf8_lossy(bytes);
    let complete = text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();
    let mut it = lines.iter().enumerate().peekable();
    let header = match it.next() {
        Some((_, l)) => match serde_json::from_str::<Entry>(l) {
            Ok(Entry::Header(h)) => *h,
            _ => return Err("not a numalab trace: the first line is not a trace header (numalab record or numalab monitor -o writes one)".into()),
        },
        None => return Err("empty file: not a numalab trace".into()),
    };
    if header.format != FORMAT {
        return Err(format!("format '{}' is not {FORMAT}", header.format));
    }
    if header.version > VERSION {
        return Err(format!(
            "trace version {} is newer than this numalab reads (up to {VERSION})",
            header.version
        ));
    }
    let mut t = Trace {
        header,
        objects: vec![],
        samples: vec![],
        events: vec![],
        end: None,
        torn_tail: false,
    };
    let n = lines.len();
    for (i, l) in it {
        if l.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Entry>(l) {
            Ok(Entry::Object(o)) => t.objects.push(o),
            Ok(Entry::Sample(s)) => {
                check_cpu(&t.header, &s).map_err(|e| format!("line {}: {e}", i + 1))?;
                t.samples.push(s)
            }
            Ok(Entry::Event(e)) => {
                // Objects carry their latest name; the events keep the history.
                if e.what == "exec" || e.what == "rename" {
                    if let Some(o) = t.objects.iter_mut().find(|o| o.id == e.obj) {
                        o.name = e.detail.clone();
                    }
                }
                t.events.push(e)
            }
            Ok(Entry::End(e)) => t.end = Some(e),
            Ok(Entry::Header(_)) => return Err(format!("line {}: a second header", i + 1)),
            // Only the last line may be torn, and only when the file does not end in a newline.
            Err(_) if i + 1 == n && !complete => t.torn_tail = true,
            Err(e) => return Err(format!("line {}: {e}", i + 1)),
        }
    }
    Ok(t)
}

/// A sample's CPU must be one of the machine's the header lists: a CPU beyond it
/// would be drawn on no node, or on a wrong one.
fn check_cpu(h: &Header, s: &Sample) -> Result<(), String> {
    let Some(&cpu) = s.v.get("cpu") else {
        return Ok(());
    };
    let all: Vec<u32> = h
        .nodes
        .iter()
        .flat_map(|n| n.cpus.iter().copied())
        .collect();
    if all.is_empty() {
        return Ok(());
    }
    let known = cpu >= 0.0 && cpu.fract() == 0.0 && all.contains(&(cpu as u32));
    if known {
        return Ok(());
    }
    let (lo, hi) = (all.iter().min(), all.iter().max());
    Err(format!(
        "a sample of '{}' names CPU {cpu}, which the trace's machine does not have (its {} run {}-{})",
        s.obj,
        numalab_results::words::count(all.len() as u64, "CPU"),
        lo.unwrap_or(&0),
        hi.unwrap_or(&0)
    ))
}

impl Trace {
    /// The node a CPU belongs to.
    pub fn node_of_cpu(&self, cpu: u32) -> Option<u32> {
        self.header
            .nodes
            .iter()
            .find(|n| n.cpus.contains(&cpu))
            .map(|n| n.id)
    }

    /// Samples of one object, in time order.
    pub fn samples_of<'a>(&'a self, obj: &'a str) -> impl Iterator<Item = &'a Sample> + 'a {
        self.samples.iter().filter(move |s| s.obj == obj)
    }

    /// Objects of one kind.
    pub fn objects_of(&self, kind: ObjKind) -> impl Iterator<Item = &Object> {
        self.objects.iter().filter(move |o| o.kind == kind)
    }

    /// Whether a source delivered data.
    pub fn source_ok(&self, source: &str) -> bool {
        self.header
            .sources
            .iter()
            .any(|s| s.source == source && s.available)
    }

    /// Why a source is unavailable (None when available or never tried).
    pub fn source_why(&self, source: &str) -> Option<&str> {
        self.header
            .sources
            .iter()
            .find(|s| s.source == source && !s.available)
            .map(|s| s.detail.as_str())
    }

    /// Duration covered, in ns (last sample or end).
    pub fn span_ns(&self) -> u64 {
        let last = self.samples.iter().map(|s| s.t_ns).max().unwrap_or(0);
        self.end.as_ref().map_or(last, |e| e.t_ns.max(last))
    }
}

#[cfg(test)]
mod tests;
