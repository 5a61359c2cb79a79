//! A loaded point that reads below the unloaded latency of the same memory: measured
//! again, and marked unsettled if it stays there. When one stays there, the unloaded
//! point is measured again once: on a shared host the memory's own latency moves
//! between points (a busy quick survey's unloaded point read 133.7 ns, then 15 of its
//! 21 loaded points 95–113 ns, each re-measured twice; quiet surveys' unloaded points
//! read 135–148 ns, a busy full survey's sweep 92 ns), and then the first unloaded
//! reading, not the curve, is the odd one.

use super::data::Measured;
use super::Load;
use numalab_results::plausible::LOADED_BELOW_TOL;
use numalab_results::stats::median;
use numalab_results::Settle;
use numalab_topo::Result;

/// Times a loaded point reading below the unloaded latency is measured again before it
/// is marked unsettled.
pub const MAX_BELOW_REMEASURE: u32 = 2;

/// The points of `loads` in order, each from `at`: a loaded point reading below the
/// unloaded latency is measured again ([`below_remeasured`]); the first one that stays
/// below has the unloaded point measured again, which replaces the first reading when
/// it reads lower by more than the tolerance (that point is then judged against it);
/// otherwise its second reading is kept beside the first (`rechecked_ns`). `done(i, m)`
/// as point `i` ends, and again for the unloaded point's index when it was measured
/// again.
pub fn run_loads(
    loads: &[Load],
    mut at: impl FnMut(Load) -> Result<Measured>,
    progress: &mut dyn FnMut(usize, usize),
    mut done: impl FnMut(usize, &Measured),
) -> Result<Vec<Measured>> {
    let mut out: Vec<Measured> = Vec::with_capacity(loads.len());
    // The unloaded point's index and median.
    let mut unloaded: Option<(usize, f64)> = None;
    let mut rechecked = false;
    for (i, load) in loads.iter().enumerate() {
        progress(i, loads.len());
        let ul = unloaded.filter(|_| load.is_some()).map(|u| u.1);
        let mut m = below_remeasured(ul, |_| at(*load))?;
        if load.is_none() {
            unloaded = median(&m.point.latency_ns).map(|l| (out.len(), l));
        } else if let (Some((u, ul)), false) = (unloaded, rechecked) {
            if still_below(&m, ul) {
                rechecked = true;
                let mut fresh = at(None)?;
                let fresh_ul = median(&fresh.point.latency_ns);
                if let Some(f) = fresh_ul.filter(|f| below(*f, ul)) {
                    fresh.replaced_ns = Some(ul);
                    done(u, &fresh);
                    out[u] = fresh;
                    unloaded = Some((u, f));
                    if !still_below(&m, f) {
                        m.settle = merged(&m.latency, m.bandwidth.as_ref());
                    }
                } else {
                    out[u].rechecked_ns = fresh_ul;
                    done(u, &out[u]);
                }
            }
        }
        done(out.len(), &m);
        out.push(m);
    }
    Ok(out)
}

/// Whether `m`'s median latency reads below the unloaded `ul` beyond the tolerance.
fn still_below(m: &Measured, ul: f64) -> bool {
    median(&m.point.latency_ns).is_some_and(|l| below(l, ul))
}

/// Whether `lat` reads below the unloaded `ul` by more than the plausibility rule's
/// tolerance.
fn below(lat: f64, ul: f64) -> bool {
    lat < ul * (1.0 - LOADED_BELOW_TOL)
}

/// The point from `at`, measured again (up to [`MAX_BELOW_REMEASURE`] times) while
/// its median latency reads below the unloaded `unloaded`; marked unsettled, with why,
/// when it still does.
pub fn below_remeasured(
    unloaded: Option<f64>,
    mut at: impl FnMut(u32) -> Result<Measured>,
) -> Result<Measured> {
    let mut m = at(0)?;
    let Some(ul) = unloaded else { return Ok(m) };
    let mut again = 0;
    while let Some(lat) = median(&m.point.latency_ns).filter(|l| below(*l, ul)) {
        if again == MAX_BELOW_REMEASURE {
            // The latency's own entry (its interval, passes and budget), not the
            // bandwidth's that `merged` may have put first.
            let mut s = m.latency.clone();
            s.settled = false;
            s.why = Some(format!(
                "machine busy: it read {lat:.1} ns, below the unloaded {ul:.1} ns of the same memory, after {again} re-measurements (a lighter load than asked: injectors descheduled, or a disturbed unloaded point)"
            ));
            m.settle = merged(&s, m.bandwidth.as_ref());
            break;
        }
        again += 1;
        m = at(again)?;
    }
    m.remeasured_below = again;
    Ok(m)
}

/// The record's settle entry from the latency's and the issued bandwidth's.
pub fn merged(latency: &Settle, bandwidth: Option<&Settle>) -> Settle {
    match bandwidth.filter(|b| !b.settled) {
        None => latency.clone(),
        Some(b) if latency.settled => b.clone(),
        Some(b) => {
            let mut s = latency.clone();
            let also = format!(
                "the issued bandwidth did not settle either ({})",
                b.why.as_deref().unwrap_or("no reason recorded")
            );
            s.why = Some(match &s.why {
                Some(w) => format!("{w}; {also}"),
                None => also,
            });
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loaded::measure::{to_point, Fig};
    use numalab_probe::mix::Mix;
    use numalab_results::disturb::{PassLog, Rules};

    fn settle(settled: bool, metric: &str, why: Option<&str>) -> Settle {
        Settle {
            settled,
            passes: 5,
            ..Settle::new(metric, [100.0, 110.0], why)
        }
    }

    fn measured(lat: f64) -> Measured {
        at_load(Some((Mix::READS, 0)), lat)
    }

    fn at_load(load: Load, lat: f64) -> Measured {
        let f = Fig {
            latency: lat,
            injected: 2.0,
            issued: 1.0,
            lines: (10.0, 0.0),
            chase: 0.5,
        };
        Measured {
            point: to_point(load, &[f; 5], Vec::new()),
            settle: settle(true, "latency", None),
            latency: settle(true, "latency", None),
            bandwidth: Some(settle(true, "issued_bandwidth", None)),
            log: PassLog {
                rules: Rules::default(),
                passes: Vec::new(),
            },
            remeasured_below: 0,
            replaced_ns: None,
            rechecked_ns: None,
        }
    }

    /// Runs `loads` with the unloaded point reading `unloaded` in turn and every loaded
    /// point `loaded`; the points, the indices `done` saw, and how many times each was
    /// measured.
    fn family(unloaded: &[f64], loaded: f64) -> (Vec<Measured>, Vec<usize>, usize) {
        let loads = [None, Some((Mix::READS, 100)), Some((Mix::READS, 0))];
        let (mut idle, mut calls, mut seen) = (0, 0, Vec::new());
        let out = run_loads(
            &loads,
            |load| {
                calls += 1;
                Ok(match load {
                    None => {
                        idle += 1;
                        at_load(None, unloaded[idle - 1])
                    }
                    l => at_load(l, loaded),
                })
            },
            &mut |_, _| {},
            |i, _| seen.push(i),
        )
        .unwrap();
        (out, seen, calls)
    }

    #[test]
    fn a_curve_below_its_unloaded_point_has_that_point_measured_again_and_replaced() {
        // The unloaded point read 200 ns, the memory then 120: the first loaded point
        // (130 ns) is measured three times, then the unloaded point again.
        let (out, seen, calls) = family(&[200.0, 120.0], 130.0);
        assert_eq!(out[0].point.latency_ns[0], 120.0);
        assert_eq!(out[0].replaced_ns, Some(200.0));
        // Judged against the new reading, both loaded points are answers.
        assert!(out[1].settle.settled && out[2].settle.settled);
        assert_eq!((out[1].remeasured_below, out[2].remeasured_below), (2, 0));
        // The unloaded point's record is handed over again when replaced.
        assert_eq!(seen, [0, 0, 1, 2]);
        assert_eq!(calls, 1 + 3 + 1 + 1);
        // A second reading no lower keeps the first, the point stays unsettled, and
        // the unloaded point is measured again only once per family.
        let (out, seen, calls) = family(&[200.0, 195.0], 130.0);
        assert_eq!(
            (out[0].point.latency_ns[0], out[0].replaced_ns),
            (200.0, None)
        );
        // Its second reading is kept beside the first, the record handed over again.
        assert_eq!(out[0].rechecked_ns, Some(195.0));
        assert!(!out[1].settle.settled && !out[2].settle.settled);
        assert_eq!(seen, [0, 0, 1, 2]);
        assert_eq!(calls, 1 + 3 + 1 + 3);
        // A curve above its unloaded point never has it measured again.
        let (out, _, calls) = family(&[100.0], 130.0);
        assert_eq!(
            (calls, out[0].replaced_ns, out[0].rechecked_ns),
            (3, None, None)
        );
    }

    #[test]
    fn a_point_below_unloaded_is_measured_again_and_kept_only_if_it_rises() {
        // Below on the first try, above on the second: the second is the point.
        let mut tries = Vec::new();
        let m = below_remeasured(Some(200.0), |k| {
            tries.push(k);
            Ok(measured(if k == 0 { 120.0 } else { 230.0 }))
        })
        .unwrap();
        assert_eq!(tries, [0, 1]);
        assert_eq!((m.remeasured_below, m.settle.settled), (1, true));
        assert_eq!(m.point.latency_ns[0], 230.0);
        // Within the tolerance below unloaded: not measured again.
        let m = below_remeasured(Some(200.0), |_| Ok(measured(185.0))).unwrap();
        assert_eq!(m.remeasured_below, 0);
        // The unloaded point itself is never compared.
        let m = below_remeasured(None, |_| Ok(measured(1.0))).unwrap();
        assert!(m.settle.settled);
    }

    #[test]
    fn a_point_that_stays_below_unloaded_is_unsettled_with_why() {
        let m = below_remeasured(Some(200.0), |_| Ok(measured(120.0))).unwrap();
        assert_eq!(m.remeasured_below, MAX_BELOW_REMEASURE);
        assert!(!m.settle.settled);
        let why = m.settle.why.unwrap();
        assert!(
            why.starts_with("machine busy: it read 120.0 ns, below the unloaded 200.0 ns"),
            "{why}"
        );
    }

    #[test]
    fn a_point_below_unloaded_whose_bandwidth_did_not_settle_keeps_the_latencys_interval() {
        // The record's entry was the bandwidth's (1.7–3.6 GB/s); a survey printed it as
        // the latency's interval ("at most 3.6 ns") once the point read below unloaded.
        let m = below_remeasured(Some(200.0), |_| {
            let mut m = measured(120.0);
            let mut bw = settle(false, "issued_bandwidth", Some("machine busy: bw"));
            bw.interval = [1.7, 3.6];
            m.settle = merged(&m.latency, Some(&bw));
            m.bandwidth = Some(bw);
            Ok(m)
        })
        .unwrap();
        assert_eq!(m.settle.metric, "latency");
        assert_eq!(m.settle.interval, [100.0, 110.0]);
        assert!(!m.settle.settled);
        let why = m.settle.why.unwrap();
        assert!(why.starts_with("machine busy: it read 120.0 ns"), "{why}");
        assert!(
            why.ends_with("the issued bandwidth did not settle either (machine busy: bw)"),
            "{why}"
        );
    }

    #[test]
    fn the_records_settle_names_the_figure_that_did_not_settle() {
        let ok = settle(true, "latency", None);
        let bw = settle(false, "issued_bandwidth", Some("machine busy: bw"));
        let lat = settle(false, "latency", Some("machine busy: lat"));
        assert_eq!(merged(&ok, None), ok);
        assert_eq!(merged(&ok, Some(&ok)), ok);
        assert_eq!(merged(&ok, Some(&bw)), bw);
        let both = merged(&lat, Some(&bw));
        assert_eq!((both.settled, both.metric.as_str()), (false, "latency"));
        assert_eq!(
            both.why.as_deref(),
            Some(
                "machine busy: lat; the issued bandwidth did not settle either (machine busy: bw)"
            )
        );
    }
}
