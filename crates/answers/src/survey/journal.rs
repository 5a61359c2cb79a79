//! The survey's output folder and its journal: a fresh folder (an earlier survey's
//! results are never replaced without `--force`), or a journal continued with `--resume`.
//! The cluster's folder is kept the same way ([`Kind`] names the run in the messages
//! and its lock file).

use super::lock::{self, FolderLock};
use super::plan::Step;
use numalab_results::journal::{self, Entry, Fingerprint, Header, Journal, PlannedStep, Writer};
use numalab_results::{outpath, Provenance};
use numalab_topo::Error;
use std::path::{Path, PathBuf};

/// A usage error (exit 2): the folder or journal the user named cannot be used.
fn bad(msg: String) -> Error {
    Error::input(msg)
}

/// The files a survey writes into its folder.
pub const OUTPUTS: [&str; 4] = [
    journal::FILE_NAME,
    "results.json",
    "results.csv",
    "report.html",
];

/// The kind of run a folder holds: its name in messages, and its lock file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Kind {
    /// "survey", "cluster".
    pub name: &'static str,
    /// The lock file's name in the folder.
    pub lock: &'static str,
}

/// The survey's folder.
pub const SURVEY: Kind = Kind {
    name: "survey",
    lock: lock::FILE_NAME,
};

/// Refuse, before anything is created, a survey folder that is no folder, or a file the
/// survey writes there (or its lock) that is no regular file: nothing else is ever
/// truncated, renamed over or removed (see `numalab_results::outpath`).
pub fn check_folder(dir: &Path) -> Result<(), Error> {
    check_folder_as(SURVEY, dir)
}

/// [`check_folder`] for the folder of a `kind` run.
pub fn check_folder_as(kind: Kind, dir: &Path) -> Result<(), Error> {
    let what = kind.name;
    if let Ok(m) = std::fs::metadata(dir) {
        if !m.is_dir() {
            return Err(bad(format!(
                "invalid output folder '{}': it is {}; {what} -o names a folder (new, or one a {what} wrote)",
                dir.display(),
                outpath::kind(&m)
            )));
        }
    }
    for f in OUTPUTS.iter().chain([&kind.lock]) {
        let p = dir.join(f);
        let m = match std::fs::metadata(&p) {
            Ok(m) => m,
            Err(_) if std::fs::symlink_metadata(&p).is_err() => continue,
            Err(e) => {
                return Err(bad(format!(
                    "invalid output folder '{}': {f} is a symbolic link that leads nowhere ({e})",
                    dir.display()
                )))
            }
        };
        if !m.is_file() {
            return Err(bad(format!(
                "invalid output folder '{}': '{}' is {}, not a regular file; numalab never replaces it",
                dir.display(),
                p.display(),
                outpath::kind(&m)
            )));
        }
    }
    Ok(())
}

/// The plan as the journal records it; ids are section/title, made unique.
pub fn planned(steps: &[Step]) -> Vec<PlannedStep> {
    let mut out: Vec<PlannedStep> = Vec::new();
    for s in steps {
        let base = format!("{}/{}", s.section, s.title);
        let mut id = base.clone();
        let mut k = 2;
        while out.iter().any(|p| p.id == id) {
            id = format!("{base} #{k}");
            k += 1;
        }
        out.push(PlannedStep {
            id,
            title: s.title.clone(),
            args: s.args.clone(),
            skip: s.skip.clone(),
        });
    }
    out
}

/// The journal being written: its in-memory copy, and the file while writes succeed.
pub struct Log {
    /// Everything finished, this run's and a resumed run's.
    pub journal: Journal,
    /// The journal file.
    pub path: PathBuf,
    writer: Option<Writer>,
    /// Why the journal could not be written, once it could not.
    pub broken: Option<String>,
    /// What a resume found in the journal (damaged lines, a continuation), one line each.
    pub notes: Vec<String>,
    /// The kind of run writing it.
    kind: Kind,
    /// The folder's one-writer lock, held while this log lives.
    _lock: FolderLock,
}

impl Log {
    /// Finished steps that run here, counted as the start line counts the plan's steps
    /// (skipped ones left out).
    pub fn finished_runnable(&self) -> usize {
        let j = &self.journal;
        j.header
            .plan
            .iter()
            .filter(|p| p.skip.is_none() && j.entry(&p.id).is_some())
            .count()
    }

    /// Record a finished step: in memory always, in the file while it can be written.
    /// When the journal cannot be written (disk full, folder removed), it continues in
    /// a fallback file (see `numalab_results::rescue`) whose header names this journal,
    /// so a later kill still keeps every step and `numalab report` finds it; returns
    /// the warning to show then.
    pub fn finish(&mut self, e: Entry) -> Option<String> {
        let failed = match self.writer.as_mut() {
            Some(w) => w.append(&e).err(),
            None => None,
        };
        self.journal.entries.push(e);
        let err = failed?;
        let why = format!("writing '{}' failed: {err}", self.path.display());
        self.broken = Some(why.clone());
        self.writer = None;
        // Names the survey's own journal, also when a fallback fails in turn.
        if self.journal.header.continues.is_none() {
            let p = std::fs::canonicalize(&self.path)
                .or_else(|_| std::path::absolute(&self.path))
                .unwrap_or_else(|_| self.path.clone());
            self.journal.header.continues = Some(p.display().to_string());
        }
        let header = self.journal.header.clone();
        let mut moved = None;
        let kept = numalab_results::rescue::keep(&self.path, "jsonl", |to| {
            let mut w = Writer::create(to, &header)?;
            for e in &self.journal.entries {
                w.append(e)?;
            }
            moved = Some(w);
            Ok(())
        });
        Some(match kept {
            Ok(to) => {
                self.writer = moved;
                self.path = to;
                format!(
                    "{why}; the journal continues in '{}' (numalab report takes it)",
                    self.path.display()
                )
            }
            Err(tried) => {
                format!(
                    "{why}; {tried}; the {} goes on and keeps its records in memory",
                    self.kind.name
                )
            }
        })
    }
}

/// Open the journal of a new survey in `dir`, refusing a folder that already holds a
/// survey's files unless `force` (which removes them first).
pub fn start(
    dir: &Path,
    force: bool,
    prov: &Provenance,
    plan: Vec<PlannedStep>,
) -> Result<Log, Error> {
    start_as(SURVEY, dir, force, prov, plan)
}

/// [`start`] for a `kind` run.
pub fn start_as(
    kind: Kind,
    dir: &Path,
    force: bool,
    prov: &Provenance,
    plan: Vec<PlannedStep>,
) -> Result<Log, Error> {
    check_folder_as(kind, dir)?;
    let take = || lock::take_as(dir, kind.lock, kind.name);
    // A folder another run is writing is refused before anything else is said of it.
    let lock = if dir.is_dir() { Some(take()?) } else { None };
    let held: Vec<&str> = OUTPUTS
        .iter()
        .copied()
        .filter(|f| dir.join(f).exists())
        .collect();
    if !held.is_empty() && !force {
        return Err(bad(format!(
            "output folder '{}' already holds results ({}): add --force to replace them, or give another folder with -o (or continue it with --resume)",
            dir.display(),
            held.join(", ")
        )));
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| bad(format!("invalid output directory '{}': {e}", dir.display())))?;
    let lock = match lock {
        Some(l) => l,
        None => take()?,
    };
    for f in held {
        std::fs::remove_file(dir.join(f)).map_err(|e| {
            bad(format!(
                "invalid output directory '{}': cannot replace {f}: {e}",
                dir.display()
            ))
        })?;
    }
    let header = Header {
        format: journal::FORMAT.into(),
        tool_version: prov.tool_version.clone(),
        command_line: prov.command_line.clone(),
        fingerprint: Fingerprint::of(prov),
        plan,
        continues: None,
        run: Some(journal::run_id()),
    };
    let path = dir.join(journal::FILE_NAME);
    let writer = Writer::create(&path, &header)
        .map_err(|e| lock::cannot_write(dir, journal::FILE_NAME, e))?;
    Ok(Log {
        journal: Journal::new(header),
        path,
        writer: Some(writer),
        broken: None,
        notes: Vec::new(),
        kind,
        _lock: lock,
    })
}

/// Take the lock of a `kind` run's folder (to write its files from a journal whose run
/// ended), or say which process holds it.
pub fn lock_as(kind: Kind, dir: &Path) -> Result<FolderLock, Error> {
    lock::take_as(dir, kind.lock, kind.name)
}

/// Continue the survey whose journal is in `dir`: the machine and the plan must be the same.
pub fn resume(dir: &Path, prov: &Provenance, plan: &[PlannedStep]) -> Result<Log, Error> {
    resume_as(SURVEY, dir, prov, plan, |_| None)
}

/// [`resume`] for a `kind` run; `refuse` says first why its journal cannot be
/// continued, if it cannot (the cluster: other hosts).
pub fn resume_as(
    kind: Kind,
    dir: &Path,
    prov: &Provenance,
    plan: &[PlannedStep],
    refuse: impl Fn(&Journal) -> Option<String>,
) -> Result<Log, Error> {
    let path = dir.join(journal::FILE_NAME);
    let cannot = |why: String| bad(format!("cannot resume '{}': {why}", dir.display()));
    check_folder_as(kind, dir)?;
    if !path.is_file() {
        return Err(cannot(format!(
            "no {} in it (give the folder of a {})",
            journal::FILE_NAME,
            kind.name
        )));
    }
    let lock = lock::take_as(dir, kind.lock, kind.name)?;
    let j = journal::read(&path).map_err(cannot)?;
    let refusal = refuse(&j).or_else(|| j.resume_refusal(&Fingerprint::of(prov), plan));
    if let Some(why) = refusal {
        return Err(cannot(format!(
            "{why}; it was started as '{}'",
            j.header.command_line.join(" ")
        )));
    }
    let full = |e| lock::cannot_write(dir, journal::FILE_NAME, e);
    let mut writer = Writer::resume(&path, &j).map_err(full)?;
    let mut notes: Vec<String> = j.damage_note().into_iter().collect();
    let mut j = j;
    notes.extend(adopt_continuation(&path, &mut j, &mut writer).map_err(full)?);
    Ok(Log {
        journal: j,
        path,
        writer: Some(writer),
        broken: None,
        notes,
        kind,
        _lock: lock,
    })
}

/// Steps a fallback journal holds (the journal went on there when it could not be
/// written) are copied back into the journal being resumed, and not measured again.
fn adopt_continuation(
    path: &Path,
    j: &mut Journal,
    w: &mut Writer,
) -> std::io::Result<Option<String>> {
    let Some((to, c)) = journal::continuation(path) else {
        return Ok(None);
    };
    if c.header.plan != j.header.plan {
        return Ok(None);
    }
    let new: Vec<Entry> = c
        .entries
        .into_iter()
        .filter(|e| j.entry(&e.step).is_none())
        .collect();
    for e in &new {
        w.append(e)?;
    }
    let n = new.len();
    j.entries.extend(new);
    Ok(Some(format!(
        "{} taken from '{}', where the journal continued when it could not be written",
        numalab_results::words::count(n as u64, "finished step"),
        to.display()
    )))
}

/// Each missing step of a journal as "step 'TITLE' (interrupted)", saying so when its
/// journal line is damaged, or when the plan would have skipped it anyway.
pub fn missing(j: &Journal) -> Vec<String> {
    j.missing()
        .iter()
        .map(|s| {
            let damaged = j.damaged.iter().find(|d| d.step.as_ref() == Some(&s.id));
            match (&s.skip, damaged) {
                (_, Some(d)) => format!(
                    "step '{}' (its journal line {} is damaged; --resume measures it again)",
                    s.title, d.line
                ),
                (None, None) => format!("step '{}' (interrupted)", s.title),
                (Some(why), None) => format!(
                    "step '{}' (interrupted before it; it would be skipped here: {why})",
                    s.title
                ),
            }
        })
        .collect()
}
