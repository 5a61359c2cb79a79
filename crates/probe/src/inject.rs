//! Paced traffic for loaded latency (MLC's injectors): touch one line, spin a delay,
//! touch the next, until told to stop. Delay 0 streams as fast as one core can.

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
    let mut done = 0u64;
    let mut sink = 0u64;
    if lines == 0 {
        return 0;
    }
    loop {
        let mut i = 0;
        while i < lines {
            let end = (i + CHECK_LINES).min(lines);
            for l in i..end {
                let p = base.add(l * 64) as *mut u64;
                match traffic {
                    Traffic::Read => sink = sink.wrapping_add(p.read_volatile()),
                    Traffic::Write => p.add(1).write_volatile(l as u64),
                }
                spin(delay);
            }
            done += (end - i) as u64;
            i = end;
            match stop {
                Some(s) if s.load(Ordering::Relaxed) => {
                    std::hint::black_box(sink);
                    return done;
                }
                _ => {}
            }
        }
        if stop.is_none() {
            std::hint::black_box(sink);
            return done;
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
}
