//! Chase rounds: a kernel variant timed over every requestor's chase (or an
//! L1-resident self loop) through the [`Crew`].

use crate::chase::{Chase, SelfLoop};
use crate::core_clock;
use crate::crew::{Crew, CrewResult, Member, Pass};
use crate::kernel::{self, Access, KernelFn};
use crate::state::{LineState, Request};
use crate::timer::Timer;
use numalab_results::disturb::Disturbance;
use numalab_topo::bind::PinProof;
use numalab_topo::{Error, Host, Result};

/// A requestor: the CPU it runs on and the chase it times.
pub struct Requestor<'a> {
    /// OS CPU number.
    pub cpu: u32,
    /// Its chase (each requestor has its own lines).
    pub chase: &'a Chase,
}

/// Everything fixed across rounds of one measurement.
pub struct Setup<'a> {
    /// The machine (for pinning).
    pub host: &'a Host,
    /// The timer.
    pub timer: &'a Timer,
    /// Requestors, timed simultaneously.
    pub requestors: Vec<Requestor<'a>>,
    /// Helper CPUs (as many as the state needs).
    pub helpers: Vec<u32>,
    /// Line state prepared before each pass.
    pub state: LineState,
    /// The request (kernel) timed.
    pub request: Request,
    /// Bytes of the eviction buffer a cexm helper streams through.
    pub evict_bytes: usize,
}

/// What a round chases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The requestor's chase, prepared as the state says.
    Chase,
    /// A one-line self loop (L1-resident reference), never prepared.
    SelfLoop,
}

/// One round: a kernel variant timed `samples` times.
#[derive(Debug, Clone, Copy)]
pub struct Round {
    /// Dependent work operations after each load.
    pub work: usize,
    /// Timed passes.
    pub samples: usize,
    /// Loads per timed pass (for a prepared chase: at most the visited elements).
    pub loads: usize,
    /// What is chased.
    pub target: Target,
}

/// Per-requestor samples of one round.
#[derive(Debug, Clone)]
pub struct RoundResult {
    /// ns per load, one vector per requestor.
    pub ns_per_load: Vec<Vec<f64>>,
    /// Timer ticks per load, one vector per requestor.
    pub ticks_per_load: Vec<Vec<f64>>,
    /// What disturbed each pass, one vector per requestor.
    pub disturb: Vec<Vec<Disturbance>>,
    /// Pinning proof of the requestors, then the helpers.
    pub pins: Vec<PinProof>,
}

/// Run one round and collect every requestor's samples.
pub fn run_round(setup: &Setup, round: &Round) -> Result<RoundResult> {
    let access: Access = setup.request.access();
    let f: KernelFn = kernel::kernel(access, round.work).ok_or_else(|| {
        Error::bad(
            "work",
            round.work.to_string(),
            format!("0 to {}", kernel::MAX_WORK),
        )
    })?;
    let prepared = setup.state.prepared() && round.target == Target::Chase;
    if prepared {
        if let Some(r) = setup
            .requestors
            .iter()
            .find(|r| round.loads > r.chase.visited())
        {
            return Err(Error::System(format!(
                "a prepared pass of {} exceeds the {} prepared lines on CPU {}",
                numalab_results::words::count(round.loads as u64, "load"),
                r.chase.visited(),
                r.cpu
            )));
        }
    }
    let crew = crew_of(setup);
    let res = crew.run(round.samples, prepared, |i| {
        let chase = setup.requestors[i].chase;
        let own = SelfLoop::new();
        let mut p = match round.target {
            Target::Chase => chase.start(),
            Target::SelfLoop => own.start(),
        };
        move |_: &Pass| {
            // The self loop lives as long as the work that chases it.
            let _ = &own;
            if prepared {
                p = chase.start();
            }
            // SAFETY: p starts a cyclic chase (or the self loop), live for the round.
            p = unsafe { kernel::run(f, p, round.loads) };
            std::hint::black_box(p);
            round.loads as u64
        }
    })?;
    Ok(round_result(setup, round, res))
}

/// The core clock (GHz) of every requestor's CPU, `samples` passes each, timed as the
/// chase is (same crew, same pinning, no helpers, no line preparation); None where
/// this architecture has no add chain ([`core_clock::UNAVAILABLE`]).
pub fn clock_round(setup: &Setup, samples: usize) -> Result<Option<Vec<Vec<f64>>>> {
    if !core_clock::AVAILABLE {
        return Ok(None);
    }
    let mut crew = crew_of(setup);
    crew.helpers.clear();
    let res = crew.run(samples, false, |_| {
        |_: &Pass| {
            core_clock::pass();
            core_clock::ADDS
        }
    })?;
    let ghz = |t: &crate::crew::Timed| core_clock::ghz(setup.timer.ns(t.ticks));
    Ok(Some(
        res.samples
            .iter()
            .map(|v| v.iter().map(ghz).collect())
            .collect(),
    ))
}

/// The crew that times a setup's requestors (each over the lines its chase visits)
/// with its helpers.
fn crew_of<'a>(setup: &'a Setup) -> Crew<'a> {
    Crew {
        host: setup.host,
        timer: setup.timer,
        members: setup
            .requestors
            .iter()
            .map(|r| Member {
                cpu: r.cpu,
                base: r.chase.base(),
                lines: r.chase.visited_lines(),
                line: r.chase.layout.line,
            })
            .collect(),
        helpers: setup.helpers.clone(),
        state: setup.state,
        preread: setup.request == Request::Upgrade,
        evict_bytes: setup.evict_bytes,
        first_stops: false,
    }
}

/// A crew's passes as ns and ticks per load (the kernel runs whole unrolled blocks).
fn round_result(setup: &Setup, round: &Round, res: CrewResult) -> RoundResult {
    let per_load = (round.loads.div_ceil(kernel::UNROLL).max(1) * kernel::UNROLL) as f64;
    RoundResult {
        ns_per_load: res
            .samples
            .iter()
            .map(|v| {
                v.iter()
                    .map(|t| setup.timer.ns(t.ticks) / per_load)
                    .collect()
            })
            .collect(),
        ticks_per_load: res
            .samples
            .iter()
            .map(|v| v.iter().map(|t| t.ticks as f64 / per_load).collect())
            .collect(),
        disturb: res.disturb,
        pins: res.pins,
    }
}
