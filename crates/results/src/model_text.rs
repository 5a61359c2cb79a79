//! The fitted latency model as terminal text (`numalab model fit|predict`).

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
    let _ = writeln!(s, "Model: latency = local + remote penalty + hops × per-hop delay ({} observations, hops {:?})\n", f.n, f.hops_seen);
    s.push_str(&table(
        &["coefficient", "ns"],
        &[
            vec!["local".into(), format!("{:.2}", f.local_ns)],
            vec!["remote penalty".into(), opt(f.remote_penalty_ns)],
            vec!["per hop".into(), opt(f.per_hop_ns)],
            vec![
                "R²".into(),
                f.r2.map(|r| format!("{r:.4}"))
                    .unwrap_or_else(|| "-".into()),
            ],
        ],
    ));
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
        let _ = writeln!(s, "\nPredicted latency at {h} hop(s): {v:.2} ns");
    }
    s
}
