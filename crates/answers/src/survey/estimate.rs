//! How long each survey step takes at the reference pace (a quiet 2-core VM, where the
//! full survey took 27 s and the quick one 9 s): the work of each step in reference
//! seconds, from what the step runs (sizes, points, CPUs). A run scales these by the
//! pace it measures (`survey::pace`); nothing here is a wall time of this machine.

/// The topology step: one hwloc load.
pub const TOPOLOGY: f64 = 0.2;

/// The memory-hierarchy sweep (4K–64M quick, 4K–1G full), its short sizes measured
/// in two rounds (the second round took the quick sweep from 2.7–3.0 s to 3.8–4.6 s
/// and the full one from 13.5 s to 14.5 s on the reference VM).
pub fn sweep(quick: bool) -> f64 {
    if quick {
        2.9
    } else {
        15.0
    }
}

/// The latency of lines in state `s`: uown chases a buffer beyond the caches; the
/// others, lines a helper holds.
pub fn state(s: &str, quick: bool) -> f64 {
    match (s, quick) {
        ("uown", true) => 0.7,
        ("uown", false) => 1.2,
        _ => 0.2,
    }
}

/// The bandwidth kernels on one thread.
pub const BANDWIDTH_ONE: f64 = 0.7;

/// MLC's injection table (seven mixes) against each of `nodes` memory nodes.
pub fn injection(nodes: usize) -> f64 {
    0.2 * (nodes.max(1) * 7) as f64
}

/// The bandwidth kernels on all `pus` CPUs: each requestor fills its own buffer before
/// the timed passes.
pub fn bandwidth_all(pus: usize) -> f64 {
    0.4 + 0.1 * pus as f64
}

/// One row of the thread-scaling table, `k` threads.
pub fn scaling(k: usize) -> f64 {
    0.3 + 0.05 * k as f64
}

/// A latency or bandwidth matrix of `cells` initiator × memory cells.
pub fn matrix(cells: f64) -> f64 {
    cells * 0.6
}

/// The intervention placements over `nodes` nodes.
pub fn intervene(nodes: usize) -> f64 {
    2.0 * nodes as f64
}

/// The MPI matrix: launch (~0.3 s) plus each of `pairs` pairs' round trips (a few µs
/// each, more when ranks outnumber cores).
pub fn mpi(pairs: f64, quick: bool) -> f64 {
    0.4 + pairs * if quick { 0.05 } else { 0.3 }
}

/// The c2c matrix of `cpus` CPUs.
pub fn c2c(cpus: usize) -> f64 {
    0.05 * (cpus * cpus) as f64 + 0.1
}

/// The invalidation sweep over `nodes` nodes.
pub fn invalidate(nodes: usize) -> f64 {
    0.2 * nodes.max(1) as f64
}

/// Reference seconds of one loaded-latency point (a chase of the quick survey's 64 MiB
/// buffer, or the default size in the full one, with the injectors on every other
/// CPU). Each point starts its injectors, waits for them, and settles on its own, and
/// it keeps every CPU busy, so it never finds an idle CPU when anything else runs.
/// With the step at 3.5 s for 22 points it ran 1.5–1.7× the pace of the rest of the
/// survey in four quick surveys on this project's 2-vCPU VM (17–21× the reference
/// while the whole ran 11–13×, other builds running), as on a 16-core VM (11–19×
/// against 5–10×); at 0.25 s a point it is at the pace of the rest, and a point of the
/// full survey's larger buffer costs twice that.
pub const LOADED_POINT: f64 = 0.25;

/// The loaded-latency family against one memory node: `points` points (the unloaded
/// one, then each delay at each write share).
pub fn loaded(points: usize, quick: bool) -> f64 {
    points as f64 * LOADED_POINT * if quick { 1.0 } else { 2.0 }
}

/// The placement suite: readers and owners over the CPUs' domains, growing with them.
pub fn placement(pus: usize, quick: bool) -> f64 {
    pus as f64 * if quick { 0.2 } else { 0.6 }
}

/// The collectives suite.
pub fn collectives(pus: usize, quick: bool) -> f64 {
    pus as f64 * if quick { 0.25 } else { 0.5 }
}

/// The EARTH suite. Quick: 0.26 s with fixed passes, 0.5–0.7 s sized to the noise
/// (full: 2.7 → 3.5–3.9 s).
pub fn earth(quick: bool) -> f64 {
    if quick {
        0.7
    } else {
        4.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loaded_family_costs_its_points() {
        // The survey's family: the unloaded point and 3 write shares × 7 delays.
        assert!((loaded(22, true) - 5.5).abs() < 1e-9);
        assert!((loaded(22, false) - 11.0).abs() < 1e-9);
        // Fewer points, less time, in proportion.
        assert!((loaded(11, true) - loaded(22, true) / 2.0).abs() < 1e-9);
    }
}
