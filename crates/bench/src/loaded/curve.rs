//! A run's loaded-latency records as bandwidth–latency curves, one per read/write
//! mix: each point's bandwidth and latency statistics and whether it settled, each
//! curve's knee (the bandwidth where latency reaches twice the unloaded latency, found
//! from settled points only) and its maximum sustained bandwidth (settled points).

use super::data::LoadedData;
use super::Point;
use numalab_probe::mix::Mix;
use numalab_results::present::of;
use numalab_results::stats::{median, percentile};
use numalab_results::Record;

/// One point of a curve: statistics over its passes.
#[derive(Debug, Clone, PartialEq)]
pub struct CurvePoint {
    /// Injector delay (spin-loop iterations after each line).
    pub delay: u64,
    /// Memory traffic (estimate: write-allocate counted), injectors and chase, GB/s: median.
    pub gbps: f64,
    /// Its mean over passes.
    pub gbps_mean: f64,
    /// Its standard deviation over passes.
    pub gbps_std: f64,
    /// Its smallest and largest pass.
    pub gbps_span: (f64, f64),
    /// Bytes the injectors issued, GB/s: median.
    pub issued_gbps: f64,
    /// Lines read over lines touched by the injectors (mean over passes).
    pub read_share: f64,
    /// Chase latency, ns per load: median, mean, standard deviation, min and p95.
    pub latency: [f64; 5],
    /// Whether its record settled (an unsettled point is shown so, and neither the
    /// knee nor the saturation is read from it).
    pub settled: bool,
}

/// Where a curve's latency reaches twice the unloaded latency.
#[derive(Debug, Clone, PartialEq)]
pub enum Knee {
    /// At this bandwidth, GB/s (between two settled points).
    At(f64),
    /// Not within the settled points, and every point settled.
    NotReached,
    /// Not to be found from settled points: why.
    Unknown(String),
}

impl Knee {
    /// The bandwidth, when found.
    pub fn gbps(&self) -> Option<f64> {
        match self {
            Knee::At(g) => Some(*g),
            _ => None,
        }
    }

    /// As a table cell.
    pub fn cell(&self) -> String {
        match self {
            Knee::At(g) => format!("{g:.2}"),
            Knee::NotReached => "not reached".into(),
            Knee::Unknown(why) => format!("cannot be found ({why})"),
        }
    }
}

impl CurvePoint {
    /// Median latency, ns.
    pub fn latency_ns(&self) -> f64 {
        self.latency[0]
    }
}

/// One mix's curve, in the order measured (lightest load first).
#[derive(Debug, Clone, PartialEq)]
pub struct Curve {
    /// The injectors' mix.
    pub mix: Mix,
    /// Its issued write percentage, rounded.
    pub write_pct: u32,
    /// The points.
    pub points: Vec<CurvePoint>,
    /// Where latency first reaches twice the unloaded latency, from settled points.
    pub knee: Knee,
    /// The largest median bandwidth of any settled point (NaN: none settled).
    pub max_gbps: f64,
}

/// One run: the unloaded point and a curve per mix.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// Memory node(s) of the run, as recorded.
    pub node: String,
    /// Unloaded latency (median, ns) and the chase's own traffic then (GB/s).
    pub idle: (f64, f64),
    /// Whether the unloaded point settled (without it no knee can be found).
    pub idle_settled: bool,
    /// One curve per mix, in the order measured.
    pub curves: Vec<Curve>,
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn std_dev(v: &[f64]) -> f64 {
    let Some(m) = mean(v) else { return 0.0 };
    if v.len() < 2 {
        return 0.0;
    }
    (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64).sqrt()
}

fn curve_point(p: &Point, settled: bool) -> Option<CurvePoint> {
    let gbps: Vec<f64> = p
        .injected_gbps
        .iter()
        .zip(&p.chase_gbps)
        .map(|(a, b)| a + b)
        .collect();
    let mut l = p.latency_ns.clone();
    l.sort_by(f64::total_cmp);
    Some(CurvePoint {
        delay: p.delay?,
        gbps: median(&gbps)?,
        gbps_mean: mean(&gbps)?,
        gbps_std: std_dev(&gbps),
        gbps_span: (
            gbps.iter().copied().fold(f64::INFINITY, f64::min),
            gbps.iter().copied().fold(0.0, f64::max),
        ),
        issued_gbps: median(&p.issued_gbps).unwrap_or(0.0),
        read_share: mean(&p.read_share).unwrap_or(f64::NAN),
        latency: [
            median(&l)?,
            mean(&l)?,
            std_dev(&l),
            *l.first()?,
            percentile(&l, 0.95),
        ],
        settled,
    })
}

/// Bandwidth where the line through the settled points, from the unloaded point on,
/// first crosses twice the unloaded latency.
fn crossing(settled: &[&CurvePoint], idle: (f64, f64)) -> Option<f64> {
    let mut prev = (idle.1, idle.0);
    for p in settled {
        let here = (p.gbps, p.latency_ns());
        if here.1 >= 2.0 * idle.0 {
            return Some(lerp((prev.1, prev.0), (here.1, here.0), 2.0 * idle.0));
        }
        prev = here;
    }
    None
}

/// Linear interpolation of y at `x` between two (x, y) points.
fn lerp(a: (f64, f64), b: (f64, f64), x: f64) -> f64 {
    if (b.0 - a.0).abs() < 1e-12 {
        return b.1;
    }
    a.1 + (b.1 - a.1) * (x - a.0) / (b.0 - a.0)
}

impl Curve {
    fn new(mix: Mix, points: Vec<CurvePoint>, idle: (f64, f64), idle_settled: bool) -> Curve {
        let settled: Vec<&CurvePoint> = points.iter().filter(|p| p.settled).collect();
        let max_gbps = settled.iter().map(|p| p.gbps).fold(f64::NAN, f64::max);
        let unsettled = points.len() - settled.len();
        let knee = if !idle_settled {
            Knee::Unknown("the unloaded point did not settle".into())
        } else {
            match crossing(&settled, idle) {
                Some(k) => Knee::At(k),
                None if unsettled > 0 => Knee::Unknown(format!(
                    "not within the settled points; {unsettled} point{} did not settle",
                    if unsettled == 1 { "" } else { "s" }
                )),
                None => Knee::NotReached,
            }
        };
        Curve {
            mix,
            write_pct: super::experiment::write_pct(mix),
            points,
            knee,
            max_gbps,
        }
    }

    /// The points that settled, in the order measured.
    pub fn settled_points(&self) -> impl Iterator<Item = &CurvePoint> {
        self.points.iter().filter(|p| p.settled)
    }

    /// Latency (median, ns) the curve gives at `gbps`, interpolated between the points
    /// that settled, ordered by bandwidth from the unloaded point; None past the curve's
    /// last settled point.
    pub fn latency_at(&self, idle: (f64, f64), gbps: f64) -> Option<f64> {
        let mut pts: Vec<(f64, f64)> = self
            .settled_points()
            .map(|p| (p.gbps, p.latency_ns()))
            .collect();
        pts.push((idle.1, idle.0));
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        if gbps <= pts[0].0 {
            return Some(pts[0].1);
        }
        pts.windows(2)
            .find(|w| gbps <= w[1].0)
            .map(|w| lerp(w[0], w[1], gbps))
    }
}

impl Family {
    /// The curve of a write percentage, if measured.
    pub fn curve(&self, write_pct: u32) -> Option<&Curve> {
        self.curves.iter().find(|c| c.write_pct == write_pct)
    }

    /// One row per curve, for the text and the HTML alike: mix, saturation bandwidth,
    /// knee, and the latency at 50 % and 90 % of saturation, numbers through `fmt`.
    pub fn saturation_rows(&self, fmt: fn(Option<f64>, usize) -> String) -> Vec<Vec<String>> {
        self.curves
            .iter()
            .map(|c| {
                let (max, l50, l90) = self.saturation(c);
                vec![
                    format!("{}% ({})", c.write_pct, c.mix.label()),
                    fmt(Some(max), 2),
                    c.knee.cell(),
                    fmt(l50, 1),
                    fmt(l90, 1),
                ]
            })
            .collect()
    }

    /// A curve's saturation: its maximum bandwidth and the latency at 50 % and 90 % of
    /// it, from settled points.
    pub fn saturation(&self, c: &Curve) -> (f64, Option<f64>, Option<f64>) {
        let at = |f: f64| c.latency_at(self.idle, f * c.max_gbps);
        (c.max_gbps, at(0.5), at(0.9))
    }
}

/// The families in `records`: each `unloaded` record starts one, and the loaded points
/// after it form one curve per mix (records without a mix count as reads only or
/// writes only by their `traffic`).
pub fn curves(records: &[Record]) -> Vec<Family> {
    let mut out: Vec<Family> = Vec::new();
    for r in of(records, "loaded-latency") {
        let Ok(d) = r.data_as::<LoadedData>() else {
            continue;
        };
        let p = d.samples;
        if p.delay.is_none() {
            let node = r.parameters["mem_node"].as_str().unwrap_or("").to_string();
            let idle = (
                median(&p.latency_ns).unwrap_or(f64::NAN),
                median(&p.chase_gbps).unwrap_or(0.0),
            );
            out.push(Family {
                node,
                idle,
                idle_settled: r.settled(),
                curves: Vec::new(),
            });
            continue;
        }
        let Some(f) = out.last_mut() else { continue };
        let mix = p.mix.unwrap_or(match r.parameters["traffic"].as_str() {
            Some("write") => Mix::WRITES,
            _ => Mix::READS,
        });
        let Some(cp) = curve_point(&p, r.settled()) else {
            continue;
        };
        match f.curves.iter_mut().find(|c| c.mix == mix) {
            Some(c) => c.points.push(cp),
            None => f
                .curves
                .push(Curve::new(mix, vec![cp], f.idle, f.idle_settled)),
        }
    }
    for f in &mut out {
        let (idle, ok) = (f.idle, f.idle_settled);
        for c in &mut f.curves {
            *c = Curve::new(c.mix, std::mem::take(&mut c.points), idle, ok);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(delay: u64, gbps: f64, lat: f64) -> CurvePoint {
        CurvePoint {
            delay,
            gbps,
            gbps_mean: gbps,
            gbps_std: 0.0,
            gbps_span: (gbps, gbps),
            issued_gbps: gbps,
            read_share: 1.0,
            latency: [lat, lat, 0.0, lat, lat],
            settled: true,
        }
    }

    fn unsettled(p: CurvePoint) -> CurvePoint {
        CurvePoint {
            settled: false,
            ..p
        }
    }

    #[test]
    fn the_knee_is_where_latency_crosses_twice_idle() {
        let idle = (100.0, 1.0);
        let c = Curve::new(
            Mix::READS,
            vec![
                pt(1000, 5.0, 110.0),
                pt(100, 10.0, 150.0),
                pt(0, 12.0, 250.0),
            ],
            idle,
            true,
        );
        assert_eq!(c.max_gbps, 12.0);
        // 200 ns lies halfway from (10, 150) to (12, 250).
        assert!((c.knee.gbps().unwrap() - 11.0).abs() < 1e-9);
        assert!((c.latency_at(idle, 7.5).unwrap() - 130.0).abs() < 1e-9);
        assert_eq!(c.latency_at(idle, 0.5), Some(100.0));
        assert_eq!(c.latency_at(idle, 13.0), None);
        let flat = Curve::new(Mix::READS, vec![pt(0, 12.0, 150.0)], idle, true);
        assert_eq!(flat.knee, Knee::NotReached);
        assert_eq!(flat.knee.cell(), "not reached");
    }

    #[test]
    fn the_knee_and_saturation_come_from_settled_points_only() {
        let idle = (100.0, 1.0);
        // An unsettled point far up the curve neither makes the knee nor the maximum.
        let c = Curve::new(
            Mix::READS,
            vec![
                pt(1000, 5.0, 110.0),
                unsettled(pt(100, 20.0, 900.0)),
                pt(0, 12.0, 250.0),
            ],
            idle,
            true,
        );
        assert_eq!(c.max_gbps, 12.0);
        // 200 ns lies at 5/7 of the way from (5, 110) to (12, 250).
        assert!((c.knee.gbps().unwrap() - 9.5).abs() < 1e-9, "{:?}", c.knee);
        // No crossing among settled points while one did not settle: unknown, not
        // "not reached".
        let c = Curve::new(
            Mix::READS,
            vec![pt(1000, 5.0, 110.0), unsettled(pt(0, 12.0, 250.0))],
            idle,
            true,
        );
        assert_eq!(
            c.knee.cell(),
            "cannot be found (not within the settled points; 1 point did not settle)"
        );
        // An unsettled unloaded point: no knee at all.
        let c = Curve::new(Mix::READS, vec![pt(0, 12.0, 250.0)], idle, false);
        assert_eq!(
            c.knee,
            Knee::Unknown("the unloaded point did not settle".into())
        );
        // Nothing settled: no maximum.
        let c = Curve::new(Mix::READS, vec![unsettled(pt(0, 1.0, 1.0))], idle, true);
        assert!(c.max_gbps.is_nan());
    }
}
