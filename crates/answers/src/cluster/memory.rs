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
use numalab_topo::{fmt_bytes, Host, Level, Machine, MemSpec, PageSize, ThreadPlacement};

/// Bytes per bandwidth requestor: `--mem-size` (in 2 MiB steps), else past the caches.
fn bw_size(m: &Machine, n: usize, given: Option<u64>) -> u64 {
    given.map_or_else(|| sizing::streaming(m, n), |b| b.next_multiple_of(2 << 20))
}

/// Why a chase of `bytes` given with `--mem-size` is not all memory: within twice the
/// last-level cache, a random walk keeps finding lines the cache still holds.
fn caveat(m: &Machine, bytes: u64) -> Option<String> {
    let llc = m.last_level_cache()?.bytes;
    (bytes <= 2 * llc).then(|| {
        format!(
            "--mem-size {} is within twice this host's {} last-level cache: its latency is partly the cache's",
            fmt_bytes(bytes),
            fmt_bytes(llc)
        )
    })
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
pub fn check(
    host: &Host,
    within: &Machine,
    iterations: usize,
    size: Option<u64>,
) -> (Vec<NodeMemory>, Throttling) {
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
                (iterations, size),
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
    (iterations, size): (usize, Option<u64>),
    t: &mut Throttling,
) -> NodeMemory {
    let chase = size.unwrap_or_else(|| sizing::beyond_caches(m));
    let mut out = NodeMemory {
        node: n,
        cores: cores.len(),
        latency_ns: None,
        read_1core_gbps: None,
        read_all_gbps: None,
        unavailable: Vec::new(),
        chase_bytes: Some(chase),
        caveat: size.and_then(|b| caveat(m, b)),
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
    )
    .memory_stride();
    match latency::measure(host, timer, &lat, chase) {
        Ok(r) => {
            add_passes(t, r.requestors.first().map(|q| &q.passes));
            out.latency_ns = median(&r.requestors[0].ns)
        }
        Err(e) => out.unavailable.push(format!("latency: {e}")),
    }
    for (threads, all) in [(first, false), (cores.to_vec(), true)] {
        let plan = BwPlan {
            size: bw_size(m, threads.len(), size),
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

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_topo::TopologySource;

    fn with_llc(llc: &str) -> Machine {
        let s = format!("pack:1 l3:1(size={llc}) l2:2(size=2MiB) core:1 pu:1");
        Host::load(&TopologySource::Synthetic(s)).unwrap().machine
    }

    #[test]
    fn a_mem_size_within_twice_the_llc_says_so_and_one_past_it_does_not() {
        let m = with_llc("260MiB");
        let c = caveat(&m, 256 << 20).expect("256 MiB is within a 260 MiB L3");
        assert!(
            c.contains("--mem-size 256 MiB") && c.contains("260 MiB"),
            "{c}"
        );
        assert!(caveat(&m, 520 << 20).is_some());
        assert_eq!(caveat(&m, 1 << 30), None);
        // Streams take the size per core, in 2 MiB steps; without it, past the caches.
        assert_eq!(bw_size(&m, 2, Some(3 << 20)), 4 << 20);
        assert_eq!(bw_size(&m, 1, None), sizing::streaming(&m, 1));
    }
}
