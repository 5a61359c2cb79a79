//! Stacked bars that fit the page: a fixed width whatever the number of bars, the axis
//! from 0 to a stated top (100 % for shares) unless a bar is taller, and the legend in
//! its own strip to the right instead of headroom above the bars.

use super::{bar_frame, color, render, Area, DrawResult, H, W};
use plotters::prelude::*;

/// Width of the legend strip.
const LEGEND_W: u32 = 130;

/// Draw stacked bars in a chart [`W`] wide with the axis from 0 to `top` (or to the
/// tallest bar, when one is taller: the caller's y label says what that means); None
/// when no bar has a positive part.
pub fn stacked_bars_fit(
    title: &str,
    y_label: &str,
    parts: &[&str],
    bars: &[(String, Vec<f64>)],
    top: f64,
) -> Option<String> {
    let total = |v: &[f64]| v.iter().filter(|x| x.is_finite() && **x > 0.0).sum::<f64>();
    let tallest = bars.iter().map(|(_, v)| total(v)).fold(0.0, f64::max);
    if tallest <= 0.0 {
        return None;
    }
    let top = top.max(tallest * 1.02);
    let labels: Vec<&str> = bars.iter().map(|b| b.0.as_str()).collect();
    Some(render(W, H, |root| {
        let (left, right) = root.split_horizontally(W - LEGEND_W);
        let mut ch = bar_frame(&left, (title, 15), y_label, &labels, top, Some(10))?;
        for k in 0..parts.len() {
            let rects: Vec<_> = bars
                .iter()
                .enumerate()
                .filter_map(|(i, (_, v))| {
                    let x = *v.get(k)?;
                    (x.is_finite() && x > 0.0).then(|| {
                        let below = total(&v[..k]);
                        Rectangle::new(
                            [(i as f64 + 0.15, below), (i as f64 + 0.85, below + x)],
                            color(k).filled(),
                        )
                    })
                })
                .collect();
            ch.draw_series(rects)?;
        }
        legend(&right, parts)
    }))
}

/// The parts' colours and names, top to bottom as they stack bottom to top.
fn legend(area: &Area, parts: &[&str]) -> DrawResult {
    for (k, part) in parts.iter().enumerate().rev() {
        let y = 40 + 20 * (parts.len() - 1 - k) as i32;
        area.draw(&Rectangle::new([(6, y), (18, y + 12)], color(k).filled()))?;
        area.draw(&Text::new(
            part.to_string(),
            (24, y),
            ("sans-serif", 12).into_font(),
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn width(svg: &str) -> u32 {
        let w = svg.split("width=\"").nth(1).unwrap();
        w[..w.find('"').unwrap()].parse().unwrap()
    }

    /// The numbers among the SVG's text elements (the axis ticks).
    fn ticks(svg: &str) -> Vec<f64> {
        svg.split("<text")
            .filter_map(|t| t.split('>').nth(1)?.split('<').next()?.trim().parse().ok())
            .collect()
    }

    #[test]
    fn many_bars_keep_the_page_width_and_shares_stop_at_100() {
        let bars: Vec<(String, Vec<f64>)> = (0..40)
            .map(|i| (format!("run {i}"), vec![60.0, 30.0, 10.0]))
            .collect();
        let svg = stacked_bars_fit("t", "% of switches", &["a", "b", "c"], &bars, 100.0).unwrap();
        assert_eq!(width(&svg), W);
        // The axis ends at 100 % (plus the 2 % margin over the tallest bar): no tick
        // label above 100.
        let ticks = ticks(&svg);
        assert!(ticks.contains(&100.0), "{ticks:?}");
        assert!(ticks.iter().all(|&t| t <= 102.0), "{ticks:?}");
    }

    #[test]
    fn a_taller_bar_extends_the_axis() {
        let bars = vec![
            ("a".to_string(), vec![0.5, 0.3]),
            ("b".into(), vec![1.2, 0.4]),
        ];
        let svg = stacked_bars_fit("t", "time", &["x", "y"], &bars, 1.0).unwrap();
        let top = ticks(&svg).into_iter().fold(0.0, f64::max);
        assert!(top >= 1.4, "the axis reaches the tallest bar (1.6): {top}");
        assert!(stacked_bars_fit("t", "y", &["x"], &[("a".into(), vec![0.0])], 1.0).is_none());
    }
}
