//! The timed loops of the collectives between ranks (`suite collectives --mpi`): a
//! seed script over one RMA window, repeated barriers, and MPI's own collectives. The
//! suite builds what runs and checks what moved; the timers start and stop here.

use crate::coll::{dissemination_barrier, Bound};
use crate::raw::Window;
use crate::Result;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;
use numalab_probe::script::Step;
use numalab_probe::Timer;

/// Byte offset of buffer `b`'s line `l` in its owner's window (src, dst, res regions).
pub fn offset(b: usize, l: usize, p: usize, n: usize, line: usize) -> usize {
    let region = match b % 3 {
        0 => 0,
        1 => p * n,
        _ => 2 * p * n,
    };
    (region + l) * line
}

/// The 8-byte word at `at`.
pub fn word(mem: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(mem[at..at + 8].try_into().expect("8 bytes"))
}

/// One rank's script over the window; returns its time for the timed steps, ns.
pub fn script_time(
    comm: &SimpleCommunicator,
    win: &mut Window,
    timer: &Timer,
    steps: &[Step],
    p: usize,
    n: usize,
    line: usize,
) -> Result<f64> {
    let me = comm.rank() as usize;
    let mut scratch = vec![0u8; p * n * line];
    // A get into this rank's window lands by the next flush, not at once (over a
    // network; shared memory happened to copy at once): any later local read or write
    // of the window waits for it, or a combine reads the block before it arrived.
    let mut landing = false;
    let t0 = timer.start();
    for st in steps {
        if landing && matches!(st, Step::Copy { .. } | Step::Combine { .. }) {
            let remote = |b: usize| b / 3 != me;
            let only_gets = matches!(st, Step::Copy { src, .. } if remote(src.buf));
            if !only_gets {
                win.flush_all()?;
                landing = false;
            }
        }
        match st {
            Step::Copy { src, dst } => {
                let (from, to) = (
                    offset(src.buf, src.first, p, n, line),
                    offset(dst.buf, dst.first, p, n, line),
                );
                let len = src.count * line;
                if src.buf / 3 == me {
                    win.local().copy_within(from..from + len, to);
                } else {
                    win.get_local(src.buf / 3, from, to, len)?;
                    landing = true;
                }
            }
            Step::Combine { src, dst, op } => {
                let from = offset(src.buf, src.first, p, n, line);
                let to = offset(dst.buf, dst.first, p, n, line);
                let len = src.count * line;
                if src.buf / 3 == me {
                    scratch[..len].copy_from_slice(&win.local()[from..from + len]);
                } else {
                    win.get(src.buf / 3, from, &mut scratch[..len])?;
                    win.flush(src.buf / 3)?;
                }
                let mem = win.local();
                for i in (0..len).step_by(8) {
                    let v = op.apply(word(mem, to + i), word(&scratch, i));
                    mem[to + i..to + i + 8].copy_from_slice(&v.to_ne_bytes());
                }
            }
            Step::Sync => {
                landing = false;
                win.flush_all()?;
                win.sync()?;
                comm.barrier();
                win.sync()?;
            }
            Step::Read(_) | Step::Write(_) => {}
        }
    }
    win.flush_all()?;
    let t1 = timer.stop();
    Ok(timer.ns(t1.saturating_sub(t0)))
}

/// `iterations` timed passes (after one untimed) of `reps` dissemination barriers,
/// each released by a barrier: ns per barrier, per pass.
pub fn barrier_passes(
    comm: &SimpleCommunicator,
    timer: &Timer,
    iterations: usize,
    reps: usize,
) -> Vec<f64> {
    let mut times = Vec::with_capacity(iterations);
    for pass in 0..=iterations {
        comm.barrier();
        let t0 = timer.start();
        for _ in 0..reps {
            dissemination_barrier(comm);
        }
        let t1 = timer.stop();
        if pass > 0 {
            times.push(timer.ns(t1.saturating_sub(t0)) / reps as f64);
        }
    }
    times
}

/// `iterations` timed passes (after one untimed) of `reps` runs of MPI's collective
/// `op`, each after `prepare(pass, src, dst)` (outside the timer) and a releasing
/// barrier: this rank's ns per run, per pass.
pub fn native_passes(
    comm: &SimpleCommunicator,
    timer: &Timer,
    op: &Bound,
    (src, dst, res): (&mut [u64], &mut [u64], &mut [u64]),
    iterations: usize,
    reps: usize,
    mut prepare: impl FnMut(usize, &mut [u64], &mut [u64]),
) -> Vec<f64> {
    let mut times = Vec::with_capacity(iterations);
    for pass in 0..=iterations {
        prepare(pass, src, dst);
        comm.barrier();
        let t0 = timer.start();
        for _ in 0..reps {
            op.run(src, dst, res);
        }
        let t1 = timer.stop();
        if pass > 0 {
            times.push(timer.ns(t1.saturating_sub(t0)) / reps as f64);
        }
    }
    times
}
