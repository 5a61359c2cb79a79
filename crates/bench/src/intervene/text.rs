//! Intervention records as terminal text: the plan's placements, or per state the
//! latency at each distance and placement beside the unowned read (ΔU).

use numalab_results::output::table;
use numalab_results::present::{of, warning_lines};
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

/// Per state, one row per distance: the unowned read, then each placement and ΔU.
fn measured(records: &[Record]) -> Option<String> {
    let uown: Vec<&Record> = of(records, "intervene-uown").collect();
    let iterations = &uown.first()?.parameters["iterations"];
    let mut states: Vec<&str> = Vec::new();
    for r in of(records, "intervene") {
        if let Some(st) = r.parameters["state"].as_str() {
            if !states.contains(&st) {
                states.push(st);
            }
        }
    }
    let med = |kind: &str, name: &str| {
        records
            .iter()
            .find(|r| r.kind == kind && r.name == name)
            .and_then(|r| r.stats.first())
            .map(|s| s.summary.median)
    };
    let fmt = |v: Option<f64>| v.map(|x| format!("{x:.1}")).unwrap_or("-".into());
    // Only the placements asked for: --placements x shows no y and z columns.
    let all = ["xhops=0", "yhops=0", "zhops=0"];
    let asked = &uown.first()?.parameters["placements"];
    let shown: Vec<&str> = match asked.as_array() {
        Some(v) => all
            .into_iter()
            .filter(|n| v.iter().any(|p| p.as_str() == Some(n)))
            .collect(),
        // Records written before the placements were kept show all three.
        None => all.to_vec(),
    };
    let mut s = String::new();
    for st in states {
        let _ = writeln!(
            s,
            "{st} latency (ns, median of {iterations} passes; ΔU = minus unowned at the same distance)"
        );
        let mut header = vec!["hops", "UOWN"];
        for name in &shown {
            header.extend([*name, "ΔU"]);
        }
        let body: Vec<Vec<String>> = uown
            .iter()
            .map(|u_rec| {
                let hops = &u_rec.parameters["hops"];
                let u = med("intervene-uown", &format!("uown hops {hops}"));
                let mut line = vec![hops.to_string(), fmt(u)];
                for &name in &shown {
                    // The zero-hop row is one local measurement, shown under each placement.
                    let which = if hops == 0 { "local" } else { name };
                    let v = med("intervene", &format!("{st} hops {hops} {which}"));
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
    Some(s)
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
