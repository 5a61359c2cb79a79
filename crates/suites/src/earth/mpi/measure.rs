//! The timed rows of `suite earth --mpi`: Table 1's operations, the split between
//! issuer and server, Loop 7's masking, outstanding gets; rank 0 gathers the records.

use super::data::{MaskBest, MaskData, MaskPoint, SeedRow};
use super::plan::{Options, Plan, Row, SEED_TABLE1};
use numalab_mpi::place::Relation;
use numalab_mpi::remote::{self, Mode, Rma};
use numalab_mpi::{Result, World};
use numalab_probe::Timer;
use numalab_results::{Provenance, Record};
use numalab_topo::Host;
use serde_json::json;

/// Operations per pass for moves of `bytes`: at most 8 MiB moved per pass.
fn ops_for(n: usize, bytes: Option<u64>) -> usize {
    let b = bytes.unwrap_or(8).max(64) as usize;
    n.min((8 << 20) / b).max(1)
}

fn mode_name(m: Mode) -> &'static str {
    match m {
        Mode::Sequential => "sequential",
        Mode::Pipelined => "pipelined",
    }
}

/// What every row's measurement shares.
struct Run<'a> {
    world: &'a World,
    timer: Timer,
    prov: Provenance,
    o: &'a Options,
    /// Issuer and server ranks.
    a: usize,
    b: usize,
    rel: Relation,
    /// Operations per pass.
    n: usize,
}

/// One row measured: time per operation, how, and the issuer's and server's shares.
#[derive(Default)]
struct Measured {
    samples: Vec<f64>,
    method: String,
    server: Vec<f64>,
    issue: Vec<f64>,
}

fn flush_note(m: Mode) -> &'static str {
    if m == Mode::Sequential {
        ", MPI_Win_flush after each"
    } else {
        ", one MPI_Win_flush after all"
    }
}

/// A load, block move or store as RMA to the row's target rank.
fn rma_row(run: &Run, r: &Row, rma: Rma) -> Result<Measured> {
    let (comm, o, n) = (run.world.comm(), run.o, run.n);
    let target = if r.place == "local rank" {
        run.a
    } else {
        run.b
    };
    let (bytes, ops, name) = match rma {
        Rma::Get => (
            r.bytes.unwrap_or(8) as usize,
            ops_for(n, r.bytes),
            "MPI_Get",
        ),
        Rma::Put => (8, n, "MPI_Put"),
    };
    let samples = remote::rma_ops(
        comm,
        &run.timer,
        run.a,
        target,
        rma,
        bytes,
        r.mode,
        ops,
        o.iterations,
    )?;
    let method = format!(
        "{name} of {bytes} B at distinct lines{}",
        flush_note(r.mode)
    );
    Ok(Measured {
        samples,
        method,
        ..Measured::default()
    })
}

/// A remote call or spawn as an active message to the server rank.
fn am_row(run: &Run, r: &Row) -> Result<Measured> {
    let (a, b) = (run.a, run.b);
    let spawn = r.op == "spawn thread";
    let am = remote::active_messages(
        run.world.comm(),
        &run.timer,
        (a, b),
        spawn,
        r.mode,
        run.n,
        run.o.iterations,
    )?;
    let method = format!(
        "active message to a server loop on rank {b} (MPI_Send of the argument; the server {} and sends the result back){}",
        if spawn { "runs work() in a new coroutine on a pooled stack" } else { "calls work()" },
        if r.mode == Mode::Sequential { "; each call takes the last result" } else { "; all requests sent, then all replies received" }
    );
    Ok(Measured {
        samples: am.per_op,
        method,
        server: am.server,
        issue: am.issue,
    })
}

/// G outstanding remote gets.
fn mlp_row(run: &Run, r: &Row) -> Result<Measured> {
    let (g, n) = (r.g.unwrap_or(1), run.n);
    let samples = remote::mlp_gets(
        run.world.comm(),
        &run.timer,
        (run.a, run.b),
        g,
        n.max(g) * 4,
        64 << 20,
        run.o.iterations,
    )?;
    let method = format!("{g} MPI_Rget of 8 B at random lines of a 64 MiB window outstanding, then MPI_Waitall; ns per get");
    Ok(Measured {
        samples,
        method,
        ..Measured::default()
    })
}

/// Measure one row on every rank; the issuer keeps its records in `mine`.
fn measure_row(run: &Run, r: &Row, mine: &mut Vec<Record>) -> Result<()> {
    let (world, o, (a, b)) = (run.world, run.o, (run.a, run.b));
    let m = match (r.part.as_str(), r.op.as_str()) {
        (_, "load word") | (_, "block move (get)") => rma_row(run, r, Rma::Get)?,
        (_, "store word") => rma_row(run, r, Rma::Put)?,
        (_, "call function") | (_, "spawn thread") => am_row(run, r)?,
        (_, "loop 7") => {
            let curves = numalab_mpi::loop7::mask(
                world.comm(),
                &run.timer,
                (a, b),
                o.loop_n,
                &o.multipliers,
                &o.chunks,
                o.iterations,
            )?;
            if world.rank == a {
                mine.extend(mask_records(&run.prov, world, o, &curves, run.rel));
            }
            return Ok(());
        }
        ("breakdown", _) => {
            let loads = super::breakdown::loads_for(run.n, o.iterations);
            mine.extend(super::breakdown::measure(
                world,
                &run.timer,
                &run.prov,
                (a, b),
                loads,
            )?);
            return Ok(());
        }
        (_, "outstanding gets") => mlp_row(run, r)?,
        _ => return Ok(()),
    };
    // The server's own cost travels to the issuer's record through the gather.
    let server_all = numalab_mpi::gather::gather_to_root(world.comm(), &m.server)?;
    if world.rank != a {
        return Ok(());
    }
    let server = server_all.map(|v| v[b].clone()).unwrap_or_default();
    mine.push(row_record(run, r, m, server));
    Ok(())
}

/// The issuer's `suite-earth-mpi` record of one row.
fn row_record(run: &Run, r: &Row, m: Measured, server: Vec<f64>) -> Record {
    let (world, prov, o, n, (a, b)) = (run.world, &run.prov, run.o, run.n, (run.a, run.b));
    let (samples, method, issue) = (m.samples, m.method, m.issue);
    let mut rec = Record::new(
        "suite-earth-mpi",
        &format!(
            "{}: {}, {}, {}{}",
            r.part,
            r.op,
            r.place,
            mode_name(r.mode),
            r.g.map(|g| format!(" G={g}")).unwrap_or_default()
        ),
        prov.clone(),
        json!({
            "part": r.part, "op": r.op, "place": r.place, "mode": mode_name(r.mode), "bytes": r.bytes,
            "groups": r.g, "issuer_rank": a, "server_rank": b, "relation": run.rel.name(),
            "ops_per_pass": if r.op.starts_with("block") { ops_for(n, r.bytes) } else { n }, "iterations": o.iterations, "method": method,
        }),
    );
    rec.placement = Some(world.placement_value(&[a, b]));
    rec.add_samples("time", "ns", &samples);
    if !issue.is_empty() {
        rec.add_samples("issuer_overhead", "ns", &issue);
    }
    if !server.is_empty() {
        rec.add_samples("server_cost", "ns", &server);
    }
    if let (Some(bytes), true) = (r.bytes, r.op.starts_with("block")) {
        let gbs: Vec<f64> = samples.iter().map(|t| bytes as f64 / t).collect();
        rec.add_samples("bandwidth", "GB/s", &gbs);
    }
    // Between hosts the window is another machine's memory, reached over the network.
    let same_host = world.placements[a].host == world.placements[b].host;
    if same_host && (r.op == "load word" || r.op == "store word") {
        rec.warnings.push("RMA needs no server: with Open MPI's shared-memory window the issuer copies the bytes itself, so 'remote' is another process's memory on this machine".into());
    }
    rec.warnings.extend(prov.warnings());
    world.warn_shared(&[a, b], &mut rec);
    rec
}

/// Run the plan (collective). Rank 0 gets every record.
pub fn measure(
    world: &World,
    host: &Host,
    plan: &Plan,
    mut progress: impl FnMut(usize, usize),
) -> Result<Option<Vec<Record>>> {
    let o = &plan.options;
    let (a, b) = o.pair;
    let run = Run {
        world,
        timer: Timer::best(),
        prov: Provenance::collect(&host.machine.summary(), &host.machine.source),
        o,
        a,
        b,
        rel: Relation::between(&world.placements[a], &world.placements[b]),
        n: o.ops_per_pass,
    };
    let mut mine: Vec<Record> = Vec::new();
    for (i, r) in plan.rows.iter().enumerate() {
        if world.is_root() {
            progress(i, plan.rows.len());
        }
        measure_row(&run, r, &mut mine)?;
    }
    // Records are built on the issuer; rank 0 gathers them.
    let all = world.gather_records(&mine)?;
    Ok(all.map(|mut v| {
        v.push(seed_record(&run.prov));
        v
    }))
}

/// One record per multiplier: the baseline's phases, the masked runs, % hidden.
fn mask_records(
    prov: &Provenance,
    world: &World,
    o: &Options,
    curves: &[numalab_mpi::loop7::Curve],
    rel: Relation,
) -> Vec<Record> {
    let (a, b) = o.pair;
    curves
        .iter()
        .zip(&o.multipliers)
        .map(|(c, &m)| {
            let mc = crate::earth::hide::MaskCurve {
                via: format!("rank {b} ({})", rel.name()),
                multiplier: m,
                comm_ns: c.comm_ns.clone(),
                comp_ns: c.comp_ns.clone(),
                points: c.points.clone(),
                // u lives in another rank's memory; its placement is that rank's.
                proof: None,
                base_sizing: None,
                sizing: Vec::new(),
            };
            let mut r = Record::new(
                "suite-earth-mpi-mask",
                &format!("mask: loop 7, u on rank {b}, communication ×{m}"),
                prov.clone(),
                json!({ "part": "mask", "multiplier": m, "loop_n": o.loop_n, "issuer_rank": a, "server_rank": b,
                        "relation": rel.name(), "iterations": o.iterations,
                        "method": "baseline: m MPI_Get of all of u, flush, then compute; masked: one coroutine per T iterations posts m MPI_Rget of its part of u and yields until MPI_Test completes them (64 alive)" }),
            );
            r.placement = Some(world.placement_value(&[a, b]));
            r.add_samples("baseline_comm", "ns", &c.comm_ns);
            r.add_samples("baseline_comp", "ns", &c.comp_ns);
            let pct = mc.masked_pct();
            r.set_data(&MaskData {
                points: c
                    .points
                    .iter()
                    .zip(&pct)
                    .map(|((t, v), (_, p))| MaskPoint {
                        t: *t,
                        median_ns: numalab_results::stats::median(v),
                        masked_pct: Some(*p).filter(|p| p.is_finite()),
                    })
                    .collect(),
                best: mc
                    .best()
                    .map(|(t, masked_pct)| MaskBest { t, masked_pct }),
            });
            r.warnings.extend(prov.warnings());
            r
        })
        .collect()
}

/// The seed's Table 1 as a record, to set beside the measured table.
fn seed_record(prov: &Provenance) -> Record {
    let mut r = Record::new(
        "suite-earth-seed",
        "EARTH-MANNA Table 1",
        prov.clone(),
        json!({ "source": "seed 001, Table 1 (EARTH-MANNA, 1997)" }),
    );
    let rows: Vec<SeedRow> = SEED_TABLE1
        .iter()
        .map(|(op, v)| SeedRow {
            op: op.to_string(),
            sequential_local_ns: v[0],
            sequential_remote_ns: v[1],
            pipelined_local_ns: v[2],
            pipelined_remote_ns: v[3],
        })
        .collect();
    r.set_data(&rows);
    r
}
