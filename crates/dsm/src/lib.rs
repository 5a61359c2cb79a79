//! numalab-dsm: a CVM-style page-based software distributed shared memory.
//!
//! Nodes are ranks (MPI processes, or OS threads of one process for tests); each rank runs
//! T non-preemptive user-level threads that switch when one blocks on a remote fault, a
//! lock or a barrier. Shared data is a region mapped at the same address in every rank;
//! page protections and a SIGSEGV handler detect the accesses that need protocol action,
//! so applications use plain loads and stores.

pub mod apps;
pub mod cores;
pub mod diff;
pub mod doorbell;
pub mod experiment;
pub mod fault;
pub mod flight;
pub mod lockbar;
pub mod lrc;
pub mod mpi_transport;
pub mod msg;
pub mod node;
pub mod per_interval;
pub mod present;
pub mod proto;
pub mod reference;
pub mod region;
pub mod run;
pub mod sched;
pub mod state;
pub mod stats;
pub mod sync;
pub mod transport;

pub use node::{Config, Rank};
pub use proto::ProtocolKind;
pub use run::{run_local, run_rank, RankOutcome};
pub use stats::Stats;

/// What a DSM thread sees: the shared region, its place, and synchronisation.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    rank: &'a Rank,
    tid: usize,
}

impl<'a> Ctx<'a> {
    /// The context of local thread `tid` of `rank`.
    pub fn new(rank: &'a Rank, tid: usize) -> Ctx<'a> {
        Ctx { rank, tid }
    }
    /// Start of the shared region.
    pub fn base(&self) -> *mut u8 {
        self.rank.region.base()
    }
    /// A typed pointer `off` bytes into the shared region.
    pub fn at<T>(&self, off: usize) -> *mut T {
        assert!(off + std::mem::size_of::<T>() <= self.rank.region.len());
        // SAFETY: in bounds (checked above).
        unsafe { self.base().add(off) as *mut T }
    }
    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank.transport.rank()
    }
    /// Ranks.
    pub fn ranks(&self) -> usize {
        self.rank.transport.ranks()
    }
    /// Local thread id.
    pub fn tid(&self) -> usize {
        self.tid
    }
    /// Threads per rank.
    pub fn threads(&self) -> usize {
        self.rank.cfg.threads
    }
    /// Global thread id: ranks hold consecutive ids, so a rank's threads share neighbours.
    pub fn id(&self) -> usize {
        self.rank() * self.threads() + self.tid
    }
    /// Threads in the job.
    pub fn nthreads(&self) -> usize {
        self.ranks() * self.threads()
    }
    /// Acquire global lock `l`.
    pub fn lock(&self, l: usize) {
        sync::acquire(self.rank, l);
    }
    /// Release global lock `l`.
    pub fn unlock(&self, l: usize) {
        sync::release(self.rank, l);
    }
    /// Global barrier.
    pub fn barrier(&self) {
        sync::barrier(self.rank);
    }
    /// Barrier of this rank's threads; true for exactly one of them.
    pub fn local_barrier(&self) -> bool {
        sync::local_barrier(self.rank)
    }
    /// Let another local thread run.
    pub fn yield_now(&self) {
        sched::yield_now(self.rank);
    }
    /// Work on this rank's private scratch buffer (shared by its threads, not by ranks),
    /// for per-node reductions; `f` must not call DSM operations.
    pub fn with_scratch<R>(&self, f: impl FnOnce(&mut Vec<f64>) -> R) -> R {
        f(&mut self.rank.scratch.lock().unwrap())
    }
    /// The block `[lo, hi)` of `n` items that global thread `id()` owns.
    pub fn share(&self, n: usize) -> (usize, usize) {
        let (k, i) = (self.nthreads(), self.id());
        (n * i / k, n * (i + 1) / k)
    }
}
