//! Page-aligned byte buffers for the timed loops. A `Vec<u8>` lands wherever the
//! allocator puts it, so a 4 KiB message may span one page or two from run to run,
//! and Open MPI's single-copy path (CMA) pins and walks every page it spans; page
//! alignment makes the page count a property of the size, as in OSU's and IMB's loops.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ops::{Deref, DerefMut};

/// Page size the buffers are aligned to (x86-64 and most aarch64 Linux systems).
pub const PAGE: usize = 4096;

/// A zeroed, page-aligned byte buffer.
pub struct PageBuf {
    ptr: *mut u8,
    len: usize,
}

impl PageBuf {
    /// `len` bytes, each `fill`.
    pub fn new(len: usize, fill: u8) -> PageBuf {
        let layout = Self::layout(len);
        // SAFETY: the layout has a non-zero size (at least one page).
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        let mut b = PageBuf { ptr, len };
        if fill != 0 {
            b.fill(fill);
        }
        b
    }

    /// The buffer as u64 words (its length must be a multiple of 8).
    pub fn words(&self) -> &[u64] {
        assert_eq!(self.len % 8, 0, "a word view needs whole words");
        // SAFETY: ptr is page-aligned (so 8-aligned), holds len initialised bytes, and
        // every bit pattern is a valid u64.
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<u64>(), self.len / 8) }
    }

    /// The buffer as mutable u64 words (its length must be a multiple of 8).
    pub fn words_mut(&mut self) -> &mut [u64] {
        assert_eq!(self.len % 8, 0, "a word view needs whole words");
        // SAFETY: as in words, and &mut self makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.cast::<u64>(), self.len / 8) }
    }

    fn layout(len: usize) -> Layout {
        Layout::from_size_align(len.max(1).next_multiple_of(PAGE), PAGE).expect("page layout")
    }
}

impl Deref for PageBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: ptr holds len initialised (zeroed or written) bytes until drop.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl DerefMut for PageBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in deref, and &mut self makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for PageBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in new with this layout, freed once.
        unsafe { dealloc(self.ptr, Self::layout(self.len)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_start_on_a_page_and_hold_their_fill() {
        for len in [1, 8, 4096, 4097, 40_000] {
            let mut b = PageBuf::new(len, 7);
            assert_eq!(b.as_ptr() as usize % PAGE, 0, "{len}");
            assert_eq!(b.len(), len);
            assert!(b.iter().all(|&x| x == 7));
            b.fill(0);
            assert!(b.iter().all(|&x| x == 0));
        }
    }

    #[test]
    fn word_views_cover_the_same_bytes() {
        let mut b = PageBuf::new(64, 0);
        b.words_mut()[1] = u64::MAX;
        assert_eq!(b.words().len(), 8);
        assert_eq!(b.words()[1], u64::MAX);
        assert!(b[8..16].iter().all(|&x| x == 0xff));
        assert!(b[..8].iter().chain(&b[16..]).all(|&x| x == 0));
    }
}
