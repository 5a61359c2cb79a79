//! Chase layouts: the order in which a pointer chase visits a buffer's lines.
//!
//! Default (see [`Layout::default_for`]): a seeded random order that visits every
//! line exactly once per pass, with one line per 64-byte stride block, randomised
//! within TLB-locality windows of 64 pages whose order is itself shuffled. Random
//! order defeats stride and stream prefetchers; the windows keep a page's lines
//! together so that a DRAM-sized chase mostly hits the TLB and measures the memory,
//! not page walks (ask for `--window 0` to include page walks). A stride of 128 or
//! 256 bytes leaves the neighbouring line of every visited line unused, which beats
//! adjacent-line (spatial pair) prefetchers.

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::{Deserialize, Serialize};

/// Visit order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Seeded random permutation within shuffled TLB windows.
    Random,
    /// lmbench's layout: one line per stride block, from the last block down to the first.
    Backward,
}

impl Order {
    /// Parse `random` or `backward`.
    pub fn parse(s: &str) -> Option<Order> {
        match s {
            "random" => Some(Order::Random),
            "backward" | "seq" | "sequential" => Some(Order::Backward),
            _ => None,
        }
    }
}

/// How a chase is laid out over a buffer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layout {
    /// Cache-line size in bytes (the unit of offsets).
    pub line: usize,
    /// Bytes between consecutive chase elements' blocks (a multiple of `line`).
    pub stride: usize,
    /// TLB-locality window in pages; 0 = the whole buffer is one window.
    pub window_pages: usize,
    /// Page size of the buffer in bytes.
    pub page_bytes: usize,
    /// Visit order.
    pub order: Order,
    /// Seed of the random order.
    pub seed: u64,
}

/// Default TLB-locality window: 64 pages (256 KiB of 4 KiB pages), the reach of
/// a first-level data TLB on current x86 and Arm cores.
pub const DEFAULT_WINDOW_PAGES: usize = 64;

impl Layout {
    /// The default layout for a buffer with the given page size.
    pub fn default_for(page_bytes: usize, seed: u64) -> Layout {
        Layout {
            line: 64,
            stride: 64,
            window_pages: DEFAULT_WINDOW_PAGES,
            page_bytes,
            order: Order::Random,
            seed,
        }
    }

    /// Check the layout on its own: stride a positive multiple of the line.
    pub fn validate(&self) -> Result<(), String> {
        if self.line == 0 || !self.line.is_power_of_two() {
            return Err(format!(
                "invalid line size '{}': must be a power of two",
                self.line
            ));
        }
        if self.stride == 0 || !self.stride.is_multiple_of(self.line) {
            return Err(format!(
                "invalid stride '{}': must be a positive multiple of the {}-byte cache line (e.g. 64, 128, 256)",
                self.stride, self.line
            ));
        }
        Ok(())
    }

    /// Number of chase elements in `bytes`.
    pub fn elements(&self, bytes: usize) -> usize {
        bytes / self.stride
    }
}

/// The visit order over a buffer of `bytes`: line indices (in units of `layout.line`),
/// each element's successor is the next entry and the last one's is the first.
pub fn build_order(bytes: usize, layout: &Layout) -> Result<Vec<u32>, String> {
    layout.validate()?;
    let blocks = layout.elements(bytes);
    if blocks == 0 {
        return Err(format!(
            "invalid size '{bytes}' bytes: smaller than one {}-byte stride",
            layout.stride
        ));
    }
    let lines_per_block = layout.stride / layout.line;
    if (blocks * lines_per_block) as u64 > u32::MAX as u64 {
        return Err(format!(
            "invalid size '{bytes}' bytes: more than 2^32 lines; use a larger stride"
        ));
    }
    let mut rng = Pcg64Mcg::seed_from_u64(layout.seed);
    let mut blocks_order: Vec<u32> = match layout.order {
        Order::Backward => (0..blocks as u32).rev().collect(),
        Order::Random => {
            let per_window = if layout.window_pages == 0 {
                blocks
            } else {
                (layout.window_pages * layout.page_bytes / layout.stride).max(1)
            };
            let mut windows: Vec<u32> = (0..blocks.div_ceil(per_window) as u32).collect();
            windows.shuffle(&mut rng);
            let mut v = Vec::with_capacity(blocks);
            for w in windows {
                let lo = w as usize * per_window;
                let hi = (lo + per_window).min(blocks);
                let start = v.len();
                v.extend(lo as u32..hi as u32);
                v[start..].shuffle(&mut rng);
            }
            v
        }
    };
    // One line per block; with strides above one line the line within the block is
    // drawn at random so that every cache set is used (a fixed offset would use only
    // 1/(stride/line) of the sets and shrink the apparent cache sizes).
    for b in blocks_order.iter_mut() {
        let off = match (layout.order, lines_per_block) {
            (_, 1) | (Order::Backward, _) => 0,
            _ => rng.random_range(0..lines_per_block as u32),
        };
        *b = *b * lines_per_block as u32 + off;
    }
    Ok(blocks_order)
}

/// Write the chase into memory: the word at each element holds the successor's address.
///
/// # Safety
/// `base` must be valid for writes of `(max(order)+1) * line` bytes and 8-byte aligned.
pub unsafe fn link(base: *mut u8, order: &[u32], line: usize) {
    let n = order.len();
    for i in 0..n {
        let here = base.add(order[i] as usize * line) as *mut usize;
        let next = base.add(order[(i + 1) % n] as usize * line) as usize;
        here.write(next);
    }
}

/// Follow the pointers from `order[0]` and report whether they form one cycle that
/// visits exactly the lines of `order`, each once.
///
/// # Safety
/// The chase must have been written by [`link`] over the same `base`, `order` and `line`.
pub unsafe fn is_single_cycle(base: *const u8, order: &[u32], line: usize) -> bool {
    let n = order.len();
    let max = order.iter().copied().max().unwrap_or(0) as usize;
    let mut seen = vec![false; max + 1];
    let start = base.add(order[0] as usize * line);
    let mut p = start;
    for step in 0..n {
        let idx = (p as usize - base as usize) / line;
        if idx > max || seen[idx] {
            return false;
        }
        seen[idx] = true;
        p = (p as *const usize).read() as *const u8;
        if p == start && step + 1 != n {
            return false;
        }
    }
    p == start && order.iter().all(|&i| seen[i as usize])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(bytes: usize, stride: usize, window: usize, page: usize, order: Order) {
        let l = Layout {
            line: 64,
            stride,
            window_pages: window,
            page_bytes: page,
            order,
            seed: 7,
        };
        let ord = build_order(bytes, &l).unwrap();
        assert_eq!(ord.len(), bytes / stride);
        let mut sorted = ord.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), ord.len(), "a line appears twice");
        // Each element lies in its own stride block.
        let mut blocks: Vec<usize> = ord.iter().map(|&i| i as usize * 64 / stride).collect();
        blocks.sort_unstable();
        assert_eq!(blocks, (0..bytes / stride).collect::<Vec<_>>());
        let mut mem = vec![0usize; bytes / 8];
        let base = mem.as_mut_ptr() as *mut u8;
        // SAFETY: mem covers `bytes` and is 8-byte aligned.
        unsafe {
            link(base, &ord, 64);
            assert!(is_single_cycle(base, &ord, 64));
        }
    }

    #[test]
    fn one_cycle_over_every_line_for_sizes_strides_and_windows() {
        for &bytes in &[64, 4096, 3 * 4096 + 192, 1 << 20] {
            for &stride in &[64, 128, 256] {
                if bytes < stride {
                    continue;
                }
                for &window in &[0, 1, 4, 64] {
                    check(bytes, stride, window, 4096, Order::Random);
                }
                check(bytes, stride, 0, 4096, Order::Backward);
            }
        }
    }

    #[test]
    fn windows_keep_pages_together() {
        let l = Layout {
            window_pages: 2,
            ..Layout::default_for(4096, 1)
        };
        let ord = build_order(64 << 10, &l).unwrap();
        // 128 lines per 2-page window: each run of 128 stays in one window.
        for chunk in ord.chunks(128) {
            let w = chunk[0] / 128;
            assert!(chunk.iter().all(|&i| i / 128 == w));
        }
    }

    #[test]
    fn same_seed_same_order_other_seed_other_order() {
        let a = build_order(1 << 16, &Layout::default_for(4096, 1)).unwrap();
        let b = build_order(1 << 16, &Layout::default_for(4096, 1)).unwrap();
        let c = build_order(1 << 16, &Layout::default_for(4096, 2)).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn backward_is_lmbench_order() {
        let l = Layout {
            order: Order::Backward,
            stride: 128,
            ..Layout::default_for(4096, 0)
        };
        assert_eq!(build_order(512, &l).unwrap(), vec![6, 4, 2, 0]);
    }

    #[test]
    fn bad_strides_are_refused() {
        for s in [0, 32, 96] {
            let l = Layout {
                stride: s,
                ..Layout::default_for(4096, 0)
            };
            let e = build_order(4096, &l).unwrap_err();
            assert!(e.contains(&format!("'{s}'")), "{e}");
        }
        assert!(build_order(32, &Layout::default_for(4096, 0)).is_err());
    }
}
