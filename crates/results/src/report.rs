//! The self-contained HTML report: one file, inline SVG charts, tables beside them,
//! no scripts, fonts or network. Every section either shows its data or says why
//! it is absent.

use crate::record::Record;
use serde_json::Value;
use std::collections::BTreeSet;
use std::fmt::Write;

/// One section of the report.
pub struct Section {
    /// Anchor id.
    pub id: &'static str,
    /// Heading.
    pub title: &'static str,
    /// Body HTML when there is data.
    pub body: Option<String>,
    /// Why there is no data (used when `body` is None).
    pub absent: String,
    /// A seed study: drawn after the memory answer, collapsed until opened.
    pub study: bool,
}

/// Escape text for HTML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// An HTML table.
pub fn html_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let (rows, notes) = crate::output::footnoted(header, rows);
    let mut s = String::from("<table>");
    // A key/value table has no header row.
    if header.iter().any(|h| !h.is_empty()) {
        s.push_str("<thead><tr>");
        for h in header {
            let _ = write!(s, "<th>{}</th>", esc(h));
        }
        s.push_str("</tr></thead>");
    }
    s.push_str("<tbody>");
    for r in &rows {
        s.push_str("<tr>");
        for c in r {
            let _ = write!(s, "<td>{}</td>", esc(c));
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table>");
    for (i, n) in notes.iter().enumerate() {
        let _ = write!(s, "<p class=\"note\">note {}: {}</p>", i + 1, esc(n));
    }
    s
}

/// A chart and its table side by side (the table's numbers can be copied).
pub fn figure(chart: Option<String>, table: String) -> String {
    match chart {
        Some(svg) => format!(
            "<div class=\"fig\"><div class=\"chart\">{svg}</div><div class=\"tab\">{table}</div></div>"
        ),
        None => format!("<div class=\"fig\"><div class=\"tab\">{table}</div></div>"),
    }
}

/// A number for a table cell.
pub fn num(v: Option<f64>, digits: usize) -> String {
    v.map(|x| {
        // Fixed notation stops being readable (1e308 would print 309 digits).
        if x.is_finite() && x.abs() >= 1e12 {
            format!("{x:.digits$e}")
        } else {
            format!("{x:.digits$}")
        }
    })
    .unwrap_or_else(|| "-".into())
}

/// A byte count for a table cell in binary units ("64 KiB", "1.5 MiB", "64 B").
pub fn bytes(v: u64) -> String {
    let short = crate::plot::short_bytes(v as f64);
    match short.strip_suffix(['K', 'M', 'G']) {
        Some(num) => format!("{num} {}iB", &short[num.len()..]),
        None => format!("{short} B"),
    }
}

/// A JSON array of arrays of numbers (null: not measured) as a matrix.
pub fn matrix_of(v: &Value) -> Vec<Vec<Option<f64>>> {
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

/// A labelled grid of numbers (one decimal; "-" for not measured).
pub fn grid_table(rows: &[String], cols: &[String], m: &[Vec<Option<f64>>]) -> String {
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

/// Why a section has no data: the survey's reason when it skipped the step, or
/// that these files hold no such records.
pub fn absent_reason(records: &[Record], id: &str, what: &str) -> String {
    records
        .iter()
        .filter(|r| r.kind == "survey" && r.parameters["section"] == id)
        .flat_map(|r| r.unavailable.iter())
        .map(|u| u.reason.clone())
        .next()
        .unwrap_or_else(|| format!("no {what} records in the input"))
}

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;color:#222;max-width:1500px}\
h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ccc;padding-top:.6em}\
table{border-collapse:collapse;font-size:.85em;margin:.4em 0}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}\
th{background:#f0f0f0}.fig{display:flex;flex-wrap:wrap;gap:1em;align-items:flex-start}\
.absent{color:#777;font-style:italic}details>summary h2{display:inline-block;cursor:pointer}.warn{color:#8a4b00}nav a{margin-right:.8em}";

/// The "Not measured" section of an unfinished run's report: `missing` (each "step X
/// (why)") as a list.
pub fn not_measured(missing: &[String]) -> Section {
    let mut list = String::from("<ul>");
    for m in missing {
        let _ = write!(list, "<li class=\"warn\">not measured: {}</li>", esc(m));
    }
    list.push_str("</ul>");
    Section {
        id: "not-measured",
        title: "Not measured",
        body: (!missing.is_empty()).then_some(list),
        absent: "every step of the plan was measured".into(),
        study: false,
    }
}

/// The page shell every HTML report shares: title, the summary (first, so its figures
/// are on the first screen), navigation, the sections with data (the seed studies
/// last, each collapsible), one line naming what was not measured and why, then a
/// closing section with provenance.
pub fn page(title: &str, summary: &str, secs: &[Section], provenance_section: &str) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body><h1>{}</h1>",
        esc(title),
        esc(title)
    );
    s.push_str(summary);
    let drawn: Vec<&Section> = secs
        .iter()
        .filter(|x| x.body.is_some() && !x.study)
        .chain(secs.iter().filter(|x| x.body.is_some() && x.study))
        .collect();
    s.push_str("<nav>");
    for x in &drawn {
        let _ = write!(s, "<a href=\"#{}\">{}</a>", x.id, esc(x.title));
    }
    s.push_str("<a href=\"#provenance\">Provenance and warnings</a></nav>");
    for x in &drawn {
        let body = x.body.as_deref().unwrap_or_default();
        if x.study {
            let _ = write!(
                s,
                "<section id=\"{}\" class=\"study\"><details><summary><h2>{}</h2></summary>{body}</details></section>",
                x.id,
                esc(x.title)
            );
        } else {
            let _ = write!(
                s,
                "<section id=\"{}\"><h2>{}</h2>{body}</section>",
                x.id,
                esc(x.title)
            );
        }
    }
    if let Some(line) = not_measured_line(secs) {
        let _ = write!(s, "<p class=\"absent\" id=\"not-drawn\">{}</p>", esc(&line));
    }
    s.push_str(provenance_section);
    s.push_str("</body></html>\n");
    s
}

/// One line for every section without data: titles grouped by their reason.
pub fn not_measured_line(secs: &[Section]) -> Option<String> {
    let mut by_reason: Vec<(&str, Vec<&str>)> = Vec::new();
    for x in secs.iter().filter(|x| x.body.is_none()) {
        match by_reason.iter_mut().find(|(r, _)| *r == x.absent) {
            Some((_, t)) => t.push(x.title),
            None => by_reason.push((&x.absent, vec![x.title])),
        }
    }
    if by_reason.is_empty() {
        return None;
    }
    let parts: Vec<String> = by_reason
        .iter()
        .map(|(why, titles)| format!("{} ({why})", and_list(titles)))
        .collect();
    Some(format!("Not measured: {}.", parts.join("; ")))
}

/// "a", "a and b", "a, b and c".
fn and_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The provenance key/value table.
pub fn provenance_table(p: &crate::Provenance) -> String {
    let rows = vec![
        vec!["tool".into(), p.tool_version.clone()],
        vec!["date".into(), p.timestamp.clone()],
        vec!["host".into(), p.hostname.clone()],
        vec!["kernel".into(), p.kernel.clone()],
        vec!["CPU".into(), p.cpu_model.clone().unwrap_or_default()],
        vec!["topology".into(), p.topology.clone()],
        vec!["THP".into(), p.thp.clone()],
        vec!["NUMA balancing".into(), p.numa_balancing.clone()],
        vec!["governor".into(), p.governor.clone()],
        vec![
            "virtualisation".into(),
            if p.virtualization.hypervisor {
                format!(
                    "hypervisor {}",
                    crate::provenance::hypervisor_name(
                        p.virtualization.signature.as_deref().unwrap_or_default()
                    )
                )
            } else {
                "none detected".into()
            },
        ],
    ];
    let mut rows = rows;
    if !p.concurrent_runs.is_empty() {
        let others: Vec<String> = p
            .concurrent_runs
            .iter()
            .map(|o| format!("pid {} ({})", o.pid, o.command))
            .collect();
        rows.push(vec![
            "concurrent measurements".into(),
            format!("warning: {}", others.join("; ")),
        ]);
    }
    html_table(&["", ""], &rows)
}

/// Provenance of the run and every warning and unavailable feature, once each.
pub fn provenance(records: &[Record]) -> String {
    let mut s = String::from("<section id=\"provenance\"><h2>Provenance and warnings</h2>");
    if let Some(p) = records.first().map(|r| &r.provenance) {
        s.push_str(&provenance_table(p));
    }
    let warnings: BTreeSet<&String> = records.iter().flat_map(|r| &r.warnings).collect();
    let _ = write!(s, "<h3>Warnings ({})</h3><ul>", warnings.len());
    for w in warnings {
        let _ = write!(s, "<li class=\"warn\">{}</li>", esc(w));
    }
    s.push_str("</ul>");
    let unavailable: BTreeSet<(String, String)> = records
        .iter()
        .flat_map(|r| {
            r.unavailable
                .iter()
                .map(move |u| (format!("{}: {}", r.kind, u.feature), u.reason.clone()))
        })
        .collect();
    let _ = write!(s, "<h3>Unavailable ({})</h3><ul>", unavailable.len());
    for (f, why) in unavailable {
        let _ = write!(s, "<li>{}: {}</li>", esc(&f), esc(&why));
    }
    s.push_str("</ul>");
    let commands: BTreeSet<String> = records
        .iter()
        .map(|r| r.provenance.command_line.join(" "))
        .collect();
    let _ = write!(s, "<h3>Commands ({})</h3><ul>", commands.len());
    for c in commands {
        let _ = write!(s, "<li><code>{}</code></li>", esc(&c));
    }
    s.push_str("</ul></section>");
    s
}
