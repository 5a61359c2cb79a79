//! Where the mixed kernels' streams start relative to each other.
//!
//! Buffers mapped one by one come back 2 MiB-aligned (the kernel aligns large
//! anonymous mappings) and, at power-of-two sizes, a power of two apart: line k of
//! every stream then sits at the same address modulo the buffer size, and the streams
//! contend for the same cache sets and DRAM banks at every step. On a 2-vCPU EPYC VM
//! (AVX2, 4 KiB pages, 3:1 with nt stores, 128 MiB a stream, 15–21 interleaved
//! rounds) starting stream g at g × 4 KiB read 1.05× the aligned layout, at g × 8 KiB
//! 1.17×, at g × 16 KiB to g × 1 MiB 1.19–1.30× (a later pair of runs, the host in
//! another state: g × 68 KiB 1.07–1.14×), the same for likwid's loop shape as for
//! numalab's (which read 0.995–0.998× likwid's, laid out alike). likwid's `-w S0:512MB:1` vectors (128,000,000 bytes each, back to
//! back) happen to be 8 KiB apart modulo 64 KiB; STREAM has its OFFSET for the same
//! reason. So buffer g of a measurement (requestor-major: the requestors on one core
//! share its caches) starts g × [`STAGGER`] bytes into its own mapping.

use numalab_topo::buffer::Buffer;
use numalab_topo::{Host, MemPlacement, PageSize, Result};

/// Bytes between consecutive streams' starts beyond their mapping: 17 pages, so the
/// first 16 streams start at distinct 4 KiB pages modulo 64 KiB, and never at the
/// same offset modulo any larger power of two.
pub const STAGGER: u64 = 17 * 4096;

/// Where buffer `slot` starts in its mapping of `size` bytes plus the offset: `slot` ×
/// [`STAGGER`], except with 1 GiB pages where that would take one more page than
/// `size` needs (the offset is then 0: a 1 GiB page is a scarce reservation).
pub fn offset(slot: usize, size: u64, page: PageSize) -> u64 {
    let off = slot as u64 * STAGGER;
    let p = page.bytes();
    if p <= PageSize::Huge2M.bytes() || (size + off).div_ceil(p) <= size.div_ceil(p) {
        off
    } else {
        0
    }
}

/// One stream's buffer: a mapping of `size` bytes plus its offset, and where the
/// stream starts in it.
pub struct Staggered {
    /// The mapping (its placement proof covers the offset too).
    pub buf: Buffer,
    /// Bytes from the mapping's start to the stream's.
    pub offset: u64,
}

impl Staggered {
    /// Allocate buffer `slot` of `size` bytes on `mem`, starting [`offset`] bytes in.
    pub fn allocate(host: &Host, mem: &MemPlacement, size: u64, slot: usize) -> Result<Staggered> {
        let offset = offset(slot, size, mem.page_size);
        let buf = Buffer::allocate(host, mem, size + offset)?;
        Ok(Staggered { buf, offset })
    }

    /// The stream's first byte.
    pub fn as_ptr(&self) -> *mut u8 {
        // SAFETY: the mapping holds `offset + size` bytes.
        unsafe { self.buf.as_ptr().add(self.offset as usize) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_start_at_distinct_pages_modulo_64k_and_every_larger_power_of_two() {
        let size = 128 << 20;
        let offs: Vec<u64> = (0..16).map(|g| offset(g, size, PageSize::Base)).collect();
        assert_eq!(offs[0], 0);
        for bits in 16..=30 {
            let m = 1u64 << bits;
            let mut seen: Vec<u64> = offs.iter().map(|o| (size + o) % m).collect();
            seen.sort_unstable();
            seen.dedup();
            assert_eq!(seen.len(), 16, "modulo 2^{bits}");
        }
        assert!(offs.iter().all(|o| o % 4096 == 0));
        assert_eq!(offset(3, size, PageSize::Huge2M), 3 * STAGGER);
    }

    #[test]
    fn one_gib_pages_take_no_extra_page_for_the_offset() {
        assert_eq!(offset(2, 1 << 30, PageSize::Huge1G), 0);
        assert_eq!(offset(2, 1 << 29, PageSize::Huge1G), 2 * STAGGER);
    }
}
