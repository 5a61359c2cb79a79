//! The core-to-core matrix as an experiment: options, plan, records and text.

use super::{measure, pairs, schedule, C2cSettings, Home, Pair, PairResult};
use crate::experiment::{Context, Progress};
use numalab_probe::Timer;
use numalab_results::disturb::{PassLog, Policy, Rules};
use numalab_results::settle::{self, NoiseOptions};
use numalab_results::{Record, Settle};
use numalab_topo::spec::parse_size;
use numalab_topo::{cpulist, Error, Host, Machine, Result};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// What the user asks of `c2c`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Options {
    /// CPUs to pair (None: every usable CPU).
    pub cpus: Option<String>,
    /// cas, read or both.
    pub metric: String,
    /// writer or reader: where the line lives.
    pub home: String,
    /// CAS round trips per pass.
    pub round_trips: u64,
    /// Passes per pair.
    pub iterations: usize,
    /// Bytes of Modified lines the reader reads per pass.
    pub read_size: String,
    /// What is done with a disturbed pass: keep, remeasure (up to 3 times) or exclude.
    #[serde(default = "default_disturbed")]
    pub disturbed: String,
    /// How long each pair's figures may take to settle their medians, and to what tolerance.
    #[serde(default)]
    pub noise: NoiseOptions,
}

fn default_disturbed() -> String {
    Policy::default().name().into()
}

impl Default for Options {
    fn default() -> Self {
        Options {
            cpus: None,
            metric: "both".into(),
            home: "writer".into(),
            round_trips: 20_000,
            iterations: 5,
            read_size: "64K".into(),
            disturbed: default_disturbed(),
            noise: NoiseOptions::default(),
        }
    }
}

impl Options {
    fn settings(&self) -> Result<C2cSettings> {
        let (cas, read) = match self.metric.as_str() {
            "cas" => (true, false),
            "read" => (false, true),
            "both" => (true, true),
            m => {
                return Err(Error::input(format!(
                    "invalid metric '{m}': expected cas, read or both"
                )))
            }
        };
        let home = match self.home.as_str() {
            "writer" => Home::Writer,
            "reader" => Home::Reader,
            h => {
                return Err(Error::input(format!(
                    "invalid home '{h}': expected writer or reader"
                )))
            }
        };
        if self.iterations == 0 || self.round_trips == 0 {
            return Err(Error::input(
                "invalid --iterations or --round-trips '0': at least 1",
            ));
        }
        Ok(C2cSettings {
            round_trips: self.round_trips,
            iterations: self.iterations,
            cas,
            read,
            home,
            read_bytes: parse_size(&self.read_size)?,
            rules: Rules {
                policy: Policy::parse(&self.disturbed).map_err(Error::Input)?,
                settle: self.noise.goal().map_err(Error::Input)?,
                ..Rules::default()
            },
        })
    }

    /// Check what can be checked without a machine.
    pub fn check(&self) -> Result<()> {
        self.settings().map(|_| ())
    }
}

/// The pairs and the concurrent rounds, resolved.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The CPUs paired.
    pub cpus: Vec<u32>,
    /// Every pair.
    pub pairs: Vec<Pair>,
    /// Pairs that share no core, L3 or package, run at once.
    pub rounds: Vec<Vec<Pair>>,
    /// What each pair measures.
    pub settings: C2cSettings,
    /// The options, for the records' parameters.
    pub options: Options,
}

impl Plan {
    /// Resolve the options on a machine.
    pub fn resolve(m: &Machine, o: &Options) -> Result<Plan> {
        let settings = o.settings()?;
        let cpus: Vec<u32> = match &o.cpus {
            Some(s) => {
                let v = cpulist::parse("CPU list", s)?;
                if let Some(c) = v.iter().find(|c| m.pu(**c).is_none()) {
                    return Err(Error::input(format!(
                        "invalid CPU '{c}': usable CPUs are {}",
                        m.cpu_list()
                    )));
                }
                v
            }
            None => m.pus.iter().map(|p| p.os).collect(),
        };
        if cpus.len() < 2 {
            return Err(Error::input(format!(
                "invalid CPU list '{}': c2c needs at least two CPUs",
                cpulist::format(&cpus)
            )));
        }
        let pairs = pairs(m, &cpus);
        let rounds = schedule(m, &pairs);
        Ok(Plan {
            cpus,
            pairs,
            rounds,
            settings,
            options: o.clone(),
        })
    }

    fn params(&self) -> serde_json::Value {
        let (a, cpus, pairs, rounds) = (&self.options, &self.cpus, &self.pairs, &self.rounds);
        json!({
            "cpus": cpulist::format(cpus), "metric": a.metric, "home": a.home,
            "round_trips": a.round_trips, "iterations": a.iterations, "read_bytes": self.settings.read_bytes,
            "pairs": pairs.len(), "rounds": rounds.len(), "disturbed": a.disturbed,
            "tolerance_pct": self.settings.rules.settle.tolerance_pct,
            "noise_budget_ms": self.settings.rules.settle.budget_ms,
        })
    }

    /// The plan as a record (what `--dry-run` emits).
    pub fn record(&self, ctx: &Context) -> Record {
        let mut r = Record::new(
            "c2c-plan",
            &numalab_results::words::count(self.pairs.len() as u64, "pair"),
            ctx.prov.clone(),
            self.params(),
        );
        r.set_data(&super::C2cPlanData {
            rounds: self.rounds.clone(),
        });
        r.warnings = ctx.warnings.clone();
        r
    }
}

/// What `run` measured: per pair, the matrices, and the records.
pub struct Measured {
    /// Every pair's samples.
    pub results: Vec<PairResult>,
    /// Median CAS RTT/2 per CPU × CPU.
    pub cas: Vec<Vec<Option<f64>>>,
    /// Median modified-line read per CPU × CPU.
    pub read: Vec<Vec<Option<f64>>>,
    /// One record per pair, then the matrix record.
    pub records: Vec<Record>,
}

/// Measure every round on this machine. Each pair's record is kept as its parts end
/// (the CAS figures, then the read), should a signal end the rest.
pub fn run(host: &Host, plan: &Plan, ctx: &Context, progress: Progress) -> Result<Measured> {
    let timer = Timer::best();
    let (params, prov, warnings, cpus) = (
        plan.params(),
        ctx.prov.clone(),
        ctx.warnings.clone(),
        &plan.cpus,
    );
    let keep = |r: &PairResult| {
        numalab_results::interrupt::supersede([pair_record(r, &params, &prov, &warnings)])
    };
    let results = measure(
        host,
        &timer,
        &plan.rounds,
        &plan.settings,
        |i, n| progress(&format!("c2c: round {}/{n}", i + 1)),
        &keep,
    )?;
    let mut records: Vec<Record> = results
        .iter()
        .map(|r| pair_record(r, &params, &prov, &warnings))
        .collect();
    let cas_m = matrix(cpus, &results, |r| r.cas_half_ns.as_ref());
    let read_m = matrix(cpus, &results, |r| r.modified_read_ns.as_ref());
    let unsettled = |f: fn(&PairResult) -> Option<&Settle>| -> Vec<[u32; 2]> {
        results
            .iter()
            .filter(|r| f(r).is_some_and(|s| !s.settled))
            .map(|r| [r.pair.a, r.pair.b])
            .collect()
    };
    let mut mrec = Record::new("c2c-matrix", &format!("{} CPUs", cpus.len()), prov, params);
    mrec.set_data(&super::C2cMatrixData {
        cpus: cpus.clone(),
        cas_rtt_half_ns: cas_m.clone(),
        modified_read_ns: read_m.clone(),
        smt_sibling_pairs: plan
            .pairs
            .iter()
            .filter(|p| p.smt_siblings)
            .map(|p| [p.a, p.b])
            .collect(),
        statistic: "median of passes".into(),
        cas_unsettled: unsettled(|r| r.cas_settle.as_ref()),
        read_unsettled: unsettled(|r| r.read_settle.as_ref()),
    });
    mrec.warnings = warnings;
    records.push(mrec);
    Ok(Measured {
        results,
        cas: cas_m,
        read: read_m,
        records,
    })
}

/// CPU × CPU medians of one metric (None: the pair was not measured).
fn matrix(
    cpus: &[u32],
    results: &[PairResult],
    f: fn(&PairResult) -> Option<&Vec<f64>>,
) -> Vec<Vec<Option<f64>>> {
    let cell = |x: u32, y: u32| {
        results
            .iter()
            .find(|r| (r.pair.a, r.pair.b) == (x, y) || (r.pair.a, r.pair.b) == (y, x))
            .and_then(|r| f(r).and_then(|v| numalab_results::stats::median(v)))
    };
    cpus.iter()
        .map(|&x| cpus.iter().map(|&y| cell(x, y)).collect())
        .collect()
}

/// One pair's record: its statistics (from undisturbed passes) and its pass logs.
fn pair_record(
    r: &PairResult,
    params: &serde_json::Value,
    prov: &numalab_results::Provenance,
    warnings: &[String],
) -> Record {
    let mut p = params.clone();
    p["writer_cpu"] = json!(r.pair.a);
    p["reader_cpu"] = json!(r.pair.b);
    p["smt_siblings"] = json!(r.pair.smt_siblings);
    p["home_node"] = json!(r.home_node);
    let mut rec = Record::new(
        "c2c",
        &format!("cpu{}-cpu{}", r.pair.a, r.pair.b),
        prov.clone(),
        p,
    );
    if let Some(v) = &r.cas_half_ns {
        rec.add_samples("cas_rtt_half", "ns", v);
    }
    if let Some(v) = &r.modified_read_ns {
        rec.add_samples("modified_read", "ns", v);
    }
    numalab_results::distance::attach(&mut rec, &r.distance);
    rec.warnings = warnings.to_vec();
    // One log for the record (CAS passes, then read passes) and one per metric.
    let both: Vec<&PassLog> = r.cas_passes.iter().chain(&r.read_passes).collect();
    if let Some(first) = both.first() {
        let log = PassLog {
            rules: first.rules,
            passes: both.iter().flat_map(|l| l.passes.clone()).collect(),
        };
        rec.warnings.extend(log.warning());
        let figures: Vec<Settle> = [&r.cas_settle, &r.read_settle]
            .into_iter()
            .flatten()
            .cloned()
            .collect();
        if let Some(s) = settle::combine(&figures) {
            settle::apply(&mut rec, s);
        }
        rec.set_data(&super::C2cPairData {
            disturbance: log,
            cas: r.cas_passes.clone(),
            read: r.read_passes.clone(),
            settle: figures,
        });
    }
    rec
}

/// A pair's record as `run` builds it, without machine warnings (for the text's tests).
#[cfg(test)]
pub(super) fn pair_record_for_tests(
    r: &PairResult,
    params: &serde_json::Value,
    prov: &numalab_results::Provenance,
) -> Record {
    pair_record(r, params, prov, &[])
}
