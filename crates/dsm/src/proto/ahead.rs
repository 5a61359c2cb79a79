//! LMWC's read-ahead of first touches on a stride.
//!
//! A rank that reads pages other ranks wrote first, one page per step of a fixed stride
//! (FFT's transpose reads one page of every plane the other rank transformed), pays a
//! round trip per page, one after another. Once two such faults in a row were a step
//! apart, and the third keeps the step, the next pages on the stride are asked for at
//! once, in one request per home; a home answers only for pages another rank touched
//! first (so a guess never makes this rank a page's first toucher). The depth doubles
//! while the faults keep to the stride, up to [`MAX_AHEAD`].

/// Pages asked ahead when a stride is first seen.
pub const FIRST_AHEAD: usize = 4;
/// Most pages asked ahead with one fault.
pub const MAX_AHEAD: usize = 16;

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
}

impl Stride {
    /// A demand fault on page `p` was answered with another rank's copy.
    pub fn based(&mut self, p: usize) {
        self.based = [self.based[1], Some(p)];
    }

    /// A demand first touch of page `p` (of `pages`): the pages to ask for ahead, in
    /// stride order; none unless the faults keep a stride.
    pub fn ahead(&mut self, p: usize, pages: usize) -> Vec<usize> {
        let (step, depth) = match (self.run, self.based) {
            (Some(r), _) if r.next == Some(p) => (r.step, (r.depth * 2).min(MAX_AHEAD)),
            (_, [Some(a), Some(b)])
                if b != a && p as isize - b as isize == b as isize - a as isize =>
            {
                (b as isize - a as isize, FIRST_AHEAD)
            }
            _ => {
                self.run = None;
                return Vec::new();
            }
        };
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
        s.based(10);
        assert!(s.ahead(26, 100).is_empty());
        s.based(26);
        // 10, 26, then 40: not the same step.
        assert!(s.ahead(40, 100).is_empty());
    }

    #[test]
    fn a_kept_stride_asks_ahead_and_deepens_while_it_holds() {
        let mut s = Stride::default();
        for p in [10, 26] {
            assert!(s.ahead(p, 1000).is_empty());
            s.based(p);
        }
        assert_eq!(s.ahead(42, 1000), vec![58, 74, 90, 106]);
        s.based(42);
        // The next demand fault is the first page past those asked: twice as deep.
        assert_eq!(s.ahead(122, 1000).len(), 8);
        s.based(122);
        assert_eq!(s.ahead(122 + 9 * 16, 1000).len(), MAX_AHEAD);
        // Off the stride: the run ends until a stride is seen again.
        assert!(s.ahead(5, 1000).is_empty());
    }

    #[test]
    fn guesses_stay_inside_the_region_either_way() {
        let mut s = Stride::default();
        for p in [50, 40] {
            s.ahead(p, 60);
            s.based(p);
        }
        assert_eq!(s.ahead(30, 60), vec![20, 10, 0]);
        let mut s = Stride::default();
        for p in [40, 45] {
            s.ahead(p, 60);
            s.based(p);
        }
        assert_eq!(s.ahead(50, 60), vec![55]);
    }
}
