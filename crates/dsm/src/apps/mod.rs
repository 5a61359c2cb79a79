//! Applications: plain shared-memory programs on the DSM, each with a sequential twin.

pub mod barnes;
pub mod costs;
pub mod fft;
pub mod ocean;
pub mod sor;
pub mod swm;
pub mod water;
pub mod water_model;

use crate::Ctx;
use std::time::Instant;

/// A DSM application.
pub trait App: Sync {
    /// Command-line name.
    fn name(&self) -> &'static str;
    /// Pages of shared memory it needs.
    fn pages(&self) -> usize;
    /// Global locks it uses.
    fn locks(&self) -> usize {
        0
    }
    /// One thread's part (every thread of every rank runs it).
    fn run(&self, c: &Ctx);
    /// The result, read from shared memory on rank 0 after the run.
    fn result(&self, c: &Ctx) -> Vec<f64>;
    /// The same computation without the DSM.
    fn sequential(&self) -> Vec<f64>;
    /// Largest relative difference accepted against the sequential result.
    fn tolerance(&self) -> f64 {
        0.0
    }
}

/// Largest relative difference between two results (inf when the lengths differ).
pub fn max_rel_diff(a: &[f64], b: &[f64]) -> f64 {
    if a.len() != b.len() {
        return f64::INFINITY;
    }
    a.iter()
        .zip(b)
        .map(|(x, y)| {
            if x == y {
                0.0
            } else {
                (x - y).abs() / x.abs().max(y.abs()).max(1e-300)
            }
        })
        .fold(0.0, f64::max)
}

/// Pages holding `bytes`.
pub fn pages_for(bytes: usize) -> usize {
    bytes.div_ceil(crate::region::PAGE).max(1)
}

/// Command-line names of the apps.
pub const NAMES: [&str; 6] = ["sor", "swm", "fft", "water-nsq", "ocean", "barnes"];

/// Input sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Input {
    /// Small enough that the whole cvm suite runs in minutes on 2 cores.
    Small,
    /// The seed's Table 1 sizes.
    Paper,
}

impl Input {
    /// Parse `small` or `paper`.
    pub fn parse(s: &str) -> Option<Input> {
        match s {
            "small" => Some(Input::Small),
            "paper" => Some(Input::Paper),
            _ => None,
        }
    }

    /// The flag's spelling (`small`, `paper`), as progress lines and plans show it.
    pub fn name(self) -> &'static str {
        match self {
            Input::Small => "small",
            Input::Paper => "paper",
        }
    }
}

/// Accepted `--scale` factors: powers of two, so FFT's side stays one.
pub const SCALES: [usize; 4] = [1, 2, 4, 8];

/// The app called `name` at `input` size.
pub fn by_name(name: &str, input: Input) -> Option<Box<dyn App>> {
    by_name_scaled(name, input, 1)
}

/// The app called `name` at `input` size with its size parameter × `k` (one of
/// [`SCALES`]): SOR's rows, water-nsq's molecules, barnes' bodies, and the side of
/// SWM's, ocean's (its interior) and FFT's grids. SOR's and the others' boundary
/// exchange per interval stays about the same while each rank's compute grows, which
/// finds the input where the DSM breaks even.
pub fn by_name_scaled(name: &str, input: Input, k: usize) -> Option<Box<dyn App>> {
    let app = unscaled(name, input)?;
    if k == 1 {
        return Some(app);
    }
    let paper = input == Input::Paper;
    Some(match name {
        "sor" => Box::new(sor::Sor {
            rows: if paper { 2048 } else { 130 } * k,
            cols: if paper { 2048 } else { 512 },
            iters: 10,
        }),
        "fft" => Box::new(fft::Fft {
            n: if paper { 64 } else { 16 } * k,
        }),
        "water-nsq" if paper => Box::new(water::Water {
            n: 512 * k,
            steps: 3,
        }),
        "water-nsq" => Box::new(water::Water {
            n: 128 * k,
            steps: 2,
        }),
        "swm" if paper => Box::new(swm::Swm {
            n: 750 * k,
            steps: 5,
        }),
        "swm" => Box::new(swm::Swm {
            n: 64 * k,
            steps: 4,
        }),
        "ocean" if paper => Box::new(ocean::Ocean {
            n: 256 * k + 2,
            iters: 50,
        }),
        "ocean" => Box::new(ocean::Ocean {
            n: 64 * k + 2,
            iters: 20,
        }),
        "barnes" if paper => Box::new(barnes::Barnes {
            n: 16384 * k,
            steps: 3,
        }),
        "barnes" => Box::new(barnes::Barnes {
            n: 512 * k,
            steps: 2,
        }),
        _ => return None,
    })
}

/// The app called `name` at `input` size, as the seed's Table 1 (paper) has it.
fn unscaled(name: &str, input: Input) -> Option<Box<dyn App>> {
    let paper = input == Input::Paper;
    Some(match name {
        "sor" if paper => Box::new(sor::Sor {
            rows: 2048,
            cols: 2048,
            iters: 10,
        }),
        "sor" => Box::new(sor::Sor {
            rows: 130,
            cols: 512,
            iters: 10,
        }),
        "fft" if paper => Box::new(fft::Fft { n: 64 }),
        "fft" => Box::new(fft::Fft { n: 16 }),
        "water-nsq" if paper => Box::new(water::Water { n: 512, steps: 3 }),
        "water-nsq" => Box::new(water::Water { n: 128, steps: 2 }),
        "swm" if paper => Box::new(swm::Swm { n: 750, steps: 5 }),
        "swm" => Box::new(swm::Swm { n: 64, steps: 4 }),
        "ocean" if paper => Box::new(ocean::Ocean { n: 258, iters: 50 }),
        "ocean" => Box::new(ocean::Ocean { n: 66, iters: 20 }),
        "barnes" if paper => Box::new(barnes::Barnes { n: 16384, steps: 3 }),
        "barnes" => Box::new(barnes::Barnes { n: 512, steps: 2 }),
        _ => return None,
    })
}

/// Runs of the sequential program the speedup is taken against.
pub const SEQUENTIAL_RUNS: usize = 3;

/// The sequential program's result, its median time of [`SEQUENTIAL_RUNS`] in ns, the
/// CPU time of that run, and every run's time in the order run. The median, not the
/// fastest: the parallel run it is set against is one run, so the fastest of three
/// would read the speedup low by as much as the host's speed moves between runs (on the
/// 2-vCPU guest, SOR's sequential runs spread 113–192 ms within minutes); three runs
/// still outvote one that a busy machine slowed 2–4×.
pub fn timed_sequential(app: &dyn App) -> Sequential {
    let mut runs = Vec::with_capacity(SEQUENTIAL_RUNS);
    let mut want = Vec::new();
    for _ in 0..SEQUENTIAL_RUNS {
        let (t, c) = (Instant::now(), thread_cpu_ns());
        want = app.sequential();
        let wall = t.elapsed().as_nanos() as u64;
        runs.push((wall, thread_cpu_ns().saturating_sub(c)));
    }
    let (wall, cpu) = median_run(&runs);
    Sequential {
        want,
        wall_ns: wall,
        cpu_ns: cpu,
        runs_ns: runs.iter().map(|r| r.0).collect(),
    }
}

/// The median of (wall, CPU) runs by wall time (the upper one of an even count), with
/// its own CPU time; (0, 0) for none.
fn median_run(runs: &[(u64, u64)]) -> (u64, u64) {
    let mut by_wall = runs.to_vec();
    by_wall.sort_by_key(|r| r.0);
    by_wall.get(by_wall.len() / 2).copied().unwrap_or((0, 0))
}

/// What [`timed_sequential`] measured.
#[derive(Debug, Clone)]
pub struct Sequential {
    /// The sequential program's result.
    pub want: Vec<f64>,
    /// The median run's wall time, ns.
    pub wall_ns: u64,
    /// That run's CPU time, ns.
    pub cpu_ns: u64,
    /// Every run's wall time, ns, in the order run.
    pub runs_ns: Vec<u64>,
}

/// CPU time of the calling thread, ns.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime fills the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_is_the_median_run_with_its_own_cpu_time() {
        // A slow first run (cold, or another program on the CPU) does not set it, and
        // neither does the fastest.
        let runs = [
            (192_000_000, 100_000_000),
            (113_000_000, 112_000_000),
            (125_000_000, 124_000_000),
        ];
        assert_eq!(median_run(&runs), (125_000_000, 124_000_000));
        assert_eq!(median_run(&runs[..1]), runs[0]);
        assert_eq!(median_run(&[]), (0, 0));
    }

    #[test]
    fn a_scale_multiplies_every_app_and_one_changes_nothing() {
        for name in NAMES {
            for input in [Input::Small, Input::Paper] {
                let one = by_name(name, input).unwrap();
                let same = by_name_scaled(name, input, 1).unwrap();
                assert_eq!(one.pages(), same.pages(), "{name}");
                let two = by_name_scaled(name, input, 2).unwrap();
                assert!(two.pages() > one.pages(), "{name} {input:?}");
            }
        }
        assert!(by_name_scaled("nope", Input::Paper, 2).is_none());
    }
}
