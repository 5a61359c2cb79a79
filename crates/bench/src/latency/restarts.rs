//! The restart search of a latency measurement: rounds with k = 0, 1, … dependent
//! work operations after each load, the chase beside an L1-resident self loop, until
//! the difference is stable (see `crate::restart`).

use crate::restart::{self, RestartOutcome, RestartParams};
use numalab_probe::{run_round, Round, Setup, Target};
use numalab_topo::{Error, Result};

/// The restart search of every requestor, `loads` loads a pass: all requestors run
/// every round together, the search follows requestor 0 and the others are searched
/// over the same k.
pub(super) fn outcomes(
    setup: &Setup,
    p: &RestartParams,
    samples: usize,
    loads: usize,
) -> Result<Vec<Option<RestartOutcome>>> {
    let mut curves: Vec<Vec<(f64, f64)>> = vec![Vec::new(); setup.requestors.len()];
    let round = |work: usize, target: Target| {
        run_round(
            setup,
            &Round {
                work,
                samples,
                loads,
                target,
            },
        )
    };
    let outcome = restart::search(p, |k| -> Result<(f64, f64)> {
        let b = round(k, Target::Chase)?;
        let l = round(k, Target::SelfLoop)?;
        for (i, c) in curves.iter_mut().enumerate() {
            c.push((min_of(&b.ns_per_load[i]), min_of(&l.ns_per_load[i])));
        }
        Ok(curves[0][k])
    })?;
    let mut restarts = Vec::with_capacity(curves.len());
    for (i, c) in curves.iter().enumerate() {
        restarts.push(Some(if i == 0 {
            outcome.clone()
        } else {
            let mut it = c.iter().copied();
            restart::search(
                &RestartParams {
                    max_work: c.len() - 1,
                    ..*p
                },
                |_| Ok::<_, Error>(it.next().unwrap_or((f64::NAN, f64::NAN))),
            )?
        }));
    }
    Ok(restarts)
}

fn min_of(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}
