//! The memory answer as HTML (a table with a small loaded-latency chart per node) and
//! as terminal text (the same table, the curve as its two ends).

use super::{NodeAnswer, MIXES};
use numalab_results::output::table;
use numalab_results::report::esc;
use numalab_results::summary::Block;
use numalab_results::Record;
use std::fmt::Write;

/// A figure with the decimals its size needs: 0.06 stays 0.06, 13.94 reads 13.9.
pub fn fig(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 1.0 || a == 0.0 {
        format!("{v:.1}")
    } else if a >= 0.1 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

fn opt(v: Option<f64>) -> String {
    v.map(fig).unwrap_or_else(|| "-".into())
}

/// The table's header: node, latency, reads of 1 and all cores, the five mixes.
fn header() -> Vec<String> {
    let mut h: Vec<String> = vec![
        "memory node".into(),
        "idle latency ns".into(),
        "read 1 core GB/s".into(),
        "read all cores GB/s".into(),
    ];
    h.extend(MIXES.iter().map(|(_, m)| format!("{m} GB/s")));
    h
}

/// One node's cells (the curve not included).
fn cells(n: &NodeAnswer) -> Vec<String> {
    let mut name = format!("node {}", n.node);
    if !n.tier.is_empty() {
        let _ = write!(name, " ({})", n.tier);
    }
    let mut row = vec![
        name,
        opt(n.idle_ns.map(|x| x.0)),
        opt(n.read_1),
        n.read_all
            .map(|(v, k)| {
                if k > 1 {
                    format!("{} ({k} cores)", fig(v))
                } else {
                    fig(v)
                }
            })
            .unwrap_or_else(|| "-".into()),
    ];
    row.extend(n.mixes.iter().map(|m| opt(*m)));
    row
}

/// A small chart of latency against injected bandwidth: a line with its ends labelled.
pub fn sparkline(pts: &[(f64, f64)]) -> Option<String> {
    if pts.len() < 2 {
        return None;
    }
    let (w, h, pad) = (200.0, 56.0, 4.0);
    let x1 = pts.iter().map(|p| p.0).fold(0.0, f64::max).max(1e-9);
    let y0 = pts.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let y1 = pts.iter().map(|p| p.1).fold(0.0, f64::max);
    let span = (y1 - y0).max(1e-9);
    let plot_h = h - 2.0 * pad;
    let line: Vec<String> = pts
        .iter()
        .map(|(x, y)| {
            let px = pad + x / x1 * (w - 2.0 * pad);
            let py = pad + plot_h - (y - y0) / span * plot_h;
            format!("{px:.1},{py:.1}")
        })
        .collect();
    Some(format!(
        "<svg class=\"spark\" width=\"{w}\" height=\"{h2}\" viewBox=\"0 0 {w} {h2}\" role=\"img\" aria-label=\"loaded latency\">\
<polyline fill=\"none\" stroke=\"#0072b2\" stroke-width=\"1.5\" points=\"{}\"/>\
<text x=\"{pad}\" y=\"{ty}\" font-size=\"9\">{} ns idle</text>\
<text x=\"{xr}\" y=\"{ty}\" font-size=\"9\" text-anchor=\"end\">{} ns at {} GB/s</text></svg>",
        line.join(" "),
        fig(pts[0].1),
        fig(pts[pts.len() - 1].1),
        fig(pts[pts.len() - 1].0),
        h2 = h + 12.0,
        ty = h + 10.0,
        xr = w - pad,
    ))
}

/// Where the table's figures come from, said once under it.
fn sources(nodes: &[NodeAnswer], answers: &[Record]) -> String {
    let mut s: Vec<String> = Vec::new();
    let idle: Vec<&str> = nodes
        .iter()
        .filter_map(|n| n.idle_ns.map(|x| x.1))
        .collect();
    if let Some(first) = idle.first() {
        s.push(format!("Idle latency: {first}."));
    }
    s.push("Read: the vector read kernel, one core and all requestors on a barrier.".into());
    if let Some(r) = answers.iter().find(|r| r.kind == "bandwidth-mix") {
        let threads = r.parameters["requestors"].as_u64().unwrap_or(0);
        s.push(format!(
            "Mixes: MLC's injection table, bytes issued (loads and stores), {threads} thread{}, regular stores.",
            if threads == 1 { "" } else { "s" }
        ));
    }
    s.push(
        "Loaded latency: a chase while the other cores inject reads, idle to unthrottled.".into(),
    );
    s.push("GB/s = 10^9 bytes/s.".into());
    s.join(" ")
}

fn c2c_line((lo, med, hi, n): (f64, f64, f64, usize)) -> String {
    format!(
        "Core to core (CAS round trip / 2 over {n} pair{}): min {} ns, median {} ns, max {} ns.",
        if n == 1 { "" } else { "s" },
        fig(lo),
        fig(med),
        fig(hi)
    )
}

/// The HTML table: escaped cells, then each node's chart (SVG, not escaped).
fn html_rows(header: &[&str], rows: &[Vec<String>], nodes: &[NodeAnswer]) -> String {
    let mut s = String::from("<table><thead><tr>");
    for h in header {
        let _ = write!(s, "<th>{}</th>", esc(h));
    }
    s.push_str("</tr></thead><tbody>");
    for (row, n) in rows.iter().zip(nodes) {
        s.push_str("<tr>");
        for c in row {
            let _ = write!(s, "<td>{}</td>", esc(c));
        }
        let svg = sparkline(&n.curve).unwrap_or_else(|| "-".into());
        let _ = write!(s, "<td>{svg}</td></tr>");
    }
    s.push_str("</tbody></table>");
    s
}

/// The block: HTML and text of the same figures.
pub fn block(
    nodes: &[NodeAnswer],
    c2c: Option<(f64, f64, f64, usize)>,
    answers: &[Record],
) -> Block {
    let mut html = String::from("<div class=\"answer\" id=\"answer\">");
    let mut text = String::new();
    if !nodes.is_empty() {
        let mut h = header();
        h.push("loaded latency".into());
        let hdr: Vec<&str> = h.iter().map(String::as_str).collect();
        let mut rows_html = Vec::new();
        let mut rows_text = Vec::new();
        for n in nodes {
            let row = cells(n);
            let mut t = row.clone();
            t.push(match (n.curve.first(), n.curve.last()) {
                (Some(a), Some(b)) if n.curve.len() > 1 => {
                    format!("{} → {} ns at {} GB/s", fig(a.1), fig(b.1), fig(b.0))
                }
                _ => "-".into(),
            });
            rows_text.push(t);
            rows_html.push(row);
        }
        let table_html = html_rows(&hdr, &rows_html, nodes);
        let _ = write!(html, "<h3>Memory, per node</h3>{table_html}");
        let src = sources(nodes, answers);
        let _ = write!(html, "<p class=\"src\">{}</p>", esc(&src));
        text.push_str("Memory, per node\n");
        text.push_str(&table(&hdr, &rows_text));
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&numalab_results::summary::wrap(&src, 100));
    }
    if let Some(c) = c2c {
        let line = c2c_line(c);
        let _ = write!(html, "<p class=\"c2c\">{}</p>", esc(&line));
        text.push_str(&line);
        text.push('\n');
    }
    html.push_str("</div>");
    Block { html, text }
}
