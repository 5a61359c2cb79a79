//! Measuring a placement plan: each point is one probe program (owners write in
//! setup, readers read in the timed part); every reader's sum is checked against
//! the values the owners wrote in the last pass.

use crate::domains::letter_of;
use crate::memory::buffer_near;
use crate::placement::{Curve, Plan};
use numalab_probe::script::{value, Lines, Program, Script, Step};
use numalab_probe::sync::SyncKind;
use numalab_probe::Timer;
use numalab_results::stats::median;
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

/// Measure every point; `finished(point, done, total)` after each.
pub fn measure(
    host: &Host,
    timer: &Timer,
    plan: &Plan,
    iterations: usize,
    mut finished: impl FnMut(&Point, usize, usize),
) -> Result<Vec<Point>> {
    let total = plan.points();
    let mut done = 0;
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
            let prog = Program {
                host,
                timer,
                bufs: vec![&buf],
                line: plan.line,
                scripts: scripts(plan, c, k),
                sync: SyncKind::Central,
            };
            let r = prog.run(iterations)?;
            let last = Program::last_pass(iterations);
            let owners = c.owners.len();
            let units = |count: usize| (count / plan.unit_lines).max(1) as f64;
            let mut per_reader_samples = Vec::new();
            for (i, &cpu) in c.readers[..k].iter().enumerate() {
                let (first, count, _) = plan.reader_lines(c, i, k);
                let want =
                    (first..first + count).fold(0u64, |s, l| s.wrapping_add(value(last, 0, l)));
                if r.read_sums[owners + i] != want {
                    return Err(Error::System(format!(
                        "data check failed: reader on CPU {cpu} did not read the values its owners wrote"
                    )));
                }
                let ns: Vec<f64> = r.ticks[owners + i]
                    .iter()
                    .map(|&t| timer.ns(t) / units(count))
                    .collect();
                per_reader_samples.push((cpu, letter_of(&plan.domains, cpu).to_string(), ns));
            }
            let mean_over = |pick: &dyn Fn(&str) -> bool| -> Vec<f64> {
                let chosen: Vec<&Vec<f64>> = per_reader_samples
                    .iter()
                    .filter(|(_, d, _)| pick(d))
                    .map(|(_, _, s)| s)
                    .collect();
                (0..iterations)
                    .map(|p| chosen.iter().map(|s| s[p]).sum::<f64>() / chosen.len() as f64)
                    .collect()
            };
            let mut letters: Vec<String> = per_reader_samples
                .iter()
                .map(|(_, d, _)| d.clone())
                .collect();
            letters.sort();
            letters.dedup();
            out.push(Point {
                curve: ci,
                readers: k,
                overall: mean_over(&|_| true),
                per_domain: letters
                    .iter()
                    .map(|l| (l.clone(), mean_over(&|d| d == l)))
                    .collect(),
                per_reader: per_reader_samples
                    .iter()
                    .map(|(c, d, s)| (*c, d.clone(), median(s).unwrap_or(f64::NAN)))
                    .collect(),
                pins: r.pins,
                home: buf.proof.clone(),
            });
            done += 1;
            finished(out.last().expect("just pushed"), done, total);
        }
    }
    Ok(out)
}
