//! The intervention placements as an experiment: options, plan, records and text.

use super::{measure_party, measure_uown, plan as plan_rows, Cell, Placement, Row};
use crate::experiment::{check_iterations, opt_size, Context, Progress};
use numalab_probe::{LineState, Timer};
use numalab_results::disturb::Rules;
use numalab_results::settle::{self, NoiseOptions};
use numalab_results::stats::median;
use numalab_results::{Record, Unavailable};
use numalab_topo::{Error, Host, Machine, Result, ThreadPlacement, ThreadSpec};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;

/// What the user asks of `intervene`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Options {
    /// The requestor (one CPU); distances are counted from its node.
    pub cpu: String,
    /// Owner states, comma-separated: cexh, cexm, dexd, dext.
    pub states: String,
    /// Distances in hops, comma-separated (None: every distance).
    pub hops: Option<String>,
    /// Placements, comma-separated: x, y, z.
    pub placements: String,
    /// Bytes of lines the owner holds (None: half the private cache).
    pub size: Option<String>,
    /// Timed passes per measurement.
    pub iterations: usize,
    /// How long each latency may take to settle its median, and to what tolerance.
    #[serde(default)]
    pub noise: NoiseOptions,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            cpu: "compact".into(),
            states: "cexh,cexm,dexd,dext".into(),
            hops: None,
            placements: "x,y,z".into(),
            size: None,
            iterations: 5,
            noise: NoiseOptions::default(),
        }
    }
}

/// The parsed lists of the options.
struct Lists {
    rules: Rules,
    states: Vec<LineState>,
    placements: Vec<Placement>,
    hops: Option<Vec<u32>>,
}

impl Options {
    fn lists(&self) -> Result<Lists> {
        ThreadSpec::parse(&self.cpu)?;
        let states = list("--states", &self.states, parse_state)?;
        let placements = list("--placements", &self.placements, Placement::parse)?;
        let hops = self
            .hops
            .as_deref()
            .map(|h| {
                list("--hops", h, |x| {
                    x.parse::<u32>().map_err(|_| {
                        format!("invalid --hops '{x}': expected hop counts such as 0,1,2")
                    })
                })
            })
            .transpose()?;
        check_iterations(self.iterations)?;
        opt_size(self.size.as_deref())?;
        let rules = Rules {
            settle: self.noise.goal().map_err(Error::Input)?,
            ..Rules::default()
        };
        Ok(Lists {
            rules,
            states,
            placements,
            hops,
        })
    }

    /// Check what can be checked without a machine.
    pub fn check(&self) -> Result<()> {
        self.lists().map(|_| ())
    }
}

/// The intervention placements, resolved.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// The requestor.
    pub requestor: ThreadPlacement,
    /// Owner states measured.
    pub states: Vec<LineState>,
    /// One row per distance.
    pub rows: Vec<Row>,
    /// The placements asked for (`--placements`), whose columns the text shows.
    pub placements: Vec<Placement>,
    /// Bytes of lines per measurement.
    pub size: u64,
    /// Timed passes per measurement (at least; more until each median settles).
    pub iterations: usize,
    /// What is done with disturbed passes, and what each median settles to.
    pub rules: Rules,
    /// Things the reader should know about the plan.
    pub warnings: Vec<String>,
}

impl Plan {
    /// Resolve the options on a machine.
    pub fn resolve(m: &Machine, o: &Options) -> Result<Plan> {
        let l = o.lists()?;
        let req = crate::crew::one(m, ThreadSpec::parse(&o.cpu)?, &o.cpu)?;
        let rows = plan_rows(m, &req, l.hops.as_deref(), &l.placements)?;
        let size =
            opt_size(o.size.as_deref())?.unwrap_or_else(|| crate::sizing::half_private_cache(m));
        // Checked before anything is timed (a prepared chase needs 16 lines at a 128-byte stride).
        if size < 4096 {
            return Err(Error::input(format!(
                "invalid --size '{}': at least 4K",
                o.size.as_deref().unwrap_or_default()
            )));
        }
        let mut warnings = Vec::new();
        if rows.len() == 1 {
            warnings.push("one node reachable: only the local (zero-hop) row exists; the xhops/yhops/zhops placements need a second node".into());
        }
        Ok(Plan {
            requestor: req,
            states: l.states,
            rows,
            placements: l.placements.clone(),
            size,
            iterations: o.iterations,
            rules: l.rules,
            warnings,
        })
    }

    fn warnings(&self, ctx: &Context) -> Vec<String> {
        let mut w = ctx.warnings.clone();
        w.extend(self.warnings.iter().cloned());
        w
    }

    /// The plan as records (what `--dry-run` emits).
    pub fn records(&self, ctx: &Context) -> Vec<Record> {
        let (rows, size, prov, warnings) = (&self.rows, self.size, &ctx.prov, self.warnings(ctx));
        let mut recs = Vec::new();
        for row in rows {
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
        recs
    }
}

fn unavailable(c: &Cell) -> Vec<Unavailable> {
    match &c.party {
        Ok(_) => Vec::new(),
        Err(e) => vec![Unavailable {
            feature: format!("placement {}", c.placement.name()),
            reason: e.clone(),
        }],
    }
}

/// Measure every state at every distance and placement, beside the unowned reference.
pub fn run(host: &Host, plan: &Plan, ctx: &Context, progress: Progress) -> Result<Vec<Record>> {
    let (rows, states, size, req, prov) = (
        &plan.rows,
        &plan.states,
        plan.size,
        &plan.requestor,
        &ctx.prov,
    );
    let warnings = plan.warnings(ctx);
    let timer = Timer::best();
    let mut records = Vec::new();
    let mut uown: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    for row in rows {
        let mut r = Record::new(
            "intervene-uown",
            &format!("uown hops {}", row.hops),
            prov.clone(),
            json!({ "hops": row.hops, "home_node": row.uown_home, "requestor_cpu": req.pu.os, "size_bytes": size, "state": "uown", "request": "read", "iterations": plan.iterations, "tolerance_pct": plan.rules.settle.tolerance_pct, "noise_budget_ms": plan.rules.settle.budget_ms,
                "placements": plan.placements.iter().map(|p| p.name()).collect::<Vec<_>>() }),
        );
        r.warnings = warnings.clone();
        match row.uown_home {
            Some(h) => {
                let ms = measure_uown(host, &timer, req, h, size, plan.iterations, plan.rules)?;
                add_measured(&mut r, &ms);
                r.set_data(&json!({ "disturbance": ms.passes }));
                uown.insert(row.hops, ms.ns);
            }
            None => r.unavailable.push(Unavailable {
                feature: "uown_latency".into(),
                reason: format!(
                    "no node with memory {} away",
                    numalab_results::words::count(row.hops as u64, "hop")
                ),
            }),
        }
        // Each unowned row, then each cell, is kept as it ends should a signal end the rest.
        numalab_results::interrupt::keep([r.clone()]);
        records.push(r);
    }
    let total = states.len() * rows.iter().map(|r| r.cells.len()).sum::<usize>();
    let mut done = 0;
    for &st in states {
        for row in rows {
            for c in &row.cells {
                done += 1;
                progress(&format!("intervene: {done}/{total}"));
                let mut r = Record::new(
                    "intervene",
                    &format!("{} hops {} {}", st.name(), row.hops, c.placement.name()),
                    prov.clone(),
                    cell_params(row, c, Some(st), size),
                );
                r.unavailable = unavailable(c);
                r.warnings = warnings.clone();
                if let Ok(p) = &c.party {
                    let ms = measure_party(host, &timer, p, st, size, plan.iterations, plan.rules)?;
                    let du = median(&ms.ns)
                        .zip(uown.get(&row.hops).and_then(|u| median(u)))
                        .map(|(x, u)| x - u);
                    add_measured(&mut r, &ms);
                    r.set_data(&super::InterveneData {
                        delta_u_ns: du,
                        delta_u_rule: "median latency minus the median unowned read latency at the same distance".into(),
                        disturbance: Some(ms.passes.clone()),
                    });
                    r.placement =
                        Some(json!({ "resolved": p, "verified": { "threads": ms.pins } }));
                    numalab_results::distance::attach(&mut r, &ms.distance);
                }
                numalab_results::interrupt::keep([r.clone()]);
                records.push(r);
            }
        }
    }
    Ok(records)
}

/// A measured latency on its record: its samples, the warning of mostly disturbed
/// passes and how its median settled.
fn add_measured(r: &mut Record, ms: &super::Measured) {
    r.add_samples("latency", "ns", &ms.ns);
    r.warnings.extend(ms.passes.warning());
    settle::apply(r, ms.settle.clone());
}

/// A list flag's values; one given twice is refused (`numalab_topo::lists`).
fn list<T: std::fmt::Debug>(
    what: &str,
    s: &str,
    f: impl Fn(&str) -> std::result::Result<T, String>,
) -> Result<Vec<T>> {
    let v: Vec<(&str, T)> = s
        .split(',')
        .map(|x| f(x.trim()).map(|v| (x.trim(), v)).map_err(Error::Input))
        .collect::<Result<_>>()?;
    let key = |(_, v): &&(&str, T)| format!("{v:?}");
    numalab_topo::lists::once_by(what, s, &v, key, |(x, _)| format!("'{x}'"))?;
    Ok(v.into_iter().map(|(_, v)| v).collect())
}

fn parse_state(s: &str) -> std::result::Result<LineState, String> {
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
