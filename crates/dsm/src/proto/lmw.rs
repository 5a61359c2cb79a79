//! LMW: lazy release consistency with multiple writers (TreadMarks/CVM style, homeless).
//!
//! Every rank starts with a valid zero copy of every page. The first write to a page in an
//! interval makes a twin; closing the interval (at a release, an acquire or a barrier
//! arrival) write-protects the page and stores the word diff against the twin — eagerly,
//! which keeps diff making on the compute thread, where no application code runs beside
//! it. An acquire brings write notices for intervals not yet seen; each noticed page is
//! invalidated. A fault on an invalid page asks each writer for its diffs in parallel and
//! applies them in an order consistent with happened-before (ascending vector-timestamp
//! sums). Diffs and intervals are collected at a barrier once a rank stores more than
//! `gc_bytes` of diffs: every rank validates its stale pages, and a second barrier drops
//! everything all ranks have applied.

use super::{Fault, Protocol};
use crate::diff;
use crate::lrc::vt_sum;
use crate::msg::{Diff, Interval, Msg};
use crate::node::{Core, Wait};
use crate::region::Prot;
use std::collections::{BTreeMap, HashMap};

/// A diff received for a fetch: (writer rank, interval, diff).
type Got = (u32, u32, Diff);

#[derive(Default)]
struct Page {
    twin: Option<Box<[u32]>>,
    /// Unapplied write notices: (rank, interval, vt sum).
    notices: Vec<(u32, u32, u64)>,
    /// Ranks still to answer, and the diffs they sent.
    fetch: Option<(usize, Vec<Got>)>,
}

/// LMW state of one rank.
pub struct Lmw {
    pages: Vec<Page>,
    /// My diffs by (page, interval).
    diffs: HashMap<(u32, u32), Diff>,
    diff_bytes: usize,
}

impl Lmw {
    /// Every page valid, read-only.
    pub fn new(c: &Core) -> Lmw {
        Lmw {
            pages: (0..c.region.pages()).map(|_| Page::default()).collect(),
            diffs: HashMap::new(),
            diff_bytes: 0,
        }
    }

    fn close(&mut self, c: &mut Core) {
        if c.lrc.dirty.is_empty() {
            return;
        }
        let idx = c.lrc.vt[c.me] + 1;
        for &p in &c.lrc.dirty {
            let page = &mut self.pages[p as usize];
            c.region.protect(p as usize, Prot::Read);
            let twin = page.twin.take().expect("dirty page without a twin");
            let d = diff::make(&twin, c.region.sys_words(p as usize));
            self.diff_bytes += diff::bytes(&d);
            c.stats.diffs_created += 1;
            self.diffs.insert((p, idx), d);
        }
        c.lrc.close();
    }
}

impl Protocol for Lmw {
    fn fault(&mut self, c: &mut Core, p: usize, write: bool) -> Fault {
        let page = &mut self.pages[p];
        if !page.notices.is_empty() {
            match page.fetch.take() {
                Some((waiting, got)) if waiting > 0 => {
                    page.fetch = Some((waiting, got));
                    return Fault::Wait { joined: true };
                }
                Some((_, mut got)) => {
                    got.sort_by_key(|(r, i, _)| {
                        let s = page
                            .notices
                            .iter()
                            .find(|n| n.0 == *r && n.1 == *i)
                            .map_or(0, |n| n.2);
                        (s, *r)
                    });
                    let words = c.region.sys_words(p);
                    for (r, i, d) in &got {
                        diff::apply(words, d);
                        page.notices.retain(|n| !(n.0 == *r && n.1 == *i));
                    }
                    c.stats.diffs_used += got.len() as u64;
                }
                None => {}
            }
            if !page.notices.is_empty() {
                let mut by_rank: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
                for &(r, i, _) in &page.notices {
                    by_rank.entry(r).or_default().push(i);
                }
                page.fetch = Some((by_rank.len(), Vec::new()));
                c.stats.remote_faults += 1;
                c.start_remote(false);
                for (r, idxs) in by_rank {
                    c.send(
                        r as usize,
                        &Msg::DiffReq {
                            page: p as u32,
                            idxs,
                        },
                    );
                }
                return Fault::Wait { joined: false };
            }
            c.region.protect(p, Prot::Read);
        }
        if write {
            if page.twin.is_none() {
                page.twin = Some(c.region.sys_words(p).to_vec().into_boxed_slice());
                c.stats.twins += 1;
                c.lrc.dirty.insert(p as u32);
            }
            c.region.protect(p, Prot::ReadWrite);
        }
        Fault::Ok
    }

    fn release(&mut self, c: &mut Core) {
        self.close(c);
    }

    fn acquire(&mut self, c: &mut Core, intervals: &[Interval]) {
        self.close(c);
        for iv in c.lrc.incorporate(intervals) {
            if iv.rank as usize == c.me {
                continue;
            }
            let s = vt_sum(&iv.vt);
            for &p in &iv.pages {
                let page = &mut self.pages[p as usize];
                if page.notices.is_empty() {
                    c.region.protect(p as usize, Prot::None);
                }
                page.notices.push((iv.rank, iv.idx, s));
            }
        }
    }

    fn message(&mut self, c: &mut Core, from: usize, m: Msg) {
        match m {
            Msg::DiffReq { page, idxs } => {
                let diffs = idxs
                    .into_iter()
                    .map(|i| {
                        let d = self.diffs.get(&(page, i)).unwrap_or_else(|| {
                            panic!(
                                "rank {} has no diff of page {page} interval {i} (asked by {from})",
                                c.me
                            )
                        });
                        (i, d.clone())
                    })
                    .collect();
                c.send(from, &Msg::DiffRep { page, diffs });
            }
            Msg::DiffRep { page, diffs } => {
                let pg = &mut self.pages[page as usize];
                let (waiting, got) = pg.fetch.as_mut().expect("diffs nobody asked for");
                got.extend(diffs.into_iter().map(|(i, d)| (from as u32, i, d)));
                *waiting -= 1;
                if *waiting == 0 {
                    c.end_remote();
                    c.wake_if(|w| w == Wait::Page(page));
                }
            }
            m => panic!("LMW got a message of another protocol: {m:?}"),
        }
    }

    fn wants_gc(&self, c: &Core) -> bool {
        self.diff_bytes > c.gc_bytes
    }

    fn stale_pages(&self) -> Vec<usize> {
        (0..self.pages.len())
            .filter(|&p| !self.pages[p].notices.is_empty())
            .collect()
    }

    fn discard(&mut self, c: &mut Core, cut: &[u32]) {
        let me = c.me;
        self.diffs.retain(|&(_, i), _| i > cut[me]);
        self.diff_bytes = self.diffs.values().map(diff::bytes).sum();
        for p in &mut self.pages {
            p.notices.retain(|n| n.1 > cut[n.0 as usize]);
        }
    }
}
