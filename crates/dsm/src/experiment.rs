//! `dsm run` as an experiment: [`Options`] → [`Plan::resolve`] → [`measure`] inside an MPI
//! job → records (one per rank, and a summary on rank 0).

use crate::apps::{by_name_scaled, costs::Costs, max_rel_diff, App, Input, NAMES, SCALES};
use crate::cores::CoreShare;
use crate::mpi_transport::Mpi;
use crate::node::Config;
pub use crate::per_interval::PerInterval;
use crate::proto::ProtocolKind;
use crate::region::{DEFAULT_BASE, PAGE};
use crate::run::run_rank;
use crate::stats::Stats;
use mpi::topology::Communicator;
use numalab_mpi::{Error, JobOptions, Launch, World};
use numalab_results::{Provenance, Record};
use numalab_topo::{Host, Machine};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// Most user-level threads per rank.
pub const MAX_THREADS: usize = 64;
/// Longest net delay accepted.
pub const MAX_DELAY: Duration = Duration::from_secs(1);

/// Record kind of a run's plan (`--dry-run`).
pub const KIND_PLAN: &str = "dsm-plan";

/// What the user asked for (plain data; the CLI fills it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Options {
    /// The job: ranks, hosts and where they run.
    #[serde(default)]
    pub job: JobOptions,
    /// App name.
    pub app: String,
    /// lmw, lsw, seq or lmwc.
    pub protocol: String,
    /// Threads per rank.
    pub threads: usize,
    /// Added to every message, e.g. "0", "2us", "1ms".
    pub net_delay: String,
    /// small or paper.
    pub input: String,
    /// The input's size parameter × this (1, 2, 4 or 8; see apps::by_name_scaled).
    #[serde(default = "one")]
    pub scale: usize,
}

fn one() -> usize {
    1
}

impl Default for Options {
    fn default() -> Self {
        Options {
            job: JobOptions::default(),
            app: "sor".into(),
            protocol: "lmw".into(),
            threads: 1,
            net_delay: "0".into(),
            input: "small".into(),
            scale: 1,
        }
    }
}

/// The checked choices of a run: input, protocol, net delay, and the app at that input.
struct Checked {
    input: Input,
    app: Box<dyn crate::apps::App>,
    protocol: ProtocolKind,
    delay: Duration,
}

impl Options {
    /// Check what needs no machine; the error is one line naming the bad value.
    pub fn check(&self) -> Result<(), Error> {
        self.job.check()?;
        self.checked().map(|_| ())
    }

    fn checked(&self) -> Result<Checked, Error> {
        let usage = |m: String| Error::Usage(m);
        let input = Input::parse(&self.input)
            .ok_or_else(|| usage(format!("invalid --input '{}': small or paper", self.input)))?;
        if !SCALES.contains(&self.scale) {
            return Err(usage(format!(
                "invalid --scale '{}': 1, 2, 4 or 8",
                self.scale
            )));
        }
        let app = by_name_scaled(&self.app, input, self.scale)
            .ok_or_else(|| usage(format!("invalid app '{}': {}", self.app, NAMES.join(", "))))?;
        let protocol = ProtocolKind::parse(&self.protocol).ok_or_else(|| {
            usage(format!(
                "invalid --protocol '{}': lmw, lsw, seq or lmwc",
                self.protocol
            ))
        })?;
        if self.threads == 0 || self.threads > MAX_THREADS {
            return Err(usage(format!(
                "invalid --threads '{}': 1 to {MAX_THREADS} per rank",
                self.threads
            )));
        }
        let delay = parse_duration(&self.net_delay).filter(|d| *d <= MAX_DELAY).ok_or_else(|| {
            usage(format!("invalid --net-delay '{}': a duration up to 1s such as 0, 500ns, 2us, 30us or 1ms", self.net_delay))
        })?;
        Ok(Checked {
            input,
            app,
            protocol,
            delay,
        })
    }
}

/// A checked run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Plan {
    /// App name.
    pub app: String,
    /// Protocol.
    pub protocol: ProtocolKind,
    /// Threads per rank.
    pub threads: usize,
    /// Net delay in ns.
    pub net_delay_ns: u64,
    /// LSW/SEQ freeze of a newly arrived page, in ns (proto::single::DEFAULT_FREEZE).
    pub freeze_ns: u64,
    /// Input size.
    pub input: Input,
    /// The input's size parameter × this.
    #[serde(default = "one")]
    pub scale: usize,
    /// Shared region bytes.
    pub shared_bytes: usize,
    /// Global locks.
    pub locks: usize,
    /// Ranks.
    pub ranks: usize,
}

/// Parse "0", "500ns", "0.5us", "2µs", "1ms", "1s".
pub fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num.parse().ok()?;
    let scale = match unit {
        "" if v == 0.0 => 0.0,
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    (v.is_finite() && v >= 0.0).then(|| Duration::from_nanos((v * scale).round() as u64))
}

fn available_bytes(m: &Machine) -> Option<u64> {
    let free: u64 = m.nodes.iter().filter_map(|n| n.free_bytes).sum();
    (free > 0).then_some(free)
}

impl Plan {
    /// Check the options against the machine and the job `launch` starts; the error
    /// is one line naming the bad value.
    pub fn resolve(m: &Machine, launch: &Launch, o: &Options) -> Result<Plan, Error> {
        let Checked {
            input,
            app,
            protocol,
            delay,
        } = o.checked()?;
        let ranks = launch.ranks();
        let shared_bytes = app.pages() * PAGE;
        // Each rank holds the region, twins or page copies up to its size, and rank 0 the
        // sequential reference: about 3 × the region per rank.
        let need = 3 * shared_bytes as u64 * ranks.max(1) as u64;
        if let Some(avail) = available_bytes(m) {
            if m.this_system && need > avail {
                return Err(Error::Usage(format!(
                    "invalid --input '{}' for {}: {} about {} MiB, this machine has {} MiB free",
                    o.input,
                    o.app,
                    if ranks == 1 {
                        "1 rank needs".to_string()
                    } else {
                        format!("{ranks} ranks need")
                    },
                    need >> 20,
                    avail >> 20
                )));
            }
        }
        Ok(Plan {
            app: o.app.clone(),
            protocol,
            threads: o.threads,
            net_delay_ns: delay.as_nanos() as u64,
            freeze_ns: crate::proto::single::DEFAULT_FREEZE.as_nanos() as u64,
            input,
            scale: o.scale,
            shared_bytes,
            locks: app.locks(),
            ranks,
        })
    }

    /// The plan as one record (its `data` is the plan), what `--dry-run` emits.
    pub fn record(&self, prov: &Provenance) -> Record {
        let mut r = Record::new(KIND_PLAN, &self.describe(), prov.clone(), self.params());
        r.set_data(self);
        r
    }

    /// How long the run may take with `crowding` ranks per CPU, generously: the apps'
    /// runs on a 2-vCPU VM took up to 1.2 s (small) and 13 s (paper, sor with a 1 ms
    /// net delay), each message's delay adding to the run; the launcher's bound is ten
    /// times this (see `numalab_mpi::liveness::default_bound`).
    pub fn estimate(&self, crowding: f64) -> Duration {
        let base = match self.input {
            Input::Small => 2.0,
            Input::Paper => 15.0,
        };
        let delay = 1.0 + self.net_delay_ns as f64 / 250_000.0;
        // water-nsq's and barnes' work grows with the square of their bodies.
        let k = (self.scale * self.scale) as f64;
        Duration::from_secs_f64(base * k * delay * crowding.max(1.0))
    }

    /// One line for --dry-run and progress.
    pub fn describe(&self) -> String {
        format!(
            "dsm {} --protocol {} --threads {} --ranks {} --net-delay {}ns --input {}{}: {} KiB shared, {}",
            self.app,
            self.protocol.name(),
            self.threads,
            self.ranks,
            self.net_delay_ns,
            self.input.name(),
            if self.scale == 1 {
                String::new()
            } else {
                format!(" --scale {}", self.scale)
            },
            self.shared_bytes >> 10,
            numalab_results::words::count(self.locks as u64, "lock")
        )
    }

    fn params(&self) -> serde_json::Value {
        let mut p = json!({
            "app": self.app, "protocol": self.protocol.name(), "threads": self.threads,
            "ranks": self.ranks, "net_delay_ns": self.net_delay_ns, "freeze_ns": self.freeze_ns, "input": self.input,
            "shared_bytes": self.shared_bytes, "page_bytes": PAGE,
        });
        // Said only when scaled, so the records of the seed's inputs are as before.
        if self.scale != 1 {
            p["scale"] = json!(self.scale);
        }
        p
    }
}

/// Repetitions of each mechanism cost measured before a run.
pub const COST_REPS: usize = 15;

/// A rank's configuration for `app` under the plan, `threads` user-level threads.
fn rank_config(plan: &Plan, app: &dyn App, threads: usize) -> Config {
    Config {
        threads,
        protocol: plan.protocol,
        net_delay: Duration::from_nanos(plan.net_delay_ns),
        pages: app.pages(),
        locks: app.locks(),
        base: Some(DEFAULT_BASE),
        watchdog: Duration::from_secs(120),
        gc_bytes: 64 << 20,
        freeze: Duration::from_nanos(plan.freeze_ns),
    }
}

/// Run `app` on this rank over a fresh duplicate of the world communicator.
fn run_on_world(world: &World, cfg: Config, app: &dyn App) -> Result<crate::RankOutcome, String> {
    let mpi = Arc::new(Mpi::new(world.comm().duplicate(), true)?);
    let out = run_rank(cfg, Box::new(mpi.clone()), app);
    mpi.shutdown();
    out
}

/// The remote-fault mechanism costs in this job, under the plan's protocol and net
/// delay, just before the app runs (collective; rank 0 gets them; none on one rank).
fn mechanism_costs(world: &World, plan: &Plan) -> Result<Option<MechCosts>, String> {
    if world.size < 2 {
        return Ok(None);
    }
    let app = Costs { reps: COST_REPS };
    let out = run_on_world(world, rank_config(plan, &app, 1), &app)?;
    let finite = |v: Option<&f64>| v.copied().filter(|x| x.is_finite());
    Ok(out.result.map(|r| MechCosts {
        fault_idle_ns: finite(r.first()),
        fault_busy_ns: finite(r.get(8)),
        reps: COST_REPS,
    }))
}

/// Run the plan on this rank (collective). Rank 0 returns every rank's record and a
/// summary; a result that differs from the sequential run is an error.
pub fn measure(world: &World, host: &Host, plan: &Plan) -> Result<Option<Vec<Record>>, String> {
    let app = by_name_scaled(&plan.app, plan.input, plan.scale).expect("resolved app");
    world
        .require_multiple("the DSM's service thread")
        .map_err(|e| e.to_string())?;
    let costs = mechanism_costs(world, plan)?;
    let out = run_on_world(
        world,
        rank_config(plan, app.as_ref(), plan.threads),
        app.as_ref(),
    )?;
    let prov = Provenance::collect(&host.machine.summary(), &host.machine.source);
    let scaled = match plan.scale {
        1 => String::new(),
        k => format!(" ×{k}"),
    };
    let name = format!(
        "{}{scaled} {} T={} ranks={}",
        plan.app,
        plan.protocol.name(),
        plan.threads,
        plan.ranks
    );
    let mut rec = Record::new("dsm-rank", &name, prov.clone(), plan.params());
    rec.placement = Some(world.placement_value(&[world.rank]));
    rec.add_samples("time", "ns", &[out.stats.total_ns as f64]);
    let me = world.me();
    let on_host = world
        .placements
        .iter()
        .filter(|p| p.host == me.host)
        .count();
    let mut data = RankData {
        rank: world.rank,
        stats: out.stats.clone(),
        check: None,
        cores: Some(CoreShare::here(on_host.max(1))),
    };
    if let Some(r) = &out.result {
        let (seq, moved) = crate::reference::timed(host, app.as_ref());
        let d = max_rel_diff(r, &seq.want);
        data.check = Some(Check {
            max_rel_diff: d,
            tolerance: app.tolerance(),
            sequential_ns: seq.wall_ns,
            sequential_cpu_ns: Some(seq.cpu_ns),
            sequential_runs_ns: seq.runs_ns,
            sequential_moved: moved,
        });
        if d > app.tolerance() {
            return Err(format!(
                "{name}: result differs from the sequential run by {d:e} (tolerance {:e})",
                app.tolerance()
            ));
        }
    }
    // The other ranks wait here while rank 0 times the sequential program, without
    // spinning, so their CPUs are free for it (`reference`).
    world.barrier_gently();
    rec.set_data(&data);
    rec.warnings = prov.warnings();
    let Some(mut all) = world.gather_records(&[rec]).map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    all.insert(0, summary(plan, &name, prov, world, &all, costs));
    Ok(Some(all))
}

/// Per-rank stats out of `dsm-rank` records.
pub fn rank_stats(recs: &[Record]) -> Vec<Stats> {
    recs.iter()
        .filter(|r| r.kind == "dsm-rank")
        .filter_map(|r| r.data_as::<RankData>().ok())
        .map(|d| d.stats)
        .collect()
}

/// The result check of a run: the parallel result against the sequential program's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// Largest relative difference of any result word.
    pub max_rel_diff: f64,
    /// The app's tolerance (the run fails beyond it).
    pub tolerance: f64,
    /// Time of the sequential program, ns: the median of [`crate::apps::SEQUENTIAL_RUNS`].
    pub sequential_ns: u64,
    /// CPU time of that run, ns (well under `sequential_ns`: it waited for a CPU).
    #[serde(default)]
    pub sequential_cpu_ns: Option<u64>,
    /// Every sequential run's time, ns, in the order run (empty in older records).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sequential_runs_ns: Vec<u64>,
    /// Where it was timed when the rank's own CPU was busy ([`crate::reference`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential_moved: Option<crate::reference::Moved>,
}

/// `data` of a `dsm-rank` record: one rank's counters and times.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankData {
    /// The rank.
    pub rank: usize,
    /// Its DSM counters and time breakdown.
    pub stats: Stats,
    /// The result check (on the rank that holds the result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<Check>,
    /// How the rank's compute and service threads sat on the CPUs.
    #[serde(default)]
    pub cores: Option<CoreShare>,
}

/// Remote-fault costs measured in the run's job just before it (the `costs` benchmark
/// with the run's protocol and net delay): what a run's time per remote fault is to be
/// read against. Medians in ns; None where not measured (one rank).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MechCosts {
    /// A remote page fault while the serving rank waits at a barrier.
    pub fault_idle_ns: Option<f64>,
    /// A remote page fault while the serving rank computes.
    pub fault_busy_ns: Option<f64>,
    /// Repetitions of each.
    pub reps: usize,
}

/// `data` of a `dsm` record: the run summed over its ranks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunData {
    /// Counters and time parts summed over the ranks.
    pub sum: Stats,
    /// The run's time: the slowest rank's, ns.
    pub time_ns: f64,
    /// The sequential program's time, ns, when it was run.
    pub sequential_ns: Option<f64>,
    /// `sequential_ns / time_ns`.
    pub speedup_vs_sequential: Option<f64>,
    /// The result check.
    pub check: Option<Check>,
    /// Mean latency of a remote fault over all ranks, ns.
    #[serde(default)]
    pub per_remote_fault_ns: Option<f64>,
    /// The mechanism costs measured just before the run.
    #[serde(default)]
    pub costs: Option<MechCosts>,
    /// Some rank's compute and service threads shared CPUs (see `dsm-rank` `cores`).
    #[serde(default)]
    pub cores_shared: Option<bool>,
    /// What one interval of one rank cost and moved, beside the sequential compute it
    /// splits (None when no rank acquired).
    #[serde(default)]
    pub per_interval: Option<PerInterval>,
}

/// Whether any rank's threads shared CPUs (None when no rank says).
fn cores_shared(ranks: &[Record]) -> Option<bool> {
    let said: Vec<bool> = ranks
        .iter()
        .filter(|r| r.kind == "dsm-rank")
        .filter_map(|r| r.data_as::<RankData>().ok()?.cores.map(|c| c.shared))
        .collect();
    (!said.is_empty()).then(|| said.iter().any(|&s| s))
}

fn summary(
    plan: &Plan,
    name: &str,
    prov: Provenance,
    world: &World,
    ranks: &[Record],
    costs: Option<MechCosts>,
) -> Record {
    let st = rank_stats(ranks);
    let sum = Stats::sum(&st);
    let per_fault = sum.per_remote_fault_ns();
    let mut r = Record::new("dsm", name, prov.clone(), plan.params());
    r.placement = Some(world.placement_value(&(0..world.size).collect::<Vec<_>>()));
    let totals: Vec<f64> = st.iter().map(|s| s.total_ns as f64).collect();
    r.add_samples("time", "ns", &totals);
    let check = ranks
        .first()
        .and_then(|x| x.data_as::<RankData>().ok())
        .and_then(|d| d.check);
    let seq = check.as_ref().map(|c| c.sequential_ns as f64);
    let time = totals.iter().cloned().fold(0.0, f64::max);
    r.set_data(&RunData {
        sum: sum.clone(),
        time_ns: time,
        sequential_ns: seq,
        speedup_vs_sequential: seq.map(|s| s / time),
        check,
        per_remote_fault_ns: per_fault,
        costs,
        cores_shared: cores_shared(ranks),
        per_interval: PerInterval::of(&sum, &st, seq),
    });
    r.warnings = prov.warnings();
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units_only() {
        assert_eq!(parse_duration("0"), Some(Duration::ZERO));
        assert_eq!(parse_duration("0.5us"), Some(Duration::from_nanos(500)));
        assert_eq!(parse_duration("1ms"), Some(Duration::from_millis(1)));
        assert_eq!(parse_duration("2µs"), Some(Duration::from_micros(2)));
        assert_eq!(parse_duration("5"), None);
        assert_eq!(parse_duration("-1ms"), None);
        assert_eq!(parse_duration("fast"), None);
    }
}
