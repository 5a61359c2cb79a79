//! How the fitted latency model is shown: a report section and its terminal text
//! (`numalab model fit|predict`).

use crate::model::ModelData;
use crate::output::table;
use std::fmt::Write;

fn opt(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.2}"))
        .unwrap_or_else(|| "not separable".into())
}

/// A model record's text: coefficients, the note on what the data cannot separate,
/// each point with its fitted value, and the prediction when one was asked for.
pub fn text(d: &ModelData, predict_hops: Option<u32>) -> String {
    let (f, points) = (&d.fit, &d.points);
    let predict = predict_hops.zip(d.prediction_ns);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Model: latency = local + remote penalty + hops × per-hop delay ({}, hops {})\n",
        crate::words::count(f.n as u64, "observation"),
        f.hops_seen
            .iter()
            .map(|h| h.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut coefficients = vec![vec!["local".into(), opt(f.local_ns)]];
    if let Some(i) = f.intercept_ns {
        coefficients.push(vec!["local + penalty".into(), format!("{i:.2}")]);
    }
    coefficients.extend([
        vec!["remote penalty".into(), opt(f.remote_penalty_ns)],
        vec!["per hop".into(), opt(f.per_hop_ns)],
        vec![
            "R²".into(),
            f.r2.map(|r| format!("{r:.4}"))
                .unwrap_or_else(|| "-".into()),
        ],
    ]);
    s.push_str(&table(&["coefficient", "ns"], &coefficients));
    let _ = writeln!(s, "\n{}\n", f.note);
    let rows: Vec<Vec<String>> = points
        .iter()
        .zip(&f.residuals_ns)
        .map(|(p, r)| {
            vec![
                p.hops.to_string(),
                format!("{:.2}", p.latency_ns),
                format!("{:.2}", p.latency_ns - r),
                format!("{r:+.2}"),
            ]
        })
        .collect();
    s.push_str(&table(
        &["hops", "observed ns", "fitted ns", "residual"],
        &rows,
    ));
    s.push('\n');
    if let Some((h, v)) = predict {
        let _ = writeln!(
            s,
            "\nPredicted latency at {}: {v:.2} ns",
            crate::words::count(h as u64, "hop")
        );
    }
    s
}

/// The fitted latency model as a report section.
pub struct ModelPresenter;

impl crate::Presenter for ModelPresenter {
    fn kinds(&self) -> &'static [&'static str] {
        &["model"]
    }
    fn section(&self) -> Option<(&'static str, &'static str)> {
        Some(("model", "Latency model"))
    }
    fn text(&self, records: &[crate::Record]) -> Option<String> {
        let s: String = records
            .iter()
            .filter_map(|r| {
                let d: ModelData = r.data_as().ok()?;
                let hops = r.parameters["predict_hops"].as_u64().map(|h| h as u32);
                Some(text(&d, hops))
            })
            .collect();
        (!s.is_empty()).then_some(s)
    }
    fn html(&self, records: &[crate::Record]) -> Option<String> {
        use crate::report::{html_table, num};
        let d: ModelData = crate::present::of(records, "model")
            .last()?
            .data_as()
            .ok()?;
        let f = &d.fit;
        let mut rows = vec![
            vec!["local ns".into(), num(f.local_ns, 1)],
            vec!["local + penalty ns".into(), num(f.intercept_ns, 1)],
            vec!["remote penalty ns".into(), num(f.remote_penalty_ns, 1)],
            vec!["per hop ns".into(), num(f.per_hop_ns, 1)],
            vec!["R²".into(), num(f.r2, 3)],
            vec!["points".into(), f.n.to_string()],
            vec!["note".into(), f.note.clone()],
        ];
        if f.intercept_ns.is_none() {
            rows.remove(1);
        }
        Some(html_table(
            &["latency = local + remote penalty + hops × per hop", ""],
            &rows,
        ))
    }
    fn cards(&self, records: &[crate::Record]) -> Vec<crate::summary::Card> {
        model_cards(records)
    }
}

/// The fitted model as one card: local latency (spread: the 0-hop observations),
/// per-hop delay and remote penalty when the data could separate them.
fn model_cards(records: &[crate::Record]) -> Vec<crate::summary::Card> {
    use crate::summary::{Card, Figure, Group, Spread};
    let Some(d) = crate::present::of(records, "model")
        .last()
        .and_then(|r| r.data_as::<ModelData>().ok())
    else {
        return Vec::new();
    };
    let f = &d.fit;
    let local: Vec<f64> = d
        .points
        .iter()
        .filter(|p| p.hops == 0)
        .map(|p| p.latency_ns)
        .collect();
    // Without a 0-hop row there is no local figure; the intercept is local + penalty.
    let first = match (f.local_ns, f.intercept_ns) {
        (Some(l), _) => {
            Figure::new("local", l, "ns", 1, "model").with(Spread::range(&local, "0-hop points"))
        }
        (None, Some(i)) => Figure::new("local + penalty", i, "ns", 1, "model"),
        (None, None) => return Vec::new(),
    };
    let mut c = Card::one(Group::Model, "fit", first);
    if let Some(h) = f.per_hop_ns {
        c.figures.push(Figure::new("per hop", h, "ns", 1, "model"));
    }
    if let Some(p) = f.remote_penalty_ns {
        c.figures
            .push(Figure::new("remote penalty", p, "ns", 1, "model"));
    }
    c.detail = Some(match f.r2 {
        Some(r2) => format!("R² {r2:.3}, {}", crate::words::count(f.n as u64, "point")),
        None => crate::words::count(f.n as u64, "point"),
    });
    vec![c]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{fit, Point};

    #[test]
    fn the_model_text_lists_hops_without_brackets_and_counts_in_words() {
        let points: Vec<Point> = [(0, 100.0), (1, 140.0), (2, 165.0), (0, 101.0)]
            .iter()
            .map(|&(hops, latency_ns)| Point { hops, latency_ns })
            .collect();
        let d = ModelData {
            fit: fit(&points).unwrap(),
            points,
            prediction_ns: Some(190.0),
        };
        let t = text(&d, Some(1));
        assert!(t.contains("(4 observations, hops 0, 1, 2)"), "{t}");
        assert!(t.contains("Predicted latency at 1 hop: 190.00 ns"), "{t}");
        assert!(!t.contains('[') && !t.contains("(s)"), "{t}");
    }
}
