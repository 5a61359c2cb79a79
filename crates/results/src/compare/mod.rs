//! Comparison of two runs for regression tracking: the same figure (kind, name, metric,
//! parameters) in A and B, their figures (medians, or a best-of-N's best pass), B/A, and
//! whether B moved beyond the two figures' intervals by more than a minimum effect. A
//! figure that did not settle, broke a plausibility rule, or came from too few or mostly
//! disturbed passes is "not comparable", never "beyond", and so is a figure of two CPUs
//! (a helper-held line, c2c, invalidate, intervene, a stream of several CPUs) whose CPUs
//! were not the same distance apart in both runs (`crate::distance`); derived duplicates
//! (cycles beside ns, traffic beside bandwidth, issued beside injected) are left out
//! unless asked for.

pub mod baselines;
mod clock;
pub mod cluster;
mod level;
mod paced;
mod plateau;
mod reach;
pub mod scope;
mod slope;
mod spread;
mod view;

pub use clock::ClockMove;
pub use level::LevelShift;
pub use scope::Scope;
pub use spread::{PairSpread, ScopeSpread, Shift};
pub use view::{html, ratio_text, text_rows, verdict, HEADER};

use crate::distance;
use crate::disturb::PassLog;
use crate::interval;
use crate::plausible::{self, Flag};
use crate::record::{Record, Stat};
use serde::Serialize;

/// One matched figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Record kind.
    pub kind: String,
    /// Record name.
    pub name: String,
    /// Metric.
    pub metric: String,
    /// Unit.
    pub unit: String,
    /// A's figure: the median, or the best pass where the step settled a best-of-N.
    pub a: f64,
    /// B's figure.
    pub b: f64,
    /// B / A (None when A is 0).
    pub ratio: Option<f64>,
    /// A's interval (settled, or the order-statistic interval of its median).
    pub a_interval: (f64, f64),
    /// B's interval.
    pub b_interval: (f64, f64),
    /// Disturbed of all passes in A and in B ("3 of 13"; "-" without a pass log).
    pub disturbed: (String, String),
    /// "beyond", "within", or "not comparable (why)".
    pub change: String,
    /// Size of the change: |ln(B/A)| (0 when there is no ratio).
    pub effect: f64,
    /// What the figure exercises, which sets the scatter it is judged against.
    pub scope: Scope,
    /// A bandwidth streamed from memory (`scope::streams_memory`): its shift is
    /// measured with every such figure, whatever its kind.
    pub streams_memory: bool,
}

/// The least relative change called "beyond": intervals of few passes can miss each
/// other by a hair when the machine shifts a little between runs, and a change under
/// 10 % is below what a regression tracker on a shared machine can stand behind.
/// Raising it does not rescue a loaded machine: there whole figures move 1.5–8×
/// between runs (README, "Comparing runs", gives the rates measured).
pub const MIN_EFFECT: f64 = 0.10;

/// Minimum samples per run for a verdict: with fewer, no interval exists.
const MIN_SAMPLES: usize = 3;

/// How `change` is decided, for the legend of every view.
pub const RULE: &str = "change: beyond = intervals (settled, else the median's 95 % order-statistic interval) apart, B/A over 10 % from 1, and (10+ figures) past 3 scaled MADs of this pair's scatter around its kind's median B/A (per metric where a kind has several, and every bandwidth streamed from memory, beyond the largest cache or of flushed lines, one kind; figures of a core's own caches (one CPU's warm lines within its unshared caches), of lines another CPU holds (a helper's lines, c2c, invalidate, intervene), of bandwidth streamed from memory (and loaded points' injected bandwidth), and all others, each against its own scatter where 5+); a figure within the other run's own passes (least to most) is within; a latency sweep's point whose neighbouring sizes differ over 1.25× is within while both runs' figures lie between the other run's neighbours; edge moved = a latency sweep's point left beyond whose figures lie between its neighbouring sizes only across both runs (one run's over 1.25× apart), each between its own run's neighbours and not on the same level in both: a cache boundary slid, named in the verdict and not counted (within where a --baseline run puts it within); not comparable = unsettled, implausible, under 3 samples, mostly disturbed, one CPU's share of a concurrent stream, its two CPUs not the same distance apart in A and B (round trips over 1.3× and 10 ns apart), a sweep's plateau over other sizes in A and B, or a loaded point's injected bandwidth under half its curve's unthrottled one in either (paced by the injector's spin loop: the CPU's speed); level shift = 2+ sweep points the runs put in the same level (or the same two levels) that all moved one way over 10 %, the largest B/A at most 2× the smallest: named once and counted as one; a latency whose core cycles (ns × the core clock measured beside it) held within 10 % while the clock moved is within, the clock change named once; with --baseline runs a figure is beyond only when it is beyond against A and against each of them (else within, saying where it was not); derived and reference metrics (own_cache_reference) need --all-metrics";

/// Metrics that restate another metric of the same record (the same passes in other
/// units or another byte count): comparing them again only repeats a row.
pub const DERIVED: &[&str] = &[
    "latency_tsc",
    // The latency in core cycles: ns × the core clock measured beside it.
    "latency_cycles",
    "traffic",
    "issued_bandwidth",
    "chase_bandwidth",
    "read_share",
    // A mix's read and write parts and traffic are its bandwidth times fixed shares.
    "read_bandwidth",
    "write_bandwidth",
    "traffic_estimate",
];

/// Metrics measured only as a reference for their record's figure, and measured as a
/// figure elsewhere: `own_cache_reference` times the state step's lines from the
/// requestor's own cache, which the latency sweep reports at that size. Two quiet
/// quick surveys on the 2-vCPU VM put it beyond 2 to 3 times a pair (12 → 66 ns at
/// 256 KiB, the helper's lines evicted or not) while the step's own figure held;
/// `--all-metrics` keeps it.
pub const REFERENCES: &[&str] = &["own_cache_reference"];

/// Requestors streaming at once when `r` is one requestor's part of such a run (a
/// bandwidth record naming its CPU among several): how the memory system splits a
/// saturated stream between them changes from run to run while their sum holds (on a
/// quiet 16-core VM two identical surveys gave one CPU 11.3 then 6.2 GB/s of the same
/// 16-CPU read), so the run's aggregate record is the figure to compare.
fn share_of(r: &Record) -> Option<u64> {
    let p = &r.parameters;
    let n = p.get("requestors")?.as_u64()?;
    (r.kind == "bandwidth" && n > 1 && p.get("requestor_cpu")?.is_u64()).then_some(n)
}

/// Why a figure cannot be compared, or None when it can.
fn not_comparable(r: &Record, s: &Stat, flags: &[Flag]) -> Option<String> {
    if let Some(f) = plausible::flag_of(flags, r, &s.metric) {
        return Some(format!("implausible, rule {}", f.rule));
    }
    if let Some(n) = share_of(r) {
        return Some(format!(
            "one CPU's share of {n} streaming at once: compare their aggregate"
        ));
    }
    if !r.settled() {
        return Some("unsettled".into());
    }
    if s.summary.n < MIN_SAMPLES {
        let n = s.summary.n;
        return Some(format!("{n} sample{}", if n == 1 { "" } else { "s" }));
    }
    match PassLog::of(r) {
        Some(l) if l.mostly_disturbed() => Some("mostly disturbed passes".into()),
        _ => None,
    }
}

/// A's and B's plausibility flags, and A's cache bytes (for the scope).
struct Context<'a> {
    fa: &'a [Flag],
    fb: &'a [Flag],
    private: Option<u64>,
    /// A's largest cache bytes (for what streams memory).
    llc: Option<u64>,
}

fn row(ra: &Record, rb: &Record, sa: &Stat, sb: &Stat, cx: &Context) -> Row {
    let (fa, fb) = (cx.fa, cx.fb);
    let a = ra.figure(&sa.metric).unwrap_or(sa.summary.median);
    let b = rb.figure(&sb.metric).unwrap_or(sb.summary.median);
    let ratio = (a != 0.0).then(|| b / a);
    let ia = interval::of(ra, &sa.metric).unwrap_or((a, a));
    let ib = interval::of(rb, &sb.metric).unwrap_or((b, b));
    let effect = ratio.filter(|r| *r > 0.0).map_or(0.0, |r| r.ln().abs());
    let why = not_comparable(ra, sa, fa)
        .map(|w| format!("A {w}"))
        .or_else(|| not_comparable(rb, sb, fb).map(|w| format!("B {w}")))
        .or_else(|| distance::moved(ra, rb, &sa.metric))
        .or_else(|| plateau::moved(ra, rb, &sa.metric));
    let apart = ib.0 > ia.1 || ib.1 < ia.0;
    let change = match why {
        Some(w) => format!("not comparable ({w})"),
        None if apart && effect > (1.0 + MIN_EFFECT).ln() => clock::held(ra, rb, &sa.metric)
            .or_else(|| reach::reached(a, b, sa, sb))
            .unwrap_or_else(|| "beyond".into()),
        None => "within".into(),
    };
    Row {
        kind: ra.kind.clone(),
        name: ra.name.clone(),
        metric: sa.metric.clone(),
        unit: sa.unit.clone(),
        a,
        b,
        ratio,
        a_interval: ia,
        b_interval: ib,
        disturbed: (PassLog::cell(ra), PassLog::cell(rb)),
        change,
        effect,
        scope: scope::of_figure(ra, &sa.unit, cx.private, cx.llc),
        streams_memory: scope::streams_memory(ra, &sa.unit, cx.llc),
    }
}

/// Beyond first, then level shifts and moved edges, within, not comparable; the largest effect first
/// within each (stable: equal effects keep A's order).
fn sort_rows(rows: &mut [Row]) {
    let order = |r: &Row| match r.change.as_str() {
        "beyond" => 0,
        c if c.starts_with(level::MARK) || c.starts_with(slope::EDGE) => 1,
        c if c.starts_with("within") => 2,
        _ => 3,
    };
    rows.sort_by(|x, y| order(x).cmp(&order(y)).then(y.effect.total_cmp(&x.effect)));
}

/// The outcome of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Matched figures: beyond first (largest effect first), then within, then not comparable.
    pub rows: Vec<Row>,
    /// A's figures with no partner in B.
    pub only_a: usize,
    /// B's figures with no partner in A, each counted once.
    pub only_b: usize,
    /// Figures A and B repeat (same kind, name, metric and unit as an earlier one of the
    /// same run): only the first of each is compared.
    pub duplicates: (usize, usize),
    /// This pair's scatter and whole-kind shifts (None: too few figures to measure it).
    pub spread: Option<PairSpread>,
    /// The core clock change that explained latency figures (their core cycles held),
    /// named once; None when it explained none.
    pub clock: Option<ClockMove>,
    /// Sweep levels whose points moved as a whole, each one finding (its rows read
    /// "level shift (…)").
    pub levels: Vec<LevelShift>,
    /// Hosts of one cluster run only (None: neither run is a `numalab cluster` run).
    pub cluster_hosts: Option<cluster::Hosts>,
    /// Baseline runs B was held against (A and each `--baseline`; see [`baselines`]).
    pub baselines: usize,
}

/// What names one figure: kind, name, metric and unit.
type Key = (String, String, String, String);

/// Every figure's key, in the records' order.
fn keys<'a>(
    recs: &'a [Record],
    keep: &'a dyn Fn(&&Stat) -> bool,
) -> impl Iterator<Item = Key> + 'a {
    recs.iter().flat_map(move |r| {
        r.stats.iter().filter(keep).map(|s| {
            (
                r.kind.clone(),
                r.name.clone(),
                s.metric.clone(),
                s.unit.clone(),
            )
        })
    })
}

/// How many figures repeat an earlier one of the same run.
fn duplicates(recs: &[Record], keep: &dyn Fn(&&Stat) -> bool) -> usize {
    let mut seen = std::collections::HashSet::new();
    keys(recs, keep).filter(|k| !seen.insert(k.clone())).count()
}

/// Every figure present in both (same kind, name and metric; derived
/// duplicates and references only with `all_metrics`), sorted.
pub fn compare<'a>(a: &[Record], b: &'a [Record], all_metrics: bool) -> Comparison {
    let (fa, fb) = (plausible::check(a), plausible::check(b));
    let cx = Context {
        fa: &fa,
        fb: &fb,
        private: scope::private_bytes(a),
        llc: scope::last_level_bytes(a),
    };
    let keep = |s: &&Stat| {
        all_metrics
            || !(DERIVED.contains(&s.metric.as_str()) || REFERENCES.contains(&s.metric.as_str()))
    };
    let mut rows = Vec::new();
    let mut only_a = 0;
    for ra in a {
        for sa in ra.stats.iter().filter(keep) {
            // The same kind and name, the one with the same parameters first (names
            // may repeat; parameters such as pass counts may differ between runs).
            let stat = |rb: &'a Record| {
                rb.stats
                    .iter()
                    .find(|s| s.metric == sa.metric && s.unit == sa.unit)
                    .map(|s| (rb, s))
            };
            let same = |rb: &&Record| rb.kind == ra.kind && rb.name == ra.name;
            let hit = b
                .iter()
                .filter(same)
                .filter(|rb| rb.parameters == ra.parameters)
                .find_map(stat)
                .or_else(|| b.iter().filter(same).find_map(stat));
            match hit {
                Some((rb, sb)) => rows.push(row(ra, rb, sa, sb, &cx)),
                None => only_a += 1,
            }
        }
    }
    let (more, ca, cb, cluster_hosts) = cluster::rows(a, b, MIN_EFFECT);
    rows.extend(more);
    only_a += ca;
    slope::apply(&mut rows, a, b);
    paced::apply(&mut rows, a, b);
    let spread = spread::apply(&mut rows, MIN_EFFECT);
    if spread.is_none() {
        cluster::unjudged(&mut rows);
    }
    let levels = level::apply(&mut rows, a, b);
    slope::edges(&mut rows, a, b);
    let held = rows
        .iter()
        .filter(|r| r.change.starts_with(clock::MARK))
        .count();
    let clock = clock::named(a, b, held);
    sort_rows(&mut rows);
    // B's figures A has none of, each counted once: a repeat in B is a duplicate, not
    // a figure only B measured.
    let a_keys: std::collections::HashSet<Key> = keys(a, &keep).collect();
    let mut seen = std::collections::HashSet::new();
    let only_b = cb
        + keys(b, &keep)
            .filter(|k| seen.insert(k.clone()) && !a_keys.contains(k))
            .count();
    Comparison {
        rows,
        only_a,
        only_b,
        duplicates: (duplicates(a, &keep), duplicates(b, &keep)),
        spread,
        clock,
        levels,
        cluster_hosts,
        baselines: 1,
    }
}

#[cfg(test)]
mod tests;
