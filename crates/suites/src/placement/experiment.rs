//! The placement suite as an experiment: options, plan, records and text.

use super::run::{measure, Point};
use super::{Config, Part, Plan};
use numalab_bench::experiment::{level, list, size_opt, Context, Progress};
use numalab_probe::Timer;
use numalab_results::settle::{self, NoiseOptions};
use numalab_results::{words, Record};
use numalab_topo::{fmt_bytes, Error, Host, Machine, Result};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// What the user asks of `suite placement`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Options {
    /// Level whose domains play the KSR's rings (None: the most informative level).
    pub level: Option<String>,
    /// Owner CPU of Experiment 0 and Suites II–IV.
    pub owner: Option<u32>,
    /// Parts to run, comma-separated: 0, 1, 2, 3, 4.
    pub parts: String,
    /// Suite III batch sizes, comma-separated.
    pub batches: Option<String>,
    /// Largest number of readers.
    pub readers: Option<usize>,
    /// Bytes of the shared data set (None: half the private cache).
    pub size: Option<String>,
    /// line or pair.
    pub unit: String,
    /// Timed passes per point (first passes: more are added until it settles).
    pub iterations: usize,
    /// How long each point may take to settle its median, and to what tolerance.
    #[serde(default)]
    pub noise: NoiseOptions,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            level: None,
            owner: None,
            parts: "0,1,2,3,4".into(),
            batches: None,
            readers: None,
            size: None,
            unit: "line".into(),
            iterations: 7,
            noise: NoiseOptions::default(),
        }
    }
}

/// The options, parsed.
struct Parsed {
    level: Option<numalab_topo::Level>,
    parts: Vec<Part>,
    batches: Option<Vec<usize>>,
    unit_lines: usize,
    size: Option<u64>,
}

impl Options {
    fn parsed(&self) -> Result<Parsed> {
        let a = self;
        let level = level(a.level.as_deref())?;
        let parts = list(
            "--parts",
            &a.parts,
            |s| Part::parse(s).ok(),
            "one of 0, 1, 2, 3, 4 (or i, ii, iii, iv)",
        )?;
        let batches = a
            .batches
            .as_deref()
            .map(|b| {
                list(
                    "--batches",
                    b,
                    |s| s.parse::<usize>().ok(),
                    "a batch size of at least 1",
                )
            })
            .transpose()?;
        let unit_lines = match a.unit.as_str() {
            "line" => 1,
            "pair" => 2,
            u => return Err(Error::input(format!("invalid --unit '{u}': line or pair"))),
        };
        if a.iterations == 0 {
            return Err(Error::input(
                "invalid --iterations '0': at least 1 timed pass",
            ));
        }
        crate::settled::rules(&a.noise)?;
        let size = a
            .size
            .as_deref()
            .map(|s| size_opt("--size", s))
            .transpose()?;
        Ok(Parsed {
            level,
            parts,
            batches,
            unit_lines,
            size,
        })
    }

    /// Check what can be checked without a machine.
    pub fn check(&self) -> Result<()> {
        self.parsed().map(|_| ())
    }
}

impl Plan {
    /// Resolve the options on a machine.
    pub fn resolve(m: &Machine, o: &Options) -> Result<Plan> {
        let a = o;
        let Parsed {
            level,
            parts,
            batches,
            unit_lines,
            size,
        } = o.parsed()?;
        let line = m.caches.first().and_then(|c| c.line_bytes).unwrap_or(64) as usize;
        let cfg = Config {
            level,
            owner: a.owner,
            parts,
            batches,
            max_readers: a.readers,
            size: size.unwrap_or_else(|| numalab_bench::sizing::half_private_cache(m)),
            unit_lines,
            line,
        };
        Plan::new(m, &cfg)
    }
}

/// The first line of the suite's text.
pub fn head(topology: &str, plan: &Plan, iterations: u64) -> String {
    format!(
        "placement suite (KSR1 seed 000) on {}: level {}, domains {}; owner {}; data set {} ({} lines), unit {}, {} per point\n",
        topology,
        plan.level,
        crate::domains::describe(&plan.domains),
        plan.owner,
        fmt_bytes((plan.lines * plan.line) as u64),
        plan.lines,
        unit_name(plan.unit_lines),
        numalab_results::words::passes(iterations as usize)
    )
}

/// The `--unit` value that gives `unit_lines` lines per unit.
pub fn unit_name(unit_lines: usize) -> &'static str {
    if unit_lines == 2 {
        "pair"
    } else {
        "line"
    }
}

/// The plan as records (what `--dry-run` emits).
pub fn plan_records(plan: &Plan, a: &Options, ctx: &Context) -> Vec<Record> {
    let (prov, warnings) = (&ctx.prov, ctx.warnings.clone());
    let mut r = Record::new(
        "suite-placement-plan",
        "placement plan",
        prov.clone(),
        json!({ "iterations": a.iterations }),
    );
    r.data = Some(serde_json::to_value(plan).unwrap_or_default());
    r.warnings = warnings;
    r.warnings.extend(one_point_notes(plan));
    let mut recs = vec![r];
    recs.extend(skipped_record(plan, prov));
    recs
}

/// Measure every point on this machine; each point's record is kept as it ends, should
/// a signal end the points after it (`numalab_results::interrupt`).
pub fn run(
    host: &Host,
    plan: &Plan,
    a: &Options,
    ctx: &Context,
    progress: Progress,
) -> Result<Vec<Point>> {
    let timer = Timer::best();
    let mut warnings = ctx.warnings.clone();
    warnings.extend(one_point_notes(plan));
    let rules = crate::settled::rules(&a.noise)?;
    measure(host, &timer, plan, &rules, a.iterations, |p, d, n| {
        let point = std::slice::from_ref(p);
        numalab_results::interrupt::keep(point_records(
            plan,
            point,
            a.iterations,
            &ctx.prov,
            &warnings,
        ));
        progress(&format!("placement: {d}/{n} points"))
    })
}

/// The measured points as records.
pub fn records(plan: &Plan, points: &[Point], a: &Options, ctx: &Context) -> Vec<Record> {
    let mut warnings = ctx.warnings.clone();
    warnings.extend(one_point_notes(plan));
    let mut recs = point_records(plan, points, a.iterations, &ctx.prov, &warnings);
    recs.extend(skipped_record(plan, &ctx.prov));
    recs
}

/// Parts that come out as one point here, each with why: with too few CPUs per domain
/// their curves cannot form, and on 2 cores Suites I–III would otherwise each print
/// the same one-reader row without a word.
pub(super) fn one_point_notes(plan: &Plan) -> Vec<String> {
    let mut parts: Vec<Part> = plan.curves.iter().map(|c| c.part).collect();
    parts.dedup();
    let widest = plan.domains.iter().map(|d| d.cpus.len()).max().unwrap_or(0);
    parts
        .into_iter()
        .filter(|&p| plan.curves.iter().filter(|c| c.part == p).all(|c| c.counts.len() <= 1))
        .map(|p| {
            let readers = plan.curves.iter().filter(|c| c.part == p).map(|c| c.readers.len()).max().unwrap_or(0);
            let shape = match p {
                Part::Exp0 => "readers added one at a time",
                Part::Suite1 => "the owner first, midway and last in its domain, readers added one at a time",
                Part::Suite2 => "remote readers beside 0, a third, two thirds and all local ones",
                Part::Suite3 => "batches of readers alternating domains",
                Part::Suite4 => "staggered readers and several owners",
            };
            format!(
                "{} is one point here: {} besides the owner, {} {} {} of at most {}, so its curve ({shape}) cannot form; the row is the one-reader case, not the seed's shape (a machine with more CPUs per domain shows it)",
                p.name(),
                words::count(readers as u64, "reader CPU"),
                plan.domains.len(),
                plan.level,
                words::noun(plan.domains.len() as u64, "domain"),
                words::count(widest as u64, "CPU"),
            )
        })
        .collect()
}

fn params(plan: &Plan, c: usize, k: usize, iterations: usize) -> serde_json::Value {
    let cv = &plan.curves[c];
    json!({
        "part": cv.part.id(),
        "suite": cv.part.name(),
        "curve": cv.label,
        "readers": k,
        "x": k - cv.fixed,
        "fixed_readers": cv.fixed,
        "owners": cv.owners,
        "reader_cpus": cv.readers[..k],
        "reader_domains": cv.readers[..k].iter().map(|&r| crate::domains::letter_of(&plan.domains, r)).collect::<Vec<_>>(),
        "staggered": cv.stagger,
        "partitioned": cv.partitioned,
        "level": plan.level,
        "unit_lines": plan.unit_lines,
        "line_bytes": plan.line,
        "owner": plan.owner,
        "shared_lines": plan.lines,
        "lines_per_reader": plan.point_lines(cv, k).1,
        "data_set_lines": plan.point_lines(cv, k).0,
        "iterations": iterations,
        "method": "owners write one word per line (lines end Modified in the owner's cache, or its memory when larger), a barrier releases the readers, each reader reads one word per line sequentially; time per unit per reader, averaged over readers",
    })
}

fn point_records(
    plan: &Plan,
    points: &[Point],
    iterations: usize,
    prov: &numalab_results::Provenance,
    warnings: &[String],
) -> Vec<Record> {
    points
        .iter()
        .map(|p| {
            let cv = &plan.curves[p.curve];
            let mut r = Record::new(
                "suite-placement",
                &format!(
                    "{} {}: {}",
                    cv.part.id(),
                    cv.label,
                    words::count(p.readers as u64, "reader")
                ),
                prov.clone(),
                params(plan, p.curve, p.readers, iterations),
            );
            r.add_samples("read_time", "ns", &p.overall);
            for (d, s) in &p.per_domain {
                r.add_samples(&format!("read_time_{d}"), "ns", s);
            }
            r.placement = Some(json!({
                "domains": plan.domains,
                "verified": { "threads": p.pins, "memory": p.home },
            }));
            r.set_data(&super::PointData {
                per_reader: p
                    .per_reader
                    .iter()
                    .map(|(cpu, domain, median_ns)| super::ReaderMedian {
                        cpu: *cpu,
                        domain: domain.clone(),
                        median_ns: *median_ns,
                    })
                    .collect(),
                data_checked: true,
            });
            r.warnings = warnings.to_vec();
            settle::apply(&mut r, p.settle.clone());
            r
        })
        .collect()
}

fn skipped_record(plan: &Plan, prov: &numalab_results::Provenance) -> Option<Record> {
    if plan.skipped.is_empty() {
        return None;
    }
    let mut r = Record::new(
        "suite-placement",
        "not run here",
        prov.clone(),
        json!({ "level": plan.level }),
    );
    for (part, why) in &plan.skipped {
        r.unavailable.push(numalab_results::Unavailable {
            feature: part.name().into(),
            reason: why.clone(),
        });
    }
    Some(r)
}
