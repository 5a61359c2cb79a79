//! Loaded latency (MLC's latency-versus-bandwidth curve): one random chase timed
//! while injector threads stream paced read or write traffic to the same memory,
//! at decreasing delays. The chase and every injector start on one barrier; the
//! chase finishing stops the injectors, so each pass's traffic overlaps the chase.
//! With several read/write mixes (`--writes`), one curve per mix: Mess's family.

mod curve;
mod data;
mod experiment;
mod mess;
mod present;
mod text;
pub use curve::{curves, Curve, CurvePoint, Family};
pub use data::{LoadedData, LoadedPlanData};
pub use experiment::{run, Options};
pub use mess::{mess_csv, reference_files, reference_records, ReferenceData, MESS_HEADER};
pub use present::LoadedPresenter;

/// The experiment's plan.
pub type Plan = LoadedPlan;

use numalab_probe::inject::{self, Traffic};
use numalab_probe::kernel::{self, Access};
use numalab_probe::mix::Mix;
use numalab_probe::{Chase, Crew, CrewResult, Layout, LineState, Member, Pass, Timer};
use numalab_topo::bind::PinProof;
use numalab_topo::buffer::{Buffer, MemProof};
use numalab_topo::{Error, Host, MemPlacement, Result, ThreadPlacement};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};

/// MLC-like delays (spin iterations after each injected line), largest first.
pub const DEFAULT_DELAYS: [u64; 11] = [20000, 10000, 5000, 2500, 1000, 500, 250, 100, 50, 20, 0];

/// The curve, resolved.
#[derive(Debug, Clone, Serialize)]
pub struct LoadedPlan {
    /// The chasing thread.
    pub requestor: ThreadPlacement,
    /// Injector threads.
    pub injectors: Vec<ThreadPlacement>,
    /// Home of the chase and of every injector's buffer.
    pub mem: MemPlacement,
    /// What injectors do to each line (without `--writes`).
    pub traffic: Traffic,
    /// Whether the mixes came from `--writes` (a family of curves).
    pub family: bool,
    /// The injectors' read/write mixes, one curve each, in order.
    pub mixes: Vec<Mix>,
    /// Delays, in order; the unloaded point comes first.
    pub delays: Vec<u64>,
    /// Chase buffer bytes.
    pub chase_bytes: u64,
    /// Bytes per injector.
    pub inject_bytes: u64,
    /// Loads per timed pass.
    pub loads: usize,
    /// Timed passes per point.
    pub iterations: usize,
}

/// One point of the curve.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Point {
    /// Injector delay; None for the unloaded point (no injectors).
    pub delay: Option<u64>,
    /// The injectors' mix; None for the unloaded point.
    #[serde(default)]
    pub mix: Option<Mix>,
    /// Chase latency, ns per load, per pass.
    pub latency_ns: Vec<f64>,
    /// Injected memory traffic of all injectors together, GB/s, per pass: an
    /// estimate, 64 bytes per line read, 128 per line written (write-allocate).
    pub injected_gbps: Vec<f64>,
    /// Bytes the injectors issued (64 per line touched), GB/s, per pass.
    #[serde(default)]
    pub issued_gbps: Vec<f64>,
    /// Lines read over lines touched by the injectors, per pass (Mess's
    /// `rd_percentage_actual`, as issued).
    #[serde(default)]
    pub read_share: Vec<f64>,
    /// The chase's own traffic (64 bytes per load), GB/s, per pass.
    pub chase_gbps: Vec<f64>,
    /// Pinning proof (requestor, then injectors).
    pub pins: Vec<PinProof>,
}

/// Where the buffers landed.
#[derive(Debug, Clone, Serialize)]
pub struct Landed {
    /// The chase buffer.
    pub chase: MemProof,
    /// Each injector's buffer.
    pub injectors: Vec<MemProof>,
}

/// What the injectors do at one point: None for the unloaded point.
pub type Load = Option<(Mix, u64)>;

impl LoadedPlan {
    /// The points in the order measured: the unloaded point, then each mix's delays.
    pub fn loads(&self) -> Vec<Load> {
        let loaded = self
            .mixes
            .iter()
            .flat_map(|m| self.delays.iter().map(move |d| Some((*m, *d))));
        std::iter::once(None).chain(loaded).collect()
    }
}

/// Measure the unloaded point, then every mix's delays; `progress(i, n)` before each point.
pub fn measure(
    host: &Host,
    timer: &Timer,
    plan: &LoadedPlan,
    mut progress: impl FnMut(usize, usize),
) -> Result<(Vec<Point>, Landed)> {
    let buf = Buffer::allocate(host, &plan.mem, plan.chase_bytes)?;
    // 128-byte stride as every plain chase: no adjacent-line prefetch pairs.
    let layout = Layout {
        stride: 128,
        ..Layout::default_for(4096, 1)
    };
    let chase = Chase::new(buf, layout, None)
        .map_err(|e| Error::bad("chase size", plan.chase_bytes.to_string(), e))?;
    let bufs: Vec<Buffer> = plan
        .injectors
        .iter()
        .map(|_| Buffer::allocate(host, &plan.mem, plan.inject_bytes))
        .collect::<Result<_>>()?;
    let loads = plan.loads();
    let mut out = Vec::with_capacity(loads.len());
    for (i, load) in loads.iter().enumerate() {
        progress(i, loads.len());
        out.push(point(host, timer, plan, &chase, &bufs, *load)?);
    }
    let landed = Landed {
        chase: chase.buffer.proof.clone(),
        injectors: bufs.iter().map(|b| b.proof.clone()).collect(),
    };
    Ok((out, landed))
}

/// One point: the chase timed while every injector (none when unloaded) runs its mix.
fn point(
    host: &Host,
    timer: &Timer,
    plan: &LoadedPlan,
    chase: &Chase,
    bufs: &[Buffer],
    load: Load,
) -> Result<Point> {
    let walk = kernel::kernel(Access::Read, 0).expect("work 0 exists");
    let lines = (plan.inject_bytes / 64) as usize;
    let k = if load.is_some() { bufs.len() } else { 0 };
    let mut members = vec![Member {
        cpu: plan.requestor.pu.os,
        base: chase.base(),
        lines: &[],
        line: 64,
    }];
    members.extend(plan.injectors[..k].iter().zip(bufs).map(|(t, b)| Member {
        cpu: t.pu.os,
        base: b.as_ptr(),
        lines: &[],
        line: 64,
    }));
    let crew = Crew {
        host,
        timer,
        members,
        helpers: Vec::new(),
        state: LineState::Warm,
        preread: false,
        evict_bytes: 0,
        // The chase ends first by construction: injectors run until stopped.
        first_stops: true,
    };
    let (mix, d) = load.unwrap_or((Mix::READS, 0));
    // Lines written per injector and pass, beside the ones `Timed` counts.
    let writes: Vec<Vec<AtomicU64>> = (0..k)
        .map(|_| (0..plan.iterations).map(|_| AtomicU64::new(0)).collect())
        .collect();
    let res = crew.run(plan.iterations, false, |m| {
        let base = crew.members[m].base;
        // Each pass goes on where the last ended, so passes walk fresh lines.
        let mut p = chase.start();
        let (loads, writes, mut pass_no) = (plan.loads, &writes, 0usize);
        move |pass: &Pass| -> u64 {
            if m == 0 {
                // SAFETY: the chase is a linked cycle in a live buffer.
                p = unsafe { kernel::run(walk, p, loads) };
                std::hint::black_box(p);
                loads as u64
            } else if pass.timed {
                // SAFETY: the injector's own live buffer of `lines` lines.
                let t = unsafe { inject::inject_mix(mix, base, lines, d, Some(pass.stop)) };
                if let Some(w) = writes[m - 1].get(pass_no) {
                    w.store(t.writes, Ordering::Relaxed);
                }
                pass_no += 1;
                t.lines()
            } else {
                // No warm-up: the buffer was faulted in when allocated, and a paced
                // pass over it at a long delay would take seconds.
                0
            }
        }
    })?;
    Ok(to_point(timer, load, res, &writes))
}

/// A point from the crew's passes and the lines each injector wrote per pass.
fn to_point(timer: &Timer, load: Load, res: CrewResult, writes: &[Vec<AtomicU64>]) -> Point {
    let ns = |t: &numalab_probe::Timed| timer.ns(t.ticks);
    let (chase_samples, k) = (&res.samples[0], writes.len());
    let per_pass = |f: &dyn Fn(u64, u64, f64) -> f64| -> Vec<f64> {
        (0..chase_samples.len())
            .map(|s| {
                (1..=k)
                    .map(|j| {
                        let t = &res.samples[j][s];
                        let w = writes[j - 1]
                            .get(s)
                            .map_or(0, |w| w.load(Ordering::Relaxed));
                        f(t.units, w, ns(t))
                    })
                    .sum()
            })
            .collect()
    };
    let issued = per_pass(&|n, _, t| n as f64 * 64.0 / t);
    let traffic = per_pass(&|n, w, t| (n + w) as f64 * 64.0 / t);
    let lines_all = per_pass(&|n, _, _| n as f64);
    let writes_all = per_pass(&|_, w, _| w as f64);
    Point {
        delay: load.map(|l| l.1),
        mix: load.map(|l| l.0),
        latency_ns: chase_samples
            .iter()
            .map(|t| ns(t) / t.units as f64)
            .collect(),
        injected_gbps: traffic,
        issued_gbps: if k > 0 { issued } else { Vec::new() },
        read_share: lines_all
            .iter()
            .zip(&writes_all)
            .filter(|(n, _)| **n > 0.0)
            .map(|(n, w)| 1.0 - w / n)
            .collect(),
        chase_gbps: chase_samples
            .iter()
            .map(|t| t.units as f64 * 64.0 / ns(t))
            .collect(),
        pins: res.pins,
    }
}
