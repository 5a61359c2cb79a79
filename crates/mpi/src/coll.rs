//! MPI's own collectives over blocks of u64 words (MPI_Barrier, MPI_Bcast,
//! MPI_Scatter, MPI_Gather, MPI_Allgather, MPI_Allreduce, a shift by MPI_Sendrecv),
//! and sub-communicators of the first P ranks, for suites that set the seed's
//! algorithms beside them.

use mpi::collective::SystemOperation;
use mpi::topology::{Color, Communicator, Process, SimpleCommunicator};
use mpi::traits::*;

/// The first `p` ranks of `comm` as a communicator (collective over `comm`); None on
/// the ranks left out.
pub fn first_ranks(comm: &SimpleCommunicator, p: usize) -> Option<SimpleCommunicator> {
    let inside = (comm.rank() as usize) < p;
    comm.split_by_color(if inside {
        Color::with_value(0)
    } else {
        Color::undefined()
    })
}

/// A native collective.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Native {
    /// MPI_Barrier.
    Barrier,
    /// MPI_Bcast of the root's block.
    Bcast,
    /// MPI_Scatter of the root's P blocks.
    Scatter,
    /// Send to rank − k, receive from rank + k (MPI_Sendrecv).
    Shift(usize),
    /// MPI_Gather onto the root.
    Gather,
    /// MPI_Allgather.
    Allgather,
    /// MPI_Allreduce with MPI_SUM (wrapping u64).
    AllreduceSum,
    /// MPI_Allreduce with MPI_MAX.
    AllreduceMax,
}

impl Native {
    /// The MPI call's name.
    pub fn name(self) -> String {
        match self {
            Native::Barrier => "MPI_Barrier".into(),
            Native::Bcast => "MPI_Bcast".into(),
            Native::Scatter => "MPI_Scatter".into(),
            Native::Shift(k) => format!("MPI_Sendrecv shift {k}"),
            Native::Gather => "MPI_Gather".into(),
            Native::Allgather => "MPI_Allgather".into(),
            Native::AllreduceSum => "MPI_Allreduce sum".into(),
            Native::AllreduceMax => "MPI_Allreduce max".into(),
        }
    }

    /// Bind to `comm`: the communicator's size, this rank and the peers' handles are
    /// looked up here, once, since each lookup is an MPI call (MPI_Comm_size,
    /// MPI_Comm_rank) that would otherwise sit inside every timed operation.
    pub fn bind(self, comm: &SimpleCommunicator) -> Bound<'_> {
        let p = comm.size() as usize;
        let me = comm.rank() as usize;
        let (to, from) = match self {
            Native::Shift(k) => (
                comm.process_at_rank(((me + p - k % p) % p) as i32),
                comm.process_at_rank(((me + k) % p) as i32),
            ),
            _ => (comm.process_at_rank(0), comm.process_at_rank(0)),
        };
        Bound {
            nat: self,
            comm,
            p,
            me,
            root: comm.process_at_rank(0),
            to,
            from,
        }
    }
}

/// A native collective bound to a communicator (see [`Native::bind`]).
pub struct Bound<'a> {
    nat: Native,
    comm: &'a SimpleCommunicator,
    p: usize,
    me: usize,
    root: Process<'a>,
    to: Process<'a>,
    from: Process<'a>,
}

impl Bound<'_> {
    /// Run once: `src` is this rank's block (the root's holds P blocks for Scatter),
    /// `dst` room for P blocks, `res` one block. Bcast sends the root's `dst[..n]`,
    /// so the caller copies its block there first, outside any timer.
    pub fn run(&self, src: &[u64], dst: &mut [u64], res: &mut [u64]) {
        let (p, me, n, root, comm) = (self.p, self.me, res.len(), &self.root, self.comm);
        match self.nat {
            Native::Barrier => comm.barrier(),
            // The root's block must already be in dst[..n] (written before the timer).
            Native::Bcast => root.broadcast_into(&mut dst[..n]),
            Native::Scatter => {
                if me == 0 {
                    root.scatter_into_root(&src[..p * n], &mut dst[..n]);
                } else {
                    root.scatter_into(&mut dst[..n]);
                }
            }
            Native::Shift(_) => {
                mpi::point_to_point::send_receive_into(
                    &src[..n],
                    &self.to,
                    &mut dst[..n],
                    &self.from,
                );
            }
            Native::Gather => {
                if me == 0 {
                    root.gather_into_root(&src[..n], &mut dst[..p * n]);
                } else {
                    root.gather_into(&src[..n]);
                }
            }
            Native::Allgather => comm.all_gather_into(&src[..n], &mut dst[..p * n]),
            Native::AllreduceSum => comm.all_reduce_into(&src[..n], res, SystemOperation::sum()),
            Native::AllreduceMax => comm.all_reduce_into(&src[..n], res, SystemOperation::max()),
        }
    }
}

/// The seed's barrier written with point-to-point: dissemination, ⌈log2 P⌉ rounds of
/// a zero-byte exchange with the ranks 2^r away.
pub fn dissemination_barrier(comm: &SimpleCommunicator) {
    let p = comm.size() as usize;
    let me = comm.rank() as usize;
    let empty: [u8; 0] = [];
    let mut buf: [u8; 0] = [];
    let mut d = 1;
    while d < p {
        let to = comm.process_at_rank(((me + d) % p) as i32);
        let from = comm.process_at_rank(((me + p - d) % p) as i32);
        mpi::point_to_point::send_receive_into(&empty[..], &to, &mut buf[..], &from);
        d *= 2;
    }
}
