//! Timers: the TSC on x86-64 (invariant TSC required, calibrated against
//! CLOCK_MONOTONIC_RAW), the virtual counter on aarch64, clock_gettime otherwise.

use serde::{Deserialize, Serialize};

/// Which counter a [`Timer`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimerKind {
    /// x86-64 time-stamp counter, read with lfence;rdtsc;lfence / rdtscp;lfence.
    Tsc,
    /// aarch64 CNTVCT_EL0 behind an isb.
    Cntvct,
    /// clock_gettime(CLOCK_MONOTONIC_RAW), ticks are nanoseconds.
    Clock,
}

/// A calibrated timer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timer {
    /// The counter read.
    pub kind: TimerKind,
    /// Ticks per second.
    pub hz: f64,
    /// How `hz` was found.
    pub calibration: String,
    /// Relative spread (max−min)/median of the calibration runs.
    pub calibration_spread: f64,
    /// Smallest non-zero difference between two back-to-back reads, in ns.
    pub resolution_ns: f64,
    /// Median cost of a start/stop pair with nothing between, in ns.
    pub overhead_ns: f64,
    /// Why a better counter was not used, when it was not.
    pub fallback_reason: Option<String>,
}

fn monotonic_raw_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec; CLOCK_MONOTONIC_RAW exists on every Linux we support.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_RAW, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(target_arch = "x86_64")]
mod arch {
    use core::arch::x86_64::{__cpuid, __rdtscp, _mm_lfence, _rdtsc};

    /// Invariant TSC: CPUID 0x8000_0007 EDX bit 8.
    #[allow(unused_unsafe)] // cpuid is safe from Rust 1.87 on, unsafe before
    pub fn counter_usable() -> Result<(), String> {
        // SAFETY: cpuid is always available on x86-64.
        let max_ext = unsafe { __cpuid(0x8000_0000) }.eax;
        if max_ext < 0x8000_0007 {
            return Err("CPUID does not report whether the TSC is invariant".into());
        }
        // SAFETY: as above; the leaf exists (checked).
        let edx = unsafe { __cpuid(0x8000_0007) }.edx;
        if edx & (1 << 8) == 0 {
            return Err("the TSC is not invariant (CPUID 0x80000007 EDX bit 8 clear)".into());
        }
        Ok(())
    }

    /// Start read: earlier instructions complete before rdtsc, later ones wait for it.
    #[inline(always)]
    pub fn start() -> u64 {
        // SAFETY: lfence and rdtsc have no preconditions on x86-64.
        unsafe {
            _mm_lfence();
            let t = _rdtsc();
            _mm_lfence();
            t
        }
    }

    /// Stop read: rdtscp waits for earlier instructions; lfence keeps later ones out.
    #[inline(always)]
    pub fn stop() -> u64 {
        let mut aux = 0u32;
        // SAFETY: rdtscp is present on every invariant-TSC CPU (checked with the TSC).
        unsafe {
            let t = __rdtscp(&mut aux);
            _mm_lfence();
            t
        }
    }

    pub const KIND: super::TimerKind = super::TimerKind::Tsc;
    pub const NAME: &str = "TSC";
}

#[cfg(target_arch = "aarch64")]
mod arch {
    /// The generic timer is architectural on aarch64 Linux.
    pub fn counter_usable() -> Result<(), String> {
        Ok(())
    }

    #[inline(always)]
    pub fn start() -> u64 {
        let t: u64;
        // SAFETY: CNTVCT_EL0 is readable at EL0 on Linux; isb orders it after earlier instructions.
        unsafe {
            core::arch::asm!("isb", "mrs {t}, cntvct_el0", "isb", t = out(reg) t, options(nostack))
        };
        t
    }

    #[inline(always)]
    pub fn stop() -> u64 {
        start()
    }

    /// CNTFRQ_EL0, the counter's frequency as firmware set it.
    pub fn frequency() -> u64 {
        let f: u64;
        // SAFETY: CNTFRQ_EL0 is readable at EL0 on Linux.
        unsafe { core::arch::asm!("mrs {f}, cntfrq_el0", f = out(reg) f, options(nostack)) };
        f
    }

    pub const KIND: super::TimerKind = super::TimerKind::Cntvct;
    pub const NAME: &str = "CNTVCT_EL0";
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod arch {
    pub fn counter_usable() -> Result<(), String> {
        Err("no cycle counter is implemented for this architecture".into())
    }
    #[inline(always)]
    pub fn start() -> u64 {
        super::monotonic_raw_ns()
    }
    #[inline(always)]
    pub fn stop() -> u64 {
        super::monotonic_raw_ns()
    }
    pub const KIND: super::TimerKind = super::TimerKind::Clock;
    pub const NAME: &str = "clock_gettime";
}

/// Ticks per second of the hardware counter against CLOCK_MONOTONIC_RAW:
/// five 20 ms windows, each bracketed tightly; returns (median hz, spread).
fn calibrate() -> (f64, f64) {
    let pair = || {
        // Keep the pair whose clock reads bracket the counter read most tightly.
        let mut best = (u64::MAX, 0u64, 0u64);
        for _ in 0..16 {
            let a = monotonic_raw_ns();
            let t = arch::start();
            let b = monotonic_raw_ns();
            if b - a < best.0 {
                best = (b - a, t, a + (b - a) / 2);
            }
        }
        (best.1, best.2)
    };
    let mut rates: Vec<f64> = (0..5)
        .map(|_| {
            let (t0, n0) = pair();
            let until = n0 + 20_000_000;
            while monotonic_raw_ns() < until {
                std::hint::spin_loop();
            }
            let (t1, n1) = pair();
            (t1 - t0) as f64 * 1e9 / (n1 - n0) as f64
        })
        .collect();
    rates.sort_by(|a, b| a.total_cmp(b));
    let median = rates[2];
    (median, (rates[4] - rates[0]) / median)
}

impl Timer {
    /// The best timer this machine has, calibrated.
    pub fn best() -> Timer {
        match arch::counter_usable() {
            Ok(()) if arch::KIND != TimerKind::Clock => {
                #[cfg(target_arch = "aarch64")]
                let (hz, spread, how) = {
                    let (measured, spread) = calibrate();
                    let f = arch::frequency() as f64;
                    (f, spread, format!("CNTFRQ_EL0 = {f} Hz; measured against CLOCK_MONOTONIC_RAW: {measured:.0} Hz"))
                };
                #[cfg(not(target_arch = "aarch64"))]
                let (hz, spread, how) = {
                    let (hz, spread) = calibrate();
                    (
                        hz,
                        spread,
                        format!(
                            "{} against CLOCK_MONOTONIC_RAW, median of 5 × 20 ms",
                            arch::NAME
                        ),
                    )
                };
                let mut t = Timer {
                    kind: arch::KIND,
                    hz,
                    calibration: how,
                    calibration_spread: spread,
                    resolution_ns: 0.0,
                    overhead_ns: 0.0,
                    fallback_reason: None,
                };
                t.characterise();
                t
            }
            Ok(()) => Timer::clock(None),
            Err(why) => Timer::clock(Some(why)),
        }
    }

    /// clock_gettime(CLOCK_MONOTONIC_RAW) as the timer.
    pub fn clock(fallback_reason: Option<String>) -> Timer {
        let mut t = Timer {
            kind: TimerKind::Clock,
            hz: 1e9,
            calibration: "nanoseconds by definition".into(),
            calibration_spread: 0.0,
            resolution_ns: 0.0,
            overhead_ns: 0.0,
            fallback_reason,
        };
        t.characterise();
        t
    }

    fn characterise(&mut self) {
        let mut res = u64::MAX;
        let mut pairs = Vec::with_capacity(1000);
        for _ in 0..1000 {
            let a = self.start();
            let b = self.stop();
            pairs.push(b.saturating_sub(a));
            if b > a {
                res = res.min(b - a);
            }
        }
        pairs.sort_unstable();
        self.resolution_ns = self.ns(res.min(1 << 40));
        self.overhead_ns = self.ns(pairs[pairs.len() / 2]);
    }

    /// Read the counter at the start of a timed region.
    #[inline(always)]
    pub fn start(&self) -> u64 {
        match self.kind {
            TimerKind::Clock => monotonic_raw_ns(),
            _ => arch::start(),
        }
    }

    /// Read the counter at the end of a timed region.
    #[inline(always)]
    pub fn stop(&self) -> u64 {
        match self.kind {
            TimerKind::Clock => monotonic_raw_ns(),
            _ => arch::stop(),
        }
    }

    /// Ticks to nanoseconds.
    pub fn ns(&self, ticks: u64) -> f64 {
        ticks as f64 * 1e9 / self.hz
    }

    /// Whether ticks are TSC cycles (reported beside ns).
    pub fn ticks_are_tsc_cycles(&self) -> bool {
        self.kind == TimerKind::Tsc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_timer_is_calibrated_and_monotonic() {
        let t = Timer::best();
        assert!(t.hz > 1e6 && t.hz < 1e11, "implausible rate {}", t.hz);
        assert!(t.resolution_ns > 0.0 && t.resolution_ns < 10_000.0);
        let a = t.start();
        let b = t.stop();
        assert!(b >= a);
    }

    #[test]
    fn timer_agrees_with_the_clock_over_a_sleep() {
        let t = Timer::best();
        let ratio = || {
            let c0 = monotonic_raw_ns();
            let a = t.start();
            std::thread::sleep(std::time::Duration::from_millis(100));
            let b = t.stop();
            let c1 = monotonic_raw_ns();
            t.ns(b - a) / (c1 - c0) as f64
        };
        // Loose: only a wrong rate by a large factor fails. A preemption between the
        // paired reads (up to 20 ms here) only lowers the ratio; one failing ratio is
        // measured once more before the test fails.
        let ok = |r: f64| (0.8..1.25).contains(&r);
        let first = ratio();
        if !ok(first) {
            let again = ratio();
            assert!(ok(again), "ratio {first}, measured again {again}");
        }
    }
}
