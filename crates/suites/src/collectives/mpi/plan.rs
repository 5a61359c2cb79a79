//! What `suite collectives --mpi` measures: the options, the plan's items and how each
//! is carried out (the seed's algorithm over RMA, or MPI's own collective).

use crate::collectives::{self, Kind};
use numalab_mpi::coll::Native;
use numalab_mpi::kernels::Data;
use numalab_mpi::{Error, JobOptions, Launch, Result};
use numalab_results::settle::{Goal, NoiseOptions};
use numalab_results::{Provenance, Record};
use numalab_topo::Machine;
use serde::{Deserialize, Serialize};

/// Record kind of the plan (`--dry-run`).
pub const KIND_PLAN: &str = "suite-collectives-mpi-plan";

/// Barriers timed per barrier measurement (the cost is divided by this).
pub const BARRIER_REPS: usize = collectives::BARRIER_REPS;

/// What the user chose.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Options {
    /// The job: ranks, hosts and where they run.
    #[serde(default)]
    pub job: JobOptions,
    /// Rank counts P (None: 2, 4, 8, … up to the job's size, and the size).
    pub ranks: Option<Vec<usize>>,
    /// Bytes per rank's block.
    pub sizes: Vec<u64>,
    /// Timed passes per measurement (after one untimed pass).
    pub iterations: usize,
    /// Only collectives whose name starts with one of these.
    pub only: Vec<String>,
    /// MPI's own collectives: fresh values every pass, or the same every pass (OSU's).
    pub data: Data,
    /// `--noise-budget` and `--tolerance`, as every experiment takes them: passes are
    /// added to an item while its figure is wider than the tolerance, inside the budget
    /// (rank 0 decides each round for every rank).
    #[serde(default)]
    pub noise: NoiseOptions,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            job: JobOptions::default(),
            ranks: None,
            sizes: vec![1 << 10, 4 << 10, 16 << 10, 64 << 10],
            iterations: 9,
            only: Vec::new(),
            data: Data::Fresh,
            noise: NoiseOptions::default(),
        }
    }
}

impl Options {
    /// Check what needs no machine: the job, sizes, passes and rank counts.
    pub fn check(&self) -> Result<()> {
        self.job.check()?;
        self.noise.goal().map_err(Error::Usage)?;
        numalab_mpi::sizes::check_nonzero("--sizes", &self.sizes)?;
        if self.iterations == 0 {
            return Err(Error::Usage(
                "invalid --iterations '0': at least 1 timed pass".into(),
            ));
        }
        if let Some(p) = self.ranks.iter().flatten().find(|&&p| p < 2) {
            return Err(Error::Usage(format!(
                "invalid --threads item '{p}': with --mpi, a rank count of at least 2"
            )));
        }
        Ok(())
    }
}

/// How an item is carried out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum How {
    /// The seed's algorithm (RMA gets and barriers; the barrier as point-to-point).
    Seed(Kind),
    /// MPI's own collective.
    Mpi(Native),
}

/// One measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Item {
    /// What runs.
    pub how: How,
    /// Ranks.
    pub p: usize,
    /// Lines per block (0 for barriers).
    pub lines: usize,
}

impl Item {
    /// The collective's family name (as the shared-memory suite names it).
    pub fn collective(&self) -> String {
        match self.how {
            How::Seed(Kind::Barrier(_)) | How::Mpi(Native::Barrier) => "barrier".into(),
            How::Seed(k) => k.name(),
            How::Mpi(n) => family(n).into(),
        }
    }

    /// The implementation's name.
    pub fn implementation(&self) -> String {
        match self.how {
            How::Seed(Kind::Barrier(_)) => "seed: dissemination, point-to-point".into(),
            How::Seed(_) => "seed algorithm: MPI_Get + flush + barrier".into(),
            How::Mpi(n) => n.name(),
        }
    }
}

fn family(n: Native) -> &'static str {
    match n {
        Native::Barrier => "barrier",
        Native::Bcast => "broadcast-same",
        Native::Scatter => "broadcast-distinct",
        Native::Shift(_) => "shift",
        Native::Gather => "gather",
        Native::Allgather => "allgather",
        Native::AllreduceSum => "reduce-sum",
        Native::AllreduceMax => "reduce-max",
    }
}

/// MPI's collective doing the same job as the seed's algorithm.
pub fn native_for(k: Kind) -> Native {
    use numalab_probe::script::Op;
    match k {
        Kind::Barrier(_) => Native::Barrier,
        Kind::BroadcastSame => Native::Bcast,
        Kind::BroadcastDistinct => Native::Scatter,
        Kind::Shift(d) => Native::Shift(d),
        Kind::GatherLinear | Kind::GatherTree => Native::Gather,
        Kind::AllgatherLinear | Kind::AllgatherTree | Kind::AllgatherRing => Native::Allgather,
        Kind::ReduceLinear(Op::Sum) | Kind::ReduceTree(Op::Sum) => Native::AllreduceSum,
        Kind::ReduceLinear(Op::Max) | Kind::ReduceTree(Op::Max) => Native::AllreduceMax,
    }
}

/// The plan.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    /// Ranks in the job.
    pub ranks: usize,
    /// Rank counts measured.
    pub ps: Vec<usize>,
    /// Lines per block, per size.
    pub block_lines: Vec<usize>,
    /// Bytes per line.
    pub line: usize,
    /// Timed passes.
    pub iterations: usize,
    /// Data of MPI's own collectives.
    pub data: Data,
    /// What each figure settles to (`--tolerance`, inside `--noise-budget`).
    #[serde(default)]
    pub goal: Goal,
    /// Measurements in order.
    pub items: Vec<Item>,
}

fn wanted(only: &[String], name: &str) -> bool {
    only.is_empty() || only.iter().any(|o| name.starts_with(o.as_str()))
}

/// Whole lines per block, as the threads form counts them: a block smaller than a line
/// is refused there, so it is here, rather than quietly grown to one.
fn block_lines(sizes: &[u64], line: usize) -> Result<Vec<usize>> {
    if let Some(s) = sizes.iter().find(|&&s| (s as usize) < line) {
        return Err(Error::Usage(format!(
            "invalid --sizes '{s}': block sizes of at least one {line}-byte line"
        )));
    }
    let mut v: Vec<usize> = sizes.iter().map(|&s| s as usize / line).collect();
    v.dedup();
    Ok(v)
}

impl Plan {
    /// Resolve the options for the job `launch` starts, blocks counted in `m`'s lines.
    pub fn resolve(m: &Machine, launch: &Launch, o: &Options) -> Result<Plan> {
        let line = m.caches.first().and_then(|x| x.line_bytes).unwrap_or(64) as usize;
        let plan = Plan::for_ranks(launch.ranks(), line, o)?;
        if plan.items.is_empty() {
            return Err(Error::Usage(
                "invalid --only: no collective of the MPI suite matches".into(),
            ));
        }
        Ok(plan)
    }

    /// Resolve for a job of `ranks` ranks and lines of `line` bytes.
    fn for_ranks(ranks: usize, line: usize, o: &Options) -> Result<Plan> {
        // Each rank's window holds 2P + 1 blocks, and MPI's own gathers receive P more.
        numalab_mpi::sizes::check_sizes("--sizes", &o.sizes, ranks, 3 * ranks as u64 + 1)?;
        let ps = match &o.ranks {
            Some(v) => {
                if let Some(bad) = v.iter().find(|&&p| p < 2 || p > ranks) {
                    return Err(Error::Usage(format!(
                        "invalid --threads item '{bad}': with --mpi, a rank count from 2 to {ranks} (the job's ranks)"
                    )));
                }
                let mut v = v.clone();
                v.sort_unstable();
                v.dedup();
                v
            }
            None => {
                let mut v: Vec<usize> = (1..)
                    .map(|i| 1usize << i)
                    .take_while(|&p| p <= ranks)
                    .collect();
                v.push(ranks);
                v.dedup();
                v
            }
        };
        let line = line.max(8);
        let block_lines = block_lines(&o.sizes, line)?;
        let mut items = Vec::new();
        for &p in &ps {
            if wanted(&o.only, "barrier") {
                items.push(Item {
                    how: How::Seed(Kind::Barrier(numalab_probe::sync::SyncKind::Dissemination)),
                    p,
                    lines: 0,
                });
                items.push(Item {
                    how: How::Mpi(Native::Barrier),
                    p,
                    lines: 0,
                });
            }
            for &n in &block_lines {
                let mut natives: Vec<Native> = Vec::new();
                for k in collectives::kinds(p, &[]) {
                    if !wanted(&o.only, &k.name()) {
                        continue;
                    }
                    items.push(Item {
                        how: How::Seed(k),
                        p,
                        lines: n,
                    });
                    let nat = native_for(k);
                    if !natives.contains(&nat) {
                        natives.push(nat);
                    }
                }
                items.extend(natives.into_iter().map(|nat| Item {
                    how: How::Mpi(nat),
                    p,
                    lines: n,
                }));
            }
        }
        Ok(Plan {
            ranks,
            ps,
            block_lines,
            line,
            iterations: o.iterations,
            data: o.data,
            goal: o.noise.goal().map_err(Error::Usage)?,
            items,
        })
    }

    /// How long the job may take with `crowding` ranks per CPU, generously: each
    /// item's passes as 2·P messages of its block, and a quarter second of setup per
    /// item (a default run took 0.2 s an item on a 2-vCPU VM).
    pub fn estimate(&self, crowding: f64) -> std::time::Duration {
        let per_item = std::time::Duration::from_millis(250).mul_f64(crowding.max(1.0));
        self.items
            .iter()
            .map(|it| {
                let messages = (self.iterations as u64 + 1) * 2 * it.p as u64;
                let bytes = (it.lines * self.line) as u64;
                numalab_mpi::sizes::transfer_estimate(messages, bytes, crowding) + per_item
            })
            .sum::<std::time::Duration>()
            + numalab_mpi::sizes::JOB_START.mul_f64(crowding.max(1.0))
    }

    /// The plan as one record (its `data` is the plan), what `--dry-run` emits.
    pub fn records(&self, prov: &Provenance) -> Vec<Record> {
        let mut r = Record::new(
            KIND_PLAN,
            "collectives --mpi plan",
            prov.clone(),
            serde_json::json!({ "ranks": self.ranks, "measurements": self.items.len() }),
        );
        r.set_data(self);
        vec![r]
    }

    /// The plan as text, for --dry-run.
    pub fn text(&self) -> String {
        format!(
            "collectives --mpi plan: {} ranks; P = {}; blocks of {} {} of {} B; {} of {} (seed algorithm and MPI's own, side by side)\n",
            self.ranks, list(&self.ps), list(&self.block_lines), numalab_results::words::noun(self.block_lines.iter().max().map_or(0, |&n| n as u64), "line"), self.line, numalab_results::words::count(self.items.len() as u64, "measurement"), numalab_results::words::passes(self.iterations)
        )
    }
}

/// Counts as a list for the plan's text: "2, 4" (no Debug brackets).
fn list(v: &[usize]) -> String {
    v.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> Options {
        Options {
            job: JobOptions::default(),
            ranks: None,
            sizes: vec![64, 4096],
            iterations: 3,
            only: vec![],
            data: Data::Fresh,
            noise: NoiseOptions::default(),
        }
    }

    #[test]
    fn the_plan_pairs_every_seed_algorithm_with_one_mpi_collective() {
        let p = Plan::for_ranks(4, 64, &opts()).unwrap();
        assert_eq!(p.ps, [2, 4]);
        assert_eq!(p.block_lines, [1, 64]);
        for &pp in &p.ps {
            for &n in &p.block_lines {
                let seeds: Vec<Kind> = p
                    .items
                    .iter()
                    .filter(|i| i.p == pp && i.lines == n)
                    .filter_map(|i| match i.how {
                        How::Seed(k) => Some(k),
                        _ => None,
                    })
                    .collect();
                let natives: Vec<Native> = p
                    .items
                    .iter()
                    .filter(|i| i.p == pp && i.lines == n)
                    .filter_map(|i| match i.how {
                        How::Mpi(x) => Some(x),
                        _ => None,
                    })
                    .collect();
                for k in &seeds {
                    assert!(
                        natives.contains(&native_for(*k)),
                        "{} has no MPI counterpart",
                        k.name()
                    );
                }
                let mut d = natives.clone();
                d.dedup();
                assert_eq!(d.len(), natives.len(), "each MPI collective once");
            }
        }
        let mut o = opts();
        o.ranks = Some(vec![1]);
        assert!(Plan::for_ranks(4, 64, &o).unwrap_err().is_user_error());
        o.ranks = Some(vec![8]);
        assert!(Plan::for_ranks(4, 64, &o).is_err());
    }

    #[test]
    fn the_plan_text_lists_counts_without_brackets_and_counts_one_in_the_singular() {
        let t = Plan::for_ranks(4, 64, &opts()).unwrap().text();
        assert!(t.contains("P = 2, 4; blocks of 1, 64 lines of 64 B"), "{t}");
        assert!(t.contains("measurements of 3 passes"), "{t}");
        assert!(!t.contains('['), "{t}");
        let mut o = opts();
        o.sizes = vec![64];
        o.iterations = 1;
        let t = Plan::for_ranks(2, 64, &o).unwrap().text();
        assert!(t.contains("P = 2; blocks of 1 line of 64 B"), "{t}");
        assert!(t.contains(" of 1 pass "), "{t}");
    }
}
