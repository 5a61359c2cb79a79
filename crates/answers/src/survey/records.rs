//! The survey's own records: one per step (what ran, how long, why not), and the
//! latency model fitted to the matrix.

use super::plan::Step;
use numalab_results::{model, Provenance, Record, Unavailable};
use serde_json::json;

/// The record of one step: its section, command line and duration; `reason` when it
/// was skipped or failed.
pub fn step_record(prov: &Provenance, s: &Step, reason: Option<String>, seconds: f64) -> Record {
    let mut r = Record::new(
        "survey",
        &s.title,
        prov.clone(),
        // The step's estimate at the reference pace beside what it took, so a run's
        // steps show where the pace model misses (`survey::pace`).
        json!({
            "section": s.section, "command": s.args, "seconds": seconds,
            "estimate_s": s.estimate_s, "touch_bytes": s.touch_bytes,
        }),
    );
    if let Some(why) = reason {
        r.unavailable.push(Unavailable {
            feature: s.title.clone(),
            reason: why,
        });
    }
    r
}

/// Fit the latency model to the matrix cells (hops, median latency).
pub fn model_record(prov: &Provenance, records: &[Record]) -> Record {
    let cells: Vec<Record> = records
        .iter()
        .filter(|r| r.kind == "matrix-latency")
        .cloned()
        .collect();
    let points = model::points(&cells, "median");
    let mut r = Record::new(
        "model",
        "fit",
        prov.clone(),
        json!({ "source": "the survey's latency matrix", "stat": "median" }),
    );
    match model::fit(&points) {
        Ok(fit) => r.set_data(&model::ModelData {
            fit,
            points,
            prediction_ns: None,
        }),
        Err(e) => r.unavailable.push(Unavailable {
            feature: "latency model".into(),
            reason: e,
        }),
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_record_keeps_its_estimate_beside_its_seconds() {
        let s = Step {
            section: "states",
            title: "latency, lines cexm".into(),
            args: vec!["latency".into()],
            estimate_s: 0.2,
            touch_bytes: 1 << 20,
            skip: None,
            experiment: None,
        };
        let r = step_record(&Provenance::collect("t", "none"), &s, None, 3.2);
        assert_eq!(r.parameters["estimate_s"], 0.2);
        assert_eq!(r.parameters["seconds"], 3.2);
        assert_eq!(r.parameters["touch_bytes"], 1 << 20);
    }
}
