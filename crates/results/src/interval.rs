//! The interval of a record's figure: the one its step settled (`Record::settle`), or,
//! for records without one, an order-statistic interval of the median estimated from
//! the summary's quantiles. The plausibility rules and `compare` both judge noise by it.

use crate::record::Record;
use crate::stats::Summary;

/// z of a two-sided 95 % interval: the order statistics k = n/2 ± Z·√n/2 bound the
/// median with about 95 % confidence whatever the samples' distribution.
const Z: f64 = 1.96;

/// The interval of `metric` in `r`: the settled interval when the record's settle entry
/// is of that metric, else [`of_median`] of its summary. None when `r` lacks the metric.
pub fn of(r: &Record, metric: &str) -> Option<(f64, f64)> {
    if let Some(s) = r.settle.as_ref().filter(|s| s.metric == metric) {
        return Some((
            s.interval[0].min(s.interval[1]),
            s.interval[0].max(s.interval[1]),
        ));
    }
    Some(of_median(&r.stat(metric)?.summary))
}

/// The order-statistic interval of the median: the samples of rank n/2 ± Z·√n/2, read
/// off the summary's quantiles (min, p5, median, p95, max) by linear interpolation, since
/// the samples themselves are not kept. With n = 3 it is min–max; with n = 500 it is a
/// few percent of the p5–p95 range around the median.
pub fn of_median(s: &Summary) -> (f64, f64) {
    let n = s.n.max(1) as f64;
    let half = Z / (2.0 * n.sqrt());
    (quantile(s, 0.5 - half), quantile(s, 0.5 + half))
}

/// The summary's value at quantile `q` (clamped to 0–1), linear between known quantiles.
fn quantile(s: &Summary, q: f64) -> f64 {
    let known = [
        (0.0, s.min),
        (0.05, s.p5),
        (0.5, s.median),
        (0.95, s.p95),
        (1.0, s.max),
    ];
    let q = q.clamp(0.0, 1.0);
    for w in known.windows(2) {
        let ((q0, v0), (q1, v1)) = (w[0], w[1]);
        if q <= q1 {
            return v0 + (v1 - v0) * (q - q0) / (q1 - q0);
        }
    }
    s.max
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provenance::Provenance;
    use crate::record::Settle;

    fn summary(n: usize) -> Summary {
        Summary {
            n,
            min: 80.0,
            p5: 90.0,
            median: 100.0,
            mean: 100.0,
            p95: 110.0,
            max: 120.0,
            stdev: 5.0,
        }
    }

    #[test]
    fn few_samples_give_the_full_range_and_many_a_narrow_one() {
        assert_eq!(of_median(&summary(3)), (80.0, 120.0));
        let (lo, hi) = of_median(&summary(400));
        // Ranks 200 ± 19.6 of 400: quantiles 0.451 and 0.549, about 1 ns either side.
        assert!(
            lo > 98.0 && lo < 100.0 && hi > 100.0 && hi < 102.0,
            "{lo} {hi}"
        );
    }

    /// A record of `kind` with nothing measured yet.
    fn empty(kind: &str) -> Record {
        Record::new(
            kind,
            "x",
            Provenance::collect("t", "none"),
            Default::default(),
        )
    }

    #[test]
    fn a_settled_interval_of_the_metric_wins() {
        let mut r = empty("latency");
        r.add_samples("latency", "ns", &[80.0, 100.0, 120.0]);
        assert_eq!(of(&r, "latency"), Some((80.0, 120.0)));
        r.settle = Some(Settle {
            tolerance_pct: 2.0,
            ..Settle::new("latency", [99.0, 101.0], None)
        });
        assert_eq!(of(&r, "latency"), Some((99.0, 101.0)));
        assert_eq!(of(&r, "other"), None);
    }

    #[test]
    fn the_figure_is_the_statistic_its_step_settled() {
        use crate::settle::Figure;
        let mut r = empty("bandwidth-mix");
        // A 2-CPU mix's passes: the median (16.4) lies below the best-of-N interval.
        let gbps = [18.8, 16.9, 8.6, 14.9, 13.3, 16.4, 17.2];
        r.add_samples("bandwidth", "GB/s", &gbps);
        r.add_samples("read_bandwidth", "GB/s", &gbps);
        let settle = |figure| Settle {
            passes: 7,
            figure,
            ..Settle::new("bandwidth", [16.9, 18.8], None)
        };
        assert_eq!(
            r.figure("bandwidth"),
            Some(16.4),
            "no settle entry: the median"
        );
        r.settle = Some(settle(None));
        assert_eq!(
            r.figure("bandwidth"),
            Some(16.4),
            "a record from before the field"
        );
        r.settle = Some(settle(Some(Figure::Max)));
        assert_eq!(r.figure("bandwidth"), Some(18.8));
        // Another metric of the record keeps its median.
        assert_eq!(r.figure("read_bandwidth"), Some(16.4));
        r.settle = Some(settle(Some(Figure::Min)));
        assert_eq!(r.figure("bandwidth"), Some(8.6));
        r.settle = Some(settle(Some(Figure::Median)));
        assert_eq!(r.figure("bandwidth"), Some(16.4));
        assert_eq!(r.figure("other"), None);
        // Not settled, the best pass is no figure: the median stands.
        r.settle = Some(Settle {
            settled: false,
            ..settle(Some(Figure::Max))
        });
        assert_eq!(r.figure("bandwidth"), Some(16.4));
    }

    #[test]
    fn the_settled_statistic_reads_back_from_json_and_old_records_lack_it() {
        use crate::settle::Figure;
        let with: Settle = serde_json::from_str(
            r#"{"settled":true,"metric":"bandwidth","passes":3,"interval":[1.0,2.0],"tolerance_pct":10.0,"budget_ms":5.0,"figure":"max"}"#,
        )
        .unwrap();
        assert_eq!(with.figure, Some(Figure::Max));
        let old: Settle = serde_json::from_str(
            r#"{"settled":true,"metric":"bandwidth","passes":3,"interval":[1.0,2.0],"tolerance_pct":10.0,"budget_ms":5.0}"#,
        )
        .unwrap();
        assert_eq!(old.figure, None);
        assert!(!serde_json::to_string(&old).unwrap().contains("figure"));
    }
}
