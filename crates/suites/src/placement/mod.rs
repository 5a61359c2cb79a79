//! The KSR1 thread-placement study (seed 000) as a plan: owners write a data set,
//! a barrier releases the readers, each reader reads one word per line. Experiment 0
//! and Suites I–IV are curves; a curve's point k uses its first k readers.

mod experiment;
mod present;
pub use present::{PlacementPresenter, PointData, ReaderMedian};
pub mod run;
mod text;
mod view;
pub use experiment::{plan_records, records as point_records, run as run_suite, Options};
pub use text::text;

use crate::domains::{self, Ordered};
use numalab_topo::{Error, Level, Machine, Result};
use serde::{Deserialize, Serialize};

/// A part of the study.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Part {
    /// Partitioned data, no sharing.
    Exp0,
    /// One shared data set, owner position varied in domain A.
    Suite1,
    /// Remote readers added to a fixed number of local readers.
    Suite2,
    /// Readers placed in batches alternating between domains.
    Suite3,
    /// Staggered readers and four owners.
    Suite4,
}

impl Part {
    /// Every part, in the seed's order.
    pub const ALL: [Part; 5] = [
        Part::Exp0,
        Part::Suite1,
        Part::Suite2,
        Part::Suite3,
        Part::Suite4,
    ];

    /// Parse "0", "exp0", "1", "i", "suite1", … and the names records carry ("Suite I").
    pub fn parse(s: &str) -> std::result::Result<Part, String> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "0" | "exp0" | "experiment0" | "experiment 0" => Part::Exp0,
            "1" | "i" | "suite1" | "suite i" => Part::Suite1,
            "2" | "ii" | "suite2" | "suite ii" => Part::Suite2,
            "3" | "iii" | "suite3" | "suite iii" => Part::Suite3,
            "4" | "iv" | "suite4" | "suite iv" => Part::Suite4,
            _ => {
                return Err(format!(
                    "invalid --parts item '{s}': one of 0 (exp0), 1, 2, 3, 4 (or i, ii, iii, iv)"
                ))
            }
        })
    }

    /// The seed's name.
    pub fn name(self) -> &'static str {
        match self {
            Part::Exp0 => "Experiment 0",
            Part::Suite1 => "Suite I",
            Part::Suite2 => "Suite II",
            Part::Suite3 => "Suite III",
            Part::Suite4 => "Suite IV",
        }
    }

    /// Short id used in records.
    pub fn id(self) -> &'static str {
        match self {
            Part::Exp0 => "exp0",
            Part::Suite1 => "suite1",
            Part::Suite2 => "suite2",
            Part::Suite3 => "suite3",
            Part::Suite4 => "suite4",
        }
    }
}

/// One curve: readers are added in `readers` order; a point per count in `counts`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Curve {
    /// The part it belongs to.
    pub part: Part,
    /// What distinguishes it within the part, e.g. "owner 7", "batch 8".
    pub label: String,
    /// Owner CPUs; the data set is split evenly among them in this order.
    pub owners: Vec<u32>,
    /// Reader CPUs in the order they are added.
    pub readers: Vec<u32>,
    /// Reader counts measured (prefix lengths of `readers`).
    pub counts: Vec<usize>,
    /// Readers present at every point (Suite II's local readers); x = count − fixed.
    pub fixed: usize,
    /// Each reader starts at a different offset of the data set.
    pub stagger: bool,
    /// Each reader reads its own part (Experiment 0) instead of the whole set.
    pub partitioned: bool,
}

/// What the user chose.
#[derive(Debug, Clone)]
pub struct Config {
    /// Domain level (None: the machine's most informative level).
    pub level: Option<Level>,
    /// Owner CPU for Experiment 0 and Suites II–IV (None: last CPU of the first domain).
    pub owner: Option<u32>,
    /// Parts to plan.
    pub parts: Vec<Part>,
    /// Suite III batch sizes (None: powers of two up to the largest domain).
    pub batches: Option<Vec<usize>>,
    /// Largest reader count (None: every CPU that is not an owner).
    pub max_readers: Option<usize>,
    /// Bytes of the shared data set.
    pub size: u64,
    /// Lines per unit (1 = a cache line, 2 = a pair, like the KSR's 128-byte subpage).
    pub unit_lines: usize,
    /// Line size in bytes.
    pub line: usize,
}

/// The whole plan.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    /// Domain level.
    pub level: Level,
    /// Domains, owner's first.
    pub domains: Vec<Ordered>,
    /// The default owner CPU.
    pub owner: u32,
    /// Lines in the shared data set (a multiple of the unit).
    pub lines: usize,
    /// Lines each Experiment 0 reader reads.
    pub exp0_lines: usize,
    /// Lines per unit.
    pub unit_lines: usize,
    /// Line size in bytes.
    pub line: usize,
    /// Curves to measure.
    pub curves: Vec<Curve>,
    /// Parts (or pieces of parts) that cannot run here, and why.
    pub skipped: Vec<(Part, String)>,
}

fn readers_excluding(domains: &[Ordered], owners: &[u32]) -> Vec<u32> {
    domains
        .iter()
        .flat_map(|d| d.cpus.iter().copied())
        .filter(|c| !owners.contains(c))
        .collect()
}

/// Suite III order: `n` readers from each domain in turn, skipping exhausted ones.
pub fn batched(domains: &[Ordered], owners: &[u32], n: usize) -> Vec<u32> {
    let mut pools: Vec<Vec<u32>> = domains
        .iter()
        .map(|d| {
            d.cpus
                .iter()
                .copied()
                .filter(|c| !owners.contains(c))
                .collect()
        })
        .collect();
    let mut out = Vec::new();
    while pools.iter().any(|p| !p.is_empty()) {
        for p in pools.iter_mut() {
            let take = n.min(p.len());
            out.extend(p.drain(..take));
        }
    }
    out
}

fn dedup(v: Vec<u32>) -> Vec<u32> {
    let mut out = Vec::new();
    for x in v {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

/// What every part's curves are built from: the domains, the owner, the readers.
struct Builder<'a> {
    level: Level,
    domains: &'a [Ordered],
    /// Domain A's CPUs, each core's first hardware thread (the seed's cells).
    a_first: Vec<u32>,
    owner: u32,
    /// Every reader but the owner, in domain order.
    all: Vec<u32>,
    /// At most this many readers per curve.
    cap: usize,
}

/// Reader counts `fixed + 1 ..= fixed + n`.
fn counts(n: usize, fixed: usize) -> Vec<usize> {
    (fixed + 1..=fixed + n).collect()
}

impl Builder<'_> {
    /// A curve of `readers` (at most `cap`) added one at a time.
    fn curve(&self, part: Part, label: String, owners: Vec<u32>, readers: Vec<u32>) -> Curve {
        let n = readers.len().min(self.cap);
        Curve {
            part,
            label,
            owners,
            counts: counts(n, 0),
            readers: readers[..n].to_vec(),
            fixed: 0,
            stagger: false,
            partitioned: false,
        }
    }

    /// Why a part that needs two domains is not run.
    fn need_two(&self, what: &str) -> String {
        format!(
            "{what} needs at least two {} domains; this topology has {} (try another --level)",
            self.level,
            self.domains.len()
        )
    }

    /// The curves of one part, or why it is not run here.
    fn part(
        &self,
        part: Part,
        batches: Option<&[usize]>,
    ) -> std::result::Result<Vec<Curve>, String> {
        match part {
            Part::Exp0 => {
                let (o, all) = (self.owner, self.all.clone());
                let mut k = self.curve(part, format!("owner {o}"), vec![o], all);
                k.partitioned = true;
                Ok(vec![k])
            }
            Part::Suite1 => Ok(self.suite1()),
            Part::Suite2 if self.domains.len() < 2 => {
                Err(self.need_two("Suite II (remote readers)"))
            }
            Part::Suite2 => Ok(self.suite2()),
            Part::Suite3 if self.domains.len() < 2 => {
                Err(self.need_two("Suite III (batches alternating domains)"))
            }
            Part::Suite3 => Ok(self.suite3(batches)),
            Part::Suite4 => Ok(self.suite4_one_owner()),
        }
    }

    /// Suite I: the owner first, midway and last in domain A.
    fn suite1(&self) -> Vec<Curve> {
        let a = &self.a_first;
        dedup(vec![a[0], a[a.len() / 2], *a.last().unwrap()])
            .into_iter()
            .filter_map(|o| {
                let r = readers_excluding(self.domains, &[o]);
                (!r.is_empty()).then(|| self.curve(Part::Suite1, format!("owner {o}"), vec![o], r))
            })
            .collect()
    }

    /// Suite II: remote readers beside 0, ⅓, ⅔ and all of A's local readers.
    fn suite2(&self) -> Vec<Curve> {
        let mut out = Vec::new();
        let a = &self.domains[0];
        for o in dedup(vec![self.a_first[0], *self.a_first.last().unwrap()]) {
            let local: Vec<u32> = a.cpus.iter().copied().filter(|&x| x != o).collect();
            let remote: Vec<u32> = self.domains[1..]
                .iter()
                .flat_map(|d| d.cpus.iter().copied())
                .collect();
            let l = local.len();
            let mut fixed_counts = vec![0, l / 3, 2 * l / 3, l];
            fixed_counts.dedup();
            for f in fixed_counts {
                let n = remote.len().min(self.cap.saturating_sub(f));
                if n == 0 {
                    continue;
                }
                let mut readers = local[..f].to_vec();
                readers.extend(&remote[..n]);
                out.push(Curve {
                    part: Part::Suite2,
                    label: format!("owner {o}, {f} local"),
                    owners: vec![o],
                    readers,
                    counts: counts(n, f),
                    fixed: f,
                    stagger: false,
                    partitioned: false,
                });
            }
        }
        out
    }

    /// Suite III: batches of readers alternating domains, each batch size a curve.
    fn suite3(&self, batches: Option<&[usize]>) -> Vec<Curve> {
        let largest = self.domains.iter().map(|d| d.cpus.len()).max().unwrap_or(1);
        let sizes = batches.map(<[usize]>::to_vec).unwrap_or_else(|| {
            (0..)
                .map(|i| 1usize << i)
                .take_while(|&b| b <= largest)
                .collect()
        });
        let o = self.owner;
        sizes
            .into_iter()
            .map(|n| {
                let r = batched(self.domains, &[o], n);
                self.curve(Part::Suite3, format!("batch {n}"), vec![o], r)
            })
            .collect()
    }

    /// Suite IV with one owner: all readers at once, and staggered.
    fn suite4_one_owner(&self) -> Vec<Curve> {
        let o = self.owner;
        let one = |label: String| self.curve(Part::Suite4, label, vec![o], self.all.clone());
        let mut s = one(format!("owner {o}, staggered"));
        s.stagger = true;
        vec![one(format!("owner {o}")), s]
    }

    /// Suite IV with four owners, first and last of A, plain and staggered; or why not.
    fn suite4_four_owners(&self) -> std::result::Result<Vec<Curve>, String> {
        let a = &self.domains[0];
        if a.cpus.len() < 5 {
            return Err(format!(
                "four owners need four CPUs of domain A plus a reader there; A has {}",
                a.cpus.len()
            ));
        }
        let pool: &[u32] = if self.a_first.len() >= 4 {
            &self.a_first
        } else {
            &a.cpus
        };
        let k = pool.len();
        let mut out = Vec::new();
        for (where_, owners) in [
            ("first", pool[..4].to_vec()),
            ("last", pool[k - 4..].to_vec()),
        ] {
            let r = readers_excluding(self.domains, &owners);
            for stagger in [false, true] {
                let label = format!(
                    "4 owners ({where_} of A){}",
                    if stagger { ", staggered" } else { "" }
                );
                let mut x = self.curve(Part::Suite4, label, owners.clone(), r.clone());
                x.stagger = stagger;
                out.push(x);
            }
        }
        Ok(out)
    }
}

/// Domain A's CPUs, each core's first hardware thread (all of A's when none is).
fn first_threads(m: &Machine, a: &Ordered) -> Vec<u32> {
    let v: Vec<u32> = a
        .cpus
        .iter()
        .copied()
        .filter(|&x| m.pu(x).is_some_and(|p| p.smt_rank == 0))
        .collect();
    if v.is_empty() {
        a.cpus.clone()
    } else {
        v
    }
}

/// At most this many readers: `--readers`, checked against the CPUs there are.
fn reader_cap(c: &Config, all: usize) -> Result<usize> {
    match c.max_readers {
        Some(0) => Err(Error::bad("--readers", "0", format!("1 to {all}"))),
        Some(r) if r > all => Err(Error::bad(
            "--readers",
            r.to_string(),
            format!("1 to {all} (the CPUs other than the owner's)"),
        )),
        Some(r) => Ok(r),
        None => Ok(all),
    }
}

/// Every part's curves in order, and the parts not run here with why.
fn curves(b: &Builder, c: &Config) -> (Vec<Curve>, Vec<(Part, String)>) {
    let (mut curves, mut skipped) = (Vec::new(), Vec::new());
    for &part in &c.parts {
        match b.part(part, c.batches.as_deref()) {
            Ok(v) => curves.extend(v),
            Err(why) => skipped.push((part, why)),
        }
        if part == Part::Suite4 {
            match b.suite4_four_owners() {
                Ok(v) => curves.extend(v),
                Err(why) => skipped.push((part, why)),
            }
        }
    }
    (curves, skipped)
}

impl Plan {
    /// Build the plan; bad choices are user errors naming the value.
    pub fn new(m: &Machine, c: &Config) -> Result<Plan> {
        let level = c.level.unwrap_or_else(|| m.default_level());
        let first = crate::memory::first_cpu(m)?;
        let domains = domains::order(m, level, c.owner.unwrap_or(first))?;
        let a_first = first_threads(m, &domains[0]);
        // The seed's Suites III and IV keep the owner on the last cell of ring A.
        let owner = c
            .owner
            .unwrap_or(*a_first.last().expect("a domain has CPUs"));
        let all = readers_excluding(&domains, &[owner]);
        if all.is_empty() {
            return Err(Error::Unsatisfiable(format!(
                "the placement suite needs a reader CPU besides the owner {owner}; this topology has only {}",
                m.cpu_list()
            )));
        }
        let cap = reader_cap(c, all.len())?;
        let (line, unit) = (c.line.max(8), c.unit_lines.max(1));
        let lines = (c.size as usize / line) / unit * unit;
        if lines < unit * 2 {
            return Err(Error::bad(
                "--size",
                c.size.to_string(),
                format!("at least {} bytes (two units)", 2 * unit * line),
            ));
        }
        if let Some(bad) = c.batches.iter().flatten().find(|&&x| x == 0) {
            return Err(Error::bad(
                "--batches",
                bad.to_string(),
                "batch sizes of at least 1",
            ));
        }
        let b = Builder {
            level,
            domains: &domains,
            a_first,
            owner,
            all,
            cap,
        };
        let (curves, skipped) = curves(&b, c);
        Ok(Plan {
            level,
            owner,
            lines,
            exp0_lines: ((lines / cap) / unit * unit).max(unit),
            unit_lines: unit,
            line,
            curves,
            skipped,
            domains,
        })
    }

    /// Lines a point's owners write and its readers read: (total, per-reader lines).
    pub fn point_lines(&self, c: &Curve, readers: usize) -> (usize, usize) {
        if c.partitioned {
            (self.exp0_lines * readers, self.exp0_lines)
        } else {
            (self.lines, self.lines)
        }
    }

    /// Reader `i` of `k`: (first line, count, starting offset).
    pub fn reader_lines(&self, c: &Curve, i: usize, k: usize) -> (usize, usize, usize) {
        let (_, per) = self.point_lines(c, k);
        let first = if c.partitioned { i * per } else { 0 };
        let start = if c.stagger {
            (i * per / k) / self.unit_lines * self.unit_lines
        } else {
            0
        };
        (first, per, start)
    }

    /// Owner `j`'s lines: (first, count); the set is split evenly, the last takes the rest.
    pub fn owner_lines(&self, c: &Curve, j: usize, k: usize) -> (usize, usize) {
        let (total, _) = self.point_lines(c, k);
        let n = c.owners.len();
        let part = (total / n) / self.unit_lines * self.unit_lines;
        let first = j * part;
        let count = if j + 1 == n { total - first } else { part };
        (first, count)
    }

    /// Total number of points.
    pub fn points(&self) -> usize {
        self.curves.iter().map(|c| c.counts.len()).sum()
    }
}

#[cfg(test)]
mod tests;
