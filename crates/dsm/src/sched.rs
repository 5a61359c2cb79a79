//! Per-rank non-preemptive user-level threads (corosensei coroutines) and their scheduler.
//!
//! A thread runs until it blocks on a remote fault, a lock, a barrier or a local barrier,
//! or yields; the scheduler then resumes the next ready thread round-robin. When none is
//! ready the compute thread sleeps on the rank's condition variable, and that idle time is
//! charged to what the last thread blocked on (fault, lock or barrier wait).

use crate::fault::{self, FaultFrame};
use crate::node::{Node, Rank};
use crate::proto::Fault;
use crate::state::{mono_ns, TState, Wait};
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use std::cell::Cell;
use std::sync::MutexGuard;
use std::time::{Duration, Instant};

type Y = Yielder<(), ()>;

thread_local! {
    static CUR: Cell<Option<(usize, *const Y)>> = const { Cell::new(None) };
}

/// Stack per user-level thread.
pub const STACK: usize = 1 << 20;

/// The running user-level thread's local id.
pub fn current_tid() -> usize {
    CUR.with(|c| c.get())
        .expect("DSM operation outside a DSM thread")
        .0
}

/// Block the running thread on `w` (state lock held); returns with the lock held again.
/// `count`: a thread switch the seed classifies (remote waits, barrier arrivals but the last).
pub fn block<'a>(
    rank: &'a Rank,
    mut g: MutexGuard<'a, Node>,
    w: Wait,
    count: bool,
) -> MutexGuard<'a, Node> {
    let (tid, y) = CUR
        .with(|c| c.get())
        .expect("DSM operation outside a DSM thread");
    if count {
        classify(&mut g, tid, w);
    }
    g.core.threads[tid] = TState::Blocked(w);
    g.core.last_wait = w;
    rank.finish(g);
    // SAFETY: y is this coroutine's own yielder, valid while it runs.
    unsafe { (*y).suspend(()) };
    CUR.with(|c| c.set(Some((tid, y))));
    rank.lock()
}

/// Let the other ready threads run.
pub fn yield_now(rank: &Rank) {
    let (tid, y) = CUR
        .with(|c| c.get())
        .expect("DSM operation outside a DSM thread");
    let mut g = rank.lock();
    g.core.threads[tid] = TState::Ready;
    rank.finish(g);
    // SAFETY: as in block.
    unsafe { (*y).suspend(()) };
    CUR.with(|c| c.set(Some((tid, y))));
}

/// Figure 7: what the other threads could do when this one blocks.
fn classify(g: &mut Node, tid: usize, w: Wait) {
    let c = &mut g.core;
    if c.t < 2 || matches!(w, Wait::Local) {
        return;
    }
    let others = c
        .threads
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != tid)
        .map(|(_, s)| *s);
    if others.clone().any(|s| s == TState::Ready) {
        c.stats.sw_useful += 1;
    } else if others
        .clone()
        .all(|s| matches!(s, TState::Blocked(Wait::Barrier) | TState::Done))
    {
        c.stats.sw_tail += 1;
    } else if matches!(w, Wait::Page(_)) && others.clone().all(|s| s == TState::Blocked(w)) {
        c.stats.sw_all_block += 1;
    } else {
        c.stats.sw_no_work += 1;
    }
}

/// Run `body(tid)` on every local thread to completion.
pub fn run(rank: &Rank, body: &(dyn Fn(usize) + Sync)) -> Result<(), String> {
    crate::fault::ensure_altstack();
    let t = rank.cfg.threads;
    let mut cos = Vec::with_capacity(t);
    for tid in 0..t {
        let stack = DefaultStack::new(STACK).map_err(|e| format!("thread stack: {e}"))?;
        // SAFETY: every coroutine is driven to completion (or dropped, unwinding it) before
        // this function returns, so `body` outlives them.
        let co = unsafe {
            Coroutine::<(), (), (), DefaultStack>::with_stack_unchecked(stack, move |y: &Y, ()| {
                CUR.with(|c| c.set(Some((tid, y as *const Y))));
                body(tid);
            })
        };
        cos.push(co);
    }
    let t0 = mono_ns();
    let mut cur = t - 1;
    loop {
        let mut g = rank.lock();
        let next = loop {
            let st = &g.core.threads;
            if st.iter().all(|s| *s == TState::Done) {
                break None;
            }
            if let Some(i) = (1..=t)
                .map(|k| (cur + k) % t)
                .find(|&i| st[i] == TState::Ready)
            {
                break Some(i);
            }
            let idle0 = Instant::now();
            let (g2, to) = rank.cv.wait_timeout(g, Duration::from_millis(5)).unwrap();
            g = g2;
            let dt = idle0.elapsed().as_nanos() as u64;
            let lw = g.core.last_wait;
            let s = &mut g.core.stats;
            match lw {
                Wait::Page(_) => s.fault_ns += dt,
                Wait::Lock(_) => s.lock_ns += dt,
                _ => s.barrier_ns += dt,
            }
            if to.timed_out() {
                g.core.idle_ns += dt;
                if g.core.idle_ns > rank.cfg.watchdog.as_nanos() as u64 {
                    // Unwinding would cross the fault trampoline's frames: abort, loudly.
                    eprintln!(
                        "numalab dsm: rank {} stalled {:?} with every thread blocked: {:?}",
                        g.core.me, rank.cfg.watchdog, g.core.threads
                    );
                    std::process::abort();
                }
            }
        };
        let Some(i) = next else { break };
        g.core.idle_ns = 0;
        g.core.threads[i] = TState::Running;
        drop(g);
        rank.transport.set_computing(true);
        let r = cos[i].resume(());
        rank.transport.set_computing(false);
        if let CoroutineResult::Return(()) = r {
            rank.lock().core.threads[i] = TState::Done;
        }
        cur = i;
    }
    rank.lock().core.stats.total_ns = mono_ns() - t0;
    Ok(())
}

/// Install the process's fault handler, which sends a rank's page faults to its
/// protocol (once per process; every rank's region registers with it).
pub fn install_fault_sink() -> Result<(), String> {
    fault::install(on_fault)
}

/// The fault sink: runs on the faulting user-level thread's own stack (see fault.rs).
fn on_fault(ctx: usize, f: &FaultFrame) {
    // SAFETY: ctx is the Arc<Rank> pointer registered in Rank::new; the rank outlives
    // its threads, which are the only code touching its region.
    let rank = unsafe { &*(ctx as *const Rank) };
    let t = mono_ns();
    let page = rank
        .region
        .page_of(f.addr)
        .expect("fault outside the region") as u32;
    let write = f.is_write != 0;
    let mut g = rank.lock();
    g.core.stats.segv += 1;
    g.core.stats.segv_ns += t.saturating_sub(f.t_signal_ns);
    loop {
        let Node { core, proto } = &mut *g;
        match proto.fault(core, page as usize, write) {
            Fault::Ok => {
                proto.used(page as usize);
                break;
            }
            Fault::Wait { joined } => {
                if joined {
                    g.core.stats.contention_page += 1;
                }
                g = block(rank, g, Wait::Page(page), true);
            }
        }
    }
    rank.finish(g);
}
