//! How much latency threads hide: Loop 7 masking over thread size (seed 001 Fig. 3),
//! memory-level parallelism with G chains, and the KSR overlap table.

use super::sizing::{self, size, Rule, Sizing};
use super::Cpus;
use crate::memory::buffer_near;
use numalab_probe::compute_rate;
use numalab_probe::loop7::{self, Arrays};
use numalab_probe::mlp::{self, Linked, Mode};
use numalab_probe::overlap::{self, Work};
use numalab_probe::server::with_server;
use numalab_probe::Timer;
use numalab_results::stats::median;
use numalab_topo::bind::pin_current_thread;
use numalab_topo::buffer::{Buffer, MemProof};
use numalab_topo::plan::resolve_memory;
use numalab_topo::{Error, Host, MemSpec, PageSize, Result};
use serde::Serialize;

/// One communication multiplier of the masking experiment.
#[derive(Debug, Clone, Serialize)]
pub struct MaskCurve {
    /// How u is remote: "helper CPU 3" (fetched by the helper) or "node 1" (homed there).
    pub via: String,
    /// Communication multiplier (each fetch is repeated this often).
    pub multiplier: usize,
    /// Baseline fetch-everything phase, ns per pass.
    pub comm_ns: Vec<f64>,
    /// Baseline compute phase, ns per pass.
    pub comp_ns: Vec<f64>,
    /// (T, ns per pass) of the masked runs.
    pub points: Vec<(usize, Vec<f64>)>,
    /// Where u's pages were found, when u is homed on a node (the memory variant).
    pub proof: Option<MemProof>,
    /// How the baseline's passes were sized (None: a fixed count).
    pub base_sizing: Option<Sizing>,
    /// How each T's passes were sized, in the order of `points` (empty: a fixed count).
    pub sizing: Vec<Sizing>,
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

    /// The curve in words at each T ([`masking_text`]).
    pub fn masked_text(&self) -> Vec<String> {
        let base = median(&self.comm_ns)
            .zip(median(&self.comp_ns))
            .map(|(a, b)| a + b);
        self.points
            .iter()
            .zip(self.masked_pct())
            .map(|((_, v), (_, pct))| {
                masking_text(Some(pct).filter(|p| p.is_finite()), median(v), base)
            })
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

/// One masking figure in words: the share of the baseline's communication hidden
/// ("35%"), or, where the masked loop took longer than the whole baseline (a loss
/// beyond -100%), how many times longer ("88.4× slower"), since a figure like -52000%
/// says the same in a form nobody reads; "-" when not measured.
pub fn masking_text(pct: Option<f64>, masked_ns: Option<f64>, baseline_ns: Option<f64>) -> String {
    match (pct, masked_ns, baseline_ns) {
        (Some(p), Some(t), Some(b)) if p < -100.0 && b > 0.0 => format!("{:.1}× slower", t / b),
        (Some(p), ..) => whole_pct(p),
        (None, ..) => "-".into(),
    }
}

/// A percentage to the whole point, without the "-0%" that a figure just below zero
/// rounds to.
pub fn whole_pct(p: f64) -> String {
    let r = p.round();
    format!("{}%", if r == 0.0 { 0.0 } else { r })
}

fn check(a: &Arrays, want: &Arrays, what: &str) -> Result<()> {
    if a.x != want.x {
        return Err(Error::System(format!(
            "data check failed: Loop 7 {what} differs from the plain loop"
        )));
    }
    Ok(())
}

/// The curves for every multiplier: `base(m)` and `masked(T, m)` each run one checked
/// pass; after a warm-up pass each, the baseline and then every T are sized by `rule`.
fn curves(
    via: &str,
    chunks: &[usize],
    multipliers: &[usize],
    rule: &Rule,
    base: &mut dyn FnMut(usize) -> Result<(f64, f64)>,
    masked: &mut dyn FnMut(usize, usize) -> Result<f64>,
) -> Result<Vec<MaskCurve>> {
    // The baseline brings half of what a masking figure may be off by.
    let base_rule = Rule {
        half_width_pts: rule.half_width_pts / 2.0,
        half_width_fraction: 0.0,
        ..*rule
    };
    let mut out = Vec::new();
    for &m in multipliers {
        base(m)?;
        let mut b: (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
        let base_sizing = size(
            &base_rule,
            &mut sizing::clock(),
            &mut b,
            &mut |b| {
                let (f, k) = base(m)?;
                b.0.push(f);
                b.1.push(k);
                Ok(())
            },
            &|b| sizing::baseline_figure(&b.0, &b.1),
        )?;
        let (comm, comp) = b;
        let (mut points, mut sized) = (Vec::new(), Vec::new());
        for &t in chunks {
            masked(t, m)?;
            let mut v = Vec::new();
            sized.push(size(
                rule,
                &mut sizing::clock(),
                &mut v,
                &mut |v| {
                    v.push(masked(t, m)?);
                    Ok(())
                },
                &|v| sizing::mask_figure(&comm, &comp, v),
            )?);
            points.push((t, v));
        }
        out.push(MaskCurve {
            via: via.into(),
            multiplier: m,
            comm_ns: comm,
            comp_ns: comp,
            points,
            proof: None,
            base_sizing: Some(base_sizing),
            sizing: sized,
        });
    }
    Ok(out)
}

fn u_values(u: *mut f64, n: usize) -> Arrays {
    for i in 0..n + 6 {
        // SAFETY: the caller's buffer holds n + 6 doubles.
        unsafe { u.add(i).write((i % 31) as f64 - 7.5) };
    }
    // SAFETY: as above; the buffer outlives the slice.
    let uslice = unsafe { std::slice::from_raw_parts(u as *const f64, n + 6) };
    let mut want = Arrays::new(n);
    loop7::compute(&mut want.x, uslice, &want.z, &want.y, 0, n);
    want
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
    rule: &Rule,
) -> Result<Vec<MaskCurve>> {
    let ubuf = buffer_near(host, c.helper.pu.os, ((n + 6) * 8) as u64, PageSize::Base)?;
    let u = ubuf.as_ptr() as *mut f64;
    let want = u_values(u, n);
    pin_current_thread(host, c.worker.pu.os)?;
    let mut pool = loop7::stacks();
    let via = format!("helper CPU {}", c.helper.pu.os);
    let (r, _) = with_server(host, timer, c.helper.pu.os, |cl| {
        let cl = std::cell::RefCell::new(cl);
        curves(
            &via,
            chunks,
            multipliers,
            rule,
            &mut |m| {
                let mut a = Arrays::new(n);
                let (f, k) = loop7::baseline(&mut cl.borrow_mut(), timer, &mut a, u, m);
                check(&a, &want, "baseline")?;
                Ok((timer.ns(f), timer.ns(k)))
            },
            &mut |t, m| {
                let mut a = Arrays::new(n);
                let ticks = loop7::masked(&mut cl.borrow_mut(), timer, &mut a, u, t, m, &mut pool);
                check(&a, &want, &format!("with T={t}"))?;
                Ok(timer.ns(ticks))
            },
        )
    })?;
    r
}

/// Loop 7 with `u` homed on another node (no helper): the baseline reads all of u,
/// the masked runs prefetch and yield; communication ×m reads m copies of u. All
/// copies are flushed before every pass. On a machine with one memory node u stays
/// local and `via` says so.
pub fn mask_memory(
    host: &Host,
    timer: &Timer,
    c: &Cpus,
    n: usize,
    chunks: &[usize],
    multipliers: &[usize],
    rule: &Rule,
) -> Result<Vec<MaskCurve>> {
    let m = &host.machine;
    let (node, via) = match c.remote_node {
        Some(r) => (r, format!("node {r}")),
        None => {
            let l = crate::memory::node_near(m, c.worker.pu.os)?;
            (l, format!("node {l} (local: no other memory node here)"))
        }
    };
    // One cold copy of u per multiple of the communication: reading ×m means reading
    // m distinct copies, so no flush runs inside a timed pass.
    let (stride, copies) = (
        loop7::copy_stride(n),
        multipliers.iter().copied().max().unwrap_or(1),
    );
    let doubles = stride * copies;
    let mem = resolve_memory(m, &MemSpec::Node(node), PageSize::Base, &[])?;
    let ubuf = Buffer::allocate(host, &mem, (doubles * 8) as u64)?;
    let u = ubuf.as_ptr() as *mut f64;
    let want = u_values(u, n);
    for r in 1..copies {
        // SAFETY: copy r lies inside the buffer, apart from copy 0.
        unsafe { std::ptr::copy_nonoverlapping(u, u.add(r * stride), n + 6) };
    }
    // SAFETY: the buffer holds `doubles` doubles and outlives the slice.
    let us = unsafe { std::slice::from_raw_parts(u as *const f64, doubles) };
    pin_current_thread(host, c.worker.pu.os)?;
    let mut pool = loop7::stacks();
    // SAFETY: the buffer holds `doubles` doubles.
    let flush = || unsafe { numalab_probe::flush::flush_range(u as *const u8, doubles * 8, 64) };
    let proof = ubuf.proof.clone();
    let mut out = curves(
        &via,
        chunks,
        multipliers,
        rule,
        &mut |mu| {
            let mut a = Arrays::new(n);
            flush();
            let (f, k) = loop7::baseline_mem(timer, &mut a, us, mu);
            check(&a, &want, "baseline (memory)")?;
            Ok((timer.ns(f), timer.ns(k)))
        },
        &mut |t, mu| {
            let mut a = Arrays::new(n);
            flush();
            let ticks = loop7::masked_mem(timer, &mut a, us, t, mu, &mut pool);
            check(&a, &want, &format!("(memory) with T={t}"))?;
            Ok(timer.ns(ticks))
        },
    )?;
    for c in &mut out {
        c.proof = Some(proof.clone());
    }
    Ok(out)
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
    /// Stackless state machines, ns per access per pass.
    pub stackless: Vec<f64>,
}

/// What the MLP curve says: the best G of each mode, and where interleaving saturates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MlpSummary {
    /// The G with the fewest ns per access, interleaved, and that figure (median).
    pub best_interleaved: (usize, f64),
    /// The same for coroutines.
    pub best_coroutines: (usize, f64),
    /// Coroutine throughput at its best G over interleaved throughput at its best.
    pub ratio: f64,
    /// Stackless state machines at their best G (absent when not measured).
    pub best_stackless: Option<(usize, f64)>,
    /// Their throughput at that G over interleaved throughput at its best.
    pub stackless_ratio: Option<f64>,
    /// The smallest G whose interleaved figure is within 10% of the best: beyond
    /// it more chains buy little, the core's miss handling is full.
    pub saturates_at: usize,
    /// Accesses in flight at the best G by Little's law, ns(G=1) / ns(best): misses
    /// when the buffer is beyond the caches. Absent without a G = 1 point.
    pub in_flight: Option<f64>,
}

/// Summarise an MLP curve; `None` when it has no points.
pub fn mlp_summary(pts: &[MlpPoint]) -> Option<MlpSummary> {
    let med = |v: &[f64]| median(v).unwrap_or(f64::NAN);
    let best = |f: &dyn Fn(&MlpPoint) -> f64| {
        pts.iter()
            .map(|p| (p.g, f(p)))
            .filter(|x| x.1.is_finite())
            .min_by(|a, b| a.1.total_cmp(&b.1))
    };
    let bi = best(&|p| med(&p.interleaved))?;
    let bc = best(&|p| med(&p.coroutines))?;
    let bs = best(&|p| med(&p.stackless));
    let saturates_at = pts
        .iter()
        .filter(|p| med(&p.interleaved) <= bi.1 * 1.1)
        .map(|p| p.g)
        .min()?;
    let one = pts.iter().find(|p| p.g == 1).map(|p| med(&p.interleaved));
    Some(MlpSummary {
        best_interleaved: bi,
        best_coroutines: bc,
        ratio: bi.1 / bc.1,
        best_stackless: bs,
        stackless_ratio: bs.map(|s| bi.1 / s.1),
        saturates_at,
        in_flight: one.map(|o| o / bi.1),
    })
}

/// An MLP curve with how it was taken.
#[derive(Debug, Clone, Serialize)]
pub struct MlpCurve {
    /// One point per G, in the order asked.
    pub points: Vec<MlpPoint>,
    /// The pages the chains run through.
    pub pages: String,
    /// Coroutines at the largest G with every chain's lines in L1: what switching
    /// alone costs per access, the floor under the coroutine curve. ns per pass.
    pub floor: (usize, Vec<f64>),
}

/// Bytes of the switching-floor buffer for `g` chains: four lines a chain, 16 KiB at
/// G = 64, resident in any L1 after the warm pass.
pub fn floor_bytes(g: usize) -> u64 {
    (g * 4 * 64) as u64
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
) -> Result<MlpCurve> {
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
            stackless: mlp::measure(timer, chains, g, accesses, Mode::Stackless, it).map_err(io)?,
        });
    }
    let top = groups.iter().copied().max().unwrap_or(1);
    let small = buffer_near(host, c.worker.pu.os, floor_bytes(top), PageSize::Base)?;
    // SAFETY: the buffer is live, writable and page aligned.
    let order = unsafe { mlp::link(small.as_ptr(), small.len(), 64, 43) };
    let l1 = Linked {
        base: small.as_ptr(),
        order: &order,
        line: 64,
    };
    let floor = mlp::measure(timer, l1, top, accesses, Mode::Coroutines, it).map_err(io)?;
    Ok(MlpCurve {
        points: out,
        pages,
        floor: (top, floor),
    })
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
    /// How the row's passes were sized (its figure is the overlap).
    pub sizing: Sizing,
}

/// The kinds of work of a threads row, in the order of its passes.
const WORKS: [Work; 3] = [Work::Compute, Work::Communicate, Work::Both];

/// k = 1…5 threads on the worker's CPU sharing computation, communication (lines
/// the helper just wrote) and both; computation sized to `ratio` times less than
/// the communication of one thread (the seed's DS1 1:1, DS2 1:3, DS3 1:6). A pass
/// of a row runs each work and the empty run once; `rule` sizes the row's passes
/// on its overlap, bounded to 0–100 %.
pub fn threads(
    host: &Host,
    timer: &Timer,
    c: &Cpus,
    ratio: usize,
    rule: &Rule,
) -> Result<(Vec<ThreadsRow>, u64)> {
    // Large enough that the work dwarfs creating five threads (tens of µs each).
    let buf = buffer_near(host, c.worker.pu.os, 8 << 20, PageSize::Base)?;
    let (w, h) = (c.worker.pu.os, c.helper.pu.os);
    let run = |k: usize, work: Work, iters: u64, p: usize| {
        overlap::pass(host, timer, w, h, k, work, &buf, 64, iters, p)
    };
    // Size the computation from one thread's communication time, less the cost of
    // creating and joining the thread (a pass with no work).
    let comm: Vec<f64> = (0..5)
        .map(|p| Ok(run(1, Work::Communicate, 0, p)? - run(1, Work::Compute, 0, p)?))
        .collect::<Result<_>>()?;
    pin_current_thread(host, w)?;
    let per_iter = compute_rate::ns_per_iteration(timer);
    let iters = (median(&comm).unwrap_or(0.0).max(0.0) / per_iter / ratio.max(1) as f64) as u64;
    let rule = Rule {
        range: Some((0.0, 100.0)),
        ..*rule
    };
    let mut rows = Vec::new();
    for k in 1..=5 {
        // Samples of computation, communication, both, and the empty run.
        let mut st: [Vec<f64>; 4] = Default::default();
        let sizing = size(
            &rule,
            &mut sizing::clock(),
            &mut st,
            &mut |st| {
                let p = st[3].len() + 1;
                for (i, work) in WORKS.into_iter().enumerate() {
                    st[i].push(run(k, work, iters, p)?);
                }
                st[3].push(run(k, Work::Compute, 0, p)?);
                Ok(())
            },
            &|st| sizing::overlap_figure(&st[0], &st[1], &st[2], &st[3]),
        )?;
        let [comp, comm, both, empty] = st;
        rows.push(ThreadsRow {
            k,
            times: WORKS.into_iter().zip([comp, comm, both]).collect(),
            empty,
            sizing,
        });
    }
    Ok((rows, iters))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(g: usize, i: f64, c: f64) -> MlpPoint {
        MlpPoint {
            g,
            interleaved: vec![i, i * 1.01, i * 0.99],
            coroutines: vec![c, c * 1.02, c * 0.98],
            stackless: vec![c * 0.9],
        }
    }

    #[test]
    fn a_shared_memory_curve_reads_as_share_hidden_or_as_times_slower() {
        let c = MaskCurve {
            via: "helper CPU 1".into(),
            multiplier: 1,
            comm_ns: vec![100.0; 3],
            comp_ns: vec![300.0; 3],
            // 8000 ns: 76× the communication lost; 450: -50%; 350: 50% hidden.
            points: vec![
                (1, vec![8000.0; 3]),
                (16, vec![450.0; 3]),
                (64, vec![350.0; 3]),
            ],
            proof: None,
            base_sizing: None,
            sizing: Vec::new(),
        };
        assert_eq!(c.masked_text(), ["20.0× slower", "-50%", "50%"]);
        assert_eq!(masking_text(None, None, None), "-");
        assert_eq!(masking_text(Some(-0.3), None, None), "0%");
        assert_eq!(whole_pct(-0.6), "-1%");
        assert_eq!(whole_pct(35.4), "35%");
    }

    #[test]
    fn the_mlp_summary_finds_each_modes_best_and_the_knee() {
        let pts = [
            pt(1, 160.0, 158.0),
            pt(8, 20.0, 22.0),
            pt(16, 10.0, 12.0),
            pt(32, 5.4, 7.0),
            pt(64, 5.0, 5.5),
        ];
        let s = mlp_summary(&pts).unwrap();
        assert_eq!(s.best_interleaved, (64, 5.0));
        assert_eq!(s.best_coroutines.0, 64);
        assert!((s.ratio - 5.0 / 5.5).abs() < 1e-9);
        assert_eq!(s.best_stackless.unwrap().0, 64);
        assert!((s.stackless_ratio.unwrap() - 5.0 / (5.5 * 0.9)).abs() < 1e-9);
        assert_eq!(s.saturates_at, 32, "5.4 is within 10% of 5.0");
        assert!((s.in_flight.unwrap() - 32.0).abs() < 1e-9);
        assert_eq!(mlp_summary(&[]), None);
        assert_eq!(mlp_summary(&pts[1..]).unwrap().in_flight, None);
    }
}
