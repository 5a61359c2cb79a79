//! Lock and barrier messages, handled on the rank's state ([`Core`]) by the service
//! thread (or inline for a rank's own): requests, forwards and grants of the global
//! locks, arrivals at the barrier's manager and its releases.

use crate::msg::{Interval, Msg};
use crate::proto::Protocol;
use crate::state::{Core, Wait};

/// Hand lock `l` to rank `to` with the intervals it has not seen.
pub(crate) fn grant(c: &mut Core, l: usize, to: usize, vt: &[u32]) {
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
