//! Heatmaps (CPU × CPU, node × node) as plain SVG, with the boundaries between
//! topology domains drawn as lines a reader (and a test) can find: class
//! `domain domain-KIND` (KIND: l3, node, package).

use crate::report::esc;
use std::fmt::Write;

/// A domain boundary between row/column `after` and `after + 1`.
#[derive(Debug, Clone, PartialEq)]
pub struct Boundary {
    /// The last index before the boundary.
    pub after: usize,
    /// Which domain ends there: "l3", "node", "package" or "host" (the widest that changes).
    pub kind: &'static str,
}

fn stroke(kind: &str) -> (&'static str, f64) {
    match kind {
        "host" => ("black", 4.0),
        "package" => ("black", 3.0),
        "node" => ("rgb(40,40,160)", 2.0),
        _ => ("rgb(90,90,90)", 1.2),
    }
}

/// The boundaries between neighbours in `order`: after each position where two
/// neighbours' domains differ, the widest domain that changes. `domains(i)` lists item
/// i's domains widest first as (kind, id); an item without them draws no boundary.
pub fn boundaries<K: PartialEq>(
    order: &[usize],
    domains: impl Fn(usize) -> Option<Vec<(&'static str, K)>>,
) -> Vec<Boundary> {
    order
        .windows(2)
        .enumerate()
        .filter_map(|(k, w)| {
            let (a, b) = (domains(w[0])?, domains(w[1])?);
            let kind = a.iter().zip(&b).find(|(x, y)| x.1 != y.1)?.0 .0;
            Some(Boundary { after: k, kind })
        })
        .collect()
}

/// `m` with its rows and columns in `order` (indices into `m`), for a heatmap whose
/// neighbours should be neighbours in the machine.
pub fn permute(m: &[Vec<Option<f64>>], order: &[usize]) -> Vec<Vec<Option<f64>>> {
    order
        .iter()
        .map(|&i| {
            order
                .iter()
                .map(|&j| m.get(i).and_then(|r| r.get(j)).copied().flatten())
                .collect()
        })
        .collect()
}

/// Where a heatmap's cells lie: `cell` px squares below `top` and right of `left`.
struct Grid {
    cell: f64,
    left: f64,
    top: f64,
    nr: usize,
    nc: usize,
}

/// Light yellow (low) to dark red (high) for `v` between `lo` and `hi`.
fn shade(v: f64, lo: f64, hi: f64) -> String {
    let t = if hi > lo { (v - lo) / (hi - lo) } else { 0.5 };
    format!(
        "rgb({},{},{})",
        (255.0 - 80.0 * t) as u8,
        (240.0 - 200.0 * t) as u8,
        (180.0 - 150.0 * t) as u8
    )
}

/// Row and column labels: every one while they fit, beyond that every k-th (labels
/// need ~12 px).
fn labels(s: &mut String, g: &Grid, rows: &[String], cols: &[String]) {
    let every = ((12.0 / g.cell).ceil() as usize).max(1);
    for (i, name) in rows.iter().enumerate().filter(|(i, _)| i % every == 0) {
        let _ = write!(
            s,
            "<text class=\"row-label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"11\">{}</text>",
            g.left - 5.0,
            g.top + g.cell * (i as f64 + 0.5) + 4.0,
            esc(name)
        );
    }
    for (j, name) in cols.iter().enumerate().filter(|(j, _)| j % every == 0) {
        let _ = write!(
            s,
            "<text class=\"col-label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"11\">{}</text>",
            g.left + g.cell * (j as f64 + 0.5),
            g.top - 5.0,
            esc(name)
        );
    }
}

/// One shaded square per finite value, with its number while columns are few.
fn squares(
    s: &mut String,
    g: &Grid,
    rows: &[String],
    cols: &[String],
    values: &[Vec<Option<f64>>],
    (lo, hi): (f64, f64),
) {
    let cell = g.cell;
    for (i, row) in values.iter().enumerate() {
        for (j, v) in row.iter().enumerate() {
            let Some(v) = v.filter(|v| v.is_finite()) else {
                continue;
            };
            let (x, y) = (g.left + cell * j as f64, g.top + cell * i as f64);
            let _ = write!(
                s,
                "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{cell:.1}\" height=\"{cell:.1}\" fill=\"{}\"><title>{} → {}: {v:.1}</title></rect>",
                shade(v, lo, hi),
                esc(&rows[i.min(g.nr.saturating_sub(1))]),
                esc(cols.get(j).map(String::as_str).unwrap_or(""))
            );
            if g.nc <= 24 {
                let _ = write!(
                    s,
                    "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"{}\">{v:.0}</text>",
                    x + cell / 2.0,
                    y + cell / 2.0 + 4.0,
                    if cell >= 30.0 { 11 } else { 8 }
                );
            }
        }
    }
}

/// The domain boundaries, a horizontal and a vertical line each.
fn boundary_lines(s: &mut String, g: &Grid, bounds: &[Boundary]) {
    let (left, top) = (g.left, g.top);
    let (x1, y1) = (left + g.cell * g.nc as f64, top + g.cell * g.nr as f64);
    for b in bounds.iter().filter(|b| b.after + 1 < g.nr.max(g.nc)) {
        let (col, width) = stroke(b.kind);
        let at = g.cell * (b.after + 1) as f64;
        let _ = write!(
            s,
            "<line class=\"domain domain-{k}\" x1=\"{left}\" x2=\"{x1:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"{col}\" stroke-width=\"{width}\"/>\
             <line class=\"domain domain-{k}\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{top}\" y2=\"{y1:.1}\" stroke=\"{col}\" stroke-width=\"{width}\"/>",
            k = b.kind,
            y = top + at,
            x = left + at,
        );
    }
}

/// Draw a heatmap (rows × columns, None cells left blank) with domain boundaries drawn
/// after the given rows and columns (the matrix is square when boundaries are given);
/// None when no value.
pub fn heatmap_domains(
    title: &str,
    rows: &[String],
    cols: &[String],
    values: &[Vec<Option<f64>>],
    bounds: &[Boundary],
) -> Option<String> {
    let vals: Vec<f64> = values
        .iter()
        .flatten()
        .flatten()
        .copied()
        .filter(|v| v.is_finite())
        .collect();
    if vals.is_empty() {
        return None;
    }
    let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (nr, nc) = (rows.len(), cols.len());
    let cell = (560 / nc.max(nr).max(1)).clamp(6, 60) as f64;
    let g = Grid {
        cell,
        left: 70.0,
        top: 44.0,
        nr,
        nc,
    };
    let w = (cell * nc as f64 + g.left + 20.0).max(360.0);
    let h = cell * nr as f64 + g.top + 20.0;
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"heatmap\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\">\
         <rect width=\"{w}\" height=\"{h}\" fill=\"white\"/>\
         <text x=\"{:.1}\" y=\"18\" text-anchor=\"middle\" font-size=\"15\">{}</text>",
        w / 2.0,
        esc(title)
    );
    labels(&mut s, &g, rows, cols);
    squares(&mut s, &g, rows, cols, values, (lo, hi));
    boundary_lines(&mut s, &g, bounds);
    let _ = write!(
        s,
        "<rect x=\"{}\" y=\"{}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"none\" stroke=\"black\"/></svg>",
        g.left,
        g.top,
        cell * nc as f64,
        cell * nr as f64
    );
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries_and_labels_are_drawn() {
        let names: Vec<String> = ["0", "2", "1", "3"].iter().map(|s| s.to_string()).collect();
        let v = vec![vec![Some(1.0); 4]; 4];
        let s = heatmap_domains(
            "c2c",
            &names,
            &names,
            &v,
            &[Boundary {
                after: 1,
                kind: "package",
            }],
        )
        .unwrap();
        assert_eq!(s.matches("class=\"domain domain-package\"").count(), 2);
        assert_eq!(s.matches("class=\"row-label\"").count(), 4);
        assert!(s.contains(">2</text>"));
        assert!(heatmap_domains("x", &[], &[], &[], &[]).is_none());
    }
}
