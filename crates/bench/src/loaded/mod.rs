//! Loaded latency (MLC's latency-versus-bandwidth curve): one random chase timed
//! while injector threads stream paced read or write traffic to the same memory,
//! at decreasing delays. The chase and every injector start on one barrier; the
//! chase finishing stops the injectors, so each pass's traffic overlaps the chase.

mod data;
mod experiment;
mod present;
mod text;
pub use data::{LoadedData, LoadedPlanData};
pub use experiment::{run, Options};
pub use present::LoadedPresenter;

/// The experiment's plan.
pub type Plan = LoadedPlan;

use numalab_probe::inject::{self, Traffic};
use numalab_probe::kernel::{self, Access};
use numalab_probe::{Chase, Crew, Layout, LineState, Member, Pass, Timer};
use numalab_topo::bind::PinProof;
use numalab_topo::buffer::{Buffer, MemProof};
use numalab_topo::{Error, Host, MemPlacement, Result, ThreadPlacement};
use serde::{Deserialize, Serialize};

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
    /// What injectors do to each line.
    pub traffic: Traffic,
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
    /// Chase latency, ns per load, per pass.
    pub latency_ns: Vec<f64>,
    /// Injected memory traffic of all injectors together, GB/s, per pass.
    pub injected_gbps: Vec<f64>,
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

/// Measure the unloaded point, then every delay; `progress(i, n)` before each point.
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
    let walk = kernel::kernel(Access::Read, 0).expect("work 0 exists");
    let lines = (plan.inject_bytes / 64) as usize;
    let n = plan.delays.len() + 1;
    let mut out = Vec::with_capacity(n);
    for (i, delay) in std::iter::once(None)
        .chain(plan.delays.iter().copied().map(Some))
        .enumerate()
    {
        progress(i, n);
        let k = if delay.is_some() { bufs.len() } else { 0 };
        let mut members = vec![Member {
            cpu: plan.requestor.pu.os,
            base: chase.base(),
            lines: &[],
            line: 64,
        }];
        members.extend(plan.injectors[..k].iter().zip(&bufs).map(|(t, b)| Member {
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
        let res = crew.run(plan.iterations, false, |m| {
            let base = crew.members[m].base;
            // Each pass goes on where the last ended, so passes walk fresh lines.
            let mut p = chase.start();
            let loads = plan.loads;
            let traffic = plan.traffic;
            let d = delay.unwrap_or(0);
            move |pass: &Pass| -> u64 {
                if m == 0 {
                    // SAFETY: the chase is a linked cycle in a live buffer.
                    p = unsafe { kernel::run(walk, p, loads) };
                    std::hint::black_box(p);
                    loads as u64
                } else if pass.timed {
                    // SAFETY: the injector's own live buffer of `lines` lines.
                    unsafe { inject::inject(traffic, base, lines, d, Some(pass.stop)) }
                } else {
                    // No warm-up: the buffer was faulted in when allocated, and a paced
                    // pass over it at a long delay would take seconds.
                    0
                }
            }
        })?;
        let ns = |t: &numalab_probe::Timed| timer.ns(t.ticks);
        let latency_ns: Vec<f64> = res.samples[0]
            .iter()
            .map(|t| ns(t) / t.units as f64)
            .collect();
        let chase_gbps = res.samples[0]
            .iter()
            .map(|t| t.units as f64 * 64.0 / ns(t))
            .collect();
        let per_line = plan.traffic.traffic_per_line() as f64;
        let injected_gbps = (0..plan.iterations)
            .map(|s| {
                res.samples[1..]
                    .iter()
                    .map(|v| v[s].units as f64 * per_line / ns(&v[s]))
                    .sum()
            })
            .collect();
        out.push(Point {
            delay,
            latency_ns,
            injected_gbps,
            chase_gbps,
            pins: res.pins,
        });
    }
    let landed = Landed {
        chase: chase.buffer.proof.clone(),
        injectors: bufs.iter().map(|b| b.proof.clone()).collect(),
    };
    Ok((out, landed))
}
