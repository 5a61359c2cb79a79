//! The cluster measured (collective: every rank, one per host, calls [`measure`]):
//! settings and the memory check on every host at once, the latency matrix in rounds
//! of disjoint pairs, the bandwidth matrix in shift steps, the allreduce and the
//! barrier; rank 0 gathers the rows, builds the matrices and names the findings.

use super::data::{HostData, LinksData, KIND_COLLECTIVES, KIND_FINDINGS, KIND_HOST, KIND_LINKS};
use super::plan::{partner, Plan};
use super::{memory, rule, settings};
use numalab_mpi::coll::Native;
use numalab_mpi::kernels::{self, Method};
use numalab_mpi::{gather, shift, Error, Result, World};
use numalab_probe::Timer;
use numalab_results::stats::median;
use numalab_results::words;
use numalab_results::{Provenance, Record};
use numalab_topo::Host;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Round trips before the timed ones, per pair.
const LAT_WARMUP: usize = 10;
/// Runs per timed pass of a collective.
const COLL_REPS: usize = 10;
/// Words of the allreduce (64 bytes).
const ALLREDUCE_WORDS: usize = 8;

/// One rank's figures by peer (None: not measured).
type Row = Vec<Option<f64>>;

/// What one rank measured: its row of each matrix (by peer).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Rows {
    /// Latency to each higher peer it timed, ns.
    latency: Vec<Option<f64>>,
    /// Send bandwidth to each peer, GB/s.
    send: Vec<Option<f64>>,
    /// Receive bandwidth from each peer, GB/s.
    recv: Vec<Option<f64>>,
}

/// Refuse a job whose ranks are not one per host (mpirun mapped two onto one host).
fn one_per_host(world: &World, plan: &Plan) -> Result<()> {
    if world.placements.len() != plan.hosts.len() {
        return Err(Error::Usage(format!(
            "cluster needs one rank per host: the job has {} for {} hosts",
            words::count(world.placements.len() as u64, "rank"),
            plan.hosts.len()
        )));
    }
    for (i, a) in world.placements.iter().enumerate() {
        if let Some(b) = world.placements[..i].iter().find(|b| b.host == a.host) {
            return Err(Error::Usage(format!(
                "cluster needs one rank per host, but ranks {} and {} both run on {} (give each host slots=1 in the hostfile)",
                b.rank, a.rank, a.host
            )));
        }
    }
    Ok(())
}

/// This host's record: settings and memory, tagged with the host.
fn host_record(world: &World, host: &Host, plan: &Plan, prov: &Provenance) -> Record {
    let me = world.me();
    let root = settings::root();
    let library = world.facts().library;
    let share = numalab_mpi::place::started_on(&host.machine);
    let within = share
        .as_ref()
        .map(|c| numalab_mpi::place::narrowed(&host.machine, c))
        .unwrap_or_else(|| host.machine.clone());
    let data = HostData {
        host: me.host.clone(),
        rank: me.rank,
        settings: settings::settings(prov, &host.machine, &library, &root),
        settings_root: root,
        memory: memory::check(host, &within, plan.options.mem_iterations),
    };
    let mut r = Record::new(
        KIND_HOST,
        &me.host,
        prov.clone(),
        json!({ "host": me.host, "rank": me.rank, "mem_iterations": plan.options.mem_iterations }),
    );
    r.placement = Some(world.placement_value(&[me.rank]));
    r.set_data(&data);
    r.warnings = prov.warnings();
    r
}

/// The latency row: one 8-byte ping-pong per round with this round's partner.
fn latency_row(
    world: &World,
    plan: &Plan,
    timer: &Timer,
    progress: &mut impl FnMut(usize, usize),
) -> Result<Vec<Option<f64>>> {
    let n = plan.hosts.len();
    let me = world.me().rank;
    let mut row = vec![None; n];
    let total = plan.latency_rounds + plan.shift_steps;
    for r in 0..plan.latency_rounds {
        if world.is_root() {
            progress(r, total);
        }
        let pair = match partner(n, r, me) {
            Some(p) => (me.min(p), me.max(p)),
            // Sitting out: the loop's closing barrier only.
            None => (usize::MAX, usize::MAX),
        };
        let samples = kernels::ping_pong(
            world.comm(),
            timer,
            pair,
            8,
            LAT_WARMUP,
            plan.options.lat_iterations,
            Method::default(),
        )?;
        if let Some(s) = samples {
            row[pair.1] = median(&s);
        }
    }
    Ok(row)
}

/// The bandwidth rows: every shift step, sends to rank + D, receives from rank − D.
fn bandwidth_rows(
    world: &World,
    plan: &Plan,
    timer: &Timer,
    progress: &mut impl FnMut(usize, usize),
) -> Result<(Row, Row)> {
    let n = plan.hosts.len();
    let me = world.me().rank;
    let o = &plan.options;
    let (mut send, mut recv) = (vec![None; n], vec![None; n]);
    for d in 1..n {
        if world.is_root() {
            progress(
                plan.latency_rounds + d - 1,
                plan.latency_rounds + plan.shift_steps,
            );
        }
        let s = shift::step(
            world.comm(),
            timer,
            d,
            o.bw_size as usize,
            o.bw_window,
            (1, o.bw_iterations),
        )?;
        send[(me + d) % n] = median(&s.send_gbps);
        recv[(me + n - d) % n] = median(&s.recv_gbps);
    }
    Ok((send, recv))
}

/// The allreduce's and the barrier's ns per run (rank 0's clock); the sum checked.
fn collectives(world: &World, plan: &Plan, timer: &Timer) -> Result<(Vec<f64>, Vec<f64>)> {
    let comm = world.comm();
    let n = plan.hosts.len() as u64;
    let mine = world.me().rank as u64 + 1;
    let mut src = vec![mine; ALLREDUCE_WORDS];
    let mut dst = vec![0u64; ALLREDUCE_WORDS];
    let mut res = vec![0u64; ALLREDUCE_WORDS];
    let it = plan.options.coll_iterations;
    let op = Native::AllreduceSum.bind(comm);
    let allreduce = numalab_mpi::coll_timed::native_passes(
        comm,
        timer,
        &op,
        (&mut src, &mut dst, &mut res),
        it,
        COLL_REPS,
        |_, _, _| {},
    );
    let want = n * (n + 1) / 2;
    if let Some(w) = res.iter().find(|w| **w != want) {
        return Err(Error::System(format!(
            "allreduce: sum {w}, expected {want}"
        )));
    }
    let bar = Native::Barrier.bind(comm);
    let barrier = numalab_mpi::coll_timed::native_passes(
        comm,
        timer,
        &bar,
        (&mut src, &mut dst, &mut res),
        it,
        COLL_REPS,
        |_, _, _| {},
    );
    Ok((allreduce, barrier))
}

/// Run the cluster (collective). Rank 0 gets every record: one per host, the links,
/// the collectives and the findings.
pub fn measure(
    world: &World,
    host: &Host,
    plan: &Plan,
    mut progress: impl FnMut(usize, usize),
) -> Result<Option<Vec<Record>>> {
    one_per_host(world, plan)?;
    let timer = Timer::best();
    let prov = Provenance::collect(&host.machine.summary(), &host.machine.source);
    // Every host at once, then everyone waits for the slowest before the network.
    let mine = host_record(world, host, plan, &prov);
    world.barrier();
    let latency = latency_row(world, plan, &timer, &mut progress)?;
    let (send, recv) = bandwidth_rows(world, plan, &timer, &mut progress)?;
    let (allreduce, barrier) = collectives(world, plan, &timer)?;
    let rows = gather::gather_to_root(
        world.comm(),
        &Rows {
            latency,
            send,
            recv,
        },
    )?;
    let Some(mut all) = world.gather_records(&[mine])? else {
        return Ok(None);
    };
    let rows = rows.unwrap_or_default();
    let names: Vec<String> = world.placements.iter().map(|p| p.host.clone()).collect();
    let links = links(plan, names, &rows);
    let hosts: Vec<HostData> = all
        .iter()
        .filter_map(|r| r.data_as::<HostData>().ok())
        .collect();
    let found = rule::findings(&hosts, Some(&links));
    let every: Vec<usize> = (0..plan.hosts.len()).collect();
    let mut l = Record::new(
        KIND_LINKS,
        &format!("{} hosts", plan.hosts.len()),
        prov.clone(),
        json!({ "hosts": plan.hosts.len(), "lat_iterations": plan.options.lat_iterations,
                "bw_size": plan.options.bw_size, "bw_window": plan.options.bw_window,
                "bw_iterations": plan.options.bw_iterations }),
    );
    l.placement = Some(world.placement_value(&every));
    l.set_data(&links);
    let mut c = Record::new(
        KIND_COLLECTIVES,
        &format!("{} hosts", plan.hosts.len()),
        prov.clone(),
        json!({ "hosts": plan.hosts.len(), "allreduce_bytes": ALLREDUCE_WORDS * 8,
                "runs_per_pass": COLL_REPS, "timed_by": "rank 0" }),
    );
    c.add_samples("allreduce", "ns", &allreduce);
    c.add_samples("barrier", "ns", &barrier);
    let mut f = Record::new(
        KIND_FINDINGS,
        "findings",
        prov.clone(),
        json!({ "hosts": plan.hosts.len() }),
    );
    f.set_data(&found);
    for r in [&mut l, &mut c, &mut f] {
        r.warnings = prov.warnings();
    }
    all.extend([f, l, c]);
    Ok(Some(all))
}

/// The matrices from every rank's rows (`rows[r]` is rank r's).
fn links(plan: &Plan, hosts: Vec<String>, rows: &[Rows]) -> LinksData {
    let n = plan.hosts.len();
    let mut lat = vec![vec![None; n]; n];
    let mut send = vec![vec![None; n]; n];
    let mut recv = vec![vec![None; n]; n];
    for (a, r) in rows.iter().enumerate() {
        for b in 0..n.min(r.latency.len()) {
            if let Some(v) = r.latency[b] {
                lat[a][b] = Some(v);
                lat[b][a] = Some(v);
            }
            send[a][b] = send[a][b].or(r.send.get(b).copied().flatten());
            recv[b][a] = r.recv.get(b).copied().flatten();
        }
    }
    let o = &plan.options;
    LinksData {
        hosts,
        latency_ns: lat,
        send_gbps: send,
        recv_gbps: recv,
        size: o.bw_size,
        window: o.bw_window,
        method: format!(
            "latency: 8 B MPI_Send/MPI_Recv ping-pong, {} per pair (median, halved), pairs in rounds of disjoint pairs; bandwidth: mpiGraph's shift steps, every host sending {} x {} B to host+D while receiving from host-D, {} per step (median), send and receive completion timed apart",
            words::count(o.lat_iterations as u64, "round trip"), o.bw_window, o.bw_size, words::count(o.bw_iterations as u64, "sample")
        ),
    }
}
