//! What a figure exercises, for the scatter it is judged against. Between two runs a
//! figure of a core's own caches moves little, while one that goes through what other
//! CPUs share (a shared L3, memory, another core's lines) moves with whatever else the
//! machine, or on a VM the host's other tenants, did meanwhile: eight pairs of quiet
//! back-to-back quick surveys on a 2-vCPU Emerald Rapids guest moved the first by a
//! median 1.2 % and the second by 4.6 %. One scatter for both set the bar too low for
//! the second and too high for the first, so each is measured apart.
//!
//! Figures of two CPUs scatter further again, since on a VM they depend on where the
//! hypervisor put the vCPUs and what else ran on those host cores, which a guest sees
//! only in part (`crate::distance`). On a 2-vCPU EPYC guest (2026-11-29, seven quiet
//! pairs) lines another CPU held read 0.47–3.3× between identical runs whose CAS probes
//! agreed (a line modified on CPU 1 read 21.9 then 73.4 ns), while one CPU's figures of
//! memory kept within 0.7–1.25×; judged against one scatter, 7 of the first three
//! pairs' 10 figures beyond were held lines. So lines another CPU holds are a scope of
//! their own. (Streams of several CPUs at once as a fourth scope gave 20 of 435 figures
//! beyond over the seven pairs where three scopes gave 18: their scatter is mostly the
//! loaded curves' tight points. They stay with the shared figures.)
//!
//! Bandwidths streamed from memory scatter further than the latencies and caches they
//! were judged with: a core's `copy` of 128 MiB, measured 30 times a second apart on
//! the quiet EPYC guest, read 14.9–18.6 GB/s (best of 7 passes each, the passes of one
//! run within a few percent of each other), so two runs land up to 25 % apart while
//! their intervals are narrow. Over the 20 quiet quick survey pairs kept on 2026-11-29,
//! 15 of the 49 figures beyond were such bandwidths or a loaded point's injected
//! bandwidth; as a scope of their own 40 were beyond, and over four full pairs 12
//! became 4.

use crate::record::Record;
use serde::Serialize;

/// Whether a figure stays within one core's own caches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// One CPU, no helper, warm lines that fit the largest cache no other CPU shares.
    Core,
    /// What others share: a shared cache, memory latency, several CPUs at once, the
    /// network.
    Shared,
    /// A bandwidth streamed from memory ([`streams_memory`]) or a loaded point's
    /// injected bandwidth.
    Memory,
    /// Lines another CPU holds or shares: a helper's lines, c2c, invalidate, intervene.
    Held,
}

impl Scope {
    /// Words for the verdict, after "×1.22 for" (short: the verdict is one line).
    pub fn words(self) -> &'static str {
        match self {
            Scope::Core => "a core's own caches",
            Scope::Shared => "shared caches, memory latency and several CPUs",
            Scope::Memory => "memory bandwidth",
            Scope::Held => "lines another CPU holds",
        }
    }

    /// Every scope, in the order the verdict names them.
    pub const ALL: [Scope; 4] = [Scope::Core, Scope::Shared, Scope::Memory, Scope::Held];
}

/// Kinds whose every figure is of lines another CPU holds, or of a line two CPUs pass.
const HELD_KINDS: [&str; 4] = ["c2c", "c2c-matrix", "invalidate", "intervene"];

/// The largest cache of the run's topology that no other CPU shares (None without a
/// topology record).
pub fn private_bytes(records: &[Record]) -> Option<u64> {
    crate::plausible::caches(records)
        .into_iter()
        .filter(|&(_, _, shared_by)| shared_by <= 1)
        .map(|(_, bytes, _)| bytes)
        .max()
}

/// The largest cache of the run's topology (None without a topology record).
pub fn last_level_bytes(records: &[Record]) -> Option<u64> {
    crate::plausible::caches(records)
        .into_iter()
        .map(|(_, bytes, _)| bytes)
        .max()
}

/// Whether `r`'s figures in `unit` are a bandwidth streamed from memory: a kernel or
/// mix whose buffer exceeds the largest cache, or flushed lines. Those move together
/// with what else uses the memory: on the EPYC guest one quiet run read every one of
/// them 1.4–1.7× below the next (one CPU's `nt` 12.0 then 20.9 GB/s, two CPUs' mixes
/// 11–16 then 18–22), while its caches' figures held.
pub fn streams_memory(r: &Record, unit: &str, llc: Option<u64>) -> bool {
    if unit != "GB/s" || !matches!(r.kind.as_str(), "bandwidth" | "bandwidth-mix") {
        return false;
    }
    let p = &r.parameters;
    p.get("state").and_then(|s| s.as_str()) == Some("uown")
        || llc.is_some_and(|l| {
            p.get("size_bytes")
                .and_then(|s| s.as_u64())
                .is_some_and(|s| s > l)
        })
}

/// The scope of record `r`'s figure in `unit`, given the run's private cache bytes and
/// its largest cache's: a bandwidth streamed from memory, or a loaded point's injected
/// bandwidth (its injectors stream memory), is [`Scope::Memory`] unless its lines are
/// held; the rest as [`of`] says.
pub fn of_figure(r: &Record, unit: &str, private: Option<u64>, llc: Option<u64>) -> Scope {
    let scope = of(r, private);
    let injected = r.kind == "loaded-latency" && unit == "GB/s";
    if scope != Scope::Held && (injected || streams_memory(r, unit, llc)) {
        Scope::Memory
    } else {
        scope
    }
}

/// The scope of record `r`'s figures, given the run's private cache bytes, by what
/// the record runs (never [`Scope::Memory`]: that is a figure's, [`of_figure`]).
pub fn of(r: &Record, private: Option<u64>) -> Scope {
    let p = &r.parameters;
    let none_or = |k: &str, ok: &dyn Fn(&serde_json::Value) -> bool| p.get(k).is_none_or(ok);
    let state = p.get("state").and_then(|s| s.as_str());
    // A state other than the CPU's own (warm) or flushed (uown) lines is lines a helper
    // left: modified, exclusive or shared in another core's caches.
    let held =
        HELD_KINDS.contains(&r.kind.as_str()) || state.is_some_and(|s| s != "warm" && s != "uown");
    let core = private.is_some_and(|limit| {
        matches!(r.kind.as_str(), "latency" | "bandwidth")
            && state == Some("warm")
            && p.get("size_bytes")
                .and_then(|s| s.as_u64())
                .is_some_and(|s| s <= limit)
            && none_or("helper_cpus", &|h| h.as_array().is_none_or(Vec::is_empty))
            && none_or("requestors", &|n| n.as_u64().is_none_or(|n| n <= 1))
    });
    if held {
        Scope::Held
    } else if core {
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
        let flushed = json!({"state": "uown", "size_bytes": 1 << 20, "requestors": 1});
        assert_eq!(of(&rec("bandwidth", flushed), l), Scope::Shared);
        let one = json!({"state": "warm", "size_bytes": 1 << 20, "requestors": 1});
        assert_eq!(of(&rec("bandwidth", one), l), Scope::Core);
    }

    #[test]
    fn lines_another_cpu_holds_are_a_scope_of_their_own() {
        let l = Some(2 << 20);
        let held = json!({"state": "cexm", "size_bytes": 1 << 20, "helper_cpus": [1]});
        assert_eq!(of(&rec("latency", held), l), Scope::Held);
        let shared = json!({"state": "shrd:1", "size_bytes": 1 << 18, "requestors": 1});
        assert_eq!(of(&rec("bandwidth", shared), l), Scope::Held);
        assert_eq!(of(&rec("c2c", json!({"cpus": "0-1"})), l), Scope::Held);
        assert_eq!(
            of(&rec("invalidate", json!({"state": "shrd:1"})), None),
            Scope::Held
        );
        let helper = json!({"state": "warm", "size_bytes": 4096, "helper_cpus": [1]});
        // A warm buffer with a helper beside it, or several CPUs streaming at once, is
        // not held lines.
        assert_eq!(of(&rec("latency", helper), l), Scope::Shared);
        let two = json!({"state": "warm", "size_bytes": 1 << 20, "requestors": 2});
        assert_eq!(of(&rec("bandwidth", two), l), Scope::Shared);
        let loaded = json!({"injectors": 1, "injector_cpus": "1"});
        assert_eq!(of(&rec("loaded-latency", loaded), l), Scope::Shared);
    }

    #[test]
    fn bandwidths_streamed_from_memory_and_injected_bandwidth_are_the_memory_scope() {
        let (p, l) = (Some(2 << 20), Some(32 << 20));
        let big = json!({"state": "warm", "size_bytes": 128u64 << 20, "requestors": 1});
        let r = rec("bandwidth", big);
        assert_eq!(of_figure(&r, "GB/s", p, l), Scope::Memory);
        // The same record's latency, or no topology to tell the largest cache: shared.
        assert_eq!(of_figure(&r, "ns", p, l), Scope::Shared);
        assert_eq!(of_figure(&r, "GB/s", p, None), Scope::Shared);
        // A loaded point's injected bandwidth is memory, its latency shared.
        let loaded = rec(
            "loaded-latency",
            json!({"injectors": 1, "size_bytes": 64u64 << 20}),
        );
        assert_eq!(of_figure(&loaded, "GB/s", p, l), Scope::Memory);
        assert_eq!(of_figure(&loaded, "ns", p, l), Scope::Shared);
        // A cache-sized kernel stays where it was; held lines stay held.
        let small = rec(
            "bandwidth",
            json!({"state": "warm", "size_bytes": 1u64 << 20, "requestors": 1}),
        );
        assert_eq!(of_figure(&small, "GB/s", p, l), Scope::Core);
        let shared = rec(
            "bandwidth",
            json!({"state": "shrd:1", "size_bytes": 64u64 << 20}),
        );
        assert_eq!(of_figure(&shared, "GB/s", p, l), Scope::Held);
    }

    #[test]
    fn bandwidths_beyond_the_largest_cache_or_of_flushed_lines_stream_memory() {
        let l = Some(32 << 20);
        let bw = |kind: &str, p: serde_json::Value| rec(kind, p);
        let big = json!({"state": "warm", "size_bytes": 128u64 << 20, "requestors": 1});
        assert!(streams_memory(&bw("bandwidth", big.clone()), "GB/s", l));
        // The same record's figures in another unit, and no topology: not known.
        assert!(!streams_memory(&bw("bandwidth", big.clone()), "ns", l));
        assert!(!streams_memory(&bw("bandwidth", big), "GB/s", None));
        let small = json!({"state": "warm", "size_bytes": 1u64 << 20});
        assert!(!streams_memory(&bw("bandwidth", small), "GB/s", l));
        let flushed = json!({"state": "uown", "size_bytes": 256u64 << 10});
        assert!(streams_memory(&bw("bandwidth", flushed), "GB/s", None));
        let mix = json!({"size_bytes": 64u64 << 20, "requestors": 2});
        assert!(streams_memory(&bw("bandwidth-mix", mix), "GB/s", l));
        let loaded = json!({"size_bytes": 64u64 << 20, "injectors": 1});
        assert!(!streams_memory(&bw("loaded-latency", loaded), "GB/s", l));
    }
}
