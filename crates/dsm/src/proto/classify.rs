//! LMWC's page directory: pages classified by who touches them, after ArgoDSM's Pyxis
//! directory, so that write detection costs only where sharing is.
//!
//! Every page starts untouched (no access) on every rank. A rank's first access asks the
//! page's home (a block distribution of pages over ranks, so a rank that works on its own
//! block asks itself). The home remembers the first rank to touch the page: that rank
//! gets it private, read-write, for good — no write protection, twin, diff or write
//! notice, and nothing to invalidate at a barrier. When a second rank touches it, the
//! home sends it to the first toucher, which turns the page shared (write-protects it and
//! keeps a copy of it as it is then, the base) and sends the base to the newcomer. From
//! then on the page follows LMW on every rank: a rank that touches it later starts from
//! the base and applies the write notices it holds, all of them made after the base.
//! A rank sweeping a block of pages (it touched the page before first), homed here or
//! elsewhere, claims the untouched pages that follow, up to 64, with the same request: the home
//! makes it their first toucher, and the page turns shared as above if another rank
//! touches it after all. At a garbage collection the first toucher refreshes the base from its validated copy
//! (the dropped diffs are in it), and serves no base request from a rank that has done
//! more collections than itself until it has done them too. A rank whose first touches
//! of others' pages keep a stride asks for the next pages on it at once
//! ([`super::ahead`]).

use super::ahead::Stride;
use super::Fault;
use crate::msg::Msg;
use crate::region::{Prot, PAGE};
use crate::state::{Core, Wait};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

/// What this rank knows of a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Never accessed here: no access, no copy.
    Untouched,
    /// First access asked of the home; the answer has not come.
    Touching,
    /// This rank alone has touched it: read-write, no consistency actions.
    Private,
    /// Two or more ranks touched it: LMW's twins, diffs and write notices.
    Shared,
}

/// What a directory message left for LMW to do.
pub enum Handled {
    /// Nothing more.
    Done,
    /// The bases of these pages were installed: LMW sets their access.
    Installed(Vec<usize>),
    /// Not a directory message.
    No(Msg),
}

/// No rank.
const NONE: u32 = u32::MAX;

/// Most pages a first touch claims after itself (see [`Directory::run_after`]).
pub const CLAIM_RUN: usize = 64;

/// One rank's directory: its view of every page, the first toucher of the pages homed
/// here, and the bases of the pages it touched first that turned shared.
pub struct Directory {
    class: Vec<Class>,
    first: Vec<u32>,
    base: HashMap<u32, Box<[u8]>>,
    /// Read-ahead: the stride of this rank's first touches, and the pages asked ahead
    /// whose answer has not come.
    stride: Stride,
    ahead: HashSet<u32>,
}

impl Directory {
    /// Every page untouched (and closed to the application).
    pub fn new(c: &Core) -> Directory {
        let pages = c.region.pages();
        c.region.protect_all(Prot::None);
        Directory {
            class: vec![Class::Untouched; pages],
            first: vec![NONE; pages],
            base: HashMap::new(),
            stride: Stride::default(),
            ahead: HashSet::new(),
        }
    }

    /// This rank's class of page `p`.
    pub fn class(&self, p: usize) -> Class {
        self.class[p]
    }

    /// Whether page `p` follows LMW here (touched by two or more ranks).
    pub fn shared(&self, p: usize) -> bool {
        self.class[p] == Class::Shared
    }

    /// The rank keeping page `p`'s first toucher: blocks of consecutive pages per rank.
    fn home(c: &Core, p: usize) -> usize {
        p * c.n / c.region.pages().max(1)
    }

    /// A fault on page `p`: what to do when it is not shared, None when LMW decides.
    pub fn fault(&mut self, c: &mut Core, p: usize) -> Option<Fault> {
        match self.class[p] {
            Class::Shared => None,
            // Opened read-write when it turned private: a thread that waited for the
            // answer retries here and goes on.
            Class::Private => Some(Fault::Ok),
            Class::Touching => Some(Fault::Wait { joined: true }),
            Class::Untouched => {
                self.class[p] = Class::Touching;
                c.stats.touches += 1;
                let home = Self::home(c, p);
                if home != c.me {
                    c.stats.remote_faults += 1;
                    c.fault_asked(p);
                }
                let gcs = c.stats.gcs as u32;
                let run = self.run_after(c, p, home) as u32;
                c.send(
                    home,
                    &Msg::Touch {
                        page: p as u32,
                        gcs,
                        run,
                    },
                );
                self.touch_ahead(c, p);
                Some(Fault::Wait { joined: false })
            }
        }
    }

    /// How many pages after `p` to claim with its touch: when this rank touched `p - 1`
    /// first (it sweeps a block), the untouched pages that follow on the same home, up to
    /// [`CLAIM_RUN`]; none otherwise. Its own home's pages too: a rank initialising its
    /// block then takes one fault and one mprotect per 65 pages, not per page.
    fn run_after(&self, c: &Core, p: usize, home: usize) -> usize {
        if p == 0 || self.class[p - 1] != Class::Private {
            return 0;
        }
        (p + 1..(p + 1 + CLAIM_RUN).min(self.class.len()))
            .take_while(|&q| self.class[q] == Class::Untouched && Self::home(c, q) == home)
            .count()
    }

    /// After a demand first touch of `p`: the untouched pages the stride predicts, asked
    /// for in one request per home (no thread waits on them until one touches them).
    fn touch_ahead(&mut self, c: &mut Core, p: usize) {
        let pages = self.stride.ahead(p, self.class.len());
        self.ask_ahead(c, pages);
    }

    /// Ask the homes of the untouched ones of `pages` for them, one request per home.
    fn ask_ahead(&mut self, c: &mut Core, pages: impl IntoIterator<Item = usize>) {
        let mut by_home: BTreeMap<usize, Vec<u32>> = BTreeMap::new();
        for q in pages {
            if self.class[q] == Class::Untouched {
                self.class[q] = Class::Touching;
                self.ahead.insert(q as u32);
                by_home.entry(Self::home(c, q)).or_default().push(q as u32);
            }
        }
        let gcs = c.stats.gcs as u32;
        for (home, pages) in by_home {
            c.stats.touched_ahead += pages.len() as u64;
            c.stats.ahead_msgs += 1;
            c.send(home, &Msg::TouchAhead { pages, gcs });
        }
    }

    /// At the home: pages asked ahead get their base from their first toucher; those
    /// nobody else touched first are handed back untouched (a guess claims nothing).
    fn serve_ahead(&mut self, c: &mut Core, from: usize, pages: Vec<u32>, gcs: u32) {
        let mut none = Vec::new();
        // One request to each first toucher for all its pages: a base a message cost
        // barnes' first toucher ~30 µs a page (mprotect, copy, send and ring each).
        let mut by_first: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for page in pages {
            let first = self.first[page as usize];
            if first == NONE || first == from as u32 {
                none.push(page);
            } else {
                by_first.entry(first).or_default().push(page);
            }
        }
        for (first, pages) in by_first {
            let to = from as u32;
            c.send(first as usize, &Msg::BaseReq { pages, to, gcs });
        }
        if !none.is_empty() {
            c.send(from, &Msg::NotTouched { pages: none });
        }
    }

    /// Pages asked ahead that nobody had touched: untouched again here, and a thread
    /// that waited on one retries (its own first touch).
    fn not_touched(&mut self, c: &mut Core, pages: Vec<u32>) {
        for page in pages {
            let p = page as usize;
            if self.ahead.remove(&page) && self.class[p] == Class::Touching {
                self.class[p] = Class::Untouched;
                c.stats.ahead_untouched += 1;
                c.wake_if(|w| w == Wait::Page(page));
            }
        }
    }

    /// At the home: the pages of a claimed run that nobody touched yet become `from`'s.
    fn grant_run(&mut self, c: &mut Core, from: usize, page: u32, run: u32) {
        let pages: Vec<u32> = (page + 1..=page + run)
            .filter(|&q| self.first[q as usize] == NONE)
            .collect();
        if pages.is_empty() {
            return;
        }
        for &q in &pages {
            self.first[q as usize] = from as u32;
        }
        c.send(from, &Msg::Claimed { pages });
    }

    /// Handle a directory message (any other is handed back).
    pub fn message(&mut self, c: &mut Core, from: usize, m: Msg) -> Handled {
        match m {
            Msg::Touch { page, gcs, run } => {
                self.on_touch(c, from, page, gcs, run);
                Handled::Done
            }
            Msg::Owner { page } => {
                self.on_owner(c, page);
                Handled::Done
            }
            Msg::Claimed { pages } => {
                self.on_claimed(c, pages);
                Handled::Done
            }
            Msg::BaseReq { pages, to, gcs } => {
                if (c.stats.gcs as u32) < gcs {
                    let again = Msg::BaseReq { pages, to, gcs };
                    c.defer(Instant::now() + Duration::from_micros(20), from, &again);
                    return Handled::Done;
                }
                let data = self.share(c, &pages);
                c.send(to as usize, &Msg::Base { pages, data });
                Handled::Done
            }
            Msg::Base { pages, data } => {
                for (&page, data) in pages.iter().zip(data.chunks_exact(PAGE)) {
                    self.install(c, page, data);
                }
                Handled::Installed(pages.iter().map(|&p| p as usize).collect())
            }
            Msg::TouchAhead { pages, gcs } => {
                self.serve_ahead(c, from, pages, gcs);
                Handled::Done
            }
            Msg::NotTouched { pages } => {
                self.not_touched(c, pages);
                Handled::Done
            }
            m => Handled::No(m),
        }
    }

    /// A rank touched `page` (homed here) first, or after another: answer it as the
    /// owner, or have the first toucher send it the page's base.
    fn on_touch(&mut self, c: &mut Core, from: usize, page: u32, gcs: u32, run: u32) {
        self.grant_run(c, from, page, run);
        let first = &mut self.first[page as usize];
        if *first == NONE || *first == from as u32 {
            *first = from as u32;
            c.send(from, &Msg::Owner { page });
        } else {
            if from == c.me {
                // Home here, page elsewhere: the fault is remote after all.
                c.stats.remote_faults += 1;
                c.fault_asked(page as usize);
            }
            let (pages, to) = (vec![page], from as u32);
            c.send(*first as usize, &Msg::BaseReq { pages, to, gcs });
        }
    }

    /// This rank is `page`'s only toucher: it turns private and writable.
    fn on_owner(&mut self, c: &mut Core, page: u32) {
        let p = page as usize;
        // Shared already when a second toucher's request overtook this answer.
        if self.class[p] == Class::Touching {
            self.class[p] = Class::Private;
            c.stats.private_pages += 1;
            c.region.protect(p, Prot::ReadWrite);
        }
        if Self::home(c, p) != c.me {
            c.fault_served(p);
        }
        c.wake_if(|w| w == Wait::Page(page));
    }

    /// The home granted these pages to this rank before it touched them.
    fn on_claimed(&mut self, c: &mut Core, pages: Vec<u32>) {
        let mut open = Vec::with_capacity(pages.len());
        for q in pages {
            let q = q as usize;
            // Touching: this rank's own Touch of it is in flight; its Owner answer
            // finds it private already.
            if matches!(self.class[q], Class::Untouched | Class::Touching) {
                if self.class[q] == Class::Touching {
                    c.wake_if(|w| w == Wait::Page(q as u32));
                }
                self.class[q] = Class::Private;
                self.ahead.remove(&(q as u32));
                c.stats.private_pages += 1;
                c.stats.claimed += 1;
                open.push(q);
            }
        }
        c.region.protect_pages(&mut open, Prot::ReadWrite);
    }

    /// `pages`, touched first here, turn shared (each once): write-protected, so this
    /// rank's next write twins them, and their contents kept as the bases others start
    /// from. Their bases, one after another.
    fn share(&mut self, c: &mut Core, pages: &[u32]) -> Vec<u8> {
        let mut turning = Vec::new();
        for &page in pages {
            let p = page as usize;
            if self.class[p] != Class::Shared {
                // Touching: a second toucher's request overtook the home's answer; the
                // page is still all zeros, nobody having written it.
                if self.class[p] == Class::Touching {
                    c.wake_if(|w| w == Wait::Page(page));
                }
                turning.push(p);
                self.class[p] = Class::Shared;
                c.stats.reclassified += 1;
            }
        }
        // Closed to writes before the bases are taken, one mprotect per run of pages.
        c.region.protect_pages(&mut turning, Prot::Read);
        let mut data = Vec::with_capacity(pages.len() * PAGE);
        for &page in pages {
            let current = c.region.sys_page(page as usize);
            let b = self
                .base
                .entry(page)
                .or_insert_with(|| current.to_vec().into_boxed_slice());
            debug_assert_eq!(b.len(), PAGE);
            data.extend_from_slice(b);
        }
        data
    }

    /// A page's base arrived: it is shared from now on; a fault that asked for it
    /// goes on, and a base not asked ahead moves the read-ahead window.
    fn install(&mut self, c: &mut Core, page: u32, data: &[u8]) {
        let p = page as usize;
        c.region.sys_page(p).copy_from_slice(data);
        self.class[p] = Class::Shared;
        c.stats.pages_received += 1;
        if !self.ahead.remove(&page) {
            c.fault_served(p);
            let window = self.stride.based(p, self.class.len());
            self.ask_ahead(c, window);
        }
        c.wake_if(|w| w == Wait::Page(page));
    }

    /// After a collection (every copy validated): bases become the pages as they are
    /// now, since the diffs before them are dropped.
    pub fn refresh_bases(&mut self, c: &Core) {
        for (&p, b) in self.base.iter_mut() {
            b.copy_from_slice(c.region.sys_page(p as usize));
        }
    }
}
