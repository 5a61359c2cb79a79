//! The short memory check a rank runs on its host: per NUMA node with CPUs in the
//! rank's share of the machine, the idle latency of a dependent chase on the node's
//! own memory and the read bandwidth of one core and of all its cores (one thread per
//! core), with bench's own loops, page placement proved as they prove it; and what the
//! passes saw of the host's CPU quota (a cgroup's throttling during a pass).

use super::data::{NodeMemory, Throttling};
use numalab_bench::bandwidth::{self, BwPlan};
use numalab_bench::latency::{self, LatencyPlan};
use numalab_bench::matrix::cells;
use numalab_bench::sizing;
use numalab_probe::bw::BwKernel;
use numalab_probe::{LineState, Request, Timer};
use numalab_results::disturb::{cpu_quota, PassLog, Policy, Rules};
use numalab_results::stats::median;
use numalab_topo::plan::resolve_memory;
use numalab_topo::{Host, Level, Machine, MemSpec, PageSize, ThreadPlacement};

/// Bytes per bandwidth requestor: past the caches, kept short.
fn bw_size(m: &Machine, n: usize) -> u64 {
    sizing::streaming(m, n)
}

fn keep_every_pass() -> Rules {
    Rules {
        policy: Policy::Keep,
        settle: numalab_results::settle::Goal::FIRST_PASSES_ONLY,
        ..Default::default()
    }
}

/// Adds one figure's passes (`log`: its first thread's) to what the check saw.
fn add_passes(t: &mut Throttling, log: Option<&PassLog>) {
    for p in log.iter().flat_map(|l| &l.passes) {
        let c = &p.counts;
        t.passes += 1;
        t.wall_us += c.wall_ns / 1000;
        if c.throttled > 0 || c.throttled_us > 0 {
            t.throttled_passes += 1;
            t.throttled_us += c.throttled_us;
        }
    }
}

/// The check on `within` (this rank's share of `host`'s machine), `iterations` passes
/// of each figure: one entry per node with CPUs in the share, and the throttling the
/// passes saw.
pub fn check(host: &Host, within: &Machine, iterations: usize) -> (Vec<NodeMemory>, Throttling) {
    let timer = Timer::best();
    let mut t = Throttling {
        quota: cpu_quota(),
        ..Throttling::default()
    };
    let Ok(cells) = cells(within, Level::Node, true) else {
        return (Vec::new(), t);
    };
    let nodes = cells
        .iter()
        .filter(|c| c.initiators.first().and_then(|t| t.pu.node) == Some(c.node))
        .map(|c| {
            node(
                host,
                within,
                &timer,
                (c.node, &c.initiators),
                iterations,
                &mut t,
            )
        })
        .collect();
    (nodes, t)
}

fn node(
    host: &Host,
    m: &Machine,
    timer: &Timer,
    (n, cores): (u32, &[ThreadPlacement]),
    iterations: usize,
    t: &mut Throttling,
) -> NodeMemory {
    let mut out = NodeMemory {
        node: n,
        cores: cores.len(),
        latency_ns: None,
        read_1core_gbps: None,
        read_all_gbps: None,
        unavailable: Vec::new(),
    };
    let mem = match resolve_memory(m, &MemSpec::Node(n), PageSize::Base, cores) {
        Ok(mem) => mem,
        Err(e) => {
            out.unavailable.push(format!("node {n}: {e}"));
            return out;
        }
    };
    let first = cores[..1].to_vec();
    let lat = LatencyPlan::basic(
        first.clone(),
        Vec::new(),
        mem.clone(),
        LineState::Warm,
        Request::Read,
        iterations,
        0,
    );
    match latency::measure(host, timer, &lat, sizing::beyond_caches(m)) {
        Ok(r) => {
            add_passes(t, r.requestors.first().map(|q| &q.passes));
            out.latency_ns = median(&r.requestors[0].ns)
        }
        Err(e) => out.unavailable.push(format!("latency: {e}")),
    }
    for (threads, all) in [(first, false), (cores.to_vec(), true)] {
        let plan = BwPlan {
            size: bw_size(m, threads.len()),
            requestors: threads,
            helpers: Vec::new(),
            mem: mem.clone(),
            state: LineState::Warm,
            kernel: BwKernel::Readv,
            iterations,
            mp: true,
            evict_bytes: 0,
            warnings: Vec::new(),
            rules: keep_every_pass(),
        };
        match bandwidth::measure(host, timer, &plan) {
            Ok(r) => {
                add_passes(t, r.logs.first());
                let v = median(&r.aggregate);
                if all {
                    out.read_all_gbps = v
                } else {
                    out.read_1core_gbps = v
                }
            }
            Err(e) => out.unavailable.push(format!("read bandwidth: {e}")),
        }
    }
    out
}
