//! The timed loops between two ranks: ping-pong, a streaming window (OSU's bandwidth
//! method) and one-sided get/put/accumulate in a passive-target epoch. The origin
//! returns its samples; every loop checks the bytes it moved, outside the timed region.

use crate::buf::PageBuf;
use crate::error::{Error, Result};
use crate::raw::{Requests, Window};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;
use numalab_probe::Timer;

const TAG: i32 = 77;

/// What the sender's bytes are from one iteration to the next.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Data {
    /// New bytes written before every iteration (outside the timer), and the ping-pong
    /// reply is the message just received: every transfer reads lines another core
    /// has just written, as a program sending what it computed does.
    #[default]
    Fresh,
    /// The same bytes every iteration, the reply from the peer's own buffer (OSU's and
    /// IMB's way): after the first iteration the receiving core may still hold the
    /// sender's lines, so sizes that fit its caches look faster than fresh data.
    Same,
}

impl Data {
    /// Parse `--data`.
    pub fn parse(s: &str) -> Result<Data> {
        match s.trim() {
            "fresh" => Ok(Data::Fresh),
            "same" => Ok(Data::Same),
            o => Err(Error::Usage(format!(
                "invalid --data '{o}': fresh (new bytes every iteration) or same (OSU's)"
            ))),
        }
    }

    /// The name on the command line and in records.
    pub fn name(self) -> &'static str {
        match self {
            Data::Fresh => "fresh",
            Data::Same => "same",
        }
    }
}

/// How a latency loop treats its data and its clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Method {
    /// Fresh or the same bytes every iteration.
    pub data: Data,
    /// Iterations per timed sample: 1 times each one (percentiles of single
    /// operations); more amortise the two clock reads over the batch, as OSU's one
    /// timer around the whole loop does. Above 1 needs [`Data::Same`]: new bytes
    /// would have to be written inside the timed batch.
    pub batch: usize,
}

impl Default for Method {
    fn default() -> Self {
        Method {
            data: Data::Fresh,
            batch: 1,
        }
    }
}

impl Method {
    /// A usage error for a batch of 0, or a batch above 1 with fresh data.
    pub fn check(&self) -> Result<()> {
        if self.batch == 0 {
            return Err(Error::Usage(
                "invalid --batch '0': at least 1 iteration per timed sample".into(),
            ));
        }
        if self.batch > 1 && self.data == Data::Fresh {
            return Err(Error::Usage(format!(
                "invalid --batch '{}' with --data fresh: new bytes would be written inside the timed batch; give --data same or --batch 1",
                self.batch
            )));
        }
        Ok(())
    }
}

/// Timed iterations rounded up to whole batches, and the sample count.
pub fn batches(iterations: usize, batch: usize) -> (usize, usize) {
    let n = iterations.div_ceil(batch.max(1)).max(1);
    (n * batch.max(1), n)
}

/// The byte the ping-pong reply carries with [`Data::Same`] (the peer's own buffer).
const REPLY: u8 = 0x5A;

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
/// sample is one batch of round trips / (2 × batch), in ns. The buffers are checked
/// after the loop, outside the timed region.
pub fn ping_pong(
    comm: &SimpleCommunicator,
    timer: &Timer,
    (a, b): (usize, usize),
    size: usize,
    warmup: usize,
    iterations: usize,
    how: Method,
) -> Result<Option<Vec<f64>>> {
    how.check()?;
    let me = comm.rank() as usize;
    let fresh = how.data == Data::Fresh;
    let (timed, samples) = batches(iterations, how.batch);
    let mut sbuf = PageBuf::new(size, if me == a { pattern(0) } else { REPLY });
    let mut rbuf = PageBuf::new(size, 0);
    let mut out = Vec::with_capacity(samples);
    if me == a {
        let peer = comm.process_at_rank(b as i32);
        let round = |sbuf: &[u8], rbuf: &mut [u8]| {
            peer.send_with_tag(sbuf, TAG);
            peer.receive_into_with_tag(rbuf, TAG);
        };
        for i in 0..warmup {
            if fresh {
                sbuf.fill(pattern(i));
            }
            round(&sbuf, &mut rbuf);
        }
        for k in 0..samples {
            let first = warmup + k * how.batch;
            if fresh {
                sbuf.fill(pattern(first));
            }
            let t0 = timer.start();
            for _ in 0..how.batch {
                round(&sbuf, &mut rbuf);
            }
            let t1 = timer.stop();
            out.push(timer.ns(t1.saturating_sub(t0)) / (2 * how.batch) as f64);
        }
        let want = if fresh {
            pattern(warmup + timed - 1)
        } else {
            REPLY
        };
        mismatch("ping-pong reply", want, &rbuf)?;
    } else if me == b {
        let peer = comm.process_at_rank(a as i32);
        for _ in 0..warmup + timed {
            peer.receive_into_with_tag(&mut rbuf[..], TAG);
            // Fresh: echo what arrived, so the reply proves the round trip's bytes.
            let reply = if fresh { &rbuf[..] } else { &sbuf[..] };
            peer.send_with_tag(reply, TAG);
        }
        let want = if fresh {
            pattern(warmup + timed - 1)
        } else {
            pattern(0)
        };
        mismatch("ping-pong message", want, &rbuf)?;
    }
    comm.barrier();
    Ok((me == a).then_some(out))
}

/// Streaming bandwidth from `a` to `b`: per sample, `window` non-blocking sends of
/// `size` bytes and the receiver's acknowledgement; GB/s (10^9 bytes/s).
#[allow(clippy::too_many_arguments)]
pub fn stream(
    comm: &SimpleCommunicator,
    timer: &Timer,
    (a, b): (usize, usize),
    size: usize,
    window: usize,
    warmup: usize,
    iterations: usize,
    data: Data,
) -> Result<Option<Vec<f64>>> {
    let me = comm.rank() as usize;
    let fresh = data == Data::Fresh;
    let mut buf = PageBuf::new(size, if me == a { pattern(0) } else { 0 });
    let mut ack = [0u8; 4];
    let mut out = Vec::with_capacity(iterations);
    let mut reqs = Requests::with_capacity(window);
    let total = warmup + iterations;
    if me == a {
        let peer = comm.process_at_rank(b as i32);
        for i in 0..total {
            if fresh {
                buf.fill(pattern(i));
            }
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
            peer.send_with_tag(&ack[..], TAG + 1);
            // Checked after the acknowledgement, so the check is not in the sender's
            // timed window (the sender writes its next bytes meanwhile).
            if fresh {
                mismatch("streamed message", pattern(i), &buf)?;
            }
        }
        mismatch(
            "streamed message",
            pattern(if fresh { total - 1 } else { 0 }),
            &buf,
        )?;
    }
    comm.barrier();
    Ok((me == a).then_some(out))
}

/// Bidirectional streaming bandwidth between `a` and `b` (OSU's osu_bibw): per sample,
/// both ranks post `window` receives from and `window` sends to each other, wait for
/// all of them, and `b` acknowledges; GB/s of both directions together.
#[allow(clippy::too_many_arguments)]
pub fn bistream(
    comm: &SimpleCommunicator,
    timer: &Timer,
    (a, b): (usize, usize),
    size: usize,
    window: usize,
    warmup: usize,
    iterations: usize,
    data: Data,
) -> Result<Option<Vec<f64>>> {
    let me = comm.rank() as usize;
    if me != a && me != b {
        comm.barrier();
        return Ok(None);
    }
    let peer_rank = if me == a { b } else { a };
    let fresh = data == Data::Fresh;
    // Separate send and receive buffers: both are in flight at once.
    let mut sbuf = PageBuf::new(size, pattern(0));
    let mut rbuf = PageBuf::new(size, 0);
    let mut ack = [0u8; 4];
    let mut out = Vec::with_capacity(if me == a { iterations } else { 0 });
    let mut reqs = Requests::with_capacity(2 * window);
    let peer = comm.process_at_rank(peer_rank as i32);
    for i in 0..warmup + iterations {
        if fresh {
            sbuf.fill(pattern(i));
        }
        let t0 = timer.start();
        for _ in 0..window {
            // SAFETY: rbuf and sbuf are neither moved nor touched until wait_all below;
            // every receive lands in rbuf (as OSU's do) with equal bytes.
            unsafe { reqs.irecv(comm, &mut rbuf, peer_rank, TAG)? };
        }
        for _ in 0..window {
            // SAFETY: as above.
            unsafe { reqs.isend(comm, &sbuf, peer_rank, TAG)? };
        }
        reqs.wait_all()?;
        if me == a {
            peer.receive_into_with_tag(&mut ack[..], TAG + 1);
            let t1 = timer.stop();
            if i >= warmup {
                let ns = timer.ns(t1.saturating_sub(t0));
                out.push((2 * size * window) as f64 / ns);
            }
        } else {
            peer.send_with_tag(&ack[..], TAG + 1);
        }
        // Checked after the sample's clock stopped on the origin.
        mismatch(
            "bidirectionally streamed message",
            pattern(if fresh { i } else { 0 }),
            &rbuf,
        )?;
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
/// (shared) once, then each sample is a batch of (operation plus MPI_Win_flush) / batch,
/// in ns. Collective over `comm` (the window is).
#[allow(clippy::too_many_arguments)]
pub fn rma(
    comm: &SimpleCommunicator,
    timer: &Timer,
    (a, b): (usize, usize),
    op: RmaOp,
    size: usize,
    warmup: usize,
    iterations: usize,
    how: Method,
) -> Result<Option<Vec<f64>>> {
    how.check()?;
    let me = comm.rank() as usize;
    let mut win = Window::allocate(comm, size)?;
    let (timed, samples) = batches(iterations, how.batch);
    let total = warmup + timed;
    let refill = op == RmaOp::Put && how.data == Data::Fresh;
    let target_fill = 0xA5u8;
    if me == b {
        win.local()[..size].fill(target_fill);
    }
    comm.barrier();
    let mut out = Vec::with_capacity(samples);
    let mut checked = Ok(());
    if me == a {
        let mut buf = PageBuf::new(size, if op == RmaOp::Put { pattern(0) } else { 1 });
        win.lock(b, false)?;
        let one = |buf: &mut [u8]| -> Result<()> {
            match op {
                RmaOp::Get => win.get(b, 0, buf)?,
                RmaOp::Put => win.put(b, 0, buf)?,
                RmaOp::Acc => win.accumulate_sum(b, 0, buf)?,
            }
            win.flush(b)
        };
        for i in 0..warmup {
            if refill {
                buf.fill(pattern(i));
            }
            one(&mut buf)?;
        }
        for k in 0..samples {
            if refill {
                buf.fill(pattern(warmup + k));
            }
            let t0 = timer.start();
            for _ in 0..how.batch {
                one(&mut buf)?;
            }
            let t1 = timer.stop();
            out.push(timer.ns(t1.saturating_sub(t0)) / how.batch as f64);
        }
        win.unlock(b)?;
        if op == RmaOp::Get {
            checked = mismatch("MPI_Get", target_fill, &buf);
        }
    }
    comm.barrier();
    if me == b {
        let want = match op {
            RmaOp::Get => target_fill,
            RmaOp::Put if refill => pattern(total - 1),
            RmaOp::Put => pattern(0),
            RmaOp::Acc => target_fill.wrapping_add((total % 256) as u8),
        };
        checked = check_target(op, want, &win.local()[..size]);
    }
    // Both sides learn whether either check failed, so the sweep goes on together
    // and records this step as not measured. A failed check is returned only after
    // the window is freed on every rank: MPI_Win_free is collective, and a rank
    // leaving early would leave the other waiting in this barrier for ever.
    let failed = either_failed(comm, (a, b), checked.is_err());
    comm.barrier();
    drop(win);
    match checked {
        Err(e) => Err(Error::Check(e.to_string())),
        Ok(()) if failed => Err(Error::Check(String::new())),
        Ok(()) => Ok((me == a).then_some(out)),
    }
}

/// The target window after the epoch: every byte `want`, a saturated sum named.
fn check_target(op: RmaOp, want: u8, window: &[u8]) -> Result<()> {
    let checked = mismatch("the target window after RMA", want, window);
    match checked {
        Err(e) if op == RmaOp::Acc && window.first() == Some(&u8::MAX) => Err(Error::System(format!(
            "{e}: a saturated sum; MPI_SUM on MPI_UINT8_T must wrap modulo 256 (Open MPI 4.1's op/avx component saturates; OMPI_MCA_op=^avx turns it off)"
        ))),
        other => other,
    }
}

/// Whether `a`'s or `b`'s check failed, known on every rank (collective). Broadcasts,
/// not a reduction: the reduction's own operator is what may be broken.
fn either_failed(comm: &SimpleCommunicator, (a, b): (usize, usize), mine: bool) -> bool {
    let (mut fa, mut fb) = (u8::from(mine), u8::from(mine));
    comm.process_at_rank(a as i32).broadcast_into(&mut fa);
    comm.process_at_rank(b as i32).broadcast_into(&mut fb);
    fa != 0 || fb != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_parses_its_two_names_and_names_a_bad_one() {
        assert_eq!(Data::parse("fresh").unwrap(), Data::Fresh);
        assert_eq!(Data::parse(" same ").unwrap(), Data::Same);
        assert_eq!(Data::parse("same").unwrap().name(), "same");
        let e = Data::parse("warm").unwrap_err();
        assert!(e.is_user_error() && e.to_string().contains("'warm'"), "{e}");
    }

    #[test]
    fn a_batch_needs_the_same_data_and_is_at_least_one() {
        assert!(Method::default().check().is_ok());
        let same = |batch| Method {
            data: Data::Same,
            batch,
        };
        assert!(same(100).check().is_ok());
        let e = same(0).check().unwrap_err();
        assert!(e.is_user_error() && e.to_string().contains("'0'"), "{e}");
        let fresh = Method {
            data: Data::Fresh,
            batch: 2,
        };
        let e = fresh.check().unwrap_err();
        assert!(e.to_string().contains("--data same"), "{e}");
    }

    #[test]
    fn iterations_round_up_to_whole_batches() {
        assert_eq!(batches(10_000, 1), (10_000, 10_000));
        assert_eq!(batches(10_000, 100), (10_000, 100));
        assert_eq!(batches(250, 100), (300, 3));
        assert_eq!(batches(1, 100), (100, 1));
    }
}
