//! The operation cost table, split-phase issuer/server costs and switch costs, as
//! plans of latency and bandwidth measurements and probe primitives.

use super::Cpus;
use numalab_bench::bandwidth::{self, BwPlan};
use numalab_bench::latency::{self, LatencyPlan};
use numalab_probe::bw::BwKernel;
use numalab_probe::per_call::per_call;
use numalab_probe::server::{served, with_server, Request};
use numalab_probe::split_phase;
use numalab_probe::switch;
use numalab_probe::{LineState, Request as Req, Timer};
use numalab_topo::plan::resolve_memory;
use numalab_topo::{Host, MemPlacement, MemSpec, PageSize, Result, ThreadPlacement};
use serde::Serialize;

/// One measured cost: ns per operation, one sample per pass.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// The operation ("load word", "spawn coroutine", …) or step.
    pub op: String,
    /// Where the other side is: "local", "remote core", "remote node", "helper".
    pub place: String,
    /// "sequential" (wait for each) or "pipelined" (issue many, then wait).
    pub mode: String,
    /// ns per operation.
    pub ns: Vec<f64>,
    /// How it was measured.
    pub how: String,
}

fn cell(op: &str, place: &str, mode: &str, ns: Vec<f64>, how: &str) -> Cell {
    Cell {
        op: op.into(),
        place: place.into(),
        mode: mode.into(),
        ns,
        how: how.into(),
    }
}

/// A cell that cannot be measured here: (what, why).
pub type Missing = (String, String);

/// Bytes of the lines loaded and stored (fits the helper's private cache).
const LINES_BYTES: u64 = 256 * 1024;
/// Requests per pass through the helper.
const REQUESTS: usize = 512;

/// The worker as requestor, the helper when the state needs one, lines on `node`.
fn parties(
    host: &Host,
    c: &Cpus,
    node: u32,
    state: LineState,
) -> Result<(Vec<ThreadPlacement>, Vec<ThreadPlacement>, MemPlacement)> {
    let r = vec![c.worker.clone()];
    let mem = resolve_memory(&host.machine, &MemSpec::Node(node), PageSize::Base, &r)?;
    let helpers = if state.helpers() > 0 {
        vec![c.helper.clone()]
    } else {
        vec![]
    };
    Ok((r, helpers, mem))
}

fn chase(
    host: &Host,
    timer: &Timer,
    c: &Cpus,
    node: u32,
    state: LineState,
    req: Req,
    it: usize,
) -> Result<Vec<f64>> {
    let (r, helpers, mem) = parties(host, c, node, state)?;
    let plan = LatencyPlan::basic(r, helpers, mem, state, req, it, 0);
    Ok(
        latency::measure(host, timer, &plan, LINES_BYTES)?.requestors[0]
            .ns
            .clone(),
    )
}

fn stream(
    host: &Host,
    timer: &Timer,
    c: &Cpus,
    node: u32,
    state: LineState,
    kernel: BwKernel,
    it: usize,
) -> Result<Vec<f64>> {
    let (r, helpers, mem) = parties(host, c, node, state)?;
    let plan = BwPlan {
        requestors: r,
        helpers,
        mem,
        state,
        kernel,
        size: LINES_BYTES,
        iterations: it,
        mp: false,
        evict_bytes: 0,
        warnings: vec![],
        // Passes as before: these records carry no settle entry yet.
        rules: numalab_results::disturb::Rules {
            policy: numalab_results::disturb::Policy::Keep,
            settle: numalab_results::settle::Goal::FIRST_PASSES_ONLY,
            ..Default::default()
        },
    };
    let res = bandwidth::measure(host, timer, &plan)?;
    let per = (res.lines * res.reps) as f64;
    Ok(res.ns[0].iter().map(|ns| ns / per).collect())
}

fn pin_worker(host: &Host, c: &Cpus) -> Result<()> {
    numalab_topo::bind::pin_current_thread(host, c.worker.pu.os).map(|_| ())
}

/// Loads and stores on the worker's node: lines flushed, or Modified in the helper's
/// cache.
fn near_cells(host: &Host, timer: &Timer, c: &Cpus, home: u32, it: usize) -> Result<Vec<Cell>> {
    let mut out = Vec::new();
    let uown = UOWN;
    out.push(cell(
        "load word",
        "local",
        "sequential",
        chase(host, timer, c, home, LineState::Uown, Req::Read, it)?,
        uown,
    ));
    out.push(cell(
        "load word",
        "local",
        "pipelined",
        stream(host, timer, c, home, LineState::Uown, BwKernel::Read, it)?,
        "the read kernel over flushed lines, ns per line",
    ));
    out.push(cell(
        "load word",
        "remote core",
        "sequential",
        chase(host, timer, c, home, LineState::Dexd, Req::Read, it)?,
        "a dependent chase over lines Modified in the helper's cache",
    ));
    out.push(cell(
        "load word",
        "remote core",
        "pipelined",
        stream(host, timer, c, home, LineState::Dexd, BwKernel::Read, it)?,
        "the read kernel over lines Modified in the helper's cache",
    ));
    out.push(cell(
        "store word",
        "local",
        "sequential",
        chase(host, timer, c, home, LineState::Uown, Req::Rdex, it)?,
        "store then chase (RDEX) over flushed lines",
    ));
    out.push(cell(
        "store word",
        "local",
        "pipelined",
        stream(host, timer, c, home, LineState::Uown, BwKernel::Rdex, it)?,
        "one store per line (rdex kernel) over flushed lines",
    ));
    out.push(cell(
        "store word",
        "remote core",
        "sequential",
        chase(host, timer, c, home, LineState::Dext, Req::Rdex, it)?,
        "store then chase over lines Modified in the helper's cache (ownership transfer)",
    ));
    out.push(cell(
        "store word",
        "remote core",
        "pipelined",
        stream(host, timer, c, home, LineState::Dext, BwKernel::Rdex, it)?,
        "one store per line over lines Modified in the helper's cache",
    ));
    Ok(out)
}

/// Loads and stores on lines flushed from every cache, homed on node `n`.
fn remote_node_cells(host: &Host, timer: &Timer, c: &Cpus, n: u32, it: usize) -> Result<Vec<Cell>> {
    let mut out = Vec::new();
    let uown = UOWN;
    out.push(cell(
        "load word",
        "remote node",
        "sequential",
        chase(host, timer, c, n, LineState::Uown, Req::Read, it)?,
        uown,
    ));
    out.push(cell(
        "load word",
        "remote node",
        "pipelined",
        stream(host, timer, c, n, LineState::Uown, BwKernel::Read, it)?,
        "the read kernel over flushed lines",
    ));
    out.push(cell(
        "store word",
        "remote node",
        "sequential",
        chase(host, timer, c, n, LineState::Uown, Req::Rdex, it)?,
        "store then chase over flushed lines",
    ));
    out.push(cell(
        "store word",
        "remote node",
        "pipelined",
        stream(host, timer, c, n, LineState::Uown, BwKernel::Rdex, it)?,
        "one store per line over flushed lines",
    ));
    Ok(out)
}

/// How a load over flushed lines is measured.
const UOWN: &str = "a dependent chase over lines flushed from every cache";

/// Seed Table 1: each operation local and remote, sequential and pipelined.
/// Returns the cells and the cells that cannot be measured here, with why.
pub fn ops(host: &Host, timer: &Timer, c: &Cpus, it: usize) -> Result<(Vec<Cell>, Vec<Missing>)> {
    let home = crate::memory::node_near(&host.machine, c.worker.pu.os)?;
    let mut out = Vec::new();
    let mut missing = Vec::new();
    out.extend(near_cells(host, timer, c, home, it)?);
    match c.remote_node {
        Some(n) => out.extend(remote_node_cells(host, timer, c, n, it)?),
        None => missing.push((
            "load/store word, remote node".into(),
            "this machine has one NUMA node with memory".into(),
        )),
    }
    out.extend(local_calls(host, timer, c, it)?);
    out.extend(through_helper(host, timer, c.helper.pu.os, it)?);
    Ok((out, missing))
}

/// Seed Table 1's local and remote-core rows: calls, coroutine spawns and threads,
/// sequential and pipelined, from the pinned worker.
fn local_calls(host: &Host, timer: &Timer, c: &Cpus, it: usize) -> Result<Vec<Cell>> {
    let mut out = Vec::new();
    pin_worker(host, c)?;
    let mut acc = 0u64;
    out.push(cell(
        "call function",
        "local",
        "sequential",
        per_call(timer, it, 100_000, |_| acc = served(acc)),
        "a direct call of a function that is not inlined, each taking the last one's result",
    ));
    out.push(cell(
        "call function",
        "local",
        "pipelined",
        per_call(timer, it, 100_000, |i| acc ^= served(i as u64)),
        "the same calls with independent arguments, so they overlap",
    ));
    out.push(cell(
        "spawn coroutine",
        "local",
        "sequential",
        (0..it)
            .map(|_| switch::coroutine_spawn(timer, 2000, true))
            .collect(),
        "create a coroutine on a pooled stack, run it to the end (it calls one function)",
    ));
    out.push(cell(
        "spawn coroutine",
        "local",
        "pipelined",
        (0..it)
            .map(|_| switch::coroutine_spawn_many(timer, 125, 16).0)
            .collect(),
        "create 16 coroutines on pooled stacks, then run them all to the end",
    ));
    out.push(cell(
        "spawn coroutine (new stack)",
        "local",
        "sequential",
        (0..it)
            .map(|_| switch::coroutine_spawn(timer, 500, false))
            .collect(),
        "as above with a freshly mapped 64 KiB stack each time",
    ));
    let w = c.worker.pu.os;
    let h = c.helper.pu.os;
    for (place, cpu) in [("local", w), ("remote core", h)] {
        let seq: Result<Vec<f64>> = (0..it)
            .map(|_| {
                Ok((0..20)
                    .map(|_| switch::os_create_join(host, timer, &[cpu], 1))
                    .sum::<Result<f64>>()?
                    / 20.0)
            })
            .collect();
        out.push(cell(
            "spawn OS thread",
            place,
            "sequential",
            seq?,
            "create a thread pinned there, join it",
        ));
        let pip: Result<Vec<f64>> = (0..it)
            .map(|_| Ok(switch::os_create_join(host, timer, &[cpu], 16)? / 16.0))
            .collect();
        out.push(cell(
            "spawn OS thread",
            place,
            "pipelined",
            pip?,
            "create 16 threads pinned there, then join them all",
        ));
    }
    std::hint::black_box(acc);
    Ok(out)
}

/// Seed Table 1's helper rows: split-phase requests through the helper thread on
/// CPU `h` (EARTH's EU→SU offload), sequential and pipelined.
fn through_helper(host: &Host, timer: &Timer, h: u32, it: usize) -> Result<Vec<Cell>> {
    // Through the helper: split-phase requests (EARTH's EU→SU offload).
    let mut word = vec![0u64; 16];
    let wp = word.as_mut_ptr();
    let kinds: [(&str, Request); 4] = [
        ("load word", Request::Load(wp)),
        ("store word", Request::Store(wp, 1)),
        ("call function", Request::Call(3)),
        ("spawn coroutine", Request::Spawn(3)),
    ];
    let (cells, _) = with_server(host, timer, h, |cl| {
        let mut v = Vec::new();
        for (name, req) in kinds {
            let seq = per_call(timer, it, REQUESTS, |_| {
                let t = cl.post(req);
                cl.wait(t);
            });
            let pip = split_phase::pipelined(timer, cl, req, it, REQUESTS);
            v.push(cell(
                name,
                "helper",
                "sequential",
                seq,
                "post a request to the helper thread, wait for its reply",
            ));
            v.push(cell(
                name,
                "helper",
                "pipelined",
                pip,
                "post 512 requests, then wait for all replies",
            ));
        }
        v
    })?;
    std::hint::black_box(&mut word);
    Ok(cells)
}

/// Seed Tables 2 and 4: per split-phase request, what the issuer spends (posting)
/// against what the helper spends (serving), and one remote load step by step.
pub fn split(host: &Host, timer: &Timer, c: &Cpus, it: usize) -> Result<Vec<Cell>> {
    pin_worker(host, c)?;
    let mut word = vec![7u64; 16];
    let wp = word.as_mut_ptr();
    let (out, _) = with_server(host, timer, c.helper.pu.os, |cl| {
        let mut out = Vec::new();
        for (name, req) in [
            ("load word", Request::Load(wp)),
            ("store word", Request::Store(wp, 7)),
            ("call function", Request::Call(3)),
            ("spawn coroutine", Request::Spawn(3)),
        ] {
            let (issuer, srv) = split_phase::posting_and_serving(timer, cl, req, it, REQUESTS);
            out.push(cell(
                name,
                "issuer",
                "pipelined",
                issuer,
                "time in post() per request: what multithreading cannot hide",
            ));
            out.push(cell(
                name,
                "helper",
                "pipelined",
                srv,
                "helper time per request, from seeing it to publishing the reply",
            ));
        }
        // One remote load, step by step (timestamps from one invariant counter on both cores).
        let steps = ["issue", "request transfer", "helper load", "reply transfer"];
        let mut samples: Vec<Vec<f64>> = vec![Vec::new(); 4];
        for _ in 0..it {
            let per = split_phase::load_steps(timer, cl, Request::Load(wp), REQUESTS);
            for (i, p) in per.iter().enumerate() {
                samples[i].push(numalab_results::stats::median(p).unwrap_or(f64::NAN));
            }
        }
        for (i, s) in samples.into_iter().enumerate() {
            out.push(cell("remote load step", steps[i], "sequential", s, "median over 512 loads per pass; the counter is read on both cores (invariant, synchronised TSC assumed)"));
        }
        out
    })?;
    std::hint::black_box(&mut word);
    Ok(out)
}

/// Switch costs: coroutine switch, OS thread switch on one core, creation and join
/// of 1…5 threads (KSR Table 4).
pub fn switches(host: &Host, timer: &Timer, c: &Cpus, it: usize) -> Result<Vec<Cell>> {
    pin_worker(host, c)?;
    let w = c.worker.pu.os;
    let mut out = vec![cell(
        "coroutine switch",
        "local",
        "sequential",
        (0..it)
            .map(|_| switch::coroutine_switch(timer, 200_000))
            .collect(),
        "resume/suspend round trips of one coroutine, two switches each",
    )];
    let os: Result<Vec<f64>> = (0..it)
        .map(|_| switch::os_switch(host, timer, w, 5000))
        .collect();
    out.push(cell(
        "OS thread switch",
        "local",
        "sequential",
        os?,
        "two threads pinned to one CPU hand a turn back and forth through a futex",
    ));
    for k in 1..=5 {
        let v: Result<Vec<f64>> = (0..it)
            .map(|_| switch::os_create_join(host, timer, &[w], k))
            .collect();
        out.push(cell(
            &format!(
                "create and join {k} thread{}",
                if k == 1 { "" } else { "s" }
            ),
            "local",
            "sequential",
            v?,
            "threads pinned to the worker's CPU, each calls one function; ns for all",
        ));
    }
    Ok(out)
}
