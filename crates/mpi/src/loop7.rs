//! Livermore Loop 7 with `u` on another rank (EARTH's latency-masking experiment over
//! MPI): the baseline gets all of u (×m copies) and then computes; the masked run
//! splits the loop into coroutines of T iterations, each posting MPI_Rget of its part
//! of u and yielding until the gets complete, so one chunk's gets overlap others'
//! compute. The kernel, arrays and stacks are the shared-memory suite's
//! ([`numalab_probe::loop7`]).

use crate::error::{Error, Result};
use crate::raw::{Requests, Window};
use corosensei::stack::DefaultStack;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;
use numalab_probe::loop7::{chunk_compute, compute, copy_stride, stacks, window, Arrays};
use numalab_probe::Timer;

/// One multiplier's curve: baseline phases and the masked runs, ns per pass.
#[derive(Debug, Clone, Default)]
pub struct Curve {
    /// Baseline: get every copy of u, ns per pass.
    pub comm_ns: Vec<f64>,
    /// Baseline: compute, ns per pass.
    pub comp_ns: Vec<f64>,
    /// (T, ns per pass) of the masked runs.
    pub points: Vec<(usize, Vec<f64>)>,
}

fn u_value(i: usize) -> f64 {
    (i % 101) as f64 * 0.125
}

fn as_bytes_mut(v: &mut [f64]) -> &mut [u8] {
    // SAFETY: f64 has no invalid bit patterns and u8 has alignment 1.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), std::mem::size_of_val(v)) }
}

/// Run the experiment for loop length `n`, multipliers `ms` and chunk sizes `ts`
/// (collective over `comm`; the issuer returns the curves, others an empty list).
#[allow(clippy::too_many_arguments)]
pub fn mask(
    comm: &SimpleCommunicator,
    timer: &Timer,
    (issuer, owner): (usize, usize),
    n: usize,
    ms: &[usize],
    ts: &[usize],
    passes: usize,
) -> Result<Vec<Curve>> {
    let me = comm.rank() as usize;
    let stride = copy_stride(n);
    let mmax = ms.iter().copied().max().unwrap_or(1);
    let mut win = Window::allocate(comm, stride * 8 * mmax)?;
    if me == owner {
        let mem = win.local();
        for (i, w) in mem.chunks_exact_mut(8).enumerate() {
            w.copy_from_slice(&u_value(i % stride).to_ne_bytes());
        }
    }
    comm.barrier();
    let mut curves = Vec::new();
    if me == issuer {
        let mut want = Arrays::new(n);
        let u: Vec<f64> = (0..n + 6).map(u_value).collect();
        compute(&mut want.x, &u, &want.z, &want.y, 0, n);
        let mut pool = stacks();
        win.lock_all()?;
        for &m in ms {
            let mut c = Curve::default();
            for pass in 0..=passes {
                let mut a = Arrays::new(n);
                let t0 = timer.start();
                for r in 0..m {
                    win.get(owner, r * stride * 8, as_bytes_mut(&mut a.ul))?;
                }
                win.flush(owner)?;
                let t1 = timer.stop();
                compute(&mut a.x, &a.ul, &a.z, &a.y, 0, n);
                let t2 = timer.stop();
                if a.x != want.x {
                    return Err(Error::System(
                        "Loop 7 over MPI: the baseline's x differs from the plain loop".into(),
                    ));
                }
                if pass > 0 {
                    c.comm_ns.push(timer.ns(t1 - t0));
                    c.comp_ns.push(timer.ns(t2 - t1));
                }
            }
            for &t in ts {
                let mut v = Vec::new();
                for pass in 0..=passes {
                    let mut a = Arrays::new(n);
                    let ns = masked(&win, timer, &mut a, owner, stride, m, t, &mut pool)?;
                    if a.x != want.x {
                        return Err(Error::System(format!(
                            "Loop 7 over MPI: the masked run (T={t}) differs from the plain loop"
                        )));
                    }
                    if pass > 0 {
                        v.push(ns);
                    }
                }
                c.points.push((t, v));
            }
            curves.push(c);
        }
        win.unlock_all()?;
    }
    comm.barrier();
    drop(win);
    Ok(curves)
}

/// One masked pass: ns.
#[allow(clippy::too_many_arguments)]
fn masked(
    win: &Window,
    timer: &Timer,
    a: &mut Arrays,
    owner: usize,
    stride: usize,
    m: usize,
    chunk: usize,
    pool: &mut Vec<DefaultStack>,
) -> Result<f64> {
    let n = a.x.len();
    let chunk = chunk.clamp(1, n.max(1));
    let (xp, zp, yp, up) = (
        a.x.as_mut_ptr() as usize,
        a.z.as_ptr() as usize,
        a.y.as_ptr() as usize,
        a.ul.as_mut_ptr() as usize,
    );
    let wp = win as *const Window as usize;
    let failed = std::cell::Cell::new(false);
    let fp = &failed as *const std::cell::Cell<bool> as usize;
    let t0 = timer.start();
    window(n, chunk, pool, move |lo, hi, y| {
        // SAFETY: the window, arrays and flag outlive every coroutine (all end before
        // `masked` returns); chunks write disjoint parts of x and ul, and coroutines run
        // one at a time on this thread.
        unsafe {
            let win = &*(wp as *const Window);
            let failed = &*(fp as *const std::cell::Cell<bool>);
            let ul = std::slice::from_raw_parts_mut((up as *mut f64).add(lo), hi - lo + 6);
            let bytes = std::slice::from_raw_parts_mut(ul.as_mut_ptr().cast::<u8>(), ul.len() * 8);
            let mut reqs = Requests::with_capacity(m);
            for r in 0..m {
                // Every copy lands in the same place: the data is the same.
                let dst = std::slice::from_raw_parts_mut(bytes.as_mut_ptr(), bytes.len());
                if win
                    .rget(owner, (r * stride + lo) * 8, dst, &mut reqs)
                    .is_err()
                {
                    failed.set(true);
                    return;
                }
            }
            while !reqs.is_empty() {
                match reqs.test_first() {
                    Ok(true) => {}
                    Ok(false) => y.suspend(()),
                    Err(_) => {
                        failed.set(true);
                        return;
                    }
                }
            }
            chunk_compute(n, xp, up, zp, yp, lo, hi);
        }
    });
    let t = timer.ns(timer.stop() - t0);
    if failed.get() {
        return Err(Error::System("Loop 7 over MPI: an MPI_Rget failed".into()));
    }
    Ok(t)
}
