//! `numalab intervene`: snbench's three-party intervention placements (Tables 4.15–4.18).

use crate::common::{bad, check_measurable, provenance, CliError, CommonArgs};
use clap::Args;
use numalab_bench::intervene::{self, Cell, Placement, Row};
use numalab_probe::{LineState, Timer};
use numalab_results::output::table;
use numalab_results::stats::median;
use numalab_results::{Record, Unavailable};
use numalab_topo::spec::parse_size;
use numalab_topo::{fmt_bytes, ThreadSpec};
use serde_json::json;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Arguments of `numalab intervene`.
#[derive(Args, Debug)]
pub struct InterveneArgs {
    /// The requestor (one CPU); distances are counted from its node.
    #[arg(long = "cpu", default_value = "compact")]
    cpu: String,
    /// Owner states, comma-separated: cexh, cexm, dexd, dext.
    #[arg(long, default_value = "cexh,cexm,dexd,dext")]
    states: String,
    /// Distances in hops, comma-separated (default: every distance from the requestor's node).
    #[arg(long)]
    hops: Option<String>,
    /// Placements, comma-separated: x (xhops=0), y (yhops=0), z (zhops=0).
    #[arg(long, default_value = "x,y,z")]
    placements: String,
    /// Bytes of lines the owner holds (default: half the L2, so they fit its cache).
    #[arg(long)]
    size: Option<String>,
    /// Timed passes per measurement.
    #[arg(long, default_value_t = 5)]
    iterations: usize,
    /// Print the placements without measuring.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    common: CommonArgs,
}

fn list<T>(s: &str, f: impl Fn(&str) -> Result<T, String>) -> Result<Vec<T>, CliError> {
    s.split(',').map(|x| f(x.trim()).map_err(bad)).collect()
}

fn parse_state(s: &str) -> Result<LineState, String> {
    match LineState::parse(s) {
        Ok(st @ (LineState::Cexh | LineState::Cexm | LineState::Dexd | LineState::Dext)) => Ok(st),
        _ => Err(format!(
            "invalid state '{s}': expected cexh, cexm, dexd or dext (an owner's state)"
        )),
    }
}

fn cell_params(row: &Row, c: &Cell, state: Option<LineState>, size: u64) -> serde_json::Value {
    let mut p = json!({
        "hops": row.hops, "placement": c.placement.name(), "size_bytes": size,
    });
    if let Some(s) = state {
        p["state"] = json!(s.name());
        p["request"] = json!(s.default_request().name());
    }
    if let Ok(x) = &c.party {
        p["requestor_cpu"] = json!(x.requestor.pu.os);
        p["requestor_node"] = json!(x.requestor.pu.node);
        p["owner_cpu"] = json!(x.owner.pu.os);
        p["owner_node"] = json!(x.owner.pu.node);
        p["home_node"] = json!(x.home);
        p["xhops"] = json!(x.xhops);
        p["yhops"] = json!(x.yhops);
        p["zhops"] = json!(x.zhops);
    }
    p
}

/// Run `numalab intervene`.
pub fn run(a: InterveneArgs) -> Result<(), CliError> {
    a.common.validate()?;
    let spec = ThreadSpec::parse(&a.cpu)?;
    let states = list(&a.states, parse_state)?;
    let placements = list(&a.placements, Placement::parse)?;
    let hops = a
        .hops
        .as_deref()
        .map(|h| {
            list(h, |x| {
                x.parse::<u32>()
                    .map_err(|_| format!("invalid --hops '{x}': expected hop counts such as 0,1,2"))
            })
        })
        .transpose()?;
    if a.iterations == 0 {
        return Err(bad("invalid --iterations '0': at least 1 timed pass"));
    }
    let size = a.size.as_deref().map(parse_size).transpose()?;
    check_measurable(&a.common, a.dry_run)?;
    let host = a.common.host()?;
    let m = &host.machine;
    let req = crate::crew_args::one(m, spec)?;
    let rows = intervene::plan(m, &req, hops.as_deref(), &placements)?;
    let size = size.unwrap_or_else(|| numalab_bench::sizing::half_private_cache(m));
    // Checked before anything is timed (a prepared chase needs 16 lines at a 128-byte stride).
    if size < 4096 {
        return Err(bad(format!(
            "invalid --size '{}': at least 4K",
            a.size.as_deref().unwrap_or_default()
        )));
    }
    let (prov, mut warnings) = provenance(&host);
    if rows.len() == 1 {
        warnings.push("one node reachable: only the local (zero-hop) row exists; the xhops/yhops/zhops placements need a second node".into());
    }
    let unavailable = |c: &Cell| -> Vec<Unavailable> {
        match &c.party {
            Ok(_) => Vec::new(),
            Err(e) => vec![Unavailable {
                feature: format!("placement {}", c.placement.name()),
                reason: e.clone(),
            }],
        }
    };
    if a.dry_run {
        let mut recs = Vec::new();
        for row in &rows {
            for c in &row.cells {
                let mut r = Record::new(
                    "intervene-plan",
                    &format!("hops {} {}", row.hops, c.placement.name()),
                    prov.clone(),
                    cell_params(row, c, None, size),
                );
                r.placement =
                    Some(json!({ "resolved": c.party.as_ref().ok(), "uown_home": row.uown_home }));
                r.unavailable = unavailable(c);
                r.warnings = warnings.clone();
                recs.push(r);
            }
        }
        return a.common.emit(&recs, || render_plan(&rows, &warnings));
    }
    let timer = Timer::best();
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut records = Vec::new();
    let mut uown: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    for row in &rows {
        let mut r = Record::new(
            "intervene-uown",
            &format!("uown hops {}", row.hops),
            prov.clone(),
            json!({ "hops": row.hops, "home_node": row.uown_home, "requestor_cpu": req.pu.os, "size_bytes": size, "state": "uown", "request": "read" }),
        );
        match row.uown_home {
            Some(h) => {
                let v = intervene::measure_uown(&host, &timer, &req, h, size, a.iterations)?;
                r.add_samples("latency", "ns", &v);
                uown.insert(row.hops, v);
            }
            None => r.unavailable.push(Unavailable {
                feature: "uown_latency".into(),
                reason: format!("no node with memory {} hops away", row.hops),
            }),
        }
        r.warnings = warnings.clone();
        records.push(r);
    }
    let total = states.len() * rows.iter().map(|r| r.cells.len()).sum::<usize>();
    let mut done = 0;
    for &st in &states {
        for row in &rows {
            for c in &row.cells {
                done += 1;
                if tty {
                    eprint!("\rintervene: {done}/{total}   ");
                }
                let mut r = Record::new(
                    "intervene",
                    &format!("{} hops {} {}", st.name(), row.hops, c.placement.name()),
                    prov.clone(),
                    cell_params(row, c, Some(st), size),
                );
                r.unavailable = unavailable(c);
                if let Ok(p) = &c.party {
                    let ms = intervene::measure_party(&host, &timer, p, st, size, a.iterations)?;
                    r.add_samples("latency", "ns", &ms.ns);
                    let du = median(&ms.ns)
                        .zip(uown.get(&row.hops).and_then(|u| median(u)))
                        .map(|(x, u)| x - u);
                    r.data = Some(
                        json!({ "delta_u_ns": du, "delta_u_rule": "median latency minus the median unowned read latency at the same distance" }),
                    );
                    r.placement =
                        Some(json!({ "resolved": p, "verified": { "threads": ms.pins } }));
                }
                r.warnings = warnings.clone();
                records.push(r);
            }
        }
    }
    if tty {
        eprintln!();
    }
    a.common.emit(&records, || {
        render(&records, &states, &rows, &warnings, a.iterations)
    })
}

fn render_plan(rows: &[Row], warnings: &[String]) -> String {
    let mut out = Vec::new();
    for row in rows {
        for c in &row.cells {
            let cpu = |t: &numalab_topo::ThreadPlacement| {
                format!(
                    "{} (node {})",
                    t.pu.os,
                    t.pu.node.map(|n| n.to_string()).unwrap_or("?".into())
                )
            };
            let h = |x: Option<u32>| x.map(|v| v.to_string()).unwrap_or("?".into());
            out.push(match &c.party {
                Ok(p) => vec![
                    row.hops.to_string(),
                    c.placement.name().into(),
                    cpu(&p.requestor),
                    cpu(&p.owner),
                    p.home.to_string(),
                    format!("{}/{}/{}", h(p.xhops), h(p.yhops), h(p.zhops)),
                ],
                Err(e) => vec![
                    row.hops.to_string(),
                    c.placement.name().into(),
                    format!("unavailable: {e}"),
                    String::new(),
                    String::new(),
                    String::new(),
                ],
            });
        }
    }
    let mut s = String::from("Intervention placements (plan only)\n\n");
    s.push_str(&table(
        &[
            "hops",
            "placement",
            "requestor",
            "owner",
            "home",
            "x/y/z hops",
        ],
        &out,
    ));
    s.push('\n');
    for w in warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}

fn render(
    records: &[Record],
    states: &[LineState],
    rows: &[Row],
    warnings: &[String],
    iterations: usize,
) -> String {
    let med = |kind: &str, name: &str| {
        records
            .iter()
            .find(|r| r.kind == kind && r.name == name)
            .and_then(|r| r.stats.first())
            .map(|s| s.summary.median)
    };
    let mut s = String::new();
    for st in states {
        let _ = writeln!(
            s,
            "{} latency (ns, median of {iterations} passes; ΔU = minus unowned at the same distance)",
            st.name()
        );
        let mut header = vec!["hops", "UOWN"];
        for p in ["xhops=0", "yhops=0", "zhops=0"] {
            header.extend([p, "ΔU"]);
        }
        let body: Vec<Vec<String>> = rows
            .iter()
            .map(|row| {
                let u = med("intervene-uown", &format!("uown hops {}", row.hops));
                let fmt = |v: Option<f64>| v.map(|x| format!("{x:.1}")).unwrap_or("-".into());
                let mut line = vec![row.hops.to_string(), fmt(u)];
                for p in [Placement::X, Placement::Y, Placement::Z] {
                    // The zero-hop row is one local measurement, shown under each placement.
                    let which = if row.hops == 0 { Placement::Local } else { p };
                    let v = med(
                        "intervene",
                        &format!("{} hops {} {}", st.name(), row.hops, which.name()),
                    );
                    line.push(fmt(v));
                    line.push(
                        v.zip(u)
                            .map(|(v, u)| format!("{:+.1}", v - u))
                            .unwrap_or("-".into()),
                    );
                }
                line
            })
            .collect();
        s.push_str(&table(&header, &body));
        s.push_str("\n\n");
    }
    let _ = writeln!(
        s,
        "{} of lines per measurement; requests: cexh/cexm/dexd read, dext rdex",
        records
            .first()
            .and_then(|r| r.parameters["size_bytes"].as_u64())
            .map(fmt_bytes)
            .unwrap_or_default()
    );
    for w in warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}
