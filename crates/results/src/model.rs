//! The thesis' remote-latency model (§4.3.2): latency = local + remote penalty
//! (for any remote access) + hops × per-hop delay, fitted by least squares.

use crate::record::Record;
use serde::{Deserialize, Serialize};

/// One observation.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Hops between requestor and home node.
    pub hops: u32,
    /// Latency in ns.
    pub latency_ns: f64,
}

/// Fitted coefficients with residuals and R².
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fit {
    /// Latency at 0 hops; None when no 0-hop observation was given, since then local
    /// latency cannot be told from the remote penalty.
    pub local_ns: Option<f64>,
    /// local + remote penalty, the intercept of remote latencies, when there was no
    /// 0-hop observation to separate the two (and two remote distances gave a line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intercept_ns: Option<f64>,
    /// Extra cost of leaving the node at all (None when the data cannot separate it
    /// from the per-hop delay: fewer than two distinct non-zero hop counts).
    pub remote_penalty_ns: Option<f64>,
    /// Cost of each hop.
    pub per_hop_ns: Option<f64>,
    /// observed − predicted, in input order.
    pub residuals_ns: Vec<f64>,
    /// Coefficient of determination (None when every observation is equal).
    pub r2: Option<f64>,
    /// Observations used.
    pub n: usize,
    /// Distinct hop counts seen.
    pub hops_seen: Vec<u32>,
    /// What the data allowed to be fitted, in words.
    pub note: String,
}

impl Fit {
    /// Predicted latency at `hops`; refused (naming why) where the fit cannot tell.
    pub fn predict(&self, hops: u32) -> Result<f64, String> {
        let has_local = self.hops_seen.first() == Some(&0);
        let seen = || {
            let v: Vec<String> = self.hops_seen.iter().map(|h| h.to_string()).collect();
            v.join(", ")
        };
        match (hops, self.per_hop_ns) {
            (0, _) if has_local => self.local_ns.ok_or_else(|| "no local latency fitted".into()),
            // Without a local observation the intercept is local + penalty.
            (0, _) => Err(format!(
                "invalid --hops '0': the fit saw no local latency (hops {}), so local and the remote penalty are not separable",
                seen()
            )),
            (h, Some(per_hop)) => {
                let base = match (self.local_ns, self.intercept_ns) {
                    (Some(l), _) => l + self.remote_penalty_ns.unwrap_or(0.0),
                    (None, Some(i)) => i,
                    (None, None) => return Err("the fit has no intercept".into()),
                };
                Ok(base + h as f64 * per_hop)
            }
            (h, None) => Err(format!(
                "invalid --hops '{h}': the fit saw latencies at hops {} only, so it has no remote cost to predict from; measure at least one remote distance",
                seen()
            )),
        }
    }
}

/// Solve the normal equations of a small least-squares problem (Gauss–Jordan with
/// partial pivoting; a 3×3 system needs no linear-algebra crate).
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    for c in 0..n {
        let p = (c..n).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))?;
        if a[p][c].abs() < 1e-12 {
            return None;
        }
        a.swap(c, p);
        b.swap(c, p);
        for r in 0..n {
            if r != c {
                let f = a[r][c] / a[c][c];
                let pivot = a[c].clone();
                for (x, p) in a[r].iter_mut().zip(&pivot).skip(c) {
                    *x -= f * p;
                }
                b[r] -= f * b[c];
            }
        }
    }
    Some((0..n).map(|i| b[i] / a[i][i]).collect())
}

pub(crate) fn least_squares(rows: &[Vec<f64>], y: &[f64]) -> Option<Vec<f64>> {
    let k = rows.first()?.len();
    let mut ata = vec![vec![0.0; k]; k];
    let mut aty = vec![0.0; k];
    for (r, &v) in rows.iter().zip(y) {
        for i in 0..k {
            aty[i] += r[i] * v;
            for j in 0..k {
                ata[i][j] += r[i] * r[j];
            }
        }
    }
    solve(ata, aty)
}

/// Fit the model; an error names what is missing.
pub fn fit(points: &[Point]) -> Result<Fit, String> {
    if points.is_empty() {
        return Err("no observations: give at least one hops,latency_ns pair".into());
    }
    if let Some(p) = points
        .iter()
        .find(|p| !p.latency_ns.is_finite() || p.latency_ns < 0.0)
    {
        return Err(format!(
            "invalid latency '{}': must be a finite, non-negative number of ns",
            p.latency_ns
        ));
    }
    let mut hops: Vec<u32> = points.iter().map(|p| p.hops).collect();
    hops.sort_unstable();
    hops.dedup();
    let remote: Vec<u32> = hops.iter().copied().filter(|&h| h > 0).collect();
    let y: Vec<f64> = points.iter().map(|p| p.latency_ns).collect();
    let has_local = hops.first() == Some(&0);
    // Which columns the data can determine.
    type Column = fn(u32) -> f64;
    let (cols, note): (Vec<Column>, String) = match (has_local, remote.len()) {
        (true, r) if r >= 2 => (
            vec![|_| 1.0, |h| (h > 0) as u32 as f64, |h| h as f64],
            "local, remote penalty and per-hop delay fitted".into(),
        ),
        (true, 1) => (
            vec![|_| 1.0, |h| h as f64],
            "one remote distance: the remote cost is reported as a per-hop delay; penalty and per-hop delay need two distinct remote hop counts".into(),
        ),
        (false, r) if r >= 2 => (
            vec![|_| 1.0, |h| h as f64],
            "no 0-hop observation: local latency and the remote penalty are not separable; their sum is the intercept of the remote latencies".into(),
        ),
        (true, _) => (vec![|_| 1.0], "only 0-hop observations: their mean is the local latency; no remote cost is known".into()),
        (false, _) => (
            vec![|_| 1.0],
            format!("only hop count {} observed: local latency, remote penalty and per-hop delay are not separable (give 0-hop rows and a second distance)", hops[0]),
        ),
    };
    let rows: Vec<Vec<f64>> = points
        .iter()
        .map(|p| cols.iter().map(|c| c(p.hops)).collect())
        .collect();
    let beta = least_squares(&rows, &y).ok_or("the observations do not determine the model")?;
    let (local, penalty, per_hop) = match beta.len() {
        3 => (beta[0], Some(beta[1]), Some(beta[2])),
        2 => (beta[0], None, Some(beta[1])),
        _ => (beta[0], None, None),
    };
    // Without a 0-hop row the first coefficient is not a local latency.
    let (local, intercept) = match (has_local, per_hop) {
        (true, _) => (Some(local), None),
        (false, Some(_)) => (None, Some(local)),
        (false, None) => (None, None),
    };
    let pred: Vec<f64> = rows
        .iter()
        .map(|r| r.iter().zip(&beta).map(|(x, b)| x * b).sum())
        .collect();
    let residuals: Vec<f64> = y.iter().zip(&pred).map(|(y, p)| y - p).collect();
    let mean = y.iter().sum::<f64>() / y.len() as f64;
    let ss_tot: f64 = y.iter().map(|v| (v - mean).powi(2)).sum();
    let ss_res: f64 = residuals.iter().map(|r| r * r).sum();
    Ok(Fit {
        local_ns: local,
        intercept_ns: intercept,
        remote_penalty_ns: penalty,
        per_hop_ns: per_hop,
        residuals_ns: residuals,
        r2: (ss_tot > 0.0).then(|| 1.0 - ss_res / ss_tot),
        n: points.len(),
        hops_seen: hops,
        note,
    })
}

/// Points from records: every latency figure (`stat`: min or median) whose record
/// says how many hops it crossed, in its parameters or, per requestor, in its resolved
/// memory placement.
pub fn points(records: &[Record], stat: &str) -> Vec<Point> {
    records
        .iter()
        .filter_map(|r| {
            let hops = r.parameters["hops"].as_u64().or_else(|| {
                let i = r.parameters["requestor"].as_u64()? as usize;
                r.placement.as_ref()?["resolved"]["memory"]["hops_from_threads"][i].as_u64()
            })?;
            let s = &r.stat("latency")?.summary;
            Some(Point {
                hops: hops as u32,
                latency_ns: if stat == "min" { s.min } else { s.median },
            })
        })
        .collect()
}

/// The columns a model CSV has, in the order its header names them.
const CSV_COLUMNS: [&str; 2] = ["hops", "latency_ns"];

/// Which field holds hops and which latency: from the header line when the file has
/// one (columns mapped by name, in either order), else `hops,latency_ns`.
fn csv_columns(first: &str) -> Result<Option<(usize, usize)>, String> {
    let first = first.trim_start_matches('\u{feff}').trim();
    if !first.starts_with(|c: char| c.is_alphabetic() || c == '"') {
        return Ok(None);
    }
    let names: Vec<String> = first
        .split(',')
        .map(|n| n.trim().trim_matches('"').to_string())
        .collect();
    let valid = CSV_COLUMNS.join(",");
    let unknown: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|n| !CSV_COLUMNS.contains(n))
        .collect();
    if !unknown.is_empty() {
        return Err(format!(
            "invalid header '{first}': unknown {} {}; the columns are {valid} (in either order)",
            crate::words::noun(unknown.len() as u64, "column"),
            unknown.join(", ")
        ));
    }
    let at = |c: &str| names.iter().position(|n| n == c);
    match (at("hops"), at("latency_ns")) {
        (Some(h), Some(l)) if names.len() == 2 => Ok(Some((h, l))),
        _ => Err(format!(
            "invalid header '{first}': it needs each of the columns {valid} once"
        )),
    }
}

/// Read `hops,latency_ns` CSV: a header line, when there is one, names the columns
/// (either order); without one the order is hops,latency_ns. Errors name the bad line.
pub fn parse_csv(text: &str) -> Result<Vec<Point>, String> {
    let mut out = Vec::new();
    let header = csv_columns(text.lines().next().unwrap_or(""))?;
    let (hi, li) = header.unwrap_or((0, 1));
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.is_empty() || (i == 0 && header.is_some()) {
            continue;
        }
        let fields: Vec<&str> = l.split(',').map(str::trim).collect();
        let (h, v) = (fields.get(hi).copied(), fields.get(li).copied());
        let p = match (
            h.and_then(|h| h.parse::<u32>().ok()),
            v.and_then(|v| v.parse::<f64>().ok()),
        ) {
            // A latency must be a finite, non-negative time: "NaN", "inf" and
            // negative figures would poison the fit without a word.
            (Some(hops), Some(latency_ns))
                if fields.len() == 2 && latency_ns.is_finite() && latency_ns >= 0.0 =>
            {
                Point { hops, latency_ns }
            }
            _ => {
                return Err(format!(
                    "invalid line {} '{l}': expected hops,latency_ns with a finite latency ≥ 0 (e.g. 1,142.5)",
                    i + 1
                ))
            }
        };
        out.push(p);
    }
    Ok(out)
}

/// The record of a fit from a file (`numalab model fit|predict`): the fit, its points
/// and, when a hop count was given, the prediction.
pub fn file_record(
    file: &std::path::Path,
    stat: &str,
    f: &Fit,
    points: &[Point],
    predict: Option<(u32, f64)>,
) -> crate::Record {
    let prov = crate::Provenance::collect(
        "not measured: fitted from a file",
        &file.display().to_string(),
    );
    let mut rec = crate::Record::new(
        "model",
        if predict.is_some() { "predict" } else { "fit" },
        prov,
        serde_json::json!({ "file": file, "stat": stat, "predict_hops": predict.map(|p| p.0) }),
    );
    rec.set_data(&ModelData {
        fit: f.clone(),
        points: points.to_vec(),
        prediction_ns: predict.map(|p| p.1),
    });
    rec
}

/// `data` of a `model` record: the fit, the points it was fitted to, a prediction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelData {
    /// The fitted coefficients.
    pub fit: Fit,
    /// The (hops, latency) points.
    pub points: Vec<Point>,
    /// The prediction at the hop count asked for (`model predict` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prediction_ns: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(v: &[(u32, f64)]) -> Vec<Point> {
        v.iter()
            .map(|&(hops, latency_ns)| Point { hops, latency_ns })
            .collect()
    }

    #[test]
    fn recovers_known_coefficients() {
        // local 100, penalty 40, 25 per hop, with symmetric noise that cancels.
        let mut v = Vec::new();
        for h in 0..4u32 {
            let truth = if h == 0 {
                100.0
            } else {
                140.0 + 25.0 * h as f64
            };
            v.push((h, truth + 1.0));
            v.push((h, truth - 1.0));
        }
        let f = fit(&pts(&v)).unwrap();
        assert!((f.local_ns.unwrap() - 100.0).abs() < 1e-9, "{f:?}");
        assert!((f.remote_penalty_ns.unwrap() - 40.0).abs() < 1e-9);
        assert!((f.per_hop_ns.unwrap() - 25.0).abs() < 1e-9);
        assert!(f.r2.unwrap() > 0.99);
        assert!((f.predict(5).unwrap() - 265.0).abs() < 1e-9);
        assert_eq!(f.residuals_ns.len(), 8);
    }

    #[test]
    fn one_remote_distance_is_said_and_still_fits() {
        let f = fit(&pts(&[(0, 100.0), (1, 180.0), (1, 182.0)])).unwrap();
        assert!(f.remote_penalty_ns.is_none());
        assert!((f.per_hop_ns.unwrap() - 81.0).abs() < 1e-9);
        assert!(f.note.contains("two distinct remote"));
        let f = fit(&pts(&[(0, 100.0), (0, 102.0)])).unwrap();
        assert!((f.local_ns.unwrap() - 101.0).abs() < 1e-9 && f.per_hop_ns.is_none());
    }

    #[test]
    fn no_local_figure_without_a_0_hop_row() {
        let f = fit(&pts(&[(2, 200.0), (2, 202.0)])).unwrap();
        assert!(f.local_ns.is_none() && f.intercept_ns.is_none(), "{f:?}");
        assert!(f.note.contains("not separable"), "{}", f.note);
        assert!(f.predict(0).is_err() && f.predict(3).is_err());
        // Two remote distances: a line whose intercept is local + penalty, not local.
        let f = fit(&pts(&[(1, 150.0), (2, 170.0)])).unwrap();
        assert!(f.local_ns.is_none(), "{f:?}");
        assert!((f.intercept_ns.unwrap() - 130.0).abs() < 1e-9);
        assert!((f.predict(3).unwrap() - 190.0).abs() < 1e-9);
        assert!(f.predict(0).is_err());
    }

    #[test]
    fn the_csv_header_names_the_columns() {
        let swapped = parse_csv("latency_ns,hops\n100,0\n150,1\n").unwrap();
        assert_eq!(swapped, pts(&[(0, 100.0), (1, 150.0)]));
        let bom = parse_csv("\u{feff}hops,latency_ns\n0,100\n").unwrap();
        assert_eq!(bom, pts(&[(0, 100.0)]));
        let e = parse_csv("a,b\n0,100\n").unwrap_err();
        assert!(e.contains("a, b") && e.contains("hops,latency_ns"), "{e}");
        let e = parse_csv("hops\n0\n").unwrap_err();
        assert!(e.contains("'hops'") && e.contains("once"), "{e}");
        let e = parse_csv("hops,hops\n0,1\n").unwrap_err();
        assert!(e.contains("once"), "{e}");
    }

    #[test]
    fn csv_and_bad_input() {
        let p = parse_csv("hops,latency_ns\n0,100\n1, 150.5\n").unwrap();
        assert_eq!(p, pts(&[(0, 100.0), (1, 150.5)]));
        assert!(parse_csv("0,100\nx,1\n")
            .unwrap_err()
            .contains("line 2 'x,1'"));
        assert!(parse_csv("0,100,3\n").is_err());
        assert!(fit(&[]).is_err());
        assert!(fit(&pts(&[(0, f64::NAN)])).unwrap_err().contains("'NaN'"));
    }
}
