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

/// The first usable CPU.
pub fn first_cpu(m: &Machine) -> Result<u32> {
    m.pus
        .first()
        .map(|p| p.os)
        .ok_or_else(|| Error::Unsatisfiable("the topology has no usable CPU".into()))
}
