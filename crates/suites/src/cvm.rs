//! `suite cvm`: the seed's multithreaded-CVM study as a plan of `dsm run`s — every app ×
//! protocol × threads per rank × net delay in one MPI job — and its tables: execution
//! time normalised to T = 1 with the breakdown (Figures 3, 5, 6), the speedup over the
//! sequential program (Figure 2), the DSM actions (Tables 2 and 3) and the thread-switch
//! classes (Figure 7). Each run's result is checked against its sequential twin.

use numalab_dsm::experiment::{measure, Options, Plan};
use numalab_dsm::Stats;
use numalab_mpi::World;
use numalab_results::output::table;
use numalab_results::Record;
use numalab_topo::{Host, Machine};
use serde::{Deserialize, Serialize};

/// What the user asked for.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CvmOptions {
    /// Apps (default: all).
    pub apps: Vec<String>,
    /// Protocols (default: lmw, lsw, seq).
    pub protocols: Vec<String>,
    /// Threads per rank (default 1, 2, 4, 8).
    pub threads: Vec<usize>,
    /// Net delays (default "0").
    pub net_delays: Vec<String>,
    /// small or paper.
    pub input: String,
    /// Ranks.
    pub ranks: usize,
}

/// Every run of the suite, in order.
pub fn resolve(m: &Machine, o: &CvmOptions) -> Result<Vec<Plan>, String> {
    let mut plans = Vec::new();
    for d in &o.net_delays {
        for app in &o.apps {
            for p in &o.protocols {
                for &t in &o.threads {
                    plans.push(Plan::resolve(
                        m,
                        &Options {
                            app: app.clone(),
                            protocol: p.clone(),
                            threads: t,
                            net_delay: d.clone(),
                            input: o.input.clone(),
                            ranks: o.ranks,
                        },
                    )?);
                }
            }
        }
    }
    Ok(plans)
}

/// Run every plan in this job (collective); rank 0 gets all records. `progress` is
/// called on rank 0 before each run.
pub fn run(
    world: &World,
    host: &Host,
    plans: &[Plan],
    progress: &dyn Fn(usize, &Plan),
) -> Result<Option<Vec<Record>>, String> {
    let mut all = Vec::new();
    for (i, p) in plans.iter().enumerate() {
        if world.rank == 0 {
            progress(i, p);
        }
        if let Some(r) = measure(world, host, p)? {
            all.extend(r);
        }
    }
    Ok((world.rank == 0).then_some(all))
}

struct Row {
    app: String,
    protocol: String,
    t: usize,
    delay: u64,
    ranks: usize,
    sum: Stats,
    time: f64,
    seq: Option<f64>,
}

fn rows(recs: &[Record]) -> Vec<Row> {
    recs.iter()
        .filter(|r| r.kind == "dsm")
        .filter_map(|r| {
            let p = &r.parameters;
            let d = r.data.as_ref()?;
            Some(Row {
                app: p["app"].as_str()?.to_string(),
                protocol: p["protocol"].as_str()?.to_string(),
                t: p["threads"].as_u64()? as usize,
                delay: p["net_delay_ns"].as_u64()?,
                ranks: p["ranks"].as_u64()? as usize,
                sum: serde_json::from_value(d["sum"].clone()).ok()?,
                time: d["time_ns"].as_f64()?,
                seq: d["sequential_ns"].as_f64(),
            })
        })
        .collect()
}

fn pct(x: u64, of: u64) -> String {
    if of == 0 {
        "-".into()
    } else {
        format!("{:.0}", 100.0 * x as f64 / of as f64)
    }
}

/// The suite's text tables, in the seed's layout.
// One block per seed table or figure, in the seed's order; it splits naturally when
// the HTML section (issue 18) gives each block its own builder.
#[allow(clippy::too_many_lines)]
pub fn text(recs: &[Record]) -> String {
    let rs = rows(recs);
    let mut delays: Vec<u64> = rs.iter().map(|r| r.delay).collect();
    delays.sort();
    delays.dedup();
    let mut out = String::new();
    for d in delays {
        let here: Vec<&Row> = rs.iter().filter(|r| r.delay == d).collect();
        let ranks = here.first().map_or(0, |r| r.ranks);
        out.push_str(&format!("\n== net delay {} ns, {ranks} ranks ==\n", d));
        // Figure 2: speedup over the sequential program, T = 1.
        let fig2: Vec<Vec<String>> = here
            .iter()
            .filter(|r| r.t == 1)
            .map(|r| {
                vec![
                    r.app.clone(),
                    r.protocol.clone(),
                    format!("{:.2}", r.time / 1e6),
                    r.seq.map_or("-".into(), |s| format!("{:.2}", s / 1e6)),
                    r.seq.map_or("-".into(), |s| format!("{:.2}", s / r.time)),
                ]
            })
            .collect();
        out.push_str("\nFigure 2: speedup of T=1 runs over the sequential program\n");
        out.push_str(&table(
            &["app", "protocol", "time ms", "sequential ms", "speedup"],
            &fig2,
        ));
        // Figures 3, 5, 6: time normalised to T = 1, with the breakdown (per-rank means).
        let mut fig = Vec::new();
        for r in &here {
            let Some(base) = here
                .iter()
                .find(|b| b.app == r.app && b.protocol == r.protocol && b.t == 1)
            else {
                continue;
            };
            let n = r.ranks.max(1) as f64;
            let bt = base.sum.total_ns as f64 / n;
            let f = |x: u64| format!("{:.2}", x as f64 / n / bt);
            fig.push(vec![
                r.app.clone(),
                r.protocol.clone(),
                r.t.to_string(),
                format!("{:.2}", r.time / base.time),
                f(r.sum.app_ns()),
                f(r.sum.barrier_ns),
                f(r.sum.fault_ns),
                f(r.sum.lock_ns),
                f(r.sum.io_ns),
                f(r.sum.segv_ns),
            ]);
        }
        out.push_str("\nFigures 3/5/6: execution time normalised to T=1, and its parts (per-rank means over the T=1 mean)\n");
        out.push_str(&table(
            &[
                "app", "protocol", "T", "time", "app", "barrier", "fault", "lock", "IO", "segv",
            ],
            &fig,
        ));
        // Table 2 (LMW) and Table 3 (LSW, SEQ).
        let t2: Vec<Vec<String>> = here
            .iter()
            .filter(|r| r.protocol == "lmw")
            .map(|r| {
                let s = &r.sum;
                vec![
                    r.app.clone(),
                    r.t.to_string(),
                    (s.bytes / 1024).to_string(),
                    s.remote_faults.to_string(),
                    s.remote_locks.to_string(),
                    s.overlap_faults.to_string(),
                    s.overlap_locks.to_string(),
                    s.contention_page.to_string(),
                    s.contention_lock.to_string(),
                    s.diffs_created.to_string(),
                    s.diffs_used.to_string(),
                ]
            })
            .collect();
        out.push_str("\nTable 2: LMW DSM actions (all ranks)\n");
        out.push_str(&table(
            &[
                "app",
                "T",
                "BW KB",
                "rem faults",
                "rem locks",
                "overlap faults",
                "overlap locks",
                "cont page",
                "cont lock",
                "diff create",
                "diff use",
            ],
            &t2,
        ));
        let t3: Vec<Vec<String>> = here
            .iter()
            .filter(|r| r.protocol != "lmw")
            .map(|r| {
                let s = &r.sum;
                vec![
                    r.app.clone(),
                    r.protocol.clone(),
                    r.t.to_string(),
                    (s.bytes / 1024).to_string(),
                    s.remote_faults.to_string(),
                    s.lock_msgs.to_string(),
                    s.contention_page.to_string(),
                ]
            })
            .collect();
        out.push_str("\nTable 3: LSW and SEQ behaviour (all ranks)\n");
        out.push_str(&table(
            &[
                "app",
                "protocol",
                "T",
                "BW KB",
                "rem faults",
                "lock msgs",
                "page cont",
            ],
            &t3,
        ));
        // Figure 7.
        let f7: Vec<Vec<String>> = here
            .iter()
            .filter(|r| r.t > 1)
            .map(|r| {
                let s = &r.sum;
                let all = s.sw_useful + s.sw_tail + s.sw_all_block + s.sw_no_work;
                vec![
                    r.app.clone(),
                    r.protocol.clone(),
                    r.t.to_string(),
                    all.to_string(),
                    pct(s.sw_useful, all),
                    pct(s.sw_tail, all),
                    pct(s.sw_no_work, all),
                    pct(s.sw_all_block, all),
                ]
            })
            .collect();
        out.push_str(
            "\nFigure 7: thread switches (% of switches at remote requests and barrier arrivals)\n",
        );
        out.push_str(&table(
            &[
                "app",
                "protocol",
                "T",
                "switches",
                "useful %",
                "tail %",
                "no work %",
                "all block %",
            ],
            &f7,
        ));
    }
    out
}
