//! What a figure exercises, for the scatter it is judged against. Between two runs a
//! figure of a core's own caches moves little, while one that goes through what other
//! CPUs share (a shared L3, memory, another core's lines) moves with whatever else the
//! machine, or on a VM the host's other tenants, did meanwhile: eight pairs of quiet
//! back-to-back quick surveys on a 2-vCPU Emerald Rapids guest moved the first by a
//! median 1.2 % and the second by 4.6 %. One scatter for both set the bar too low for
//! the second and too high for the first, so each is measured apart.

use crate::record::Record;
use serde::Serialize;

/// Whether a figure stays within one core's own caches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// One CPU, no helper, warm lines that fit the largest cache no other CPU shares.
    Core,
    /// Everything else: a shared cache, memory, other cores, several CPUs, the network.
    Shared,
}

impl Scope {
    /// Words for the verdict.
    pub fn words(self) -> &'static str {
        match self {
            Scope::Core => "figures in a core's own caches",
            Scope::Shared => "figures of shared caches, memory and other cores",
        }
    }
}

/// The largest cache of the run's topology that no other CPU shares (None without a
/// topology record).
pub fn private_bytes(records: &[Record]) -> Option<u64> {
    crate::plausible::caches(records)
        .into_iter()
        .filter(|&(_, _, shared_by)| shared_by <= 1)
        .map(|(_, bytes, _)| bytes)
        .max()
}

/// The scope of record `r`'s figures, given the run's private cache bytes.
pub fn of(r: &Record, private: Option<u64>) -> Scope {
    let p = &r.parameters;
    let none_or = |k: &str, ok: &dyn Fn(&serde_json::Value) -> bool| p.get(k).is_none_or(ok);
    let core = private.is_some_and(|limit| {
        matches!(r.kind.as_str(), "latency" | "bandwidth")
            && p.get("state").and_then(|s| s.as_str()) == Some("warm")
            && p.get("size_bytes")
                .and_then(|s| s.as_u64())
                .is_some_and(|s| s <= limit)
            && none_or("helper_cpus", &|h| h.as_array().is_none_or(Vec::is_empty))
            && none_or("requestors", &|n| n.as_u64().is_none_or(|n| n <= 1))
    });
    if core {
        Scope::Core
    } else {
        Scope::Shared
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rec(kind: &str, params: serde_json::Value) -> Record {
        let prov = crate::provenance::Provenance::collect("t", "none");
        Record::new(kind, "x", prov, params)
    }

    #[test]
    fn only_one_cores_warm_lines_within_its_own_caches_are_core() {
        let l = Some(2 << 20);
        let warm = |size: u64| json!({"state": "warm", "size_bytes": size, "helper_cpus": []});
        assert_eq!(of(&rec("latency", warm(1 << 20)), l), Scope::Core);
        assert_eq!(of(&rec("latency", warm(2 << 20)), l), Scope::Core);
        assert_eq!(of(&rec("latency", warm(3 << 20)), l), Scope::Shared);
        // No topology: nothing is known to be private.
        assert_eq!(of(&rec("latency", warm(4096)), None), Scope::Shared);
        let held = json!({"state": "cexm", "size_bytes": 1 << 20, "helper_cpus": [1]});
        assert_eq!(of(&rec("latency", held), l), Scope::Shared);
        let helper = json!({"state": "warm", "size_bytes": 4096, "helper_cpus": [1]});
        assert_eq!(of(&rec("latency", helper), l), Scope::Shared);
        let flushed = json!({"state": "uown", "size_bytes": 1 << 20, "requestors": 1});
        assert_eq!(of(&rec("bandwidth", flushed), l), Scope::Shared);
        let one = json!({"state": "warm", "size_bytes": 1 << 20, "requestors": 1});
        assert_eq!(of(&rec("bandwidth", one), l), Scope::Core);
        let two = json!({"state": "warm", "size_bytes": 1 << 20, "requestors": 2});
        assert_eq!(of(&rec("bandwidth", two), l), Scope::Shared);
        assert_eq!(of(&rec("c2c", warm(4096)), l), Scope::Shared);
    }
}
