//! Measuring a placement plan: each point is one probe program (owners write in
//! setup, readers read in the timed part); every reader's sum is checked against
//! the values the owners wrote in the last pass.

use crate::domains::letter_of;
use crate::memory::buffer_near;
use crate::placement::{Curve, Plan};
use crate::settled;
use numalab_probe::script::{value, Lines, Program, ProgramResult, Script, Step};
use numalab_probe::sync::SyncKind;
use numalab_probe::Timer;
use numalab_results::disturb::Rules;
use numalab_results::settle::Settled;
use numalab_results::stats::median;
use numalab_results::Settle;
use numalab_topo::bind::PinProof;
use numalab_topo::buffer::MemProof;
use numalab_topo::{Error, Host, PageSize, Result};

/// One measured point of a curve.
#[derive(Debug, Clone)]
pub struct Point {
    /// Index of the curve in the plan.
    pub curve: usize,
    /// Readers at this point.
    pub readers: usize,
    /// ns per unit per pass, averaged over all readers.
    pub overall: Vec<f64>,
    /// ns per unit per pass, averaged over each domain's readers (letter, samples).
    pub per_domain: Vec<(String, Vec<f64>)>,
    /// Each reader's median ns per unit: (CPU, domain letter, ns).
    pub per_reader: Vec<(u32, String, f64)>,
    /// Pinning proof: owners, then readers.
    pub pins: Vec<PinProof>,
    /// Where the data set's pages were found.
    pub home: MemProof,
    /// How the point's figure (the readers' mean time) settled.
    pub settle: Settle,
}

/// The scripts of point `k` of curve `c`.
pub fn scripts(plan: &Plan, c: &Curve, k: usize) -> Vec<Script> {
    let mut out: Vec<Script> = (0..c.owners.len())
        .map(|j| {
            let (first, count) = plan.owner_lines(c, j, k);
            Script {
                cpu: c.owners[j],
                setup: vec![Step::Write(Lines::new(0, first, count))],
                timed: vec![],
            }
        })
        .collect();
    for (i, &cpu) in c.readers[..k].iter().enumerate() {
        let (first, count, start) = plan.reader_lines(c, i, k);
        out.push(Script {
            cpu,
            setup: vec![],
            timed: vec![Step::Read(Lines::new(0, first, count).staggered(start))],
        });
    }
    out
}

/// Every reader's ns per unit in each pass, its CPU and domain letter.
pub(super) type Readers = Vec<(u32, String)>;

/// Measure every point, each settled on its readers' mean time per pass (`rules`:
/// the user's budget and tolerance); `finished(point, done, total)` after each.
pub fn measure(
    host: &Host,
    timer: &Timer,
    plan: &Plan,
    rules: &Rules,
    iterations: usize,
    mut finished: impl FnMut(&Point, usize, usize),
) -> Result<Vec<Point>> {
    let total = plan.points();
    let mut out = Vec::new();
    for (ci, c) in plan.curves.iter().enumerate() {
        let max_k = c.counts.iter().copied().max().unwrap_or(0);
        let (lines, _) = plan.point_lines(c, max_k);
        // The data lives on the first owner's node.
        let buf = buffer_near(
            host,
            c.owners[0],
            (lines * plan.line) as u64,
            PageSize::Base,
        )?;
        for &k in &c.counts {
            let mut pins = None;
            let s = settled::median(
                rules,
                "read_time",
                iterations,
                |v: &Vec<f64>| mean(v),
                |n| {
                    let prog = Program {
                        host,
                        timer,
                        bufs: vec![&buf],
                        line: plan.line,
                        scripts: scripts(plan, c, k),
                        sync: SyncKind::Central,
                    };
                    let r = prog.run(n)?;
                    let per_pass = reader_passes(plan, c, k, timer, &r, n)?;
                    pins.get_or_insert(r.pins);
                    Ok(settled::passes(&r.disturb, per_pass))
                },
            )?;
            let readers: Readers = c.readers[..k]
                .iter()
                .map(|&cpu| (cpu, letter_of(&plan.domains, cpu).to_string()))
                .collect();
            out.push(point_of(
                ci,
                &readers,
                s,
                pins.unwrap_or_default(),
                buf.proof.clone(),
            ));
            finished(out.last().expect("just pushed"), out.len(), total);
        }
    }
    Ok(out)
}

/// Each pass's ns per unit of every reader, after checking every reader read the
/// values its owners wrote in the last of the `n` passes.
fn reader_passes(
    plan: &Plan,
    c: &Curve,
    k: usize,
    timer: &Timer,
    r: &ProgramResult,
    n: usize,
) -> Result<Vec<Vec<f64>>> {
    let last = Program::last_pass(n);
    let owners = c.owners.len();
    let units = |count: usize| (count / plan.unit_lines).max(1) as f64;
    let mut per_reader = Vec::new();
    for (i, &cpu) in c.readers[..k].iter().enumerate() {
        let (first, count, _) = plan.reader_lines(c, i, k);
        let want = (first..first + count).fold(0u64, |s, l| s.wrapping_add(value(last, 0, l)));
        if r.read_sums[owners + i] != want {
            return Err(Error::System(format!(
                "data check failed: reader on CPU {cpu} did not read the values its owners wrote"
            )));
        }
        let ticks = &r.ticks[owners + i];
        per_reader.push(
            ticks
                .iter()
                .map(|&t| timer.ns(t) / units(count))
                .collect::<Vec<_>>(),
        );
    }
    Ok((0..n)
        .map(|p| per_reader.iter().map(|s| s[p]).collect())
        .collect())
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// A point from its settled passes (each pass: every reader's ns per unit): the
/// passes the statistics use, averaged over all readers, each domain's, and each
/// reader's median.
pub(super) fn point_of(
    curve: usize,
    readers: &Readers,
    s: Settled<Vec<f64>>,
    pins: Vec<PinProof>,
    home: MemProof,
) -> Point {
    let used = s.passes.used();
    let mean_over = |pick: &dyn Fn(&str) -> bool| -> Vec<f64> {
        used.iter()
            .map(|pass| {
                let v: Vec<f64> = readers
                    .iter()
                    .zip(pass)
                    .filter(|((_, d), _)| pick(d))
                    .map(|(_, x)| *x)
                    .collect();
                mean(&v)
            })
            .collect()
    };
    let mut letters: Vec<String> = readers.iter().map(|(_, d)| d.clone()).collect();
    letters.sort();
    letters.dedup();
    Point {
        curve,
        readers: readers.len(),
        overall: mean_over(&|_| true),
        per_domain: letters
            .iter()
            .map(|l| (l.clone(), mean_over(&|d| d == l)))
            .collect(),
        per_reader: readers
            .iter()
            .enumerate()
            .map(|(i, (c, d))| {
                let v: Vec<f64> = used.iter().map(|p| p[i]).collect();
                (*c, d.clone(), median(&v).unwrap_or(f64::NAN))
            })
            .collect(),
        pins,
        home,
        settle: s.settle,
    }
}
