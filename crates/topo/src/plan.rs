//! Resolving placement specs against a [`Machine`]: which CPU each thread gets,
//! which node a buffer lives on, and how many hops lie between them.

use crate::cpulist;
use crate::error::{Error, Result};
use crate::model::{Level, Machine, Pu};
use crate::spec::{CoreKind, Item, MemSpec, PageSize, Smt, ThreadSpec};
use serde::{Deserialize, Serialize};

/// A thread request: the spec plus how many threads and how to treat SMT and core kinds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadRequest {
    /// The parsed spec.
    pub spec: ThreadSpec,
    /// Number of threads; None = the spec's natural count.
    pub count: Option<usize>,
    /// SMT sibling use.
    pub smt: Smt,
    /// Core kind on hybrid machines.
    pub kind: CoreKind,
}

/// One placed thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadPlacement {
    /// Thread number in the plan.
    pub thread: usize,
    /// The PU it runs on, with its domains.
    #[serde(flatten)]
    pub pu: Pu,
}

/// Where a buffer's memory goes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemPlacement {
    /// The spec as given.
    pub spec: String,
    /// "bind" or "interleave".
    pub policy: String,
    /// Target nodes (one for bind).
    pub nodes: Vec<u32>,
    /// Page size.
    pub page_size: PageSize,
    /// The node relative specs were resolved from (the first thread's node).
    pub relative_to_node: Option<u32>,
    /// Hops from each thread's node to the (first) memory node, in thread order.
    pub hops_from_threads: Vec<Option<u32>>,
    /// Raw distance from each thread's node to the (first) memory node, where a matrix exists.
    pub distance_from_threads: Vec<Option<u64>>,
}

/// A full placement plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The thread spec as given.
    pub thread_spec: String,
    /// Threads in order.
    pub threads: Vec<ThreadPlacement>,
    /// Memory, when asked for.
    pub memory: Option<MemPlacement>,
}

/// Usable PUs in the order policies hand them out.
///
/// SMT last: first hardware thread of every core, then the second ones.
/// Hybrid machines: the most performant kind first, then the efficient kind,
/// then SMT siblings (the order Linux's scheduler prefers on P/E-core parts).
fn ordered_pus(m: &Machine, smt: Smt, kind: CoreKind) -> Result<Vec<&Pu>> {
    let ranks: Vec<u32> = m.cpu_kinds.iter().map(|k| k.rank).collect();
    let (lo, hi) = (ranks.iter().min().copied(), ranks.iter().max().copied());
    let keep: Box<dyn Fn(&Pu) -> bool> = match kind {
        CoreKind::Any => Box::new(|_| true),
        CoreKind::Big | CoreKind::Little if ranks.len() < 2 => {
            return Err(Error::bad(
                "core kind",
                if kind == CoreKind::Big {
                    "big"
                } else {
                    "little"
                },
                "this topology reports a single kind of core; use --core-kind any",
            ))
        }
        CoreKind::Big => Box::new(move |p: &Pu| p.kind == hi),
        CoreKind::Little => Box::new(move |p: &Pu| p.kind == lo),
    };
    let mut pus: Vec<&Pu> = m.pus.iter().filter(|p| keep(p)).collect();
    let perf = |p: &Pu| std::cmp::Reverse(p.kind.unwrap_or(0));
    match smt {
        Smt::Last => pus.sort_by_key(|p| (p.smt_rank, perf(p), p.logical)),
        Smt::Together => pus.sort_by_key(|p| (perf(p), p.logical)),
    }
    Ok(pus)
}

fn level_domains(m: &Machine, level: Level) -> Result<Vec<u32>> {
    let domains = m.domains(level).ok_or_else(|| {
        let have: Vec<&str> = m.levels.iter().map(|l| l.level.name()).collect();
        Error::Unsatisfiable(format!(
            "this topology has no {level} level; it has: {}",
            have.join(", ")
        ))
    })?;
    Ok(domains
        .iter()
        .filter(|d| !d.cpus.is_empty())
        .map(|d| d.index)
        .collect())
}

fn too_many(n: usize, what: &str, avail: &[&Pu]) -> Error {
    let cpus: Vec<u32> = avail.iter().map(|p| p.os).collect();
    Error::Unsatisfiable(format!(
        "asked for {n} threads but {what} has only {} usable CPU{} ({})",
        cpus.len(),
        if cpus.len() == 1 { "" } else { "s" },
        cpulist::format(&cpus)
    ))
}

/// Scatter and batch wrap around the domains that have usable CPUs and end when those CPUs
/// run out; say how many that is, which domains have no usable CPUs, and which usable CPUs
/// belong to no domain of the level (a topology whose node objects do not cover every CPU).
fn too_few_in_domains(
    m: &Machine,
    level: Level,
    what: &str,
    n: usize,
    queues: &[Vec<&Pu>],
    order: &[&Pu],
) -> Error {
    let reach: Vec<u32> = queues.iter().flatten().map(|p| p.os).collect();
    let mut msg = format!(
        "asked for {n} threads but {what} reaches only {} usable CPU{} ({})",
        reach.len(),
        if reach.len() == 1 { "" } else { "s" },
        cpulist::format(&reach)
    );
    let empty = idle_domains(m, level, order);
    if !empty.is_empty() {
        msg += &format!(
            "; {level}:{} without usable CPUs (CPU-less, offline, or outside this process's cpuset)",
            cpulist::format(&empty)
        );
    }
    let outside: Vec<u32> = order
        .iter()
        .filter(|p| !reach.contains(&p.os))
        .map(|p| p.os)
        .collect();
    if !outside.is_empty() {
        msg += &format!(
            "; CPUs {} are usable but in no {level} of this topology",
            cpulist::format(&outside)
        );
    }
    Error::Unsatisfiable(msg)
}

/// The domains of `level` none of whose CPUs is in `order` (the usable ones).
fn idle_domains(m: &Machine, level: Level, order: &[&Pu]) -> Vec<u32> {
    m.domains(level)
        .unwrap_or(&[])
        .iter()
        .filter(|d| !order.iter().any(|p| p.domain(level) == Some(d.index)))
        .map(|d| d.index)
        .collect()
}

/// For scatter and batch: a note naming the domains of their level that get no thread
/// because they have no usable CPUs (the threads go round the others instead).
pub fn spread_note(m: &Machine, req: &ThreadRequest) -> Option<String> {
    let (ThreadSpec::Scatter(level) | ThreadSpec::Batch(_, level)) = &req.spec else {
        return None;
    };
    let level = level.unwrap_or_else(|| m.default_level());
    m.domains(level)?;
    let order = ordered_pus(m, req.smt, req.kind).ok()?;
    let idle = idle_domains(m, level, &order);
    (!idle.is_empty()).then(|| {
        format!(
            "{} skips {level}:{}: no usable CPUs there (CPU-less, offline, or outside this process's cpuset); threads go round the other {level} domains",
            req.spec,
            cpulist::format(&idle)
        )
    })
}

/// Resolve the threads of a request.
pub fn resolve_threads(m: &Machine, req: &ThreadRequest) -> Result<Vec<ThreadPlacement>> {
    let order = ordered_pus(m, req.smt, req.kind)?;
    if req.count == Some(0) {
        return Err(Error::bad("thread count", "0", "at least 1 thread"));
    }
    let picked: Vec<&Pu> = match &req.spec {
        ThreadSpec::Compact => {
            let n = req.count.unwrap_or(order.len());
            if n > order.len() {
                return Err(too_many(n, "this topology", &order));
            }
            order[..n].to_vec()
        }
        ThreadSpec::Scatter(level) | ThreadSpec::Batch(_, level) => {
            let level = level.unwrap_or_else(|| m.default_level());
            // Scatter defaults to one thread per domain, batch to every CPU.
            let (batch, name, one_per_domain) = match &req.spec {
                ThreadSpec::Batch(b, _) => (*b as usize, format!("batch:{b}:{level}"), false),
                _ => (1, format!("scatter:{level}"), true),
            };
            let queues: Vec<Vec<&Pu>> = level_domains(m, level)?
                .iter()
                .map(|d| {
                    order
                        .iter()
                        .copied()
                        .filter(|p| p.domain(level) == Some(*d))
                        .collect()
                })
                .collect();
            let n = req.count.unwrap_or(if one_per_domain {
                queues.iter().filter(|q| !q.is_empty()).count()
            } else {
                order.len()
            });
            round_robin(&queues, batch, n)
                .ok_or_else(|| too_few_in_domains(m, level, &name, n, &queues, &order))?
        }
        ThreadSpec::List(items) => {
            let mut out: Vec<&Pu> = Vec::new();
            for item in items {
                for pu in resolve_item(m, item, &order)? {
                    if !out.iter().any(|p| p.os == pu.os) {
                        out.push(pu);
                    }
                }
            }
            match req.count {
                Some(n) if n > out.len() => {
                    return Err(too_many(n, &format!("'{}'", req.spec), &out))
                }
                Some(n) => out.truncate(n),
                None => {}
            }
            out
        }
    };
    Ok(picked
        .into_iter()
        .enumerate()
        .map(|(thread, pu)| ThreadPlacement {
            thread,
            pu: pu.clone(),
        })
        .collect())
}

/// Take `batch` PUs from each queue in turn until `n` are taken; None if they run out.
fn round_robin<'a>(queues: &[Vec<&'a Pu>], batch: usize, n: usize) -> Option<Vec<&'a Pu>> {
    let mut out = Vec::with_capacity(n);
    let mut next = vec![0usize; queues.len()];
    while out.len() < n {
        let before = out.len();
        for (q, pos) in queues.iter().zip(next.iter_mut()) {
            for _ in 0..batch {
                if out.len() == n || *pos >= q.len() {
                    break;
                }
                out.push(q[*pos]);
                *pos += 1;
            }
        }
        if out.len() == before {
            return None;
        }
    }
    Some(out)
}

fn resolve_item<'a>(m: &'a Machine, item: &Item, order: &[&'a Pu]) -> Result<Vec<&'a Pu>> {
    match item {
        Item::Cpus(cpus) => cpus
            .iter()
            .map(|&c| {
                if let Some(p) = order.iter().find(|p| p.os == c) {
                    return Ok(*p);
                }
                let why = if m.offline_cpus.contains(&c) {
                    "is offline"
                } else if m.disallowed_cpus.contains(&c) {
                    "is not allowed to this process"
                } else if m.pu(c).is_some() {
                    "is excluded by --core-kind"
                } else {
                    "does not exist"
                };
                Err(Error::Unsatisfiable(format!(
                    "CPU {c} {why}; usable CPUs: {}",
                    m.cpu_list()
                )))
            })
            .collect(),
        Item::Objects(level, ids) => {
            let domains = m.domains(*level).unwrap_or(&[]);
            let mut out = Vec::new();
            for id in ids {
                let Some(d) = domains.iter().find(|d| d.index == *id) else {
                    let valid: Vec<u32> = domains.iter().map(|d| d.index).collect();
                    return Err(Error::Unsatisfiable(if valid.is_empty() {
                        format!("{level}:{id} does not exist: this topology has no {level} level")
                    } else {
                        format!(
                            "{level}:{id} does not exist; this topology has {level}:{}",
                            cpulist::format(&valid)
                        )
                    }));
                };
                if d.cpus.is_empty() {
                    return Err(Error::Unsatisfiable(format!(
                        "{level}:{id} has no usable CPUs (a CPU-less node, or all its CPUs offline)"
                    )));
                }
                out.extend(order.iter().copied().filter(|p| d.cpus.contains(&p.os)));
            }
            Ok(out)
        }
    }
}

/// Resolve a memory spec relative to the first thread.
pub fn resolve_memory(
    m: &Machine,
    spec: &MemSpec,
    page_size: PageSize,
    threads: &[ThreadPlacement],
) -> Result<MemPlacement> {
    let from = threads.first().and_then(|t| t.pu.node);
    let need_from = || relative_node(m, spec, threads);
    let (policy, nodes) = match spec {
        MemSpec::Node(n) => ("bind", vec![memory_node(m, *n)?]),
        MemSpec::Local => ("bind", vec![memory_node(m, need_from()?)?]),
        MemSpec::Hops(k) => ("bind", vec![node_at_hops(m, need_from()?, *k)?]),
        MemSpec::Farthest => ("bind", vec![farthest_node(m, need_from()?)?]),
        MemSpec::Interleave(None) => ("interleave", m.memory_nodes()),
        MemSpec::Interleave(Some(list)) => (
            "interleave",
            list.iter()
                .map(|&n| memory_node(m, n))
                .collect::<Result<Vec<_>>>()?,
        ),
    };
    let (d, target) = (&m.distances, nodes[0]);
    Ok(MemPlacement {
        spec: spec.to_string(),
        policy: policy.into(),
        page_size,
        relative_to_node: from,
        hops_from_threads: threads
            .iter()
            .map(|t| t.pu.node.and_then(|n| d.hops_between(n, target)))
            .collect(),
        distance_from_threads: threads
            .iter()
            .map(|t| t.pu.node.and_then(|n| d.distance(n, target)))
            .collect(),
        nodes,
    })
}

/// Node `n`, if it exists and has memory.
fn memory_node(m: &Machine, n: u32) -> Result<u32> {
    match m.node(n) {
        Some(node) if m.has_memory(node) => Ok(n),
        Some(_) => Err(Error::Unsatisfiable(format!(
            "node {n} has no memory; nodes with memory: {}",
            m.memory_node_list()
        ))),
        None => Err(Error::Unsatisfiable(format!(
            "node {n} does not exist; nodes with memory: {}",
            m.memory_node_list()
        ))),
    }
}

/// The first thread's node, which a relative spec (`local`, `hops:K`, `farthest`) needs.
fn relative_node(m: &Machine, spec: &MemSpec, threads: &[ThreadPlacement]) -> Result<u32> {
    threads.first().and_then(|t| t.pu.node).ok_or_else(|| {
        Error::Unsatisfiable(match threads.first() {
            Some(t) => format!(
                "memory spec '{spec}' is relative to the first thread, but its CPU {} has no local NUMA node in this topology; name a node instead (nodes with memory: {})",
                t.pu.os,
                m.memory_node_list()
            ),
            None => format!("memory spec '{spec}' is relative to the first thread, but there is none"),
        })
    })
}

/// The nearest node with memory `k` hops from node `f` (by raw distance, then number).
fn node_at_hops(m: &Machine, f: u32, k: u32) -> Result<u32> {
    let (d, with_memory) = (&m.distances, m.memory_nodes());
    let mut cands: Vec<u32> = with_memory
        .iter()
        .copied()
        .filter(|&n| d.hops_between(f, n) == Some(k))
        .collect();
    cands.sort_by_key(|&n| (d.distance(f, n), n));
    if let Some(&n) = cands.first() {
        return Ok(n);
    }
    let mut have: Vec<u32> = with_memory
        .iter()
        .filter_map(|&n| d.hops_between(f, n))
        .collect();
    have.sort_unstable();
    have.dedup();
    Err(Error::Unsatisfiable(format!(
        "no node with memory is {k} hop{} from node {f}; hop counts available: {}",
        if k == 1 { "" } else { "s" },
        cpulist::format(&have)
    )))
}

/// The node with memory farthest from node `f` (hops, then distance, then lowest number).
fn farthest_node(m: &Machine, f: u32) -> Result<u32> {
    let d = &m.distances;
    m.memory_nodes()
        .into_iter()
        .max_by_key(|&n| (d.hops_between(f, n), d.distance(f, n), std::cmp::Reverse(n)))
        .ok_or_else(|| Error::Unsatisfiable("no node has memory".into()))
}

/// What a node can hold: its free memory on this machine, its capacity in a file.
fn room(node: &crate::model::Node) -> (u64, &'static str) {
    match node.free_bytes {
        Some(f) => (f, "free"),
        None => (node.total_bytes, "in total"),
    }
}

/// Check that buffers of base pages fit where they are placed: `need` is (node, bytes)
/// pairs, a node named twice summed; `what` names them in the error ("the buffers of
/// 2 threads for --sizes item '12 GiB'"). The check [`check_capacity`] makes, for
/// experiments that place memory near each thread rather than by a memory spec.
pub fn check_per_node(m: &Machine, what: &str, need: &[(u32, u64)]) -> Result<()> {
    let mut by_node: std::collections::BTreeMap<u32, u64> = Default::default();
    for &(n, b) in need {
        let e = by_node.entry(n).or_default();
        *e = e.saturating_add(b);
    }
    for (n, bytes) in by_node {
        let Some(node) = m.node(n) else { continue };
        let (avail, held) = room(node);
        if bytes > avail {
            return Err(Error::Unsatisfiable(format!(
                "{what} need {} on node {n}: it has {} {held}",
                crate::fmt_bytes(bytes),
                crate::fmt_bytes(avail)
            )));
        }
    }
    Ok(())
}

/// Check that `size` bytes with this page size fit on the placement's nodes.
///
/// Uses free memory and free huge pages on this machine, capacity and
/// reserved pages for a topology file.
pub fn check_capacity(m: &Machine, mem: &MemPlacement, size: u64) -> Result<()> {
    let share = size.div_ceil(mem.nodes.len() as u64);
    for &n in &mem.nodes {
        let Some(node) = m.node(n) else { continue };
        let (avail, what) = room(node);
        if share > avail {
            return Err(Error::Unsatisfiable(format!(
                "size {} does not fit on node {n}: it has {} {what}",
                crate::fmt_bytes(size),
                crate::fmt_bytes(avail)
            )));
        }
        if matches!(mem.page_size, PageSize::Huge2M | PageSize::Huge1G) {
            let ps = mem.page_size.bytes();
            let need = share.div_ceil(ps);
            let pool = node.pages.iter().find(|p| p.size == ps);
            let have = pool.map_or(0, |p| p.free.unwrap_or(p.count));
            if have < need {
                let kb = ps / 1024;
                return Err(Error::Unsatisfiable(format!(
                    "{} huge pages: node {n} has {have} free, {need} needed for {}; reserve them as root with: echo {need} > /sys/devices/system/node/node{n}/hugepages/hugepages-{kb}kB/nr_hugepages",
                    mem.page_size.name(),
                    crate::fmt_bytes(size)
                )));
            }
        }
    }
    Ok(())
}
