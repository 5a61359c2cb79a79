//! `monitor` (snsar): periodic per-node lines of what the OS and, where present,
//! the memory controllers report; optionally the same samples as a trace.

use crate::metrics::{series, Index};
use crate::procfs::Roots;
use crate::system::System;
use crate::trace::{End, Entry, NodeInfo, Trace, Writer};
use numalab_results::Provenance;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What to monitor.
#[derive(Debug, Clone)]
pub struct Options {
    /// Interval between samples.
    pub interval: Duration,
    /// Number of intervals (None: until interrupted).
    pub count: Option<u64>,
    /// Nodes to show (all when empty).
    pub nodes: Vec<u32>,
    /// Also stream a trace here.
    pub output: Option<PathBuf>,
    /// Pin the sampler to this CPU.
    pub runon: Option<u32>,
    /// Open memory-controller counters when possible.
    pub counters: bool,
}

/// One printed line per node and interval.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Seconds since the start.
    pub t_s: f64,
    /// Node.
    pub node: u32,
    /// Busy % of the node's CPUs.
    pub cpu_busy: Option<f64>,
    /// Free MiB.
    pub free_mib: Option<f64>,
    /// Pages allocated per second.
    pub alloc: Option<f64>,
    /// numa_miss pages per second.
    pub miss: Option<f64>,
    /// Read MB/s (memory controller), when counters exist.
    pub read_bw: Option<f64>,
    /// Write MB/s (memory controller), when counters exist.
    pub write_bw: Option<f64>,
    /// System-wide pages migrated per second (NUMA balancing).
    pub migrated: Option<f64>,
}

impl Line {
    /// The line as `monitor` prints it, "-" where a source is missing.
    pub fn text(&self) -> String {
        let opt = |v: Option<f64>, d: usize| v.map_or("-".into(), |x| format!("{x:.d$}"));
        format!(
            "{:>8.2} {:>5} {:>6} {:>10} {:>11} {:>10} {:>10} {:>10} {:>10}",
            self.t_s,
            self.node,
            opt(self.cpu_busy, 1),
            opt(self.free_mib, 0),
            opt(self.alloc, 0),
            opt(self.miss, 0),
            opt(self.read_bw, 0),
            opt(self.write_bw, 0),
            opt(self.migrated, 0),
        )
    }
}

/// The lines for the last interval of a (growing) trace.
pub fn last_lines(t: &Trace, nodes: &[u32]) -> Vec<Line> {
    let ix = Index::new(t);
    let tmax = t.samples.iter().map(|s| s.t_ns).max().unwrap_or(0);
    let last = |m: &str, obj: &str| {
        series(&ix, m)
            .into_iter()
            .find(|p| p.t_ns == tmax && p.obj == obj)
            .map(|p| p.value)
    };
    t.header
        .nodes
        .iter()
        .filter(|n| nodes.is_empty() || nodes.contains(&n.id))
        .map(|n| {
            let id = format!("n{}", n.id);
            Line {
                t_s: tmax as f64 / 1e9,
                node: n.id,
                cpu_busy: last("node.cpu_busy", &id),
                free_mib: last("node.mem_free", &id),
                alloc: last("node.alloc_rate", &id),
                miss: last("node.alloc_miss_rate", &id),
                read_bw: last("node.read_bw", &id),
                write_bw: last("node.write_bw", &id),
                migrated: last("system.migrate_rate", "sys"),
            }
        })
        .collect()
}

/// Sample every interval; `on_lines` gets each interval's lines (after the first sample);
/// `stop` gives the signal that ends the sampling, once one came.
pub fn monitor(
    host: &numalab_topo::Host,
    opts: &Options,
    provenance: Provenance,
    stop: &dyn Fn() -> Option<i32>,
    on_lines: &mut dyn FnMut(&Trace, &[Line]),
) -> Result<Trace, String> {
    let nodes: Vec<NodeInfo> = crate::system::nodes_of(&host.machine);
    if let Some(cpu) = opts.runon {
        numalab_topo::bind::pin_current_thread(host, cpu).map_err(|e| e.to_string())?;
    }
    let mut system = System::new(Roots::default(), nodes.clone(), opts.counters);
    let h = crate::record::header(
        "monitor",
        &[],
        opts.interval,
        0,
        opts.runon,
        nodes,
        provenance,
        system.sources(),
        system.uncore_descs(),
        system.fields(),
    );
    let mut t = Trace {
        header: h,
        objects: system.objects(),
        samples: vec![],
        events: vec![],
        end: None,
        torn_tail: false,
    };
    let mut w = open_writer(opts.output.as_deref(), &t)?;
    let start = Instant::now();
    let reason = sample_until_done(&mut system, opts, &mut w, &mut t, start, stop, on_lines)?;
    let end = End {
        t_ns: start.elapsed().as_nanos() as u64,
        reason,
        exit_code: None,
        signal: None,
        sampler_cpu_ns: crate::record::own_cpu_ns(),
    };
    if let Some(w) = w.as_mut() {
        end_writer(w, &end)?;
    }
    t.end = Some(end);
    Ok(t)
}

/// The trace file, when asked for, with the header and the objects written.
fn open_writer(output: Option<&std::path::Path>, t: &Trace) -> Result<Option<Writer>, String> {
    let Some(p) = output else {
        return Ok(None);
    };
    let mut w = Writer::create(p, &t.header).map_err(|e| {
        format!(
            "invalid output '{}': cannot write the trace: {e}",
            p.display()
        )
    })?;
    for o in &t.objects {
        w.put(&Entry::Object(o.clone()))
            .map_err(|e| e.to_string())?;
    }
    Ok(Some(w))
}

/// Sample every interval into `t` (and the file) until the count is reached or a
/// signal came; `on_lines` gets each interval's lines. Returns why sampling ended.
fn sample_until_done(
    system: &mut System,
    opts: &Options,
    w: &mut Option<Writer>,
    t: &mut Trace,
    start: Instant,
    stop: &dyn Fn() -> Option<i32>,
    on_lines: &mut dyn FnMut(&Trace, &[Line]),
) -> Result<String, String> {
    let mut k = 0u64;
    loop {
        let t_ns = start.elapsed().as_nanos() as u64;
        let s = system.sample(t_ns);
        if let Some(w) = w.as_mut() {
            for x in &s {
                w.put(&Entry::Sample(x.clone()))
                    .map_err(|e| e.to_string())?;
            }
            w.flush().map_err(|e| e.to_string())?;
        }
        // Keep only the last two rounds in memory: monitor may run for days.
        let keep_from = t.samples.len().saturating_sub(s.len());
        t.samples.drain(..keep_from);
        t.samples.extend(s);
        if k > 0 {
            on_lines(t, &last_lines(t, &opts.nodes));
        }
        if opts.count.is_some_and(|c| k >= c) {
            return Ok("count reached".to_string());
        }
        k += 1;
        let next = opts.interval * (k as u32);
        std::thread::sleep(next.saturating_sub(start.elapsed()));
        if let Some(sig) = stop() {
            return Ok(format!(
                "interrupted by {}",
                numalab_results::interrupt::name(sig)
            ));
        }
    }
}

/// Write the end and flush; a trace that had to move to a fallback file is whole
/// there, said as the error that names it.
fn end_writer(w: &mut Writer, end: &End) -> Result<(), String> {
    w.put(&Entry::End(end.clone())).map_err(|e| e.to_string())?;
    w.flush().map_err(|e| e.to_string())?;
    match w.moved() {
        Some(why) => Err(why.to_string()),
        None => Ok(()),
    }
}
