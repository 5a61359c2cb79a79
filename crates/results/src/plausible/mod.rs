//! Physical plausibility across records: rules that flag what cannot be (N threads
//! streaming more than N times one thread, loaded latency below unloaded, a write
//! stream beating reads from the same level, a mix with writes far above reads only,
//! a cache slower than memory, a plateau wider than its cache, G pointer chains more
//! than G times as fast as one, lines another core holds read as fast as one's own).
//! A flagged figure is never a headline: the summary shows it as "implausible (rule
//! …)" and the report lists each flag with its figures.
//! Rules read records by kind, parameters and metrics only (results never names an
//! experiment's types).

mod bandwidth;
mod held;
mod latency;
mod mix;
mod mlp;

use crate::record::Record;
use serde::Serialize;
use std::fmt::Write;

/// How far N threads' aggregate bandwidth may exceed N × one thread's (or fall below
/// one thread's) before it is flagged: medians of settled figures scatter by a few
/// percent between steps, and a shared prefetcher or turbo bin can add a little more;
/// 10 % is past both, while the superlinear figures seen on busy VMs (3×, 6.5× on two
/// cores) are far past it.
pub const BANDWIDTH_SCALING_TOL: f64 = 0.10;

/// How far a loaded-latency point may read below the unloaded latency of the same
/// memory: two independently settled medians of one memory differ by up to their
/// tolerances (about 5 % each), so 10 % below is more than noise.
pub const LOADED_BELOW_TOL: f64 = 0.10;

/// How far a write stream (RDEX, zero) may exceed the best read stream from the same
/// level: a write moves at least the line it reads for ownership, so it cannot be
/// faster than reading; 10 % covers the two figures' noise.
pub const WRITE_OVER_READ_TOL: f64 = 0.10;

/// How far a mix with writes may stream above the reads-only mix of the same memory
/// and CPUs: it moves its reads' lines and its writes', so it cannot be much faster,
/// but some memory controllers turn a read/write mix a little better than pure reads
/// (MLC's 3:1 row sometimes edges past "ALL Reads"); 50 % is past that, while the busy
/// VM's 1:1 at 5× its reads-only mix is far past it.
pub const MIX_OVER_READS_TOL: f64 = 0.5;

/// How far a level may read faster than the level above it (a smaller buffer) or a
/// cache slower than memory: adjacent plateaus are separated by the ±12 % plateau
/// rule already, so a level 10 % faster than the one above is not that level.
pub const LEVEL_ORDER_TOL: f64 = 0.10;

/// How far past its cache's size a plateau may reach: exclusive and victim caches hold
/// a little more than their own size together with the level above, and a random chase
/// still hits for most lines just past the size, so a plateau ending up to 1.5× the
/// cache is still that cache; beyond, memory served it.
pub const PLATEAU_SPAN_TOL: f64 = 0.5;

/// The most accesses one core can have in flight to memory, for the MLP rule. Each
/// of G pointer chains waits on its own last load, so G chains never have more than G
/// in flight, whatever the core; the core's own miss tracking bounds it further (L1
/// fill buffers or miss-status registers: 10–24 on current x86 and Arm server cores;
/// the L2's queue of outstanding misses: 32–64). 64 is at or above all of these, so
/// the rule rests on the chains' bound, which no core can beat, and never on a guess
/// at one core's buffers (EARTH's G is at most 64 anyway).
pub const MLP_MOST_IN_FLIGHT: u64 = 64;

/// How far G chains' ns per access may read below one chain's ÷ min(G,
/// [`MLP_MOST_IN_FLIGHT`]): at that bound every chain's access takes exactly the
/// unloaded latency with no loop overhead at all, which no real curve reaches; the
/// two medians are taken moments apart and move by a few percent each, so 25 % below
/// is far past noise while the busy VM's 6.8 ns against 1,400 ns ÷ 24 (58 ns) is 8×.
pub const MLP_BELOW_TOL: f64 = 0.25;

/// How close to the requestor's own-cache figure a line another core holds may read
/// before it is flagged: such a line crosses to the other core (its L2, the mesh or
/// ring, a snoop), at least twice an own L2 hit on every current CPU (75–95 ns
/// against 6 ns on the Emerald Rapids guest), so 1.5× is far past noise, while a
/// helper that shared the requestor's core (vCPUs the host put on SMT siblings) reads
/// at the own-cache figure itself (5.6 ns against 6.0 ns, 6 of 150 runs there).
pub const HELD_OWN_CACHE_FACTOR: f64 = 1.5;

/// One figure a rule names.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ref {
    /// The record's kind.
    pub kind: String,
    /// The record's name.
    pub name: String,
    /// The metric whose figure breaks the rule.
    pub metric: String,
    /// The record's identity ([`key`]), to find the figure on a card.
    #[serde(skip)]
    pub key: String,
}

impl Ref {
    /// `metric` of `r`.
    pub fn of(r: &Record, metric: &str) -> Ref {
        Ref {
            kind: r.kind.clone(),
            name: r.name.clone(),
            metric: metric.into(),
            key: key(r),
        }
    }
}

/// A figure (or figures) that cannot be, the rule it breaks and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Flag {
    /// The rule's id, e.g. "bandwidth-scaling".
    pub rule: &'static str,
    /// The figures involved (each may be the wrong one, so all are flagged).
    pub records: Vec<Ref>,
    /// One line with the figures: "2 threads read 39.6 GB/s, 6.5× one thread's 6.1 GB/s".
    pub why: String,
}

impl Flag {
    /// Whether this flag names `metric` of the record with identity `key`.
    pub fn names(&self, key: &str, metric: &str) -> bool {
        self.records
            .iter()
            .any(|r| r.key == key && r.metric == metric)
    }
}

/// A record's identity within a set: kind, name and parameters (names repeat across
/// sizes and threads; parameters tell them apart).
pub fn key(r: &Record) -> String {
    format!("{}\u{1f}{}\u{1f}{}", r.kind, r.name, r.parameters)
}

/// Every rule run on `records`; an empty list when nothing is implausible.
pub fn check(records: &[Record]) -> Vec<Flag> {
    let mut flags = Vec::new();
    bandwidth::scaling(records, &mut flags);
    bandwidth::writes_over_reads(records, &mut flags);
    mix::mix_over_reads(records, &mut flags);
    latency::loaded_below_unloaded(records, &mut flags);
    latency::curve_falls(records, &mut flags);
    latency::level_order(records, &mut flags);
    latency::plateau_span(records, &mut flags);
    held::held_as_own(records, &mut flags);
    mlp::below_one_chain(records, &mut flags);
    flags
}

/// The first flag naming `metric` of `r`, if any.
pub fn flag_of<'a>(flags: &'a [Flag], r: &Record, metric: &str) -> Option<&'a Flag> {
    let k = key(r);
    flags.iter().find(|f| f.names(&k, metric))
}

/// "rule: why" lines, one per flag, under a heading; empty when there are none.
pub fn text(flags: &[Flag]) -> String {
    if flags.is_empty() {
        return String::new();
    }
    let mut s = String::from("Implausible figures (not used in the summary):\n");
    for f in flags {
        let _ = writeln!(s, "  rule {}: {}", f.rule, f.why);
    }
    s
}

/// The flags as an HTML list (empty when there are none).
pub fn html(flags: &[Flag]) -> String {
    if flags.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "<div class=\"implausible\" id=\"implausible\"><p><b>Implausible figures</b> (not used in the summary):</p><ul>",
    );
    for f in flags {
        let _ = write!(
            s,
            "<li>rule <code>{}</code>: {}</li>",
            f.rule,
            crate::report::esc(&f.why)
        );
    }
    s.push_str("</ul></div>");
    s
}

/// The cache sizes of the records' topology by level (level, bytes, shared_by).
pub(crate) fn caches(records: &[Record]) -> Vec<(u64, u64, u64)> {
    let Some(cs) = records
        .iter()
        .find(|r| r.kind == "topo")
        .and_then(|t| t.data.as_ref()?.get("caches")?.as_array().cloned())
    else {
        return Vec::new();
    };
    let mut v: Vec<(u64, u64, u64)> = cs
        .iter()
        .filter_map(|c| {
            Some((
                c["level"].as_u64()?,
                c["bytes"].as_u64()?,
                c["shared_by"].as_u64().unwrap_or(1),
            ))
        })
        .collect();
    v.sort_unstable();
    v
}

#[cfg(test)]
mod tests;
