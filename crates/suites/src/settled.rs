//! The suites' measuring steps settled the one way (`numalab_results::settle`): a
//! probe program's passes, one figure per pass, disturbed when any of its threads
//! was, handed to [`settle::measure`] as one thread.

use numalab_results::disturb::{Disturbance, Rules};
use numalab_results::settle::{self, NoiseOptions};
use numalab_topo::{Error, Result};

/// The rules a suite's steps settle by: the user's `--noise-budget` and
/// `--tolerance`, or the one-line error naming the bad value.
pub fn rules(noise: &NoiseOptions) -> Result<Rules> {
    Ok(Rules {
        settle: noise.goal().map_err(Error::Input)?,
        ..Rules::default()
    })
}

/// One pass per value, each with what disturbed any script in it (`disturb`, one
/// vector per script, as `ProgramResult::disturb`).
pub fn passes<T>(disturb: &[Vec<Disturbance>], values: Vec<T>) -> Vec<Vec<(T, Disturbance)>> {
    let one = values
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            let mut d = Disturbance::default();
            for s in disturb {
                if let Some(x) = s.get(i) {
                    d.merge(x);
                }
            }
            (v, d)
        })
        .collect();
    vec![one]
}

/// Settle one step's median of `value` over passes of `run(n)` (n passes), on the
/// wall clock; the step's only thread.
pub fn median<T: Clone>(
    rules: &Rules,
    metric: &str,
    want: usize,
    value: impl Fn(&T) -> f64,
    run: impl FnMut(usize) -> Result<Vec<Vec<(T, Disturbance)>>>,
) -> Result<settle::Settled<T>> {
    let step = settle::Step {
        metric,
        figure: settle::Figure::Median,
        want,
    };
    let clock = &mut settle::clock();
    let sleep = &mut std::thread::sleep;
    let mut s = settle::measure(rules, step, value, clock, sleep, run)?;
    Ok(s.remove(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_is_disturbed_when_any_script_was_and_bad_options_are_named() {
        let busy = Disturbance {
            wall_ns: 1_000_000,
            runq_wait_ns: 500_000,
            involuntary_switches: 4,
            ..Default::default()
        };
        let d = vec![
            vec![Disturbance::default(), Disturbance::default()],
            vec![Disturbance::default(), busy],
        ];
        let p = passes(&d, vec![1.0, 2.0]);
        let r = Rules::default();
        assert_eq!(p.len(), 1);
        assert!(r.threshold.causes(&p[0][0].1).is_empty());
        assert!(!r.threshold.causes(&p[0][1].1).is_empty());
        let bad = NoiseOptions {
            tolerance: Some("0".into()),
            ..Default::default()
        };
        assert!(rules(&bad).unwrap_err().to_string().contains("--tolerance"));
        assert_eq!(
            rules(&NoiseOptions::default())
                .unwrap()
                .settle
                .tolerance_pct,
            10.0
        );
    }
}
