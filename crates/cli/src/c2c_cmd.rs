//! `numalab c2c`: the core-to-core matrix (CAS RTT/2 and Modified-line reads).

use crate::common::{bad, check_measurable, provenance, CliError, CommonArgs};
use clap::Args;
use numalab_bench::c2c::{self, C2cSettings, Home, PairResult};
use numalab_probe::Timer;
use numalab_results::output::table;
use numalab_results::Record;
use numalab_topo::cpulist;
use numalab_topo::spec::parse_size;
use serde_json::json;
use std::fmt::Write;

/// Arguments of `numalab c2c`.
#[derive(Args, Debug)]
pub struct C2cArgs {
    /// CPUs to pair (OS numbers, e.g. 0-7,64-71; default: every usable CPU).
    #[arg(long)]
    cpus: Option<String>,
    /// What to measure: cas (ping-pong RTT/2), read (lines Modified in the other core), or both.
    #[arg(long, default_value = "both")]
    metric: String,
    /// Where the line lives: on the writer's (initiator's) node or the reader's.
    #[arg(long, default_value = "writer")]
    home: String,
    /// CAS round trips per pass.
    #[arg(long, default_value_t = 20_000)]
    round_trips: u64,
    /// Passes per pair.
    #[arg(long, default_value_t = 5)]
    iterations: usize,
    /// Bytes of Modified lines the reader reads per pass.
    #[arg(long, default_value = "64K")]
    read_size: String,
    /// Print the pairs and the concurrent rounds without measuring.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    common: CommonArgs,
}

/// Run `numalab c2c`.
pub fn run(a: C2cArgs) -> Result<(), CliError> {
    a.common.validate()?;
    let (cas, read) = match a.metric.as_str() {
        "cas" => (true, false),
        "read" => (false, true),
        "both" => (true, true),
        m => {
            return Err(bad(format!(
                "invalid metric '{m}': expected cas, read or both"
            )))
        }
    };
    let home = match a.home.as_str() {
        "writer" => Home::Writer,
        "reader" => Home::Reader,
        h => {
            return Err(bad(format!(
                "invalid home '{h}': expected writer or reader"
            )))
        }
    };
    if a.iterations == 0 || a.round_trips == 0 {
        return Err(bad("invalid --iterations or --round-trips '0': at least 1"));
    }
    let read_bytes = parse_size(&a.read_size)?;
    check_measurable(&a.common, a.dry_run)?;
    let host = a.common.host()?;
    let m = &host.machine;
    let cpus: Vec<u32> = match &a.cpus {
        Some(s) => {
            let v = cpulist::parse("CPU list", s)?;
            if let Some(c) = v.iter().find(|c| m.pu(**c).is_none()) {
                return Err(bad(format!(
                    "invalid CPU '{c}': usable CPUs are {}",
                    m.cpu_list()
                )));
            }
            v
        }
        None => m.pus.iter().map(|p| p.os).collect(),
    };
    if cpus.len() < 2 {
        return Err(bad(format!(
            "invalid CPU list '{}': c2c needs at least two CPUs",
            cpulist::format(&cpus)
        )));
    }
    let pairs = c2c::pairs(m, &cpus);
    let rounds = c2c::schedule(m, &pairs);
    let (prov, warnings) = provenance(&host);
    let params = json!({
        "cpus": cpulist::format(&cpus), "metric": a.metric, "home": a.home,
        "round_trips": a.round_trips, "iterations": a.iterations, "read_bytes": read_bytes,
        "pairs": pairs.len(), "rounds": rounds.len(),
    });
    if a.dry_run {
        let mut r = Record::new("c2c-plan", &format!("{} pairs", pairs.len()), prov, params);
        r.data = Some(json!({ "rounds": rounds }));
        r.warnings = warnings;
        return a.common.emit(std::slice::from_ref(&r), || {
            let mut s = format!(
                "c2c plan: {} CPUs, {} pairs in {} rounds (pairs in a round share no core, L3 or package and run at once)\n",
                cpus.len(),
                pairs.len(),
                rounds.len()
            );
            for (i, r) in rounds.iter().enumerate().take(20) {
                let ps: Vec<String> = r.iter().map(|p| format!("{}-{}", p.a, p.b)).collect();
                let _ = writeln!(s, "  round {}: {}", i + 1, ps.join(" "));
            }
            if rounds.len() > 20 {
                let _ = writeln!(s, "  … {} more rounds", rounds.len() - 20);
            }
            s
        });
    }
    let timer = Timer::best();
    let settings = C2cSettings {
        round_trips: a.round_trips,
        iterations: a.iterations,
        cas,
        read,
        home,
        read_bytes,
    };
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let results = c2c::measure(&host, &timer, &rounds, &settings, |i, n| {
        if tty {
            eprint!("\rc2c: round {}/{n}   ", i + 1);
        }
    })?;
    if tty {
        eprintln!();
    }
    let mut records: Vec<Record> = results
        .iter()
        .map(|r| {
            let mut p = params.clone();
            p["writer_cpu"] = json!(r.pair.a);
            p["reader_cpu"] = json!(r.pair.b);
            p["smt_siblings"] = json!(r.pair.smt_siblings);
            p["home_node"] = json!(r.home_node);
            let mut rec = Record::new(
                "c2c",
                &format!("cpu{}-cpu{}", r.pair.a, r.pair.b),
                prov.clone(),
                p,
            );
            if let Some(v) = &r.cas_half_ns {
                rec.add_samples("cas_rtt_half", "ns", v);
            }
            if let Some(v) = &r.modified_read_ns {
                rec.add_samples("modified_read", "ns", v);
            }
            rec.warnings = warnings.clone();
            rec
        })
        .collect();
    let matrix = |f: fn(&PairResult) -> Option<&Vec<f64>>| -> Vec<Vec<Option<f64>>> {
        cpus.iter()
            .map(|&x| {
                cpus.iter()
                    .map(|&y| {
                        results
                            .iter()
                            .find(|r| {
                                (r.pair.a, r.pair.b) == (x, y) || (r.pair.a, r.pair.b) == (y, x)
                            })
                            .and_then(|r| f(r).and_then(|v| numalab_results::stats::median(v)))
                    })
                    .collect()
            })
            .collect()
    };
    let cas_m = matrix(|r| r.cas_half_ns.as_ref());
    let read_m = matrix(|r| r.modified_read_ns.as_ref());
    let mut mrec = Record::new("c2c-matrix", &format!("{} CPUs", cpus.len()), prov, params);
    mrec.data = Some(json!({
        "cpus": cpus, "cas_rtt_half_ns": cas_m, "modified_read_ns": read_m,
        "smt_sibling_pairs": pairs.iter().filter(|p| p.smt_siblings).map(|p| [p.a, p.b]).collect::<Vec<_>>(),
        "statistic": "median of passes",
    }));
    mrec.warnings = warnings;
    records.push(mrec);
    let text = || {
        let mut s = String::new();
        let core = |c: &u32| m.pu(*c).map(|p| p.core);
        for (title, m, on) in [
            ("CAS round trip / 2 (ns)", &cas_m, cas),
            (
                "read of a line Modified in the other CPU (ns)",
                &read_m,
                read,
            ),
        ] {
            if !on {
                continue;
            }
            let _ = writeln!(
                s,
                "{title}, median of {} passes; '*' marks SMT siblings",
                a.iterations
            );
            let mut header = vec!["cpu".to_string()];
            header.extend(cpus.iter().map(|c| c.to_string()));
            let rows: Vec<Vec<String>> = cpus
                .iter()
                .zip(m)
                .map(|(c, row)| {
                    let mut r = vec![c.to_string()];
                    r.extend(row.iter().zip(&cpus).map(|(v, d)| match v {
                        Some(v) => format!("{v:.1}{}", if core(c) == core(d) { "*" } else { "" }),
                        None => "-".into(),
                    }));
                    r
                })
                .collect();
            let h: Vec<&str> = header.iter().map(|x| x.as_str()).collect();
            s.push_str(&table(&h, &rows));
            s.push_str("\n\n");
        }
        for w in &records.last().unwrap().warnings {
            let _ = writeln!(s, "warning: {w}");
        }
        s
    };
    a.common.emit(&records, text)
}
