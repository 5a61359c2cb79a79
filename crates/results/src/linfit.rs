//! Least-squares fits of linear cost models with named terms, such as the KSR
//! collectives' T = C0 + C1·P + C2·lines. Terms the observations cannot determine
//! (constant over the data, or a combination of other terms) are left out and named,
//! never reported as a made-up zero.

use crate::model::least_squares;
use serde::{Deserialize, Serialize};

/// One fitted coefficient.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Coefficient {
    /// Coefficient name, e.g. "C1".
    pub name: String,
    /// The term it multiplies, e.g. "P", "log2 P", "lines" ("1" for the intercept).
    pub term: String,
    /// Its value; None when the data cannot determine it.
    pub value: Option<f64>,
}

/// A fitted model with residuals and R².
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinearFit {
    /// The model, e.g. "T = C0 + C1·P + C2·lines".
    pub formula: String,
    /// Coefficients in formula order.
    pub coefficients: Vec<Coefficient>,
    /// observed − predicted, in input order.
    pub residuals: Vec<f64>,
    /// Coefficient of determination (None when every observation is equal).
    pub r2: Option<f64>,
    /// Observations used.
    pub n: usize,
    /// What the data allowed, in words.
    pub note: String,
}

impl LinearFit {
    /// The fit's quality in words: "(R² 0.987)", or, where the data could not
    /// determine a coefficient or R² means nothing, what is missing and why (never
    /// "n/a" or NaN).
    pub fn quality(&self) -> String {
        match self.verdict() {
            Ok(r2) => format!("(R² {r2:.3})"),
            Err(why) => format!("({why})"),
        }
    }

    /// R² when it means something, else the sentence saying why not.
    fn verdict(&self) -> Result<f64, String> {
        let undetermined = self.coefficients.iter().any(|c| c.value.is_none());
        let fitted = self
            .coefficients
            .iter()
            .filter(|c| c.value.is_some())
            .count();
        match self.r2 {
            Some(r2) if !undetermined && self.n > fitted && r2.is_finite() => Ok(r2),
            _ if undetermined || self.n <= fitted => {
                Err(format!("not enough points to fit the model: {}", self.note))
            }
            _ => Err("R² undefined: every observation is equal".into()),
        }
    }

    /// The fitted value of coefficient `name`.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.coefficients
            .iter()
            .find(|c| c.name == name)
            .and_then(|c| c.value)
    }
}

/// The quality cells of several fits shown in one table, each sentence said once: a fit
/// whose R² means nothing gets a short reference ("note 1") and the sentences, one per
/// distinct reason, go under the table ("note 1: not enough points …").
pub fn quality_cells(fits: &[&LinearFit]) -> (Vec<String>, Vec<String>) {
    let mut notes: Vec<String> = Vec::new();
    let cells = fits
        .iter()
        .map(|f| match f.verdict() {
            Ok(r2) => format!("{r2:.3}"),
            Err(why) => {
                let i = match notes.iter().position(|n| *n == why) {
                    Some(i) => i,
                    None => {
                        notes.push(why);
                        notes.len() - 1
                    }
                };
                format!("see note {}", i + 1)
            }
        })
        .collect();
    let notes = notes
        .iter()
        .enumerate()
        .map(|(i, n)| format!("note {}: {n}", i + 1))
        .collect();
    (cells, notes)
}

/// The observations are there, finite, and each has `k` terms.
fn check(formula: &str, k: usize, rows: &[Vec<f64>], y: &[f64]) -> Result<(), String> {
    if rows.is_empty() || rows.len() != y.len() {
        return Err(format!("{formula}: no observations to fit"));
    }
    if let Some(v) = y
        .iter()
        .chain(rows.iter().flatten())
        .find(|v| !v.is_finite())
    {
        return Err(format!(
            "{formula}: invalid observation '{v}': must be finite"
        ));
    }
    if rows.iter().any(|r| r.len() != k) {
        return Err(format!("{formula}: every observation needs {k} terms"));
    }
    Ok(())
}

/// The columns that add a direction the kept ones do not span (Gram–Schmidt on the
/// columns); the rest cannot be told apart by this data.
fn independent_columns(rows: &[Vec<f64>], k: usize) -> Vec<usize> {
    let col = |j: usize| -> Vec<f64> { rows.iter().map(|r| r[j]).collect() };
    let mut basis: Vec<Vec<f64>> = Vec::new();
    let mut kept = Vec::new();
    for j in 0..k {
        let c = col(j);
        let norm0 = c.iter().map(|x| x * x).sum::<f64>().sqrt();
        let mut v = c.clone();
        for b in &basis {
            let d: f64 = v.iter().zip(b).map(|(x, y)| x * y).sum();
            v.iter_mut().zip(b).for_each(|(x, y)| *x -= d * y);
        }
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        if norm0 > 0.0 && norm > 1e-9 * norm0 {
            basis.push(v.iter().map(|x| x / norm).collect());
            kept.push(j);
        }
    }
    kept
}

/// Each term's coefficient (None where its column was dropped), and the note on what
/// the data could not determine.
fn coefficients(
    terms: &[(&str, &str)],
    kept: &[usize],
    beta: &[f64],
    n: usize,
) -> (Vec<Coefficient>, String) {
    let mut coefficients = Vec::new();
    let mut missing = Vec::new();
    for (j, (name, term)) in terms.iter().enumerate() {
        let value = kept.iter().position(|&x| x == j).map(|p| beta[p]);
        if value.is_none() {
            missing.push(format!("{name} ({term})"));
        }
        coefficients.push(Coefficient {
            name: name.to_string(),
            term: term.to_string(),
            value,
        });
    }
    let mut note = if missing.is_empty() {
        "every coefficient fitted".to_string()
    } else {
        format!(
            "{} not determined: the term is constant over these observations or a combination of the others (vary it to fit it)",
            missing.join(", ")
        )
    };
    if n <= kept.len() {
        note.push_str(
            "; as many observations as fitted terms, so the fit is exact and R² says nothing",
        );
    }
    (coefficients, note)
}

/// Fit `y ≈ Σ coef_j · rows[i][j]`; `terms` names each column as (coefficient, term).
/// Column 0 is normally the intercept (all ones).
pub fn fit(
    formula: &str,
    terms: &[(&str, &str)],
    rows: &[Vec<f64>],
    y: &[f64],
) -> Result<LinearFit, String> {
    check(formula, terms.len(), rows, y)?;
    let k = terms.len();
    let kept = independent_columns(rows, k);
    let sub: Vec<Vec<f64>> = rows
        .iter()
        .map(|r| kept.iter().map(|&j| r[j]).collect())
        .collect();
    let beta = least_squares(&sub, y).ok_or(format!(
        "{formula}: the observations do not determine the model"
    ))?;
    let pred: Vec<f64> = sub
        .iter()
        .map(|r| r.iter().zip(&beta).map(|(x, b)| x * b).sum())
        .collect();
    let residuals: Vec<f64> = y.iter().zip(&pred).map(|(a, p)| a - p).collect();
    let mean = y.iter().sum::<f64>() / y.len() as f64;
    let ss_tot: f64 = y.iter().map(|v| (v - mean).powi(2)).sum();
    let ss_res: f64 = residuals.iter().map(|r| r * r).sum();
    let (coefficients, note) = coefficients(terms, &kept, &beta, y.len());
    Ok(LinearFit {
        formula: formula.into(),
        coefficients,
        residuals,
        r2: (ss_tot > 0.0).then(|| 1.0 - ss_res / ss_tot),
        n: y.len(),
        note,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TERMS: [(&str, &str); 3] = [("C0", "1"), ("C1", "P"), ("C2", "lines")];

    #[test]
    fn recovers_known_coefficients_from_noisy_data() {
        let (c0, c1, c2) = (0.4, 0.05, 0.03);
        let mut rows = Vec::new();
        let mut y = Vec::new();
        let mut noise = 0.001;
        for p in [2.0, 4.0, 8.0, 16.0] {
            for l in [16.0, 64.0, 256.0, 1024.0] {
                rows.push(vec![1.0, p, l]);
                y.push(c0 + c1 * p + c2 * l + noise);
                noise = -noise;
            }
        }
        let f = fit("T = C0 + C1·P + C2·lines", &TERMS, &rows, &y).unwrap();
        assert!((f.get("C0").unwrap() - c0).abs() < 0.01);
        assert!((f.get("C1").unwrap() - c1).abs() < 1e-3);
        assert!((f.get("C2").unwrap() - c2).abs() < 1e-5);
        assert!(f.r2.unwrap() > 0.999);
        assert_eq!(f.residuals.len(), 16);
        assert_eq!(f.note, "every coefficient fitted");
    }

    #[test]
    fn a_term_that_never_varies_is_named_not_zeroed() {
        let rows: Vec<Vec<f64>> = [16.0, 64.0, 256.0]
            .iter()
            .map(|&l| vec![1.0, 2.0, l])
            .collect();
        let y = vec![1.0, 2.5, 8.0];
        let f = fit("T", &TERMS, &rows, &y).unwrap();
        assert_eq!(f.get("C1"), None);
        assert!(f.get("C2").is_some());
        assert!(f.note.contains("C1 (P)"), "{}", f.note);
        // Said in words, never "n/a" or "NaN".
        let q = f.quality();
        assert!(
            q.starts_with("(not enough points") && q.contains("C1 (P)"),
            "{q}"
        );
        assert!(!q.contains("NaN") && !q.contains("n/a"), "{q}");
    }

    #[test]
    fn a_table_of_fits_says_each_reason_once_under_it() {
        let rows: Vec<Vec<f64>> = [16.0, 64.0, 256.0]
            .iter()
            .map(|&l| vec![1.0, 2.0, l])
            .collect();
        let short = fit("T", &TERMS, &rows, &[1.0, 2.5, 8.0]).unwrap();
        let mut good_rows = Vec::new();
        let mut y = Vec::new();
        for p in [2.0, 4.0, 8.0] {
            for l in [16.0, 64.0] {
                good_rows.push(vec![1.0, p, l]);
                y.push(0.4 + 0.05 * p + 0.03 * l + if p == 4.0 { 0.01 } else { 0.0 });
            }
        }
        let good = fit("T", &TERMS, &good_rows, &y).unwrap();
        let (cells, notes) = quality_cells(&[&short, &good, &short, &short]);
        assert_eq!(cells[0], "see note 1");
        assert_eq!(cells[2], "see note 1");
        assert!(cells[1].parse::<f64>().is_ok(), "{cells:?}");
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].starts_with("note 1: not enough points to fit the model: ")
                && notes[0].contains("C1 (P)"),
            "{notes:?}"
        );
        assert_eq!(quality_cells(&[&good]).1, Vec::<String>::new());
    }

    #[test]
    fn collinear_terms_and_bad_input_are_reported() {
        // log2 P and P coincide at P = 1, 2: only one of them can be fitted.
        let rows: Vec<Vec<f64>> = [(1.0, 16.0), (2.0, 16.0), (1.0, 64.0), (2.0, 64.0)]
            .iter()
            .map(|&(p, l)| vec![1.0, f64::log2(p), p, l])
            .collect();
        let terms = [("C0", "1"), ("C5", "log2 P"), ("C6", "P"), ("C7", "lines")];
        let f = fit("T", &terms, &rows, &[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(
            f.coefficients.iter().filter(|c| c.value.is_none()).count(),
            1
        );
        assert!(fit("T", &TERMS, &[], &[]).is_err());
        assert!(fit("T", &TERMS, &[vec![1.0, f64::NAN, 1.0]], &[1.0]).is_err());
    }
}
