//! Charts as inline SVG (plotters' SVG backend; text as SVG `<text>`, so no font
//! files are read and the browser's own sans-serif draws the labels).

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

mod heatmap;
mod loglog;
mod stacked;
pub use heatmap::{boundaries, heatmap_domains, permute, Boundary};
pub use loglog::{binary_ticks, decade_ticks, loglog_marked, Flag, Marks, Segment};
pub use stacked::stacked_bars_fit;

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type DrawResult = Result<(), Box<dyn std::error::Error>>;

/// One named line of points.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend label.
    pub name: String,
    /// (x, y) points, in x order.
    pub points: Vec<(f64, f64)>,
}

/// A line chart.
#[derive(Debug, Clone)]
pub struct LineChart {
    /// Title above the plot.
    pub title: String,
    /// X axis description.
    pub x_label: String,
    /// Y axis description.
    pub y_label: String,
    /// Logarithmic x axis (sizes).
    pub log_x: bool,
    /// X values shown as bytes (KiB, MiB) on the axis.
    pub x_bytes: bool,
    /// The lines.
    pub series: Vec<Series>,
    /// Labelled vertical markers (cache sizes).
    pub markers: Vec<(f64, String)>,
}

const W: u32 = 760;
const H: u32 = 380;

pub(crate) fn color(i: usize) -> RGBColor {
    // A colour-blind-safe qualitative set (Okabe–Ito).
    const C: [(u8, u8, u8); 7] = [
        (0, 114, 178),
        (213, 94, 0),
        (0, 158, 115),
        (204, 121, 167),
        (230, 159, 0),
        (86, 180, 233),
        (0, 0, 0),
    ];
    let (r, g, b) = C[i % C.len()];
    RGBColor(r, g, b)
}

/// Bytes as a short axis label.
pub fn short_bytes(v: f64) -> String {
    let units = [(1u64 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")];
    for (u, n) in units {
        if v >= u as f64 {
            let x = v / u as f64;
            return if x.fract().abs() < 1e-9 {
                format!("{x:.0}{n}")
            } else {
                format!("{x:.1}{n}")
            };
        }
    }
    format!("{v:.0}")
}

fn render(w: u32, h: u32, f: impl FnOnce(&Area) -> DrawResult) -> String {
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, (w, h)).into_drawing_area();
        let ok = root.fill(&WHITE).is_ok() && f(&root).is_ok() && root.present().is_ok();
        if !ok {
            drop(root);
            return "<p class=\"warn\">chart could not be drawn</p>".to_string();
        }
    }
    s
}

fn bounds(points: impl Iterator<Item = (f64, f64)>) -> Option<(f64, f64, f64, f64)> {
    let mut b: Option<(f64, f64, f64, f64)> = None;
    for (x, y) in points.filter(|(x, y)| x.is_finite() && y.is_finite()) {
        b = Some(match b {
            None => (x, x, y, y),
            Some((a, bx, c, d)) => (a.min(x), bx.max(x), c.min(y), d.max(y)),
        });
    }
    b
}

/// The markers, lines, points and legend of a line chart, on either x scale.
fn lines_and_markers<'a, X>(
    ch: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, RangedCoordf64>>,
    c: &LineChart,
    (x0, x1): (f64, f64),
    y1: f64,
) -> DrawResult
where
    X: Ranged<ValueType = f64>,
{
    for (x, label) in c.markers.iter().filter(|(x, _)| *x >= x0 && *x <= x1) {
        ch.draw_series(std::iter::once(PathElement::new(
            vec![(*x, 0.0), (*x, y1)],
            RGBColor(150, 150, 150).stroke_width(1),
        )))?;
        ch.draw_series(std::iter::once(Text::new(
            label.clone(),
            (*x, y1 * 0.97),
            ("sans-serif", 12).into_font(),
        )))?;
    }
    for (i, s) in c.series.iter().enumerate() {
        let col = color(i);
        ch.draw_series(LineSeries::new(
            s.points.iter().copied(),
            col.stroke_width(2),
        ))?
        .label(s.name.as_str())
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], col));
        ch.draw_series(s.points.iter().map(|p| Circle::new(*p, 3, col.filled())))?;
    }
    ch.configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    Ok(())
}

/// A number as a short axis label: no float noise such as 0.6000000000000001.
pub fn short_num(v: f64) -> String {
    let s = if v.abs() >= 100.0 || v == v.trunc() {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A bar's value label with the precision the value needs: three significant figures
/// (0.06 is "0.06", not "0.1"; 12.34 is "12.3"; 1234 is "1234").
pub fn bar_value(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Whether some series of `c` has two points that pass `keep`: a curve to draw.
pub(crate) fn has_curve(c: &LineChart, keep: impl Fn(&(f64, f64)) -> bool) -> bool {
    c.series
        .iter()
        .any(|s| s.points.iter().filter(|p| keep(p)).count() >= 2)
}

/// Draw a line chart; None when no series has two finite points (one point per series
/// is a table row, not a curve: the callers' figures then show their table alone).
pub fn line_chart(c: &LineChart) -> Option<String> {
    if !has_curve(c, |(x, y)| x.is_finite() && y.is_finite()) {
        return None;
    }
    let (x0, x1, _, y1) = bounds(c.series.iter().flat_map(|s| s.points.iter().copied()))?;
    let (x0, x1) = if x0 == x1 {
        (x0 * 0.9, x1 * 1.1 + 1.0)
    } else {
        (x0, x1)
    };
    // Headroom above the data keeps the upper-left legend off the points.
    let y1 = if y1 <= 0.0 { 1.0 } else { y1 * 1.35 };
    Some(render(W, H, |root| {
        let mut b = ChartBuilder::on(root);
        b.caption(&c.title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60);
        let fmt = |v: &f64| {
            if c.x_bytes {
                short_bytes(*v)
            } else {
                short_num(*v)
            }
        };
        if c.log_x && x0 > 0.0 {
            // Ticks at powers of four (4K, 16K, … 1G) rather than of ten: sizes are binary.
            let ticks: Vec<f64> = (0..64)
                .map(|k| 4f64.powi(k))
                .filter(|t| *t >= x0 && *t <= x1)
                .collect();
            let x = (x0..x1).log_scale().with_key_points(ticks);
            let mut ch = b.build_cartesian_2d(x, 0.0..y1)?;
            ch.configure_mesh()
                .x_desc(c.x_label.as_str())
                .y_desc(c.y_label.as_str())
                .x_label_formatter(&fmt)
                .draw()?;
            lines_and_markers(&mut ch, c, (x0, x1), y1)
        } else {
            let mut ch = b.build_cartesian_2d(x0..x1, 0.0..y1)?;
            ch.configure_mesh()
                .x_desc(c.x_label.as_str())
                .y_desc(c.y_label.as_str())
                .x_label_formatter(&fmt)
                .draw()?;
            lines_and_markers(&mut ch, c, (x0, x1), y1)
        }
    }))
}

type BarChart<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The frame bar charts share: caption, one slot per bar from 0 to `top`, each bar's
/// label under its middle, no vertical grid; `label_size` sets the labels' font size.
fn bar_frame<'a, 'b>(
    root: &'a Area<'b>,
    (title, caption): (&str, u32),
    y_label: &str,
    labels: &[&str],
    top: f64,
    label_size: Option<u32>,
) -> Result<BarChart<'a, 'b>, Box<dyn std::error::Error>> {
    let n = labels.len();
    let mut ch = ChartBuilder::on(root)
        .caption(title, ("sans-serif", caption))
        .margin(12)
        .x_label_area_size(if label_size.is_some() { 60 } else { 50 })
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..n as f64, 0.0..top)?;
    // Only the tick at a slot's middle is labelled.
    let label = |x: &f64| {
        let i = x.floor() as usize;
        if (x - i as f64 - 0.5).abs() < 1e-6 {
            labels.get(i).map(|l| l.to_string()).unwrap_or_default()
        } else {
            String::new()
        }
    };
    let mut mesh = ch.configure_mesh();
    mesh.disable_x_mesh()
        .x_labels(n * 2 + 1)
        .x_label_formatter(&label)
        .y_desc(y_label);
    if let Some(size) = label_size {
        mesh.x_label_style(("sans-serif", size));
    }
    mesh.draw()?;
    Ok(ch)
}

/// Draw a bar chart of labelled values; None when fewer than two are finite (a single
/// bar compares nothing: its table says it).
pub fn bar_chart(title: &str, y_label: &str, bars: &[(String, f64)]) -> Option<String> {
    let bars: Vec<&(String, f64)> = bars.iter().filter(|(_, v)| v.is_finite()).collect();
    if bars.len() < 2 {
        return None;
    }
    let top = bars.iter().map(|(_, v)| *v).fold(0.0, f64::max).max(1e-9) * 1.15;
    let labels: Vec<&str> = bars.iter().map(|b| b.0.as_str()).collect();
    Some(render(W, H, |root| {
        let mut ch = bar_frame(root, (title, 18), y_label, &labels, top, None)?;
        ch.draw_series(bars.iter().enumerate().map(|(i, (_, v))| {
            Rectangle::new(
                [(i as f64 + 0.15, 0.0), (i as f64 + 0.85, *v)],
                color(0).filled(),
            )
        }))?;
        ch.draw_series(bars.iter().enumerate().map(|(i, (_, v))| {
            Text::new(
                bar_value(*v),
                (i as f64 + 0.3, *v + top * 0.02),
                ("sans-serif", 12).into_font(),
            )
        }))?;
        Ok(())
    }))
}

/// Bars split into named parts stacked on each other (e.g. a run's time broken into
/// application, barrier, fault, …); `bars` are (label, one value per part). None when
/// no bar has a finite positive total.
pub fn stacked_bars(
    title: &str,
    y_label: &str,
    parts: &[&str],
    bars: &[(String, Vec<f64>)],
) -> Option<String> {
    let total = |v: &[f64]| v.iter().filter(|x| x.is_finite() && **x > 0.0).sum::<f64>();
    let top = bars.iter().map(|(_, v)| total(v)).fold(0.0, f64::max);
    if top <= 0.0 {
        return None;
    }
    // Headroom for the legend in the upper right.
    let top = top * 1.45;
    let n = bars.len();
    let w = (W as usize).max(90 + 34 * n) as u32;
    let labels: Vec<&str> = bars.iter().map(|b| b.0.as_str()).collect();
    Some(render(w, H, |root| {
        let mut ch = bar_frame(root, (title, 16), y_label, &labels, top, Some(11))?;
        for (k, part) in parts.iter().enumerate() {
            let col = color(k);
            let rects: Vec<_> = bars
                .iter()
                .enumerate()
                .filter_map(|(i, (_, v))| {
                    let x = *v.get(k)?;
                    if !x.is_finite() || x <= 0.0 {
                        return None;
                    }
                    let below = total(&v[..k]);
                    Some(Rectangle::new(
                        [(i as f64 + 0.15, below), (i as f64 + 0.85, below + x)],
                        col.filled(),
                    ))
                })
                .collect();
            ch.draw_series(rects)?
                .label(*part)
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], col.filled()));
        }
        ch.configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()?;
        Ok(())
    }))
}

/// Draw a line chart with both axes logarithmic (sizes against latency or
/// bandwidth that span decades); None when no series has two finite positive points.
pub fn loglog_chart(c: &LineChart) -> Option<String> {
    loglog_marked(c, &Marks::default())
}

/// Draw a heatmap (rows × columns, None cells left blank); None when no value.
pub fn heatmap(
    title: &str,
    rows: &[String],
    cols: &[String],
    values: &[Vec<Option<f64>>],
) -> Option<String> {
    heatmap_domains(title, rows, cols, values, &[])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_numbers_are_short() {
        assert_eq!(short_num(0.6000000000000001), "0.6");
        assert_eq!(short_num(1.5999999999), "1.6");
        assert_eq!(short_num(1024.0), "1024");
        assert_eq!(short_num(0.125), "0.125");
        assert_eq!(short_num(-2.0), "-2");
    }

    #[test]
    fn bar_labels_keep_the_precision_the_value_needs() {
        assert_eq!(bar_value(0.06), "0.06");
        assert_eq!(bar_value(0.0612), "0.0612");
        assert_eq!(bar_value(1.234), "1.23");
        assert_eq!(bar_value(12.34), "12.3");
        assert_eq!(bar_value(1234.4), "1234");
        assert_eq!(bar_value(40.0), "40");
        let b = bar_chart("shares", "GB/s", &[("a".into(), 0.06), ("b".into(), 1.5)]).unwrap();
        assert!(b.contains("0.06"), "{b}");
    }

    #[test]
    fn charts_are_svg_with_their_labels() {
        let c = LineChart {
            title: "latency".into(),
            x_label: "size".into(),
            y_label: "ns".into(),
            log_x: true,
            x_bytes: true,
            series: vec![Series {
                name: "warm".into(),
                points: vec![(4096.0, 1.0), (1048576.0, 4.0), (1073741824.0, 100.0)],
            }],
            markers: vec![(49152.0, "L1".into())],
        };
        let s = line_chart(&c).unwrap();
        assert!(s.starts_with("<svg") && s.contains("</svg>"));
        assert!(s.contains("L1") && s.contains("warm") && s.contains("polyline"));
        let b = bar_chart(
            "states",
            "ns",
            &[("uown".into(), 120.0), ("dext".into(), 40.0)],
        )
        .unwrap();
        assert!(b.contains("uown") && b.contains("<rect"));
        let h = heatmap(
            "c2c",
            &["0".into(), "1".into()],
            &["0".into(), "1".into()],
            &[vec![None, Some(30.0)], vec![Some(31.0), None]],
        )
        .unwrap();
        assert!(h.contains("<rect") && h.contains("31"));
        assert!(bar_chart("x", "y", &[]).is_none());
        assert!(bar_chart("x", "y", &[("one".into(), 3.0)]).is_none());
        let mut one = c.clone();
        one.series[0].points.truncate(1);
        assert!(line_chart(&one).is_none());
        let st = stacked_bars(
            "time",
            "share of T=1",
            &["app", "barrier"],
            &[
                ("T=1".into(), vec![0.7, 0.3]),
                ("T=2".into(), vec![0.4, 0.2]),
            ],
        )
        .unwrap();
        assert!(st.contains("<rect") && st.contains("barrier") && st.contains("T=2"));
        assert!(stacked_bars("x", "y", &["a"], &[("b".into(), vec![0.0])]).is_none());
        let ll = loglog_chart(&LineChart {
            title: "p2p".into(),
            x_label: "size".into(),
            y_label: "ns".into(),
            log_x: true,
            x_bytes: true,
            series: vec![Series {
                name: "send".into(),
                points: vec![(8.0, 300.0), (65536.0, 9000.0)],
            }],
            markers: Vec::new(),
        })
        .unwrap();
        assert!(ll.contains("polyline") && ll.contains("send"));
        assert!(heatmap("x", &[], &[], &[]).is_none());
        assert_eq!(short_bytes(49152.0), "48K");
    }
}
