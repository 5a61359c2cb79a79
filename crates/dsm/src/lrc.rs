//! Lazy release consistency bookkeeping shared by LMW and LSW: vector timestamps, the
//! log of known intervals per rank, and the pages written in the open interval.

use crate::msg::Interval;
use std::collections::BTreeSet;

/// One rank's knowledge of intervals.
#[derive(Debug, Default)]
pub struct Lrc {
    me: usize,
    /// vt[r] = the highest interval of rank r known here (all below it known too).
    pub vt: Vec<u32>,
    /// log[r] = known intervals of rank r with idx > base[r], in order.
    log: Vec<Vec<Interval>>,
    base: Vec<u32>,
    /// Pages written in the open interval.
    pub dirty: BTreeSet<u32>,
    /// My own last interval already sent to the barrier manager.
    pub sent_to_barrier: u32,
}

impl Lrc {
    /// Knowledge of nothing, for rank `me` of `n`.
    pub fn new(me: usize, n: usize) -> Lrc {
        Lrc {
            me,
            vt: vec![0; n],
            log: vec![Vec::new(); n],
            base: vec![0; n],
            ..Default::default()
        }
    }

    /// Close the open interval if it wrote anything; its index.
    pub fn close(&mut self) -> Option<u32> {
        if self.dirty.is_empty() {
            return None;
        }
        let idx = self.vt[self.me] + 1;
        self.vt[self.me] = idx;
        let pages = std::mem::take(&mut self.dirty).into_iter().collect();
        self.log[self.me].push(Interval {
            rank: self.me as u32,
            idx,
            vt: self.vt.clone(),
            pages,
        });
        Some(idx)
    }

    /// Every known interval the holder of `vt` has not seen.
    pub fn newer_than(&self, vt: &[u32]) -> Vec<Interval> {
        let mut out = Vec::new();
        for (r, log) in self.log.iter().enumerate() {
            for iv in log {
                if iv.idx > vt[r] {
                    out.push(iv.clone());
                }
            }
        }
        out
    }

    /// My intervals not yet sent to the barrier manager (marks them sent).
    pub fn own_unsent(&mut self) -> Vec<Interval> {
        let from = self.sent_to_barrier;
        self.sent_to_barrier = self.vt[self.me];
        self.log[self.me]
            .iter()
            .filter(|iv| iv.idx > from)
            .cloned()
            .collect()
    }

    /// Learn intervals; returns those that were new here, in a causal order.
    pub fn incorporate(&mut self, ivs: &[Interval]) -> Vec<Interval> {
        let mut ivs: Vec<&Interval> = ivs.iter().collect();
        ivs.sort_by_key(|iv| (iv.rank, iv.idx));
        let mut new = Vec::new();
        for iv in ivs {
            let r = iv.rank as usize;
            if iv.idx <= self.vt[r] {
                continue;
            }
            assert_eq!(
                iv.idx,
                self.vt[r] + 1,
                "interval {}:{} arrived before its predecessors",
                r,
                iv.idx
            );
            self.vt[r] = iv.idx;
            self.log[r].push(iv.clone());
            new.push(iv.clone());
        }
        new.sort_by_key(|iv| (vt_sum(&iv.vt), iv.rank));
        new
    }

    /// Forget intervals covered by `cut` (every rank has applied them).
    pub fn discard(&mut self, cut: &[u32]) {
        for (r, log) in self.log.iter_mut().enumerate() {
            log.retain(|iv| iv.idx > cut[r]);
            self.base[r] = self.base[r].max(cut[r]);
        }
    }
}

/// Sum of a vector timestamp: a linear extension of happened-before.
pub fn vt_sum(vt: &[u32]) -> u64 {
    vt.iter().map(|&x| x as u64).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_flow_in_order_and_only_once() {
        let mut a = Lrc::new(0, 2);
        let mut b = Lrc::new(1, 2);
        a.dirty.insert(3);
        assert_eq!(a.close(), Some(1));
        assert_eq!(a.close(), None);
        let got = b.incorporate(&a.newer_than(&b.vt));
        assert_eq!(got.len(), 1);
        assert_eq!(b.vt, vec![1, 0]);
        assert!(b.incorporate(&a.newer_than(&[0, 0])).is_empty());
        b.dirty.insert(4);
        b.close();
        assert_eq!(b.newer_than(&[0, 0]).len(), 2);
        assert_eq!(b.newer_than(&a.vt).len(), 1);
    }
}
