//! What every part of a rank shares without its event loop: the protocol-independent
//! state handed to protocol code ([`Core`]), what a user-level thread waits for, the
//! lock and barrier state, and the clock. Protocols, the scheduler and the lock code
//! import this, never the rank's event loop ([`crate::node`]).

use crate::lrc::Lrc;
use crate::msg::{Interval, Msg};
use crate::region::Region;
use crate::stats::Stats;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a blocked user-level thread waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// A remote page (or diffs for it).
    Page(u32),
    /// A lock.
    Lock(u32),
    /// The global barrier's release.
    Barrier,
    /// The other local threads, at a local barrier.
    Local,
}

/// A user-level thread's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TState {
    /// Can run.
    Ready,
    /// Running now.
    Running,
    /// Waiting.
    Blocked(Wait),
    /// Finished.
    Done,
}

/// Protocol-independent state of a rank, handed to protocol code.
pub struct Core {
    /// This rank.
    pub me: usize,
    /// Ranks.
    pub n: usize,
    /// Threads per rank.
    pub t: usize,
    /// The shared region.
    pub region: Arc<Region>,
    /// Local threads.
    pub threads: Vec<TState>,
    /// Encoded messages to send once the lock is dropped.
    pub outbox: Vec<(usize, Vec<u8>)>,
    /// Counters.
    pub stats: Stats,
    /// LRC knowledge (unused by SEQ).
    pub lrc: Lrc,
    /// Remote requests in flight.
    pub outstanding: u64,
    /// Locks.
    pub locks: Vec<LockState>,
    /// The barrier.
    pub bar: BarState,
    /// Set when a thread became ready.
    pub woke: bool,
    /// GC trigger (LMW).
    pub gc_bytes: usize,
    /// What the last thread to block waited for (idle time goes to it).
    pub last_wait: Wait,
    /// Consecutive idle time (the watchdog's).
    pub idle_ns: u64,
    /// LSW/SEQ freeze time.
    pub freeze: Duration,
    /// Messages a protocol held back, to handle again at the given time.
    pub deferred: Vec<(Instant, usize, Vec<u8>)>,
    /// When each page's remote request left (for the fault latency).
    pub asked: std::collections::HashMap<u32, u64>,
}

impl Core {
    /// Queue a message (counted here; self-messages are handled, not sent, and not counted).
    pub fn send(&mut self, to: usize, m: &Msg) {
        let b = m.encode();
        if to != self.me {
            self.stats.msgs += 1;
            self.stats.bytes += b.len() as u64;
        }
        self.outbox.push((to, b));
    }

    /// Make every thread whose wait matches ready.
    pub fn wake_if(&mut self, f: impl Fn(Wait) -> bool) {
        for s in self.threads.iter_mut() {
            if let TState::Blocked(w) = *s {
                if f(w) {
                    *s = TState::Ready;
                    self.woke = true;
                }
            }
        }
    }

    /// Make thread `tid` ready.
    pub fn wake(&mut self, tid: usize) {
        self.threads[tid] = TState::Ready;
        self.woke = true;
    }

    /// Handle message `m` from `from` again at `at` (the service thread redelivers it).
    pub fn defer(&mut self, at: Instant, from: usize, m: &Msg) {
        self.deferred.push((at, from, m.encode()));
    }

    /// A remote request starts: count how many were already in flight.
    pub fn start_remote(&mut self, lock: bool) {
        if lock {
            self.stats.overlap_locks += self.outstanding;
        } else {
            self.stats.overlap_faults += self.outstanding;
        }
        self.outstanding += 1;
    }

    /// A remote fault on page `p` sent its request now.
    pub fn fault_asked(&mut self, p: usize) {
        self.start_remote(false);
        self.asked.insert(p as u32, mono_ns());
    }

    /// Page `p`'s remote fault is served: its latency is counted.
    pub fn fault_served(&mut self, p: usize) {
        self.end_remote();
        if let Some(t) = self.asked.remove(&(p as u32)) {
            self.stats.remote_fault_ns += mono_ns().saturating_sub(t);
        }
    }

    /// A remote request finished.
    pub fn end_remote(&mut self) {
        self.outstanding = self.outstanding.saturating_sub(1);
    }
}

/// One lock as seen by one rank.
#[derive(Debug)]
pub struct LockState {
    pub(crate) manager: usize,
    /// Manager only: the last rank that asked.
    pub(crate) last: usize,
    /// The lock is on this rank.
    pub(crate) token: bool,
    /// A local thread holds it.
    pub(crate) held: bool,
    /// This rank asked for it and waits for the grant.
    pub(crate) requested: bool,
    /// Local threads waiting, in order.
    pub(crate) queue: VecDeque<usize>,
    /// The rank the manager forwarded to us, with its vector timestamp.
    pub(crate) next: Option<(usize, Vec<u32>)>,
    /// Intervals that came with the grant, for the thread that gets it to apply.
    pub(crate) grant: Option<Vec<Interval>>,
    pub(crate) holder: usize,
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
    pub(crate) epoch: u32,
    pub(crate) arrived: usize,
    pub(crate) payload: Option<(Vec<Interval>, bool, Vec<u32>)>,
    pub(crate) gc_now: bool,
    pub(crate) local_arrived: usize,
    pub(crate) local_gen: u64,
    // Manager side.
    pub(crate) m_count: usize,
    pub(crate) m_vts: Vec<Vec<u32>>,
    pub(crate) m_ivs: Vec<Interval>,
    pub(crate) m_gc: bool,
    pub(crate) m_cut: Option<Vec<u32>>,
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

/// CLOCK_MONOTONIC in ns (the clock the signal handler stamps).
pub fn mono_ns() -> u64 {
    // SAFETY: plain clock read into a local.
    unsafe {
        let mut ts: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }
}
