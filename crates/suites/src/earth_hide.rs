//! How much latency threads hide: Loop 7 masking over thread size (seed 001 Fig. 3),
//! memory-level parallelism with G chains, and the KSR overlap table.

use crate::earth::Cpus;
use crate::memory::buffer_near;
use numalab_probe::loop7::{self, Arrays};
use numalab_probe::mlp::{self, Linked, Mode};
use numalab_probe::overlap::{self, Work};
use numalab_probe::server::with_server;
use numalab_probe::Timer;
use numalab_results::stats::median;
use numalab_topo::bind::pin_current_thread;
use numalab_topo::{Error, Host, PageSize, Result};
use serde::Serialize;

/// One communication multiplier of the masking experiment.
#[derive(Debug, Clone, Serialize)]
pub struct MaskCurve {
    /// Communication multiplier (the helper repeats each fetch this often).
    pub multiplier: usize,
    /// Baseline fetch-everything phase, ns per pass.
    pub comm_ns: Vec<f64>,
    /// Baseline compute phase, ns per pass.
    pub comp_ns: Vec<f64>,
    /// (T, ns per pass) of the masked runs.
    pub points: Vec<(usize, Vec<f64>)>,
}

impl MaskCurve {
    /// Percentage of the baseline's communication time hidden at each T (medians).
    pub fn masked_pct(&self) -> Vec<(usize, f64)> {
        let comm = median(&self.comm_ns).unwrap_or(f64::NAN);
        let base = comm + median(&self.comp_ns).unwrap_or(f64::NAN);
        self.points
            .iter()
            .map(|(t, v)| (*t, 100.0 * (base - median(v).unwrap_or(f64::NAN)) / comm))
            .collect()
    }

    /// The T that hides the most.
    pub fn best(&self) -> Option<(usize, f64)> {
        self.masked_pct()
            .into_iter()
            .filter(|x| x.1.is_finite())
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }
}

/// Loop 7 with `u` on the helper's node, fetched through the helper: the baseline
/// and every chunk size T, for every multiplier. Every run's x is checked against
/// the plain loop.
pub fn mask(
    host: &Host,
    timer: &Timer,
    c: &Cpus,
    n: usize,
    chunks: &[usize],
    multipliers: &[usize],
    it: usize,
) -> Result<Vec<MaskCurve>> {
    let ubuf = buffer_near(host, c.helper.pu.os, ((n + 6) * 8) as u64, PageSize::Base)?;
    let u = ubuf.as_ptr() as *mut f64;
    for i in 0..n + 6 {
        // SAFETY: n + 6 doubles fit the buffer.
        unsafe { u.add(i).write((i % 31) as f64 - 7.5) };
    }
    // SAFETY: as above; the buffer outlives the slice.
    let uslice = unsafe { std::slice::from_raw_parts(u as *const f64, n + 6) };
    let mut want = Arrays::new(n);
    loop7::compute(&mut want.x, uslice, &want.z, &want.y, 0, n);
    pin_current_thread(host, c.worker.pu.os)?;
    let mut pool = loop7::stacks();
    let (r, _) = with_server(
        host,
        timer,
        c.helper.pu.os,
        |cl| -> Result<Vec<MaskCurve>> {
            let mut out = Vec::new();
            for &m in multipliers {
                let (mut comm, mut comp) = (Vec::new(), Vec::new());
                for pass in 0..=it {
                    let mut a = Arrays::new(n);
                    let (f, k) = loop7::baseline(cl, timer, &mut a, u, m);
                    if a.x != want.x {
                        return Err(Error::System(
                            "data check failed: Loop 7 baseline differs from the plain loop".into(),
                        ));
                    }
                    if pass > 0 {
                        comm.push(timer.ns(f));
                        comp.push(timer.ns(k));
                    }
                }
                let mut points = Vec::new();
                for &t in chunks {
                    let mut v = Vec::new();
                    for pass in 0..=it {
                        let mut a = Arrays::new(n);
                        let ticks = loop7::masked(cl, timer, &mut a, u, t, m, &mut pool);
                        if a.x != want.x {
                            return Err(Error::System(format!(
                                "data check failed: Loop 7 with T={t} differs from the plain loop"
                            )));
                        }
                        if pass > 0 {
                            v.push(timer.ns(ticks));
                        }
                    }
                    points.push((t, v));
                }
                out.push(MaskCurve {
                    multiplier: m,
                    comm_ns: comm,
                    comp_ns: comp,
                    points,
                });
            }
            Ok(out)
        },
    )?;
    r
}

/// MLP results: per G, ns per access for both modes.
#[derive(Debug, Clone, Serialize)]
pub struct MlpPoint {
    /// Chains.
    pub g: usize,
    /// Hand-interleaved, ns per access per pass.
    pub interleaved: Vec<f64>,
    /// Coroutines, ns per access per pass.
    pub coroutines: Vec<f64>,
}

/// G random chains over `bytes` on the worker's node (THP when available).
pub fn mlp(
    host: &Host,
    timer: &Timer,
    c: &Cpus,
    bytes: u64,
    groups: &[usize],
    accesses: usize,
    it: usize,
) -> Result<(Vec<MlpPoint>, String)> {
    let (buf, pages) = match buffer_near(host, c.worker.pu.os, bytes, PageSize::Thp) {
        Ok(b) => (b, "transparent huge pages (madvise)".to_string()),
        Err(e) => (
            buffer_near(host, c.worker.pu.os, bytes, PageSize::Base)?,
            format!("4 KiB pages: THP unavailable ({e})"),
        ),
    };
    pin_current_thread(host, c.worker.pu.os)?;
    // SAFETY: the buffer is live, writable and page aligned.
    let order = unsafe { mlp::link(buf.as_ptr(), buf.len(), 64, 42) };
    let chains = Linked {
        base: buf.as_ptr(),
        order: &order,
        line: 64,
    };
    let io = |e: std::io::Error| Error::System(format!("coroutine stacks: {e}"));
    let mut out = Vec::new();
    for &g in groups {
        out.push(MlpPoint {
            g,
            interleaved: mlp::measure(timer, chains, g, accesses, Mode::Interleaved, it)
                .map_err(io)?,
            coroutines: mlp::measure(timer, chains, g, accesses, Mode::Coroutines, it)
                .map_err(io)?,
        });
    }
    Ok((out, pages))
}

/// One KSR Table 5 row: k threads, ns per work kind.
#[derive(Debug, Clone, Serialize)]
pub struct ThreadsRow {
    /// Threads on the worker's CPU.
    pub k: usize,
    /// (work, ns per pass).
    pub times: Vec<(Work, Vec<f64>)>,
    /// Creating and joining the k threads with no work, ns per pass.
    pub empty: Vec<f64>,
}

/// k = 1…5 threads on the worker's CPU sharing computation, communication (lines
/// the helper just wrote) and both; computation sized to `ratio` times less than
/// the communication of one thread (the seed's DS1 1:1, DS2 1:3, DS3 1:6).
pub fn threads(
    host: &Host,
    timer: &Timer,
    c: &Cpus,
    ratio: usize,
    it: usize,
) -> Result<(Vec<ThreadsRow>, u64)> {
    // Large enough that the work dwarfs creating five threads (tens of µs each).
    let buf = buffer_near(host, c.worker.pu.os, 8 << 20, PageSize::Base)?;
    let (w, h) = (c.worker.pu.os, c.helper.pu.os);
    // Size the computation from one thread's communication time, less the cost of
    // creating and joining the thread (a pass with no work).
    let empty =
        |k: usize, p: usize| overlap::pass(host, timer, w, h, k, Work::Compute, &buf, 64, 0, p);
    let comm: Vec<f64> = (0..5)
        .map(|p| {
            Ok(
                overlap::pass(host, timer, w, h, 1, Work::Communicate, &buf, 64, 0, p)?
                    - empty(1, p)?,
            )
        })
        .collect::<Result<_>>()?;
    pin_current_thread(host, w)?;
    let t0 = timer.start();
    overlap::compute(1 << 20);
    let per_iter = timer.ns(timer.stop() - t0) / (1 << 20) as f64;
    let iters = (median(&comm).unwrap_or(0.0).max(0.0) / per_iter / ratio.max(1) as f64) as u64;
    let mut rows = Vec::new();
    for k in 1..=5 {
        let mut times = Vec::new();
        for work in [Work::Compute, Work::Communicate, Work::Both] {
            let v: Result<Vec<f64>> = (0..it)
                .map(|p| overlap::pass(host, timer, w, h, k, work, &buf, 64, iters, p + 1))
                .collect();
            times.push((work, v?));
        }
        let e: Result<Vec<f64>> = (0..it).map(|p| empty(k, p + 1)).collect();
        rows.push(ThreadsRow {
            k,
            times,
            empty: e?,
        });
    }
    Ok((rows, iters))
}
