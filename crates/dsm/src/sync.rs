//! Global locks (a manager per lock forwards each request to the last requester: a 2-hop
//! acquire when the manager held it last, 3-hop otherwise), the global barrier (one
//! manager, one arrival per rank sent by its last local thread), and the local barrier.
//! A local queue per lock makes local acquires cost one remote request; a release hands
//! the lock to a local waiter before any remote one (the seed's policy: fast, not fair).

use crate::lockbar::grant;
use crate::msg::Msg;
use crate::node::{Node, Rank};
use crate::sched::{self, current_tid};
use crate::state::Wait;

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
    let Node { core, proto } = &mut *g;
    if let Some(ivs) = core.locks[l].grant.take() {
        core.stats.acquires += 1;
        proto.acquire(core, &ivs);
        proto.prefetch(core);
    }
    rank.finish(g);
}

/// Release global lock `l`.
pub fn release(rank: &Rank, l: usize) {
    let mut g = rank.lock();
    let Node { core, proto } = &mut *g;
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

/// The global barrier for the running thread.
pub fn barrier(rank: &Rank) {
    let gc = barrier_once(rank);
    if gc {
        collect(rank);
    }
}

fn barrier_once(rank: &Rank) -> bool {
    let mut g = rank.lock();
    let Node { core: c, proto } = &mut *g;
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
    let Node { core: c, proto } = &mut *g;
    if let Some((ivs, gc, cut)) = c.bar.payload.take() {
        c.stats.acquires += 1;
        proto.acquire(c, &ivs);
        if !cut.is_empty() {
            proto.discard(c, &cut);
            c.lrc.discard(&cut);
            c.stats.gcs += 1;
        }
        // After the discard: a request must name no interval its writer has dropped.
        proto.prefetch(c);
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
                let Node { core, proto } = &mut *g;
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
