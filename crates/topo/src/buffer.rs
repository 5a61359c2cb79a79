//! Buffers bound to NUMA nodes, with page-by-page proof of where they landed.
//!
//! The mapping is made with mmap (hugetlb flags for 2m/1g, madvise for THP and
//! for refusing THP on 4k buffers), bound with hwloc (strict policy), touched,
//! then every page's node is queried with move_pages(2) before anyone times it.

use crate::error::{Error, Result};
use crate::load::Host;
use crate::plan::{check_capacity, MemPlacement};
use crate::spec::PageSize;
use hwlocality::memory::binding::{MemoryBindingFlags, MemoryBindingPolicy};
use hwlocality::memory::nodeset::NodeSet;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

const MAP_HUGE_SHIFT: i32 = 26;
const BASE_PAGE: usize = 4096;

/// Where a buffer's pages were found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemProof {
    /// Buffer size in bytes (rounded up to the page size).
    pub bytes: u64,
    /// Page size asked for.
    pub page_size: PageSize,
    /// Pages queried (one per page of the mapping's page size).
    pub pages_checked: u64,
    /// Pages found on each node.
    pub pages_per_node: BTreeMap<u32, u64>,
    /// Pages the kernel reported as not present or with an error.
    pub pages_missing: u64,
    /// Bytes of the mapping backed by transparent huge pages (from /proc/self/smaps).
    pub thp_bytes: Option<u64>,
    /// The nodes the placement asked for.
    pub expected_nodes: Vec<u32>,
}

/// An anonymous mapping bound to nodes and verified.
pub struct Buffer {
    base: *mut libc::c_void,
    map_len: usize,
    data: *mut u8,
    len: usize,
    /// How the placement was proven.
    pub proof: MemProof,
}

// SAFETY: the buffer owns its mapping; sharing the raw pointer across threads
// is how measurement kernels use it, and the mapping outlives them.
unsafe impl Send for Buffer {}
// SAFETY: see Send; Buffer itself has no interior mutability.
unsafe impl Sync for Buffer {}

impl Buffer {
    /// Start of the usable region.
    pub fn as_ptr(&self) -> *mut u8 {
        self.data
    }

    /// Usable length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the buffer is empty (never, for an allocated buffer).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Map, bind, touch and verify `size` bytes as the placement says.
    pub fn allocate(host: &Host, mem: &MemPlacement, size: u64) -> Result<Buffer> {
        if !host.machine.this_system {
            return Err(Error::Unsatisfiable(format!(
                "cannot allocate memory on a topology from {}; only this machine can be bound",
                host.machine.source
            )));
        }
        check_capacity(&host.machine, mem, size)?;
        if mem.page_size == PageSize::Thp {
            thp_available()?;
        }
        let page = mem.page_size.bytes() as usize;
        let len = (size as usize).div_ceil(page) * page;
        let (base, map_len, data) = map(len, mem.page_size)?;
        let mut buf = Buffer {
            base,
            map_len,
            data,
            len,
            proof: MemProof {
                bytes: len as u64,
                page_size: mem.page_size,
                pages_checked: 0,
                pages_per_node: BTreeMap::new(),
                pages_missing: 0,
                thp_bytes: None,
                expected_nodes: mem.nodes.clone(),
            },
        };
        buf.bind(host, mem)?;
        buf.touch();
        buf.proof = buf.locate(mem)?;
        check_proof(&buf.proof, mem)?;
        Ok(buf)
    }

    fn bind(&self, host: &Host, mem: &MemPlacement) -> Result<()> {
        let mut set = NodeSet::new();
        for &n in &mem.nodes {
            set.set(n as usize);
        }
        let policy = if mem.policy == "interleave" {
            MemoryBindingPolicy::Interleave
        } else {
            MemoryBindingPolicy::Bind
        };
        // SAFETY: data..data+len is a live mapping we own; hwloc only reads the
        // address range to pass it to mbind.
        let area = unsafe { std::slice::from_raw_parts(self.data, self.len) };
        host.topology
            .bind_memory_area(area, &set, policy, MemoryBindingFlags::STRICT)
            .map_err(|e| {
                Error::System(format!(
                    "binding {} to node{} {} failed: {}",
                    crate::fmt_bytes(self.len as u64),
                    if mem.nodes.len() == 1 { "" } else { "s" },
                    crate::cpulist::format(&mem.nodes),
                    sandbox_words("mbind", e.to_string())
                ))
            })
    }

    fn touch(&mut self) {
        for off in (0..self.len).step_by(BASE_PAGE) {
            // SAFETY: off < len, inside our mapping; volatile so the write happens.
            unsafe { std::ptr::write_volatile(self.data.add(off), 0) };
        }
    }

    /// Query the node of every page with move_pages(2) (no pages are moved).
    fn locate(&self, mem: &MemPlacement) -> Result<MemProof> {
        let step = match mem.page_size {
            PageSize::Base | PageSize::Thp => BASE_PAGE,
            other => other.bytes() as usize,
        };
        let addrs: Vec<*mut libc::c_void> = (0..self.len)
            .step_by(step)
            // SAFETY: offsets stay inside the mapping.
            .map(|o| unsafe { self.data.add(o) } as *mut libc::c_void)
            .collect();
        let (per_node, missing) = pages_per_node(&addrs)?;
        Ok(MemProof {
            bytes: self.len as u64,
            page_size: mem.page_size,
            pages_checked: addrs.len() as u64,
            pages_per_node: per_node,
            pages_missing: missing,
            thp_bytes: smaps_anon_huge(self.data as usize),
            expected_nodes: mem.nodes.clone(),
        })
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: base/map_len describe the mapping made in `map`.
        unsafe { libc::munmap(self.base, self.map_len) };
    }
}

/// The node of every page at `addrs` (move_pages(2) with no target nodes: a query,
/// nothing moves), and how many pages had none (not present).
pub(crate) fn pages_per_node(addrs: &[*mut libc::c_void]) -> Result<(BTreeMap<u32, u64>, u64)> {
    let mut per_node = BTreeMap::new();
    let mut missing = 0u64;
    for chunk in addrs.chunks(1 << 16) {
        let mut status = vec![0i32; chunk.len()];
        // SAFETY: pid 0 = this process; nodes NULL = query only; arrays sized to count.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_move_pages,
                0,
                chunk.len() as libc::c_ulong,
                chunk.as_ptr(),
                std::ptr::null::<i32>(),
                status.as_mut_ptr(),
                0,
            )
        };
        if rc < 0 {
            let err = std::io::Error::last_os_error().to_string();
            return Err(Error::System(format!(
                "proving where the pages are failed: {}; no placement is claimed",
                sandbox_words("move_pages", format!("move_pages query: {err}"))
            )));
        }
        for s in status {
            if s >= 0 {
                *per_node.entry(s as u32).or_insert(0u64) += 1;
            } else {
                missing += 1;
            }
        }
    }
    Ok((per_node, missing))
}

/// The error of a NUMA call, with the sandbox's refusal and its fix when that is why.
pub(crate) fn sandbox_words(call: &str, err: String) -> String {
    match crate::privileges::refusal_of(call) {
        Some(d) => format!("{}; fix: {}", d.reason, d.fix),
        None => err,
    }
}

fn thp_available() -> Result<()> {
    let mode =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").map_err(|_| {
            Error::Unsatisfiable("thp: this kernel has no transparent huge pages".into())
        })?;
    if mode.contains("[never]") {
        return Err(Error::Unsatisfiable(format!(
            "thp: transparent huge pages are disabled ({}); use 4k or reserved 2m pages",
            mode.trim()
        )));
    }
    Ok(())
}

/// mmap `len` bytes; THP mappings are over-allocated so the data starts 2 MiB aligned.
fn map(len: usize, page: PageSize) -> Result<(*mut libc::c_void, usize, *mut u8)> {
    let mut flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
    let mut map_len = len;
    match page {
        PageSize::Huge2M => flags |= libc::MAP_HUGETLB | (21 << MAP_HUGE_SHIFT),
        PageSize::Huge1G => flags |= libc::MAP_HUGETLB | (30 << MAP_HUGE_SHIFT),
        PageSize::Thp => map_len += PageSize::Thp.bytes() as usize,
        PageSize::Base => {}
    }
    // SAFETY: anonymous mapping with no address hint.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            map_len,
            libc::PROT_READ | libc::PROT_WRITE,
            flags,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(Error::System(format!(
            "mmap of {} with {} pages failed: {}",
            crate::fmt_bytes(len as u64),
            page.name(),
            std::io::Error::last_os_error()
        )));
    }
    let align = PageSize::Thp.bytes() as usize;
    let data = match page {
        PageSize::Thp => ((base as usize).div_ceil(align) * align) as *mut u8,
        _ => base as *mut u8,
    };
    let advice = match page {
        PageSize::Base => Some(libc::MADV_NOHUGEPAGE),
        PageSize::Thp => Some(libc::MADV_HUGEPAGE),
        _ => None,
    };
    if let Some(advice) = advice {
        // SAFETY: the range lies inside the mapping.
        if unsafe { libc::madvise(data as *mut libc::c_void, len, advice) } != 0 {
            let err = std::io::Error::last_os_error();
            // SAFETY: unmapping what we just mapped.
            unsafe { libc::munmap(base, map_len) };
            return Err(Error::System(format!(
                "madvise on the buffer failed: {err}"
            )));
        }
    }
    Ok((base, map_len, data))
}

/// AnonHugePages of the mapping containing `addr`, from /proc/self/smaps.
fn smaps_anon_huge(addr: usize) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let mut inside = false;
    for line in text.lines() {
        if let Some((range, _)) = line.split_once(' ') {
            if let Some((a, b)) = range.split_once('-') {
                if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
                {
                    inside = a <= addr && addr < b;
                    continue;
                }
            }
        }
        if inside {
            if let Some(rest) = line.strip_prefix("AnonHugePages:") {
                let kb: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
                return Some(kb * 1024);
            }
        }
    }
    None
}

/// Fail unless every page sits on an expected node (and, for 4k, none is a THP).
pub fn check_proof(p: &MemProof, mem: &MemPlacement) -> Result<()> {
    let wrong: u64 = p
        .pages_per_node
        .iter()
        .filter(|(n, _)| !mem.nodes.contains(n))
        .map(|(_, c)| c)
        .sum();
    if wrong > 0 || p.pages_missing > 0 {
        let found: Vec<String> = p
            .pages_per_node
            .iter()
            .map(|(n, c)| format!("{c} on node {n}"))
            .collect();
        return Err(Error::Verification(format!(
            "of {} page{} expected on node{} {}, found {}{}",
            p.pages_checked,
            if p.pages_checked == 1 { "" } else { "s" },
            if mem.nodes.len() == 1 { "" } else { "s" },
            crate::cpulist::format(&mem.nodes),
            found.join(", "),
            if p.pages_missing > 0 {
                format!(", {} not present", p.pages_missing)
            } else {
                String::new()
            }
        )));
    }
    if mem.page_size == PageSize::Base && p.thp_bytes.unwrap_or(0) > 0 {
        return Err(Error::Verification(format!(
            "4k pages were asked for but {} of the buffer is backed by transparent huge pages",
            crate::fmt_bytes(p.thp_bytes.unwrap_or(0))
        )));
    }
    Ok(())
}
