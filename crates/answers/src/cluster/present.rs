//! How the cluster is shown: the findings first, then the host × host heatmaps, the
//! hosts' memory bars and the settings table with the differing rows marked.

use super::data::{
    FindingsData, HostData, LinksData, KIND_COLLECTIVES, KIND_FINDINGS, KIND_HOST, KIND_LINKS,
};
use super::plan::{Plan, KIND_PLAN};
use super::text::{
    collectives_text, findings_text, hosts_text, link_words, links_text, throttled_words,
};
use numalab_results::plot;
use numalab_results::present::{of, warning_lines, Presenter};
use numalab_results::report::{esc, figure, grid_table, num};
use numalab_results::Record;
use std::fmt::Write;

/// `cluster` records and its plan.
pub struct ClusterPresenter;

fn first<T: serde::de::DeserializeOwned>(records: &[Record], kind: &str) -> Option<T> {
    of(records, kind).find_map(|r| r.data_as::<T>().ok())
}

fn hosts(records: &[Record]) -> Vec<HostData> {
    of(records, KIND_HOST)
        .filter_map(|r| r.data_as::<HostData>().ok())
        .collect()
}

impl Presenter for ClusterPresenter {
    fn kinds(&self) -> &'static [&'static str] {
        &[
            KIND_PLAN,
            KIND_HOST,
            KIND_LINKS,
            KIND_COLLECTIVES,
            KIND_FINDINGS,
            super::parts::KIND_PART,
        ]
    }
    fn section(&self) -> Option<(&'static str, &'static str)> {
        Some(("cluster", "Cluster: hosts, links and settings"))
    }
    fn html(&self, records: &[Record]) -> Option<String> {
        html(records)
    }
    fn text(&self, records: &[Record]) -> Option<String> {
        let mut out = String::new();
        for r in of(records, KIND_PLAN) {
            out.push_str(&r.data_as::<Plan>().ok()?.text());
        }
        if let Some(f) = first::<FindingsData>(records, KIND_FINDINGS) {
            out.push_str(&findings_text(&f));
        }
        let h = hosts(records);
        if !h.is_empty() {
            out.push_str(&hosts_text(&h));
        }
        if let Some(l) = first::<LinksData>(records, KIND_LINKS) {
            out.push_str(&links_text(&l));
        }
        out.push_str(&collectives_text(records));
        if !out.is_empty() {
            out.push_str(&warning_lines(records));
        }
        (!out.is_empty()).then_some(out)
    }
}

fn findings_html(f: &FindingsData) -> String {
    let mut items: Vec<String> = f
        .odd_links
        .iter()
        .map(|o| {
            format!(
                "odd link: {} median {} {}; the others {}-{}",
                link_words(o),
                num(Some(o.value), 3),
                o.unit,
                num(Some(o.others.0), 3),
                num(Some(o.others.1), 3)
            )
        })
        .collect();
    items.extend(f.throttled_hosts.iter().map(throttled_words));
    items.extend(f.odd_hosts.iter().map(|o| {
        format!(
            "odd host: {} {} {} {}; the others {}-{}",
            o.host,
            o.figure,
            num(Some(o.value), 2),
            o.unit,
            num(Some(o.others.0), 2),
            num(Some(o.others.1), 2)
        )
    }));
    items.extend(f.settings.iter().map(|d| {
        let held: Vec<String> = d
            .values
            .iter()
            .map(|(v, h)| format!("{v} on {}", h.join(", ")))
            .collect();
        format!("setting differs: {}: {}", d.setting, held.join("; "))
    }));
    if items.is_empty() {
        items.push("no odd host, link or setting".into());
    }
    items.extend(f.notes.iter().map(|n| format!("note: {n}")));
    let mut s = String::from("<ul class=\"findings\">");
    for i in items {
        let _ = write!(s, "<li>{}</li>", esc(&i));
    }
    let _ = write!(s, "</ul><p>{}</p>", esc(&f.rule));
    s
}

fn heatmaps(l: &LinksData) -> String {
    let us: Vec<Vec<Option<f64>>> = l
        .latency_ns
        .iter()
        .map(|r| r.iter().map(|v| v.map(|x| x / 1000.0)).collect())
        .collect();
    [
        ("Latency, us (row: host, column: peer)", &us),
        ("Send bandwidth, GB/s (row: sender)", &l.send_gbps),
        ("Receive bandwidth, GB/s (row: sender)", &l.recv_gbps),
    ]
    .iter()
    .map(|(title, m)| {
        figure(
            plot::heatmap(title, &l.hosts, &l.hosts, m),
            grid_table(&l.hosts, &l.hosts, m),
        )
    })
    .collect()
}

fn memory_bars(h: &[HostData]) -> String {
    let mut nodes: Vec<u32> = h
        .iter()
        .flat_map(|x| x.memory.iter().map(|m| m.node))
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    let mut s = String::new();
    for n in nodes {
        let bars: Vec<(String, f64)> = h
            .iter()
            .filter_map(|x| {
                Some((
                    x.host.clone(),
                    x.memory.iter().find(|m| m.node == n)?.read_all_gbps?,
                ))
            })
            .collect();
        let rows: Vec<Vec<String>> = h
            .iter()
            .filter_map(|x| {
                let m = x.memory.iter().find(|m| m.node == n)?;
                Some(vec![
                    x.host.clone(),
                    num(m.latency_ns, 1),
                    num(m.read_1core_gbps, 2),
                    num(m.read_all_gbps, 2),
                ])
            })
            .collect();
        let table = numalab_results::report::html_table(
            &["host", "latency ns", "read 1 core GB/s", "read all GB/s"],
            &rows,
        );
        s.push_str(&figure(
            plot::bar_chart(&format!("node {n}: read, all cores"), "GB/s", &bars),
            table,
        ));
    }
    s
}

fn settings_table(h: &[HostData], f: Option<&FindingsData>) -> String {
    let Some(firsth) = h.first() else {
        return String::new();
    };
    let mut s = String::from("<table class=\"settings\"><thead><tr><th>setting</th>");
    for x in h {
        let _ = write!(s, "<th>{}</th>", esc(&x.host));
    }
    s.push_str("</tr></thead><tbody>");
    for set in &firsth.settings {
        let differs = f.is_some_and(|f| f.settings.iter().any(|d| d.setting == set.name));
        let _ = write!(
            s,
            "<tr{}><td>{}</td>",
            if differs {
                " class=\"differs\" style=\"background:#fde2e1\""
            } else {
                ""
            },
            esc(&set.name)
        );
        for x in h {
            let v = x
                .settings
                .iter()
                .find(|y| y.name == set.name)
                .map(|y| y.value.as_str())
                .unwrap_or("-");
            let _ = write!(s, "<td>{}</td>", esc(v));
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table>");
    s
}

fn html(records: &[Record]) -> Option<String> {
    let f = first::<FindingsData>(records, KIND_FINDINGS);
    let h = hosts(records);
    let l = first::<LinksData>(records, KIND_LINKS);
    if f.is_none() && h.is_empty() && l.is_none() {
        return None;
    }
    let mut s = String::new();
    if let Some(f) = &f {
        s.push_str("<h3>Findings</h3>");
        s.push_str(&findings_html(f));
    }
    if let Some(l) = &l {
        s.push_str("<h3>Links</h3>");
        s.push_str(&heatmaps(l));
        let _ = write!(s, "<p>{}</p>", esc(&l.method));
    }
    if !h.is_empty() {
        s.push_str("<h3>Memory per host</h3>");
        s.push_str(&memory_bars(&h));
        s.push_str("<h3>Settings</h3>");
        s.push_str(&settings_table(&h, f.as_ref()));
    }
    let c = collectives_text(records);
    if !c.is_empty() {
        let _ = write!(s, "<p>{}</p>", esc(c.trim()));
    }
    Some(s)
}
