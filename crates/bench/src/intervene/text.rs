//! Intervention records as terminal text: the plan's placements, or per state the
//! latency at each distance and placement beside the unowned read (ΔU).

use numalab_results::output::table;
use numalab_results::present::{of, warning_lines};
use numalab_results::settle;
use numalab_results::Record;
use numalab_topo::fmt_bytes;
use serde_json::Value;
use std::fmt::Write;

fn opt(v: &Value) -> String {
    v.as_u64().map(|x| x.to_string()).unwrap_or("?".into())
}

/// The text of `records`: the plan when it holds one, else the measured tables.
pub(super) fn render(records: &[Record]) -> Option<String> {
    let plan: Vec<&Record> = of(records, "intervene-plan").collect();
    let mut s = if plan.is_empty() {
        measured(records)?
    } else {
        planned(&plan)
    };
    s.push_str(&warning_lines(records));
    Some(s)
}

/// Each placement at each distance: requestor, owner, home and x/y/z hops.
fn planned(plan: &[&Record]) -> String {
    let cpu = |p: &Value, who: &str| {
        format!(
            "{} (node {})",
            p[format!("{who}_cpu")],
            opt(&p[format!("{who}_node")])
        )
    };
    let rows: Vec<Vec<String>> = plan
        .iter()
        .map(|r| {
            let p = &r.parameters;
            let head = vec![
                p["hops"].to_string(),
                p["placement"].as_str().unwrap_or("?").into(),
            ];
            let rest = match r.unavailable.first() {
                None => vec![
                    cpu(p, "requestor"),
                    cpu(p, "owner"),
                    p["home_node"].to_string(),
                    format!(
                        "{}/{}/{}",
                        opt(&p["xhops"]),
                        opt(&p["yhops"]),
                        opt(&p["zhops"])
                    ),
                ],
                Some(u) => vec![
                    format!("unavailable: {}", u.reason),
                    String::new(),
                    String::new(),
                    String::new(),
                ],
            };
            [head, rest].concat()
        })
        .collect();
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
        &rows,
    ));
    s.push('\n');
    s
}

/// Medians of records found by kind and name.
struct Lookup<'a> {
    records: &'a [Record],
}

impl Lookup<'_> {
    fn find(&self, kind: &str, name: &str) -> Option<&Record> {
        self.records
            .iter()
            .find(|r| r.kind == kind && r.name == name)
    }

    fn med(&self, kind: &str, name: &str) -> Option<f64> {
        self.find(kind, name)
            .and_then(|r| r.stats.first())
            .map(|s| s.summary.median)
    }

    /// A median that did not settle says so beside it (its record's warning says why).
    fn fmt(&self, kind: &str, name: &str) -> String {
        self.med(kind, name)
            .map_or("-".into(), |x| match self.find(kind, name) {
                Some(r) => settle::cell(r, format!("{x:.1}")),
                None => format!("{x:.1}"),
            })
    }
}

/// The line states of the intervene records, in the order first met.
fn states_of(records: &[Record]) -> Vec<&str> {
    let mut states: Vec<&str> = Vec::new();
    for r in of(records, "intervene") {
        if let Some(st) = r.parameters["state"].as_str() {
            if !states.contains(&st) {
                states.push(st);
            }
        }
    }
    states
}

/// Only the placements asked for: --placements x shows no y and z columns.
fn shown_placements(asked: &Value) -> Vec<&'static str> {
    let all = ["xhops=0", "yhops=0", "zhops=0"];
    match asked.as_array() {
        Some(v) => all
            .into_iter()
            .filter(|n| v.iter().any(|p| p.as_str() == Some(n)))
            .collect(),
        // Records written before the placements were kept show all three.
        None => all.to_vec(),
    }
}

/// Per state, one row per distance: the unowned read, then each placement and ΔU.
fn measured(records: &[Record]) -> Option<String> {
    let uown: Vec<&Record> = of(records, "intervene-uown").collect();
    let iterations = &uown.first()?.parameters["iterations"];
    let tol = uown.first()?.parameters["tolerance_pct"]
        .as_f64()
        .unwrap_or(settle::DEFAULT_TOLERANCE_PCT);
    let look = Lookup { records };
    let shown = shown_placements(&uown.first()?.parameters["placements"]);
    let mut s = String::new();
    for st in states_of(records) {
        let _ = writeln!(
            s,
            "{st} latency (ns, median of the undisturbed passes, or of all where none was undisturbed: at least {iterations}, more until within ±{tol} %; ΔU = minus unowned at the same distance)"
        );
        let mut header = vec!["hops", "UOWN"];
        for name in &shown {
            header.extend([*name, "ΔU"]);
        }
        let body: Vec<Vec<String>> = uown
            .iter()
            .map(|u_rec| distance_row(&look, st, u_rec, &shown))
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
    Some(s)
}

/// State `st` at the distance of the unowned record `u_rec`: its hops, the unowned
/// median, then each shown placement's median and its ΔU.
fn distance_row(look: &Lookup, st: &str, u_rec: &Record, shown: &[&str]) -> Vec<String> {
    let hops = &u_rec.parameters["hops"];
    let uname = format!("uown hops {hops}");
    let u = look.med("intervene-uown", &uname);
    let mut line = vec![hops.to_string(), look.fmt("intervene-uown", &uname)];
    for &name in shown {
        // The zero-hop row is one local measurement, shown under each placement.
        let which = if hops == 0 { "local" } else { name };
        let name = format!("{st} hops {hops} {which}");
        let v = look.med("intervene", &name);
        line.push(look.fmt("intervene", &name));
        let settled = [
            ("intervene", name.as_str()),
            ("intervene-uown", uname.as_str()),
        ]
        .iter()
        .all(|(k, n)| look.find(k, n).is_none_or(|r| r.settled()));
        line.push(v.zip(u).map_or("-".into(), |(v, u)| {
            let d = format!("{:+.1}", v - u);
            if settled {
                d
            } else {
                format!("{d} {}*", settle::UNSETTLED)
            }
        }));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_results::Provenance;

    /// Issue 40 item 20: `--placements x` shows the x column only, not y and z.
    #[test]
    fn only_the_placements_asked_for_get_columns() {
        let prov = Provenance::collect("t", "s");
        let params = serde_json::json!({
            "iterations": 3, "hops": 1, "placements": ["xhops=0"], "state": "cexh", "size_bytes": 4096,
        });
        let mut u = Record::new(
            "intervene-uown",
            "uown hops 1",
            prov.clone(),
            params.clone(),
        );
        u.add_samples("latency", "ns", &[100.0, 101.0, 102.0]);
        let mut x = Record::new("intervene", "cexh hops 1 xhops=0", prov, params);
        x.add_samples("latency", "ns", &[90.0, 91.0, 92.0]);
        let text = measured(&[u, x]).unwrap();
        assert!(text.contains("xhops=0"), "{text}");
        assert!(
            !text.contains("yhops=0") && !text.contains("zhops=0"),
            "{text}"
        );
        assert!(text.contains("-10.0"), "{text}");
    }
}
