//! What `suite earth --mpi` measures: the options, and the plan's rows (part,
//! operation, local or remote rank, sequential or pipelined).

use numalab_mpi::remote::Mode;
use numalab_mpi::{Error, JobOptions, Launch, Result};
use numalab_results::{Provenance, Record};
use serde::{Deserialize, Serialize};

/// Record kind of the plan (`--dry-run`).
pub const KIND_PLAN: &str = "suite-earth-mpi-plan";

/// The seed's Table 1 (EARTH-MANNA, ns): operation, sequential local, sequential
/// remote, pipelined local, pipelined remote.
pub const SEED_TABLE1: [(&str, [f64; 4]); 4] = [
    ("spawn thread", [2354.0, 4286.0, 2003.0, 1570.0]),
    ("load word", [2648.0, 7109.0, 1137.0, 1908.0]),
    ("store word", [2560.0, 6458.0, 1060.0, 1749.0]),
    ("call function", [5296.0, 9216.0, 3188.0, 2792.0]),
];

/// The user's request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Options {
    /// The job: ranks, hosts and where they run.
    #[serde(default)]
    pub job: JobOptions,
    /// Issuer and server ranks.
    pub pair: (usize, usize),
    /// Operations per pass.
    pub ops_per_pass: usize,
    /// Timed passes.
    pub iterations: usize,
    /// Block-move sizes in bytes.
    pub blocks: Vec<u64>,
    /// Outstanding-get counts G.
    pub groups: Vec<usize>,
    /// Parts: "ops", "split", "breakdown", "mask", "mlp".
    pub parts: Vec<String>,
    /// Loop 7 iterations.
    pub loop_n: usize,
    /// Loop 7 chunk sizes T.
    pub chunks: Vec<usize>,
    /// Loop 7 communication multipliers m.
    pub multipliers: Vec<usize>,
}

impl Default for Options {
    /// Every part the MPI form has, EARTH's block sizes, `suite earth`'s lists.
    fn default() -> Self {
        Options {
            job: JobOptions::default(),
            pair: (0, 1),
            ops_per_pass: 512,
            iterations: 5,
            blocks: vec![64, 4096, 65536, 1 << 20],
            groups: vec![1, 2, 4, 8, 12, 16, 24, 32, 48, 64],
            parts: PARTS.iter().map(|p| p.to_string()).collect(),
            loop_n: 4096,
            chunks: (0..=12).map(|i| 1 << i).collect(),
            multipliers: vec![1, 2, 4, 8, 16],
        }
    }
}

impl Options {
    /// Check what needs no machine: parts, counts, block sizes and groups.
    pub fn check(&self) -> Result<()> {
        self.job.check()?;
        check_options(self)
    }
}

/// One row of the plan.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    /// Part of the suite.
    pub part: String,
    /// Operation.
    pub op: String,
    /// "local rank" or "remote rank".
    pub place: String,
    /// Sequential or pipelined.
    pub mode: Mode,
    /// Bytes moved (RMA rows).
    pub bytes: Option<u64>,
    /// G for MLP rows.
    pub g: Option<usize>,
}

/// The plan.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    /// The options.
    pub options: Options,
    /// Rows in order.
    pub rows: Vec<Row>,
}

/// The parts the MPI form has.
pub const PARTS: [&str; 5] = ["ops", "split", "breakdown", "mask", "mlp"];

impl Plan {
    /// Resolve the options for the job `launch` starts.
    pub fn resolve(launch: &Launch, o: &Options) -> Result<Plan> {
        Plan::for_ranks(launch.ranks(), o)
    }

    /// Resolve for a job of `ranks` ranks.
    fn for_ranks(ranks: usize, o: &Options) -> Result<Plan> {
        let (a, b) = o.pair;
        if a >= ranks || b >= ranks || a == b {
            return Err(Error::Usage(format!(
                "invalid --pair '{a},{b}': two different ranks below {ranks}"
            )));
        }
        check_options(o)?;
        let rows = rows(o);
        Ok(Plan {
            options: o.clone(),
            rows,
        })
    }

    /// How long the job may take with `crowding` ranks per CPU, generously: every row's
    /// passes as messages of a line (G chains each for MLP), Loop 7's chunks at every
    /// multiplier as one message per element, and a quarter second of setup per row.
    pub fn estimate(&self, crowding: f64) -> std::time::Duration {
        let o = &self.options;
        let g = o.groups.iter().copied().max().unwrap_or(1) as u64;
        let rows = self.rows.len() as u64 * o.ops_per_pass as u64 * g;
        let mask = (o.chunks.len() * o.multipliers.iter().sum::<usize>() * o.loop_n) as u64;
        let messages = o.iterations as u64 * (rows + mask);
        let setup = std::time::Duration::from_millis(250) * self.rows.len() as u32;
        numalab_mpi::sizes::transfer_estimate(messages, 64, crowding)
            + (setup + numalab_mpi::sizes::JOB_START).mul_f64(crowding.max(1.0))
    }

    /// The plan as one record (its `data` is the plan), what `--dry-run` emits.
    pub fn records(&self, prov: &Provenance) -> Vec<Record> {
        let mut r = Record::new(
            KIND_PLAN,
            "earth --mpi plan",
            prov.clone(),
            serde_json::json!({ "pair": self.options.pair, "rows": self.rows.len() }),
        );
        r.set_data(self);
        vec![r]
    }

    /// The plan as text, for --dry-run.
    pub fn text(&self) -> String {
        let mut s = format!(
            "earth --mpi plan: rank {} issues, rank {} serves; {} per pass, {}\n",
            self.options.pair.0,
            self.options.pair.1,
            numalab_results::words::count(self.options.ops_per_pass as u64, "operation"),
            numalab_results::words::passes(self.options.iterations)
        );
        for r in &self.rows {
            s.push_str(&format!(
                "  {:<6} {:<18} {:<12} {:<10}{}{}\n",
                r.part,
                r.op,
                r.place,
                format!("{:?}", r.mode).to_lowercase(),
                r.bytes.map(|b| format!(" {b} B")).unwrap_or_default(),
                r.g.map(|g| format!(" G={g}")).unwrap_or_default()
            ));
        }
        s
    }
}

/// Block sizes: at least 1 byte, at most 64 MiB (one MPI message, a window per row).
/// One row of the plan.
fn row(part: &str, op: &str, place: &str, mode: Mode, bytes: Option<u64>, g: Option<usize>) -> Row {
    Row {
        part: part.into(),
        op: op.into(),
        place: place.into(),
        mode,
        bytes,
        g,
    }
}

/// Table 1's rows: each operation sequential and pipelined, local and remote.
fn ops_rows(blocks: &[u64]) -> Vec<Row> {
    let mut rows = Vec::new();
    for mode in [Mode::Sequential, Mode::Pipelined] {
        for place in ["local rank", "remote rank"] {
            rows.push(row("ops", "load word", place, mode, Some(8), None));
            rows.push(row("ops", "store word", place, mode, Some(8), None));
        }
        rows.push(row("ops", "call function", "remote rank", mode, None, None));
        rows.push(row("ops", "spawn thread", "remote rank", mode, None, None));
        for &bb in blocks {
            let op = "block move (get)";
            rows.push(row("ops", op, "remote rank", mode, Some(bb), None));
        }
    }
    rows
}

/// The rows `o` asks for, in order.
fn rows(o: &Options) -> Vec<Row> {
    let has = |p: &str| o.parts.iter().any(|x| x == p);
    let (remote, seq, pipe) = ("remote rank", Mode::Sequential, Mode::Pipelined);
    let mut rows = Vec::new();
    if has("ops") {
        rows.extend(ops_rows(&o.blocks));
    }
    if has("split") {
        rows.push(row("split", "call function", remote, seq, None, None));
        rows.push(row("split", "call function", remote, pipe, None, None));
    }
    if has("breakdown") {
        rows.push(row("breakdown", "remote load", remote, seq, Some(8), None));
    }
    if has("mask") {
        rows.push(row("mask", "loop 7", remote, pipe, None, None));
    }
    if has("mlp") {
        for &g in &o.groups {
            rows.push(row(
                "mlp",
                "outstanding gets",
                remote,
                pipe,
                Some(8),
                Some(g),
            ));
        }
    }
    rows
}

/// The checks that need no job: known parts, at least one pass, groups, blocks.
fn check_options(o: &Options) -> Result<()> {
    if let Some(p) = o.parts.iter().find(|p| !PARTS.contains(&p.as_str())) {
        return Err(Error::Usage(format!(
            "invalid --parts item '{p}': with --mpi one of {}",
            PARTS.join(", ")
        )));
    }
    // Two ranks hold the arrays (the worker's, and u at its peer).
    numalab_probe::loop7::check_memory(o.loop_n, 2).map_err(Error::Usage)?;
    if o.ops_per_pass == 0 || o.iterations == 0 {
        return Err(Error::Usage("invalid --iterations '0': at least 1".into()));
    }
    if let Some(g) = o.groups.iter().find(|&&g| g == 0 || g > 1024) {
        return Err(Error::Usage(format!(
            "invalid --groups item '{g}': 1 to 1024 outstanding gets"
        )));
    }
    check_blocks(&o.blocks)?;
    Ok(())
}

fn check_blocks(blocks: &[u64]) -> Result<()> {
    match blocks.iter().find(|&&b| b == 0 || b > (64 << 20)) {
        Some(b) => Err(Error::Usage(format!(
            "invalid --blocks item '{b}': 1 B to 64 MiB"
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> Options {
        Options {
            job: JobOptions::default(),
            pair: (0, 1),
            ops_per_pass: 64,
            iterations: 3,
            blocks: vec![4096],
            groups: vec![1, 8],
            parts: vec!["ops".into(), "split".into(), "mask".into(), "mlp".into()],
            loop_n: 64,
            chunks: vec![8],
            multipliers: vec![1],
        }
    }

    #[test]
    fn the_plan_has_every_table_1_row_both_ways_and_rejects_bad_input() {
        let p = Plan::for_ranks(2, &opts()).unwrap();
        for op in ["load word", "store word", "call function", "spawn thread"] {
            for m in [Mode::Sequential, Mode::Pipelined] {
                assert!(
                    p.rows.iter().any(|r| r.part == "ops"
                        && r.op == op
                        && r.mode == m
                        && r.place == "remote rank"),
                    "{op}"
                );
            }
        }
        assert_eq!(p.rows.iter().filter(|r| r.part == "mlp").count(), 2);
        let mut o = opts();
        o.parts = vec!["breakdown".into()];
        let b = Plan::for_ranks(2, &o).unwrap();
        assert_eq!(b.rows.len(), 1);
        assert_eq!(b.rows[0].op, "remote load");
        let mut o = opts();
        o.parts = vec!["switch".into()];
        assert!(Plan::for_ranks(2, &o)
            .unwrap_err()
            .to_string()
            .contains("'switch'"));
        let mut o = opts();
        o.blocks = vec![0];
        assert!(Plan::for_ranks(2, &o).is_err());
        let mut o = opts();
        o.pair = (0, 2);
        assert!(Plan::for_ranks(2, &o).unwrap_err().is_user_error());
    }
}
