//! `numalab suite earth --mpi`: the EARTH operation table (seed 001, Table 1) between
//! MPI ranks — remote load and store as RMA get and put, block moves, remote call and
//! spawn as active messages to a server loop on the remote rank, each sequential and
//! pipelined, beside the same RMA aimed at the issuer's own window ("local rank") —
//! the issuer's and server's share of a remote call (Table 2), one remote load stage
//! by stage (Table 4, in `earth_mpi_breakdown`), and the memory-level parallelism of
//! G outstanding remote gets.

pub mod breakdown;
mod present;
pub use present::{mask_curve, EarthMpiPresenter, MaskBest, MaskData, MaskPoint, SeedRow};

use numalab_mpi::place::Relation;
use numalab_mpi::remote::{self, Mode, Rma};
use numalab_mpi::{Error, Result, World};
use numalab_probe::Timer;
use numalab_results::{Provenance, Record};
use numalab_topo::Host;
use serde::Serialize;
use serde_json::json;

/// The seed's Table 1 (EARTH-MANNA, ns): operation, sequential local, sequential
/// remote, pipelined local, pipelined remote.
pub const SEED_TABLE1: [(&str, [f64; 4]); 4] = [
    ("spawn thread", [2354.0, 4286.0, 2003.0, 1570.0]),
    ("load word", [2648.0, 7109.0, 1137.0, 1908.0]),
    ("store word", [2560.0, 6458.0, 1060.0, 1749.0]),
    ("call function", [5296.0, 9216.0, 3188.0, 2792.0]),
];

/// The user's request.
#[derive(Debug, Clone, Serialize)]
pub struct Options {
    /// Issuer and server ranks.
    pub pair: (usize, usize),
    /// Operations per pass.
    pub ops_per_pass: usize,
    /// Timed passes.
    pub iterations: usize,
    /// Block-move sizes in bytes.
    pub blocks: Vec<u64>,
    /// Outstanding-get counts G.
    pub groups: Vec<usize>,
    /// Parts: "ops", "split", "breakdown", "mask", "mlp".
    pub parts: Vec<String>,
    /// Loop 7 iterations.
    pub loop_n: usize,
    /// Loop 7 chunk sizes T.
    pub chunks: Vec<usize>,
    /// Loop 7 communication multipliers m.
    pub multipliers: Vec<usize>,
}

/// One row of the plan.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Part of the suite.
    pub part: String,
    /// Operation.
    pub op: String,
    /// "local rank" or "remote rank".
    pub place: String,
    /// Sequential or pipelined.
    pub mode: Mode,
    /// Bytes moved (RMA rows).
    pub bytes: Option<u64>,
    /// G for MLP rows.
    pub g: Option<usize>,
}

/// The plan.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// The options.
    pub options: Options,
    /// Rows in order.
    pub rows: Vec<Row>,
}

const PARTS: [&str; 5] = ["ops", "split", "breakdown", "mask", "mlp"];

impl Plan {
    /// Resolve for a job of `ranks` ranks.
    pub fn resolve(ranks: usize, o: &Options) -> Result<Plan> {
        let (a, b) = o.pair;
        if a >= ranks || b >= ranks || a == b {
            return Err(Error::Usage(format!(
                "invalid --pair '{a},{b}': two different ranks below {ranks}"
            )));
        }
        if let Some(p) = o.parts.iter().find(|p| !PARTS.contains(&p.as_str())) {
            return Err(Error::Usage(format!(
                "invalid --parts item '{p}': with --mpi one of {}",
                PARTS.join(", ")
            )));
        }
        if o.ops_per_pass == 0 || o.iterations == 0 {
            return Err(Error::Usage("invalid --iterations '0': at least 1".into()));
        }
        if let Some(g) = o.groups.iter().find(|&&g| g == 0 || g > 1024) {
            return Err(Error::Usage(format!(
                "invalid --groups item '{g}': 1..=1024 outstanding gets"
            )));
        }
        check_blocks(&o.blocks)?;
        let mut rows = Vec::new();
        let row = |part: &str,
                   op: &str,
                   place: &str,
                   mode: Mode,
                   bytes: Option<u64>,
                   g: Option<usize>| Row {
            part: part.into(),
            op: op.into(),
            place: place.into(),
            mode,
            bytes,
            g,
        };
        let has = |p: &str| o.parts.iter().any(|x| x == p);
        let modes = [Mode::Sequential, Mode::Pipelined];
        if has("ops") {
            for mode in modes {
                for place in ["local rank", "remote rank"] {
                    rows.push(row("ops", "load word", place, mode, Some(8), None));
                    rows.push(row("ops", "store word", place, mode, Some(8), None));
                }
                rows.push(row("ops", "call function", "remote rank", mode, None, None));
                rows.push(row("ops", "spawn thread", "remote rank", mode, None, None));
                for &bb in &o.blocks {
                    rows.push(row(
                        "ops",
                        "block move (get)",
                        "remote rank",
                        mode,
                        Some(bb),
                        None,
                    ));
                }
            }
        }
        if has("split") {
            rows.push(row(
                "split",
                "call function",
                "remote rank",
                Mode::Sequential,
                None,
                None,
            ));
            rows.push(row(
                "split",
                "call function",
                "remote rank",
                Mode::Pipelined,
                None,
                None,
            ));
        }
        if has("breakdown") {
            rows.push(row(
                "breakdown",
                "remote load",
                "remote rank",
                Mode::Sequential,
                Some(8),
                None,
            ));
        }
        if has("mask") {
            rows.push(row(
                "mask",
                "loop 7",
                "remote rank",
                Mode::Pipelined,
                None,
                None,
            ));
        }
        if has("mlp") {
            for &g in &o.groups {
                rows.push(row(
                    "mlp",
                    "outstanding gets",
                    "remote rank",
                    Mode::Pipelined,
                    Some(8),
                    Some(g),
                ));
            }
        }
        Ok(Plan {
            options: o.clone(),
            rows,
        })
    }

    /// The plan as text, for --dry-run.
    pub fn text(&self) -> String {
        let mut s = format!(
            "earth --mpi plan: rank {} issues, rank {} serves; {} operations per pass, {} passes\n",
            self.options.pair.0,
            self.options.pair.1,
            self.options.ops_per_pass,
            self.options.iterations
        );
        for r in &self.rows {
            s.push_str(&format!(
                "  {:<6} {:<18} {:<12} {:<10}{}{}\n",
                r.part,
                r.op,
                r.place,
                format!("{:?}", r.mode).to_lowercase(),
                r.bytes.map(|b| format!(" {b} B")).unwrap_or_default(),
                r.g.map(|g| format!(" G={g}")).unwrap_or_default()
            ));
        }
        s
    }
}

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

/// Run the plan (collective). Rank 0 gets every record.
pub fn measure(
    world: &World,
    host: &Host,
    plan: &Plan,
    mut progress: impl FnMut(usize, usize),
) -> Result<Option<Vec<Record>>> {
    let comm = world.comm();
    let timer = Timer::best();
    let prov = Provenance::collect(&host.machine.summary(), &host.machine.source);
    let o = &plan.options;
    let (a, b) = o.pair;
    let rel = Relation::between(&world.placements[a], &world.placements[b]);
    let n = o.ops_per_pass;
    let mut mine: Vec<Record> = Vec::new();
    for (i, r) in plan.rows.iter().enumerate() {
        if world.is_root() {
            progress(i, plan.rows.len());
        }
        let target = if r.place == "local rank" { a } else { b };
        let mut server: Vec<f64> = Vec::new();
        let mut issue: Vec<f64> = Vec::new();
        let (samples, method): (Vec<f64>, String) = match (r.part.as_str(), r.op.as_str()) {
            (_, "load word") | (_, "block move (get)") => (
                remote::rma_ops(
                    comm,
                    &timer,
                    a,
                    target,
                    Rma::Get,
                    r.bytes.unwrap_or(8) as usize,
                    r.mode,
                    ops_for(n, r.bytes),
                    o.iterations,
                )?,
                format!(
                    "MPI_Get of {} B at distinct lines{}",
                    r.bytes.unwrap_or(8),
                    if r.mode == Mode::Sequential {
                        ", MPI_Win_flush after each"
                    } else {
                        ", one MPI_Win_flush after all"
                    }
                ),
            ),
            (_, "store word") => (
                remote::rma_ops(
                    comm,
                    &timer,
                    a,
                    target,
                    Rma::Put,
                    8,
                    r.mode,
                    n,
                    o.iterations,
                )?,
                format!(
                    "MPI_Put of 8 B at distinct lines{}",
                    if r.mode == Mode::Sequential {
                        ", MPI_Win_flush after each"
                    } else {
                        ", one MPI_Win_flush after all"
                    }
                ),
            ),
            (_, "call function") | (_, "spawn thread") => {
                let spawn = r.op == "spawn thread";
                let am =
                    remote::active_messages(comm, &timer, (a, b), spawn, r.mode, n, o.iterations)?;
                server = am.server;
                issue = am.issue;
                (am.per_op, format!(
                    "active message to a server loop on rank {b} (MPI_Send of the argument; the server {} and sends the result back){}",
                    if spawn { "runs work() in a new coroutine on a pooled stack" } else { "calls work()" },
                    if r.mode == Mode::Sequential { "; each call takes the last result" } else { "; all requests sent, then all replies received" }
                ))
            }
            (_, "loop 7") => {
                let curves = numalab_mpi::loop7::mask(
                    comm,
                    &timer,
                    (a, b),
                    o.loop_n,
                    &o.multipliers,
                    &o.chunks,
                    o.iterations,
                )?;
                if world.rank == a {
                    mine.extend(mask_records(&prov, world, o, &curves, rel));
                }
                continue;
            }
            ("breakdown", _) => {
                let loads = breakdown::loads_for(n, o.iterations);
                mine.extend(breakdown::measure(world, &timer, &prov, (a, b), loads)?);
                continue;
            }
            (_, "outstanding gets") => {
                let g = r.g.unwrap_or(1);
                (remote::mlp_gets(comm, &timer, (a, b), g, n.max(g) * 4, 64 << 20, o.iterations)?,
                 format!("{g} MPI_Rget of 8 B at random lines of a 64 MiB window outstanding, then MPI_Waitall; ns per get"))
            }
            _ => continue,
        };
        // The server's own cost travels to the issuer's record through the gather.
        let server_all = numalab_mpi::gather::gather_to_root(comm, &server)?;
        if world.rank != a {
            continue;
        }
        let server = server_all.map(|v| v[b].clone()).unwrap_or_default();
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
                "groups": r.g, "issuer_rank": a, "server_rank": b, "relation": rel.name(),
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
        if r.op == "load word" || r.op == "store word" {
            rec.warnings.push("RMA needs no server: with Open MPI's shared-memory window the issuer copies the bytes itself, so 'remote' is another process's memory on this machine".into());
        }
        rec.warnings.extend(prov.warnings());
        numalab_mpi::p2p::warn_shared(world, &[a, b], &mut rec);
        mine.push(rec);
    }
    // Records are built on the issuer; rank 0 gathers them.
    let all = world.gather_records(&mine)?;
    Ok(all.map(|mut v| {
        v.push(seed_record(&prov));
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
            r.set_data(&present::MaskData {
                points: c
                    .points
                    .iter()
                    .zip(&pct)
                    .map(|((t, v), (_, p))| present::MaskPoint {
                        t: *t,
                        median_ns: numalab_results::stats::median(v),
                        masked_pct: Some(*p).filter(|p| p.is_finite()),
                    })
                    .collect(),
                best: mc
                    .best()
                    .map(|(t, masked_pct)| present::MaskBest { t, masked_pct }),
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
    let rows: Vec<present::SeedRow> = SEED_TABLE1
        .iter()
        .map(|(op, v)| present::SeedRow {
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

/// Block sizes: at least 1 byte, at most 64 MiB (one MPI message, a window per row).
fn check_blocks(blocks: &[u64]) -> Result<()> {
    match blocks.iter().find(|&&b| b == 0 || b > (64 << 20)) {
        Some(b) => Err(Error::Usage(format!(
            "invalid --blocks item '{b}': 1 B to 64 MiB"
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> Options {
        Options {
            pair: (0, 1),
            ops_per_pass: 64,
            iterations: 3,
            blocks: vec![4096],
            groups: vec![1, 8],
            parts: vec!["ops".into(), "split".into(), "mask".into(), "mlp".into()],
            loop_n: 64,
            chunks: vec![8],
            multipliers: vec![1],
        }
    }

    #[test]
    fn the_plan_has_every_table_1_row_both_ways_and_rejects_bad_input() {
        let p = Plan::resolve(2, &opts()).unwrap();
        for op in ["load word", "store word", "call function", "spawn thread"] {
            for m in [Mode::Sequential, Mode::Pipelined] {
                assert!(
                    p.rows.iter().any(|r| r.part == "ops"
                        && r.op == op
                        && r.mode == m
                        && r.place == "remote rank"),
                    "{op}"
                );
            }
        }
        assert_eq!(p.rows.iter().filter(|r| r.part == "mlp").count(), 2);
        let mut o = opts();
        o.parts = vec!["breakdown".into()];
        let b = Plan::resolve(2, &o).unwrap();
        assert_eq!(b.rows.len(), 1);
        assert_eq!(b.rows[0].op, "remote load");
        let mut o = opts();
        o.parts = vec!["switch".into()];
        assert!(Plan::resolve(2, &o)
            .unwrap_err()
            .to_string()
            .contains("'switch'"));
        let mut o = opts();
        o.blocks = vec![0];
        assert!(Plan::resolve(2, &o).is_err());
        let mut o = opts();
        o.pair = (0, 2);
        assert!(Plan::resolve(2, &o).unwrap_err().is_user_error());
    }
}
