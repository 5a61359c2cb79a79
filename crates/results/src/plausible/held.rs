//! Lines another core holds, read as fast as the requestor's own cache: the figure did
//! not measure another core's cache at all.

use super::{Flag, Ref, HELD_OWN_CACHE_FACTOR};
use crate::record::Record;

/// The metrics a held-line latency record states its figure in.
const FIGURES: [&str; 3] = ["latency", "latency_tsc", "latency_cycles"];

/// A latency record of lines a helper holds (it carries `own_cache_reference`, the
/// same lines chased from the requestor's own caches) whose figure is within
/// [`HELD_OWN_CACHE_FACTOR`] of that reference.
pub(super) fn held_as_own(records: &[Record], flags: &mut Vec<Flag>) {
    for r in records.iter().filter(|r| r.kind == "latency") {
        let (Some(held), Some(own)) = (r.median("latency"), r.median("own_cache_reference")) else {
            continue;
        };
        if held > own * HELD_OWN_CACHE_FACTOR {
            continue;
        }
        let state = r.parameters["state"].as_str().unwrap_or("held");
        let cpus: Vec<String> = r.parameters["helper_cpus"]
            .as_array()
            .map(|a| a.iter().map(|c| c.to_string()).collect())
            .unwrap_or_default();
        let helpers = match cpus.len() {
            0 => "the helper".to_string(),
            1 => format!("the helper (CPU {})", cpus[0]),
            _ => format!("the helpers (CPUs {})", cpus.join(",")),
        };
        flags.push(Flag {
            rule: "held-as-own-cache",
            records: FIGURES
                .iter()
                .filter(|m| r.median(m).is_some())
                .map(|m| Ref::of(r, m))
                .collect(),
            why: format!(
                "lines {state} of '{}' read in {held:.1} ns, within {HELD_OWN_CACHE_FACTOR}× the {own:.1} ns of the same lines in the requestor's own caches: {helpers} shared the requestor's caches (on a VM, vCPUs the host ran as SMT siblings of one core), so no line came from another core",
                r.name
            ),
        });
    }
}
