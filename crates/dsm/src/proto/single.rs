//! What the single-writer protocols (LSW and SEQ) share: the page managers' request
//! queues, asking for a page and confirming its arrival, and the freeze.
//!
//! The freeze is the seed's answer to page thrashing in single-writer protocols: "freezing
//! newly arrived pages for a short period before allowing them to be invalidated". A
//! request that would take a page away from the rank it arrived at (ownership moving on,
//! write access dropped, an invalidation) less than the freeze time ago is held back until
//! the time is up, so the rank gets some use of every page it paid a round trip for, and a
//! page two ranks write in turn moves at most once per freeze time.

use super::Fault;
use crate::msg::Msg;
use crate::state::{Core, Wait};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The default freeze: none. Measured at a 1 ms net delay with 2 ranks (release build,
/// load average about 10), a 2 ms freeze made barnes/LSW move 821–1075 pages in 1.8–2.5 s
/// against 271–351 pages in 0.5–0.6 s without, and SOR/SEQ 548–1056 pages in 5.9–12 s
/// against 376–428 in 1.8–2.4 s: held-back requests delay the readers after every barrier
/// (the seed: the freeze "tends to decrease performance for applications that synchronize
/// at fine granularities"). `numalab-dsm-rank … FREEZE_NS` turns it on.
pub const DEFAULT_FREEZE: Duration = Duration::ZERO;

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
    c.start_remote(false);
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
    c.end_remote();
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

/// When each page last arrived here, against the freeze time.
pub struct Freeze {
    time: Duration,
    arrived: Vec<Option<Instant>>,
}

impl Freeze {
    /// No page frozen yet (first owners got theirs for free).
    pub fn new(c: &Core) -> Freeze {
        Freeze {
            time: c.freeze,
            arrived: vec![None; c.region.pages()],
        }
    }

    /// Page `p` arrived now.
    pub fn arrived(&mut self, p: usize) {
        if !self.time.is_zero() {
            self.arrived[p] = Some(Instant::now());
        }
    }

    /// Hold back message `m` (from `from`, about page `p`) while the page is frozen: true
    /// when it was deferred (and counted); it comes back to the protocol when the freeze
    /// ends.
    pub fn hold(&self, c: &mut Core, p: usize, from: usize, m: &Msg) -> bool {
        let Some(t) = self.arrived[p] else {
            return false;
        };
        let until = t + self.time;
        if Instant::now() >= until {
            return false;
        }
        c.stats.freezes += 1;
        c.defer(until, from, m);
        true
    }
}
