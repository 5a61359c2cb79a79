//! mpiGraph's step: every rank sends to rank + D and receives from rank − D at once,
//! so the network carries N streams together, as a job's traffic does. Each rank times
//! its receives' completion and, apart, its sends' until the receiver's one-byte reply
//! (OSU's bandwidth test ends the same way; mpiGraph stops at the sends' completion,
//! which a socket or a rate-limited queue that buffers the window makes read fast).

use crate::buf::PageBuf;
use crate::error::{Error, Result};
use crate::raw::Requests;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::CommunicatorCollectives;
use numalab_probe::Timer;

const TAG: i32 = 78;
/// The receiver's one-byte reply once a window arrived.
const ACK: i32 = 79;

/// The byte rank `r` sends, so that a receiver can tell whose bytes arrived.
fn mark(r: usize) -> u8 {
    (r % 251) as u8 + 1
}

/// The samples of one step: GB/s (10^9 bytes/s) as this rank's window was received
/// and said so, and as its own receives completed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepSamples {
    /// Send bandwidth per timed sample.
    pub send_gbps: Vec<f64>,
    /// Receive bandwidth per timed sample.
    pub recv_gbps: Vec<f64>,
}

/// Shift step `d` (collective, 1 ≤ d < size): per sample, `window` receives from
/// rank − d posted, a barrier, then `window` sends of `size` bytes to rank + d; the
/// receives' completion, and the sends' with rank + d's reply that they arrived, timed
/// from the barrier's end. A receive whose first message had already arrived then (its
/// rank left the barrier late) is timed from the barrier's start instead, which no
/// sender can pass: a figure that may read slow, never one faster than the link.
/// `warmup` samples first, untimed. The received bytes are checked to be the
/// sender's, after the loop.
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
    let gbps = |ns: f64| (size * window) as f64 / ns.max(1.0);
    for i in 0..warmup + iterations {
        let (send_ns, recv_ns) = sample(comm, timer, (to, from), &sbuf, &mut rbuf, window)?;
        if i >= warmup {
            out.send_gbps.push(gbps(send_ns));
            out.recv_gbps.push(gbps(recv_ns));
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

/// One sample: ns until rank `to` said the window arrived, and ns until this rank's
/// receives from `from` completed (see [`step`] for when each clock starts).
fn sample(
    comm: &SimpleCommunicator,
    timer: &Timer,
    (to, from): (usize, usize),
    sbuf: &[u8],
    rbuf: &mut [u8],
    window: usize,
) -> Result<(f64, f64)> {
    let (mut got, arrived) = ([0u8; 1], [1u8; 1]);
    let mut recvs = Requests::with_capacity(window);
    let mut sends = Requests::with_capacity(window);
    let mut ack_in = Requests::with_capacity(1);
    let mut ack_out = Requests::with_capacity(1);
    for _ in 0..window {
        // SAFETY: rbuf is not touched until every receive completed below (the
        // messages carry equal bytes, so their order is moot).
        unsafe { recvs.irecv(comm, rbuf, from, TAG)? };
    }
    // SAFETY: `got` outlives the loop below, which completes this receive.
    unsafe { ack_in.irecv(comm, &mut got, to, ACK)? };
    let entered = timer.start();
    comm.barrier();
    let t0 = timer.start();
    let early = recvs.test_first()?;
    for _ in 0..window {
        // SAFETY: sbuf is neither moved nor written until the sends completed.
        unsafe { sends.isend(comm, sbuf, to, TAG)? };
    }
    let (mut ts, mut tr) = (None, None);
    while ts.is_none() || tr.is_none() || !ack_out.is_empty() {
        if tr.is_none() && (recvs.test_first()? && recvs.is_empty()) {
            tr = Some(timer.stop());
            // SAFETY: `arrived` outlives the loop, which completes this send.
            unsafe { ack_out.isend(comm, &arrived, from, ACK)? };
        }
        // A send counts as done when its receiver said the window arrived: a network
        // stack that buffers it (a socket, a rate-limited queue) would otherwise make
        // a slow link read as fast as memory.
        if ts.is_none()
            && sends.test_first()?
            && sends.is_empty()
            && ack_in.test_first()?
            && ack_in.is_empty()
        {
            ts = Some(timer.stop());
        }
        if !ack_out.is_empty() {
            ack_out.test_first()?;
        }
    }
    let ns = |t: Option<u64>, start: u64| timer.ns(t.unwrap_or(start).saturating_sub(start));
    Ok((ns(ts, t0), ns(tr, if early { entered } else { t0 })))
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
