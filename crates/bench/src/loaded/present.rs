//! How loaded-latency records are shown: one chart of the whole family (bandwidth x,
//! latency y, one colour per mix, knees marked), any published Mess reference curves
//! beside it, and the saturation summary.

use super::curve::{curves, Family};
use super::mess::ReferenceData;
use numalab_results::plot::{self, LineChart, Series};
use numalab_results::present::{of, Presenter};
use numalab_results::report::{esc, figure, html_table, num};
use numalab_results::summary::{Card, Figure, Group, Spread};
use numalab_results::Record;

/// Loaded latency (and its dry-run plan), and reference curves from Mess.
pub struct LoadedPresenter;

impl Presenter for LoadedPresenter {
    fn kinds(&self) -> &'static [&'static str] {
        &["loaded-latency", "loaded-latency-plan", "mess-reference"]
    }
    fn text(&self, records: &[Record]) -> Option<String> {
        match of(records, "loaded-latency-plan").last() {
            Some(p) => super::text::plan_text(p),
            None => super::text::curve_text(records),
        }
    }
    fn section(&self) -> Option<(&'static str, &'static str)> {
        Some(("loaded", "Loaded latency"))
    }
    fn html(&self, records: &[Record]) -> Option<String> {
        let fams = curves(records);
        let refs = references(records, &fams);
        if fams.is_empty() && refs.is_empty() {
            return None;
        }
        let mut out = String::new();
        for fam in &fams {
            out.push_str(&family_figure(fam, &refs));
        }
        if fams.is_empty() {
            out.push_str(&family_figure(
                &Family {
                    node: String::new(),
                    idle: (f64::NAN, 0.0),
                    idle_settled: false,
                    curves: Vec::new(),
                },
                &refs,
            ));
        }
        Some(out)
    }
    fn cards(&self, records: &[Record]) -> Vec<Card> {
        let mut v = crate::cards::loaded(records);
        v.extend(saturation_cards(records));
        v
    }
}

/// The reference curves to overlay: the read percentages nearest this run's curves'
/// memory-traffic read shares (all of them when there are six or fewer).
fn references(records: &[Record], fams: &[Family]) -> Vec<(String, Vec<(f64, f64)>)> {
    let refs: Vec<(i64, &Record)> = of(records, "mess-reference")
        .filter_map(|r| Some((r.parameters["read_pct"].as_i64()?, r)))
        .collect();
    let mut want: Vec<i64> = fams
        .iter()
        .flat_map(|f| &f.curves)
        .map(|c| super::mess::traffic_read_pct(c.mix.write_share()))
        .collect();
    if want.is_empty() {
        want = vec![100, 50];
    }
    let pick: Vec<i64> = if refs.len() <= 6 {
        refs.iter().map(|r| r.0).collect()
    } else {
        want.iter()
            .filter_map(|w| refs.iter().map(|r| r.0).min_by_key(|p| (p - w).abs()))
            .collect()
    };
    refs.iter()
        .filter(|(p, _)| pick.contains(p))
        .filter_map(|(p, r)| {
            let d = r.data_as::<ReferenceData>().ok()?;
            let src = r.parameters["source"].as_str().unwrap_or("reference");
            Some((format!("another machine ({src}): {p}% reads"), d.points))
        })
        .collect()
}

fn family_figure(fam: &Family, refs: &[(String, Vec<(f64, f64)>)]) -> String {
    let idle = fam.idle_settled.then_some((fam.idle.1, fam.idle.0));
    let mut series: Vec<Series> = Vec::new();
    for c in &fam.curves {
        let name = format!("{}% writes ({})", c.write_pct, c.mix.label());
        let settled = idle
            .into_iter()
            .chain(c.settled_points().map(|p| (p.gbps, p.latency_ns())));
        series.push(Series {
            name: name.clone(),
            points: sorted(settled),
        });
        let unsettled = c.points.iter().filter(|p| !p.settled);
        let unsettled = sorted(unsettled.map(|p| (p.gbps, p.latency_ns())));
        if !unsettled.is_empty() {
            series.push(Series {
                name: format!("{name}, unsettled (machine busy)"),
                points: unsettled,
            });
        }
    }
    series.extend(refs.iter().map(|(n, p)| Series {
        name: n.clone(),
        points: p.clone(),
    }));
    let markers = fam
        .curves
        .iter()
        .filter_map(|c| Some((c.knee.gbps()?, format!("knee {}% writes", c.write_pct))))
        .collect();
    let chart = plot::line_chart(&LineChart {
        title: format!("bandwidth–latency curves, memory node {}", fam.node),
        x_label: "memory traffic (estimate), GB/s".into(),
        y_label: "chase ns per load".into(),
        log_x: false,
        x_bytes: false,
        series,
        markers,
    });
    let rows = fam.saturation_rows(num);
    let note = super::text::unsettled_note(fam)
        .map(|n| format!("<p class=\"unsettled\">{}</p>", esc(&n)))
        .unwrap_or_default();
    let table = html_table(
        &[
            "writes",
            "max GB/s",
            "knee GB/s",
            "ns at 50% of max",
            "ns at 90% of max",
        ],
        &rows,
    );
    figure(chart, table + &note)
}

/// The finite points, in bandwidth order.
fn sorted(pts: impl Iterator<Item = (f64, f64)>) -> Vec<(f64, f64)> {
    let mut v: Vec<(f64, f64)> = pts.filter(|p| p.0.is_finite() && p.1.is_finite()).collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

/// Saturation bandwidth and the latency at 50 % and 90 % of it, for reads only and
/// for 50/50, from the last family measured (settled points only).
fn saturation_cards(records: &[Record]) -> Vec<Card> {
    let Some(fam) = curves(records).pop() else {
        return Vec::new();
    };
    [(0, "saturation, reads only"), (50, "saturation, 50/50")]
        .into_iter()
        .filter_map(|(w, title)| {
            let c = fam.curve(w)?;
            let (max, l50, l90) = fam.saturation(c);
            let top = c
                .settled_points()
                .max_by(|a, b| a.gbps.total_cmp(&b.gbps))?;
            let spread = Spread {
                lo: top.gbps_span.0,
                hi: top.gbps_span.1,
                what: "slowest to fastest pass at that point".into(),
            };
            let fig = Figure::new("bandwidth", max, "GB/s", 1, "loaded").with(Some(spread));
            let ns = |l: Option<f64>| l.map_or("-".into(), |l| format!("{l:.0} ns"));
            Some(Card {
                group: Group::Coherence,
                title: title.into(),
                detail: Some(format!(
                    "node {}: latency {} at 50 %, {} at 90 % of it",
                    fam.node,
                    ns(l50),
                    ns(l90)
                )),
                figures: vec![fig],
                remark: None,
            })
        })
        .collect()
}
