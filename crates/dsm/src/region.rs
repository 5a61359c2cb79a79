//! The shared region: one memfd mapped twice, an application view whose page protections
//! drive the protocol (same virtual address in every rank) and an always read-write system
//! view through which the DSM copies pages and diffs while the application view is closed.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Coherence unit: the OS page.
pub const PAGE: usize = 4096;

/// Where ranks map the application view unless told otherwise: far from the heap, the
/// stacks and the usual mmap area, so MAP_FIXED_NOREPLACE succeeds in every rank.
pub const DEFAULT_BASE: usize = 0x5a00_0000_0000;

/// Access the application view allows on a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prot {
    /// Any access faults.
    None,
    /// Reads proceed, writes fault.
    Read,
    /// Reads and writes proceed.
    ReadWrite,
}

/// The two views of one shared region.
pub struct Region {
    app: *mut u8,
    sys: *mut u8,
    len: usize,
    fd: i32,
    /// mprotect calls on the application view, and their time in ns (the record's
    /// protection-change cost).
    mprotects: AtomicU64,
    mprotect_ns: AtomicU64,
}

// SAFETY: the pointers name process-wide mappings; every access through them is
// coordinated by the protocol (the node lock, page states).
unsafe impl Send for Region {}
unsafe impl Sync for Region {}

impl Region {
    /// Map `pages` pages; the application view at `base` exactly when given (checked),
    /// anywhere otherwise. Every page starts zero and read-only.
    pub fn map(pages: usize, base: Option<usize>) -> io::Result<Region> {
        let len = pages
            .checked_mul(PAGE)
            .ok_or_else(|| io::Error::other("region too large"))?;
        // SAFETY: plain system calls on fresh descriptors and mappings we own.
        unsafe {
            let fd = libc::memfd_create(c"numalab-dsm".as_ptr(), libc::MFD_CLOEXEC);
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::ftruncate(fd, len as libc::off_t) != 0 {
                let e = io::Error::last_os_error();
                libc::close(fd);
                return Err(e);
            }
            let (hint, flags) = match base {
                Some(b) => (
                    b as *mut libc::c_void,
                    libc::MAP_SHARED | libc::MAP_FIXED_NOREPLACE,
                ),
                None => (std::ptr::null_mut(), libc::MAP_SHARED),
            };
            // Populated now, like the system view: the application's first access to
            // each page would otherwise take a minor fault of the kernel's (shmem_fault)
            // inside the timed run, one per page, before any of the DSM's own; mprotect
            // keeps the page table entries, so later protection changes cost no more.
            let app = libc::mmap(
                hint,
                len,
                libc::PROT_READ,
                flags | libc::MAP_POPULATE,
                fd,
                0,
            );
            if app == libc::MAP_FAILED {
                let e = io::Error::last_os_error();
                libc::close(fd);
                return Err(io::Error::other(format!(
                    "cannot map the shared region at {:#x}: {e}",
                    base.unwrap_or(0)
                )));
            }
            if let Some(b) = base {
                // Old kernels ignore MAP_FIXED_NOREPLACE and treat it as a hint.
                if app as usize != b {
                    libc::munmap(app, len);
                    libc::close(fd);
                    return Err(io::Error::other(format!(
                        "the shared region landed at {:#x}, not {b:#x}",
                        app as usize
                    )));
                }
            }
            let sys = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd,
                0,
            );
            if sys == libc::MAP_FAILED {
                let e = io::Error::last_os_error();
                libc::munmap(app, len);
                libc::close(fd);
                return Err(e);
            }
            Ok(Region {
                app: app as *mut u8,
                sys: sys as *mut u8,
                len,
                fd,
                mprotects: AtomicU64::new(0),
                mprotect_ns: AtomicU64::new(0),
            })
        }
    }

    /// Start of the application view.
    pub fn base(&self) -> *mut u8 {
        self.app
    }

    /// Bytes in the region.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the region has no pages.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Pages in the region.
    pub fn pages(&self) -> usize {
        self.len / PAGE
    }

    /// The page holding application address `addr`, if it is in the region.
    pub fn page_of(&self, addr: usize) -> Option<usize> {
        let a = self.app as usize;
        (addr >= a && addr < a + self.len).then(|| (addr - a) / PAGE)
    }

    /// Set the application view's access to page `p`.
    pub fn protect(&self, p: usize, prot: Prot) {
        self.protect_run(p, 1, prot);
    }

    /// Set the application view's access to pages `p .. p + count` with one mprotect.
    pub fn protect_run(&self, p: usize, count: usize, prot: Prot) {
        assert!(
            p + count <= self.pages(),
            "protection change past the region"
        );
        let t0 = Instant::now();
        // SAFETY: the pages are inside our own mapping (checked above).
        let rc = unsafe {
            libc::mprotect(
                self.app.add(p * PAGE) as *mut _,
                count * PAGE,
                prot_flags(prot),
            )
        };
        self.count(t0);
        assert_eq!(
            rc,
            0,
            "mprotect of a DSM page failed: {}",
            io::Error::last_os_error()
        );
    }

    /// Set the access of every page in `pages` (any order, duplicates allowed), one
    /// mprotect per run of consecutive pages: a barrier that closes or invalidates
    /// thousands of neighbouring pages pays a few system calls, not one per page.
    pub fn protect_pages(&self, pages: &mut [usize], prot: Prot) {
        pages.sort_unstable();
        let mut i = 0;
        while i < pages.len() {
            let start = pages[i];
            let mut end = start + 1;
            while i < pages.len() && pages[i] <= end {
                end = end.max(pages[i] + 1);
                i += 1;
            }
            self.protect_run(start, end - start, prot);
        }
    }

    /// Set the application view's access to every page.
    pub fn protect_all(&self, prot: Prot) {
        self.protect_run(0, self.pages(), prot);
    }

    /// mprotect calls made on this region so far, and their summed time in ns.
    pub fn mprotect_counts(&self) -> (u64, u64) {
        (
            self.mprotects.load(Ordering::Relaxed),
            self.mprotect_ns.load(Ordering::Relaxed),
        )
    }

    fn count(&self, t0: Instant) {
        self.mprotects.fetch_add(1, Ordering::Relaxed);
        self.mprotect_ns
            .fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }

    /// The system view of page `p` (always readable and writable). A mutable slice from
    /// `&self` on purpose: the region is shared memory whose users are serialised by the
    /// node lock, not by Rust borrows.
    #[allow(clippy::mut_from_ref)]
    pub fn sys_page(&self, p: usize) -> &mut [u8] {
        assert!(p < self.pages());
        // SAFETY: in bounds; callers hold the node lock, and the protocol keeps the
        // application from writing a page while the system view changes it.
        unsafe { std::slice::from_raw_parts_mut(self.sys.add(p * PAGE), PAGE) }
    }

    /// The system view of page `p` as 32-bit words (see sys_page).
    #[allow(clippy::mut_from_ref)]
    pub fn sys_words(&self, p: usize) -> &mut [u32] {
        assert!(p < self.pages());
        // SAFETY: as sys_page; pages are 4096-aligned.
        unsafe { std::slice::from_raw_parts_mut(self.sys.add(p * PAGE) as *mut u32, PAGE / 4) }
    }
}

fn prot_flags(prot: Prot) -> i32 {
    match prot {
        Prot::None => libc::PROT_NONE,
        Prot::Read => libc::PROT_READ,
        Prot::ReadWrite => libc::PROT_READ | libc::PROT_WRITE,
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: our own mappings and descriptor.
        unsafe {
            libc::munmap(self.app as *mut _, self.len);
            libc::munmap(self.sys as *mut _, self.len);
            libc::close(self.fd);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_share_pages_and_fixed_base_is_checked() {
        let r = Region::map(4, None).unwrap();
        r.sys_page(2)[5] = 42;
        // SAFETY: page 2 is readable (every page starts read-only).
        let v = unsafe { *r.base().add(2 * PAGE + 5) };
        assert_eq!(v, 42);
        // The same address again cannot be had.
        let e = Region::map(1, Some(r.base() as usize));
        assert!(e.is_err());
    }

    #[test]
    fn protect_pages_makes_one_call_per_run() {
        let r = Region::map(16, None).unwrap();
        let (before, _) = r.mprotect_counts();
        // Runs 2..=5, 9, 11..=12 (7 pages, one duplicate): three calls.
        r.protect_pages(&mut [12, 3, 2, 5, 4, 9, 11, 3], Prot::ReadWrite);
        assert_eq!(r.mprotect_counts().0 - before, 3);
        for p in [2, 3, 4, 5, 9, 11, 12] {
            // SAFETY: the page was just made writable.
            unsafe { *r.base().add(p * PAGE) = 1 };
        }
        assert_eq!(r.sys_page(9)[0], 1);
    }
}
