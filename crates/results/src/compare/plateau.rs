//! A latency sweep's plateau figure ("plateau L2", "plateau memory") is the median of
//! the minima of the sizes the plateau spans, and which sizes those are is decided
//! afresh in each run (a point within ±12 % of the plateau's median joins it). When A's
//! plateau spans other sizes than B's, the two figures are medians of different
//! points: on a VM two back-to-back quick surveys gave "memory" over 6–32 MiB in one
//! and 8–48 MiB in the next, the second taking in sizes the first left to L3. Each
//! size is compared as its own row already, so such a plateau is "not comparable",
//! naming both spans, and a plateau over the same sizes is compared as any figure.

use crate::record::Record;
use crate::report::bytes;

/// The prefix of a sweep record's plateau metrics.
const PREFIX: &str = "plateau ";

/// (from, to) bytes of the plateau named by `metric` in sweep record `r`.
fn span(r: &Record, metric: &str) -> Option<(u64, u64)> {
    let level = metric.strip_prefix(PREFIX)?;
    let p = r
        .data
        .as_ref()?
        .get("plateaus")?
        .as_array()?
        .iter()
        .find(|p| p["level"] == level)?;
    Some((p["from_bytes"].as_u64()?, p["to_bytes"].as_u64()?))
}

/// Why plateau `metric` of sweeps `a` and `b` cannot be compared (they span other
/// sizes), or None: not a plateau, a span unknown on either side, or the same span.
pub fn moved(a: &Record, b: &Record, metric: &str) -> Option<String> {
    if a.kind != "latency-sweep" {
        return None;
    }
    let (sa, sb) = (span(a, metric)?, span(b, metric)?);
    (sa != sb).then(|| {
        let s = |(f, t): (u64, u64)| format!("{}–{}", bytes(f), bytes(t));
        format!(
            "the plateau spans {} in A, {} in B: other sizes' minima",
            s(sa),
            s(sb)
        )
    })
}
