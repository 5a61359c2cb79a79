//! The timed loops between two ranks: ping-pong, a streaming window (OSU's bandwidth
//! method) and one-sided get/put/accumulate in a passive-target epoch. The origin
//! returns its samples; every loop checks the bytes it moved.

use crate::error::{Error, Result};
use crate::raw::{Requests, Window};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;
use numalab_probe::Timer;

const TAG: i32 = 77;

/// The byte every transfer of iteration `i` carries, so a stale buffer shows.
fn pattern(i: usize) -> u8 {
    (i % 251) as u8 + 1
}

fn mismatch(what: &str, want: u8, buf: &[u8]) -> Result<()> {
    match buf.iter().position(|&b| b != want) {
        None => Ok(()),
        Some(at) => Err(Error::System(format!(
            "{what}: byte {at} is {} after the transfer, expected {want}",
            buf[at]
        ))),
    }
}

/// One-way latency by ping-pong between `a` (times, returns Some) and `b`: each
/// sample is one round trip / 2, in ns.
pub fn ping_pong(
    comm: &SimpleCommunicator,
    timer: &Timer,
    (a, b): (usize, usize),
    size: usize,
    warmup: usize,
    iterations: usize,
) -> Result<Option<Vec<f64>>> {
    let me = comm.rank() as usize;
    let mut sbuf = vec![0u8; size];
    let mut rbuf = vec![0u8; size];
    let mut out = Vec::with_capacity(iterations);
    let total = warmup + iterations;
    if me == a {
        let peer = comm.process_at_rank(b as i32);
        for i in 0..total {
            sbuf.fill(pattern(i));
            let t0 = timer.start();
            peer.send_with_tag(&sbuf[..], TAG);
            peer.receive_into_with_tag(&mut rbuf[..], TAG);
            let t1 = timer.stop();
            if i >= warmup {
                out.push(timer.ns(t1.saturating_sub(t0)) / 2.0);
            }
        }
        mismatch("ping-pong reply", pattern(total - 1), &rbuf)?;
    } else if me == b {
        let peer = comm.process_at_rank(a as i32);
        for _ in 0..total {
            peer.receive_into_with_tag(&mut rbuf[..], TAG);
            peer.send_with_tag(&rbuf[..], TAG);
        }
        mismatch("ping-pong message", pattern(total - 1), &rbuf)?;
    }
    comm.barrier();
    Ok((me == a).then_some(out))
}

/// Streaming bandwidth from `a` to `b`: per sample, `window` non-blocking sends of
/// `size` bytes and the receiver's acknowledgement; GB/s (10^9 bytes/s).
pub fn stream(
    comm: &SimpleCommunicator,
    timer: &Timer,
    (a, b): (usize, usize),
    size: usize,
    window: usize,
    warmup: usize,
    iterations: usize,
) -> Result<Option<Vec<f64>>> {
    let me = comm.rank() as usize;
    let mut buf = vec![0u8; size];
    let mut ack = [0u8; 4];
    let mut out = Vec::with_capacity(iterations);
    let mut reqs = Requests::with_capacity(window);
    let total = warmup + iterations;
    if me == a {
        let peer = comm.process_at_rank(b as i32);
        for i in 0..total {
            buf.fill(pattern(i));
            let t0 = timer.start();
            for _ in 0..window {
                // SAFETY: buf is neither moved nor written until wait_all below.
                unsafe { reqs.isend(comm, &buf, b, TAG)? };
            }
            reqs.wait_all()?;
            peer.receive_into_with_tag(&mut ack[..], TAG + 1);
            let t1 = timer.stop();
            if i >= warmup {
                let ns = timer.ns(t1.saturating_sub(t0));
                out.push((size * window) as f64 / ns);
            }
        }
    } else if me == b {
        let peer = comm.process_at_rank(a as i32);
        for i in 0..total {
            for _ in 0..window {
                // SAFETY: every receive lands in buf (as OSU's do), which is not
                // touched until wait_all; the bytes are equal, so the order is moot.
                unsafe { reqs.irecv(comm, &mut buf, a, TAG)? };
            }
            reqs.wait_all()?;
            mismatch("streamed message", pattern(i), &buf)?;
            peer.send_with_tag(&ack[..], TAG + 1);
        }
    }
    comm.barrier();
    Ok((me == a).then_some(out))
}

/// One-sided operations timed in a passive-target epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RmaOp {
    /// MPI_Get.
    Get,
    /// MPI_Put.
    Put,
    /// MPI_Accumulate (MPI_SUM on bytes).
    Acc,
}

/// Latency of one RMA operation from `a` on `b`'s window: the origin locks `b`
/// (shared) once, then each sample is one operation plus MPI_Win_flush, in ns.
/// Collective over `comm` (the window is).
pub fn rma(
    comm: &SimpleCommunicator,
    timer: &Timer,
    (a, b): (usize, usize),
    op: RmaOp,
    size: usize,
    warmup: usize,
    iterations: usize,
) -> Result<Option<Vec<f64>>> {
    let me = comm.rank() as usize;
    let mut win = Window::allocate(comm, size)?;
    let total = warmup + iterations;
    let target_fill = 0xA5u8;
    if me == b {
        win.local()[..size].fill(target_fill);
    }
    comm.barrier();
    let mut out = Vec::with_capacity(iterations);
    if me == a {
        let mut buf = vec![1u8; size];
        win.lock(b, false)?;
        for i in 0..total {
            if op == RmaOp::Put {
                buf.fill(pattern(i));
            }
            let t0 = timer.start();
            match op {
                RmaOp::Get => win.get(b, 0, &mut buf)?,
                RmaOp::Put => win.put(b, 0, &buf)?,
                RmaOp::Acc => win.accumulate_sum(b, 0, &buf)?,
            }
            win.flush(b)?;
            let t1 = timer.stop();
            if i >= warmup {
                out.push(timer.ns(t1.saturating_sub(t0)));
            }
        }
        win.unlock(b)?;
        if op == RmaOp::Get {
            mismatch("MPI_Get", target_fill, &buf)?;
        }
    }
    comm.barrier();
    if me == b {
        let want = match op {
            RmaOp::Get => target_fill,
            RmaOp::Put => pattern(total - 1),
            RmaOp::Acc => target_fill.wrapping_add((total % 256) as u8),
        };
        mismatch("the target window after RMA", want, &win.local()[..size])?;
    }
    comm.barrier();
    drop(win);
    Ok((me == a).then_some(out))
}
