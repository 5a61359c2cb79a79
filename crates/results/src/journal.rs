//! The journal of a run of many steps (the survey): a header line (format, numalab
//! version, the machine's fingerprint, the resolved plan), then one JSON line per
//! finished step with its records, each written and fsync'd as the step ends. A kill,
//! a crash or a full disk loses at most the step that was running; a last line cut
//! short is that unfinished step, not an error.

use crate::provenance::Provenance;
use crate::record::Record;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

/// Format identifier in every journal's header; bump with incompatible changes.
pub const FORMAT: &str = "numalab.journal/1";

/// The journal's file name inside a run's output folder.
pub const FILE_NAME: &str = "journal.jsonl";

/// One step of the plan as the journal records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedStep {
    /// Unique within the plan: section and title.
    pub id: String,
    /// What it measures, in words.
    pub title: String,
    /// numalab arguments of the step.
    pub args: Vec<String>,
    /// Why it is skipped on this machine, if it is.
    pub skip: Option<String>,
}

/// What must match for a run to be continued on this machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// Host name.
    pub hostname: String,
    /// CPU architecture.
    pub arch: String,
    /// CPU model name.
    pub cpu_model: Option<String>,
    /// Kernel release and version.
    pub kernel: String,
    /// Topology summary.
    pub topology: String,
}

impl Fingerprint {
    /// The fingerprint of the machine a provenance describes.
    pub fn of(p: &Provenance) -> Fingerprint {
        Fingerprint {
            hostname: p.hostname.clone(),
            arch: p.arch.clone(),
            cpu_model: p.cpu_model.clone(),
            kernel: p.kernel.clone(),
            topology: p.topology.clone(),
        }
    }

    /// The first field that differs, as "FIELD: 'journal' here 'this'", or None.
    pub fn difference(&self, now: &Fingerprint) -> Option<String> {
        self.first_difference(now)
            .map(|(f, a, b)| format!("{f} '{a}' in the journal, '{b}' here"))
    }
}

/// The journal's first line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Always [`FORMAT`].
    pub format: String,
    /// numalab version that wrote it.
    pub tool_version: String,
    /// The command line that started the run.
    pub command_line: Vec<String>,
    /// The machine measured.
    pub fingerprint: Fingerprint,
    /// The resolved plan, in order.
    pub plan: Vec<PlannedStep>,
    /// In a fallback journal: the journal it continues (absolute path), which could no
    /// longer be written; `numalab report` of that journal follows it here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continues: Option<String>,
    /// This run's id ([`run_id`]), also in every fallback journal continuing it: only a
    /// continuation of the same run is followed, never a leftover of an earlier run of
    /// the same folder (absent in journals of earlier numalab versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
}

/// A fresh run id: this process and the time, in nanoseconds.
pub fn run_id() -> String {
    let ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{}-{ns}", std::process::id())
}

/// One finished step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The step's id in the plan.
    pub step: String,
    /// How it went ("12 records", "skipped: …", "failed: …").
    pub status: String,
    /// Its duration.
    pub seconds: f64,
    /// Every record it produced.
    pub records: Vec<Record>,
}

/// A journal as read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Journal {
    /// The header.
    pub header: Header,
    /// The finished steps, in the order they finished.
    pub entries: Vec<Entry>,
    /// Bytes of the file that hold whole lines (where an append continues).
    pub valid_len: usize,
    /// True when the last line was cut short (the step running when the run died).
    pub truncated: bool,
    /// Whole lines that are no step's entry (corrupted, or garbage appended): skipped,
    /// so their steps count as not finished and a resume measures them again.
    pub damaged: Vec<Damaged>,
}

/// A journal line that could not be read.
#[derive(Debug, Clone, PartialEq)]
pub struct Damaged {
    /// Its line number in the file (the header is line 1).
    pub line: usize,
    /// The plan step it seems to belong to, when its start is still legible.
    pub step: Option<String>,
    /// Why it could not be read.
    pub why: String,
}

impl Damaged {
    /// "line 5 (step 'a')" or "line 5".
    pub fn name(&self) -> String {
        match &self.step {
            Some(s) => format!("line {} (step '{s}')", self.line),
            None => format!("line {}", self.line),
        }
    }
}

impl Journal {
    /// A fresh journal (nothing finished yet).
    pub fn new(header: Header) -> Journal {
        Journal {
            header,
            entries: Vec::new(),
            valid_len: 0,
            truncated: false,
            damaged: Vec::new(),
        }
    }

    /// One line naming the damaged lines that were skipped, or None when there are none.
    pub fn damage_note(&self) -> Option<String> {
        if self.damaged.is_empty() {
            return None;
        }
        let names: Vec<String> = self.damaged.iter().map(Damaged::name).collect();
        Some(format!(
            "{} skipped: {} ({}); their steps count as not measured",
            crate::words::count(names.len() as u64, "damaged journal line"),
            names.join(", "),
            self.damaged[0].why
        ))
    }

    /// The entry of a finished step (the last one, should a step appear twice).
    pub fn entry(&self, id: &str) -> Option<&Entry> {
        self.entries.iter().rev().find(|e| e.step == id)
    }

    /// Steps of the plan with no entry, in plan order.
    pub fn missing(&self) -> Vec<&PlannedStep> {
        self.header
            .plan
            .iter()
            .filter(|s| self.entry(&s.id).is_none())
            .collect()
    }

    /// Every finished step's records, in plan order.
    pub fn records(&self) -> Vec<Record> {
        self.header
            .plan
            .iter()
            .filter_map(|s| self.entry(&s.id))
            .flat_map(|e| e.records.iter().cloned())
            .collect()
    }

    /// Why this journal cannot be continued with `plan` on the machine `now`, or None.
    pub fn resume_refusal(&self, now: &Fingerprint, plan: &[PlannedStep]) -> Option<String> {
        if let Some(d) = self.header.fingerprint.difference(now) {
            return Some(format!("another machine: {d}"));
        }
        let old = &self.header.plan;
        let first = old.iter().zip(plan).position(|(a, b)| a != b);
        match first {
            Some(i) => {
                // Name the field that differs, so the two sides never read alike.
                let (a, b) = (&old[i], &plan[i]);
                let (what, was, is) = if a.id != b.id {
                    ("id", a.id.clone(), b.id.clone())
                } else if a.args != b.args {
                    ("arguments", a.args.join(" "), b.args.join(" "))
                } else if a.title != b.title {
                    ("title", a.title.clone(), b.title.clone())
                } else {
                    (
                        "skip reason",
                        a.skip.clone().unwrap_or_default(),
                        b.skip.clone().unwrap_or_default(),
                    )
                };
                Some(format!(
                    "another plan: step {} ('{}') has {what} '{was}' in the journal, '{is}' now",
                    i + 1,
                    a.id
                ))
            }
            None if old.len() != plan.len() => Some(format!(
                "another plan: {} steps in the journal, {} now",
                old.len(),
                plan.len()
            )),
            None => None,
        }
    }
}

/// The step id a damaged line starts with (`{"step":"ID",`), when it is one of the plan's.
fn legible_step(line: &str, plan: &[PlannedStep]) -> Option<String> {
    plan.iter()
        .find(|p| {
            serde_json::to_string(&p.id)
                .is_ok_and(|id| line.starts_with(&format!("{{\"step\":{id},")))
        })
        .map(|p| p.id.clone())
}

/// Read a journal's text. A bad header is an error (one line): without it nothing can
/// be trusted. A damaged step line is skipped and named in [`Journal::damaged`]; a last
/// line without its newline that does not parse is the unfinished step.
pub fn parse(text: &str) -> Result<Journal, String> {
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().ok_or("empty file, no journal header")?;
    let header: Header = serde_json::from_str(first.trim_end())
        .map_err(|e| format!("not a numalab journal: the first line is no header ({e})"))?;
    if header.format != FORMAT {
        return Err(format!(
            "journal format '{}' is not '{FORMAT}' (written by numalab {})",
            header.format, header.tool_version
        ));
    }
    if !first.ends_with('\n') {
        return Err("the header line is cut short".into());
    }
    if header.plan.is_empty() {
        // Without a plan no step line can be matched to a step: nothing can be trusted.
        return Err("its header plans no steps (\"plan\":[]): a survey's journal lists the steps it planned".into());
    }
    let mut j = Journal::new(header);
    j.valid_len = first.len();
    for (n, line) in lines.enumerate() {
        let whole = line.ends_with('\n');
        match serde_json::from_str::<Entry>(line.trim_end()) {
            Ok(e) if whole => {
                j.entries.push(e);
                j.valid_len += line.len();
            }
            // A line cut short is the step that was running: never an error.
            _ if !whole => j.truncated = true,
            Err(e) => {
                // Appends continue after it: the damaged bytes stay for a person to see.
                j.valid_len += line.len();
                j.damaged.push(Damaged {
                    line: n + 2,
                    step: legible_step(line, &j.header.plan),
                    why: e.to_string(),
                });
            }
            Ok(_) => unreachable!("whole lines are handled above"),
        }
    }
    Ok(j)
}

/// Read a journal file.
pub fn read(path: &Path) -> Result<Journal, String> {
    let bytes = crate::outpath::read_input_bytes(path)?;
    let text = String::from_utf8_lossy(&bytes);
    parse(&text).map_err(|e| format!("invalid journal '{}': {e}", path.display()))
}

/// The journal `path` went on in when it could no longer be written (see
/// [`Header::continues`]): the fallback journal, in the places of
/// [`crate::rescue::places`], that continues it and holds the most finished steps.
pub fn continuation(path: &Path) -> Option<(std::path::PathBuf, Journal)> {
    let me = std::fs::canonicalize(path).ok()?;
    let run = read(path).ok()?.header.run;
    crate::rescue::candidates(path, "jsonl")
        .into_iter()
        .filter_map(|p| read(&p).ok().map(|j| (p, j)))
        .filter(|(_, j)| {
            j.header
                .continues
                .as_ref()
                .is_some_and(|c| Path::new(c) == me)
                && j.header.run == run
        })
        .max_by_key(|(_, j)| j.entries.len())
}

/// Appends entries to a journal file, each one written and fsync'd.
pub struct Writer {
    file: File,
}

impl Writer {
    /// Start a new journal at `path` (replacing any) with its header.
    pub fn create(path: &Path, header: &Header) -> std::io::Result<Writer> {
        let mut w = Writer {
            file: File::create(path)?,
        };
        w.line(&serde_json::to_string(header).expect("a header serialises"))?;
        Ok(w)
    }

    /// Continue the journal `j` read from `path`: a cut-short last line is dropped first.
    pub fn resume(path: &Path, j: &Journal) -> std::io::Result<Writer> {
        let file = OpenOptions::new().write(true).open(path)?;
        file.set_len(j.valid_len as u64)?;
        file.sync_all()?;
        let mut file = file;
        std::io::Seek::seek(&mut file, std::io::SeekFrom::End(0))?;
        Ok(Writer { file })
    }

    /// Append one finished step.
    pub fn append(&mut self, e: &Entry) -> std::io::Result<()> {
        self.line(&serde_json::to_string(e).expect("an entry serialises"))
    }

    fn line(&mut self, s: &str) -> std::io::Result<()> {
        let mut buf = String::with_capacity(s.len() + 1);
        buf.push_str(s);
        buf.push('\n');
        self.file.write_all(buf.as_bytes())?;
        self.file.sync_data()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prov() -> Provenance {
        Provenance::collect("1 node", "this machine")
    }

    fn header() -> Header {
        let step = |id: &str| PlannedStep {
            id: id.into(),
            title: id.into(),
            args: vec!["latency".into(), id.into()],
            skip: None,
        };
        Header {
            format: FORMAT.into(),
            tool_version: "0".into(),
            command_line: vec!["numalab".into(), "survey".into()],
            fingerprint: Fingerprint::of(&prov()),
            plan: vec![step("a"), step("b"), step("c")],
            continues: None,
            run: None,
        }
    }

    fn entry(id: &str, n: usize) -> Entry {
        Entry {
            step: id.into(),
            status: format!("{n} records"),
            seconds: 1.0,
            records: (0..n)
                .map(|i| Record::new("t", &format!("{id}{i}"), prov(), serde_json::json!({})))
                .collect(),
        }
    }

    fn dir(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("numalab-journal-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn written_entries_read_back_in_plan_order() {
        let d = dir("rw");
        let p = d.join(FILE_NAME);
        let mut w = Writer::create(&p, &header()).unwrap();
        w.append(&entry("b", 2)).unwrap();
        w.append(&entry("a", 1)).unwrap();
        let j = read(&p).unwrap();
        assert!(!j.truncated);
        let names: Vec<String> = j.records().into_iter().map(|r| r.name).collect();
        assert_eq!(names, ["a0", "b0", "b1"]);
        let missing: Vec<&str> = j.missing().iter().map(|s| s.id.as_str()).collect();
        assert_eq!(missing, ["c"]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_cut_short_last_line_is_an_unfinished_step() {
        let d = dir("cut");
        let p = d.join(FILE_NAME);
        let mut w = Writer::create(&p, &header()).unwrap();
        w.append(&entry("a", 1)).unwrap();
        drop(w);
        let whole = std::fs::read_to_string(&p).unwrap();
        let partial = serde_json::to_string(&entry("b", 3)).unwrap();
        for cut in [1, partial.len() / 2, partial.len()] {
            let text = format!("{whole}{}", &partial[..cut]);
            let j = parse(&text).unwrap();
            assert!(j.truncated, "cut at {cut}");
            assert_eq!(j.entries.len(), 1);
            assert_eq!(j.valid_len, whole.len());
        }
        // Continuing drops the partial line and appends after the last whole one.
        std::fs::write(&p, format!("{whole}{}", &partial[..10])).unwrap();
        let j = read(&p).unwrap();
        let mut w = Writer::resume(&p, &j).unwrap();
        w.append(&entry("c", 1)).unwrap();
        let j = read(&p).unwrap();
        assert!(!j.truncated);
        assert_eq!(j.missing().len(), 1);
        assert_eq!(j.missing()[0].id, "b");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn damaged_step_lines_are_skipped_and_named() {
        let h = serde_json::to_string(&header()).unwrap();
        let a = serde_json::to_string(&entry("a", 1)).unwrap();
        let b = serde_json::to_string(&entry("b", 2)).unwrap();
        // b's line corrupted in its middle, and garbage appended after c's.
        // A control character: no JSON holds one unescaped, inside a string or out.
        let bad_b = format!("{}\u{1}{}", &b[..b.len() / 2], &b[b.len() / 2 + 1..]);
        let c = serde_json::to_string(&entry("c", 1)).unwrap();
        let text = format!("{h}\n{a}\n{bad_b}\n{c}\n{{garbage\n");
        let j = parse(&text).unwrap();
        let ids: Vec<&str> = j.entries.iter().map(|e| e.step.as_str()).collect();
        assert_eq!(ids, ["a", "c"]);
        let missing: Vec<&str> = j.missing().iter().map(|s| s.id.as_str()).collect();
        assert_eq!(missing, ["b"]);
        let lines: Vec<usize> = j.damaged.iter().map(|d| d.line).collect();
        assert_eq!(lines, [3, 5]);
        assert_eq!(j.damaged[0].step.as_deref(), Some("b"));
        assert_eq!(j.damaged[1].step, None);
        assert_eq!(
            j.valid_len,
            text.len(),
            "appends go after the damaged lines"
        );
        let note = j.damage_note().unwrap();
        assert!(
            note.contains("line 3 (step 'b')") && note.contains("line 5"),
            "{note}"
        );
        assert_eq!(note.lines().count(), 1);
    }

    #[test]
    fn bad_headers_are_errors() {
        let h = serde_json::to_string(&header()).unwrap();
        let e = serde_json::to_string(&entry("a", 1)).unwrap();
        let bad_h = format!("{}\u{1}{}", &h[..h.len() / 2], &h[h.len() / 2 + 1..]);
        let err = parse(&format!("{bad_h}\n{e}\n")).unwrap_err();
        assert!(err.contains("no header"), "{err}");
        assert!(parse("").is_err());
        assert!(parse("[1,2]\n")
            .unwrap_err()
            .contains("not a numalab journal"));
        let other = h.replace(FORMAT, "numalab.journal/99");
        assert!(parse(&format!("{other}\n")).unwrap_err().contains("/99"));
        assert!(parse(&h).unwrap_err().contains("cut short"));
    }

    #[test]
    fn resuming_needs_the_same_machine_and_plan() {
        let j = Journal::new(header());
        let now = Fingerprint::of(&prov());
        assert_eq!(j.resume_refusal(&now, &header().plan), None);
        let mut other = now.clone();
        other.hostname = "elsewhere".into();
        let why = j.resume_refusal(&other, &header().plan).unwrap();
        assert!(why.contains("'elsewhere'"), "{why}");
        let mut plan = header().plan;
        plan[1].args.push("--quick".into());
        let why = j.resume_refusal(&now, &plan).unwrap();
        assert!(why.contains("step 2") && why.contains("--quick"), "{why}");
        // Only the title changed: the message shows the two titles, not twice the same.
        let mut retitled = header().plan;
        retitled[0].title = "something else".into();
        let why = j.resume_refusal(&now, &retitled).unwrap();
        assert!(
            why.contains("title") && why.contains("'something else' now"),
            "{why}"
        );
        plan.truncate(1);
        assert!(j.resume_refusal(&now, &plan).unwrap().contains("3 steps"));
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_text_never_panics(s in "\\PC*", cut in 0usize..400) {
            let _ = parse(&s);
            let h = serde_json::to_string(&header()).unwrap();
            let e = serde_json::to_string(&entry("a", 2)).unwrap();
            let text = format!("{h}\n{e}\n{s}");
            let cut = cut.min(text.len());
            if text.is_char_boundary(cut) {
                let _ = parse(&text[..cut]);
            }
        }
    }
}
