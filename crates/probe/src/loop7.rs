//! Livermore Loop 7 (equation of state fragment) with its `u` array remote, the
//! EARTH latency-masking experiment: the loop is split into coroutines of T
//! iterations; each posts a split-phase fetch of its part of `u` to the helper and
//! yields until the data is there, so one chunk's fetch overlaps others' compute.
//! The memory variant has no helper: u is homed on another node and each
//! coroutine prefetches its lines and yields.

use crate::server::{Client, Request};
use crate::timer::Timer;
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};

/// Loop 7's constants (any values do; these are the kernel's customary ones).
pub const R: f64 = 4.86;
/// See [`R`].
pub const T: f64 = 276.0;
/// See [`R`].
pub const Q: f64 = 0.5;

/// Coroutines alive at once (and so fetches in flight).
pub const WINDOW: usize = 64;

/// x[k] for k in `lo..hi`; `u` needs k+6.
#[inline(never)]
pub fn compute(x: &mut [f64], u: &[f64], z: &[f64], y: &[f64], lo: usize, hi: usize) {
    for k in lo..hi {
        x[k] = u[k]
            + R * (z[k] + R * y[k])
            + T * (u[k + 3]
                + R * (u[k + 2] + R * u[k + 1])
                + T * (u[k + 6] + Q * (u[k + 5] + Q * u[k + 4])));
    }
}

/// Bytes of one run's arrays for `n` iterations: x, z, y, the local copy of u and u
/// itself, 8-byte floats each (what `--loop-n` is checked against memory with).
pub fn bytes(n: usize) -> u64 {
    5u64.saturating_mul(n as u64 + 8).saturating_mul(8)
}

/// Refuse a `--loop-n` whose arrays, on each of `processes`, would not fit in half of
/// the memory available (a user error: one line, exit 2).
pub fn check_memory(n: usize, processes: u64) -> Result<(), String> {
    let Some((_, avail)) = numalab_topo::sysfs::system_memory() else {
        return Ok(());
    };
    let need = bytes(n).saturating_mul(processes);
    if need > avail / 2 {
        return Err(format!(
            "invalid --loop-n '{n}': Loop 7's arrays would need {}, more than half of the {} available",
            numalab_topo::fmt_bytes(need),
            numalab_topo::fmt_bytes(avail)
        ));
    }
    Ok(())
}

/// Local arrays of one run: x (out), z, y, and `ul`, the local copy of remote u.
pub struct Arrays {
    /// Results.
    pub x: Vec<f64>,
    /// Input z.
    pub z: Vec<f64>,
    /// Input y.
    pub y: Vec<f64>,
    /// Where fetched parts of u land (n + 6).
    pub ul: Vec<f64>,
}

impl Arrays {
    /// Arrays for `n` iterations with deterministic inputs.
    pub fn new(n: usize) -> Arrays {
        Arrays {
            x: vec![0.0; n],
            z: (0..n).map(|i| (i % 97) as f64 * 0.25).collect(),
            y: (0..n).map(|i| (i % 89) as f64 * 0.5).collect(),
            ul: vec![0.0; n + 6],
        }
    }
}

/// Ticks of the two phases of the baseline: fetch all of u (blocking), then compute.
pub fn baseline(
    c: &mut Client,
    timer: &Timer,
    a: &mut Arrays,
    u: *const f64,
    repeat: usize,
) -> (u64, u64) {
    let n = a.x.len();
    let t0 = timer.start();
    let t = c.post(Request::Fetch {
        src: u as *const u64,
        dst: a.ul.as_mut_ptr() as *mut u64,
        words: n + 6,
        repeat,
    });
    c.wait(t);
    let t1 = timer.stop();
    compute(&mut a.x, &a.ul, &a.z, &a.y, 0, n);
    let t2 = timer.stop();
    (t1 - t0, t2 - t1)
}

/// Stacks for the masked runs, mapped and touched once so no run pays page faults.
pub fn stacks() -> Vec<DefaultStack> {
    (0..WINDOW)
        .map(|_| {
            let st = DefaultStack::new(64 * 1024).expect("a 64 KiB stack");
            let mut c = Coroutine::with_stack(st, |_: &Yielder<(), ()>, ()| {
                // Touch the stack's top pages.
                std::hint::black_box([0u8; 8192]);
            });
            c.resume(());
            c.into_stack()
        })
        .collect()
}

/// Loop 7 over `lo..hi` on arrays given by address (x, ul, z, y of `n` iterations).
///
/// # Safety
/// The addresses are live arrays of those lengths; no one else touches x[lo..hi].
pub unsafe fn chunk_compute(
    n: usize,
    xp: usize,
    up: usize,
    zp: usize,
    yp: usize,
    lo: usize,
    hi: usize,
) {
    // SAFETY: as the caller promises.
    unsafe {
        let x = std::slice::from_raw_parts_mut(xp as *mut f64, n);
        let ul = std::slice::from_raw_parts(up as *const f64, n + 6);
        let z = std::slice::from_raw_parts(zp as *const f64, n);
        let yy = std::slice::from_raw_parts(yp as *const f64, n);
        compute(x, ul, z, yy, lo, hi);
    }
}

/// Run `body(lo, hi, yielder)` as one coroutine per chunk of `0..n`, at most
/// [`WINDOW`] alive, resumed round-robin; stacks come from and return to `pool`.
pub fn window<F>(n: usize, chunk: usize, pool: &mut Vec<DefaultStack>, body: F)
where
    F: Fn(usize, usize, &Yielder<(), ()>) + Copy + 'static,
{
    let chunks = n.div_ceil(chunk);
    let mut live: Vec<Coroutine<(), (), (), DefaultStack>> = Vec::new();
    let mut next = 0;
    while next < chunks || !live.is_empty() {
        while live.len() < WINDOW && next < chunks {
            let (lo, hi) = (next * chunk, ((next + 1) * chunk).min(n));
            let stack = pool.pop().expect("one stack per live coroutine");
            live.push(Coroutine::with_stack(
                stack,
                move |y: &Yielder<(), ()>, ()| body(lo, hi, y),
            ));
            next += 1;
        }
        let mut i = 0;
        while i < live.len() {
            if let CoroutineResult::Return(()) = live[i].resume(()) {
                pool.push(live.swap_remove(i).into_stack());
            } else {
                i += 1;
            }
        }
    }
}

/// Ticks of the masked run: coroutines of `chunk` iterations, each fetching its
/// part of u through the helper and yielding until it arrives. Stacks come from
/// `pool` (at least [`WINDOW`] of them, from [`stacks`]) and go back to it.
pub fn masked(
    c: &mut Client,
    timer: &Timer,
    a: &mut Arrays,
    u: *const f64,
    chunk: usize,
    repeat: usize,
    pool: &mut Vec<DefaultStack>,
) -> u64 {
    let n = a.x.len();
    let chunk = chunk.clamp(1, n.max(1));
    assert!(pool.len() >= WINDOW, "a pool of WINDOW stacks");
    let (xp, zp, yp, up) = (
        a.x.as_mut_ptr() as usize,
        a.z.as_ptr() as usize,
        a.y.as_ptr() as usize,
        a.ul.as_mut_ptr() as usize,
    );
    let cp = c as *mut Client as usize;
    let t0 = timer.start();
    window(n, chunk, pool, move |lo, hi, y| {
        // SAFETY: the client and arrays outlive every coroutine (all finish before
        // `masked` returns); chunks write disjoint parts of x and ul, and
        // coroutines run one at a time on this thread.
        unsafe {
            let client = &mut *(cp as *mut Client);
            let t = client.post(Request::Fetch {
                src: (u as *const u64).add(lo),
                dst: (up as *mut u64).add(lo),
                words: hi - lo + 6,
                repeat,
            });
            while !client.ready(t) {
                y.suspend(());
            }
            chunk_compute(n, xp, up, zp, yp, lo, hi);
        }
    });
    timer.stop() - t0
}

/// Doubles between copies of u in the memory variant: n + 6 rounded up to whole
/// 64-byte lines, so no line holds parts of two copies.
pub fn copy_stride(n: usize) -> usize {
    (n + 6).next_multiple_of(8)
}

/// Baseline with `u` in memory (homed on another node, no helper): read copy r of u
/// into the local copy for r = 0..repeat (communication × repeat, every copy cold),
/// then compute. `u` holds `repeat` copies [`copy_stride`] apart, all flushed by the
/// caller, so nothing but reading memory is timed as communication.
pub fn baseline_mem(timer: &Timer, a: &mut Arrays, u: &[f64], repeat: usize) -> (u64, u64) {
    let n = a.x.len();
    let (stride, repeat) = (copy_stride(n), repeat.max(1));
    assert!(
        u.len() >= stride * (repeat - 1) + n + 6,
        "u holds the copies"
    );
    let t0 = timer.start();
    for r in 0..repeat {
        a.ul[..n + 6].copy_from_slice(&u[r * stride..r * stride + n + 6]);
    }
    let t1 = timer.stop();
    compute(&mut a.x, &a.ul, &a.z, &a.y, 0, n);
    let t2 = timer.stop();
    (t1 - t0, t2 - t1)
}

/// Masked run with `u` in memory: for each copy r, coroutines of `chunk` iterations
/// prefetch their lines of it, yield, then read them into the local copy; then each
/// computes its chunk. One chunk's misses overlap the others' work. Copies and
/// flushing as for [`baseline_mem`].
pub fn masked_mem(
    timer: &Timer,
    a: &mut Arrays,
    u: &[f64],
    chunk: usize,
    repeat: usize,
    pool: &mut Vec<DefaultStack>,
) -> u64 {
    let n = a.x.len();
    let (stride, repeat) = (copy_stride(n), repeat.max(1));
    assert!(
        u.len() >= stride * (repeat - 1) + n + 6,
        "u holds the copies"
    );
    let chunk = chunk.clamp(1, n.max(1));
    assert!(pool.len() >= WINDOW, "a pool of WINDOW stacks");
    let (xp, zp, yp, up, src) = (
        a.x.as_mut_ptr() as usize,
        a.z.as_ptr() as usize,
        a.y.as_ptr() as usize,
        a.ul.as_mut_ptr() as usize,
        u.as_ptr() as usize,
    );
    let t0 = timer.start();
    window(n, chunk, pool, move |lo, hi, y| {
        let words = hi - lo + 6;
        // SAFETY: u, x, ul, z and y outlive the coroutines (all finish before
        // masked_mem returns); chunks write disjoint parts of x and ul (the six
        // words past a chunk are written with the same values by its neighbour).
        unsafe {
            for r in 0..repeat {
                let from = (src as *const f64).add(r * stride + lo);
                for off in (0..words * 8).step_by(64) {
                    crate::mlp::prefetch((from as *const u8).add(off));
                }
                y.suspend(());
                std::ptr::copy_nonoverlapping(from, (up as *mut f64).add(lo), words);
            }
            chunk_compute(n, xp, up, zp, yp, lo, hi);
        }
    });
    timer.stop() - t0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::with_server;
    use numalab_topo::{Host, TopologySource};

    #[test]
    fn every_chunking_computes_what_the_plain_loop_computes() {
        let host = Host::load(&TopologySource::ThisSystem).unwrap();
        let timer = Timer::best();
        let n = 1000;
        let u: Vec<f64> = (0..n + 6).map(|i| (i % 31) as f64 - 7.5).collect();
        let mut want = Arrays::new(n);
        compute(&mut want.x, &u, &want.z, &want.y, 0, n);
        let cpu = host.machine.pus.last().unwrap().os;
        let mut pool = stacks();
        with_server(&host, &timer, cpu, |c| {
            let mut a = Arrays::new(n);
            baseline(c, &timer, &mut a, u.as_ptr(), 2);
            assert_eq!(a.x, want.x);
            for chunk in [1, 7, 64, 999, 1000, 5000] {
                let mut a = Arrays::new(n);
                masked(c, &timer, &mut a, u.as_ptr(), chunk, 1, &mut pool);
                assert_eq!(a.x, want.x, "chunk {chunk}");
            }
            // Three copies of u, copy_stride apart: the variants read every one.
            let stride = copy_stride(n);
            let mut copies = vec![0.0; 3 * stride];
            for r in 0..3 {
                copies[r * stride..r * stride + n + 6].copy_from_slice(&u);
            }
            for (chunk, repeat) in [(1, 1), (7, 3), (64, 2), (5000, 1)] {
                let mut a = Arrays::new(n);
                masked_mem(&timer, &mut a, &copies, chunk, repeat, &mut pool);
                assert_eq!(a.x, want.x, "memory variant, chunk {chunk}");
            }
            let mut a = Arrays::new(n);
            baseline_mem(&timer, &mut a, &copies, 3);
            assert_eq!(a.x, want.x);
        })
        .unwrap();
    }
}
