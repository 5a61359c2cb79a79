//! `numalab advise`: from a survey's measured model of this machine (the node × node
//! latency and bandwidth matrices) and optionally a `record` trace, which placement
//! to use and the commands that apply it. Predictions are the matrices' medians
//! combined by the rules in `workload` and `observed`; every one names the cells it used.

mod headline;
mod measured;
mod observed;
mod view;
mod weighted;
mod weights;
mod workload;

pub use headline::headline;
pub use measured::{Cell, Measured};
pub use observed::{caveats, Move, ThreadAdvice};
pub use view::{html, records, text, AdviceData, AdvicePresenter};
pub use weighted::{weighted_gain, WeightedGain};
pub use weights::weights_from;
pub use workload::{Candidate, Memory, Workload};

use numalab_prof::trace::Trace;
use numalab_results::Record;
use numalab_topo::Result;
use serde::{Deserialize, Serialize};

/// What the user asks of `advise` (the survey and trace are read by the caller).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Options {
    /// Threads of the workload (required without a trace).
    pub threads: Option<usize>,
    /// Bytes the threads touch in all, e.g. "4G".
    pub footprint: Option<String>,
    /// Share of accesses that are reads, percent.
    pub reads: u32,
    /// "stream" (bandwidth-bound) or "random" (latency-bound).
    pub access: String,
    /// Every thread reads the whole footprint (else each its own slice).
    pub shared: bool,
    /// The program named in the commands.
    pub program: String,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            threads: None,
            footprint: None,
            reads: 100,
            access: "stream".into(),
            shared: false,
            program: "PROGRAM".into(),
        }
    }
}

/// The resolved question: the measured machine, the workload (if described) and the trace (if given).
pub struct Plan<'a> {
    /// The survey's model of the machine.
    pub measured: Measured,
    /// The workload, when described by flags.
    pub workload: Option<Workload>,
    /// The trace, when given.
    pub trace: Option<&'a Trace>,
    /// The options.
    pub options: Options,
    /// The default workload's description, when no workload was given.
    pub assumed: Option<String>,
}

/// The advice: ranked placements for the workload, per-thread moves for the trace.
#[derive(Debug, Clone, Serialize)]
pub struct Advice {
    /// The workload, when described.
    pub workload: Option<Workload>,
    /// Placements, best first (empty when the survey cannot predict any).
    pub placements: Vec<Candidate>,
    /// Per-thread advice from the trace.
    pub threads: Vec<ThreadAdvice>,
    /// What the survey or trace lacks, and the assumptions predictions rest on.
    pub notes: Vec<String>,
}

impl<'a> Plan<'a> {
    /// Check the options against the survey; errors name the bad value.
    pub fn resolve(records: &[Record], trace: Option<&'a Trace>, o: &Options) -> Result<Plan<'a>> {
        let measured = Measured::from_records(records)?;
        let none_given = o.threads.is_none() && o.footprint.is_none();
        let (o, assumed) = match (trace, none_given) {
            (None, true) => default_workload(&measured.machine, o)?,
            _ => (o.clone(), None),
        };
        let workload = if trace.is_some() && none_given {
            None
        } else {
            Some(o.workload()?)
        };
        let usable = measured.machine.pus.len();
        if let Some(w) = workload.as_ref().filter(|w| w.threads > usable) {
            return Err(numalab_topo::Error::bad(
                "--threads",
                w.threads.to_string(),
                format!("1 to {usable} (the CPUs of the surveyed machine)"),
            ));
        }
        Ok(Plan {
            measured,
            workload,
            trace,
            options: o,
            assumed,
        })
    }

    /// Predict: rank the placements and advise each traced thread.
    pub fn compute(&self) -> Result<Advice> {
        let m = &self.measured;
        let mut notes: Vec<String> = self.assumed.iter().cloned().collect();
        notes.extend(m.missing.iter().cloned());
        let mut placements = Vec::new();
        if let Some(w) = &self.workload {
            if m.lat.is_empty() && m.bw.is_empty() {
                notes.push(format!(
                    "no placement is predicted: the survey measured no node × node matrix ({} node{} with memory); every placement of this machine reads the same memory",
                    m.mem_nodes.len(),
                    if m.mem_nodes.len() == 1 { "" } else { "s" }
                ));
            } else {
                placements = workload::rank(m, w, &self.options.program)?;
                notes.push(if w.streaming {
                    format!("bandwidth-bound (--access stream): ranked by predicted bandwidth; each node's threads stream from every node at once (the slowest flow bounds them), threads scale linearly to the node's cores, a memory node serves at most the most any node drew from it; stores count twice (write-allocate + writeback); {}", loaded_note(m))
                } else {
                    "latency-bound (--access random): ranked by predicted mean load latency, the share-weighted medians of the latency matrix; queueing under load is not modelled".into()
                });
                notes.push("threads on one node are not told apart by the matrices (L3 sharing, SMT): placements giving the same CPUs per node predict the same".into());
                if let Some(note) = cache_note(m, w) {
                    notes.push(note);
                }
            }
        }
        let mut threads = Vec::new();
        if let Some(t) = self.trace {
            notes.extend(caveats(t));
            if m.lat.is_empty() {
                notes.push(
                    "the traced threads cannot be priced: the survey has no latency matrix".into(),
                );
            }
            threads = observed::advise(m, t);
        }
        Ok(Advice {
            workload: self.workload.clone(),
            placements,
            threads,
            notes,
        })
    }
}

/// No workload and no trace: every CPU of the surveyed machine, touching half of a
/// node's memory in all (the smallest node with memory), and the note that says so.
fn default_workload(m: &numalab_topo::Machine, o: &Options) -> Result<(Options, Option<String>)> {
    let node = m
        .nodes
        .iter()
        .filter(|n| n.total_bytes > 0)
        .min_by_key(|n| n.total_bytes)
        .ok_or_else(|| {
            numalab_topo::Error::input(
                "advise needs a workload: --threads N --footprint SIZE (or a trace: --trace FILE); the survey names no node's memory size to assume one",
            )
        })?;
    let threads = m.pus.len().max(1);
    let half = node.total_bytes / 2;
    let size = numalab_topo::fmt_bytes(half);
    let mut o = o.clone();
    o.threads = Some(threads);
    o.footprint = Some(half.to_string());
    let note = format!(
        "no workload given: advising for all {threads} CPU{} touching {size} in all (half of node {}'s memory), {} access; --threads N --footprint SIZE describe yours",
        if threads == 1 { "" } else { "s" },
        node.os,
        o.access
    );
    Ok((o, Some(note)))
}

/// The records file of a survey given as its folder or its results.json; an input
/// error when it does not exist.
pub fn survey_file(path: &std::path::Path) -> Result<std::path::PathBuf> {
    let file = if path.is_dir() {
        path.join("results.json")
    } else {
        path.to_path_buf()
    };
    if !file.exists() {
        return Err(numalab_topo::Error::input(format!(
            "invalid survey '{}': no such file; give a survey folder (numalab survey -o DIR) or its results.json",
            file.display()
        )));
    }
    Ok(file)
}

/// The program the printed commands run, shell-quoted so a pasted line runs it and
/// nothing else: the one given (one word), else the trace's words, else PROGRAM.
pub fn program(given: Option<String>, trace: Option<&Trace>) -> String {
    match (given, trace) {
        (Some(p), _) => shell_word(&p),
        (None, Some(t)) if !t.header.target.is_empty() => shell_words(&t.header.target),
        _ => "PROGRAM".into(),
    }
}

/// `words` as a shell command line, each quoted where it needs to be.
pub fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| shell_word(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One word for a POSIX shell: as it is when it holds only characters no shell
/// treats specially, else in single quotes (a quote inside as '\'').
pub fn shell_word(w: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_./=:,+@%-".contains(c);
    if !w.is_empty() && w.chars().all(plain) {
        return w.to_string();
    }
    format!("'{}'", w.replace('\'', "'\\''"))
}

/// When the footprint fits in a cache level, memory placement matters little: say so with the plateau.
fn cache_note(m: &Measured, w: &Workload) -> Option<String> {
    let per = if w.shared {
        w.footprint
    } else {
        w.footprint / w.threads as u64
    };
    let c = m.machine.caches.iter().find(|c| c.bytes >= per)?;
    let plateau = m
        .plateaus
        .get(&c.level)
        .map(|(ns, rec)| format!("; the survey's L{} plateau is {ns:.1} ns ({rec})", c.level))
        .unwrap_or_default();
    Some(format!(
        "each thread's {} fits in one L{} ({}): after the first pass the caches serve it and memory placement matters little{plateau}",
        numalab_topo::fmt_bytes(per),
        c.level,
        numalab_topo::fmt_bytes(c.bytes)
    ))
}

#[cfg(test)]
mod tests;

/// How a streaming placement's latency is priced: at its predicted load on each memory
/// node's loaded-latency family, where the survey measured one.
fn loaded_note(m: &measured::Measured) -> String {
    if m.curves.is_empty() {
        "latency at idle: the survey holds no loaded-latency family".into()
    } else {
        let nodes: Vec<u32> = m.curves.keys().copied().collect();
        format!(
            "latency at the predicted load, from the loaded-latency family of memory {} {} (the curve nearest the read share; idle elsewhere)",
            numalab_results::words::noun(nodes.len() as u64, "node"),
            numalab_topo::cpulist::format(&nodes)
        )
    }
}
