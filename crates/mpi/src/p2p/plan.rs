//! What `numalab mpi latency|bandwidth` measures: the options, the operations and the
//! plan of steps (OSU's iteration counts), and the plan as records and text.

use crate::error::{Error, Result};
use crate::job::{JobOptions, Launch};
use crate::kernels::{self, Data, Method};
use crate::sizes::{check_nonzero, check_pair, check_sizes};
use numalab_results::disturb::{Policy, Rules};
use numalab_results::settle::NoiseOptions;
use numalab_results::{Provenance, Record};
use serde::{Deserialize, Serialize};

/// Record kind of a point-to-point latency measurement.
pub const KIND_LATENCY: &str = "mpi-latency";
/// Record kind of a point-to-point bandwidth measurement.
pub const KIND_BANDWIDTH: &str = "mpi-bandwidth";
/// Record kind of a latency sweep's plan (`--dry-run`).
pub const KIND_LATENCY_PLAN: &str = "mpi-latency-plan";
/// Record kind of a bandwidth sweep's plan (`--dry-run`).
pub const KIND_BANDWIDTH_PLAN: &str = "mpi-bandwidth-plan";

/// Sizes from 1 B to 4 MiB in powers of two, as OSU's benchmarks sweep.
pub fn default_sizes() -> Vec<u64> {
    (0..=22).map(|k| 1u64 << k).collect()
}

/// Above this size OSU runs fewer iterations; so do we by default.
pub const LARGE: u64 = 8192;

/// Untimed windows that prime a pair for streaming, once per protocol (eager up to
/// [`LARGE`], rendezvous above): Open MPI's shared-memory transport sets a fresh
/// pair's resources up during its first several hundred messages (here windows 11-16
/// of a new job took 3-5x the steady time), which a size's own warm-up of 10 windows
/// does not cover for the first size; OSU's earlier sizes prime it for OSU.
pub const PRIME_WINDOWS: usize = 32;

/// Passes a step's timed iterations are split into first: each pass's median is one
/// figure of the step, and passes are added while their interval is wider than
/// `--tolerance` (5 passes: the interval is their range, 94 %).
pub const PASSES: usize = 5;

/// What to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// Blocking send/receive ping-pong: one-way latency (round trip / 2).
    PingPong,
    /// MPI_Get then MPI_Win_flush.
    Get,
    /// MPI_Put then MPI_Win_flush.
    Put,
    /// MPI_Accumulate (sum) then MPI_Win_flush.
    Acc,
    /// A window of non-blocking sends and an acknowledgement: bandwidth.
    Stream,
    /// Both ranks send a window to each other at once (OSU's osu_bibw): the sum of
    /// the two directions' bandwidth.
    BiStream,
}

impl Op {
    /// The name used on the command line and in records.
    pub fn name(self) -> &'static str {
        match self {
            Op::PingPong => "pingpong",
            Op::Get => "get",
            Op::Put => "put",
            Op::Acc => "acc",
            Op::Stream => "stream",
            Op::BiStream => "bistream",
        }
    }

    /// Whether the operation streams windows (a bandwidth figure) rather than timing
    /// single operations (a latency figure).
    pub fn streams(self) -> bool {
        matches!(self, Op::Stream | Op::BiStream)
    }

    /// Parse a latency operation.
    pub fn parse_latency(s: &str) -> Result<Op> {
        match s.trim() {
            "pingpong" => Ok(Op::PingPong),
            "get" => Ok(Op::Get),
            "put" => Ok(Op::Put),
            "acc" | "accumulate" => Ok(Op::Acc),
            o => Err(Error::Usage(format!(
                "invalid --ops item '{o}': one of pingpong, get, put, acc"
            ))),
        }
    }
}

/// The user's request (plain data, no clap).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Options {
    /// The job: ranks, hosts and where they run.
    #[serde(default)]
    pub job: JobOptions,
    /// Operations to time, in order.
    pub ops: Vec<Op>,
    /// Message sizes in bytes.
    pub sizes: Vec<u64>,
    /// The origin (timing) rank and its peer.
    pub pair: (usize, usize),
    /// Timed iterations per size (None: OSU's 10000 ≤ 8 KiB, 1000 above; bandwidth 100 / 20).
    pub iterations: Option<usize>,
    /// Untimed iterations first (None: OSU's 100 / 10; bandwidth 10 / 2).
    pub warmup: Option<usize>,
    /// Sends in flight per bandwidth sample (OSU: 64).
    pub window: usize,
    /// Fresh bytes every iteration (default) or the same bytes (OSU's way).
    #[serde(default)]
    pub data: Data,
    /// Latency iterations per timed sample (1: each timed; OSU times the whole loop).
    #[serde(default = "one")]
    pub batch: usize,
    /// What is done with a step disturbed on either rank of the pair.
    #[serde(default)]
    pub disturbed: Policy,
    /// `--noise-budget` and `--tolerance`: passes are added to a step while its
    /// figure's interval is wider than the tolerance, inside the budget.
    #[serde(default)]
    pub noise: NoiseOptions,
}

fn one() -> usize {
    1
}

impl Default for Options {
    /// `mpi latency`'s defaults (`mpi bandwidth` sets `ops` to stream).
    fn default() -> Self {
        Options {
            job: JobOptions::default(),
            ops: vec![Op::PingPong, Op::Get, Op::Put, Op::Acc],
            sizes: default_sizes(),
            pair: (0, 1),
            iterations: None,
            warmup: None,
            window: 64,
            data: Data::Fresh,
            batch: 1,
            disturbed: Policy::default(),
            noise: NoiseOptions::default(),
        }
    }
}

impl Options {
    /// Check what needs no machine: operations of one kind, sizes, counts, the method.
    pub fn check(&self) -> Result<()> {
        self.job.check()?;
        self.noise.goal().map_err(Error::Usage)?;
        if self.ops.is_empty() {
            return Err(Error::Usage(
                "invalid --ops '': one or more of pingpong, get, put, acc".into(),
            ));
        }
        if self.ops.iter().any(|o| o.streams()) && self.ops.len() > 1 {
            return Err(Error::Usage(format!(
                "invalid --ops '{}': a bandwidth sweep streams one way or both, alone",
                self.ops
                    .iter()
                    .map(|o| o.name())
                    .collect::<Vec<_>>()
                    .join(",")
            )));
        }
        if self.window == 0 || self.iterations == Some(0) {
            return Err(Error::Usage(
                "invalid --window or --iterations '0': at least 1".into(),
            ));
        }
        Method {
            data: self.data,
            batch: self.batch,
        }
        .check()?;
        let (a, b) = self.pair;
        if a == b {
            return Err(Error::Usage(format!(
                "invalid --pair '{a},{b}': two different ranks"
            )));
        }
        check_nonzero("--sizes", &self.sizes)
    }
}

/// One measurement of the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Operation.
    pub op: Op,
    /// Bytes per message.
    pub size: u64,
    /// Untimed iterations.
    pub warmup: usize,
    /// Timed iterations (samples) of the first passes.
    pub iterations: usize,
    /// Timed iterations of each pass: the first passes are [`PASSES`] of them.
    #[serde(default)]
    pub per_pass: usize,
}

impl Step {
    /// Untimed iterations before pass `pass` (0: the step's first): the warm-up, then
    /// a fifth of it before each later pass (its buffers are new).
    pub fn warmup_for(&self, pass: usize) -> usize {
        if pass == 0 {
            self.warmup
        } else {
            self.warmup.div_ceil(PASSES)
        }
    }
}

/// The resolved plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Ranks in the job.
    pub ranks: usize,
    /// Origin and peer.
    pub pair: (usize, usize),
    /// Sends per bandwidth sample.
    pub window: usize,
    /// Data and clock of the latency loops (the bandwidth loop takes the data only).
    pub method: Method,
    /// Measurements in order.
    pub steps: Vec<Step>,
    /// What is done with a disturbed step.
    pub rules: Rules,
}

impl Plan {
    /// Resolve the options for the job `launch` starts.
    pub fn resolve(launch: &Launch, o: &Options) -> Result<Plan> {
        Plan::for_ranks(launch.ranks(), o)
    }

    /// Resolve the options for a job of `ranks` ranks.
    fn for_ranks(ranks: usize, o: &Options) -> Result<Plan> {
        check_pair(o.pair, ranks)?;
        let stream = o.ops.iter().any(|op| op.streams());
        check_sizes("--sizes", &o.sizes, ranks, if stream { 2 } else { 3 })?;
        if stream {
            let largest = o.sizes.iter().max().copied().unwrap_or(0);
            crate::sizes::check_window(o.window, largest)?;
        }
        let method = Method {
            data: o.data,
            batch: o.batch,
        };
        method.check()?;
        if o.window == 0 || o.iterations == Some(0) {
            return Err(Error::Usage(
                "invalid --window or --iterations '0': at least 1".into(),
            ));
        }
        let mut steps = Vec::new();
        for &op in &o.ops {
            for &size in &o.sizes {
                let large = size > LARGE;
                let (it, wu) = match (op.streams(), large) {
                    (true, false) => (100, 10),
                    (true, true) => (20, 2),
                    (_, false) => (10_000, 100),
                    (_, true) => (1_000, 10),
                };
                let per = o.iterations.unwrap_or(it).div_ceil(PASSES);
                // Whole batches: a latency sample is `batch` iterations.
                let per_pass = if op.streams() {
                    per
                } else {
                    kernels::batches(per, o.batch).0
                };
                steps.push(Step {
                    op,
                    size,
                    iterations: per_pass * PASSES,
                    per_pass,
                    warmup: o.warmup.unwrap_or(wu),
                });
            }
        }
        Ok(Plan {
            ranks,
            pair: o.pair,
            window: o.window,
            method,
            steps,
            rules: Rules {
                policy: o.disturbed,
                settle: o.noise.goal().map_err(Error::Usage)?,
                ..Rules::default()
            },
        })
    }

    /// How long the job may take with `crowding` ranks per CPU, generously (see
    /// [`crate::sizes::transfer_estimate`]): a latency iteration is two messages, a
    /// bandwidth one a window and its reply. A step may take its settling budget (the
    /// user's `--noise-budget`, else its default from the first passes) and one more
    /// round of passes.
    pub fn estimate(&self, crowding: f64) -> std::time::Duration {
        self.steps
            .iter()
            .map(|s| {
                let per = match s.op {
                    Op::Stream => self.window as u64 + 1,
                    Op::BiStream => 2 * (self.window as u64 + 1),
                    _ => 2,
                };
                let warm = s.warmup + (PASSES - 1) * s.warmup_for(1);
                let n = (s.iterations + warm) as u64 * per;
                let first = crate::sizes::transfer_estimate(n, s.size, crowding);
                self.rules.settle.budget(first) + first / 2
            })
            .sum::<std::time::Duration>()
            + crate::sizes::JOB_START.mul_f64(crowding)
    }

    /// What a run is about to do, in two lines for stderr before the ranks start: the
    /// operations, the sizes and the measurements, and the estimate (`secs`, the
    /// bound's basis) of how long it may take.
    pub fn summary(&self, secs: f64) -> String {
        let mut ops: Vec<&str> = Vec::new();
        for st in &self.steps {
            if !ops.contains(&st.op.name()) {
                ops.push(st.op.name());
            }
        }
        let sizes: Vec<u64> = self.steps.iter().map(|s| s.size).collect();
        let lo = sizes.iter().min().copied().unwrap_or(0);
        let hi = sizes.iter().max().copied().unwrap_or(0);
        let per_op = self.steps.len() / ops.len().max(1);
        let n = self.steps.len();
        format!(
            "mpi plan: rank {} times, rank {} answers ({} ranks); {} × {per_op} size{} ({} to {}) = {n} measurement{}\nmpi plan: estimate at most about {}; --sizes, --ops and --iterations make it shorter, --dry-run shows every step\n",
            self.pair.0,
            self.pair.1,
            self.ranks,
            ops.join(", "),
            if per_op == 1 { "" } else { "s" },
            numalab_topo::fmt_bytes(lo),
            numalab_topo::fmt_bytes(hi),
            if n == 1 { "" } else { "s" },
            duration(secs),
        )
    }

    /// Whether the plan streams (a bandwidth sweep) rather than timing operations.
    pub fn streams(&self) -> bool {
        self.steps.iter().any(|s| s.op.streams())
    }

    /// The plan as one record (its `data` is the plan), what `--dry-run` emits.
    pub fn records(&self, prov: &Provenance) -> Vec<Record> {
        let kind = if self.streams() {
            KIND_BANDWIDTH_PLAN
        } else {
            KIND_LATENCY_PLAN
        };
        let mut r = Record::new(
            kind,
            "mpi plan",
            prov.clone(),
            serde_json::json!({ "ranks": self.ranks, "pair": self.pair }),
        );
        r.set_data(self);
        vec![r]
    }

    /// The plan as text, for --dry-run.
    pub fn text(&self) -> String {
        let mut s = format!(
            "mpi plan: {} ranks; rank {} times, rank {} answers; {}; {} data, {} per timed sample\n",
            self.ranks,
            self.pair.0,
            self.pair.1,
            numalab_results::words::count(self.steps.len() as u64, "measurement"),
            self.method.data.name(),
            self.method.batch
        );
        for st in &self.steps {
            s.push_str(&format!(
                "  {:<9} {:>9}  {} ({PASSES} passes of {}, more while unsettled) after {} warm-up{}\n",
                st.op.name(),
                numalab_topo::fmt_bytes(st.size),
                numalab_results::words::count(st.iterations as u64, "iteration"),
                st.per_pass,
                st.warmup,
                if st.op.streams() {
                    format!(", window {}", self.window)
                } else {
                    String::new()
                }
            ));
        }
        s
    }
}

/// Seconds as a person reads them: "45 s", "3 min 44 s".
fn duration(secs: f64) -> String {
    let s = secs.round() as u64;
    match s {
        0..=59 => format!("{s} s"),
        _ => format!("{} min {} s", s / 60, s % 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_names_operations_sizes_and_the_estimate() {
        let p = Plan::for_ranks(2, &Options::default()).unwrap();
        let s = p.summary(224.0);
        assert_eq!(s.lines().count(), 2, "{s}");
        assert!(s.contains("pingpong, get, put, acc × 23 sizes"), "{s}");
        assert!(s.contains("= 92 measurements"), "{s}");
        assert!(s.contains("3 min 44 s"), "{s}");
        assert!(duration(45.2) == "45 s");
    }

    pub(crate) fn opts() -> Options {
        Options {
            ops: vec![Op::PingPong, Op::Get],
            sizes: vec![8, 1 << 20],
            ..Options::default()
        }
    }

    #[test]
    fn the_plan_follows_osu_iteration_counts_and_checks_the_pair() {
        let p = Plan::for_ranks(2, &opts()).unwrap();
        assert_eq!(p.steps.len(), 4);
        assert_eq!((p.steps[0].iterations, p.steps[0].warmup), (10_000, 100));
        assert_eq!((p.steps[1].iterations, p.steps[1].warmup), (1_000, 10));
        assert_eq!((p.steps[0].per_pass, p.steps[1].per_pass), (2_000, 200));
        assert_eq!(
            (p.steps[0].warmup_for(0), p.steps[0].warmup_for(3)),
            (100, 20)
        );
        assert!(p
            .text()
            .contains("(5 passes of 2000, more while unsettled)"));
        let mut o = opts();
        o.pair = (0, 2);
        assert!(Plan::for_ranks(2, &o)
            .unwrap_err()
            .to_string()
            .contains("'0,2'"));
        o.pair = (1, 1);
        assert!(Plan::for_ranks(4, &o).is_err());
    }

    #[test]
    fn the_estimate_grows_with_the_work_and_counts_the_start_once() {
        let mut o = opts();
        o.ops = vec![Op::PingPong];
        o.sizes = vec![64 << 10];
        o.iterations = Some(1000);
        let small = Plan::for_ranks(2, &o).unwrap().estimate(1.0);
        o.iterations = Some(300_000);
        let big = Plan::for_ranks(2, &o).unwrap().estimate(1.0);
        let start = crate::sizes::JOB_START;
        assert!(
            small > start && big - start > (small - start) * 100,
            "{small:?} {big:?}"
        );
        let crowded = Plan::for_ranks(2, &o).unwrap().estimate(16.0);
        assert!(crowded > big * 16, "{crowded:?} {big:?}");
    }

    #[test]
    fn the_settling_goal_is_checked_and_its_budget_is_in_the_estimate() {
        let mut o = opts();
        o.noise.tolerance = Some("0".into());
        for e in [o.check().unwrap_err(), Plan::for_ranks(2, &o).unwrap_err()] {
            assert!(
                e.is_user_error() && e.to_string().starts_with("invalid --tolerance '0'"),
                "{e}"
            );
        }
        o.noise = NoiseOptions {
            noise_budget: Some("2s".into()),
            tolerance: Some("3".into()),
        };
        let p = Plan::for_ranks(2, &o).unwrap();
        assert_eq!(
            (p.rules.settle.budget_ms, p.rules.settle.tolerance_pct),
            (Some(2000.0), 3.0)
        );
        // Four steps, each may take its 2 s budget.
        assert!(
            p.estimate(1.0) > std::time::Duration::from_secs(8),
            "{:?}",
            p.estimate(1.0)
        );
    }

    #[test]
    fn a_batched_plan_times_whole_batches_of_the_same_data_only() {
        let mut o = opts();
        o.data = Data::Same;
        o.batch = 300;
        let p = Plan::for_ranks(2, &o).unwrap();
        // 10000 small / 1000 large iterations in 5 passes, each rounded up to whole
        // batches of 300.
        assert_eq!(
            (p.steps[0].per_pass, p.steps[0].iterations),
            (2_100, 10_500)
        );
        assert_eq!((p.steps[1].per_pass, p.steps[1].iterations), (300, 1_500));
        assert!(
            p.text().contains("same data, 300 per timed sample"),
            "{}",
            p.text()
        );
        o.data = Data::Fresh;
        let e = Plan::for_ranks(2, &o).unwrap_err();
        assert!(e.is_user_error() && e.to_string().contains("'300'"), "{e}");
    }

    #[test]
    fn zero_and_huge_sizes_are_usage_errors() {
        let mut o = opts();
        o.sizes = vec![0];
        assert!(Plan::for_ranks(2, &o)
            .unwrap_err()
            .to_string()
            .contains("'0'"));
        o.sizes = vec![1 << 50];
        let e = Plan::for_ranks(2, &o).unwrap_err();
        assert!(e.is_user_error(), "{e}");
        assert_eq!(default_sizes().len(), 23);
        assert_eq!(*default_sizes().last().unwrap(), 4 << 20);
    }

    #[test]
    fn options_are_checked_before_any_machine() {
        assert_eq!(Options::default().check(), Ok(()));
        let o = Options {
            window: 0,
            ..Options::default()
        };
        assert!(o.check().unwrap_err().to_string().contains("'0'"));
        let o = Options {
            ops: vec![Op::Stream, Op::Get],
            ..Options::default()
        };
        assert!(o.check().unwrap_err().to_string().contains("stream,get"));
        let o = Options {
            ops: vec![Op::BiStream],
            ..Options::default()
        };
        assert_eq!(o.check(), Ok(()));
        let p = Plan::for_ranks(2, &o).unwrap();
        assert!(p.streams() && p.text().contains("bistream"), "{}", p.text());
    }
}
