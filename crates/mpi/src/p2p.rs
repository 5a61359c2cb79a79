//! `numalab mpi latency|bandwidth`: point-to-point and one-sided costs between two
//! ranks over a size sweep, in the project's shape: [`Options`] → [`Plan::resolve`]
//! (what `--dry-run` prints) → [`measure`] → records.

use crate::error::{Error, Result};
use crate::kernels::{self, Data, Method, RmaOp};
use crate::place::Relation;
use crate::world::World;
use numalab_probe::Timer;
use numalab_results::{Provenance, Record};
use numalab_topo::Host;
use serde::{Deserialize, Serialize};
use serde_json::json;

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
        }
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
}

fn one() -> usize {
    1
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
    /// Timed iterations (samples).
    pub iterations: usize,
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
}

/// Check sizes: none 0, none beyond what memory holds for every rank's buffers;
/// errors name `flag` (`--sizes`, or `--size` for a command that takes one).
pub fn check_sizes(flag: &str, sizes: &[u64], ranks: usize, buffers_per_rank: u64) -> Result<()> {
    if sizes.is_empty() {
        return Err(Error::Usage(format!(
            "invalid {flag} '': give at least one size"
        )));
    }
    if sizes.contains(&0) {
        return Err(Error::Usage(format!(
            "invalid {flag} item '0': sizes are at least 1 byte"
        )));
    }
    if let Some((_, avail)) = numalab_topo::sysfs::system_memory() {
        let max = sizes.iter().max().copied().unwrap_or(0);
        let need = max
            .saturating_mul(buffers_per_rank)
            .saturating_mul(ranks as u64);
        if need > avail / 2 {
            return Err(Error::Usage(format!(
                "invalid {flag} item '{}': {ranks} ranks would need {} of buffers, more than half of the {} available",
                numalab_topo::fmt_bytes(max),
                numalab_topo::fmt_bytes(need),
                numalab_topo::fmt_bytes(avail)
            )));
        }
    }
    if let Some(s) = sizes.iter().find(|&&s| s > i32::MAX as u64) {
        return Err(Error::Usage(format!(
            "invalid {flag} item '{}': one MPI message holds at most 2147483647 bytes (2 GiB - 1)",
            numalab_topo::fmt_bytes(*s)
        )));
    }
    Ok(())
}

/// Check a pair of ranks against the job's size.
pub fn check_pair(pair: (usize, usize), ranks: usize) -> Result<()> {
    let (a, b) = pair;
    if a >= ranks || b >= ranks || a == b {
        return Err(Error::Usage(format!(
            "invalid --pair '{a},{b}': two different ranks below {ranks}"
        )));
    }
    Ok(())
}

impl Plan {
    /// Resolve the options for a job of `ranks` ranks.
    pub fn resolve(ranks: usize, o: &Options) -> Result<Plan> {
        check_pair(o.pair, ranks)?;
        let stream = o.ops.contains(&Op::Stream);
        check_sizes("--sizes", &o.sizes, ranks, if stream { 2 } else { 3 })?;
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
                let (it, wu) = match (op, large) {
                    (Op::Stream, false) => (100, 10),
                    (Op::Stream, true) => (20, 2),
                    (_, false) => (10_000, 100),
                    (_, true) => (1_000, 10),
                };
                let iterations = o.iterations.unwrap_or(it);
                steps.push(Step {
                    op,
                    size,
                    // Whole batches: a latency sample is `batch` iterations.
                    iterations: if op == Op::Stream {
                        iterations
                    } else {
                        kernels::batches(iterations, o.batch).0
                    },
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
        })
    }

    /// The plan as text, for --dry-run.
    pub fn text(&self) -> String {
        let mut s = format!(
            "mpi plan: {} ranks; rank {} times, rank {} answers; {} measurements; {} data, {} per timed sample\n",
            self.ranks,
            self.pair.0,
            self.pair.1,
            self.steps.len(),
            self.method.data.name(),
            self.method.batch
        );
        for st in &self.steps {
            s.push_str(&format!(
                "  {:<9} {:>9}  {} iterations after {} warm-up{}\n",
                st.op.name(),
                numalab_topo::fmt_bytes(st.size),
                st.iterations,
                st.warmup,
                if st.op == Op::Stream {
                    format!(", window {}", self.window)
                } else {
                    String::new()
                }
            ));
        }
        s
    }
}

/// Run the plan (collective: every rank calls it). Rank 0 gets every record.
pub fn measure(
    world: &World,
    host: &Host,
    plan: &Plan,
    mut progress: impl FnMut(usize, usize),
) -> Result<Option<Vec<Record>>> {
    let comm = world.comm();
    let timer = Timer::best();
    let prov = Provenance::collect(&host.machine.summary(), &host.machine.source);
    let (a, b) = plan.pair;
    let relation = Relation::between(&world.placements[a], &world.placements[b]);
    let mut mine = Vec::new();
    // Whether the eager and the rendezvous protocols have been primed for streaming.
    let mut primed = [false; 2];
    for (i, st) in plan.steps.iter().enumerate() {
        if world.is_root() {
            progress(i, plan.steps.len());
        }
        let size = st.size as usize;
        if st.op == Op::Stream && !primed[usize::from(st.size > LARGE)] {
            primed[usize::from(st.size > LARGE)] = true;
            let data = plan.method.data;
            kernels::stream(
                comm,
                &timer,
                plan.pair,
                size,
                plan.window,
                PRIME_WINDOWS,
                0,
                data,
            )?;
        }
        let samples = match st.op {
            Op::PingPong => kernels::ping_pong(
                comm,
                &timer,
                plan.pair,
                size,
                st.warmup,
                st.iterations,
                plan.method,
            )?,
            Op::Stream => kernels::stream(
                comm,
                &timer,
                plan.pair,
                size,
                plan.window,
                st.warmup,
                st.iterations,
                plan.method.data,
            )?,
            Op::Get => kernels::rma(
                comm,
                &timer,
                plan.pair,
                RmaOp::Get,
                size,
                st.warmup,
                st.iterations,
                plan.method,
            )?,
            Op::Put => kernels::rma(
                comm,
                &timer,
                plan.pair,
                RmaOp::Put,
                size,
                st.warmup,
                st.iterations,
                plan.method,
            )?,
            Op::Acc => kernels::rma(
                comm,
                &timer,
                plan.pair,
                RmaOp::Acc,
                size,
                st.warmup,
                st.iterations,
                plan.method,
            )?,
        };
        let Some(samples) = samples else { continue };
        let (kind, metric, unit) = if st.op == Op::Stream {
            (crate::present::KIND_BANDWIDTH, "bandwidth", "GB/s")
        } else {
            (crate::present::KIND_LATENCY, "latency", "ns")
        };
        let mut r = Record::new(
            kind,
            &format!("{} {} B rank {a}→{b}", st.op.name(), st.size),
            prov.clone(),
            json!({
                "op": st.op.name(), "size": st.size, "from_rank": a, "to_rank": b,
                "relation": relation.name(), "iterations": st.iterations, "warmup": st.warmup,
                "window": if st.op == Op::Stream { Some(plan.window) } else { None },
                "method": method(st.op, plan.method),
                "data": plan.method.data.name(),
                "batch": if st.op == Op::Stream { None } else { Some(plan.method.batch) },
                // Every window moves the same bytes, so bytes over the summed window
                // times (OSU's and IMB's figure) is the samples' harmonic mean; their
                // plain mean weighs a fast window as much as a preempted one.
                "aggregate_gb_s": (st.op == Op::Stream).then(|| harmonic_mean(&samples)),
                "timer": timer,
            }),
        );
        r.placement = Some(world.placement_value(&[a, b]));
        r.add_samples(metric, unit, &samples);
        r.warnings = prov.warnings();
        warn_shared(world, &[a, b], &mut r);
        r.unavailable.extend(world.threading_unavailable());
        mine.push(r);
    }
    world.gather_records(&mine)
}

/// n / Σ 1/x over the positive samples (None when there is none).
pub fn harmonic_mean(xs: &[f64]) -> Option<f64> {
    let pos: Vec<f64> = xs.iter().copied().filter(|&x| x > 0.0).collect();
    (!pos.is_empty()).then(|| pos.len() as f64 / pos.iter().map(|x| 1.0 / x).sum::<f64>())
}

/// Warn when measured ranks share a CPU (their timings include waiting for it).
pub fn warn_shared(world: &World, ranks: &[usize], r: &mut Record) {
    for &k in ranks {
        let p = &world.placements[k];
        if p.shares_cpu {
            r.warnings.push(format!(
                "rank {k} shares CPU {} with another rank: timings include waiting for the CPU",
                p.cpu
            ));
        }
    }
}

fn method(op: Op, how: Method) -> String {
    let each = if how.batch == 1 {
        "timed each".to_string()
    } else {
        format!("timed in batches of {}", how.batch)
    };
    let data = match how.data {
        Data::Fresh => "new bytes written before each iteration, outside the timer",
        Data::Same => "the same bytes every iteration",
    };
    let what = match op {
        Op::PingPong => format!("MPI_Send + MPI_Recv round trip, halved; {each}"),
        Op::Stream => {
            format!("window of MPI_Isend, MPI_Waitall, 4-byte acknowledgement; each window timed; the pair primed first with {PRIME_WINDOWS} untimed windows per protocol")
        }
        Op::Get => format!("MPI_Win_lock(shared) once; MPI_Get + MPI_Win_flush {each}"),
        Op::Put => format!("MPI_Win_lock(shared) once; MPI_Put + MPI_Win_flush {each}"),
        Op::Acc => format!(
            "MPI_Win_lock(shared) once; MPI_Accumulate(MPI_SUM, uint8) + MPI_Win_flush {each}"
        ),
    };
    format!("{what}; {data}; bytes checked outside the timer")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> Options {
        Options {
            ops: vec![Op::PingPong, Op::Get],
            sizes: vec![8, 1 << 20],
            pair: (0, 1),
            iterations: None,
            warmup: None,
            window: 64,
            data: Data::Fresh,
            batch: 1,
        }
    }

    #[test]
    fn the_plan_follows_osu_iteration_counts_and_checks_the_pair() {
        let p = Plan::resolve(2, &opts()).unwrap();
        assert_eq!(p.steps.len(), 4);
        assert_eq!((p.steps[0].iterations, p.steps[0].warmup), (10_000, 100));
        assert_eq!((p.steps[1].iterations, p.steps[1].warmup), (1_000, 10));
        assert!(p.text().contains("pingpong"));
        let mut o = opts();
        o.pair = (0, 2);
        assert!(Plan::resolve(2, &o)
            .unwrap_err()
            .to_string()
            .contains("'0,2'"));
        o.pair = (1, 1);
        assert!(Plan::resolve(4, &o).is_err());
    }

    #[test]
    fn a_batched_plan_times_whole_batches_of_the_same_data_only() {
        let mut o = opts();
        o.data = Data::Same;
        o.batch = 300;
        let p = Plan::resolve(2, &o).unwrap();
        // 10000 small / 1000 large iterations, rounded up to whole batches of 300.
        assert_eq!(p.steps[0].iterations, 10_200);
        assert_eq!(p.steps[1].iterations, 1_200);
        assert!(
            p.text().contains("same data, 300 per timed sample"),
            "{}",
            p.text()
        );
        o.data = Data::Fresh;
        let e = Plan::resolve(2, &o).unwrap_err();
        assert!(e.is_user_error() && e.to_string().contains("'300'"), "{e}");
        assert!(method(Op::Get, p.method).contains("batches of 300"));
        assert!(method(Op::PingPong, Method::default()).contains("timed each"));
    }

    #[test]
    fn the_aggregate_bandwidth_is_bytes_over_the_summed_times() {
        // Two windows of 1000 B: 1 µs (1 GB/s) and 3 µs (1/3 GB/s): 2000 B in 4 µs.
        let h = harmonic_mean(&[1.0, 1.0 / 3.0]).unwrap();
        assert!((h - 0.5).abs() < 1e-12, "{h}");
        assert_eq!(harmonic_mean(&[]), None);
        assert_eq!(harmonic_mean(&[0.0]), None);
    }

    #[test]
    fn zero_and_huge_sizes_are_usage_errors() {
        let mut o = opts();
        o.sizes = vec![0];
        assert!(Plan::resolve(2, &o)
            .unwrap_err()
            .to_string()
            .contains("'0'"));
        o.sizes = vec![1 << 50];
        let e = Plan::resolve(2, &o).unwrap_err();
        assert!(e.is_user_error(), "{e}");
        assert_eq!(default_sizes().len(), 23);
        assert_eq!(*default_sizes().last().unwrap(), 4 << 20);
    }
}

/// Parse `--sizes`: comma-separated sizes (64, 4K, 1M) and ranges `A:B` of the powers
/// of two from A to B.
pub fn parse_sizes(s: &str) -> Result<Vec<u64>> {
    let bad = |item: &str| {
        Error::Usage(format!(
            "invalid --sizes item '{item}': sizes of at least 1 byte (8, 4K, 1M) or ranges A:B of powers of two (1:4M)"
        ))
    };
    let size = |t: &str| match numalab_topo::spec::parse_size(t.trim()) {
        Ok(v) if v > 0 => Ok(v),
        _ => Err(bad(t.trim())),
    };
    let mut out = Vec::new();
    for item in s.split(',') {
        if let Some((lo, hi)) = item.split_once(':') {
            let (lo, hi) = (size(lo)?, size(hi)?);
            if lo > hi {
                return Err(bad(item.trim()));
            }
            let mut v = lo.next_power_of_two();
            if v != lo {
                out.push(lo);
            }
            while v <= hi {
                out.push(v);
                v *= 2;
            }
        } else {
            out.push(size(item)?);
        }
    }
    out.dedup();
    Ok(out)
}

#[cfg(test)]
mod size_tests {
    use super::parse_sizes;

    #[test]
    fn size_lists_and_power_of_two_ranges_parse_and_zero_does_not() {
        assert_eq!(parse_sizes("1:8").unwrap(), [1, 2, 4, 8]);
        assert_eq!(parse_sizes("8,4K").unwrap(), [8, 4096]);
        assert_eq!(parse_sizes("3:8").unwrap(), [3, 4, 8]);
        for bad in ["0", "1:0", "8:1", "x", ""] {
            let e = parse_sizes(bad).unwrap_err().to_string();
            assert!(e.contains("--sizes"), "{bad}: {e}");
        }
    }
}
