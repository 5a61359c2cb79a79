//! The report's sections, each built from the records it needs (None: no data).

use crate::plot::{self, LineChart, Series};
use crate::record::Record;
use crate::report::{figure, html_table, med, num};
use serde_json::Value;
use std::collections::BTreeMap;

fn of<'a>(records: &'a [Record], kind: &'a str) -> impl Iterator<Item = &'a Record> + 'a {
    records.iter().filter(move |r| r.kind == kind)
}

fn bytes(v: u64) -> String {
    plot::short_bytes(v as f64) + "B"
}

/// Machine summary from the topo record (or any record's provenance).
pub fn machine(records: &[Record]) -> Option<String> {
    let topo = of(records, "topo").next();
    let prov = records.first().map(|r| &r.provenance)?;
    let mut rows = vec![
        vec!["CPU".into(), prov.cpu_model.clone().unwrap_or("-".into())],
        vec!["topology".into(), prov.topology.clone()],
        vec!["host".into(), prov.hostname.clone()],
    ];
    let mut s = String::new();
    if let Some(d) = topo.and_then(|t| t.data.as_ref()) {
        let caches: Vec<String> = d["caches"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                format!(
                    "L{} {} (shared by {} CPUs)",
                    c["level"],
                    bytes(c["bytes"].as_u64().unwrap_or(0)),
                    c["shared_by"]
                )
            })
            .collect();
        rows.push(vec!["data caches".into(), caches.join(", ")]);
        let nodes: Vec<Vec<String>> = d["nodes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|n| {
                vec![
                    n["os"].to_string(),
                    bytes(n["total_bytes"].as_u64().unwrap_or(0)),
                    n["local_cpus"]
                        .as_array()
                        .map(|c| c.len())
                        .unwrap_or(0)
                        .to_string(),
                    if n["cpu_less"] == true {
                        "CPU-less"
                    } else {
                        ""
                    }
                    .into(),
                ]
            })
            .collect();
        s.push_str(&html_table(&["", ""], &rows));
        s.push_str(&html_table(&["node", "memory", "CPUs", "kind"], &nodes));
    } else {
        s.push_str(&html_table(&["", ""], &rows));
    }
    Some(s)
}

/// The memory-hierarchy sweep: latency against size, cache sizes marked.
pub fn hierarchy(records: &[Record]) -> Option<String> {
    let mut out = String::new();
    for r in of(records, "latency-sweep") {
        let d = r.data.as_ref()?;
        let points: Vec<(f64, f64)> = d["points"]
            .as_array()?
            .iter()
            .filter_map(|p| Some((p["size_bytes"].as_f64()?, p["median_ns"].as_f64()?)))
            .collect();
        let markers = d["topology_caches"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| Some((c["bytes"].as_f64()?, format!("L{}", c["level"]))))
            .collect();
        let chart = plot::line_chart(&LineChart {
            title: r.name.clone(),
            x_label: "buffer size".into(),
            y_label: "ns per load (median)".into(),
            log_x: true,
            x_bytes: true,
            series: vec![Series {
                name: format!(
                    "{} {}",
                    r.parameters["kernel"].as_str().unwrap_or(""),
                    r.parameters["state"].as_str().unwrap_or("")
                ),
                points: points.clone(),
            }],
            markers,
        });
        let plateaus: Vec<Vec<String>> = d["plateaus"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| {
                vec![
                    p["level"].as_str().unwrap_or("").into(),
                    format!(
                        "{} – {}",
                        bytes(p["from_bytes"].as_u64().unwrap_or(0)),
                        bytes(p["to_bytes"].as_u64().unwrap_or(0))
                    ),
                    num(p["median_ns"].as_f64(), 2),
                    p["topology_bytes"]
                        .as_u64()
                        .map(bytes)
                        .unwrap_or("-".into()),
                ]
            })
            .collect();
        let pts: Vec<Vec<String>> = points
            .iter()
            .map(|(s, l)| vec![bytes(*s as u64), format!("{l:.2}")])
            .collect();
        let tables = html_table(
            &["plateau", "sizes", "median ns", "topology says"],
            &plateaus,
        ) + &html_table(&["size", "median ns"], &pts);
        out.push_str(&figure(chart, tables));
    }
    (!out.is_empty()).then_some(out)
}

/// Latency of prepared coherence states as bars.
pub fn states(records: &[Record]) -> Option<String> {
    let rows: Vec<(String, f64, &Record)> = of(records, "latency")
        .filter(|r| r.parameters["state"].as_str().is_some_and(|s| s != "warm"))
        .filter_map(|r| {
            let label = format!(
                "{} {}",
                r.parameters["state"].as_str()?,
                r.parameters["kernel"].as_str()?
            );
            Some((label, med(r, "latency")?, r))
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let bars: Vec<(String, f64)> = rows.iter().map(|(l, v, _)| (l.clone(), *v)).collect();
    let chart = plot::bar_chart("latency per line state (median, ns)", "ns per load", &bars);
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|(l, v, r)| {
            vec![
                l.clone(),
                format!("{v:.1}"),
                num(med(r, "own_cache_reference"), 1),
                bytes(r.parameters["size_bytes"].as_u64().unwrap_or(0)),
                r.parameters["helper_cpus"].to_string(),
            ]
        })
        .collect();
    Some(figure(
        chart,
        html_table(
            &[
                "state request",
                "median ns",
                "own-cache ns",
                "size",
                "helpers",
            ],
            &table,
        ),
    ))
}

/// Bandwidth per kernel: single-requestor records and aggregates.
pub fn bandwidth(records: &[Record]) -> Option<String> {
    let mut rows: Vec<(String, f64, String)> = Vec::new();
    for r in of(records, "bandwidth") {
        let p = &r.parameters;
        let n = p["requestors"].as_u64().unwrap_or(1);
        let metric = if n > 1 {
            "aggregate_bandwidth"
        } else {
            "bandwidth"
        };
        if let Some(v) = med(r, metric) {
            let label = format!("{} ×{n}", p["kernel"].as_str().unwrap_or("?"));
            rows.push((label, v, p["state"].as_str().unwrap_or("").into()));
        }
    }
    if rows.is_empty() {
        return None;
    }
    let bars: Vec<(String, f64)> = rows.iter().map(|(l, v, _)| (l.clone(), *v)).collect();
    let chart = plot::bar_chart("bandwidth (median, GB/s)", "GB/s", &bars);
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|(l, v, s)| vec![l.clone(), s.clone(), format!("{v:.2}")])
        .collect();
    Some(figure(
        chart,
        html_table(&["kernel × requestors", "state", "GB/s"], &table),
    ))
}

fn matrix_of(v: &Value) -> Vec<Vec<Option<f64>>> {
    v.as_array()
        .into_iter()
        .flatten()
        .map(|row| {
            row.as_array()
                .into_iter()
                .flatten()
                .map(|x| x.as_f64())
                .collect()
        })
        .collect()
}

fn grid_table(rows: &[String], cols: &[String], m: &[Vec<Option<f64>>]) -> String {
    let mut header = vec![""];
    header.extend(cols.iter().map(|c| c.as_str()));
    let body: Vec<Vec<String>> = rows
        .iter()
        .zip(m)
        .map(|(r, vals)| {
            let mut l = vec![r.clone()];
            l.extend(vals.iter().map(|v| num(*v, 1)));
            l
        })
        .collect();
    html_table(&header, &body)
}

/// The c2c heatmaps.
pub fn c2c(records: &[Record]) -> Option<String> {
    let r = of(records, "c2c-matrix").last()?;
    let d = r.data.as_ref()?;
    let cpus: Vec<String> = d["cpus"]
        .as_array()?
        .iter()
        .map(|c| c.to_string())
        .collect();
    let mut out = String::new();
    for (key, title) in [
        ("cas_rtt_half_ns", "CAS round trip / 2 (ns)"),
        (
            "modified_read_ns",
            "read of a line Modified in the other CPU (ns)",
        ),
    ] {
        let m = matrix_of(&d[key]);
        if m.iter().flatten().all(|v| v.is_none()) {
            continue;
        }
        let chart = plot::heatmap(title, &cpus, &cpus, &m);
        out.push_str(&format!("<h3>{title}</h3>"));
        out.push_str(&figure(chart, grid_table(&cpus, &cpus, &m)));
    }
    (!out.is_empty()).then_some(out)
}

/// Latency and bandwidth matrices (initiator domain × memory node).
pub fn matrices(records: &[Record]) -> Option<String> {
    let mut out = String::new();
    for (kind, metric, title) in [
        ("matrix-latency", "latency", "latency (ns)"),
        ("matrix-bandwidth", "bandwidth", "bandwidth (GB/s)"),
    ] {
        let cells: Vec<(u64, u64, f64)> = of(records, kind)
            .filter_map(|r| {
                Some((
                    r.parameters["domain"].as_u64()?,
                    r.parameters["mem_node"].as_u64()?,
                    med(r, metric)?,
                ))
            })
            .collect();
        if cells.is_empty() {
            continue;
        }
        let doms: Vec<u64> = cells
            .iter()
            .map(|c| c.0)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let nodes: Vec<u64> = cells
            .iter()
            .map(|c| c.1)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let m: Vec<Vec<Option<f64>>> = doms
            .iter()
            .map(|d| {
                nodes
                    .iter()
                    .map(|n| cells.iter().find(|c| c.0 == *d && c.1 == *n).map(|c| c.2))
                    .collect()
            })
            .collect();
        let rl: Vec<String> = doms.iter().map(|d| format!("dom {d}")).collect();
        let cl: Vec<String> = nodes.iter().map(|n| format!("node {n}")).collect();
        out.push_str(&format!("<h3>{title}</h3>"));
        out.push_str(&figure(
            plot::heatmap(title, &rl, &cl, &m),
            grid_table(&rl, &cl, &m),
        ));
    }
    (!out.is_empty()).then_some(out)
}

/// The invalidation curve: latency and bandwidth against sharer count.
pub fn invalidate(records: &[Record]) -> Option<String> {
    let recs: Vec<&Record> = of(records, "invalidate").collect();
    if recs.is_empty() {
        return None;
    }
    let x = |r: &Record| r.parameters["sharers"].as_f64().unwrap_or(0.0);
    let series = |metrics: &[(&str, &str)]| -> Vec<Series> {
        metrics
            .iter()
            .map(|(m, name)| Series {
                name: (*name).into(),
                points: recs
                    .iter()
                    .filter_map(|r| Some((x(r), med(r, m)?)))
                    .collect(),
            })
            .filter(|s| !s.points.is_empty())
            .collect()
    };
    let chart = |title: &str, y: &str, s: Vec<Series>| {
        plot::line_chart(&LineChart {
            title: title.into(),
            x_label: "sharers".into(),
            y_label: y.into(),
            log_x: false,
            x_bytes: false,
            series: s,
            markers: Vec::new(),
        })
    };
    let lat = chart(
        "invalidation latency",
        "ns per load",
        series(&[
            ("rdex_latency", "RDEX"),
            ("upgrade_latency", "UPGRD"),
            ("uown_rdex_latency", "UOWN"),
        ]),
    );
    let bw = chart(
        "invalidation bandwidth",
        "GB/s",
        series(&[
            ("rdex_bandwidth", "RDEX"),
            ("upgrade_bandwidth", "UPGRD"),
            ("zero_bandwidth", "zero"),
        ]),
    );
    let rows: Vec<Vec<String>> = recs
        .iter()
        .map(|r| {
            let p = &r.parameters;
            vec![
                p["sharers"].to_string(),
                p["newest_node"].to_string(),
                p["hops"].to_string(),
                num(med(r, "rdex_latency"), 1),
                num(med(r, "upgrade_latency"), 1),
                num(med(r, "uown_rdex_latency"), 1),
                num(med(r, "rdex_bandwidth"), 2),
                num(med(r, "upgrade_bandwidth"), 2),
                num(med(r, "zero_bandwidth"), 2),
            ]
        })
        .collect();
    let table = html_table(
        &[
            "#sh",
            "node",
            "hops",
            "RDEX ns",
            "UPGRD ns",
            "UOWN ns",
            "RDEX GB/s",
            "UPGRD GB/s",
            "zero GB/s",
        ],
        &rows,
    );
    Some(figure(lat, String::new()) + &figure(bw, table))
}

/// Intervention latencies per state, placement and distance, with ΔU.
pub fn intervene(records: &[Record]) -> Option<String> {
    let uown: BTreeMap<u64, f64> = of(records, "intervene-uown")
        .filter_map(|r| Some((r.parameters["hops"].as_u64()?, med(r, "latency")?)))
        .collect();
    let rows: Vec<Vec<String>> = of(records, "intervene")
        .filter_map(|r| {
            let p = &r.parameters;
            let h = p["hops"].as_u64()?;
            let v = med(r, "latency");
            let u = uown.get(&h).copied();
            Some(vec![
                p["state"].as_str()?.into(),
                h.to_string(),
                p["placement"].as_str()?.into(),
                num(u, 1),
                num(v, 1),
                num(v.zip(u).map(|(v, u)| v - u), 1),
            ])
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let bars: Vec<(String, f64)> = rows
        .iter()
        .filter_map(|r| Some((format!("{} {}h {}", r[0], r[1], r[2]), r[4].parse().ok()?)))
        .collect();
    let chart = plot::bar_chart("intervention latency (median, ns)", "ns per load", &bars);
    Some(figure(
        chart,
        html_table(
            &["state", "hops", "placement", "UOWN ns", "ns", "ΔU ns"],
            &rows,
        ),
    ))
}

/// Loaded latency: latency against injected traffic.
pub fn loaded(records: &[Record]) -> Option<String> {
    let recs: Vec<&Record> = of(records, "loaded-latency").collect();
    if recs.is_empty() {
        return None;
    }
    let pts: Vec<(f64, f64)> = recs
        .iter()
        .filter_map(|r| {
            Some((
                med(r, "injected_bandwidth").unwrap_or(0.0),
                med(r, "latency")?,
            ))
        })
        .collect();
    let chart = plot::line_chart(&LineChart {
        title: "loaded latency".into(),
        x_label: "injected traffic, GB/s".into(),
        y_label: "chase ns per load".into(),
        log_x: false,
        x_bytes: false,
        series: vec![Series {
            name: recs[0].parameters["traffic"].as_str().unwrap_or("").into(),
            points: pts,
        }],
        markers: Vec::new(),
    });
    let rows: Vec<Vec<String>> = recs
        .iter()
        .map(|r| {
            vec![
                r.name.clone(),
                num(med(r, "injected_bandwidth"), 2),
                num(med(r, "latency"), 1),
            ]
        })
        .collect();
    Some(figure(
        chart,
        html_table(&["point", "injected GB/s", "latency ns"], &rows),
    ))
}

/// Fitted model coefficients.
pub fn model(records: &[Record]) -> Option<String> {
    let r = of(records, "model").last()?;
    let f = &r.data.as_ref()?["fit"];
    let rows = vec![
        vec!["local ns".into(), num(f["local_ns"].as_f64(), 1)],
        vec![
            "remote penalty ns".into(),
            num(f["remote_penalty_ns"].as_f64(), 1),
        ],
        vec!["per hop ns".into(), num(f["per_hop_ns"].as_f64(), 1)],
        vec!["R²".into(), num(f["r2"].as_f64(), 3)],
        vec!["points".into(), f["n"].to_string()],
        vec!["note".into(), f["note"].as_str().unwrap_or("").into()],
    ];
    Some(html_table(
        &["latency = local + remote penalty + hops × per hop", ""],
        &rows,
    ))
}

#[cfg(test)]
mod tests {
    use crate::provenance::Provenance;
    use crate::record::Record;
    use crate::report::{render, sections};
    use serde_json::json;

    fn rec(kind: &str, name: &str, p: serde_json::Value, metric: &str, v: f64) -> Record {
        let mut r = Record::new(kind, name, Provenance::collect("test", "none"), p);
        r.add_samples(metric, "ns", &[v, v]);
        r
    }

    #[test]
    fn multi_node_sections_draw_from_their_records() {
        let mut rs = Vec::new();
        for d in 0..2u64 {
            for n in 0..2u64 {
                let p = json!({ "domain": d, "mem_node": n, "hops": u64::from(d != n) });
                rs.push(rec(
                    "matrix-latency",
                    &format!("node {d} → node {n}"),
                    p,
                    "latency",
                    if d == n { 100.0 } else { 160.0 },
                ));
            }
        }
        for h in 0..2u64 {
            rs.push(rec(
                "intervene-uown",
                &format!("uown hops {h}"),
                json!({ "hops": h }),
                "latency",
                100.0 + 60.0 * h as f64,
            ));
            rs.push(rec(
                "intervene",
                &format!("dexd hops {h} xhops=0"),
                json!({ "hops": h, "state": "dexd", "placement": "xhops=0" }),
                "latency",
                180.0 + 50.0 * h as f64,
            ));
        }
        let mut m = Record::new(
            "model",
            "fit",
            Provenance::collect("test", "none"),
            json!({}),
        );
        m.data = Some(
            json!({ "fit": { "local_ns": 100.0, "remote_penalty_ns": 60.0, "per_hop_ns": null, "r2": 1.0, "n": 4, "note": "" } }),
        );
        rs.push(m);
        let secs = sections(&rs);
        let body = |id: &str| secs.iter().find(|s| s.id == id).unwrap().body.clone();
        let matrix = body("matrix").expect("matrix section");
        assert!(matrix.contains("<svg") && matrix.contains("160.0"));
        let iv = body("intervene").expect("intervene section");
        // ΔU = 230 − 160 at one hop.
        assert!(iv.contains("70.0"), "{iv}");
        assert!(body("model").unwrap().contains("60.0"));
        assert!(body("c2c").is_none());
        let html = render(&rs, "t");
        assert!(html.contains("Absent: no c2c-matrix records in the input"));
    }
}
