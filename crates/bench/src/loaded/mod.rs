//! Loaded latency (MLC's latency-versus-bandwidth curve): one random chase timed
//! while injector threads stream paced read or write traffic to the same memory,
//! at decreasing delays. The chase and every injector start on one barrier; the
//! chase finishing stops the injectors, so each pass's traffic overlaps the chase.
//! With several read/write mixes (`--writes`), one curve per mix: Mess's family.

mod below;
mod curve;
mod data;
mod experiment;
mod measure;
mod mess;
mod present;
mod text;
pub use below::MAX_BELOW_REMEASURE;
pub use curve::{curves, Curve, CurvePoint, Family};
pub use data::{LoadedData, LoadedPlanData};
pub use experiment::{run, Options};
pub use measure::{measure, Fig, Measured};
pub use mess::{mess_csv, reference_files, reference_records, ReferenceData, MESS_HEADER};
pub use present::LoadedPresenter;

/// The experiment's plan.
pub type Plan = LoadedPlan;

use numalab_probe::inject::Traffic;
use numalab_probe::mix::Mix;
use numalab_results::settle::Goal;
use numalab_topo::bind::PinProof;
use numalab_topo::buffer::MemProof;
use numalab_topo::{MemPlacement, ThreadPlacement};
use serde::{Deserialize, Serialize};

/// MLC-like delays (spin iterations after each injected line), largest first.
pub const DEFAULT_DELAYS: [u64; 11] = [20000, 10000, 5000, 2500, 1000, 500, 250, 100, 50, 20, 0];

/// The curve, resolved.
#[derive(Debug, Clone, Serialize)]
pub struct LoadedPlan {
    /// The chasing thread.
    pub requestor: ThreadPlacement,
    /// Injector threads.
    pub injectors: Vec<ThreadPlacement>,
    /// Home of the chase and of every injector's buffer.
    pub mem: MemPlacement,
    /// What injectors do to each line (without `--writes`).
    pub traffic: Traffic,
    /// Whether the mixes came from `--writes` (a family of curves).
    pub family: bool,
    /// The injectors' read/write mixes, one curve each, in order.
    pub mixes: Vec<Mix>,
    /// Delays, in order; the unloaded point comes first.
    pub delays: Vec<u64>,
    /// Chase buffer bytes.
    pub chase_bytes: u64,
    /// Bytes per injector.
    pub inject_bytes: u64,
    /// Loads per timed pass.
    pub loads: usize,
    /// Timed passes per point first; more are added until the point settles.
    pub iterations: usize,
    /// What each point settles to (`--noise-budget`, `--tolerance`).
    pub goal: Goal,
}

/// One point of the curve.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Point {
    /// Injector delay; None for the unloaded point (no injectors).
    pub delay: Option<u64>,
    /// The injectors' mix; None for the unloaded point.
    #[serde(default)]
    pub mix: Option<Mix>,
    /// Chase latency, ns per load, per pass (the passes the statistics use: every
    /// vector below is of the same passes).
    pub latency_ns: Vec<f64>,
    /// Injected memory traffic of all injectors together, GB/s, per pass: an
    /// estimate, 64 bytes per line read, 128 per line written (write-allocate), over
    /// the span from the first injector's start to the last one's end.
    pub injected_gbps: Vec<f64>,
    /// Bytes the injectors issued (64 per line touched), GB/s, per pass: all
    /// injectors' bytes over the same span (never the sum of each one's own rate).
    #[serde(default)]
    pub issued_gbps: Vec<f64>,
    /// Lines read over lines touched by the injectors, per pass (Mess's
    /// `rd_percentage_actual`, as issued).
    #[serde(default)]
    pub read_share: Vec<f64>,
    /// The chase's own traffic (64 bytes per load), GB/s, per pass.
    pub chase_gbps: Vec<f64>,
    /// Pinning proof (requestor, then injectors).
    pub pins: Vec<PinProof>,
}

/// Where the buffers landed.
#[derive(Debug, Clone, Serialize)]
pub struct Landed {
    /// The chase buffer.
    pub chase: MemProof,
    /// Each injector's buffer.
    pub injectors: Vec<MemProof>,
}

/// What the injectors do at one point: None for the unloaded point.
pub type Load = Option<(Mix, u64)>;

impl LoadedPlan {
    /// The points in the order measured: the unloaded point, then each mix's delays.
    pub fn loads(&self) -> Vec<Load> {
        let loaded = self
            .mixes
            .iter()
            .flat_map(|m| self.delays.iter().map(move |d| Some((*m, *d))));
        std::iter::once(None).chain(loaded).collect()
    }
}
