//! `suite collectives --mpi` as terminal text: the seed's algorithm beside MPI's own
//! per P and block size with the fitted cost models, or OSU's layout (`--osu`).

use numalab_results::linfit::LinearFit;
use numalab_results::output::table;
use numalab_results::present::warning_lines;
use numalab_results::Record;
use std::fmt::Write;

fn median_us(r: &Record) -> Option<f64> {
    r.median("time").map(|m| m / 1000.0)
}

/// A string parameter, or "?".
fn word<'a>(r: &'a Record, k: &str) -> &'a str {
    r.parameters[k].as_str().unwrap_or("?")
}

fn is_native(r: &Record) -> bool {
    r.parameters["implementation"]
        .as_str()
        .is_some_and(|i| i.starts_with("MPI_"))
}

/// MPI's own collective measured beside the seed algorithm `r`.
fn native_of<'a>(runs: &[&'a Record], r: &Record) -> Option<&'a Record> {
    let fam = word(r, "collective");
    runs.iter()
        .find(|n| {
            n.parameters["ranks"] == r.parameters["ranks"]
                && n.parameters["lines"] == r.parameters["lines"]
                && is_native(n)
                && fam.starts_with(word(n, "collective"))
        })
        .copied()
}

/// One row: a seed algorithm, MPI's own and their ratio.
fn row(runs: &[&Record], r: &Record) -> Vec<String> {
    let n = native_of(runs, r);
    let (s, m) = (median_us(r), n.and_then(median_us));
    vec![
        r.parameters["ranks"].to_string(),
        word(r, "collective").to_string(),
        r.parameters["block_bytes"].to_string(),
        s.map_or("-".into(), |v| format!("{v:.2}")),
        n.map_or("-".into(), |n| word(n, "implementation").to_string()),
        m.map_or("-".into(), |v| format!("{v:.2}")),
        match (s, m) {
            (Some(s), Some(m)) if m > 0.0 => format!("{:.2}", s / m),
            _ => "-".into(),
        },
    ]
}

/// Seed algorithm beside MPI's own, per P and block size, and the fitted models.
pub(super) fn collectives_text(recs: &[Record]) -> String {
    let runs: Vec<&Record> = recs.iter().filter(|r| r.kind == "collective-mpi").collect();
    let rows: Vec<Vec<String>> = runs
        .iter()
        .filter(|r| {
            !r.parameters["implementation"]
                .as_str()
                .unwrap_or("")
                .starts_with("MPI_")
        })
        .map(|r| row(&runs, r))
        .collect();
    let mut s = String::from("collectives between MPI ranks: median completion time (µs, slowest rank per pass); every moved word checked\n(seed alg.: the KSR study's algorithm, timed here over MPI; MPI's own: the library's collective)\n");
    s.push_str(&table(
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
    ));
    s.push_str("\n\nseed cost models (µs)\n");
    s.push_str(&models_text(recs));
    s.push_str(&warning_lines(recs));
    s
}

/// Whether the data determined every coefficient with a point to spare.
fn determined(d: &LinearFit) -> bool {
    let fitted = d.coefficients.iter().filter(|c| c.value.is_some()).count();
    d.coefficients.iter().all(|c| c.value.is_some()) && d.n > fitted
}

/// The fitted models, one line each; the ones with too few points named in one line,
/// their reason said once; a coefficient fitted below zero is no cost, and says so.
fn models_text(recs: &[Record]) -> String {
    let mut s = String::new();
    let mut few: Vec<&str> = Vec::new();
    let mut why: Vec<String> = Vec::new();
    let mut negative = false;
    for r in recs.iter().filter(|r| r.kind == "collective-mpi-model") {
        match r.data_as::<LinearFit>() {
            Ok(d) if determined(&d) => {
                let coef: Vec<String> = d
                    .coefficients
                    .iter()
                    .filter_map(|c| c.value.map(|x| (c, x)))
                    .map(|(c, x)| match x < 0.0 {
                        true => {
                            negative = true;
                            format!("{}<0 †", c.name)
                        }
                        false => format!("{}={x:.4}", c.name),
                    })
                    .collect();
                let _ = writeln!(
                    s,
                    "  {:<20} {:<38} {}  {}",
                    r.name,
                    d.formula,
                    coef.join(" "),
                    d.quality()
                );
            }
            Ok(d) => {
                few.push(&r.name);
                if !why.contains(&d.note) {
                    why.push(d.note.clone());
                }
            }
            Err(_) => {
                let reason = r.unavailable.first().map_or("", |u| u.reason.as_str());
                let _ = writeln!(s, "  {:<22} not fitted: {reason}", r.name);
            }
        }
    }
    if !few.is_empty() {
        let _ = writeln!(
            s,
            "  not fitted, too few points: {} ({})",
            few.join(", "),
            why.join("; ")
        );
    }
    if negative {
        s.push_str("  †: fitted below zero: the data show no cost for that term (noise, or a term the model lacks)\n");
    }
    s
}

/// OSU's layout: one block per collective and implementation, size and the average,
/// smallest and largest of the ranks' mean latencies.
pub fn osu_text(recs: &[Record]) -> String {
    let mut s = String::new();
    let mut heads: Vec<(String, String)> = Vec::new();
    for r in recs.iter().filter(|r| r.kind == "collective-mpi") {
        let h = (
            r.parameters["collective"]
                .as_str()
                .unwrap_or("?")
                .to_string(),
            r.parameters["implementation"]
                .as_str()
                .unwrap_or("?")
                .to_string(),
        );
        if !heads.contains(&h) {
            heads.push(h);
        }
    }
    for (c, i) in heads {
        let _ = writeln!(
            s,
            "# numalab {c} ({i})\n# {:<10}{:>6}{:>18}{:>18}{:>18}{:>12}",
            "Size", "P", "Avg Latency(us)", "Min Latency(us)", "Max Latency(us)", "Iterations"
        );
        for r in recs
            .iter()
            .filter(|r| r.parameters["collective"] == *c && r.parameters["implementation"] == *i)
        {
            let means: Vec<f64> = r
                .data_as::<super::data::CollectiveMpiData>()
                .map(|d| d.rank_mean_ns)
                .unwrap_or_default();
            if means.is_empty() {
                continue;
            }
            let avg = means.iter().sum::<f64>() / means.len() as f64 / 1000.0;
            let min = means.iter().copied().fold(f64::INFINITY, f64::min) / 1000.0;
            let max = means.iter().copied().fold(f64::NEG_INFINITY, f64::max) / 1000.0;
            let _ = writeln!(
                s,
                "  {:<10}{:>6}{:>18.2}{:>18.2}{:>18.2}{:>12}",
                r.parameters["block_bytes"],
                r.parameters["ranks"],
                avg,
                min,
                max,
                r.parameters["iterations"]
            );
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_results::linfit::Coefficient;
    use numalab_results::Provenance;

    fn model(name: &str, n: usize, values: &[Option<f64>]) -> Record {
        let mut r = Record::new(
            "collective-mpi-model",
            name,
            Provenance::collect("test", "synthetic"),
            serde_json::json!({}),
        );
        let coefficients = values
            .iter()
            .enumerate()
            .map(|(i, v)| Coefficient {
                name: format!("C{i}"),
                term: if i == 0 { "1".into() } else { "lines".into() },
                value: *v,
            })
            .collect();
        r.set_data(&LinearFit {
            formula: "T = C0 + C1·lines".into(),
            coefficients,
            residuals: vec![0.0; n],
            r2: Some(0.9),
            n,
            note: "one P: the P terms cannot be told apart".into(),
        });
        r
    }

    #[test]
    fn too_few_points_are_said_once_and_negative_costs_are_not_fits() {
        let recs = vec![
            model("barrier", 1, &[Some(3.0), None]),
            model("broadcast", 2, &[Some(1.0), Some(2.0)]),
            model("reduce", 5, &[Some(2.0), Some(-0.5)]),
            model("gather", 5, &[Some(2.0), Some(0.25)]),
        ];
        let t = models_text(&recs);
        assert_eq!(t.matches("too few points").count(), 1, "{t}");
        assert_eq!(t.matches("one P: the P terms").count(), 1, "{t}");
        assert!(t.contains("too few points: barrier, broadcast"), "{t}");
        assert!(!t.contains("-0.5"), "{t}");
        assert!(
            t.contains("C1<0 †") && t.contains("†: fitted below zero"),
            "{t}"
        );
        assert!(t.contains("C1=0.2500"), "{t}");
    }
}
