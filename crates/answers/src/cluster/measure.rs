//! The cluster measured (collective: every rank, one per host, calls [`measure`]):
//! settings and the memory check on every host at once, the latency matrix in rounds
//! of disjoint pairs, the bandwidth matrix in shift steps, the allreduce and the
//! barrier. Rank 0 gathers each part's figures as it ends and keeps it in the run's
//! book (the folder's journal, [`super::journal`]); a resumed run skips the parts the
//! journal holds (rank 0 says which to every rank); the records come from the book.

use super::data::{HostData, KIND_COLLECTIVES, KIND_HOST, KIND_LINKS};
use super::journal::{part_record, Book, Folder};
use super::parts::{Cells, Part};
use super::plan::{partner, Plan};
use super::{memory, settings};
use numalab_mpi::coll::Native;
use numalab_mpi::kernels::{self, Method};
use numalab_mpi::{gather, shift, Error, Result, World};
use numalab_probe::Timer;
use numalab_results::stats::median;
use numalab_results::words;
use numalab_results::{Provenance, Record};
use numalab_topo::Host;
use serde_json::json;
use std::time::Instant;

/// Round trips before the timed ones, per pair.
const LAT_WARMUP: usize = 10;
/// Runs per timed pass of a collective.
const COLL_REPS: usize = 10;
/// Words of the allreduce (64 bytes).
const ALLREDUCE_WORDS: usize = 8;

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
    let (memory, throttling) = memory::check(
        host,
        &within,
        plan.options.mem_iterations,
        plan.options.mem_size,
    );
    let data = HostData {
        host: me.host.clone(),
        rank: me.rank,
        settings: settings::settings(prov, &host.machine, &library, &root),
        settings_root: root,
        memory,
        throttling,
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

/// Latency round `r`: one 8-byte ping-pong with this round's partner; the cell
/// (lower host, higher host, ns) on the rank that timed it.
fn latency_round(
    world: &World,
    plan: &Plan,
    timer: &Timer,
    r: usize,
) -> Result<Option<(usize, usize, f64)>> {
    let n = plan.hosts.len();
    let me = world.me().rank;
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
    Ok(samples
        .and_then(|s| median(&s))
        .map(|v| (pair.0, pair.1, v)))
}

/// Shift step `d`: sends to rank + D while receiving from rank − D; this rank's send
/// and receive figures.
fn shift_step(
    world: &World,
    plan: &Plan,
    timer: &Timer,
    d: usize,
) -> Result<(Option<f64>, Option<f64>)> {
    let o = &plan.options;
    let s = shift::step(
        world.comm(),
        timer,
        d,
        o.bw_size as usize,
        o.bw_window,
        (1, o.bw_iterations),
    )?;
    Ok((median(&s.send_gbps), median(&s.recv_gbps)))
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

/// Rank 0 opens the run's book (its folder's journal) and tells every rank which parts
/// are finished (collective). When rank 0 cannot (the folder is locked, the journal is
/// another run's), every rank returns a usage error, rank 0's naming why.
fn open(
    world: &World,
    plan: &Plan,
    folder: Option<&Folder>,
    prov: &Provenance,
) -> Result<(Option<Book>, Vec<bool>)> {
    let opened = world.is_root().then(|| Book::open(plan, folder, prov));
    let done = match &opened {
        Some(Ok(b)) => Some(b.done(plan)),
        _ => None,
    };
    let done: Option<Vec<bool>> = gather::bcast_from_root(world.comm(), &done)?;
    match (opened, done) {
        (Some(Err(e)), _) => Err(e.into()),
        (Some(Ok(b)), Some(d)) => Ok((Some(b), d)),
        (None, Some(d)) => Ok((None, d)),
        _ => Err(Error::Usage(String::new())),
    }
}

/// The run's book and what the cli is told: a line to show, and the progress.
struct Run<'a, S, P> {
    world: &'a World,
    plan: &'a Plan,
    prov: &'a Provenance,
    book: Option<Book>,
    say: S,
    progress: P,
}

impl<S: FnMut(&str), P: FnMut(usize, usize)> Run<'_, S, P> {
    /// Rank 0 keeps a finished part.
    fn keep(&mut self, part: Part, records: Vec<Record>, t0: Instant) {
        let Some(b) = &mut self.book else { return };
        if let Some(why) = b.finish(self.plan, part, records, t0.elapsed().as_secs_f64()) {
            (self.say)(&format!("warning: {why}"));
        }
    }

    /// A round's or a step's cells, gathered onto rank 0 and kept there.
    fn keep_cells(&mut self, part: Part, mine: &Cells, t0: Instant) -> Result<()> {
        let Some(all) = gather::gather_to_root(self.world.comm(), mine)? else {
            return Ok(());
        };
        let mut cells = Cells::default();
        for c in all {
            cells.latency_ns.extend(c.latency_ns);
            cells.send_gbps.extend(c.send_gbps);
            cells.recv_gbps.extend(c.recv_gbps);
        }
        let r = part_record(self.plan, part, &cells, self.prov);
        self.keep(part, vec![r], t0);
        Ok(())
    }

    /// The progress bar's step `at` of the rounds and shift steps.
    fn step(&mut self, at: usize) {
        if self.world.is_root() {
            (self.progress)(at, self.plan.latency_rounds + self.plan.shift_steps);
        }
    }
}

/// Every host's record at once (those the book lacks), kept per host on rank 0.
fn hosts<S: FnMut(&str), P: FnMut(usize, usize)>(
    run: &mut Run<S, P>,
    host: &Host,
    done: &[bool],
) -> Result<()> {
    let n = run.plan.hosts.len();
    if done[..n].iter().all(|d| *d) {
        return Ok(());
    }
    let t0 = Instant::now();
    let me = run.world.me().rank;
    let mine = (!done[me]).then(|| host_record(run.world, host, run.plan, run.prov));
    if let Some(all) = gather::gather_to_root(run.world.comm(), &mine)? {
        for (i, r) in all.into_iter().enumerate() {
            if let Some(r) = r {
                run.keep(Part::Host(i), vec![r], t0);
            }
        }
    }
    Ok(())
}

/// The rounds, the shift steps and the collectives the book lacks, each kept as it ends.
fn links<S: FnMut(&str), P: FnMut(usize, usize)>(run: &mut Run<S, P>, done: &[bool]) -> Result<()> {
    let (world, plan) = (run.world, run.plan);
    let timer = Timer::best();
    let n = plan.hosts.len();
    let me = world.me().rank;
    let at = |p: Part| p.index(plan);
    for r in (0..plan.latency_rounds).filter(|r| !done[at(Part::Round(*r))]) {
        run.step(r);
        let t0 = Instant::now();
        let cell = latency_round(world, plan, &timer, r)?;
        let mine = Cells {
            latency_ns: cell.into_iter().collect(),
            ..Cells::default()
        };
        run.keep_cells(Part::Round(r), &mine, t0)?;
    }
    for d in (1..n).filter(|d| !done[at(Part::Shift(*d))]) {
        run.step(plan.latency_rounds + d - 1);
        let t0 = Instant::now();
        let (send, recv) = shift_step(world, plan, &timer, d)?;
        let mine = Cells {
            send_gbps: send.map(|v| (me, (me + d) % n, v)).into_iter().collect(),
            recv_gbps: recv
                .map(|v| ((me + n - d) % n, me, v))
                .into_iter()
                .collect(),
            ..Cells::default()
        };
        run.keep_cells(Part::Shift(d), &mine, t0)?;
    }
    if !done[at(Part::Collectives)] {
        let t0 = Instant::now();
        let (allreduce, barrier) = collectives(world, plan, &timer)?;
        let mut c = Record::new(
            KIND_COLLECTIVES,
            &format!("{n} hosts"),
            run.prov.clone(),
            json!({ "hosts": n, "allreduce_bytes": ALLREDUCE_WORDS * 8,
                    "runs_per_pass": COLL_REPS, "timed_by": "rank 0" }),
        );
        c.add_samples("allreduce", "ns", &allreduce);
        c.add_samples("barrier", "ns", &barrier);
        c.warnings = run.prov.warnings();
        run.keep(Part::Collectives, vec![c], t0);
    }
    Ok(())
}

/// Run the cluster (collective), its parts kept in `folder`'s journal when given (a
/// resume measures only the parts it lacks). A usage error is a refusal every rank
/// returns before anything is measured, its message on rank 0 only. Rank 0 gets every record: one per host,
/// the findings, the links and the collectives; `say` shows its lines (the start, a
/// journal that could not be written).
pub fn measure(
    world: &World,
    host: &Host,
    plan: &Plan,
    folder: Option<&Folder>,
    say: impl FnMut(&str),
    progress: impl FnMut(usize, usize),
) -> Result<Option<Vec<Record>>> {
    // Every rank refuses alike; rank 0 says why.
    let quiet = |e: Error| match world.is_root() {
        true => e,
        false => Error::Usage(String::new()),
    };
    one_per_host(world, plan).map_err(quiet)?;
    let prov = Provenance::collect(&host.machine.summary(), &host.machine.source);
    let (book, done) = open(world, plan, folder, &prov)?;
    let mut run = Run {
        world,
        plan,
        prov: &prov,
        book,
        say,
        progress,
    };
    if let Some(b) = &run.book {
        for l in b.announce(plan, folder) {
            (run.say)(&l);
        }
    }
    // Every host at once, then everyone waits for the slowest before the network.
    hosts(&mut run, host, &done)?;
    world.barrier();
    links(&mut run, &done)?;
    let Some(book) = run.book.take() else {
        return Ok(None);
    };
    let mut all = book.records(plan, &prov);
    let every: Vec<usize> = (0..plan.hosts.len()).collect();
    for r in all.iter_mut().filter(|r| r.kind == KIND_LINKS) {
        r.placement = Some(world.placement_value(&every));
    }
    match book.write(&all) {
        Ok(Some(why)) => (run.say)(&format!("warning: {why}")),
        Ok(None) => {}
        Err(e) => return Err(Error::System(e.to_string())),
    }
    Ok(Some(all))
}
