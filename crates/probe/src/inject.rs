//! Paced traffic for loaded latency (MLC's injectors): touch one line, spin a delay,
//! touch the next, until told to stop. Delay 0 streams as fast as one core can.

use crate::mix::Mix;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};

/// Lines between checks of the stop flag.
const CHECK_LINES: usize = 64;

/// What an injector does to each line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Traffic {
    /// One 8-byte load per line (64 bytes of read traffic).
    Read,
    /// One 8-byte store per line (a read-for-ownership and a writeback: 128 bytes of traffic).
    Write,
}

impl Traffic {
    /// Parse `read` or `write`.
    pub fn parse(s: &str) -> Result<Traffic, String> {
        match s {
            "read" => Ok(Traffic::Read),
            "write" => Ok(Traffic::Write),
            _ => Err(format!("invalid traffic '{s}': expected read or write")),
        }
    }

    /// Name as the CLI spells it.
    pub fn name(self) -> &'static str {
        match self {
            Traffic::Read => "read",
            Traffic::Write => "write",
        }
    }

    /// Memory traffic per line touched, bytes (write-allocate counted).
    pub fn traffic_per_line(self) -> u64 {
        match self {
            Traffic::Read => 64,
            Traffic::Write => 128,
        }
    }
}

/// Spin `n` iterations of a one-cycle loop the compiler cannot remove.
#[inline(always)]
pub fn spin(n: u64) {
    if n == 0 {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: register-only loop.
    unsafe {
        core::arch::asm!("2:", "dec {n}", "jnz 2b", n = inout(reg) n => _, options(nomem, nostack));
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: register-only loop.
    unsafe {
        core::arch::asm!("2:", "subs {n}, {n}, #1", "b.ne 2b", n = inout(reg) n => _, options(nomem, nostack));
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let mut i = 0u64;
        while std::hint::black_box(i) < n {
            i += 1;
        }
    }
}

/// Lines read and lines written by one injector pass.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Touched {
    /// Lines loaded.
    pub reads: u64,
    /// Lines stored to.
    pub writes: u64,
}

impl Touched {
    /// Every line touched.
    pub fn lines(self) -> u64 {
        self.reads + self.writes
    }
}

/// Touch `lines` 64-byte lines from `base` in order, `delay` spins after each,
/// cycling over the region until `stop` is raised (or once, when `stop` is None).
/// Returns the lines touched.
///
/// # Safety
/// `base` must be valid for reads and writes of `lines * 64` bytes, 8-byte aligned.
pub unsafe fn inject(
    traffic: Traffic,
    base: *mut u8,
    lines: usize,
    delay: u64,
    stop: Option<&AtomicBool>,
) -> u64 {
    let mix = match traffic {
        Traffic::Read => Mix::READS,
        Traffic::Write => Mix::WRITES,
    };
    inject_mix(mix, base, lines, delay, stop).lines()
}

/// As [`inject`], but interleaving reads and writes line by line in the ratio
/// of `mix` (3:1 reads three lines, writes the fourth, and so on), the phase
/// carried across passes over the region so the issued share is the ratio's.
///
/// # Safety
/// As [`inject`].
pub unsafe fn inject_mix(
    mix: Mix,
    base: *mut u8,
    lines: usize,
    delay: u64,
    stop: Option<&AtomicBool>,
) -> Touched {
    let mut t = Touched::default();
    let (reads, period) = (mix.reads as usize, mix.streams() as usize);
    if lines == 0 || period == 0 {
        return t;
    }
    let (mut phase, mut sink) = (0usize, 0u64);
    loop {
        let mut i = 0;
        while i < lines {
            let end = (i + CHECK_LINES).min(lines);
            for l in i..end {
                let p = base.add(l * 64) as *mut u64;
                if phase < reads {
                    sink = sink.wrapping_add(p.read_volatile());
                    t.reads += 1;
                } else {
                    p.add(1).write_volatile(l as u64);
                    t.writes += 1;
                }
                phase = if phase + 1 == period { 0 } else { phase + 1 };
                spin(delay);
            }
            i = end;
            if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
                std::hint::black_box(sink);
                return t;
            }
        }
        if stop.is_none() {
            std::hint::black_box(sink);
            return t;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_pass_touches_every_line_and_writes_only_the_second_word() {
        let mut m = vec![0u64; 8 * 100];
        // SAFETY: 100 lines of 64 bytes.
        let n = unsafe { inject(Traffic::Write, m.as_mut_ptr() as *mut u8, 100, 3, None) };
        assert_eq!(n, 100);
        for (l, line) in m.chunks(8).enumerate() {
            assert_eq!(line[0], 0);
            assert_eq!(line[1], l as u64);
        }
        // SAFETY: as above.
        let n = unsafe { inject(Traffic::Read, m.as_mut_ptr() as *mut u8, 100, 0, None) };
        assert_eq!(n, 100);
    }

    #[test]
    fn a_raised_stop_ends_within_a_check() {
        let mut m = vec![0u64; 8 * 1000];
        let stop = AtomicBool::new(true);
        // SAFETY: 1000 lines.
        let n = unsafe {
            inject(
                Traffic::Read,
                m.as_mut_ptr() as *mut u8,
                1000,
                0,
                Some(&stop),
            )
        };
        assert_eq!(n, CHECK_LINES as u64);
        assert_eq!(Traffic::parse("write").unwrap().traffic_per_line(), 128);
        assert!(Traffic::parse("rw").unwrap_err().contains("'rw'"));
    }

    #[test]
    fn a_mix_issues_its_ratio_across_passes() {
        let mut m = vec![0u64; 8 * 10];
        // SAFETY: 10 lines, one pass.
        let t = unsafe {
            inject_mix(
                Mix {
                    reads: 3,
                    writes: 1,
                },
                m.as_mut_ptr() as *mut u8,
                10,
                0,
                None,
            )
        };
        assert_eq!((t.reads, t.writes), (8, 2));
        // Lines 3 and 7 were written (second word), the rest only read.
        let written: Vec<usize> = (0..10).filter(|l| m[l * 8 + 1] != 0).collect();
        assert_eq!(written, vec![3, 7]);
        let (stop, mut big) = (AtomicBool::new(true), vec![0u64; 8 * 1000]);
        // SAFETY: 1000 lines; one check's worth (64 lines) before the raised stop is seen.
        let t = unsafe {
            inject_mix(
                Mix {
                    reads: 1,
                    writes: 1,
                },
                big.as_mut_ptr() as *mut u8,
                1000,
                0,
                Some(&stop),
            )
        };
        assert_eq!((t.reads, t.writes), (32, 32));
        // SAFETY: nothing is touched.
        let t = unsafe {
            inject_mix(
                Mix {
                    reads: 0,
                    writes: 0,
                },
                m.as_mut_ptr() as *mut u8,
                10,
                0,
                None,
            )
        };
        assert_eq!(t.lines(), 0);
    }
}
