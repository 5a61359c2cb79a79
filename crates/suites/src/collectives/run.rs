//! Planning, measuring and checking the collectives suite, and fitting the seed's
//! cost models to what was measured.

use super::{expect, Expect, Kind, BARRIER_REPS};
use crate::collectives;
use crate::domains::{self, Ordered};
use crate::memory::{buffer_near, first_cpu};
use crate::settled;
use numalab_bench::helpers::closeness;
use numalab_probe::script::{value, Lines, Program, Script, Step};
use numalab_probe::sync::SyncKind;
use numalab_probe::Timer;
use numalab_results::disturb::Rules;
use numalab_results::linfit::{self, LinearFit};
use numalab_results::Settle;
use numalab_topo::bind::PinProof;
use numalab_topo::buffer::Buffer;
use numalab_topo::{Error, Host, Level, Machine, PageSize, Result};
use serde::Serialize;

/// What the user chose.
#[derive(Debug, Clone)]
pub struct Config {
    /// Domain level that orders the threads (None: the machine's default).
    pub level: Option<Level>,
    /// Thread counts P (None: 2, 4, 8, … and every CPU).
    pub threads: Option<Vec<usize>>,
    /// Block sizes in bytes per thread.
    pub sizes: Vec<u64>,
    /// Barrier algorithms to time alone.
    pub barriers: Vec<SyncKind>,
    /// Barrier used between the steps of multi-stage collectives.
    pub sync: SyncKind,
    /// Line size in bytes.
    pub line: usize,
}

/// One measurement of the plan.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct Item {
    /// The collective.
    pub kind: Kind,
    /// Threads.
    pub p: usize,
    /// Lines per block (0 for barriers).
    pub lines: usize,
}

/// A remote-read pair: the root wrote, `reader` reads.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Pair {
    /// Reader CPU.
    pub reader: u32,
    /// The innermost level root and reader share ("core", "l2", "l3", "die", "pkg", "node", "machine").
    pub shares: String,
    /// Hops between their nodes, where known.
    pub hops: Option<u32>,
}

/// The plan.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Plan {
    /// Level ordering the threads.
    pub level: Level,
    /// Domains, the root's first.
    pub domains: Vec<Ordered>,
    /// CPUs in thread order (thread 0, the root, first).
    pub cpus: Vec<u32>,
    /// Thread counts.
    pub threads: Vec<usize>,
    /// Lines per block, per size.
    pub block_lines: Vec<usize>,
    /// Block used for the remote-read pairs.
    pub pair_lines: usize,
    /// Remote-read pairs, nearest first.
    pub pairs: Vec<Pair>,
    /// Collective measurements.
    pub items: Vec<Item>,
    /// Barrier between collective stages.
    pub sync: SyncKind,
    /// Line size in bytes.
    pub line: usize,
}

fn shares(m: &Machine, a: u32, b: u32) -> (String, Option<u32>) {
    let (pa, pb) = (m.pu(a).expect("usable"), m.pu(b).expect("usable"));
    let hops = match (pa.node, pb.node) {
        (Some(x), Some(y)) => m.distances.hops_between(x, y),
        _ => None,
    };
    let name = if pa.core == pb.core {
        "core"
    } else {
        ["l2", "l3", "die", "pkg", "node", "machine"][closeness(m, pa, pb).0 as usize]
    };
    (name.into(), hops)
}

/// Thread counts P: the user's (each a usable CPU count), or 2, 4, 8, … and every CPU.
fn thread_counts(threads: Option<&[usize]>, n: usize) -> Result<Vec<usize>> {
    Ok(match threads {
        Some(t) => {
            if let Some(&bad) = t.iter().find(|&&p| p == 0 || p > n) {
                return Err(Error::bad(
                    "--threads",
                    bad.to_string(),
                    format!("1 to {n} (the usable CPUs)"),
                ));
            }
            let mut t = t.to_vec();
            t.sort_unstable();
            t.dedup();
            t
        }
        None => {
            let mut t: Vec<usize> = (1..).map(|i| 1usize << i).take_while(|&p| p <= n).collect();
            t.push(n.max(1));
            t.sort_unstable();
            t.dedup();
            t
        }
    })
}

/// Lines per block for each size (at least one line each), sorted, once each.
fn lines_of(sizes: &[u64], line: usize) -> Result<Vec<usize>> {
    let mut block_lines = Vec::new();
    for &s in sizes {
        if (s as usize) < line {
            return Err(Error::bad(
                "--sizes",
                s.to_string(),
                format!("block sizes of at least one {line}-byte line"),
            ));
        }
        block_lines.push(s as usize / line);
    }
    block_lines.sort_unstable();
    block_lines.dedup();
    if block_lines.is_empty() {
        return Err(Error::bad("--sizes", "", "at least one block size"));
    }
    Ok(block_lines)
}

impl Plan {
    /// Build the plan; bad choices are user errors naming the value.
    pub fn new(m: &Machine, c: &Config) -> Result<Plan> {
        let level = c.level.unwrap_or_else(|| m.default_level());
        let first = first_cpu(m)?;
        let domains = domains::order(m, level, first)?;
        let cpus: Vec<u32> = domains
            .iter()
            .flat_map(|d| d.cpus.iter().copied())
            .collect();
        let n = cpus.len();
        let threads = thread_counts(c.threads.as_deref(), n)?;
        let line = c.line.max(8);
        let block_lines = lines_of(&c.sizes, line)?;
        let pair_lines = *block_lines.last().expect("not empty");
        let pairs = cpus[1..]
            .iter()
            .map(|&r| {
                let (s, hops) = shares(m, first, r);
                Pair {
                    reader: r,
                    shares: s,
                    hops,
                }
            })
            .collect();
        let mut items = Vec::new();
        for &p in &threads {
            for kind in collectives::kinds(p, &c.barriers) {
                match kind {
                    Kind::Barrier(_) => items.push(Item { kind, p, lines: 0 }),
                    _ => items.extend(block_lines.iter().map(|&l| Item { kind, p, lines: l })),
                }
            }
        }
        for it in &items {
            check_item_memory(m, &cpus, *it, line)?;
        }
        Ok(Plan {
            level,
            domains,
            cpus,
            threads,
            block_lines,
            pair_lines,
            pairs,
            items,
            sync: c.sync,
            line,
        })
    }
}

/// One measured collective.
#[derive(Debug, Clone)]
pub struct Measured {
    /// What was measured.
    pub item: Item,
    /// Completion time per pass (the slowest thread), ns; per barrier for barriers.
    pub time_ns: Vec<f64>,
    /// Each thread's mean time over the passes, ns (per barrier for barriers).
    pub thread_mean_ns: Vec<f64>,
    /// Pinning proof.
    pub pins: Vec<PinProof>,
    /// Pages per node of every buffer, summed.
    pub pages_per_node: std::collections::BTreeMap<u32, u64>,
    /// How its median time settled.
    pub settle: Settle,
}

/// One measured remote-read pair: ns per line read.
#[derive(Debug, Clone)]
pub struct PairResult {
    /// The pair.
    pub pair: Pair,
    /// ns per line, per pass.
    pub ns: Vec<f64>,
    /// Pinning proof.
    pub pins: Vec<PinProof>,
    /// How its median settled.
    pub settle: Settle,
}

/// Refuse an item whose buffers (what [`measure_item`] allocates near each of its
/// threads, all held at once) would not fit on their nodes.
fn check_item_memory(m: &Machine, cpus: &[u32], it: Item, line: usize) -> Result<()> {
    if matches!(it.kind, Kind::Barrier(_)) {
        return Ok(());
    }
    let (p, n) = (it.p, it.lines);
    let need = cpus[..p]
        .iter()
        .enumerate()
        .map(|(t, &cpu)| {
            // Saturating: a block of exabytes must be refused, not wrap to a small need.
            let src = it.kind.src_lines(t, p, 1);
            let blocks = (src + p + 1) as u64;
            let bytes = blocks.saturating_mul(n as u64).saturating_mul(line as u64);
            Ok((crate::memory::node_near(m, cpu)?, bytes))
        })
        .collect::<Result<Vec<_>>>()?;
    let what = format!(
        "invalid --sizes item '{}': {} P={p}'s buffers",
        numalab_topo::fmt_bytes((n as u64).saturating_mul(line as u64)),
        it.kind.name()
    );
    numalab_topo::plan::check_per_node(m, &what, &need)
}

fn node_buffer(host: &Host, cpu: u32, lines: usize, line: usize) -> Result<Buffer> {
    buffer_near(host, cpu, (lines.max(1) * line) as u64, PageSize::Base)
}

/// Check what the last pass moved; an error names the first wrong word.
fn check(item: &Item, prog: &Program, last: usize) -> Result<()> {
    let fail = |b: usize, l: usize| {
        Err(Error::System(format!(
            "data check failed: {} P={} left a wrong word in buffer {b} line {l}",
            item.kind.name(),
            item.p
        )))
    };
    match expect(item.kind, item.p, item.lines) {
        Expect::Nothing => {}
        Expect::Moved(v) => {
            for (b, l, sb, sl) in v {
                if prog.word(b, l) != Some(value(last, sb, sl)) {
                    return fail(b, l);
                }
            }
        }
        Expect::Reduced { op, holders } => {
            for t in holders {
                for i in 0..item.lines {
                    let want = (1..item.p).fold(value(last, collectives::src(0), i), |a, j| {
                        op.apply(a, value(last, collectives::src(j), i))
                    });
                    if prog.word(collectives::res(t), i) != Some(want) {
                        return fail(collectives::res(t), i);
                    }
                }
            }
        }
    }
    Ok(())
}

/// Measure one collective and check the data it moved.
pub fn measure_item(
    host: &Host,
    timer: &Timer,
    plan: &Plan,
    item: Item,
    rules: &Rules,
    iterations: usize,
) -> Result<Measured> {
    let cpus = &plan.cpus[..item.p];
    let n = item.lines;
    let mut bufs = Vec::new();
    if !matches!(item.kind, Kind::Barrier(_)) {
        for (t, &cpu) in cpus.iter().enumerate() {
            bufs.push(node_buffer(
                host,
                cpu,
                item.kind.src_lines(t, item.p, n),
                plan.line,
            )?);
            bufs.push(node_buffer(host, cpu, item.p * n, plan.line)?);
            bufs.push(node_buffer(host, cpu, n, plan.line)?);
        }
    }
    let prog = Program {
        host,
        timer,
        bufs: bufs.iter().collect(),
        line: plan.line,
        scripts: collectives::scripts(item.kind, cpus, n),
        sync: match item.kind {
            Kind::Barrier(s) => s,
            _ => plan.sync,
        },
    };
    let mut pins = None;
    let s = settled::median(
        rules,
        "time",
        iterations,
        |v: &TimeThreads| v.0,
        |n| {
            let r = prog.run(n)?;
            check(&item, &prog, Program::last_pass(n))?;
            let passes = item_passes(item.kind, timer, &r.ticks, n);
            pins.get_or_insert(r.pins);
            Ok(settled::passes(&r.disturb, passes))
        },
    )?;
    let used = s.passes.used();
    let time_ns = used.iter().map(|v| v.0).collect();
    let thread_mean_ns = (0..used.first().map_or(0, |v| v.1.len()))
        .map(|t| used.iter().map(|v| v.1[t]).sum::<f64>() / used.len().max(1) as f64)
        .collect();
    let mut pages = std::collections::BTreeMap::new();
    for b in &bufs {
        for (node, c) in &b.proof.pages_per_node {
            *pages.entry(*node).or_insert(0) += c;
        }
    }
    Ok(Measured {
        item,
        time_ns,
        thread_mean_ns,
        pins: pins.unwrap_or_default(),
        pages_per_node: pages,
        settle: s.settle,
    })
}

/// A pass of a collective: the slowest thread's time and every thread's, ns.
type TimeThreads = (f64, Vec<f64>);

/// Each of `n` passes' times (per barrier for barriers) from every thread's ticks.
fn item_passes(kind: Kind, timer: &Timer, ticks: &[Vec<u64>], n: usize) -> Vec<TimeThreads> {
    let per = if matches!(kind, Kind::Barrier(_)) {
        BARRIER_REPS as f64
    } else {
        1.0
    };
    (0..n)
        .map(|i| {
            let t: Vec<f64> = ticks.iter().map(|t| timer.ns(t[i]) / per).collect();
            (t.iter().copied().fold(0.0, f64::max), t)
        })
        .collect()
}

/// Measure one remote-read pair: the root writes the block, the reader reads it.
pub fn measure_pair(
    host: &Host,
    timer: &Timer,
    plan: &Plan,
    pair: &Pair,
    rules: &Rules,
    iterations: usize,
) -> Result<PairResult> {
    let n = plan.pair_lines;
    let buf = node_buffer(host, plan.cpus[0], n, plan.line)?;
    let block = Lines::new(0, 0, n);
    let prog = Program {
        host,
        timer,
        bufs: vec![&buf],
        line: plan.line,
        scripts: vec![
            Script {
                cpu: plan.cpus[0],
                setup: vec![Step::Write(block)],
                timed: vec![],
            },
            Script {
                cpu: pair.reader,
                setup: vec![],
                timed: vec![Step::Read(block)],
            },
        ],
        sync: plan.sync,
    };
    let mut pins = None;
    let s = settled::median(
        rules,
        "read_time",
        iterations,
        |v: &f64| *v,
        |k| {
            let r = prog.run(k)?;
            let last = Program::last_pass(k);
            let want = (0..n).fold(0u64, |s, l| s.wrapping_add(value(last, 0, l)));
            if r.read_sums[1] != want {
                return Err(Error::System(format!(
                    "data check failed: CPU {} misread the root's block",
                    pair.reader
                )));
            }
            let ns = r.ticks[1].iter().map(|&t| timer.ns(t) / n as f64).collect();
            pins.get_or_insert(r.pins);
            Ok(settled::passes(&r.disturb, ns))
        },
    )?;
    Ok(PairResult {
        pair: pair.clone(),
        ns: s.passes.used(),
        pins: pins.unwrap_or_default(),
        settle: s.settle,
    })
}

/// The seed's cost models fitted to one collective's medians (µs over P and lines).
pub fn fit_models(
    kind: Kind,
    points: &[(usize, usize, f64)],
) -> Vec<std::result::Result<LinearFit, String>> {
    let log2 = |p: usize| (p as f64).log2();
    let mut out = Vec::new();
    let y: Vec<f64> = points.iter().map(|x| x.2).collect();
    if let Kind::Barrier(_) = kind {
        let rows = |f: &dyn Fn(usize) -> f64| {
            points
                .iter()
                .map(|&(p, _, _)| vec![1.0, f(p)])
                .collect::<Vec<_>>()
        };
        out.push(linfit::fit(
            "T = C0 + C1·P",
            &[("C0", "1"), ("C1", "P")],
            &rows(&|p| p as f64),
            &y,
        ));
        out.push(linfit::fit(
            "T = C0 + C1·log2 P",
            &[("C0", "1"), ("C1", "log2 P")],
            &rows(&log2),
            &y,
        ));
        return out;
    }
    let rows = |f: &dyn Fn(usize) -> f64| {
        points
            .iter()
            .map(|&(p, l, _)| vec![1.0, f(p), l as f64])
            .collect::<Vec<_>>()
    };
    out.push(linfit::fit(
        "T = C0 + C1·P + C2·lines",
        &[("C0", "1"), ("C1", "P"), ("C2", "lines")],
        &rows(&|p| p as f64),
        &y,
    ));
    out.push(linfit::fit(
        "T = C0 + C1·log2 P + C2·lines",
        &[("C0", "1"), ("C1", "log2 P"), ("C2", "lines")],
        &rows(&log2),
        &y,
    ));
    if kind == Kind::AllgatherTree {
        let r: Vec<Vec<f64>> = points
            .iter()
            .map(|&(p, l, _)| vec![1.0, log2(p), p as f64, l as f64])
            .collect();
        out.push(linfit::fit(
            "T = C0 + C5·log2 P + C6·P + C7·lines",
            &[("C0", "1"), ("C5", "log2 P"), ("C6", "P"), ("C7", "lines")],
            &r,
            &y,
        ));
    }
    out
}
