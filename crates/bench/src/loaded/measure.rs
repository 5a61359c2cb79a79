//! Measuring the curve: each point's passes added until its latency median (and, under
//! load, the injectors' issued bandwidth) settles (`numalab_results::settle`), a pass
//! judged disturbed when the chase or any injector was; a loaded point reading below
//! the unloaded latency is measured again (`loaded::below`).

pub use super::data::Measured;
use super::{Landed, Load, LoadedPlan, Point};
use numalab_probe::inject;
use numalab_probe::kernel::{self, Access};
use numalab_probe::mix::Mix;
use numalab_probe::{
    span_ticks, Chase, Crew, CrewResult, Layout, LineState, Member, Pass, Timed, Timer,
};
use numalab_results::disturb::{Disturbance, Rules};
use numalab_results::settle::{self, Settled};
use numalab_topo::bind::PinProof;
use numalab_topo::buffer::Buffer;
use numalab_topo::{Error, Host, Result};

/// The chase's stride: the plain chase's at one size.
pub const STRIDE: usize = crate::latency::DEFAULT_STRIDE;
use std::sync::atomic::{AtomicU64, Ordering};

/// One pass's figures, all injectors together.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fig {
    /// Chase ns per load.
    pub latency: f64,
    /// Memory traffic estimate of the injectors, GB/s.
    pub injected: f64,
    /// Bytes the injectors issued, GB/s.
    pub issued: f64,
    /// Lines the injectors touched, and wrote.
    pub lines: (f64, f64),
    /// The chase's own GB/s.
    pub chase: f64,
}

/// Measure the unloaded point, then every mix's delays; `progress(i, n)` before each
/// point and `done` after it, with where the buffers landed.
pub fn measure(
    host: &Host,
    timer: &Timer,
    plan: &LoadedPlan,
    mut progress: impl FnMut(usize, usize),
    mut done: impl FnMut(usize, &Measured, &Landed),
) -> Result<(Vec<Measured>, Landed)> {
    let buf = Buffer::allocate(host, &plan.mem, plan.chase_bytes)?;
    // The plain chase's stride at one size: the 128-byte buddy of
    // every visited line stays unused, so adjacent-line prefetch cannot hide a miss.
    let layout = Layout {
        stride: STRIDE,
        ..Layout::default_for(4096, 1)
    };
    let chase = Chase::new(buf, layout, None)
        .map_err(|e| Error::bad("chase size", plan.chase_bytes.to_string(), e))?;
    let bufs: Vec<Buffer> = plan
        .injectors
        .iter()
        .map(|_| Buffer::allocate(host, &plan.mem, plan.inject_bytes))
        .collect::<Result<_>>()?;
    let landed = Landed {
        chase: chase.buffer.proof.clone(),
        injectors: bufs.iter().map(|b| b.proof.clone()).collect(),
    };
    let at = |load: Load| point(host, timer, plan, &chase, &bufs, load);
    let out =
        super::below::run_loads(&plan.loads(), at, &mut progress, |i, m| done(i, m, &landed))?;
    Ok((out, landed))
}

/// One point: the chase timed while every injector (none when unloaded) runs its mix,
/// passes added until it settles.
fn point(
    host: &Host,
    timer: &Timer,
    plan: &LoadedPlan,
    chase: &Chase,
    bufs: &[Buffer],
    load: Load,
) -> Result<Measured> {
    let rules = Rules {
        settle: plan.goal,
        ..Rules::default()
    };
    let step = settle::Step {
        metric: "latency",
        figure: settle::Figure::Median,
        want: plan.iterations,
    };
    let mut pins: Option<Vec<PinProof>> = None;
    let (clock, sleep) = (&mut settle::clock(), &mut std::thread::sleep);
    let value = |v: &(f64, Fig)| v.0;
    let mut threads = settle::measure(&rules, step, value, clock, sleep, |n| -> Result<_> {
        let res = round(host, timer, plan, chase, bufs, load, n)?;
        let (figs, dist) = figures(timer, &res);
        pins.get_or_insert(res.0.pins);
        let lat = figs
            .iter()
            .zip(&dist)
            .map(|(f, d)| ((f.latency, *f), d.clone()));
        let mut out = vec![lat.collect::<Vec<_>>()];
        if load.is_some() {
            let bw = figs.iter().zip(dist).map(|(f, d)| ((f.issued, *f), d));
            out.push(bw.collect());
        }
        Ok(out)
    })?;
    let bandwidth = (threads.len() > 1).then(|| {
        let mut s = threads.remove(1).settle;
        s.metric = "issued_bandwidth".into();
        s
    });
    let Settled { passes, settle } = threads.remove(0);
    let used: Vec<Fig> = passes.used().into_iter().map(|v| v.1).collect();
    Ok(Measured {
        point: to_point(load, &used, pins.unwrap_or_default()),
        settle: super::below::merged(&settle, bandwidth.as_ref()),
        latency: settle,
        bandwidth,
        log: passes.log,
        remeasured_below: 0,
        replaced_ns: None,
        rechecked_ns: None,
    })
}

/// `n` passes of the chase with the injectors (none when unloaded) running.
fn round(
    host: &Host,
    timer: &Timer,
    plan: &LoadedPlan,
    chase: &Chase,
    bufs: &[Buffer],
    load: Load,
    n: usize,
) -> Result<(CrewResult, Vec<Vec<u64>>)> {
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
        .map(|_| (0..n).map(|_| AtomicU64::new(0)).collect())
        .collect();
    let res = crew.run(n, false, |m| {
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
    let writes = writes
        .iter()
        .map(|v| v.iter().map(|w| w.load(Ordering::Relaxed)).collect())
        .collect();
    Ok((res, writes))
}

/// Each pass's figures, and its disturbance: the chase's merged with every
/// injector's (a descheduled injector lightens the load the chase sees).
fn figures(
    timer: &Timer,
    (res, writes): &(CrewResult, Vec<Vec<u64>>),
) -> (Vec<Fig>, Vec<Disturbance>) {
    let ns = |t: &numalab_probe::Timed| timer.ns(t.ticks);
    let chase = &res.samples[0];
    let mut figs = Vec::with_capacity(chase.len());
    let mut dist = Vec::with_capacity(chase.len());
    for (s, c) in chase.iter().enumerate() {
        // Pass s of every injector: they ran together, started by one barrier.
        let inj: Vec<Timed> = res.samples[1..].iter().map(|v| v[s]).collect();
        let w: Vec<u64> = writes
            .iter()
            .map(|w| w.get(s).copied().unwrap_or(0))
            .collect();
        let (issued, injected) = injector_gbps(timer, &inj, &w);
        let f = Fig {
            latency: ns(c) / c.units as f64,
            injected,
            issued,
            lines: (
                inj.iter().map(|t| t.units as f64).sum(),
                w.iter().map(|&w| w as f64).sum(),
            ),
            chase: c.units as f64 * 64.0 / ns(c),
        };
        let mut d = res.disturb[0].get(s).cloned().unwrap_or_default();
        for x in res.disturb[1..].iter().filter_map(|v| v.get(s)) {
            d.merge(x);
        }
        figs.push(f);
        dist.push(d);
    }
    (figs, dist)
}

/// The injectors' issued GB/s (64 bytes per line touched) and memory-traffic estimate
/// (plus 64 per line written) in one pass: all injectors' bytes over the span from the
/// earliest one's start to the latest one's end ([`span_ticks`]), as the bandwidth
/// experiment's aggregate. Summing each injector's own rate instead would count
/// injectors the hypervisor ran one after another (each alone at full speed) as if
/// they had streamed together: twice the traffic the chase actually met.
pub fn injector_gbps(timer: &Timer, passes: &[Timed], writes: &[u64]) -> (f64, f64) {
    let touched: u64 = passes.iter().map(|t| t.units).sum();
    if touched == 0 {
        return (0.0, 0.0);
    }
    let written: u64 = writes.iter().sum();
    let span = timer.ns(span_ticks(passes, timer));
    let gbps = |lines: u64| lines as f64 * 64.0 / span;
    (gbps(touched), gbps(touched + written))
}

/// A point from the passes its statistics use.
pub fn to_point(load: Load, used: &[Fig], pins: Vec<PinProof>) -> Point {
    let loaded = load.is_some();
    let of = |f: fn(&Fig) -> f64| used.iter().map(f).collect::<Vec<f64>>();
    Point {
        delay: load.map(|l| l.1),
        mix: load.map(|l| l.0),
        latency_ns: of(|f| f.latency),
        injected_gbps: if loaded {
            of(|f| f.injected)
        } else {
            vec![0.0; used.len()]
        },
        issued_gbps: if loaded { of(|f| f.issued) } else { Vec::new() },
        read_share: used
            .iter()
            .filter(|f| f.lines.0 > 0.0)
            .map(|f| 1.0 - f.lines.1 / f.lines.0)
            .collect(),
        chase_gbps: of(|f| f.chase),
        pins,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pass(start: u64, end: u64, lines: u64) -> Timed {
        Timed {
            ticks: end - start,
            units: lines,
            start,
            end,
        }
    }

    #[test]
    fn issued_bandwidth_is_all_injectors_bytes_over_their_span() {
        let mut timer = Timer::clock(None);
        timer.overhead_ns = 0.0;
        // 1000 lines each in 1000 ns: 64 GB/s alone.
        let together = [pass(0, 1000, 1000), pass(0, 1000, 1000)];
        let serialized = [pass(0, 1000, 1000), pass(1000, 2000, 1000)];
        let (t, _) = injector_gbps(&timer, &together, &[0, 0]);
        assert!((t - 128.0).abs() < 1e-9, "{t}");
        // Run one after the other (a vCPU taken away): half the sum of their rates.
        let (s, inj) = injector_gbps(&timer, &serialized, &[0, 0]);
        assert!((s - 64.0).abs() < 1e-9, "{s}");
        assert_eq!(s, inj);
        // Written lines add to the traffic estimate over the same span.
        let (s, inj) = injector_gbps(&timer, &serialized, &[500, 500]);
        assert!(
            (s - 64.0).abs() < 1e-9 && (inj - 96.0).abs() < 1e-9,
            "{s} {inj}"
        );
        // Partly overlapping: 2000 lines over 1500 ns.
        let (s, _) = injector_gbps(
            &timer,
            &[pass(0, 1000, 1000), pass(500, 1500, 1000)],
            &[0, 0],
        );
        assert!((s - 2000.0 * 64.0 / 1500.0).abs() < 1e-9, "{s}");
        // No injector: nothing issued.
        assert_eq!(injector_gbps(&timer, &[], &[]), (0.0, 0.0));
    }

    #[test]
    fn an_unloaded_point_has_no_issued_bandwidth_and_zero_injected() {
        let f = Fig {
            latency: 90.0,
            injected: 0.0,
            issued: 0.0,
            lines: (0.0, 0.0),
            chase: 0.7,
        };
        let p = to_point(None, &[f; 3], Vec::new());
        assert!(p.issued_gbps.is_empty() && p.read_share.is_empty());
        assert_eq!(p.injected_gbps, [0.0; 3]);
        assert_eq!((p.delay, p.mix), (None, None));
    }
}
