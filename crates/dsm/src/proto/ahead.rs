//! LMWC's read-ahead of first touches on a stride.
//!
//! A rank that reads pages other ranks wrote first, one page per step of a fixed stride
//! (FFT's transpose reads one page of every plane the other rank transformed), pays a
//! round trip per page, one after another. Once two such faults in a row were a step
//! apart, and the third keeps the step, the next pages on the stride are asked for at
//! once, in one request per home; a home answers only for pages another rank touched
//! first (so a guess never makes this rank a page's first toucher). The depth doubles
//! while the faults keep to the stride, up to [`MAX_AHEAD`]. A demand fault on the page
//! next to where the last stride began (FFT's next column: the same planes, the next
//! page of each) takes up that stride again at once, at the depth it reached, instead
//! of three faults to find it again and two more to deepen, when it was followed until
//! it was asked [`MAX_AHEAD`] deep. Measured (issue 43, 2026-11-29, 2-vCPU VM, paper
//! input, 2 ranks × 1 thread, lmwc, interleaved rounds, medians): FFT's remote faults
//! 62–71 against 98 a run; speedup 1.17 against 0.95 (8 quiet rounds), 0.74 against
//! 0.50 (4 rounds, one core kept busy); the other apps' fault counts unchanged.
//!
//! A rank whose first touches of others' pages keep no stride but crowd one window of
//! pages (barnes' tree, which one rank builds and the other walks) asks for the rest of
//! the window at once when [`DENSE`] of its [`WINDOW`] pages came from another rank:
//! dense enough that a grid's boundary rows (a page or two per window) never trigger
//! it, since every page asked turns shared, write-protected at its first toucher.

/// Pages asked ahead when a stride is first seen.
pub const FIRST_AHEAD: usize = 4;
/// Most pages asked ahead with one fault.
pub const MAX_AHEAD: usize = 16;

/// Pages in one window of the density read-ahead.
pub const WINDOW: usize = 32;
/// Demand faults answered with another rank's copy that make a window dense.
pub const DENSE: usize = 8;

/// A stride being followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    step: isize,
    /// Where the next demand fault falls if the stride goes on past the pages asked.
    next: Option<usize>,
    depth: usize,
}

/// The stride detector of one rank.
#[derive(Debug, Default)]
pub struct Stride {
    /// The last two demand faults answered with another rank's copy of the page.
    based: [Option<usize>; 2],
    run: Option<Run>,
    /// The last stride found: its first page, its step, the depth it reached and
    /// whether a fault kept to it past the pages asked. Only one kept to until it was
    /// asked [`MAX_AHEAD`] deep is taken up again: a tree walk's chance stride, or a
    /// grid's short one (ocean's: 59 pages asked that turned shared, in 2 of 4 runs,
    /// when any kept stride was), is not.
    last: Option<(usize, isize, usize, bool)>,
    /// Demand faults answered with another's copy, per window; u16::MAX once asked.
    crowd: std::collections::HashMap<usize, u16>,
}

impl Stride {
    /// A demand fault on page `p` (of `pages`) was answered with another rank's copy:
    /// the pages of its window to ask for ahead when this made the window dense.
    pub fn based(&mut self, p: usize, pages: usize) -> std::ops::Range<usize> {
        self.based = [self.based[1], Some(p)];
        let n = self.crowd.entry(p / WINDOW).or_default();
        if *n == u16::MAX {
            return 0..0;
        }
        *n += 1;
        if usize::from(*n) < DENSE {
            return 0..0;
        }
        *n = u16::MAX;
        let w = p / WINDOW * WINDOW;
        w..(w + WINDOW).min(pages)
    }

    /// A demand first touch of page `p` (of `pages`): the pages to ask for ahead, in
    /// stride order; none unless the faults keep a stride.
    pub fn ahead(&mut self, p: usize, pages: usize) -> Vec<usize> {
        let (step, depth) = match (self.run, self.based, self.last) {
            (Some(r), _, _) if r.next == Some(p) => {
                if let Some(l) = self.last.as_mut() {
                    l.3 = true;
                }
                (r.step, (r.depth * 2).min(MAX_AHEAD))
            }
            (_, [Some(a), Some(b)], _)
                if b != a && p as isize - b as isize == b as isize - a as isize =>
            {
                self.last = Some((a, b as isize - a as isize, FIRST_AHEAD, false));
                (b as isize - a as isize, FIRST_AHEAD)
            }
            (_, _, Some((start, step, depth, true)))
                if p.abs_diff(start) == 1 && step.abs() > 1 && depth >= MAX_AHEAD =>
            {
                self.last = Some((p, step, depth, false));
                (step, depth)
            }
            _ => {
                self.run = None;
                return Vec::new();
            }
        };
        if let Some(l) = self.last.as_mut() {
            l.2 = l.2.max(depth);
        }
        let at = |i: usize| {
            let q = p as isize + i as isize * step;
            (q >= 0 && (q as usize) < pages).then_some(q as usize)
        };
        let out: Vec<usize> = (1..=depth).map_while(at).collect();
        self.run = Some(Run {
            step,
            next: at(depth + 1),
            depth,
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_stride_no_guess() {
        let mut s = Stride::default();
        assert!(s.ahead(10, 100).is_empty());
        s.based(10, 100);
        assert!(s.ahead(26, 100).is_empty());
        s.based(26, 100);
        // 10, 26, then 40: not the same step.
        assert!(s.ahead(40, 100).is_empty());
    }

    #[test]
    fn a_kept_stride_asks_ahead_and_deepens_while_it_holds() {
        let mut s = Stride::default();
        for p in [10, 26] {
            assert!(s.ahead(p, 1000).is_empty());
            s.based(p, 1000);
        }
        assert_eq!(s.ahead(42, 1000), vec![58, 74, 90, 106]);
        s.based(42, 1000);
        // The next demand fault is the first page past those asked: twice as deep.
        assert_eq!(s.ahead(122, 1000).len(), 8);
        s.based(122, 1000);
        assert_eq!(s.ahead(122 + 9 * 16, 1000).len(), MAX_AHEAD);
        // Off the stride: the run ends until a stride is seen again.
        assert!(s.ahead(5, 1000).is_empty());
    }

    #[test]
    fn the_next_column_takes_up_the_stride_at_once_at_its_depth() {
        let mut s = Stride::default();
        // FFT's transpose: column 3 of planes 32.. (16 pages each), then column 4.
        let col = |c: usize, k: usize| 512 + c + 16 * k;
        for k in 0..2 {
            assert!(s.ahead(col(3, k), 2048).is_empty());
            s.based(col(3, k), 2048);
        }
        assert_eq!(s.ahead(col(3, 2), 2048).len(), FIRST_AHEAD);
        assert_eq!(s.ahead(col(3, 7), 2048).len(), 2 * FIRST_AHEAD);
        assert_eq!(s.ahead(col(3, 16), 2048).len(), MAX_AHEAD);
        // The next column's first fault: the same stride, as deep as it went.
        let next = s.ahead(col(4, 0), 2048);
        assert_eq!(next.len(), MAX_AHEAD);
        assert_eq!(next[..2], [col(4, 1), col(4, 2)]);
        // A fault not next to the stride's start is no column of it.
        let mut s = Stride::default();
        for k in 0..2 {
            s.ahead(col(3, k), 2048);
            s.based(col(3, k), 2048);
        }
        s.ahead(col(3, 2), 2048);
        s.ahead(col(3, 7), 2048);
        assert!(s.ahead(col(3, 2) + 40, 2048).is_empty());
        assert!(s.ahead(100, 2048).is_empty());
        // A stride no fault kept to past the pages asked, or one kept to short of
        // MAX_AHEAD, is not taken up again.
        for kept in [false, true] {
            let mut s = Stride::default();
            for k in 0..2 {
                s.ahead(col(3, k), 2048);
                s.based(col(3, k), 2048);
            }
            assert_eq!(s.ahead(col(3, 2), 2048).len(), FIRST_AHEAD);
            if kept {
                assert_eq!(s.ahead(col(3, 7), 2048).len(), 2 * FIRST_AHEAD);
            }
            assert!(s.ahead(col(4, 0), 2048).is_empty(), "kept {kept}");
        }
    }

    #[test]
    fn a_window_asks_for_the_rest_once_dense_and_only_once() {
        let mut s = Stride::default();
        // Scattered faults in window 1 (pages 32..64) of a 40-page region.
        for (i, p) in [33, 37, 35, 39, 34, 38, 36].into_iter().enumerate() {
            assert!(s.based(p, 40).is_empty(), "fault {i}");
        }
        // One page of another window does not count towards this one.
        assert!(s.based(5, 40).is_empty());
        assert_eq!(s.based(32, 40), 32..40, "the region ends the window");
        assert!(s.based(33, 40).is_empty(), "asked once");
    }

    #[test]
    fn guesses_stay_inside_the_region_either_way() {
        let mut s = Stride::default();
        for p in [50, 40] {
            s.ahead(p, 60);
            s.based(p, 1000);
        }
        assert_eq!(s.ahead(30, 60), vec![20, 10, 0]);
        let mut s = Stride::default();
        for p in [40, 45] {
            s.ahead(p, 60);
            s.based(p, 1000);
        }
        assert_eq!(s.ahead(50, 60), vec![55]);
    }
}
