//! An allocation under `MPOL_WEIGHTED_INTERLEAVE` (mempolicy mode 6, Linux 6.9 on) and
//! where its pages landed: the memory is mapped, bound with mbind(2) over a node mask,
//! every page touched, and every page's node queried with move_pages(2) (nothing moves).

use crate::{Error, Result};
use std::collections::BTreeMap;

/// The mempolicy mode of weighted interleave (`MPOL_WEIGHTED_INTERLEAVE`).
pub const MPOL_WEIGHTED_INTERLEAVE: i32 = 6;

/// Where the pages of the allocation landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Landed {
    /// The base page size, bytes.
    pub page_bytes: u64,
    /// Pages allocated (the size rounded up to whole pages).
    pub pages: u64,
    /// Pages per node.
    pub per_node: BTreeMap<u32, u64>,
    /// Pages move_pages could not place (not present, or an error per page).
    pub missing: u64,
}

/// An anonymous private mapping, unmapped on drop.
struct Mapping {
    addr: *mut libc::c_void,
    len: usize,
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: addr/len describe the mapping made in `map`.
        unsafe { libc::munmap(self.addr, self.len) };
    }
}

fn last_error(what: &str) -> Error {
    Error::System(format!(
        "{what} failed: {}",
        std::io::Error::last_os_error()
    ))
}

fn map(len: usize) -> Result<Mapping> {
    // SAFETY: a fresh anonymous mapping; the result is checked.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return Err(last_error("mmap"));
    }
    let m = Mapping { addr, len };
    // Base pages only: a huge page would carry 512 pages to one node in one step.
    // SAFETY: the range is the mapping just made.
    unsafe { libc::madvise(m.addr, m.len, libc::MADV_NOHUGEPAGE) };
    Ok(m)
}

/// mbind(2) the mapping with `MPOL_WEIGHTED_INTERLEAVE` over `nodes`.
fn bind(m: &Mapping, nodes: &[u32]) -> Result<()> {
    let top = nodes.iter().copied().max().unwrap_or(0) as usize;
    let mut mask = vec![0 as libc::c_ulong; top / 64 + 1];
    for &n in nodes {
        mask[n as usize / 64] |= 1 << (n % 64);
    }
    // The kernel reads maxnode - 1 bits.
    let maxnode = (mask.len() * 64 + 1) as libc::c_ulong;
    // SAFETY: the range is our mapping; the mask holds maxnode - 1 bits.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            m.addr,
            m.len as libc::c_ulong,
            MPOL_WEIGHTED_INTERLEAVE,
            mask.as_ptr(),
            maxnode,
            0 as libc::c_uint,
        )
    };
    if rc < 0 {
        let e = std::io::Error::last_os_error();
        return Err(Error::Unsatisfiable(format!(
            "mbind(MPOL_WEIGHTED_INTERLEAVE) over node{} {} failed: {}",
            if nodes.len() == 1 { "" } else { "s" },
            crate::cpulist::format(nodes),
            crate::buffer::sandbox_words("mbind", e.to_string())
        )));
    }
    Ok(())
}

/// The node of every page (move_pages with no target nodes: a query).
fn locate(m: &Mapping, page: usize) -> Result<(BTreeMap<u32, u64>, u64)> {
    let addrs: Vec<*mut libc::c_void> = (0..m.len)
        .step_by(page)
        // SAFETY: offsets stay inside the mapping.
        .map(|o| unsafe { m.addr.cast::<u8>().add(o) }.cast::<libc::c_void>())
        .collect();
    crate::buffer::pages_per_node(&addrs)
}

/// Allocate `bytes` (rounded up to whole base pages) under weighted interleave over
/// `nodes`, touch every page and count where each landed. A kernel without the mode
/// refuses the mbind: `Error::Unsatisfiable` with the call's error.
pub fn weighted_interleave(bytes: u64, nodes: &[u32]) -> Result<Landed> {
    if nodes.is_empty() || bytes == 0 {
        return Err(Error::input(
            "weighted interleave needs a size above 0 and at least one node",
        ));
    }
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
    let len = usize::try_from(bytes)
        .ok()
        .and_then(|b| b.checked_next_multiple_of(page))
        .ok_or_else(|| Error::input(format!("{bytes} bytes do not fit this address space")))?;
    let m = map(len)?;
    bind(&m, nodes)?;
    for off in (0..len).step_by(page) {
        // SAFETY: off < len, inside our mapping; volatile so the write happens.
        unsafe { std::ptr::write_volatile(m.addr.cast::<u8>().add(off), 1) };
    }
    let (per_node, missing) = locate(&m, page)?;
    Ok(Landed {
        page_bytes: page as u64,
        pages: (len / page) as u64,
        per_node,
        missing,
    })
}
