//! The MPI calls rsmpi does not wrap (one-sided windows) or wraps with scopes too
//! heavy for timed loops (windows of non-blocking sends), behind small safe types.
//! Every call's return code is checked; MPI's default handler aborts the job on error.

use crate::error::{Error, Result};
use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::topology::SimpleCommunicator;
use std::os::raw::{c_int, c_void};

fn check(rc: c_int, what: &str) -> Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(Error::System(format!("{what} failed with MPI error {rc}")))
    }
}

fn bytes() -> ffi::MPI_Datatype {
    // SAFETY: a constant handle exported by the rsmpi shim.
    unsafe { ffi::RSMPI_UINT8_T }
}

fn count(n: usize) -> Result<c_int> {
    c_int::try_from(n)
        .map_err(|_| Error::Usage(format!("{n} elements is more than one MPI call can move")))
}

/// A one-sided window of `len` bytes on every rank (MPI_Win_allocate), freed on drop
/// (collectively: every rank must drop its window at the same point).
pub struct Window {
    win: ffi::MPI_Win,
    base: *mut u8,
    len: usize,
}

impl Window {
    /// Allocate a window of `len` bytes on every rank of `comm` (collective).
    pub fn allocate(comm: &SimpleCommunicator, len: usize) -> Result<Window> {
        let mut base: *mut u8 = std::ptr::null_mut();
        let mut win: ffi::MPI_Win = unsafe { ffi::RSMPI_WIN_NULL };
        let size = ffi::MPI_Aint::try_from(len.max(8))
            .map_err(|_| Error::Usage(format!("window of {len} bytes is too large")))?;
        // SAFETY: out pointers are valid; displacement unit 1 byte; MPI owns the memory
        // until MPI_Win_free.
        let rc = unsafe {
            ffi::MPI_Win_allocate(
                size,
                1,
                ffi::RSMPI_INFO_NULL,
                comm.as_raw(),
                (&mut base as *mut *mut u8).cast::<c_void>(),
                &mut win,
            )
        };
        check(rc, "MPI_Win_allocate")?;
        // SAFETY: MPI returned `len` writable bytes at base.
        unsafe { std::ptr::write_bytes(base, 0, len.max(8)) };
        Ok(Window {
            win,
            base,
            len: len.max(8),
        })
    }

    /// This rank's part of the window.
    pub fn local(&mut self) -> &mut [u8] {
        // SAFETY: base..base+len is this rank's window memory, alive until drop; other
        // ranks' RMA into it is ordered by the caller's synchronisation (locks, barriers).
        unsafe { std::slice::from_raw_parts_mut(self.base, self.len) }
    }

    /// Begin a passive-target epoch on `target` (shared or exclusive lock).
    pub fn lock(&self, target: usize, exclusive: bool) -> Result<()> {
        let kind = if exclusive {
            ffi::MPI_LOCK_EXCLUSIVE
        } else {
            ffi::MPI_LOCK_SHARED
        } as c_int;
        // SAFETY: a valid window and rank.
        check(
            unsafe { ffi::MPI_Win_lock(kind, target as c_int, 0, self.win) },
            "MPI_Win_lock",
        )
    }

    /// End the epoch on `target`; every operation to it is complete.
    pub fn unlock(&self, target: usize) -> Result<()> {
        // SAFETY: a valid window and rank with an open epoch.
        check(
            unsafe { ffi::MPI_Win_unlock(target as c_int, self.win) },
            "MPI_Win_unlock",
        )
    }

    /// Complete every operation issued to `target`, at the origin and the target.
    pub fn flush(&self, target: usize) -> Result<()> {
        // SAFETY: as above.
        check(
            unsafe { ffi::MPI_Win_flush(target as c_int, self.win) },
            "MPI_Win_flush",
        )
    }

    /// Begin a shared passive-target epoch on every rank.
    pub fn lock_all(&self) -> Result<()> {
        // SAFETY: a valid window.
        check(
            unsafe { ffi::MPI_Win_lock_all(0, self.win) },
            "MPI_Win_lock_all",
        )
    }

    /// End the epoch on every rank.
    pub fn unlock_all(&self) -> Result<()> {
        // SAFETY: a valid window with an open epoch.
        check(
            unsafe { ffi::MPI_Win_unlock_all(self.win) },
            "MPI_Win_unlock_all",
        )
    }

    /// Complete every operation this rank issued, at every target.
    pub fn flush_all(&self) -> Result<()> {
        // SAFETY: as above.
        check(
            unsafe { ffi::MPI_Win_flush_all(self.win) },
            "MPI_Win_flush_all",
        )
    }

    /// Make this rank's local stores and others' RMA into it consistent (MPI_Win_sync).
    pub fn sync(&self) -> Result<()> {
        // SAFETY: as above.
        check(unsafe { ffi::MPI_Win_sync(self.win) }, "MPI_Win_sync")
    }

    /// Start reading `len` bytes at `remote` of `target`'s window into this rank's own
    /// window at `local`; the bytes land by the next flush.
    pub fn get_local(
        &mut self,
        target: usize,
        remote: usize,
        local: usize,
        len: usize,
    ) -> Result<()> {
        self.span(local, len)?;
        // SAFETY: local..local+len lies in this rank's window (checked); nothing reads
        // it until the caller flushes.
        unsafe { self.rma(Rma::Get, target, remote, self.base.add(local).cast(), len) }
    }

    /// Start a get whose request completes on its own (MPI_Rget into `dst`).
    ///
    /// # Safety
    /// `dst` must stay alive and untouched until the request is waited for.
    pub unsafe fn rget(
        &self,
        target: usize,
        offset: usize,
        dst: &mut [u8],
        reqs: &mut Requests,
    ) -> Result<()> {
        let disp = self.span(offset, dst.len())?;
        let n = count(dst.len())?;
        let mut r: ffi::MPI_Request = ffi::RSMPI_REQUEST_NULL;
        check(
            ffi::MPI_Rget(
                dst.as_mut_ptr().cast(),
                n,
                bytes(),
                target as c_int,
                disp,
                n,
                bytes(),
                self.win,
                &mut r,
            ),
            "MPI_Rget",
        )?;
        reqs.reqs.push(r);
        Ok(())
    }

    fn span(&self, offset: usize, n: usize) -> Result<ffi::MPI_Aint> {
        if offset + n > self.len {
            return Err(Error::System(format!(
                "RMA of {n} bytes at {offset} runs past the {}-byte window",
                self.len
            )));
        }
        Ok(offset as ffi::MPI_Aint)
    }

    /// Start reading `dst.len()` bytes at `offset` of `target`'s window; `dst` must stay
    /// untouched until the next flush or unlock of `target`.
    pub fn get(&self, target: usize, offset: usize, dst: &mut [u8]) -> Result<()> {
        // SAFETY: dst is valid for its length; the caller completes the epoch before reading it.
        unsafe { self.rma(Rma::Get, target, offset, dst.as_mut_ptr().cast(), dst.len()) }
    }

    /// Start writing `src` at `offset` of `target`'s window.
    pub fn put(&self, target: usize, offset: usize, src: &[u8]) -> Result<()> {
        // SAFETY: src is valid for its length and MPI only reads it (MPI_Put's origin is const).
        unsafe {
            self.rma(
                Rma::Put,
                target,
                offset,
                src.as_ptr().cast_mut().cast(),
                src.len(),
            )
        }
    }

    /// Start adding `src` byte by byte (MPI_SUM on uint8) into `target`'s window.
    pub fn accumulate_sum(&self, target: usize, offset: usize, src: &[u8]) -> Result<()> {
        // SAFETY: as in put (MPI_Accumulate's origin is const too).
        unsafe {
            self.rma(
                Rma::Sum,
                target,
                offset,
                src.as_ptr().cast_mut().cast(),
                src.len(),
            )
        }
    }

    /// One RMA call of `len` bytes between `buf` and `offset` of `target`'s window.
    ///
    /// # Safety
    /// `buf` must be valid for `len` bytes (writable for a get) and stay untouched until
    /// the epoch's next flush or unlock.
    #[inline(always)]
    unsafe fn rma(
        &self,
        op: Rma,
        target: usize,
        offset: usize,
        buf: *mut c_void,
        len: usize,
    ) -> Result<()> {
        let disp = self.span(offset, len)?;
        let n = count(len)?;
        let (t, w, b) = (target as c_int, self.win, bytes());
        let (rc, what) = match op {
            Rma::Get => (ffi::MPI_Get(buf, n, b, t, disp, n, b, w), "MPI_Get"),
            Rma::Put => (ffi::MPI_Put(buf, n, b, t, disp, n, b, w), "MPI_Put"),
            Rma::Sum => (
                ffi::MPI_Accumulate(buf, n, b, t, disp, n, b, ffi::RSMPI_SUM, w),
                "MPI_Accumulate",
            ),
        };
        check(rc, what)
    }
}

/// The one-sided operations [`Window::rma`] issues.
#[derive(Clone, Copy)]
enum Rma {
    Get,
    Put,
    Sum,
}

impl Drop for Window {
    fn drop(&mut self) {
        // SAFETY: the window is valid and freed once.
        unsafe {
            ffi::MPI_Win_free(&mut self.win);
        }
    }
}

/// Outstanding non-blocking operations, completed together (MPI_Waitall).
pub struct Requests {
    reqs: Vec<ffi::MPI_Request>,
}

impl Requests {
    /// Room for `n` requests.
    pub fn with_capacity(n: usize) -> Requests {
        Requests {
            reqs: Vec::with_capacity(n),
        }
    }

    /// Post a send of `buf` to `dest`.
    ///
    /// # Safety
    /// `buf` must stay alive and unmodified until [`Requests::wait_all`] returns.
    pub unsafe fn isend(
        &mut self,
        comm: &SimpleCommunicator,
        buf: &[u8],
        dest: usize,
        tag: i32,
    ) -> Result<()> {
        let mut r: ffi::MPI_Request = ffi::RSMPI_REQUEST_NULL;
        let rc = ffi::MPI_Isend(
            buf.as_ptr().cast(),
            count(buf.len())?,
            bytes(),
            dest as c_int,
            tag,
            comm.as_raw(),
            &mut r,
        );
        check(rc, "MPI_Isend")?;
        self.reqs.push(r);
        Ok(())
    }

    /// Post a receive into `buf` from `src`.
    ///
    /// # Safety
    /// `buf` must stay alive and untouched until [`Requests::wait_all`] returns.
    pub unsafe fn irecv(
        &mut self,
        comm: &SimpleCommunicator,
        buf: &mut [u8],
        src: usize,
        tag: i32,
    ) -> Result<()> {
        let mut r: ffi::MPI_Request = ffi::RSMPI_REQUEST_NULL;
        let rc = ffi::MPI_Irecv(
            buf.as_mut_ptr().cast(),
            count(buf.len())?,
            bytes(),
            src as c_int,
            tag,
            comm.as_raw(),
            &mut r,
        );
        check(rc, "MPI_Irecv")?;
        self.reqs.push(r);
        Ok(())
    }

    /// Requests still outstanding.
    pub fn len(&self) -> usize {
        self.reqs.len()
    }

    /// True when none is outstanding.
    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }

    /// Test whether request `i` has completed (it is then retired from the list; the
    /// caller must not rely on positions afterwards). Returns true when it completed.
    pub fn test_first(&mut self) -> Result<bool> {
        if self.reqs.is_empty() {
            return Ok(true);
        }
        let mut flag: c_int = 0;
        // SAFETY: a valid request; status ignored.
        let rc = unsafe { ffi::MPI_Test(&mut self.reqs[0], &mut flag, ffi::RSMPI_STATUS_IGNORE) };
        check(rc, "MPI_Test")?;
        if flag != 0 {
            self.reqs.remove(0);
        }
        Ok(flag != 0)
    }

    /// Complete every posted operation.
    pub fn wait_all(&mut self) -> Result<()> {
        if self.reqs.is_empty() {
            return Ok(());
        }
        // SAFETY: the requests are valid; statuses are ignored.
        let rc = unsafe {
            ffi::MPI_Waitall(
                self.reqs.len() as c_int,
                self.reqs.as_mut_ptr(),
                ffi::RSMPI_STATUSES_IGNORE,
            )
        };
        self.reqs.clear();
        check(rc, "MPI_Waitall")
    }
}
