//! Cache-relative sizes, written once: every experiment that sizes a buffer from the
//! machine's caches asks here, so the rules cannot drift apart.

use numalab_topo::{Level, Machine};

/// LLC assumed when the topology reports none.
const UNKNOWN_LLC: u64 = 32 << 20;
/// Private cache assumed when the topology reports neither L2 nor L1.
const UNKNOWN_PRIVATE: u64 = 512 << 10;

/// A buffer size far beyond the caches: 8 × the last-level cache (32 MiB assumed when
/// unknown), a power of two, at least 256 MiB. Random walks over less keep finding
/// lines an earlier walk left in a large or adaptive L3.
pub fn beyond_caches(m: &Machine) -> u64 {
    let llc = m.last_level_cache().map(|c| c.bytes).unwrap_or(UNKNOWN_LLC);
    (llc * 8).next_power_of_two().max(256 << 20)
}

/// A chase of lines flushed from every cache before each pass (`uown`): 2 × the
/// last-level cache, a power of two, at least 256 MiB. The flush, not the size, keeps
/// its lines out of the caches, so it needs no [`beyond_caches`] margin; what the
/// larger buffer cost was its first touch: on a 2-vCPU guest whose freed pages the
/// host reclaims (free page reporting) 4 GiB took 3.7–14.8 s to set up where 1 GiB
/// took 1.7–2.0 s, and the two read the same (medians 127–131 ns against 121–138 ns,
/// interleaved, 2026-11-28).
pub fn flushed_chase(m: &Machine) -> u64 {
    let llc = m.last_level_cache().map(|c| c.bytes).unwrap_or(UNKNOWN_LLC);
    (llc * 2).next_power_of_two().max(256 << 20)
}

/// The private cache: L2, or L1 where the topology reports no L2.
fn private_cache(m: &Machine) -> Option<u64> {
    m.cache(2).or_else(|| m.cache(1)).map(|c| c.bytes)
}

/// Half the L2 (or L1): lines a helper holds all of in its private cache.
pub fn half_private_cache(m: &Machine) -> u64 {
    private_cache(m).unwrap_or(UNKNOWN_PRIVATE) / 2
}

/// Bytes a helper streams to push its lines out of its private cache (cexm): twice
/// the L2 (or L1), 4 MiB when unknown.
pub fn eviction_buffer(m: &Machine) -> usize {
    private_cache(m).map(|b| 2 * b as usize).unwrap_or(4 << 20)
}

/// Bytes per requestor for streaming past every cache: all the machine's LLCs together,
/// four times over, spread over `requestors`; at least 64 MiB, in 2 MiB steps.
pub fn streaming(m: &Machine, requestors: usize) -> u64 {
    let llc = m.last_level_cache().map(|c| c.bytes).unwrap_or(UNKNOWN_LLC);
    let domains = m.domains(Level::L3).map(|d| d.len()).unwrap_or(1).max(1) as u64;
    (4 * llc * domains / requestors.max(1) as u64)
        .max(64 << 20)
        .next_multiple_of(2 << 20)
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_topo::{Host, TopologySource};

    fn synthetic(s: &str) -> Machine {
        Host::load(&TopologySource::Synthetic(s.into()))
            .expect("synthetic topology")
            .machine
    }

    #[test]
    fn sizes_follow_the_caches() {
        let m = synthetic("pack:1 l3:1(size=32MiB) l2:2(size=1MiB) l1d:1(size=48KiB) core:1 pu:1");
        assert_eq!(beyond_caches(&m), 256 << 20);
        assert_eq!(half_private_cache(&m), 512 << 10);
        assert_eq!(eviction_buffer(&m), 2 << 20);
        assert_eq!(streaming(&m, 1), 128 << 20);
        assert_eq!(streaming(&m, 4), 64 << 20);
        let big = synthetic("pack:1 l3:1(size=96MiB) l2:2(size=1MiB) core:1 pu:1");
        assert_eq!(beyond_caches(&big), 1 << 30);
    }
}
