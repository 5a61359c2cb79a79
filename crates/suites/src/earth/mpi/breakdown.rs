//! `suite earth --mpi --parts breakdown`: the seed's Table 4, one remote load between
//! ranks stage by stage — the issuer's send, the request's transfer and polling
//! delay, the server's read, load and reply, the reply's transfer, the issuer's read,
//! store and thread resume — each a difference of two stamps taken on the rank doing
//! the step, beside EARTH-MANNA's figures; and the same load as one-sided MPI_Get,
//! where the target takes no part.

use numalab_mpi::breakdown::{self, IssuerStamps, ServerStamps};
use numalab_mpi::{Result, World};
use numalab_probe::Timer;
use numalab_results::output::table;
use numalab_results::{Provenance, Record, Unavailable};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The seed's Table 4 (EARTH-MANNA, ns), in its order.
pub const SEED_TABLE4: [(&str, f64); 12] = [
    ("EU send request to SU", 780.0),
    ("SU fetch request from EU", 500.0),
    ("SU generate and send message", 500.0),
    ("Transmission and polling delay", 1000.0),
    ("Remote SU read message from link", 500.0),
    ("Remote SU perform GET operation", 300.0),
    ("Remote SU generate and send response", 500.0),
    ("Transmission and polling delay", 1000.0),
    ("SU read response from link", 500.0),
    ("SU store result and sync", 300.0),
    ("SU insert into ready queue", 500.0),
    ("EU fetch next thread information", 720.0),
];

/// The seed's total for one remote load.
pub const SEED_TOTAL: f64 = 7100.0;

/// One of the seed's rows a stage stands for.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SeedOp {
    /// The seed's operation.
    pub op: String,
    /// Its delay in the seed (ns).
    pub ns: f64,
}

/// One measured stage of the remote load.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StageRow {
    /// The record's metric holding its samples.
    pub metric: String,
    /// The step as numalab takes it.
    pub step: String,
    /// How it was measured (stamped, or derived and why).
    pub how: String,
    /// The seed's rows it stands for.
    pub seed: Vec<SeedOp>,
}

/// The data of a `suite-earth-mpi-breakdown` record by active message.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BreakdownData {
    /// The stages, in the load's order.
    pub stages: Vec<StageRow>,
    /// The seed's total (ns).
    pub seed_total_ns: f64,
    /// Where the seed's figures come from.
    pub seed_source: String,
}

fn seed_ops(rows: &[usize]) -> Vec<SeedOp> {
    rows.iter()
        .map(|&k| SeedOp {
            op: SEED_TABLE4[k].0.to_string(),
            ns: SEED_TABLE4[k].1,
        })
        .collect()
}

/// Stamps a stage is measured between.
type Span = fn(&IssuerStamps, &ServerStamps) -> (u64, u64);

/// One stage: metric name, the step as numalab takes it, the seed rows it stands
/// for (indices into [`SEED_TABLE4`]), whether it spans both ranks, and its stamps.
struct Stage {
    metric: &'static str,
    step: &'static str,
    seed: &'static [usize],
    cross: bool,
    span: Span,
}

const STAGES: [Stage; 9] = [
    Stage {
        metric: "issuer_send",
        step: "issuer: send the request (MPI_Send returns)",
        seed: &[0, 1, 2],
        cross: false,
        span: |i, _| (i.send, i.sent),
    },
    Stage {
        metric: "request_transfer",
        step: "transfer and polling delay (to the server's MPI_Probe)",
        seed: &[3],
        cross: true,
        span: |i, s| (i.sent, s.seen),
    },
    Stage {
        metric: "server_read",
        step: "server: read the request (MPI_Recv)",
        seed: &[4],
        cross: false,
        span: |_, s| (s.seen, s.read),
    },
    Stage {
        metric: "server_get",
        step: "server: perform the GET (8 B, random line of 64 MiB)",
        seed: &[5],
        cross: false,
        span: |_, s| (s.read, s.loaded),
    },
    Stage {
        metric: "server_send",
        step: "server: send the response (MPI_Send returns)",
        seed: &[6],
        cross: false,
        span: |_, s| (s.loaded, s.sent),
    },
    Stage {
        metric: "reply_transfer",
        step: "transfer and polling delay (to the issuer's MPI_Probe)",
        seed: &[7],
        cross: true,
        span: |i, s| (s.sent, i.seen),
    },
    Stage {
        metric: "issuer_read",
        step: "issuer: read the response (MPI_Recv)",
        seed: &[8],
        cross: false,
        span: |i, _| (i.seen, i.read),
    },
    Stage {
        metric: "issuer_store",
        step: "issuer: store the result, mark the thread ready",
        seed: &[9, 10],
        cross: false,
        span: |i, _| (i.read, i.stored),
    },
    Stage {
        metric: "issuer_resume",
        step: "issuer: resume the waiting thread (coroutine switch)",
        seed: &[11],
        cross: false,
        span: |i, _| (i.stored, i.resumed),
    },
];

/// Remote loads measured per run: one at a time, so a few thousand are seconds.
pub fn loads_for(ops_per_pass: usize, iterations: usize) -> usize {
    (ops_per_pass * iterations).clamp(64, 20_000)
}

/// Measure both forms between `pair` (collective); the issuer returns its records.
pub fn measure(
    world: &World,
    timer: &Timer,
    prov: &Provenance,
    pair: (usize, usize),
    n: usize,
) -> Result<Vec<Record>> {
    let comm = world.comm();
    let (a, _) = pair;
    let stamps = breakdown::remote_load_stages(comm, timer, pair, n, 64 << 20)?;
    let rma = breakdown::rma_load_stages(comm, timer, pair, n, 64 << 20)?;
    if world.rank != a {
        return Ok(Vec::new());
    }
    let mut recs = vec![
        am_record(world, timer, prov, pair, &stamps),
        rma_record(world, prov, pair, &rma),
    ];
    for r in &mut recs {
        r.provenance.timer_step_ns = Some(timer.resolution_ns);
    }
    Ok(recs)
}

/// A stage's median, marked `*` when it is single timer readings at the timer's step.
fn stage_cell(r: &Record, metric: &str) -> String {
    let step = r.provenance.timer_step_ns;
    match r.stat(metric) {
        Some(t) if t.summary.at_timer_step(step) => format!("{:.0} ns *", t.summary.median),
        Some(t) => format!("{:.0} ns", t.summary.median),
        None => "-".into(),
    }
}

/// The footnote when some stage of `r` is marked by [`stage_cell`].
fn step_note(r: &Record) -> String {
    let step = r.provenance.timer_step_ns;
    match step {
        Some(st) if r.stats.iter().any(|t| t.summary.at_timer_step(step)) => {
            numalab_results::stats::timer_step_note(st) + "\n"
        }
        _ => String::new(),
    }
}

/// The active-message form's record: each stage from the issuer's and the server's
/// stamps, the transfers derived when the stamps are not one clock.
fn am_record(
    world: &World,
    timer: &Timer,
    prov: &Provenance,
    (a, b): (usize, usize),
    stamps: &breakdown::Stamps,
) -> Record {
    let rel = numalab_mpi::place::Relation::between(&world.placements[a], &world.placements[b]);
    let one_host = world.placements[a].host == world.placements[b].host;
    // Signed: a transfer stage is negative when the receiver sees the message before
    // the sender's MPI_Send has returned (the send call and the transfer overlap).
    let ns = |(x, y): (u64, u64)| {
        if y >= x {
            timer.ns(y - x)
        } else {
            -timer.ns(x - y)
        }
    };
    let pairs: Vec<(&IssuerStamps, &ServerStamps)> =
        stamps.issuer.iter().zip(&stamps.server).collect();
    // Both ranks read one counter on one host; a message seen before its send began
    // would prove otherwise, and then the transfers are derived instead.
    let causal = pairs
        .iter()
        .all(|(i, s)| s.seen >= i.send && i.seen >= s.loaded);
    let stamped = one_host && causal;
    let mut rec = Record::new(
        "suite-earth-mpi-breakdown",
        "breakdown: one remote load by active message",
        prov.clone(),
        json!({ "part": "breakdown", "op": "remote load", "form": "active message", "issuer_rank": a, "server_rank": b,
                "relation": rel.name(), "loads": pairs.len(),
                "method": "one thread (coroutine) per issuer sends an 8 B request and yields; the server loop on the remote rank probes, receives, loads 8 B at a scrambled line of 64 MiB and replies; the issuer's scheduler probes, receives, stores the word in the thread's slot and resumes it. Each stage is the difference of two timer stamps taken on the rank doing it; one load at a time" }),
    );
    rec.placement = Some(world.placement_value(&[a, b]));
    let mut rows = stage_rows(&mut rec, &pairs, &ns, stamped, one_host);
    if !stamped {
        // Only the sum of the two transfers is knowable: the total less every stage
        // stamped on one rank.
        let v: Vec<f64> = pairs
            .iter()
            .map(|(i, s)| {
                let inside: f64 = STAGES
                    .iter()
                    .filter(|st| !st.cross)
                    .map(|st| ns((st.span)(i, s)))
                    .sum();
                ns((i.send, i.resumed)) - inside
            })
            .collect();
        rec.add_samples("transfers_derived", "ns", &v);
        rows.push(StageRow {
            metric: "transfers_derived".into(),
            step: "both transfers and polling delays".into(),
            how: "derived: total less the stages stamped on one rank".into(),
            seed: seed_ops(&[3, 7]),
        });
    }
    let total: Vec<f64> = pairs.iter().map(|(i, _)| ns((i.send, i.resumed))).collect();
    rec.add_samples("total", "ns", &total);
    rec.set_data(&BreakdownData {
        stages: rows,
        seed_total_ns: SEED_TOTAL,
        seed_source: "seed 001, Table 4 (EARTH-MANNA, 1997)".into(),
    });
    rec.warnings.extend(prov.warnings());
    world.warn_shared(&[a, b], &mut rec);
    rec
}

/// One row per stage (and its samples in `rec`); a stage between ranks is left out,
/// and said unavailable, when the stamps are not one clock.
fn stage_rows(
    rec: &mut Record,
    pairs: &[(&IssuerStamps, &ServerStamps)],
    ns: &dyn Fn((u64, u64)) -> f64,
    stamped: bool,
    one_host: bool,
) -> Vec<StageRow> {
    let mut rows = Vec::new();
    for st in &STAGES {
        let how = if !st.cross {
            "stamped"
        } else if stamped {
            "stamped on both ranks (one host, one counter): sender's MPI_Send returned → receiver's MPI_Probe returned; below 0 when the receiver saw the message first"
        } else {
            rec.unavailable.push(Unavailable {
                feature: format!("{} on its own", st.metric),
                reason: if one_host {
                    "a rank saw a message before its sender began to send it: the ranks' counters are not one clock".into()
                } else {
                    "the ranks run on different hosts, whose clocks are not one clock".into()
                },
            });
            continue;
        };
        let v: Vec<f64> = pairs.iter().map(|(i, s)| ns((st.span)(i, s))).collect();
        rec.add_samples(st.metric, "ns", &v);
        rows.push(StageRow {
            metric: st.metric.into(),
            step: st.step.into(),
            how: how.into(),
            seed: seed_ops(st.seed),
        });
    }
    rows
}

/// The MPI_Get form's record: the call and the flush, timed on the issuer.
fn rma_record(
    world: &World,
    prov: &Provenance,
    (a, b): (usize, usize),
    rma: &breakdown::RmaStages,
) -> Record {
    let rel = numalab_mpi::place::Relation::between(&world.placements[a], &world.placements[b]);
    let mut r2 = Record::new(
        "suite-earth-mpi-breakdown",
        "breakdown: one remote load by MPI_Get",
        prov.clone(),
        json!({ "part": "breakdown", "op": "remote load", "form": "MPI_Get", "issuer_rank": a, "server_rank": b,
                "relation": rel.name(), "loads": rma.get.len(),
                "method": "MPI_Get of 8 B at a scrambled line of a 64 MiB window under a shared lock, then MPI_Win_flush; each call timed on the issuer; passive target, so the target's CPU takes no part" }),
    );
    r2.placement = Some(world.placement_value(&[a, b]));
    let sum: Vec<f64> = rma.get.iter().zip(&rma.flush).map(|(g, f)| g + f).collect();
    r2.add_samples("get_call", "ns", &rma.get);
    r2.add_samples("flush", "ns", &rma.flush);
    r2.add_samples("total", "ns", &sum);
    r2.warnings.extend(prov.warnings());
    world.warn_shared(&[a, b], &mut r2);
    r2
}

/// Table 4's columns.
const TABLE4_HEADER: [&str; 4] = [
    "operation (numalab)",
    "delay",
    "EARTH-MANNA operation",
    "delay",
];

/// Table 4's rows for the active-message record `r`: each stage beside the seed's rows.
fn table4_rows(r: &Record) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut sum = 0.0;
    let stages = r
        .data_as::<BreakdownData>()
        .map(|d| d.stages)
        .unwrap_or_default();
    for st in &stages {
        let m = r.median(&st.metric);
        sum += m.unwrap_or(0.0);
        for (k, sd) in st.seed.iter().enumerate() {
            rows.push(vec![
                if k == 0 {
                    st.step.clone()
                } else {
                    String::new()
                },
                if k == 0 {
                    stage_cell(r, &st.metric)
                } else {
                    String::new()
                },
                sd.op.clone(),
                format!("{:.0} ns", sd.ns),
            ]);
        }
    }
    rows.push(vec![
        "sum of the stage medians".into(),
        format!("{sum:.0} ns"),
        String::new(),
        String::new(),
    ]);
    rows.push(vec![
        "total (send → thread resumed), measured".into(),
        r.median("total")
            .map_or("-".into(), |v| format!("{v:.0} ns")),
        "Total".into(),
        format!("{SEED_TOTAL:.0} ns"),
    ]);
    rows
}

/// Table 4 for the report (None without a breakdown record): the same rows as the text.
pub fn html(recs: &[Record]) -> Option<String> {
    let r = recs.iter().find(|r| {
        r.kind == "suite-earth-mpi-breakdown"
            && r.parameters["form"].as_str() == Some("active message")
    })?;
    Some(
        "<h3>Table 4: one remote load, stage by stage (median ns)</h3>".to_string()
            + &numalab_results::report::html_table(&TABLE4_HEADER, &table4_rows(r)),
    )
}

/// Table 4 in the seed's layout: each measured stage with the seed's rows it stands for.
pub fn text(recs: &[Record]) -> String {
    let find = |form: &str| {
        recs.iter().find(|r| {
            r.kind == "suite-earth-mpi-breakdown" && r.parameters["form"].as_str() == Some(form)
        })
    };
    let mut s = String::new();
    if let Some(r) = find("active message") {
        s.push_str(&format!(
            "EARTH Table 4 between MPI ranks: one remote load, stage by stage (median ns of {} loads; server = {})\n",
            r.parameters["loads"],
            r.parameters["relation"].as_str().unwrap_or("?")
        ));
        let rows = table4_rows(r);
        s.push_str(&table(&TABLE4_HEADER, &rows));
        s.push('\n');
        s.push_str(&step_note(r));
        for u in &r.unavailable {
            s.push_str(&format!("unavailable: {}: {}\n", u.feature, u.reason));
        }
    }
    if let Some(r) = find("MPI_Get") {
        s.push_str(&format!(
            "\nthe same load one-sided (median ns of {} loads; the target's CPU takes no part)\n",
            r.parameters["loads"]
        ));
        let cell = |m: &str| stage_cell(r, m);
        s.push_str(&table(
            &["operation", "delay"],
            &[
                vec![
                    "origin: MPI_Get returns (injection)".into(),
                    cell("get_call"),
                ],
                vec![
                    "origin: MPI_Win_flush returns (transfer, completion)".into(),
                    cell("flush"),
                ],
                vec!["target: service".into(), "none (passive target)".into()],
                vec!["total".into(), cell("total")],
            ],
        ));
        s.push('\n');
        s.push_str(&step_note(r));
    }
    s
}
