//! The log–log line chart, drawn as plain SVG (not plotters) so that its parts carry
//! classes a reader's tools (and the browser tests) can find: tick labels
//! (`tick-x`, `tick-y`), cache markers (`marker`), measured plateaus (`plateau`) and
//! flagged points (`outlier`). Ticks sit at powers of ten on y and, for sizes, at
//! powers of four (or two) on x: sizes are binary.

use super::{color, short_bytes, short_num, LineChart};
use crate::report::esc;
use std::fmt::Write;

/// A labelled horizontal segment over an x range (a measured plateau).
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// Smallest x the segment covers.
    pub from: f64,
    /// Largest x the segment covers.
    pub to: f64,
    /// Its height.
    pub y: f64,
    /// Its label, e.g. "L2 4.85 ns".
    pub label: String,
}

/// A flagged point (an outlier), circled and labelled.
#[derive(Debug, Clone, PartialEq)]
pub struct Flag {
    /// The point's x.
    pub x: f64,
    /// The point's y.
    pub y: f64,
    /// What is said about it.
    pub label: String,
}

/// What a log–log chart draws beside its lines.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Marks {
    /// Horizontal segments (plateaus).
    pub segments: Vec<Segment>,
    /// Flagged points.
    pub flags: Vec<Flag>,
}

/// A white outline behind labels drawn over lines, so they stay readable.
const HALO: &str = "paint-order=\"stroke\" stroke=\"white\" stroke-width=\"3\"";

const W: f64 = 760.0;
const H: f64 = 400.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 52.0;
const BOTTOM: f64 = 48.0;

/// Powers of ten within `[lo, hi]`.
pub fn decade_ticks(lo: f64, hi: f64) -> Vec<f64> {
    (-30..=30)
        .map(|k| 10f64.powi(k))
        .filter(|t| *t >= lo * (1.0 - 1e-9) && *t <= hi * (1.0 + 1e-9))
        .collect()
}

/// Powers of four within `[lo, hi]` (4K, 16K, 64K …), or of two when fewer than three
/// powers of four fall inside.
pub fn binary_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let within = |base: f64| -> Vec<f64> {
        (0..64)
            .map(|k| base.powi(k))
            .filter(|t| *t >= lo && *t <= hi)
            .collect()
    };
    let four = within(4.0);
    if four.len() >= 3 {
        four
    } else {
        within(2.0)
    }
}

/// The y range: from the power of ten at or below the data to 30% above it, and at
/// least one decade, so at least two labelled ticks (1, 10, 100 …) show.
fn decades(y0: f64, y1: f64) -> (f64, f64) {
    let lo = 10f64.powf(y0.log10().floor());
    (lo, (y1 * 1.3).max(lo * 10.0))
}

struct Scale {
    x: (f64, f64),
    y: (f64, f64),
}

impl Scale {
    fn px(&self, x: f64) -> f64 {
        LEFT + (x.ln() - self.x.0.ln()) / (self.x.1.ln() - self.x.0.ln()) * (W - LEFT - RIGHT)
    }
    fn py(&self, y: f64) -> f64 {
        H - BOTTOM - (y.ln() - self.y.0.ln()) / (self.y.1.ln() - self.y.0.ln()) * (H - TOP - BOTTOM)
    }
}

fn rgb(i: usize) -> String {
    let c = color(i);
    format!("rgb({},{},{})", c.0, c.1, c.2)
}

/// Draw `c` with both axes logarithmic, and `marks` over it; None when no series has two
/// finite positive points (one point is a table, not a curve).
pub fn loglog_marked(c: &LineChart, marks: &Marks) -> Option<String> {
    let pos = |p: &&(f64, f64)| p.0 > 0.0 && p.1 > 0.0 && p.0.is_finite() && p.1.is_finite();
    let pts: Vec<(f64, f64)> = c
        .series
        .iter()
        .flat_map(|s| s.points.iter().filter(pos).copied())
        .collect();
    if !super::has_curve(c, |p| pos(&p)) {
        return None;
    }
    let fold =
        |f: fn(f64, f64) -> f64, init: f64, v: &mut dyn Iterator<Item = f64>| v.fold(init, f);
    let x0 = fold(f64::min, f64::INFINITY, &mut pts.iter().map(|p| p.0));
    let x1 = fold(f64::max, 0.0, &mut pts.iter().map(|p| p.0));
    let ys = pts.iter().map(|p| p.1).chain(
        marks
            .segments
            .iter()
            .map(|s| s.y)
            .filter(|y| *y > 0.0 && y.is_finite()),
    );
    let ys: Vec<f64> = ys.collect();
    let y0 = fold(f64::min, f64::INFINITY, &mut ys.iter().copied());
    let y1 = fold(f64::max, 0.0, &mut ys.iter().copied());
    let (x0, x1) = if x1 > x0 {
        (x0 / 1.25, x1 * 1.25)
    } else {
        (x0 / 2.0, x0 * 2.0)
    };
    let sc = Scale {
        x: (x0, x1),
        y: decades(y0, y1),
    };
    let mut s = String::new();
    frame(&mut s, c, &sc);
    cache_and_plateau_marks(&mut s, c, marks, &sc);
    series_and_flags(&mut s, c, marks, &sc);
    s.push_str("</svg>");
    Some(s)
}

/// Title, legend, grid, tick labels and axes.
fn frame(s: &mut String, c: &LineChart, sc: &Scale) {
    title_and_legend(s, c);
    y_grid(s, sc);
    x_ticks(s, c, sc);
    axes(s, c);
}

/// The SVG's opening, its title, and the legend: one row under the title, outside the
/// plot, so it never hides a point.
fn title_and_legend(s: &mut String, c: &LineChart) {
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"loglog\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" font-family=\"sans-serif\">\
         <rect width=\"{W}\" height=\"{H}\" fill=\"white\"/>\
         <text x=\"{}\" y=\"20\" text-anchor=\"middle\" font-size=\"17\">{}</text>",
        W / 2.0,
        esc(&c.title)
    );
    let mut lx = LEFT;
    for (i, se) in c.series.iter().enumerate() {
        let _ = write!(
            s,
            "<line x1=\"{lx}\" y1=\"36\" x2=\"{}\" y2=\"36\" stroke=\"{}\" stroke-width=\"2\"/>\
             <text class=\"legend\" x=\"{}\" y=\"40\" font-size=\"12\">{}</text>",
            lx + 18.0,
            rgb(i),
            lx + 22.0,
            esc(&se.name)
        );
        lx += 40.0 + 7.0 * se.name.chars().count() as f64;
    }
}

/// Grid: labelled decades, unlabelled 2…9 between them.
fn y_grid(s: &mut String, sc: &Scale) {
    let (l, r) = (LEFT, W - RIGHT);
    let (ylo, yhi) = sc.y;
    let mut d = ylo;
    while d < yhi * 0.999 {
        for m in 2..10 {
            let y = d * m as f64;
            if y < yhi {
                let _ = write!(
                    s,
                    "<line x1=\"{l}\" x2=\"{r}\" y1=\"{0:.1}\" y2=\"{0:.1}\" stroke=\"#eee\"/>",
                    sc.py(y)
                );
            }
        }
        d *= 10.0;
    }
    for ty in decade_ticks(ylo, yhi) {
        let y = sc.py(ty);
        let _ = write!(
            s,
            "<line x1=\"{l}\" x2=\"{r}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#ccc\"/>\
             <text class=\"tick-y\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"12\">{}</text>",
            l - 6.0,
            y + 4.0,
            short_num(ty)
        );
    }
}

/// Vertical lines and labels at the x ticks (binary sizes for bytes, else decades).
fn x_ticks(s: &mut String, c: &LineChart, sc: &Scale) {
    let (t, b) = (TOP, H - BOTTOM);
    let (x0, x1) = sc.x;
    let xt = if c.x_bytes {
        binary_ticks(x0, x1)
    } else {
        decade_ticks(x0, x1)
    };
    for tx in xt {
        let x = sc.px(tx);
        let label = if c.x_bytes {
            short_bytes(tx)
        } else {
            short_num(tx)
        };
        let _ = write!(
            s,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{t}\" y2=\"{b}\" stroke=\"#ddd\"/>\
             <text class=\"tick-x\" x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"12\">{}</text>",
            b + 16.0,
            esc(&label)
        );
    }
}

/// The plot's border and the two axis labels.
fn axes(s: &mut String, c: &LineChart) {
    let (l, r, t, b) = (LEFT, W - RIGHT, TOP, H - BOTTOM);
    let _ = write!(
        s,
        "<rect x=\"{l}\" y=\"{t}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"black\"/>\
         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"13\">{}</text>\
         <text x=\"16\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"13\" transform=\"rotate(-90 16 {:.1})\">{}</text>",
        r - l,
        b - t,
        (l + r) / 2.0,
        H - 10.0,
        esc(&c.x_label),
        (t + b) / 2.0,
        (t + b) / 2.0,
        esc(&c.y_label)
    );
}

/// The topology's cache sizes and the measured plateaus.
fn cache_and_plateau_marks(s: &mut String, c: &LineChart, marks: &Marks, sc: &Scale) {
    let (t, b) = (TOP, H - BOTTOM);
    let (x0, x1) = sc.x;
    // Cache sizes the topology reports: dashed verticals, labels staggered in height.
    for (i, (x, label)) in c
        .markers
        .iter()
        .filter(|(x, _)| *x >= x0 && *x <= x1)
        .enumerate()
    {
        let px = sc.px(*x);
        let _ = write!(
            s,
            "<line class=\"marker\" x1=\"{px:.1}\" x2=\"{px:.1}\" y1=\"{t}\" y2=\"{b}\" stroke=\"#888\" stroke-dasharray=\"5 3\"/>\
             <text class=\"marker-label\" {HALO} x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" fill=\"#555\">{}</text>",
            px + 3.0,
            t + 12.0 + 12.0 * (i % 2) as f64,
            esc(label)
        );
    }
    // Measured plateaus: a bar over the sizes they span, labelled with their level.
    for sg in &marks.segments {
        if !(sg.y > 0.0 && sg.from > 0.0 && sg.to >= sg.from) {
            continue;
        }
        let (a, z, y) = (sc.px(sg.from) - 6.0, sc.px(sg.to) + 6.0, sc.py(sg.y));
        let _ = write!(
            s,
            "<line class=\"plateau\" x1=\"{a:.1}\" x2=\"{z:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"rgb(0,158,115)\" stroke-width=\"4\" stroke-opacity=\"0.55\"/>\
             <text class=\"plateau-label\" {HALO} x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"11\" fill=\"rgb(0,110,80)\">{}</text>",
            (a + z) / 2.0,
            y - 7.0,
            esc(&sg.label)
        );
    }
}

/// The curves, then the flagged points over them.
fn series_and_flags(s: &mut String, c: &LineChart, marks: &Marks, sc: &Scale) {
    let pos = |p: &&(f64, f64)| p.0 > 0.0 && p.1 > 0.0 && p.0.is_finite() && p.1.is_finite();
    let (l, r) = (LEFT, W - RIGHT);
    for (i, se) in c.series.iter().enumerate() {
        let p: Vec<(f64, f64)> = se
            .points
            .iter()
            .filter(pos)
            .map(|&(x, y)| (sc.px(x), sc.py(y)))
            .collect();
        let line: Vec<String> = p.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
        let _ = write!(
            s,
            "<polyline class=\"series\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>",
            rgb(i),
            line.join(" ")
        );
        for (x, y) in p {
            let _ = write!(
                s,
                "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3\" fill=\"{}\"/>",
                rgb(i)
            );
        }
    }
    for f in marks.flags.iter().filter(|f| f.x > 0.0 && f.y > 0.0) {
        let (x, y) = (sc.px(f.x), sc.py(f.y));
        // Below the point (the marker labels sit at the top), ending at it in the
        // right half so it stays inside the chart.
        let (dx, anchor) = if x > (l + r) / 2.0 {
            (8.0, "end")
        } else {
            (-8.0, "start")
        };
        let _ = write!(
            s,
            "<circle class=\"outlier\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"8\" fill=\"none\" stroke=\"rgb(200,0,0)\" stroke-width=\"2\"/>\
             <text class=\"outlier-label\" {HALO} x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\" font-size=\"11\" fill=\"rgb(200,0,0)\">{}</text>",
            x + dx,
            y + 22.0,
            esc(&f.label)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::Series;

    fn chart(points: Vec<(f64, f64)>) -> LineChart {
        LineChart {
            title: "latency".into(),
            x_label: "size".into(),
            y_label: "ns".into(),
            log_x: true,
            x_bytes: true,
            series: vec![Series {
                name: "read warm".into(),
                points,
            }],
            markers: vec![(32768.0, "L1 32K".into()), (524288.0, "L2 512K".into())],
        }
    }

    fn labels(svg: &str, class: &str) -> Vec<String> {
        let open = format!("class=\"{class}\"");
        svg.split("<text ")
            .filter(|t| t.starts_with(&open))
            .map(|t| t[t.find('>').unwrap() + 1..t.find("</text>").unwrap()].to_string())
            .collect()
    }

    #[test]
    fn ticks_are_powers_of_ten_and_four() {
        assert_eq!(decade_ticks(1.0, 100.0), vec![1.0, 10.0, 100.0]);
        assert_eq!(decades(1.7, 90.0), (1.0, 117.0));
        assert_eq!(decades(12.0, 27.0), (10.0, 100.0));
        assert_eq!(decades(10.0, 10.0), (10.0, 100.0));
        assert_eq!(
            binary_ticks(3000.0, 300_000.0),
            vec![4096.0, 16384.0, 65536.0, 262144.0]
        );
        // Too few powers of four: every power of two.
        assert_eq!(
            binary_ticks(3000.0, 20_000.0),
            vec![4096.0, 8192.0, 16384.0]
        );
    }

    #[test]
    fn chart_has_classed_ticks_markers_plateaus_and_flags() {
        let pts = vec![
            (4096.0, 1.7),
            (65536.0, 4.8),
            (1048576.0, 12.0),
            (67108864.0, 90.0),
        ];
        let marks = Marks {
            segments: vec![Segment {
                from: 4096.0,
                to: 16384.0,
                y: 1.7,
                label: "L1 1.70 ns".into(),
            }],
            flags: vec![Flag {
                x: 1048576.0,
                y: 12.0,
                label: "outlier (persisted after re-measure)".into(),
            }],
        };
        let s = loglog_marked(&chart(pts), &marks).unwrap();
        assert!(s.starts_with("<svg") && s.ends_with("</svg>"));
        assert_eq!(labels(&s, "tick-y"), ["1", "10", "100"]);
        assert_eq!(
            labels(&s, "tick-x"),
            ["4K", "16K", "64K", "256K", "1M", "4M", "16M", "64M"]
        );
        assert_eq!(labels(&s, "marker-label"), ["L1 32K", "L2 512K"]);
        assert_eq!(labels(&s, "plateau-label"), ["L1 1.70 ns"]);
        assert_eq!(
            labels(&s, "outlier-label"),
            ["outlier (persisted after re-measure)"]
        );
    }

    #[test]
    fn one_point_is_no_chart() {
        assert!(loglog_marked(&chart(vec![(4096.0, 1.0)]), &Marks::default()).is_none());
        assert!(
            loglog_marked(&chart(vec![(4096.0, 1.0), (0.0, 2.0)]), &Marks::default()).is_none()
        );
        assert!(loglog_marked(&chart(vec![]), &Marks::default()).is_none());
        // Three series of one point each (one sharer, three metrics): still no curve.
        let mut three = chart(vec![(1.0, 20.0)]);
        three.series.push(three.series[0].clone());
        three.series.push(three.series[0].clone());
        assert!(loglog_marked(&three, &Marks::default()).is_none());
    }
}
