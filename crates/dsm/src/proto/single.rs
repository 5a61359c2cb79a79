//! What the single-writer protocols (LSW and SEQ) share: the page managers' request
//! queues, asking for a page and confirming its arrival, and the freeze.
//!
//! The freeze is the seed's answer to page thrashing in single-writer protocols: "freezing
//! newly arrived pages for a short period before allowing them to be invalidated". A
//! request that would take a page away from the rank it arrived at (ownership moving on,
//! write access dropped, an invalidation) less than the freeze time ago is held back until
//! the time is up, so the rank gets some use of every page it paid a round trip for, and a
//! page two ranks write in turn moves at most once per freeze time.
//!
//! The freeze (when not zero) runs from the faulting thread's first use of the page, not
//! from its arrival: until that thread has run (at most [`USE_HOLD`]) the page is kept anyway, or
//! on a busy machine a request could take it away before the thread is scheduled, and
//! the thread would fault again having done nothing.

use super::Fault;
use crate::msg::Msg;
use crate::state::{Core, Wait};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The default freeze: 30 µs from the faulting thread's first use, about one remote fault.
/// Without it, SOR/SEQ on 2 ranks (2 shared cores, small input) took 86–594 remote faults
/// per rank from run to run: whenever both ranks reached their common boundary rows at
/// once, the two boundary pages moved once per element (≈ 510 faults per such phase),
/// whole phases in lockstep. With 30 µs every run took 86–93. Long freezes hurt: at a
/// 1 ms net delay with 2 ranks (release build, load average about 10), a 2 ms freeze made
/// barnes/LSW move 821–1075 pages in 1.8–2.5 s against 271–351 pages in 0.5–0.6 s without,
/// and SOR/SEQ 548–1056 pages in 5.9–12 s against 376–428 in 1.8–2.4 s: held-back requests
/// delay the readers after every barrier (the seed: the freeze "tends to decrease
/// performance for applications that synchronize at fine granularities").
/// `numalab-dsm-rank … FREEZE_NS` sets another.
pub const DEFAULT_FREEZE: Duration = Duration::from_micros(30);

/// Longest a page waits for the thread that faulted for it to run.
pub const USE_HOLD: Duration = Duration::from_millis(2);
/// How soon a request held for a page's first use is looked at again.
const USE_RETRY: Duration = Duration::from_micros(20);

/// A manager's state of one page: its owner, a protocol's extra, and the requests waiting
/// while it serves one (it serves one at a time, until the requester confirms).
#[derive(Default, Clone)]
pub struct Mgr<X> {
    /// The rank that owns the page.
    pub owner: usize,
    /// Protocol-specific state (SEQ: the copy set and acknowledgements).
    pub x: X,
    busy: bool,
    queue: VecDeque<(usize, bool)>,
}

/// The managers' state of every page (only pages managed here are used).
pub struct Managers<X> {
    /// Per page.
    pub pages: Vec<Mgr<X>>,
}

impl<X> Managers<X> {
    /// Page p is managed by, and first owned by, rank p mod n.
    pub fn new(c: &Core, x: impl Fn(usize) -> X) -> Managers<X> {
        Managers {
            pages: (0..c.region.pages())
                .map(|p| Mgr {
                    owner: p % c.n,
                    x: x(p),
                    busy: false,
                    queue: VecDeque::new(),
                })
                .collect(),
        }
    }

    /// A request reached the manager: true when it is to be served now, else it waits.
    pub fn admit(&mut self, p: usize, from: usize, write: bool) -> bool {
        let m = &mut self.pages[p];
        if m.busy {
            m.queue.push_back((from, write));
            false
        } else {
            m.busy = true;
            true
        }
    }

    /// The request in service was confirmed: the next to serve, if any.
    pub fn next(&mut self, p: usize) -> Option<(usize, bool)> {
        let m = &mut self.pages[p];
        let n = m.queue.pop_front();
        m.busy = n.is_some();
        n
    }
}

/// Ask page `p`'s manager for read or write access; the faulting thread waits.
pub fn ask(c: &mut Core, p: usize, write: bool) -> Fault {
    c.stats.remote_faults += 1;
    c.fault_asked(p);
    let me = c.me as u32;
    c.send(
        p % c.n,
        &Msg::PageReq {
            page: p as u32,
            from: me,
            write,
        },
    );
    Fault::Wait { joined: false }
}

/// The page arrived and is installed: wake its waiters and confirm to the manager.
pub fn confirm(c: &mut Core, p: usize, write: bool) {
    c.fault_served(p);
    let page = p as u32;
    c.wake_if(|w| w == Wait::Page(page));
    let me = c.me as u32;
    c.send(
        p % c.n,
        &Msg::PageDone {
            page,
            from: me,
            write,
        },
    );
}

/// When each page last arrived here, against the freeze time, and whether the thread
/// that asked for it has run since.
pub struct Freeze {
    time: Duration,
    arrived: Vec<Option<Instant>>,
    unused: Vec<bool>,
    counted: Vec<bool>,
}

impl Freeze {
    /// No page frozen yet (first owners got theirs for free).
    pub fn new(c: &Core) -> Freeze {
        let n = c.region.pages();
        Freeze {
            time: c.freeze,
            arrived: vec![None; n],
            unused: vec![false; n],
            counted: vec![false; n],
        }
    }

    /// Page `p` arrived now.
    pub fn arrived(&mut self, p: usize) {
        self.arrived[p] = Some(Instant::now());
        self.unused[p] = true;
        self.counted[p] = false;
    }

    /// A thread's fault on page `p` was satisfied: the freeze runs from now.
    pub fn used(&mut self, p: usize) {
        if std::mem::replace(&mut self.unused[p], false) {
            self.arrived[p] = Some(Instant::now());
        }
    }

    /// Hold back message `m` (from `from`, about page `p`) while the page is frozen or
    /// not yet used: true when it was deferred; it comes back to the protocol when the
    /// freeze ends, or a moment later to look again. Each arrival held counts once.
    pub fn hold(&mut self, c: &mut Core, p: usize, from: usize, m: &Msg) -> bool {
        let Some(t) = self.arrived[p].filter(|_| !self.time.is_zero()) else {
            return false;
        };
        let now = Instant::now();
        let until = if self.unused[p] && now < t + USE_HOLD {
            now + USE_RETRY
        } else if !self.unused[p] && now < t + self.time {
            t + self.time
        } else {
            return false;
        };
        if !std::mem::replace(&mut self.counted[p], true) {
            c.stats.freezes += 1;
        }
        c.defer(until, from, m);
        true
    }
}
