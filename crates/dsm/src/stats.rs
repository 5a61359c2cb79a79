//! Per-rank counters and the time breakdown (the seed's Figures 3/5/6, Tables 2/3, Figure 7).

use serde::{Deserialize, Serialize};

/// Counters and times of one rank; times in ns.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Stats {
    /// Wall time of the parallel section on this rank.
    pub total_ns: u64,
    /// CPU idle because every local thread waited, the last to block on a barrier.
    pub barrier_ns: u64,
    /// … on a remote page.
    pub fault_ns: u64,
    /// … on a lock.
    pub lock_ns: u64,
    /// Time the service thread spent handling incoming messages (IO in the seed).
    pub io_ns: u64,
    /// Time from the SIGSEGV handler's entry to the fault routine's, summed (measured per
    /// fault; the kernel's delivery before the handler is in the mechanism costs).
    pub segv_ns: u64,
    /// Access faults taken.
    pub segv: u64,
    /// Messages sent.
    pub msgs: u64,
    /// Bytes sent (encoded).
    pub bytes: u64,
    /// Faults that needed a message.
    pub remote_faults: u64,
    /// Remote faults' latency summed: from the request leaving to the page (or diffs)
    /// being installed, before the faulting thread is scheduled again.
    #[serde(default)]
    pub remote_fault_ns: u64,
    /// Lock acquires that needed a message.
    pub remote_locks: u64,
    /// Lock messages sent (requests, forwards, grants).
    pub lock_msgs: u64,
    /// Sum, over remote requests, of requests already outstanding when it was made.
    pub overlap_faults: u64,
    /// The same for lock requests.
    pub overlap_locks: u64,
    /// A thread blocked on a page another local thread was already fetching.
    pub contention_page: u64,
    /// A thread queued behind a local holder or requester of a lock.
    pub contention_lock: u64,
    /// Diffs created.
    pub diffs_created: u64,
    /// Diffs applied.
    pub diffs_used: u64,
    /// LMW: (page, interval) pairs written, the diffs an eager LMW would have created;
    /// lazy creation makes `diffs_created` of them.
    #[serde(default)]
    pub page_intervals: u64,
    /// LSW/SEQ: page arrivals whose taking away was held back, because the page arrived
    /// less than the freeze time ago (the seed's anti-thrashing freeze) or the thread
    /// that asked for it had not run yet.
    #[serde(default)]
    pub freezes: u64,
    /// Twins made.
    pub twins: u64,
    /// Whole pages received.
    pub pages_received: u64,
    /// Thread switches where another thread could run (Figure 7 "useful").
    pub sw_useful: u64,
    /// … every other thread had arrived at the next barrier ("tail effect").
    pub sw_tail: u64,
    /// … every other thread waited on the same page ("all block").
    pub sw_all_block: u64,
    /// … none could run for any other reason ("no work").
    pub sw_no_work: u64,
    /// Garbage collections of intervals and diffs.
    pub gcs: u64,
    /// Intervals this rank closed (each barrier, release or acquire that wrote pages).
    #[serde(default)]
    pub intervals: u64,
    /// mprotect calls on the application view, and their summed time.
    #[serde(default)]
    pub mprotects: u64,
    /// See `mprotects`.
    #[serde(default)]
    pub mprotect_ns: u64,
    /// Time spent copying pages into twins.
    #[serde(default)]
    pub twin_ns: u64,
    /// LMWC: first touches of a page (each asks the page's directory home once).
    #[serde(default)]
    pub touches: u64,
    /// LMWC: pages this rank was the only one to touch (no twins, diffs or notices).
    #[serde(default)]
    pub private_pages: u64,
    /// LMWC: pages this rank got private without touching them, claimed in a run
    /// after a first touch homed elsewhere (counted in `private_pages` too).
    #[serde(default)]
    pub claimed: u64,
    /// LMWC: private pages of this rank that a second rank touched, so turned shared.
    #[serde(default)]
    pub reclassified: u64,
    /// LMWC: pages whose diffs were asked for ahead of a fault, at an acquire (pages this
    /// rank fetched before, named by a write notice), and applied on arrival.
    #[serde(default)]
    pub prefetched: u64,
    /// LMWC: bulk prefetch requests sent (one per writer per acquire: the round trips
    /// that replace `prefetched` remote faults).
    #[serde(default)]
    pub prefetch_msgs: u64,
    /// LMWC: faults that waited for a prefetch still in flight.
    #[serde(default)]
    pub prefetch_waits: u64,
    /// LMWC: pages asked for ahead of a first touch, on a stride or a dense window
    /// ([`crate::proto::ahead`]).
    #[serde(default)]
    pub touched_ahead: u64,
    /// LMWC: read-ahead requests sent (one per home per fault that asked ahead).
    #[serde(default)]
    pub ahead_msgs: u64,
    /// LMWC: pages asked ahead that nobody had touched (handed back, no base).
    #[serde(default)]
    pub ahead_untouched: u64,
    /// Acquires that applied consistency information: barrier departures and lock grants
    /// (the synchronizations that split the program into intervals).
    #[serde(default)]
    pub acquires: u64,
    /// Times the service thread woke to poll for messages or from its doorbell (each
    /// wake may preempt the compute thread on a shared CPU).
    #[serde(default)]
    pub service_wakeups: u64,
    /// CPU time of the compute thread (the user-level threads' OS thread) over the
    /// parallel section: under `total_ns`, the rest is waiting or preempted.
    #[serde(default)]
    pub compute_cpu_ns: u64,
    /// CPU time of the service thread over the run (polling, spinning, handling).
    #[serde(default)]
    pub service_cpu_ns: u64,
}

impl Stats {
    /// Sum of several ranks' stats (times summed too; divide by ranks for means).
    pub fn sum<'a>(all: impl IntoIterator<Item = &'a Stats>) -> Stats {
        let mut s = Stats::default();
        for x in all {
            macro_rules! add { ($($f:ident),*) => { $( s.$f += x.$f; )* } }
            add!(
                total_ns,
                barrier_ns,
                fault_ns,
                lock_ns,
                io_ns,
                segv_ns,
                segv,
                msgs,
                bytes,
                remote_faults,
                remote_fault_ns,
                remote_locks,
                lock_msgs,
                overlap_faults,
                overlap_locks,
                contention_page,
                contention_lock,
                diffs_created,
                diffs_used,
                page_intervals,
                freezes,
                twins,
                pages_received,
                sw_useful,
                sw_tail,
                sw_all_block,
                sw_no_work,
                gcs,
                intervals,
                mprotects,
                mprotect_ns,
                twin_ns,
                touches,
                private_pages,
                claimed,
                reclassified,
                prefetched,
                prefetch_msgs,
                prefetch_waits,
                touched_ahead,
                ahead_msgs,
                ahead_untouched,
                acquires,
                service_wakeups,
                compute_cpu_ns,
                service_cpu_ns
            );
        }
        s
    }

    /// Mean latency of a remote fault in ns (None without remote faults).
    pub fn per_remote_fault_ns(&self) -> Option<f64> {
        (self.remote_faults > 0).then(|| self.remote_fault_ns as f64 / self.remote_faults as f64)
    }

    /// Application time: the rest of the wall time (includes local protocol code).
    pub fn app_ns(&self) -> u64 {
        self.total_ns
            .saturating_sub(self.barrier_ns + self.fault_ns + self.lock_ns + self.segv_ns)
    }
}

/// The rank whose application part took longest: the one a run whose communication
/// fits its intervals waited for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Busiest {
    /// The rank.
    pub rank: usize,
    /// Its application time ([`Stats::app_ns`]), ns.
    pub app_ns: u64,
    /// Its service threads' time handling messages, ns (beside the application).
    pub io_ns: u64,
    /// Its wall time over the parallel section, ns.
    #[serde(default)]
    pub total_ns: u64,
    /// Its compute thread's CPU time over that section, ns (0 where not measured): far
    /// under `total_ns`, the CPU was taken from it (another process, its own service
    /// thread), not filled with more work.
    #[serde(default)]
    pub compute_cpu_ns: u64,
}

impl Busiest {
    /// The rank of `ranks` (in rank order) with the longest application time.
    pub fn of(ranks: &[Stats]) -> Option<Busiest> {
        ranks
            .iter()
            .enumerate()
            .max_by_key(|(_, s)| s.app_ns())
            .map(|(rank, s)| Busiest {
                rank,
                app_ns: s.app_ns(),
                io_ns: s.io_ns,
                total_ns: s.total_ns,
                compute_cpu_ns: s.compute_cpu_ns,
            })
    }
}
