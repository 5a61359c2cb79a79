//! mpiGraph's step: every rank sends to rank + D and receives from rank − D at once,
//! so the network carries N streams together, as a job's traffic does. Each rank times
//! its sends' completion and its receives' completion separately.

use crate::buf::PageBuf;
use crate::error::{Error, Result};
use crate::raw::Requests;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::CommunicatorCollectives;
use numalab_probe::Timer;

const TAG: i32 = 78;

/// The byte rank `r` sends, so that a receiver can tell whose bytes arrived.
fn mark(r: usize) -> u8 {
    (r % 251) as u8 + 1
}

/// The samples of one step: GB/s (10^9 bytes/s) as this rank's sends completed, and
/// as its receives did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepSamples {
    /// Send bandwidth per timed sample.
    pub send_gbps: Vec<f64>,
    /// Receive bandwidth per timed sample.
    pub recv_gbps: Vec<f64>,
}

/// Shift step `d` (collective, 1 ≤ d < size): per sample, `window` receives from
/// rank − d posted, a barrier, then `window` sends of `size` bytes to rank + d; the
/// sends' and the receives' completion timed from the same start. `warmup` samples
/// first, untimed. The received bytes are checked to be the sender's, after the loop.
pub fn step(
    comm: &SimpleCommunicator,
    timer: &Timer,
    d: usize,
    size: usize,
    window: usize,
    (warmup, iterations): (usize, usize),
) -> Result<StepSamples> {
    let n = comm.size() as usize;
    let me = comm.rank() as usize;
    let (to, from) = ((me + d) % n, (me + n - d % n) % n);
    let sbuf = PageBuf::new(size, mark(me));
    let mut rbuf = PageBuf::new(size, 0);
    let mut out = StepSamples::default();
    let bytes = (size * window) as f64;
    for i in 0..warmup + iterations {
        let mut recvs = Requests::with_capacity(window);
        let mut sends = Requests::with_capacity(window);
        for _ in 0..window {
            // SAFETY: rbuf is not touched until every receive completed below (the
            // messages carry equal bytes, so their order is moot).
            unsafe { recvs.irecv(comm, &mut rbuf, from, TAG)? };
        }
        comm.barrier();
        let t0 = timer.start();
        for _ in 0..window {
            // SAFETY: sbuf is neither moved nor written until the sends completed.
            unsafe { sends.isend(comm, &sbuf, to, TAG)? };
        }
        let (mut ts, mut tr) = (None, None);
        while ts.is_none() || tr.is_none() {
            if ts.is_none() && (sends.test_first()? && sends.is_empty()) {
                ts = Some(timer.stop());
            }
            if tr.is_none() && (recvs.test_first()? && recvs.is_empty()) {
                tr = Some(timer.stop());
            }
        }
        if i >= warmup {
            let gbps =
                |t: Option<u64>| bytes / timer.ns(t.unwrap_or(t0).saturating_sub(t0)).max(1.0);
            out.send_gbps.push(gbps(ts));
            out.recv_gbps.push(gbps(tr));
        }
    }
    if let Some(at) = rbuf.iter().position(|&b| b != mark(from)) {
        return Err(Error::System(format!(
            "shift step {d}: byte {at} from rank {from} is {}, expected {}",
            rbuf[at],
            mark(from)
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_tell_ranks_apart_and_are_never_zero() {
        assert_ne!(mark(0), mark(1));
        assert!((0..1000).all(|r| mark(r) != 0));
    }
}
