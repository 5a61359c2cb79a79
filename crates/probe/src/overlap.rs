//! The KSR threads experiment (seed 002 §6, Table 5): k OS threads on one CPU share
//! a fixed amount of computation, of communication (reading lines a thread on
//! another core has just written), or both; the time includes creating them.

use crate::script::value;
use crate::timer::Timer;
use numalab_topo::bind::pin_current_thread;
use numalab_topo::buffer::Buffer;
use numalab_topo::{Error, Host, Result};

/// What the threads share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Work {
    /// Only computation.
    Compute,
    /// Only communication.
    Communicate,
    /// Both, each thread alternating its share of each.
    Both,
}

impl Work {
    /// Name used in output.
    pub fn name(self) -> &'static str {
        match self {
            Work::Compute => "computation",
            Work::Communicate => "communication",
            Work::Both => "both",
        }
    }
}

/// A dependent integer chain of `iters` steps (a few cycles each).
#[inline(never)]
pub fn compute(iters: u64) -> u64 {
    let mut x = iters | 1;
    for _ in 0..iters {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
    }
    std::hint::black_box(x)
}

fn read(base: *const u8, lines: std::ops::Range<usize>, line: usize) -> u64 {
    let mut s = 0u64;
    for l in lines {
        // SAFETY: lines of a live buffer.
        s = s.wrapping_add(unsafe { (base.add(l * line) as *const u64).read_volatile() });
    }
    s
}

/// One pass: the helper writes every line, then k threads pinned to `cpu` are
/// created and share the work; returns ns from before creation to after the join.
/// Every thread's read sum is checked against what the helper wrote.
#[allow(clippy::too_many_arguments)]
pub fn pass(
    host: &Host,
    timer: &Timer,
    cpu: u32,
    helper: u32,
    k: usize,
    work: Work,
    buf: &Buffer,
    line: usize,
    iters: u64,
    pass: usize,
) -> Result<f64> {
    let lines = buf.len() / line;
    let base = buf.as_ptr() as usize;
    std::thread::scope(|s| {
        s.spawn(|| -> Result<()> {
            pin_current_thread(host, helper)?;
            for l in 0..lines {
                // SAFETY: lines of the live buffer.
                unsafe { ((base + l * line) as *mut u64).write_volatile(value(pass, 0, l)) };
            }
            Ok(())
        })
        .join()
        .map_err(|_| Error::System("the helper thread panicked".into()))?
    })?;
    let t0 = timer.start();
    type Share = std::thread::Result<Result<(u64, std::ops::Range<usize>)>>;
    let sums: Vec<Share> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..k)
            .map(|i| {
                s.spawn(move || -> Result<(u64, std::ops::Range<usize>)> {
                    pin_current_thread(host, cpu)?;
                    let r = i * lines / k..(i + 1) * lines / k;
                    let share = iters / k as u64;
                    let mut sum = 0;
                    match work {
                        Work::Compute => {
                            compute(share);
                        }
                        Work::Communicate => sum = read(base as *const u8, r.clone(), line),
                        Work::Both => {
                            // Alternate in eight slices so each thread mixes the two.
                            let len = r.len();
                            for j in 0..8 {
                                compute(share / 8);
                                let sub = r.start + j * len / 8..r.start + (j + 1) * len / 8;
                                sum = sum.wrapping_add(read(base as *const u8, sub, line));
                            }
                        }
                    }
                    Ok((sum, r))
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join()).collect()
    });
    let t1 = timer.stop();
    for s in sums {
        let (sum, r) = s.map_err(|_| Error::System("a worker thread panicked".into()))??;
        if work != Work::Compute {
            let want = r.fold(0u64, |a, l| a.wrapping_add(value(pass, 0, l)));
            if sum != want {
                return Err(Error::System(
                    "data check failed: a worker misread the helper's lines".into(),
                ));
            }
        }
    }
    Ok(timer.ns(t1 - t0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_topo::plan::resolve_memory;
    use numalab_topo::{MemSpec, PageSize, TopologySource};

    #[test]
    fn every_split_reads_the_helpers_data_and_takes_time() {
        let host = Host::load(&TopologySource::ThisSystem).unwrap();
        let m = &host.machine;
        let mem =
            resolve_memory(m, &MemSpec::Node(m.memory_nodes()[0]), PageSize::Base, &[]).unwrap();
        let buf = Buffer::allocate(&host, &mem, 64 * 1024).unwrap();
        let timer = Timer::best();
        let (cpu, helper) = (m.pus[0].os, m.pus.last().unwrap().os);
        for k in 1..=3 {
            for w in [Work::Compute, Work::Communicate, Work::Both] {
                let ns = pass(&host, &timer, cpu, helper, k, w, &buf, 64, 10_000, k).unwrap();
                assert!(ns > 0.0);
            }
        }
    }
}
