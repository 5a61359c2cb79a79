//! LMW: lazy release consistency with multiple writers (TreadMarks/CVM style, homeless).
//!
//! Every rank starts with a valid zero copy of every page. The first write to a page makes
//! a twin; closing the interval (at a release, an acquire or a barrier arrival)
//! write-protects the page, so the next interval's first write is noticed, but keeps the
//! twin and makes no diff. Diffs are made lazily (as in TreadMarks and CVM), by word
//! comparison against the twin, only when one is needed: when another rank asks for one
//! (on the service thread, after write-protecting the page), when a write notice for the
//! page arrives (before others' diffs touch it) or when GC drops the intervals. A page
//! written in many intervals with no request between them thus makes one diff, sent with
//! the list of intervals it covers. An acquire brings write notices for intervals not yet
//! seen; each noticed page is invalidated. A fault on an invalid page asks each writer for
//! its diffs in parallel and applies them in an order consistent with happened-before
//! (ascending vector-timestamp sums, a covering diff at its earliest interval: nothing
//! that wrote the page happened before its later intervals, or the notice would have made
//! the diff then). Diffs and intervals are collected at a barrier once a rank stores more
//! than `gc_bytes` of diffs: every rank validates its stale pages, and a second barrier
//! drops everything all ranks have applied.
//!
//! LMWC is this protocol with a page directory ([`super::classify`]): pages only one rank
//! touches skip all of the above. It also prefetches: at an acquire, the noticed pages this
//! rank fetched diffs for before are asked for at once, in one request per writer, and
//! their diffs applied on arrival, so a stable sharing pattern costs one round trip per
//! writer per acquire instead of one per page. A page whose base came from its first
//! toucher is asked ahead once on trial ([`Heat`]): left closed after its diffs arrive,
//! its first access (a local fault, no round trip) keeps it asked ahead, and an acquire
//! that finds it untouched since stops asking.

use super::classify::{Directory, Handled};
use super::{Fault, Protocol};
use crate::diff;
use crate::lrc::vt_sum;
use crate::msg::{Diff, Interval, Msg, PageDiffs};
use crate::region::Prot;
use crate::state::{Core, Wait};
use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

/// A diff received for a fetch: (writer rank, intervals it covers, diff).
type Got = (u32, Vec<u32>, Diff);

/// Most pages a write fault opens after its own (LMWC, [`Lmw::write_run`]).
const WRITE_RUN: usize = 16;

#[derive(Default)]
struct Page {
    twin: Option<Box<[u32]>>,
    /// My closed intervals that wrote the page since the twin was made (no diff yet).
    pending: Vec<u32>,
    /// Unapplied write notices: (rank, interval, vt sum).
    notices: Vec<(u32, u32, u64)>,
    /// Intervals applied here (inside a covering diff) before their notice arrived.
    ahead: Vec<(u32, u32)>,
    /// Ranks still to answer, and the diffs they sent.
    fetch: Option<(usize, Vec<Got>)>,
    /// The fetch is a prefetch: applied when the last answer arrives.
    prefetched: bool,
}

/// LMWC: whether a noticed page's diffs are asked ahead at an acquire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Heat {
    /// Not asked ahead: its notices wait for a fault.
    Cold,
    /// Its base came from another rank: asked ahead at the next acquire, on trial.
    Trial,
    /// Asked ahead on trial and applied, closed until touched: touched, it turns hot;
    /// still untouched at the next acquire, cold.
    Probation,
    /// This rank fetched it before (a fault for diffs, or a touch after a trial).
    Hot,
}

/// One diff I made: the intervals it covers, the words.
struct Made {
    covers: Vec<u32>,
    diff: Diff,
}

/// LMW state of one rank.
pub struct Lmw {
    pages: Vec<Page>,
    /// My diffs by id, and the id of each (page, interval) they cover.
    made: HashMap<u64, Made>,
    by_interval: HashMap<(u32, u32), u64>,
    next_id: u64,
    diff_bytes: usize,
    /// LMWC's page classification; None for the CVM paper's LMW.
    dir: Option<Directory>,
    /// LMWC: which pages are asked ahead at an acquire (fetched here before, so likely
    /// touched again), and those the last acquire invalidated, to prefetch.
    heat: Vec<Heat>,
    want: Vec<usize>,
    /// LMWC: the shared pages the last closed interval wrote (see [`Lmw::write_run`]).
    wrote_last: std::collections::BTreeSet<u32>,
}

impl Lmw {
    /// Every page valid, read-only.
    pub fn new(c: &Core) -> Lmw {
        Lmw {
            pages: (0..c.region.pages()).map(|_| Page::default()).collect(),
            made: HashMap::new(),
            by_interval: HashMap::new(),
            next_id: 0,
            diff_bytes: 0,
            dir: None,
            heat: Vec::new(),
            want: Vec::new(),
            wrote_last: Default::default(),
        }
    }

    /// LMWC: LMW on the pages two or more ranks touch, nothing on the others.
    pub fn classified(c: &Core) -> Lmw {
        Lmw {
            dir: Some(Directory::new(c)),
            heat: vec![Heat::Cold; c.region.pages()],
            ..Lmw::new(c)
        }
    }

    /// Whether page `p` follows LMW on this rank (always, without a directory).
    fn shared(&self, p: usize) -> bool {
        self.dir.as_ref().is_none_or(|d| d.shared(p))
    }

    fn close(&mut self, c: &mut Core) {
        if c.lrc.dirty.is_empty() {
            return;
        }
        let idx = c.lrc.vt[c.me] + 1;
        let mut run = Vec::with_capacity(c.lrc.dirty.len());
        for &p in &c.lrc.dirty {
            run.push(p as usize);
            self.pages[p as usize].pending.push(idx);
            c.stats.page_intervals += 1;
        }
        c.region.protect_pages(&mut run, Prot::Read);
        if self.dir.is_some() {
            self.wrote_last = c.lrc.dirty.clone();
        }
        c.lrc.close();
    }

    /// LMWC: pages after `p` to open for writing with it, one mprotect for the run: those
    /// the last interval wrote here too, shared, valid and not open yet. A rank that
    /// writes the same neighbouring shared pages every interval (SOR's boundary row, 4
    /// pages) then takes one write fault per interval instead of one per page. A page
    /// opened but not written makes an empty diff, never a wrong one.
    fn write_run(&self, c: &Core, p: usize) -> usize {
        if self.dir.is_none() || !self.wrote_last.contains(&(p as u32)) {
            return 0;
        }
        (p + 1..self.pages.len())
            .take_while(|&q| {
                let pg = &self.pages[q];
                self.shared(q)
                    && self.wrote_last.contains(&(q as u32))
                    && pg.notices.is_empty()
                    && pg.fetch.is_none()
                    && !c.lrc.dirty.contains(&(q as u32))
            })
            .take(WRITE_RUN)
            .count()
    }

    /// Twin page `p` for this interval's writes (a twin kept from earlier intervals, no
    /// diff asked for yet, serves this one too) and count it dirty.
    fn open_for_write(&mut self, c: &mut Core, p: usize) {
        let page = &mut self.pages[p];
        if page.twin.is_none() {
            let t0 = Instant::now();
            page.twin = Some(c.region.sys_words(p).to_vec().into_boxed_slice());
            c.stats.twin_ns += t0.elapsed().as_nanos() as u64;
            c.stats.twins += 1;
        }
        c.lrc.dirty.insert(p as u32);
    }

    /// Make the diff of page `p` for its pending intervals. The caller holds the rank
    /// lock; a page written in the open interval is write-protected first (the compute
    /// thread's next write faults and waits for the lock) and gets a fresh twin, so the
    /// open interval's later writes go into its own diff.
    fn make_diff(&mut self, c: &mut Core, p: usize) {
        let page = &mut self.pages[p];
        if page.pending.is_empty() {
            return;
        }
        let open = c.lrc.dirty.contains(&(p as u32));
        if open {
            c.region.protect(p, Prot::Read);
        }
        let twin = page.twin.take().expect("pending intervals without a twin");
        let words = c.region.sys_words(p);
        let d = diff::make(&twin, words);
        if open {
            page.twin = Some(words.to_vec().into_boxed_slice());
            c.stats.twins += 1;
        }
        self.diff_bytes += diff::bytes(&d);
        c.stats.diffs_created += 1;
        let id = self.next_id;
        self.next_id += 1;
        let covers = std::mem::take(&mut page.pending);
        for &i in &covers {
            self.by_interval.insert((p as u32, i), id);
        }
        self.made.insert(id, Made { covers, diff: d });
    }

    /// The diffs of `page` covering my intervals `idxs`, for rank `from` (made now where
    /// an interval asked for has none yet).
    fn diffs_for(
        &mut self,
        c: &mut Core,
        from: usize,
        page: u32,
        idxs: &[u32],
    ) -> Vec<(Vec<u32>, Diff)> {
        if idxs
            .iter()
            .any(|i| self.pages[page as usize].pending.contains(i))
        {
            self.make_diff(c, page as usize);
        }
        let mut ids: Vec<u64> = idxs
            .iter()
            .map(|&i| {
                *self.by_interval.get(&(page, i)).unwrap_or_else(|| {
                    panic!(
                        "rank {} has no diff of page {page} interval {i} (asked by {from})",
                        c.me
                    )
                })
            })
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids.iter()
            .map(|id| {
                let m = &self.made[id];
                (m.covers.clone(), m.diff.clone())
            })
            .collect()
    }

    /// Diffs of `page` from rank `from` for its fetch; true when they were the last.
    fn got(&mut self, from: usize, page: u32, diffs: Vec<(Vec<u32>, Diff)>) -> bool {
        let pg = &mut self.pages[page as usize];
        let (waiting, got) = pg.fetch.as_mut().expect("diffs nobody asked for");
        got.extend(diffs.into_iter().map(|(i, d)| (from as u32, i, d)));
        *waiting -= 1;
        *waiting == 0
    }

    /// A bulk prefetch answer: each page whose last answer this is gets its diffs now,
    /// on the service thread (the page is closed to the application meanwhile), and opens
    /// for reading in one mprotect per run, unless newer notices came while it was asked.
    fn prefetched(&mut self, c: &mut Core, from: usize, reps: Vec<PageDiffs>) {
        let mut ready = Vec::new();
        for (page, diffs) in reps {
            if !self.got(from, page, diffs) {
                continue;
            }
            let p = page as usize;
            let (_, got) = self.pages[p].fetch.take().expect("a prefetch in flight");
            self.pages[p].prefetched = false;
            self.apply(c, p, got);
            // On probation it stays closed, so its first access says it was wanted.
            if self.pages[p].notices.is_empty() && self.heat[p] != Heat::Probation {
                ready.push(p);
            }
            c.wake_if(|w| w == Wait::Page(page));
        }
        c.region.protect_pages(&mut ready, Prot::Read);
    }

    /// Apply the diffs a fetch brought, oldest first.
    fn apply(&mut self, c: &mut Core, p: usize, mut got: Vec<Got>) {
        let page = &mut self.pages[p];
        let pos = |r: u32, covers: &[u32]| {
            page.notices
                .iter()
                .filter(|n| n.0 == r && covers.contains(&n.1))
                .map(|n| n.2)
                .min()
                .unwrap_or(0)
        };
        got.sort_by_cached_key(|(r, covers, _)| (pos(*r, covers), *r));
        let words = c.region.sys_words(p);
        for (r, covers, d) in &got {
            diff::apply(words, d);
            for &i in covers {
                let known = page.notices.len();
                page.notices.retain(|n| !(n.0 == *r && n.1 == i));
                if page.notices.len() == known && i > c.lrc.vt[*r as usize] {
                    page.ahead.push((*r, i));
                }
            }
        }
        c.stats.diffs_used += got.len() as u64;
    }
}

impl Protocol for Lmw {
    fn fault(&mut self, c: &mut Core, p: usize, write: bool) -> Fault {
        if let Some(f) = self.dir.as_mut().and_then(|d| d.fault(c, p)) {
            return f;
        }
        if !self.pages[p].notices.is_empty() {
            match self.pages[p].fetch.take() {
                Some((waiting, got)) if waiting > 0 => {
                    self.pages[p].fetch = Some((waiting, got));
                    if self.pages[p].prefetched {
                        c.stats.prefetch_waits += 1;
                        return Fault::Wait { joined: false };
                    }
                    return Fault::Wait { joined: true };
                }
                Some((_, got)) => {
                    self.apply(c, p, got);
                }
                None => {}
            }
            let page = &mut self.pages[p];
            if !page.notices.is_empty() {
                let mut by_rank: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
                for &(r, i, _) in &page.notices {
                    by_rank.entry(r).or_default().push(i);
                }
                page.fetch = Some((by_rank.len(), Vec::new()));
                if let Some(h) = self.heat.get_mut(p) {
                    *h = Heat::Hot;
                }
                c.stats.remote_faults += 1;
                c.fault_asked(p);
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
        } else if self.heat.get(p) == Some(&Heat::Probation) {
            // Asked ahead on trial, and wanted: from now on asked ahead for good.
            self.heat[p] = Heat::Hot;
            c.region.protect(p, Prot::Read);
        }
        if write {
            let run = self.write_run(c, p);
            for q in p..=p + run {
                self.open_for_write(c, q);
            }
            c.region.protect_run(p, run + 1, Prot::ReadWrite);
        }
        Fault::Ok
    }

    fn release(&mut self, c: &mut Core) {
        self.close(c);
    }

    fn acquire(&mut self, c: &mut Core, intervals: &[Interval]) {
        self.close(c);
        let mut invalid = Vec::new();
        for iv in c.lrc.incorporate(intervals) {
            if iv.rank as usize == c.me {
                continue;
            }
            let s = vt_sum(&iv.vt);
            for &p in &iv.pages {
                // My writes must be diffed before others' diffs change the page.
                self.make_diff(c, p as usize);
                let shared = self.shared(p as usize);
                let page = &mut self.pages[p as usize];
                if let Some(k) = page.ahead.iter().position(|&a| a == (iv.rank, iv.idx)) {
                    page.ahead.swap_remove(k);
                    continue;
                }
                // A page not touched here is closed already; the notice waits for its base.
                if page.notices.is_empty() && shared {
                    invalid.push(p as usize);
                }
                page.notices.push((iv.rank, iv.idx, s));
                match self.heat.get(p as usize) {
                    // Asked ahead on trial and not touched since: not asked again.
                    Some(Heat::Probation) => self.heat[p as usize] = Heat::Cold,
                    Some(Heat::Trial | Heat::Hot) if shared => self.want.push(p as usize),
                    _ => {}
                }
            }
        }
        c.region.protect_pages(&mut invalid, Prot::None);
    }

    fn message(&mut self, c: &mut Core, from: usize, m: Msg) {
        let m = match self.dir.as_mut() {
            None => m,
            Some(d) => match d.message(c, from, m) {
                Handled::No(m) => m,
                Handled::Done => return,
                Handled::Installed(pages) => {
                    let mut readable = Vec::with_capacity(pages.len());
                    for p in pages {
                        // A page another rank wrote first and this one reads: tried ahead
                        // at the next acquire (barnes' tree, rebuilt by one rank each
                        // step, otherwise cost a fault per page every step).
                        if self.heat[p] == Heat::Cold {
                            self.heat[p] = Heat::Trial;
                        }
                        // Write notices that came before the base wait for the next fault.
                        if self.pages[p].notices.is_empty() {
                            readable.push(p);
                        }
                    }
                    c.region.protect_pages(&mut readable, Prot::Read);
                    return;
                }
            },
        };
        match m {
            Msg::DiffReq { page, idxs } => {
                let diffs = self.diffs_for(c, from, page, &idxs);
                c.send(from, &Msg::DiffRep { page, diffs });
            }
            Msg::DiffRep { page, diffs } => {
                if self.got(from, page, diffs) {
                    c.fault_served(page as usize);
                    c.wake_if(|w| w == Wait::Page(page));
                }
            }
            Msg::DiffBulkReq { reqs } => {
                let reps = reqs
                    .into_iter()
                    .map(|(page, idxs)| (page, self.diffs_for(c, from, page, &idxs)))
                    .collect();
                c.send(from, &Msg::DiffBulkRep { reps });
            }
            Msg::DiffBulkRep { reps } => self.prefetched(c, from, reps),
            m => panic!("LMW got a message of another protocol: {m:?}"),
        }
    }

    fn prefetch(&mut self, c: &mut Core) {
        let mut want = std::mem::take(&mut self.want);
        want.sort_unstable();
        want.dedup();
        let mut by_rank: BTreeMap<u32, Vec<(u32, Vec<u32>)>> = BTreeMap::new();
        for p in want {
            let page = &mut self.pages[p];
            // Applied already (a notice can name a page twice), or a fault asked first.
            if page.notices.is_empty() || page.fetch.is_some() {
                continue;
            }
            let mut idxs: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
            for &(r, i, _) in &page.notices {
                idxs.entry(r).or_default().push(i);
            }
            page.fetch = Some((idxs.len(), Vec::new()));
            page.prefetched = true;
            if self.heat[p] == Heat::Trial {
                self.heat[p] = Heat::Probation;
            }
            c.stats.prefetched += 1;
            for (r, i) in idxs {
                by_rank.entry(r).or_default().push((p as u32, i));
            }
        }
        for (r, reqs) in by_rank {
            c.stats.prefetch_msgs += 1;
            c.send(r as usize, &Msg::DiffBulkReq { reqs });
        }
    }

    fn wants_gc(&self, c: &Core) -> bool {
        self.diff_bytes > c.gc_bytes
    }

    fn stale_pages(&self) -> Vec<usize> {
        // Pages never touched here are not brought up to date: their first toucher
        // refreshes the base they will start from.
        (0..self.pages.len())
            .filter(|&p| !self.pages[p].notices.is_empty() && self.shared(p))
            .collect()
    }

    fn discard(&mut self, c: &mut Core, cut: &[u32]) {
        let me = c.me;
        self.made
            .retain(|_, m| m.covers.iter().any(|&i| i > cut[me]));
        self.by_interval.retain(|&(_, i), _| i > cut[me]);
        self.diff_bytes = self.made.values().map(|m| diff::bytes(&m.diff)).sum();
        for (p, pg) in self.pages.iter_mut().enumerate() {
            pg.notices.retain(|n| n.1 > cut[n.0 as usize]);
            pg.ahead.retain(|a| a.1 > cut[a.0 as usize]);
            // Every rank applied these, so nobody will ask; a twin with nothing left to
            // cover (and no open write) goes too.
            pg.pending.retain(|&i| i > cut[me]);
            if pg.pending.is_empty() && !c.lrc.dirty.contains(&(p as u32)) {
                pg.twin = None;
            }
        }
        if let Some(d) = self.dir.as_mut() {
            d.refresh_bases(c);
        }
    }
}
