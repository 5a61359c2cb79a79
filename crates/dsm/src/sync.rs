//! Global locks (a manager per lock forwards each request to the last requester: a 2-hop
//! acquire when the manager held it last, 3-hop otherwise), the global barrier (one
//! manager, one arrival per rank sent by its last local thread), and the local barrier.
//! A local queue per lock makes local acquires cost one remote request; a release hands
//! the lock to a local waiter before any remote one (the seed's policy: fast, not fair).

use crate::msg::{Interval, Msg};
use crate::node::{Core, Rank, Wait};
use crate::proto::Protocol;
use crate::sched::{self, current_tid};
use std::collections::VecDeque;

/// One lock as seen by one rank.
#[derive(Debug)]
pub struct LockState {
    manager: usize,
    /// Manager only: the last rank that asked.
    last: usize,
    /// The lock is on this rank.
    token: bool,
    /// A local thread holds it.
    held: bool,
    /// This rank asked for it and waits for the grant.
    requested: bool,
    /// Local threads waiting, in order.
    queue: VecDeque<usize>,
    /// The rank the manager forwarded to us, with its vector timestamp.
    next: Option<(usize, Vec<u32>)>,
    /// Intervals that came with the grant, for the thread that gets it to apply.
    grant: Option<Vec<Interval>>,
    holder: usize,
}

impl LockState {
    /// Lock `l` on rank `me` of `n`: it starts on its manager.
    pub fn new(l: usize, me: usize, n: usize) -> LockState {
        let manager = l % n;
        LockState {
            manager,
            last: manager,
            token: manager == me,
            held: false,
            requested: false,
            queue: VecDeque::new(),
            next: None,
            grant: None,
            holder: usize::MAX,
        }
    }
}

/// Barrier state of one rank (and of the manager, rank 0).
#[derive(Debug)]
pub struct BarState {
    epoch: u32,
    arrived: usize,
    payload: Option<(Vec<Interval>, bool, Vec<u32>)>,
    gc_now: bool,
    local_arrived: usize,
    local_gen: u64,
    // Manager side.
    m_count: usize,
    m_vts: Vec<Vec<u32>>,
    m_ivs: Vec<Interval>,
    m_gc: bool,
    m_cut: Option<Vec<u32>>,
}

impl BarState {
    /// Nothing arrived, for `n` ranks.
    pub fn new(n: usize) -> BarState {
        BarState {
            epoch: 0,
            arrived: 0,
            payload: None,
            gc_now: false,
            local_arrived: 0,
            local_gen: 0,
            m_count: 0,
            m_vts: vec![Vec::new(); n],
            m_ivs: Vec::new(),
            m_gc: false,
            m_cut: None,
        }
    }
}

/// Acquire global lock `l` for the running thread.
pub fn acquire(rank: &Rank, l: usize) {
    let tid = current_tid();
    let mut g = rank.lock();
    let c = &mut g.core;
    let ls = &mut c.locks[l];
    if ls.token && !ls.held {
        ls.held = true;
        ls.holder = tid;
        rank.finish(g);
        return;
    }
    ls.queue.push_back(tid);
    if ls.held || ls.requested {
        c.stats.contention_lock += 1;
    } else {
        ls.requested = true;
        let (mgr, me) = (ls.manager, c.me);
        c.stats.remote_locks += 1;
        c.stats.lock_msgs += 1;
        c.start_remote(true);
        let vt = c.lrc.vt.clone();
        c.send(
            mgr,
            &Msg::LockReq {
                lock: l as u32,
                from: me as u32,
                vt,
                forwarded: false,
            },
        );
    }
    loop {
        g = sched::block(rank, g, Wait::Lock(l as u32), true);
        let ls = &g.core.locks[l];
        if ls.held && ls.holder == tid {
            break;
        }
    }
    let crate::node::Node { core, proto } = &mut *g;
    if let Some(ivs) = core.locks[l].grant.take() {
        proto.acquire(core, &ivs);
    }
    rank.finish(g);
}

/// Release global lock `l`.
pub fn release(rank: &Rank, l: usize) {
    let mut g = rank.lock();
    let crate::node::Node { core, proto } = &mut *g;
    proto.release(core);
    let ls = &mut core.locks[l];
    assert!(ls.held, "unlock of lock {l}, which this rank does not hold");
    if let Some(t) = ls.queue.pop_front() {
        ls.holder = t;
        core.wake(t);
    } else if let Some((r, vt)) = ls.next.take() {
        ls.held = false;
        ls.token = false;
        grant(core, l, r, &vt);
    } else {
        ls.held = false;
    }
    rank.finish(g);
}

fn grant(c: &mut Core, l: usize, to: usize, vt: &[u32]) {
    let intervals = c.lrc.newer_than(vt);
    c.stats.lock_msgs += 1;
    c.send(
        to,
        &Msg::LockGrant {
            lock: l as u32,
            intervals,
        },
    );
}

/// Lock requests, forwards and grants (service thread, or inline for this rank's own).
pub fn on_lock_msg(c: &mut Core, _p: &mut dyn Protocol, _from: usize, m: Msg) {
    match m {
        Msg::LockReq {
            lock,
            from,
            vt,
            forwarded,
        } => {
            let l = lock as usize;
            let (from, me) = (from as usize, c.me);
            if !forwarded {
                let last = std::mem::replace(&mut c.locks[l].last, from);
                if last != me {
                    c.stats.lock_msgs += 1;
                    c.send(
                        last,
                        &Msg::LockReq {
                            lock,
                            from: from as u32,
                            vt,
                            forwarded: true,
                        },
                    );
                    return;
                }
            }
            let ls = &mut c.locks[l];
            if ls.token && !ls.held && ls.queue.is_empty() {
                ls.token = false;
                grant(c, l, from, &vt);
            } else {
                assert!(
                    ls.next.is_none(),
                    "lock {l}: two ranks forwarded to rank {me}"
                );
                ls.next = Some((from, vt));
            }
        }
        Msg::LockGrant { lock, intervals } => {
            let l = lock as usize;
            c.end_remote();
            let ls = &mut c.locks[l];
            ls.token = true;
            ls.requested = false;
            ls.grant = Some(intervals);
            let t = ls
                .queue
                .pop_front()
                .expect("lock grant with no local waiter");
            ls.held = true;
            ls.holder = t;
            c.wake(t);
        }
        _ => unreachable!(),
    }
}

/// The global barrier for the running thread.
pub fn barrier(rank: &Rank) {
    let gc = barrier_once(rank);
    if gc {
        collect(rank);
    }
}

fn barrier_once(rank: &Rank) -> bool {
    let mut g = rank.lock();
    let crate::node::Node { core: c, proto } = &mut *g;
    let epoch = c.bar.epoch;
    c.bar.arrived += 1;
    let last = c.bar.arrived == c.t;
    if last {
        c.bar.arrived = 0;
        proto.release(c);
        let intervals = c.lrc.own_unsent();
        let gc = proto.wants_gc(c);
        let vt = c.lrc.vt.clone();
        c.send(
            0,
            &Msg::BarArrive {
                epoch,
                vt,
                intervals,
                gc,
            },
        );
    }
    loop {
        g = sched::block(rank, g, Wait::Barrier, !last);
        if g.core.bar.epoch > epoch {
            break;
        }
    }
    let crate::node::Node { core: c, proto } = &mut *g;
    if let Some((ivs, gc, cut)) = c.bar.payload.take() {
        proto.acquire(c, &ivs);
        if !cut.is_empty() {
            proto.discard(c, &cut);
            c.lrc.discard(&cut);
            c.stats.gcs += 1;
        }
        c.bar.gc_now = gc;
    }
    let gc = c.bar.gc_now;
    rank.finish(g);
    gc
}

/// Garbage collection after a barrier that asked for it: one local thread brings every
/// stale page up to date, then a second barrier lets every rank drop what all have applied.
fn collect(rank: &Rank) {
    if local_barrier(rank) {
        let pages = {
            let g = rank.lock();
            g.proto.stale_pages()
        };
        for p in pages {
            let mut g = rank.lock();
            loop {
                let crate::node::Node { core, proto } = &mut *g;
                match proto.fault(core, p, false) {
                    crate::proto::Fault::Ok => break,
                    crate::proto::Fault::Wait { .. } => {
                        g = sched::block(rank, g, Wait::Page(p as u32), true)
                    }
                }
            }
            rank.finish(g);
        }
    }
    let gc_again = barrier_once(rank);
    debug_assert!(!gc_again);
}

/// Barrier messages: arrivals at the manager, releases at every rank.
pub fn on_barrier_msg(c: &mut Core, from: usize, m: Msg) {
    match m {
        Msg::BarArrive {
            epoch,
            vt,
            intervals,
            gc,
        } => {
            let b = &mut c.bar;
            b.m_count += 1;
            b.m_vts[from] = vt;
            b.m_ivs.extend(intervals);
            b.m_gc |= gc;
            if b.m_count < c.n {
                return;
            }
            b.m_count = 0;
            let ivs = std::mem::take(&mut b.m_ivs);
            let vts = std::mem::take(&mut b.m_vts);
            let merged: Vec<u32> = (0..c.n)
                .map(|r| vts.iter().map(|v| v[r]).max().unwrap_or(0))
                .collect();
            let (gc, cut) = match b.m_cut.take() {
                Some(cut) => (false, cut),
                None if std::mem::take(&mut b.m_gc) => {
                    b.m_cut = Some(merged.clone());
                    (true, Vec::new())
                }
                None => (false, Vec::new()),
            };
            b.m_gc = false;
            b.m_vts = vec![Vec::new(); c.n];
            for (r, vt) in vts.iter().enumerate() {
                let mine: Vec<Interval> = ivs
                    .iter()
                    .filter(|iv| iv.idx > vt[iv.rank as usize])
                    .cloned()
                    .collect();
                c.send(
                    r,
                    &Msg::BarRelease {
                        epoch,
                        intervals: mine,
                        gc,
                        cut: cut.clone(),
                    },
                );
            }
        }
        Msg::BarRelease {
            epoch,
            intervals,
            gc,
            cut,
        } => {
            assert_eq!(epoch, c.bar.epoch, "barrier release for another epoch");
            c.bar.payload = Some((intervals, gc, cut));
            c.bar.epoch += 1;
            c.wake_if(|w| w == Wait::Barrier);
        }
        _ => unreachable!(),
    }
}

/// Wait for the other local threads; true for exactly one of them (the last to arrive).
pub fn local_barrier(rank: &Rank) -> bool {
    let mut g = rank.lock();
    g.core.bar.local_arrived += 1;
    if g.core.bar.local_arrived == g.core.t {
        g.core.bar.local_arrived = 0;
        g.core.bar.local_gen += 1;
        g.core.wake_if(|w| w == Wait::Local);
        rank.finish(g);
        return true;
    }
    let gen = g.core.bar.local_gen;
    loop {
        g = sched::block(rank, g, Wait::Local, false);
        if g.core.bar.local_gen > gen {
            break;
        }
    }
    rank.finish(g);
    false
}
