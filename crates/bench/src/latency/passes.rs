//! The timed passes of one size: settled as the plan's rules say, and, for states a
//! helper holds, placed between two probes of the requestor's distance to each helper.

use super::{LatencyPlan, Shape, SizeResult};
use numalab_probe::runner::{run_round, Round, Setup, Target};
use numalab_results::distance::{self, CpuDistance};
use numalab_results::settle;
use numalab_topo::bind::PinProof;
use numalab_topo::Result;

/// The requestor's distance to each helper (`pairs::probe`: up to 4); none without
/// helpers. A probe that fails leaves its warning once, however often it is tried.
fn distances(setup: &Setup, plan: &LatencyPlan, warnings: &mut Vec<String>) -> Vec<CpuDistance> {
    let (Some(r), false) = (plan.requestors.first(), plan.helpers.is_empty()) else {
        return Vec::new();
    };
    let cpus: Vec<u32> = std::iter::once(r.pu.os)
        .chain(plan.helpers.iter().map(|h| h.pu.os))
        .collect();
    let mut said = Vec::new();
    let out = crate::pairs::probe(setup.host, setup.timer, &plan.mem, &cpus, &mut said);
    for w in said {
        if !warnings.contains(&w) {
            warnings.push(w);
        }
    }
    out
}

/// Times the timed passes are measured again when a pair moved between its probes.
pub(super) const MAX_MOVED_REMEASURE: u32 = 1;

/// The timed passes between two distance probes of the requestor and its helpers.
pub(super) struct Placed {
    /// Every requestor's passes and how its median settled.
    pub main: Vec<NsTicks>,
    /// The first round's pinning proof.
    pub pins: Vec<PinProof>,
    /// The distances probed before the passes, and after them.
    pub before: Vec<CpuDistance>,
    /// The same pairs after the passes.
    pub after: Vec<CpuDistance>,
    /// Why the passes mix two placements, when a pair moved in every try.
    pub moved: Option<String>,
}

/// The timed passes with the requestor's distance to each helper probed just before
/// and just after them, measured again (up to [`MAX_MOVED_REMEASURE`] times) while a
/// pair reads in another class after than before ([`distance::moved_during`]): such
/// passes mix two placements of the vCPUs. States without helpers probe nothing.
pub(super) fn placed_passes(
    setup: &Setup,
    plan: &LatencyPlan,
    shape: &Shape,
    warnings: &mut Vec<String>,
) -> Result<Placed> {
    let mut tries = 0;
    loop {
        let before = distances(setup, plan, warnings);
        let (main, pins) = main_passes(setup, plan, shape)?;
        let after = if before.is_empty() {
            Vec::new()
        } else {
            distances(setup, plan, warnings)
        };
        let moved = distance::moved_during(&before, &after);
        if moved.is_none() || tries == MAX_MOVED_REMEASURE {
            let moved = moved.map(|w| format!("{w}, after {tries} re-measurement"));
            return Ok(Placed {
                main,
                pins,
                before,
                after,
                moved,
            });
        }
        tries += 1;
    }
}

/// Every requestor's median unsettled, with why, when the pairs moved during the passes.
pub(super) fn mark_moved(res: &mut SizeResult) {
    let Some(w) = &res.moved else { return };
    for q in &mut res.requestors {
        q.settle.settled = false;
        q.settle.why = Some(format!("machine busy: {w}"));
    }
}

/// One requestor's passes (ns and timer ticks per load) and how its median settled.
pub(super) type NsTicks = settle::Settled<(f64, f64)>;

/// The timed passes of every requestor (ns and ticks per load), disturbed ones
/// measured again and more added while a median is wide, as the plan's rules say,
/// and the first round's pinning proof.
fn main_passes(
    setup: &Setup,
    plan: &LatencyPlan,
    shape: &Shape,
) -> Result<(Vec<NsTicks>, Vec<PinProof>)> {
    let mut pins = None;
    let step = settle::Step {
        metric: "latency",
        figure: settle::Figure::Median,
        want: plan.iterations,
    };
    let sleep = &mut std::thread::sleep;
    let clock = &mut settle::clock();
    let passes = settle::measure(
        &plan.rules,
        step,
        |v: &(f64, f64)| v.0,
        clock,
        sleep,
        |n| -> Result<_> {
            let r = run_round(
                setup,
                &Round {
                    work: 0,
                    samples: n,
                    loads: shape.loads,
                    target: Target::Chase,
                },
            )?;
            pins.get_or_insert(r.pins);
            Ok(r.ns_per_load
                .into_iter()
                .zip(r.ticks_per_load)
                .zip(r.disturb)
                .map(|((ns, ticks), d)| ns.into_iter().zip(ticks).zip(d).collect())
                .collect())
        },
    )?;
    Ok((passes, pins.unwrap_or_default()))
}
