//! `report TRACE`: the HTML report of a trace, in the survey report's page shell
//! with its charts: per-node time series, a per-thread CPU/node timeline, pages
//! per node, the derived findings and where each number came from.

use crate::metrics::{catalogue, series, Index, Point};
use crate::tables;
use crate::trace::{ObjKind, Object, Trace};
use numalab_results::plot::{line_chart, LineChart, Series};
use numalab_results::report::{esc, figure, html_table, page, provenance_table, Section};
use std::collections::BTreeMap;

fn chart(title: &str, y: &str, pts: &[Point], label: impl Fn(&str) -> String) -> Option<String> {
    let mut by: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    for p in pts {
        by.entry(p.obj.as_str())
            .or_default()
            .push((p.t_ns as f64 / 1e9, p.value));
    }
    line_chart(&LineChart {
        title: title.into(),
        x_label: "time (s)".into(),
        y_label: y.into(),
        log_x: false,
        x_bytes: false,
        series: by
            .into_iter()
            .map(|(k, points)| Series {
                name: label(k),
                points,
            })
            .collect(),
        markers: vec![],
    })
}

fn table_of(pts: &[Point], digits: usize) -> String {
    // Few rows per object: the chart carries the detail.
    let mut by: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for p in pts {
        by.entry(p.obj.as_str()).or_default().push(p.value);
    }
    let rows: Vec<Vec<String>> = by
        .iter()
        .map(|(k, v)| {
            let mut s = v.clone();
            s.sort_by(f64::total_cmp);
            vec![
                k.to_string(),
                format!("{:.*}", digits, s[0]),
                format!("{:.*}", digits, s[s.len() / 2]),
                format!("{:.*}", digits, s[s.len() - 1]),
                s.len().to_string(),
            ]
        })
        .collect();
    html_table(&["object", "min", "median", "max", "intervals"], &rows)
}

fn metric_section(ix: &Index, id: &'static str, title: &'static str, metrics: &[&str]) -> Section {
    let cat = catalogue(ix);
    let mut body = String::new();
    let mut why = vec![];
    for m in metrics {
        let info = cat
            .iter()
            .find(|c| c.name == *m)
            .expect("metric in catalogue");
        let pts = series(ix, m);
        if pts.is_empty() {
            why.push(format!(
                "{m}: {}",
                info.missing
                    .clone()
                    .unwrap_or_else(|| "fewer than two samples".into())
            ));
            continue;
        }
        let digits = if info.unit == "ratio" { 3 } else { 1 };
        body.push_str(&format!(
            "<h3>{} <small>[{}]</small></h3><p>{}</p>",
            esc(m),
            esc(info.source),
            esc(info.meaning)
        ));
        body.push_str(&figure(
            chart(m, &format!("{m} ({})", info.unit), &pts, |k| k.to_string()),
            table_of(&pts, digits),
        ));
    }
    for w in &why {
        body.push_str(&format!("<p class=\"absent\">Absent: {}.</p>", esc(w)));
    }
    let has = why.len() < metrics.len();
    Section {
        id,
        title,
        body: has.then_some(body),
        absent: why.join("; "),
        study: false,
    }
}

fn summary(ix: &Index) -> Section {
    let f = tables::found(ix);
    let m = tables::metrics(ix);
    let mut body = html_table(f.header, &f.rows);
    body.push_str("<h3>Metrics and their sources</h3>");
    body.push_str(&html_table(m.header, &m.rows));
    Section {
        id: "summary",
        title: "Summary",
        body: Some(body),
        absent: String::new(),
        study: false,
    }
}

fn threads(ix: &Index) -> Section {
    let t = ix.trace;
    let ths: Vec<_> = t.objects_of(ObjKind::Thread).collect();
    if ths.is_empty() {
        return Section {
            id: "threads",
            title: "Threads: where they ran",
            body: None,
            absent: "no threads in this trace (a monitor trace)".into(),
            study: false,
        };
    }
    let cpu_pts = cpu_points(ix, &ths);
    let names: BTreeMap<&str, &str> = ths
        .iter()
        .map(|o| (o.id.as_str(), o.name.as_str()))
        .collect();
    let label = |k: &str| format!("{k} {}", names.get(k).copied().unwrap_or(""));
    let rows = thread_rows(ix, &ths);
    let mut body = figure(
        chart("CPU of each thread at each sample", "CPU", &cpu_pts, label),
        html_table(
            &[
                "thread",
                "name",
                "process",
                "CPUs",
                "nodes",
                "run ms (sampled)",
                "samples",
            ],
            &rows,
        ),
    );
    let util = series(ix, "thread.util");
    if !util.is_empty() {
        body.push_str(&figure(
            chart("thread.util", "% of the interval on a CPU", &util, label),
            table_of(&util, 1),
        ));
    }
    Section {
        id: "threads",
        title: "Threads: where they ran",
        body: Some(body),
        absent: String::new(),
        study: false,
    }
}

/// Each thread's CPU at each sample.
fn cpu_points(ix: &Index, ths: &[&Object]) -> Vec<Point> {
    let mut cpu_pts = vec![];
    for o in ths {
        for s in ix.of(&o.id) {
            if let Some(c) = s.v.get("cpu") {
                cpu_pts.push(Point {
                    t_ns: s.t_ns,
                    obj: o.id.clone(),
                    value: *c,
                });
            }
        }
    }
    cpu_pts
}

/// One row per thread: name, process, CPUs and nodes it ran on, run time, samples.
fn thread_rows(ix: &Index, ths: &[&Object]) -> Vec<Vec<String>> {
    ths.iter()
        .map(|o| {
            let s = ix.of(&o.id);
            let (cpus, nodes) = ix.placement(&o.id);
            let run = s
                .first()
                .zip(s.last())
                .and_then(|(a, b)| Some(b.v.get("run_ns")? - a.v.get("run_ns")?));
            let j = |v: &[u32]| {
                v.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            };
            vec![
                o.id.clone(),
                o.name.clone(),
                o.parent.clone().unwrap_or_default(),
                j(&cpus),
                j(&nodes),
                run.map_or("?".into(), |r| format!("{:.1}", r / 1e6)),
                s.len().to_string(),
            ]
        })
        .collect()
}

fn events(t: &Trace) -> Section {
    let rows: Vec<Vec<String>> = t
        .events
        .iter()
        .map(|e| {
            vec![
                format!("{:.3}", e.t_ns as f64 / 1e9),
                e.obj.clone(),
                e.what.clone(),
                e.detail.clone(),
            ]
        })
        .collect();
    Section {
        id: "events",
        title: "Events",
        body: (!rows.is_empty())
            .then(|| html_table(&["t (s)", "object", "event", "detail"], &rows)),
        absent: "no forks, execs, exits or counter failures were seen".into(),
        study: false,
    }
}

fn sources(t: &Trace) -> String {
    let h = &t.header;
    let mut s = String::from("<section id=\"provenance\"><h2>Provenance and warnings</h2>");
    s.push_str(&provenance_table(&h.provenance));
    let end = match &t.end {
        Some(e) => format!(
            "{} at {:.3} s{}{}",
            e.reason,
            e.t_ns as f64 / 1e9,
            e.exit_code.map_or(String::new(), |c| format!(", exit code {c}")),
            e.signal.map_or(String::new(), |c| format!(", signal {c}"))
        ),
        None => "no end entry: the recorder was stopped before it could finish (the samples up to then are shown)".into(),
    };
    let rows = vec![
        vec!["mode".into(), h.mode.clone()],
        vec!["target".into(), h.target.join(" ")],
        vec!["interval".into(), format!("{} ms", h.interval_ms)],
        vec![
            "pages read every".into(),
            numalab_results::words::count(h.pages_every as u64, "interval"),
        ],
        vec![
            "sampler pinned to".into(),
            h.runon.map_or("not pinned".into(), |c| format!("CPU {c}")),
        ],
        vec!["end".into(), end],
        vec![
            "torn last line".into(),
            if t.torn_tail {
                "yes (skipped)".into()
            } else {
                "no".into()
            },
        ],
    ];
    s.push_str(&html_table(&["", ""], &rows));
    for (title, r) in [
        ("Sources", tables::sources(h)),
        ("Hardware counters", tables::counters(h)),
    ] {
        s.push_str(&format!("<h3>{title}</h3>"));
        s.push_str(&html_table(r.header, &r.rows));
    }
    s.push_str("</section>");
    s
}

/// Render the report of a trace.
pub fn render(t: &Trace, title: &str) -> String {
    let ix = Index::new(t);
    let secs = vec![
        summary(&ix),
        metric_section(
            &ix,
            "nodes",
            "Nodes over time",
            &[
                "node.cpu_busy",
                "node.read_bw",
                "node.write_bw",
                "node.alloc_rate",
                "node.alloc_miss_rate",
                "node.mem_free",
                "system.migrate_rate",
                "system.hint_local_ratio",
            ],
        ),
        threads(&ix),
        metric_section(
            &ix,
            "locality",
            "Locality",
            &[
                "thread.local_access_ratio",
                "thread.page_locality",
                "process.mem",
                "thread.migrations",
            ],
        ),
        events(t),
    ];
    page(title, "", &secs, &sources(t))
}
