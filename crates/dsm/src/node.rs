//! One rank: its protocol state behind one lock, the service thread that handles incoming
//! messages while the user-level threads compute, message dispatch and the fault sink.
//!
//! Concurrency: the rank's user-level threads all run on one OS thread (the compute
//! thread), so consistency actions (closing intervals, twins, diffs, applying write
//! notices) run there with no application code running beside them. The service thread
//! reads the interval log, forwards and queues requests, and, when it must read a page
//! (LMW's lazy diffs, the single-writer protocols' page hand-over), closes the
//! application's write access first and reads through the system view second.

use crate::fault;
use crate::lockbar;
use crate::lrc::Lrc;
use crate::msg::Msg;
use crate::proto::{self, Protocol, ProtocolKind};
use crate::region::Region;
use crate::state::{BarState, Core, LockState, TState, Wait};
use crate::stats::Stats;
use crate::transport::Transport;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A rank's run parameters.
#[derive(Debug, Clone)]
pub struct Config {
    /// User-level threads per rank.
    pub threads: usize,
    /// The consistency protocol.
    pub protocol: ProtocolKind,
    /// Added to every message before the receiver handles it.
    pub net_delay: Duration,
    /// Pages in the shared region.
    pub pages: usize,
    /// Global locks.
    pub locks: usize,
    /// Fixed address of the region (MPI ranks), or anywhere (in-process ranks).
    pub base: Option<usize>,
    /// Longest a rank may sit with every thread blocked before it gives up.
    pub watchdog: Duration,
    /// LMW: stored diff bytes on a rank that trigger a garbage collection at a barrier.
    pub gc_bytes: usize,
    /// LSW/SEQ: how long a newly arrived page is kept before a request may take it away
    /// (zero: never frozen; see proto::single).
    pub freeze: Duration,
}

/// A rank's whole state.
pub struct Node {
    /// Protocol-independent part.
    pub core: Core,
    /// The protocol.
    pub proto: Box<dyn Protocol>,
}

/// A running rank.
pub struct Rank {
    /// State.
    pub node: Mutex<Node>,
    /// Signalled when a thread becomes ready.
    pub cv: Condvar,
    /// The wire.
    pub transport: Box<dyn Transport>,
    /// The region (also in Core, for lock-free access to its address).
    pub region: Arc<Region>,
    /// Parameters.
    pub cfg: Config,
    stop: AtomicBool,
    slot: AtomicUsize,
    /// Deferred messages on their way to the service loop.
    later: Mutex<Vec<Held>>,
    /// Rank-private scratch for per-node reductions (see Ctx::with_scratch).
    pub scratch: Mutex<Vec<f64>>,
}

impl Rank {
    /// Map the region, register it for faults and build the state (the fault handler
    /// must be installed: [`crate::sched::install_fault_sink`]).
    pub fn new(cfg: Config, transport: Box<dyn Transport>) -> Result<Arc<Rank>, String> {
        let region = Arc::new(Region::map(cfg.pages, cfg.base).map_err(|e| e.to_string())?);
        let (me, n) = (transport.rank(), transport.ranks());
        let core = Core {
            me,
            n,
            t: cfg.threads,
            region: region.clone(),
            threads: vec![TState::Ready; cfg.threads],
            outbox: Vec::new(),
            stats: Stats::default(),
            lrc: Lrc::new(me, n),
            outstanding: 0,
            locks: (0..cfg.locks).map(|l| LockState::new(l, me, n)).collect(),
            bar: BarState::new(n),
            woke: false,
            gc_bytes: cfg.gc_bytes,
            last_wait: Wait::Barrier,
            idle_ns: 0,
            freeze: cfg.freeze,
            deferred: Vec::new(),
            asked: Default::default(),
        };
        let proto = proto::new(cfg.protocol, &core);
        let rank = Arc::new(Rank {
            node: Mutex::new(Node { core, proto }),
            cv: Condvar::new(),
            transport,
            region: region.clone(),
            cfg,
            stop: AtomicBool::new(false),
            slot: AtomicUsize::new(usize::MAX),
            later: Mutex::new(Vec::new()),
            scratch: Mutex::new(Vec::new()),
        });
        let ptr = Arc::as_ptr(&rank) as usize;
        let slot = fault::register(
            region.base() as usize,
            region.base() as usize + region.len(),
            ptr,
        );
        rank.slot.store(slot, Ordering::Release);
        Ok(rank)
    }

    /// Lock the state.
    pub fn lock(&self) -> MutexGuard<'_, Node> {
        self.node.lock().unwrap()
    }

    /// Drop the lock, wake the scheduler if needed and send what was queued.
    pub fn finish(&self, mut g: MutexGuard<'_, Node>) {
        let out = std::mem::take(&mut g.core.outbox);
        let woke = std::mem::replace(&mut g.core.woke, false);
        drop(g);
        if woke {
            self.cv.notify_all();
            // A thread can run: the service thread stops spinning, which at a raised
            // priority would keep the CPU from the thread it just woke.
            self.transport.set_computing(true);
        }
        for (to, b) in out {
            if to == self.transport.rank() {
                self.dispatch(to, &b);
            } else {
                self.transport.send(to, b);
            }
        }
    }

    /// Handle one message.
    pub fn dispatch(&self, from: usize, bytes: &[u8]) {
        let m = Msg::decode(bytes);
        let t0 = Instant::now();
        let mut g = self.lock();
        let Node { core, proto } = &mut *g;
        match m {
            Msg::LockReq { .. } | Msg::LockGrant { .. } => {
                lockbar::on_lock_msg(core, proto.as_mut(), from, m)
            }
            Msg::BarArrive { .. } | Msg::BarRelease { .. } => {
                lockbar::on_barrier_msg(core, from, m)
            }
            m => proto.message(core, from, m),
        }
        g.core.stats.io_ns += t0.elapsed().as_nanos() as u64;
        let deferred = std::mem::take(&mut g.core.deferred);
        self.finish(g);
        if !deferred.is_empty() {
            let mut later = self.later.lock().unwrap();
            later.extend(deferred.into_iter().map(|(at, from, bytes)| Held {
                at,
                seq: 0,
                from,
                bytes,
            }));
        }
    }

    /// The service loop: receive, hold for the net delay, dispatch; until stopped.
    pub fn serve(self: &Arc<Rank>) {
        let delay = self.cfg.net_delay;
        let mut held: BinaryHeap<Held> = BinaryHeap::new();
        let mut seq = 0u64;
        crate::cores::latency_thread();
        while !self.stop.load(Ordering::Acquire) {
            for mut h in std::mem::take(&mut *self.later.lock().unwrap()) {
                seq += 1;
                h.seq = seq;
                held.push(h);
            }
            let now = Instant::now();
            while held.peek().is_some_and(|h| h.at <= now) {
                let h = held.pop().unwrap();
                self.dispatch(h.from, &h.bytes);
            }
            let wait = match held.peek() {
                Some(h) => {
                    h.at.saturating_duration_since(Instant::now())
                        .min(Duration::from_millis(2))
                }
                None => Duration::from_millis(2),
            };
            if let Some((from, bytes)) = self.transport.recv(wait) {
                if delay.is_zero() {
                    self.dispatch(from, &bytes);
                } else {
                    seq += 1;
                    held.push(Held {
                        at: Instant::now() + delay,
                        seq,
                        from,
                        bytes,
                    });
                }
            }
        }
    }

    /// Stop the service loop (after the final barrier).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
    }

    /// Final counters.
    pub fn stats(&self) -> Stats {
        let g = self.lock();
        let mut s = g.core.stats.clone();
        (s.mprotects, s.mprotect_ns) = self.region.mprotect_counts();
        s.intervals = g.core.lrc.vt.get(g.core.me).copied().unwrap_or(0) as u64;
        s.service_wakeups = self.transport.wakeups();
        s
    }
}

impl Drop for Rank {
    fn drop(&mut self) {
        fault::unregister(self.slot.load(Ordering::Acquire));
    }
}

struct Held {
    at: Instant,
    seq: u64,
    from: usize,
    bytes: Vec<u8>,
}
impl PartialEq for Held {
    fn eq(&self, o: &Self) -> bool {
        self.seq == o.seq
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Held {
    // Earliest first (BinaryHeap is a max-heap); FIFO among equal times.
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        o.at.cmp(&self.at).then(o.seq.cmp(&self.seq))
    }
}
