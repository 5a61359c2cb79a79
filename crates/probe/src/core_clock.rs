//! The core clock, measured: a chain of dependent integer adds, each waiting for the
//! one before, runs at one add per core cycle on every x86-64 and AArch64 core, so
//! adds per ns timed with the run's timer is the clock the core ran at (GHz), boost and
//! throttling included, with no frequency assumed or read from a driver (a VM has
//! none). A latency figure in ns divided by it is the load's cost in core cycles: the
//! figure that stays put when only the clock moved.
//!
//! One pass is [`ADDS`] adds (about 80 µs at 3.2 GHz), short enough that most passes
//! run between two scheduler ticks; the caller takes the median of several.
//!
//! Each add takes its increment from a register, not an immediate: Intel cores from
//! Golden Cove on (Sapphire and Emerald Rapids among them) fold a chain of small
//! immediate adds at rename, several per cycle, and a chain of `add x, 1` read 17.6 GHz
//! on an Emerald Rapids guest (2026-11-28). The renamer does not know a register's value,
//! so `add x, y` stays one add per cycle.

/// Dependent adds per loop iteration (`.rept`-unrolled; the loop's decrement and
/// branch run beside the chain, so an iteration takes this many cycles).
pub const UNROLL: u64 = 64;

/// Loop iterations per pass.
const ITERS: u64 = 4096;

/// Dependent adds per pass.
pub const ADDS: u64 = UNROLL * ITERS;

/// Whether this architecture has the add chain ([`pass`] does nothing elsewhere).
pub const AVAILABLE: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

/// Why the core clock is not measured here, for a record's `unavailable`.
pub const UNAVAILABLE: &str =
    "no dependent-add chain is implemented for this architecture (x86-64 and AArch64 only)";

/// One pass: [`ADDS`] dependent adds.
#[cfg(target_arch = "x86_64")]
pub fn pass() {
    let mut x: u64 = 0;
    // SAFETY: register arithmetic only; no memory, no stack.
    unsafe {
        core::arch::asm!(
            "2:",
            ".rept {u}",
            "add {x}, {one}",
            ".endr",
            "dec {n}",
            "jnz 2b",
            x = inout(reg) x,
            one = in(reg) 1u64,
            n = inout(reg) ITERS => _,
            u = const UNROLL,
            options(nostack, nomem),
        );
    }
    std::hint::black_box(x);
}

/// One pass: [`ADDS`] dependent adds.
#[cfg(target_arch = "aarch64")]
pub fn pass() {
    let mut x: u64 = 0;
    // SAFETY: register arithmetic only; no memory, no stack.
    unsafe {
        core::arch::asm!(
            "2:",
            ".rept {u}",
            "add {x}, {x}, {one}",
            ".endr",
            "subs {n}, {n}, #1",
            "b.ne 2b",
            x = inout(reg) x,
            one = in(reg) 1u64,
            n = inout(reg) ITERS => _,
            u = const UNROLL,
            options(nostack, nomem),
        );
    }
    std::hint::black_box(x);
}

/// One pass (no add chain on this architecture: see [`AVAILABLE`]).
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn pass() {}

/// The clock (GHz) of a pass of [`ADDS`] adds that took `ns`.
pub fn ghz(ns: f64) -> f64 {
    ADDS as f64 / ns
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_reads_as_a_clock_a_core_can_have() {
        if !AVAILABLE {
            return;
        }
        let mut fastest = f64::MAX;
        for _ in 0..21 {
            let t0 = std::time::Instant::now();
            pass();
            fastest = fastest.min(t0.elapsed().as_nanos() as f64);
        }
        // Not a stub: a pass that did nothing would read hundreds of GHz. (No lower
        // bound: a starved vCPU may stretch every pass.)
        let g = ghz(fastest);
        assert!(g > 0.0 && g < 10.0, "{g} GHz");
    }
}
