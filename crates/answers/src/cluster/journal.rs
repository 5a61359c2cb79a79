//! The cluster's folder (`-o DIR`, `--resume DIR`), kept as the survey keeps its own
//! (`crate::survey::journal`: the same journal, lock and files): rank 0 journals each
//! part as it ends ([`super::parts`]), a resume measures only the parts the journal
//! lacks, and the run's records are built from the journal's parts, this run's and an
//! earlier one's alike. After a job that failed, the launching process writes the files
//! from what the journal holds and says how to resume ([`rescue`]).

use super::data::{HostData, LinksData, KIND_COLLECTIVES, KIND_FINDINGS, KIND_HOST, KIND_LINKS};
use super::parts::{self, Cells, Part, KIND_PART};
use super::plan::Plan;
use super::rule;
use crate::survey::files::write_titled;
use crate::survey::journal::{self as sj, Kind, Log};
use numalab_results::journal::{self, Entry, Fingerprint, Header, Journal};
use numalab_results::{Provenance, Record};
use numalab_topo::Error;
use serde_json::json;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The cluster's folder: its name in messages and its lock file.
pub const FOLDER: Kind = Kind {
    name: "cluster",
    lock: ".numalab-cluster.lock",
};

/// Whether the cluster's `-o PATH` names its folder: anything but a record file (a name
/// ending in .json or .csv, or standard output), which takes the records as for every
/// command, without a journal.
pub fn names_folder(p: &Path) -> bool {
    let ext = p
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let stdout = matches!(
        numalab_results::outpath::target(p),
        Ok(numalab_results::outpath::Target::Stdout)
    );
    !stdout && !matches!(ext.as_deref(), Some("json" | "csv"))
}

/// Where the run keeps its parts: a new folder (`-o DIR`, `--force` to replace an
/// earlier run's files) or one continued (`--resume DIR`).
#[derive(Debug, Clone, PartialEq)]
pub struct Folder {
    /// The folder.
    pub dir: PathBuf,
    /// Continue the journal there.
    pub resume: bool,
    /// Replace the results it holds.
    pub force: bool,
}

/// The parts finished (rank 0): in the folder's journal, or in memory only when the run
/// has no folder.
pub struct Book {
    log: Option<Log>,
    /// The folder (the journal may go on in a fallback file elsewhere).
    dir: Option<PathBuf>,
    mem: Journal,
    /// Parts the journal held when this run started (taken, not measured again).
    pub resumed: usize,
}

impl Book {
    /// Open the folder's journal (new, or continued: the same hosts and options), or a
    /// book in memory without a folder.
    pub fn open(plan: &Plan, folder: Option<&Folder>, prov: &Provenance) -> Result<Book, Error> {
        let planned = parts::planned(plan);
        let log = match folder {
            Some(f) if f.resume => Some(sj::resume_as(FOLDER, &f.dir, prov, &planned, |j| {
                parts::other_hosts(&parts::hosts_of(j), &plan.hosts)
            })?),
            Some(f) => Some(sj::start_as(
                FOLDER,
                &f.dir,
                f.force,
                prov,
                planned.clone(),
            )?),
            None => None,
        };
        let mem = Journal::new(Header {
            format: journal::FORMAT.into(),
            tool_version: prov.tool_version.clone(),
            command_line: prov.command_line.clone(),
            fingerprint: Fingerprint::of(prov),
            plan: planned,
            continues: None,
            run: None,
        });
        let mut b = Book {
            log,
            dir: folder.map(|f| f.dir.clone()),
            mem,
            resumed: 0,
        };
        b.resumed = b.done(plan).iter().filter(|d| **d).count();
        Ok(b)
    }

    /// The journal: every part finished so far.
    pub fn journal(&self) -> &Journal {
        self.log.as_ref().map_or(&self.mem, |l| &l.journal)
    }

    /// Whether each part of the plan (in [`parts::parts`] order) is finished.
    pub fn done(&self, plan: &Plan) -> Vec<bool> {
        let by = by_part(self.journal());
        parts::parts(plan)
            .iter()
            .map(|p| by.contains_key(p.id(plan).as_str()))
            .collect()
    }

    /// Record a finished part; the warning to show when the journal could not be
    /// written (it then goes on in a fallback file, or in memory).
    pub fn finish(
        &mut self,
        plan: &Plan,
        part: Part,
        records: Vec<Record>,
        seconds: f64,
    ) -> Option<String> {
        let e = Entry {
            step: part.id(plan),
            status: numalab_results::words::count(records.len() as u64, "record"),
            seconds,
            records,
        };
        match &mut self.log {
            Some(l) => l.finish(e),
            None => {
                self.mem.entries.push(e);
                None
            }
        }
    }

    /// The start line: the parts, and the folder written or continued; then what a
    /// resume found in the journal, one line each.
    pub fn announce(&self, plan: &Plan, folder: Option<&Folder>) -> Vec<String> {
        let total = parts::parts(plan).len();
        let Some(f) = folder else {
            return Vec::new();
        };
        let mut lines = vec![match f.resume {
            true => format!(
                "{total} parts; continuing {} ({} of {total} finished before)",
                f.dir.display(),
                self.resumed
            ),
            false => format!("{total} parts; writing {}", f.dir.display()),
        }];
        if let Some(l) = &self.log {
            lines.extend(l.notes.iter().cloned());
        }
        lines
    }

    /// The run's records from its parts (see [`records`]).
    pub fn records(&self, plan: &Plan, prov: &Provenance) -> Vec<Record> {
        records(plan, self.journal(), prov, Some(self.resumed))
    }

    /// Write results.json, results.csv and report.html into the folder (nothing without
    /// one); the journal could not be written, the warning to show.
    pub fn write(
        &self,
        records: &[Record],
    ) -> Result<Option<String>, numalab_results::OutputError> {
        let (Some(l), Some(dir)) = (&self.log, &self.dir) else {
            return Ok(None);
        };
        write_titled(dir, records, &sj::missing(&l.journal), &title(records))?;
        Ok(l.broken.as_ref().map(|why| {
            format!("the journal is incomplete ({why}); the results files hold every record")
        }))
    }
}

/// The journal's entries by part (the last one, should a part appear twice).
fn by_part(j: &Journal) -> HashMap<&str, &Entry> {
    j.entries.iter().map(|e| (e.step.as_str(), e)).collect()
}

fn title(records: &[Record]) -> String {
    let hosts = records.iter().filter(|r| r.kind == KIND_HOST).count();
    format!("numalab cluster of {hosts} hosts")
}

/// The record of one round's or shift step's cells (a journal entry's).
pub fn part_record(plan: &Plan, part: Part, cells: &Cells, prov: &Provenance) -> Record {
    let mut r = Record::new(
        KIND_PART,
        &part.title(plan),
        prov.clone(),
        json!({ "part": part.id(plan) }),
    );
    r.set_data(cells);
    r
}

/// The run's records from the journal's parts, as a whole run gives them: each host's
/// record (rank order), the findings, the matrices built from every round's and step's
/// cells (a part not measured leaves its cells empty, and the findings say which), and
/// the collectives. `resumed`: parts taken from an earlier run, when known.
pub fn records(plan: &Plan, j: &Journal, prov: &Provenance, resumed: Option<usize>) -> Vec<Record> {
    let all = parts::parts(plan);
    let by = by_part(j);
    let entry = |p: &Part| by.get(p.id(plan).as_str()).copied();
    let of = |p: &Part| entry(p).map(|e| e.records.as_slice()).unwrap_or(&[]);
    let hosts: Vec<Record> = all
        .iter()
        .filter(|p| matches!(p, Part::Host(_)))
        .flat_map(|p| of(p).iter().filter(|r| r.kind == KIND_HOST).cloned())
        .collect();
    let cells: Vec<Cells> = all
        .iter()
        .flat_map(|p| of(p).iter().filter(|r| r.kind == KIND_PART))
        .filter_map(|r| r.data_as::<Cells>().ok())
        .collect();
    let links = links(plan, &cells);
    let data: Vec<HostData> = hosts
        .iter()
        .filter_map(|r| r.data_as::<HostData>().ok())
        .collect();
    let mut found = rule::findings(&data, Some(&links));
    let finished = all.iter().filter(|p| entry(p).is_some()).count();
    let missing: Vec<String> = all
        .iter()
        .filter(|p| entry(p).is_none())
        .map(|p| p.title(plan))
        .collect();
    if !missing.is_empty() {
        found.notes.push(format!(
            "not measured (the run ended before them; --resume measures them): {}",
            missing.join(", ")
        ));
    }
    if let Some(k) = resumed.filter(|k| *k > 0) {
        found.notes.push(format!(
            "{k} of {} parts were taken from the journal of an earlier run (--resume), {} measured now",
            all.len(),
            finished - k
        ));
    }
    let n = plan.hosts.len();
    let counts = json!({ "planned": all.len(), "finished": finished,
        "resumed": resumed, "measured": resumed.map(|k| finished - k) });
    let o = &plan.options;
    let mut l = Record::new(
        KIND_LINKS,
        &format!("{n} hosts"),
        prov.clone(),
        json!({ "hosts": n, "lat_iterations": o.lat_iterations, "bw_size": o.bw_size,
                "bw_window": o.bw_window, "bw_iterations": o.bw_iterations, "parts": counts }),
    );
    l.set_data(&links);
    let mut f = Record::new(
        KIND_FINDINGS,
        "findings",
        prov.clone(),
        json!({ "hosts": n }),
    );
    f.set_data(&found);
    for r in [&mut l, &mut f] {
        r.warnings = prov.warnings();
    }
    let coll = of(&Part::Collectives)
        .iter()
        .filter(|r| r.kind == KIND_COLLECTIVES)
        .cloned();
    let mut out = hosts;
    out.extend([f, l]);
    out.extend(coll);
    out
}

/// The matrices from the parts' cells.
fn links(plan: &Plan, cells: &[Cells]) -> LinksData {
    let n = plan.hosts.len();
    let mut lat = vec![vec![None; n]; n];
    let mut send = vec![vec![None; n]; n];
    let mut recv = vec![vec![None; n]; n];
    let inside = |&&(a, b, _): &&(usize, usize, f64)| a < n && b < n && a != b;
    for c in cells {
        for &(a, b, v) in c.latency_ns.iter().filter(inside) {
            lat[a][b] = Some(v);
            lat[b][a] = Some(v);
        }
        for &(a, b, v) in c.send_gbps.iter().filter(inside) {
            send[a][b] = Some(v);
        }
        for &(a, b, v) in c.recv_gbps.iter().filter(inside) {
            recv[a][b] = Some(v);
        }
    }
    let o = &plan.options;
    LinksData {
        hosts: plan.hosts.clone(),
        latency_ns: lat,
        send_gbps: send,
        recv_gbps: recv,
        size: o.bw_size,
        window: o.bw_window,
        method: format!(
            "latency: 8 B MPI_Send/MPI_Recv ping-pong, {} per pair (median, halved), pairs in rounds of disjoint pairs; bandwidth: mpiGraph's shift steps, every host sending {} x {} B to host+D while receiving from host-D, {} per step (median); receive: from the barrier's end until the receives completed, from its start where the first message had arrived before its end; send: until the receiver's reply that they did",
            numalab_results::words::count(o.lat_iterations as u64, "round trip"), o.bw_window, o.bw_size, numalab_results::words::count(o.bw_iterations as u64, "sample")
        ),
    }
}

/// After a job that failed (the launching process, once mpirun ended): when the
/// folder's journal is this plan's and was written since `since`, the results files
/// from the parts it holds, and one line saying how many and how to resume. None when
/// the folder holds no such journal (the job ended before rank 0 wrote one, or the
/// folder is another run's), or when another run holds its lock.
pub fn rescue(plan: &Plan, dir: &Path, since: std::time::SystemTime) -> Option<String> {
    let path = dir.join(journal::FILE_NAME);
    let fresh = std::fs::metadata(&path)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t >= since);
    let j = journal::read(&path).ok().filter(|_| fresh)?;
    if j.header.plan != parts::planned(plan) {
        return None;
    }
    // The run is over (its rank 0 may take a moment to die and let go); a run that
    // holds the folder after that is another's.
    let _lock = (0..50).find_map(|_| {
        sj::lock_as(FOLDER, dir)
            .inspect_err(|_| std::thread::sleep(std::time::Duration::from_millis(100)))
            .ok()
    })?;
    let same = match plan.allocation {
        Some(_) => "inside an allocation of the same nodes, with the same options,",
        None => "with the same hostfile and options",
    };
    let resume = format!(
        "`numalab cluster --resume {}` {same} measures the rest",
        dir.display()
    );
    let Some(prov) = j.entries.iter().find_map(|e| e.records.first()) else {
        return Some(format!("no part had finished; {resume}"));
    };
    let prov = prov.provenance.clone();
    let recs = records(plan, &j, &prov, None);
    let total = j.header.plan.len();
    let done = total - j.missing().len();
    let files = match write_titled(dir, &recs, &sj::missing(&j), &title(&recs)) {
        Ok(()) => "results.json, results.csv and report.html hold them".to_string(),
        Err(e) => format!("the results files could not be written ({e})"),
    };
    Some(format!(
        "{done} of {total} parts had finished and are kept in '{}' ({files}); {resume}",
        path.display()
    ))
}
