//! Where suite buffers live: on a CPU's own node, bound and verified.

use numalab_topo::buffer::Buffer;
use numalab_topo::plan::resolve_memory;
use numalab_topo::{Error, Host, Machine, MemSpec, PageSize, Result};

/// The CPU's local node when it has memory, else the first node that has.
pub fn node_near(m: &Machine, cpu: u32) -> Result<u32> {
    m.pu(cpu)
        .and_then(|p| p.node)
        .filter(|n| m.node(*n).is_some_and(|x| m.has_memory(x)))
        .or_else(|| m.memory_nodes().first().copied())
        .ok_or_else(|| Error::Unsatisfiable("no NUMA node with memory".into()))
}

/// `bytes` (at least one byte) on the node nearest `cpu`, in pages of `page`.
pub fn buffer_near(host: &Host, cpu: u32, bytes: u64, page: PageSize) -> Result<Buffer> {
    let m = &host.machine;
    let mem = resolve_memory(m, &MemSpec::Node(node_near(m, cpu)?), page, &[])?;
    Buffer::allocate(host, &mem, bytes.max(1))
}

/// A buffer size far beyond the caches: 8 × the last-level cache (32 MiB assumed when
/// unknown), a power of two, at least 256 MiB. Random walks over less keep finding
/// lines an earlier walk left in a large or adaptive L3.
pub fn beyond_caches(m: &Machine) -> u64 {
    let llc = m.last_level_cache().map(|c| c.bytes).unwrap_or(32 << 20);
    (llc * 8).next_power_of_two().max(256 << 20)
}

/// The first usable CPU.
pub fn first_cpu(m: &Machine) -> Result<u32> {
    m.pus
        .first()
        .map(|p| p.os)
        .ok_or_else(|| Error::Unsatisfiable("the topology has no usable CPU".into()))
}
