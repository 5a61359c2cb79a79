//! A chase written into a bound, verified buffer, plus the one-line self loop used
//! as the L1-resident reference of the restart search.

use crate::layout::{self, Layout};
use numalab_topo::buffer::Buffer;

/// A pointer chase over a [`Buffer`].
pub struct Chase {
    /// The memory, with its placement proof.
    pub buffer: Buffer,
    /// How it is laid out.
    pub layout: Layout,
    order: Vec<u32>,
    visited_sorted: Vec<u32>,
}

impl Chase {
    /// Lay out and link a chase over `buffer`. Prepared passes visit the first
    /// `visit` elements of the cycle (all of them when None or larger).
    pub fn new(buffer: Buffer, layout: Layout, visit: Option<usize>) -> Result<Chase, String> {
        let order = layout::build_order(buffer.len(), &layout)?;
        // SAFETY: build_order only names lines inside buffer.len(); the mapping is ours.
        unsafe { layout::link(buffer.as_ptr(), &order, layout.line) };
        let n = visit.unwrap_or(order.len()).min(order.len());
        let mut visited_sorted = order[..n].to_vec();
        visited_sorted.sort_unstable();
        Ok(Chase {
            buffer,
            layout,
            order,
            visited_sorted,
        })
    }

    /// Number of elements in the cycle.
    pub fn elements(&self) -> usize {
        self.order.len()
    }

    /// Elements a prepared pass visits.
    pub fn visited(&self) -> usize {
        self.visited_sorted.len()
    }

    /// The visited lines in address order (for flushing and helpers).
    pub fn visited_lines(&self) -> &[u32] {
        &self.visited_sorted
    }

    /// Address of the first element of the cycle.
    pub fn start(&self) -> *const u8 {
        // SAFETY: order[0] is a line inside the buffer.
        unsafe {
            self.buffer
                .as_ptr()
                .add(self.order[0] as usize * self.layout.line)
        }
    }

    /// Base address of the buffer.
    pub fn base(&self) -> *mut u8 {
        self.buffer.as_ptr()
    }

    /// Whether the written pointers form one cycle over every element.
    pub fn verify_cycle(&self) -> bool {
        // SAFETY: the chase was linked over this buffer with this order.
        unsafe { layout::is_single_cycle(self.buffer.as_ptr(), &self.order, self.layout.line) }
    }
}

/// One cache line that points at itself: chasing it always hits L1.
#[repr(C, align(128))]
pub struct SelfLoop {
    words: std::cell::UnsafeCell<[usize; 16]>,
}

// SAFETY: only the one thread that owns it runs kernels on it.
unsafe impl Sync for SelfLoop {}

impl SelfLoop {
    /// A boxed self loop (boxed so that its address is stable).
    pub fn new() -> Box<SelfLoop> {
        let b = Box::new(SelfLoop {
            words: std::cell::UnsafeCell::new([0; 16]),
        });
        let p = b.words.get() as *mut usize;
        // SAFETY: p points at the first word of the box we own.
        unsafe { p.write(p as usize) };
        b
    }

    /// Its address (kernels may write its second word).
    pub fn start(&self) -> *const u8 {
        self.words.get() as *const u8
    }
}
