//! A step of `mpi latency|bandwidth` settled between the pair: its iterations timed
//! as [`PASSES`] passes, then more passes while the figure's interval (of the passes'
//! medians) is wider than `--tolerance` and the `--noise-budget` lasts, by the one
//! rule every figure settles by ([`numalab_results::settle::measure`]). The origin
//! decides each round and broadcasts how many passes come next (0: the step is done),
//! so every rank runs the same passes and nobody waits for a pass that never comes.
//! A pass is disturbed when either rank of the pair was.

use super::plan::{Plan, Step, PASSES};
use crate::error::{Error, Result};
use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use numalab_results::disturb::{Disturbance, Sampler};
use numalab_results::settle::{self, Figure, Settled};

/// A pass's samples (the origin's; empty on the other ranks).
pub type Samples = Vec<f64>;

/// Settle one step (collective: every rank calls it). The origin gets every pass, its
/// log and the settle entry; the others None. A rank whose timing failed returns its
/// error; the others then `Error::Check("")` (no record).
pub fn step(
    comm: &SimpleCommunicator,
    plan: &Plan,
    st: &Step,
    mut time: impl FnMut(usize, usize) -> Result<Option<Samples>>,
) -> Result<Option<Settled<Samples>>> {
    let origin = plan.pair.0;
    let me = comm.rank() as usize;
    let in_pair = me == plan.pair.0 || me == plan.pair.1;
    let root = comm.process_at_rank(origin as i32);
    let mut done = 0;
    let mut round = |n: usize| -> Result<Vec<Vec<(Samples, Disturbance)>>> {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let s = Sampler::start(None);
            let got = time(st.warmup_for(done), st.per_pass.max(1));
            done += 1;
            let d = s.finish();
            let (d, failed) = pair_worst(comm, in_pair.then_some(d), got.is_err());
            match got {
                Err(e) => return Err(e),
                Ok(_) if failed => return Err(Error::Check(String::new())),
                Ok(v) => out.push((v.unwrap_or_default(), d)),
            }
        }
        Ok(vec![out])
    };
    if me != origin {
        loop {
            let mut n = 0u64;
            root.broadcast_into(&mut n);
            if n == 0 {
                return Ok(None);
            }
            round(n as usize)?;
        }
    }
    let figure = settle::Step {
        metric: if st.op.streams() {
            "bandwidth"
        } else {
            "latency"
        },
        figure: Figure::Median,
        want: PASSES,
    };
    let mut clock = settle::clock();
    let mut sleep = std::thread::sleep;
    let mut got = settle::measure(
        &plan.rules,
        figure,
        pass_median,
        &mut clock,
        &mut sleep,
        |n| {
            let mut k = n as u64;
            root.broadcast_into(&mut k);
            round(n)
        },
    )?;
    let mut stop = 0u64;
    root.broadcast_into(&mut stop);
    Ok(got.pop())
}

/// A pass's figure: the median of its samples (NaN when it has none).
pub fn pass_median(v: &Samples) -> f64 {
    numalab_results::stats::median(v).unwrap_or(f64::NAN)
}

/// The pass's disturbance as the worse of the pair's (each count's largest; ranks
/// outside the pair give none), and whether any rank failed (collective).
fn pair_worst(
    comm: &SimpleCommunicator,
    mine: Option<Disturbance>,
    failed: bool,
) -> (Disturbance, bool) {
    let d = mine.clone().unwrap_or_default();
    let mut v = pack(&d);
    v[PACKED - 1] = u64::from(failed);
    let mut worst = [0u64; PACKED];
    comm.all_reduce_into(&v[..], &mut worst[..], SystemOperation::max());
    (unpack(&worst, d.cpu), worst[PACKED - 1] != 0)
}

/// Counts a pass's disturbance is reduced by, and the failure flag.
const PACKED: usize = 9;

fn pack(d: &Disturbance) -> [u64; PACKED] {
    [
        d.wall_ns,
        d.involuntary_switches,
        d.runq_wait_ns,
        d.steal_ns,
        d.throttled,
        d.throttled_us,
        d.other_runs as u64,
        // A busy share in millionths, 0 for no sibling.
        d.sibling_busy
            .map_or(0, |b| (b.clamp(0.0, 1.0) * 1e6) as u64 + 1),
        0,
    ]
}

fn unpack(v: &[u64; PACKED], cpu: Option<u32>) -> Disturbance {
    Disturbance {
        wall_ns: v[0],
        cpu,
        involuntary_switches: v[1],
        runq_wait_ns: v[2],
        steal_ns: v[3],
        throttled: v[4],
        throttled_us: v[5],
        other_runs: v[6] as usize,
        sibling_busy: (v[7] > 0).then(|| (v[7] - 1) as f64 / 1e6),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_disturbance_survives_the_reduction_and_a_pass_figure_is_its_median() {
        let d = Disturbance {
            wall_ns: 2_000_000,
            cpu: Some(1),
            involuntary_switches: 3,
            runq_wait_ns: 700_000,
            steal_ns: 5,
            throttled: 1,
            throttled_us: 20,
            other_runs: 2,
            sibling_busy: Some(0.25),
        };
        assert_eq!(unpack(&pack(&d), Some(1)), d);
        let none = Disturbance::default();
        assert_eq!(unpack(&pack(&none), None), none);
        assert_eq!(pass_median(&vec![3.0, 1.0, 2.0]), 2.0);
        assert!(pass_median(&Vec::new()).is_nan());
    }
}
