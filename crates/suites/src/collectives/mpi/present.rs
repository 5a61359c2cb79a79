//! How `suite collectives --mpi` records are shown, beside the shared-memory suite's
//! section: the seed's algorithms and MPI's own collectives side by side, and the
//! seed's cost models fitted to them.

use super::plan::{Plan, KIND_PLAN};
use numalab_results::linfit::{quality_cells, LinearFit};
use numalab_results::plot::{self, LineChart, Series};
use numalab_results::present::{of, Presenter};
use numalab_results::report::{figure, html_table, num, table_notes};
use numalab_results::Record;
use std::collections::BTreeMap;

/// The collectives suite over MPI.
pub struct CollectivesMpiPresenter;

impl Presenter for CollectivesMpiPresenter {
    fn kinds(&self) -> &'static [&'static str] {
        &["collective-mpi", "collective-mpi-model", KIND_PLAN]
    }
    fn text(&self, records: &[Record]) -> Option<String> {
        let mut out = String::new();
        for r in of(records, KIND_PLAN) {
            out.push_str(&r.data_as::<Plan>().ok()?.text());
        }
        if of(records, "collective-mpi").next().is_some() {
            out.push_str(&super::text::collectives_text(records));
        }
        (!out.is_empty()).then_some(out)
    }
    fn study(&self) -> bool {
        true
    }
    fn section(&self) -> Option<(&'static str, &'static str)> {
        Some((
            "collectives-mpi",
            "Collective communication between MPI ranks",
        ))
    }
    fn html(&self, records: &[Record]) -> Option<String> {
        let runs: Vec<&Record> = of(records, "collective-mpi")
            .filter(|r| r.median("time").is_some())
            .collect();
        if runs.is_empty() {
            return None;
        }
        let mut body = figure(chart(&runs), table(&runs));
        body.push_str(&models(records));
        Some(body)
    }
}

fn p<'a>(r: &'a Record, k: &str) -> &'a serde_json::Value {
    &r.parameters[k]
}

fn is_native(r: &Record) -> bool {
    p(r, "implementation")
        .as_str()
        .unwrap_or("")
        .starts_with("MPI_")
}

/// Time against ranks, one line per collective × implementation, smallest block
/// (barriers, which move no block, always).
fn chart(runs: &[&Record]) -> Option<String> {
    let lines_of = |r: &Record| p(r, "lines").as_u64();
    let smallest = runs
        .iter()
        .filter_map(|r| lines_of(r))
        .filter(|&l| l > 0)
        .min();
    let mut lines: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for r in runs
        .iter()
        .filter(|r| lines_of(r) == Some(0) || lines_of(r) == smallest)
    {
        if let (Some(ranks), Some(t)) = (p(r, "ranks").as_f64(), r.median("time")) {
            let name = format!(
                "{} {}",
                p(r, "collective").as_str().unwrap_or("?"),
                p(r, "implementation").as_str().unwrap_or("?")
            );
            lines.entry(name).or_default().push((ranks, t / 1000.0));
        }
    }
    plot::line_chart(&LineChart {
        title: "collectives between ranks (smallest block)".into(),
        x_label: "ranks P".into(),
        y_label: "µs (median, slowest rank per pass)".into(),
        log_x: false,
        x_bytes: false,
        series: lines
            .into_iter()
            .map(|(name, points)| Series { name, points })
            .collect(),
        markers: Vec::new(),
    })
}

/// The seed's algorithm beside MPI's own, per P and block size.
fn table(runs: &[&Record]) -> String {
    let native = |r: &Record| {
        let fam = p(r, "collective").as_str().unwrap_or("?");
        runs.iter().copied().find(|n| {
            is_native(n)
                && p(n, "ranks") == p(r, "ranks")
                && p(n, "lines") == p(r, "lines")
                && fam.starts_with(p(n, "collective").as_str().unwrap_or("?"))
        })
    };
    let us = |r: &Record| r.median("time").map(|v| v / 1000.0);
    let rows: Vec<Vec<String>> = runs
        .iter()
        .filter(|r| !is_native(r))
        .map(|r| {
            let n = native(r);
            let (s, m) = (us(r), n.and_then(us));
            vec![
                p(r, "ranks").to_string(),
                p(r, "collective").as_str().unwrap_or("?").into(),
                p(r, "block_bytes").to_string(),
                num(s, 2),
                n.map_or("-".into(), |n| {
                    p(n, "implementation").as_str().unwrap_or("?").into()
                }),
                num(m, 2),
                num(s.zip(m).filter(|x| x.1 > 0.0).map(|(s, m)| s / m), 2),
            ]
        })
        .collect();
    html_table(
        &[
            "P",
            "collective",
            "block B",
            "seed alg. µs",
            "MPI's own",
            "MPI µs",
            "seed alg./MPI",
        ],
        &rows,
    )
}

/// The seed's cost models, or why one was not fitted.
fn models(records: &[Record]) -> String {
    let recs: Vec<(&Record, Option<LinearFit>)> = of(records, "collective-mpi-model")
        .map(|r| (r, r.data_as::<LinearFit>().ok()))
        .collect();
    // A reason a fit means nothing is said once under the table, not per row.
    let fits: Vec<&LinearFit> = recs.iter().filter_map(|(_, f)| f.as_ref()).collect();
    let (quality, mut notes) = quality_cells(&fits);
    let mut quality = quality.into_iter();
    // So is why a model was not fitted.
    let mut not_fitted = |why: &str| {
        let said = notes
            .iter()
            .position(|n| n.split_once(": ").is_some_and(|x| x.1 == why));
        let i = said.unwrap_or_else(|| {
            notes.push(format!("note {}: {why}", notes.len() + 1));
            notes.len() - 1
        });
        format!("see note {}", i + 1)
    };
    let rows: Vec<Vec<String>> = recs
        .iter()
        .map(|(r, f)| match f {
            Some(f) => {
                let coef: Vec<String> = f
                    .coefficients
                    .iter()
                    .filter_map(|c| c.value.map(|x| format!("{}={x:.4}", c.name)))
                    .collect();
                vec![
                    r.name.clone(),
                    f.formula.clone(),
                    coef.join(" "),
                    quality.next().unwrap_or_default(),
                ]
            }
            None => vec![
                r.name.clone(),
                "not fitted".into(),
                r.unavailable
                    .first()
                    .map_or(String::new(), |u| not_fitted(&u.reason)),
                "-".into(),
            ],
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    "<h3>seed cost models (µs)</h3>".to_string()
        + &html_table(&["collective", "model", "coefficients", "R²"], &rows)
        + &table_notes(&notes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_results::linfit::Coefficient;
    use numalab_results::{Provenance, Unavailable};

    fn model(name: &str, n: usize, undetermined: bool) -> Record {
        let mut r = Record::new(
            "collective-mpi-model",
            name,
            Provenance::collect("test", "synthetic"),
            serde_json::json!({}),
        );
        let value = |v: f64| (!undetermined).then_some(v);
        r.set_data(&LinearFit {
            formula: "T = C0 + C1·P".into(),
            coefficients: vec![
                Coefficient {
                    name: "C0".into(),
                    term: "1".into(),
                    value: Some(1.0),
                },
                Coefficient {
                    name: "C1".into(),
                    term: "P".into(),
                    value: value(0.5),
                },
            ],
            residuals: vec![0.0; n],
            r2: Some(0.9),
            n,
            note: "one P: the P terms cannot be told apart".into(),
        });
        r
    }

    #[test]
    fn the_models_table_says_each_reason_once_under_it() {
        let mut unfit = Record::new(
            "collective-mpi-model",
            "gather",
            Provenance::collect("test", "synthetic"),
            serde_json::json!({}),
        );
        unfit.unavailable.push(Unavailable {
            feature: "model fit".into(),
            reason: "2 points for 3 coefficients".into(),
        });
        let recs = vec![
            model("barrier", 4, true),
            model("broadcast", 4, true),
            model("reduce", 6, false),
            unfit.clone(),
            unfit,
        ];
        let h = models(&recs);
        assert_eq!(h.matches("one P: the P terms").count(), 1, "{h}");
        assert_eq!(h.matches("2 points for 3 coefficients").count(), 1, "{h}");
        assert_eq!(h.matches("see note 1").count(), 2, "{h}");
        assert_eq!(h.matches("see note 2").count(), 2, "{h}");
        assert!(
            h.contains("<li>note 2: 2 points for 3 coefficients</li>"),
            "{h}"
        );
        assert!(h.contains("0.900"), "{h}");
    }
}
