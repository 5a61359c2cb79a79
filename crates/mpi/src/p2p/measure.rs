//! The timed sweep of `numalab mpi latency|bandwidth`: every step of the plan between
//! the pair, each rank's records gathered on rank 0.

use super::plan::{Op, Plan, Step, KIND_BANDWIDTH, KIND_LATENCY, LARGE, PRIME_WINDOWS};
use crate::error::{Error, Result};
use crate::kernels::{self, Data, Method, RmaOp};
use crate::place::Relation;
use crate::world::World;
use mpi::topology::SimpleCommunicator;
use numalab_probe::Timer;
use numalab_results::disturb::DATA_KEY;
use numalab_results::{settle, Provenance, Record, Unavailable};
use numalab_topo::Host;
use serde_json::json;

/// Run the plan (collective: every rank calls it). Rank 0 gets every record.
pub fn measure(
    world: &World,
    host: &Host,
    plan: &Plan,
    mut progress: impl FnMut(usize, usize),
) -> Result<Option<Vec<Record>>> {
    let timer = Timer::best();
    let mut prov = Provenance::collect(&host.machine.summary(), &host.machine.source);
    prov.timer_step_ns = Some(timer.resolution_ns);
    let mut mine = Vec::new();
    // Whether the eager and the rendezvous protocols have been primed for streaming.
    let mut primed = [false; 2];
    // Each step kept as it ends, so a job that dies keeps the steps it finished.
    let mut kept = numalab_results::partial::Sink::from_env();
    for (i, st) in plan.steps.iter().enumerate() {
        let before = mine.len();
        if world.is_root() {
            progress(i, plan.steps.len());
        }
        if st.op.streams() && !primed[usize::from(st.size > LARGE)] {
            primed[usize::from(st.size > LARGE)] = true;
            prime(world.comm(), &timer, plan, st.op, st.size as usize)?;
        }
        let time = |warm, it| time_pass(world.comm(), &timer, plan, st, (warm, it));
        match super::settle::step(world.comm(), plan, st, time) {
            Ok(Some(done)) => {
                let samples: Vec<f64> = done.passes.used().concat();
                let mut r = step_record(world, &timer, &prov, plan, st, Some(&samples));
                r.parameters["passes"] = json!(done.passes.values.len());
                r.warnings.extend(done.passes.log.warning());
                r.set_data(&json!({ DATA_KEY: done.passes.log }));
                settle::apply(&mut r, done.settle);
                mine.push(r)
            }
            Ok(None) => {}
            // The rank that saw the bad data says why; the steps before and after
            // keep their records.
            Err(Error::Check(why)) if !why.is_empty() => {
                let mut r = step_record(world, &timer, &prov, plan, st, None);
                r.unavailable.push(Unavailable {
                    feature: format!("{} at {} B", st.op.name(), st.size),
                    reason: format!("its data check failed, so no figure is given: {why}"),
                });
                mine.push(r);
            }
            Err(Error::Check(_)) => {}
            Err(e) => return Err(e),
        }
        kept.add(&mine[before..]);
    }
    world.gather_records(&mine)
}

/// Time one pass of a step between the pair, `warm` untimed iterations then `it`
/// timed (collective); the origin gets the samples.
fn time_pass(
    comm: &SimpleCommunicator,
    timer: &Timer,
    plan: &Plan,
    st: &Step,
    (warm, it): (usize, usize),
) -> Result<Option<Vec<f64>>> {
    let (pair, size, m) = (plan.pair, st.size as usize, plan.method);
    let w = plan.window;
    let rma = |op| kernels::rma(comm, timer, pair, op, size, warm, it, m);
    match st.op {
        Op::PingPong => kernels::ping_pong(comm, timer, pair, size, warm, it, m),
        Op::Stream => kernels::stream(comm, timer, pair, size, w, warm, it, m.data),
        Op::BiStream => kernels::bistream(comm, timer, pair, size, w, warm, it, m.data),
        Op::Get => rma(RmaOp::Get),
        Op::Put => rma(RmaOp::Put),
        Op::Acc => rma(RmaOp::Acc),
    }
}

/// The origin's record of one step: its samples (None: not measured), method and
/// placement.
fn step_record(
    world: &World,
    timer: &Timer,
    prov: &Provenance,
    plan: &Plan,
    st: &Step,
    samples: Option<&[f64]>,
) -> Record {
    let (a, b) = plan.pair;
    let relation = Relation::between(&world.placements[a], &world.placements[b]);
    let (kind, metric, unit) = if st.op.streams() {
        (KIND_BANDWIDTH, "bandwidth", "GB/s")
    } else {
        (KIND_LATENCY, "latency", "ns")
    };
    let mut r = Record::new(
        kind,
        &format!("{} {} B rank {a}→{b}", st.op.name(), st.size),
        prov.clone(),
        json!({
            "op": st.op.name(), "size": st.size, "from_rank": a, "to_rank": b,
            "relation": relation.name(), "iterations": st.iterations, "warmup": st.warmup,
            "iterations_per_pass": st.per_pass,
            "window": st.op.streams().then_some(plan.window),
            "bidirectional": st.op == Op::BiStream,
            "method": method(st.op, plan.method),
            "data": plan.method.data.name(),
            "batch": (!st.op.streams()).then_some(plan.method.batch),
            // Every window moves the same bytes, so bytes over the summed window
            // times (OSU's and IMB's figure) is the samples' harmonic mean; their
            // plain mean weighs a fast window as much as a preempted one.
            "aggregate_gb_s": samples.filter(|_| st.op.streams()).and_then(harmonic_mean),
            "timer": timer,
            // Open MPI's reduction components as the ranks ran (see launch::OP_VAR).
            "ompi_mca_op": std::env::var(crate::launch::OP_VAR).ok(),
        }),
    );
    r.placement = Some(world.placement_value(&[a, b]));
    if let Some(v) = samples {
        r.add_samples(metric, unit, v);
    }
    r.warnings = prov.warnings();
    world.warn_shared(&[a, b], &mut r);
    r.unavailable.extend(world.threading_unavailable());
    r
}

/// Untimed windows of `op` that prime the pair's protocol for `size` (see
/// [`PRIME_WINDOWS`]).
fn prime(comm: &SimpleCommunicator, timer: &Timer, plan: &Plan, op: Op, size: usize) -> Result<()> {
    let data = plan.method.data;
    let (pair, w) = (plan.pair, plan.window);
    if op == Op::BiStream {
        kernels::bistream(comm, timer, pair, size, w, PRIME_WINDOWS, 0, data)?;
    } else {
        kernels::stream(comm, timer, pair, size, w, PRIME_WINDOWS, 0, data)?;
    }
    Ok(())
}

/// n / Σ 1/x over the positive samples (None when there is none).
pub fn harmonic_mean(xs: &[f64]) -> Option<f64> {
    let pos: Vec<f64> = xs.iter().copied().filter(|&x| x > 0.0).collect();
    (!pos.is_empty()).then(|| pos.len() as f64 / pos.iter().map(|x| 1.0 / x).sum::<f64>())
}

fn method(op: Op, how: Method) -> String {
    let each = if how.batch == 1 {
        "timed each".to_string()
    } else {
        format!("timed in batches of {}", how.batch)
    };
    let data = match how.data {
        Data::Fresh => "new bytes written before each iteration, outside the timer",
        Data::Same => "the same bytes every iteration",
    };
    let what = match op {
        Op::PingPong => format!("MPI_Send + MPI_Recv round trip, halved; {each}"),
        Op::Stream => {
            format!("window of MPI_Isend, MPI_Waitall, 4-byte acknowledgement; each window timed; the pair primed first with {PRIME_WINDOWS} untimed windows per protocol")
        }
        Op::BiStream => {
            format!("both ranks post a window of MPI_Irecv and MPI_Isend to each other, MPI_Waitall, 4-byte acknowledgement; each window timed, bytes of both directions counted; the pair primed first with {PRIME_WINDOWS} untimed windows per protocol")
        }
        Op::Get => format!("MPI_Win_lock(shared) once; MPI_Get + MPI_Win_flush {each}"),
        Op::Put => format!("MPI_Win_lock(shared) once; MPI_Put + MPI_Win_flush {each}"),
        Op::Acc => format!(
            "MPI_Win_lock(shared) once; MPI_Accumulate(MPI_SUM, uint8) + MPI_Win_flush {each}"
        ),
    };
    format!("{what}; {data}; bytes checked outside the timer")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_aggregate_bandwidth_is_bytes_over_the_summed_times() {
        // Two windows of 1000 B: 1 µs (1 GB/s) and 3 µs (1/3 GB/s): 2000 B in 4 µs.
        let h = harmonic_mean(&[1.0, 1.0 / 3.0]).unwrap();
        assert!((h - 0.5).abs() < 1e-12, "{h}");
        assert_eq!(harmonic_mean(&[]), None);
        assert_eq!(harmonic_mean(&[0.0]), None);
    }

    #[test]
    fn the_method_says_how_each_operation_was_timed() {
        let batched = Method {
            data: Data::Same,
            batch: 300,
        };
        assert!(method(Op::Get, batched).contains("batches of 300"));
        assert!(method(Op::PingPong, Method::default()).contains("timed each"));
        assert!(method(Op::BiStream, Method::default()).contains("both directions"));
    }
}
