//! Measuring `suite collectives --mpi`: the seed's scripts over one RMA window per
//! P, MPI's own collectives, the data checks, and the fitted models.

use super::plan::{How, Item, Plan, BARRIER_REPS};
use super::settle;
use crate::collectives::run::fit_models;
use crate::collectives::{self, expect, Expect, Kind};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;
use numalab_mpi::buf::PageBuf;
use numalab_mpi::coll::{first_ranks, Native};
use numalab_mpi::coll_timed::{self, offset, word};
use numalab_mpi::kernels::Data;
use numalab_mpi::raw::Window;
use numalab_mpi::{Error, Result, World};
use numalab_probe::script::{value, Lines, Step};
use numalab_probe::Timer;
use numalab_results::stats::median;
use numalab_results::{Provenance, Record};
use numalab_topo::Host;
use serde_json::json;
use std::time::{Duration, Instant};

fn write_lines(win: &mut Window, pass: usize, l: &Lines, p: usize, n: usize, line: usize) {
    let mem = win.local();
    for x in l.visit() {
        let v = value(pass, l.buf, x).to_ne_bytes();
        let at = offset(l.buf, x, p, n, line);
        for w in mem[at..at + line].chunks_exact_mut(8) {
            w.copy_from_slice(&v);
        }
    }
}

/// Check this rank's buffers after the last pass.
fn check_rma(
    kind: Kind,
    win: &mut Window,
    me: usize,
    last: usize,
    p: usize,
    n: usize,
    line: usize,
) -> Result<()> {
    let mem = win.local();
    let bad = |b: usize, l: usize| {
        Error::System(format!(
            "data check failed: {} P={p} left a wrong word on rank {me} in buffer {b} line {l}",
            kind.name()
        ))
    };
    let all_words = |at: usize, want: u64| (0..line).step_by(8).all(|i| word(mem, at + i) == want);
    match expect(kind, p, n) {
        Expect::Nothing => {}
        Expect::Moved(v) => {
            for (b, l, sb, sl) in v.into_iter().filter(|e| e.0 / 3 == me) {
                if !all_words(offset(b, l, p, n, line), value(last, sb, sl)) {
                    return Err(bad(b, l));
                }
            }
        }
        Expect::Reduced { op, holders } => {
            if holders.contains(&me) {
                for i in 0..n {
                    let want = (1..p).fold(value(last, collectives::src(0), i), |a, j| {
                        op.apply(a, value(last, collectives::src(j), i))
                    });
                    if !all_words(offset(collectives::res(me), i, p, n, line), want) {
                        return Err(bad(collectives::res(me), i));
                    }
                }
            }
        }
    }
    Ok(())
}

/// One pass's time per rank, ns, for every pass (untimed first pass dropped).
fn seed_item(
    comm: &SimpleCommunicator,
    timer: &Timer,
    kind: Kind,
    p: usize,
    n: usize,
    line: usize,
    iterations: usize,
) -> Result<Vec<f64>> {
    let me = comm.rank() as usize;
    let mut times = Vec::with_capacity(iterations);
    if let Kind::Barrier(_) = kind {
        return Ok(coll_timed::barrier_passes(
            comm,
            timer,
            iterations,
            BARRIER_REPS,
        ));
    }
    let scripts = collectives::scripts(kind, &vec![0u32; p], n);
    let script = &scripts[me];
    let mut win = Window::allocate(comm, (2 * p * n + n) * line)?;
    win.lock_all()?;
    for pass in 0..=iterations {
        for st in &script.setup {
            if let Step::Write(l) = st {
                write_lines(&mut win, pass + 1, l, p, n, line);
            }
        }
        win.sync()?;
        comm.barrier();
        win.sync()?;
        let t = coll_timed::script_time(comm, &mut win, timer, &script.timed, p, n, line)?;
        win.sync()?;
        comm.barrier();
        if pass > 0 {
            times.push(t);
        }
    }
    win.unlock_all()?;
    let checked = check_rma(kind, &mut win, me, iterations + 1, p, n, line);
    // Returned after the window is freed everywhere: MPI_Win_free is collective, so a
    // rank leaving early would leave the others waiting in this barrier.
    comm.barrier();
    drop(win);
    checked?;
    Ok(times)
}

/// MPI's own collective: per pass, this rank's time, ns; the data checked after the
/// last pass, outside the timer (every word of every block MPI moved).
#[allow(clippy::too_many_arguments)]
fn native_item(
    comm: &SimpleCommunicator,
    timer: &Timer,
    nat: Native,
    p: usize,
    n: usize,
    line: usize,
    iterations: usize,
    data: Data,
) -> Result<Vec<f64>> {
    let me = comm.rank() as usize;
    let w = line / 8;
    let src_lines = if nat == Native::Scatter && me == 0 {
        p * n
    } else {
        n
    };
    // Page-aligned, as the peers' buffers: a Vec's 16-byte alignment lets a 64 B block
    // straddle two lines and a 4 KiB block two pages (measured: x1.1 at 4 KiB MPI_Bcast).
    let mut src_buf = PageBuf::new(src_lines * line, 0);
    let mut dst_buf = PageBuf::new(p * n * line, 0);
    let mut res_buf = PageBuf::new(n * line, 0);
    let src = src_buf.words_mut();
    let dst = dst_buf.words_mut();
    let res = res_buf.words_mut();
    let reps = if nat == Native::Barrier {
        BARRIER_REPS
    } else {
        1
    };
    let sbuf = collectives::src(me);
    let op = nat.bind(comm);
    // Fresh data: pass k sends values of pass k + 1, written before the releasing
    // barrier; the same data (OSU's way): pass 1's values every time.
    let fill_pass = |pass: usize| if data == Data::Fresh { pass + 1 } else { 1 };
    let prepare = |pass: usize, src: &mut [u64], dst: &mut [u64]| {
        if pass == 0 || data == Data::Fresh {
            for l in 0..src_lines {
                src[l * w..(l + 1) * w].fill(value(fill_pass(pass), sbuf, l));
            }
            // The root's broadcast block is sent from dst: copied here, outside the
            // timer, since the copy is no part of MPI_Bcast's cost.
            if nat == Native::Bcast && me == 0 {
                dst[..n * w].copy_from_slice(&src[..n * w]);
            }
        }
    };
    let times =
        coll_timed::native_passes(comm, timer, &op, (src, dst, res), iterations, reps, prepare);
    let last = fill_pass(iterations);
    let line_ok =
        |buf: &[u64], l: usize, want: u64| buf[l * w..(l + 1) * w].iter().all(|&x| x == want);
    let v = |t: usize, l: usize| value(last, collectives::src(t), l);
    let ok = match nat {
        Native::Barrier => true,
        Native::Bcast => (0..n).all(|i| line_ok(dst, i, v(0, i))),
        Native::Scatter => (0..n).all(|i| line_ok(dst, i, v(0, me * n + i))),
        Native::Shift(k) => (0..n).all(|i| line_ok(dst, i, v((me + k) % p, i))),
        Native::Gather if me != 0 => true,
        Native::Gather | Native::Allgather => {
            (0..p).all(|j| (0..n).all(|i| line_ok(dst, j * n + i, v(j, i))))
        }
        Native::AllreduceSum | Native::AllreduceMax => {
            let op = if nat == Native::AllreduceSum {
                numalab_probe::script::Op::Sum
            } else {
                numalab_probe::script::Op::Max
            };
            (0..n).all(|i| line_ok(res, i, (1..p).fold(v(0, i), |a, j| op.apply(a, v(j, i)))))
        }
    };
    if !ok {
        return Err(Error::System(format!(
            "data check failed: {} P={p} left a wrong word on rank {me}",
            nat.name()
        )));
    }
    Ok(times)
}

/// This rank's times of `iterations` passes of `item` (none when it is not among the
/// item's P ranks).
fn item_times(
    sub: Option<&SimpleCommunicator>,
    timer: &Timer,
    plan: &Plan,
    item: &Item,
    iterations: usize,
) -> Result<Vec<f64>> {
    let (p, n) = (item.p, item.lines);
    Ok(match sub {
        Some(c) => match item.how {
            How::Seed(k) => seed_item(c, timer, k, p, n, plan.line, iterations)?,
            How::Mpi(nat) => native_item(c, timer, nat, p, n, plan.line, iterations, plan.data)?,
        },
        None => Vec::new(),
    })
}

/// Every rank's times of `item` on rank 0 (the item's P ranks first), with the budget
/// its passes were taken in: the planned passes, then more while its figure is
/// unsettled and the budget lasts, rank 0 deciding each round (collective).
fn settled_times(
    world: &World,
    sub: Option<&SimpleCommunicator>,
    timer: &Timer,
    plan: &Plan,
    item: &Item,
) -> Result<Option<(Vec<Vec<f64>>, Duration)>> {
    let start = Instant::now();
    let (mut acc, mut budget): (Option<Vec<Vec<f64>>>, Option<Duration>) = (None, None);
    let mut next = plan.iterations as u64;
    while next > 0 {
        let mine = item_times(sub, timer, plan, item, next as usize)?;
        let all = numalab_mpi::gather::gather_to_root(world.comm(), &mine)?;
        world.barrier();
        if let Some(all) = all {
            let acc = acc.get_or_insert_with(|| vec![Vec::new(); all.len()]);
            for (a, v) in acc.iter_mut().zip(all) {
                a.extend(v);
            }
            let elapsed = start.elapsed();
            let budget = *budget.get_or_insert_with(|| plan.goal.budget(elapsed));
            let time = completion(&acc[..item.p]);
            next = settle::more(&plan.goal, &time, elapsed, budget, plan.iterations) as u64;
        }
        world.comm().process_at_rank(0).broadcast_into(&mut next);
    }
    Ok(acc.zip(budget))
}

/// Per pass, the slowest of the ranks' times (as many passes as every rank has).
fn completion(per_rank: &[Vec<f64>]) -> Vec<f64> {
    let n = per_rank.iter().map(Vec::len).min().unwrap_or(0);
    (0..n)
        .map(|k| per_rank.iter().map(|v| v[k]).fold(0.0, f64::max))
        .collect()
}

/// The `collective-mpi` record of `item` from every rank's times (`per_rank`, the
/// item's P ranks first), and its median completion time for the models.
fn item_record(
    world: &World,
    prov: &Provenance,
    plan: &Plan,
    item: &Item,
    (per_rank, budget): (&[Vec<f64>], Duration),
) -> (Record, f64) {
    let p = item.p;
    let time = completion(per_rank);
    let rank_mean: Vec<f64> = per_rank
        .iter()
        .map(|v| v.iter().sum::<f64>() / v.len().max(1) as f64)
        .collect();
    let mut r = Record::new(
        "collective-mpi",
        &format!(
            "{} {} P={p} {}",
            item.collective(),
            item.implementation(),
            numalab_results::words::count(item.lines as u64, "line")
        ),
        prov.clone(),
        json!({
            "collective": item.collective(), "implementation": item.implementation(),
            "seed": match item.how { How::Seed(k) => k.seed_name(), How::Mpi(_) => "" },
            "ranks": p, "lines": item.lines, "block_bytes": item.lines * plan.line,
            "line_bytes": plan.line, "iterations": plan.iterations, "passes": time.len(),
            "data": if matches!(item.how, How::Mpi(_)) { plan.data.name() } else { "fresh" },
            "statistic": "per pass, the slowest rank's time from the releasing barrier to its completion",
            "tolerance_pct": plan.goal.tolerance_pct, "noise_budget_ms": plan.goal.budget_ms,
            "settling": settle::HOW,
        }),
    );
    r.placement = Some(world.placement_value(&(0..p).collect::<Vec<_>>()));
    r.add_samples("time", "ns", &time);
    r.set_data(&super::data::CollectiveMpiData {
        rank_mean_ns: rank_mean,
        checked: item.lines > 0,
    });
    r.warnings = prov.warnings();
    for k in 0..p {
        if world.placements[k].shares_cpu {
            r.warnings.push(format!(
                "rank {k} shares its CPU with another rank: times include waiting for the CPU"
            ));
        }
    }
    r.warnings.dedup();
    let entry = settle::judged(&plan.goal, &time, budget, plan.iterations);
    numalab_results::settle::apply(&mut r, entry);
    (r, median(&time).unwrap_or(f64::NAN))
}

/// Run the plan (collective over the world). Rank 0 gets every record: one per
/// measurement (completion time per pass: the slowest rank's) and one per fitted model.
pub fn measure(
    world: &World,
    host: &Host,
    plan: &Plan,
    mut progress: impl FnMut(usize, usize),
) -> Result<Option<Vec<Record>>> {
    let timer = Timer::best();
    let prov = Provenance::collect(&host.machine.summary(), &host.machine.source);
    let mut out = Vec::new();
    let mut points: Vec<(Item, f64)> = Vec::new();
    // Each item kept as it ends, so a job that dies keeps the items it finished.
    let mut kept = numalab_results::partial::Sink::from_env();
    for &p in &plan.ps {
        let sub = first_ranks(world.comm(), p);
        for (i, item) in plan.items.iter().enumerate().filter(|(_, it)| it.p == p) {
            if world.is_root() {
                progress(i, plan.items.len());
            }
            let got = settled_times(world, sub.as_ref(), &timer, plan, item)?;
            let Some((all, budget)) = got else { continue };
            let (r, med) = item_record(world, &prov, plan, item, (&all[..p], budget));
            points.push((*item, med));
            kept.add(std::slice::from_ref(&r));
            out.push(r);
        }
    }
    if !world.is_root() {
        return Ok(None);
    }
    out.extend(models(&prov, &points));
    Ok(Some(out))
}

/// The seed's models per seed algorithm, over P and lines (µs), as the shared-memory suite fits them.
fn models(prov: &Provenance, points: &[(Item, f64)]) -> Vec<Record> {
    let mut kinds: Vec<Kind> = Vec::new();
    for (it, _) in points {
        if let How::Seed(k) = it.how {
            let k = if let Kind::Shift(_) = k {
                Kind::Shift(1)
            } else {
                k
            };
            if !kinds.contains(&k) {
                kinds.push(k);
            }
        }
    }
    let mut out = Vec::new();
    for k in kinds {
        let pts: Vec<(usize, usize, f64)> = points
            .iter()
            .filter(|(it, _)| match (it.how, k) {
                (How::Seed(Kind::Shift(_)), Kind::Shift(_)) => true,
                (How::Seed(x), _) => x == k,
                _ => false,
            })
            .map(|(it, t)| (it.p, it.lines, t / 1000.0))
            .collect();
        for fit in fit_models(k, &pts) {
            let name = if let Kind::Shift(_) = k {
                "shift".into()
            } else {
                k.name()
            };
            let mut r = Record::new(
                "collective-mpi-model",
                &name,
                prov.clone(),
                json!({ "collective": name, "points": pts.len(), "unit": "µs" }),
            );
            match fit {
                Ok(f) => r.set_data(&f),
                Err(e) => r.unavailable.push(numalab_results::Unavailable {
                    feature: "model fit".into(),
                    reason: e,
                }),
            }
            out.push(r);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_of_different_owners_never_overlap_in_a_window() {
        let (p, n, line) = (4, 3, 64);
        let ends: Vec<(usize, usize)> = [
            collectives::src(1),
            collectives::dst(1),
            collectives::res(1),
        ]
        .iter()
        .map(|&b| {
            (
                offset(b, 0, p, n, line),
                offset(b, if b % 3 == 2 { n } else { p * n }, p, n, line),
            )
        })
        .collect();
        assert!(ends[0].1 <= ends[1].0 && ends[1].1 <= ends[2].0);
        assert_eq!(ends[2].1, (2 * p * n + n) * line);
    }
}
