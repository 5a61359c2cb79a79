//! The bytes each survey step maps and touches for the first time, and what a first
//! touch costs on this machine now.
//!
//! Every step is its own process, so every buffer it uses is new memory: each 4 KiB
//! page costs a page fault, the kernel zeroing it and, in a guest, often the host
//! backing it. On the 2-vCPU Emerald Rapids guest that cost moved between 1.5 and
//! 11.7 µs a page within a day (the unowned chase's 4 GiB: 3.4 s one hour, 13.9 s
//! another, 1.07 M faults each), while the calibration's chase and stream, which touch
//! a few MiB, read the same pace both times: quick surveys then ran 8–79 % over their
//! plan. The pace therefore charges each step for its pages at the cost measured at
//! start ([`first_touch_s`]), apart from the CPU pace.
//!
//! The bytes are what the step's buffers come to, from the same sizing the experiments
//! use; counted against the steps' minor faults on that guest (quick survey, each
//! step record's `minor_faults`): sweep 4K–64M 0.47 GiB (124 K faults), unowned chase 4 GiB (1.07 M),
//! the one-thread kernels 6.5 GiB (1.70 M), the injection table 7.1 GiB (1.87 M), the
//! all-thread kernels 5.2 GiB (1.37 M), a scaling row 1.1 GiB (0.28 M), the loaded
//! family 1.1 GiB (0.29 M). Steps not counted here (c2c, line states, matrices of
//! small buffers, the seed studies) touch little beside their time.

use super::cap::{given, ALL_KERNELS};
use super::experiment::Experiment;
use numalab_bench::{bandwidth, sizing, sweep};
use numalab_topo::spec::parse_size;
use numalab_topo::Machine;
use std::time::Instant;

/// Bytes of the first-touch sample: enough pages (16 K) for a stable per-page time,
/// few enough to cost 25–200 ms at 1.5–12 µs a page.
pub const SAMPLE_BYTES: usize = 64 << 20;

const PAGE: usize = 4096;

/// Bytes step `e` maps and touches on `m` (0 for steps of small buffers).
pub fn bytes(m: &Machine, e: &Experiment) -> u64 {
    match e {
        Experiment::Latency(o) => match &o.sweep {
            Some(range) => {
                let (lo, hi) = numalab_bench::latency::parse_sweep_range(range)
                    .unwrap_or((sweep::DEFAULT_MIN, sweep::DEFAULT_MAX));
                // Sizes within the last-level cache are measured in two rounds, each
                // its own buffer (quick sweep: 224 MiB of sizes, 487 MiB of faults).
                let llc = m.last_level_cache().map_or(0, |c| c.bytes);
                let sizes = sweep::sizes(lo, hi);
                let again: u64 = sizes.iter().filter(|&&b| b <= llc).sum();
                sizes.iter().sum::<u64>() + again
            }
            None if o.state == "uown" => given(&o.size, sizing::flushed_chase(m)),
            None if o.state == "warm" => given(&o.size, sizing::beyond_caches(m)),
            None => 0,
        },
        Experiment::Bandwidth(o) => bandwidth_bytes(m, o),
        Experiment::Loaded(o) => {
            let stream = sizing::streaming(m, 1);
            let injectors = m.pus.len().saturating_sub(1) as u64;
            let inject = o
                .inject_size
                .as_deref()
                .and_then(|s| parse_size(s).ok())
                .map_or(stream, |b| b.saturating_mul(injectors));
            given(&o.size, stream).saturating_add(inject)
        }
        _ => 0,
    }
}

/// A bandwidth step: each streaming kernel (or mix) fills its requestors' buffers,
/// all of them together the streaming size; the injection table does so per mix and
/// memory node; the in-cache kernels (rdex, upgrade) touch a private cache's worth.
fn bandwidth_bytes(m: &Machine, o: &bandwidth::Options) -> u64 {
    let n = o.crew.count.unwrap_or(1).max(1);
    let each = given(&o.size, sizing::streaming(m, n)).saturating_mul(n as u64);
    if o.injection {
        return each.saturating_mul(7 * m.memory_nodes().len().max(1) as u64);
    }
    if o.mix.is_some() {
        return each;
    }
    let kernels: Vec<&str> = if o.kernel == "all" {
        ALL_KERNELS.to_vec()
    } else {
        o.kernel.split(',').collect()
    };
    let streaming = kernels
        .iter()
        .filter(|k| !matches!(**k, "rdex" | "upgrade"))
        .count() as u64;
    each.saturating_mul(streaming)
}

/// Seconds a first touch of one 4 KiB page takes now: a fresh private mapping of
/// [`SAMPLE_BYTES`] (4 KiB pages, as the steps' default) written once a page, on
/// `cpu` when given (the CPU the single-CPU steps use); None when it cannot be mapped.
pub fn first_touch_s(cpu: Option<u32>) -> Option<f64> {
    std::thread::spawn(move || {
        if let Some(c) = cpu {
            pin(c);
        }
        sample()
    })
    .join()
    .ok()
    .flatten()
}

/// Pins the calling thread to `cpu` (best effort: unpinned, the sample still runs).
fn pin(cpu: u32) {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes inside it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu as usize, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Maps, touches and unmaps the sample; seconds per page.
fn sample() -> Option<f64> {
    let len = SAMPLE_BYTES;
    // SAFETY: a fresh anonymous private mapping, written only inside its length and
    // unmapped before returning.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return None;
        }
        // 4 KiB pages, as a step's buffer gets by default: a huge page would fault once
        // for 512 of them.
        libc::madvise(p, len, libc::MADV_NOHUGEPAGE);
        let base = p as *mut u8;
        let t = Instant::now();
        for off in (0..len).step_by(PAGE) {
            std::ptr::write_volatile(base.add(off), 1);
        }
        let s = t.elapsed().as_secs_f64();
        libc::munmap(p, len);
        Some(s / (len / PAGE) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_bench::latency;

    fn guest() -> Machine {
        numalab_topo::Host::load(&numalab_topo::TopologySource::Synthetic(
            "pack:1 l3:1 core:2 pu:1".into(),
        ))
        .expect("synthetic topology")
        .machine
    }

    #[test]
    fn the_steps_bytes_follow_their_buffers() {
        let m = guest();
        let stream = sizing::streaming(&m, 1);
        let sweep = |r: &str| {
            bytes(
                &m,
                &Experiment::Latency(latency::Options {
                    sweep: Some(r.into()),
                    ..Default::default()
                }),
            )
        };
        // Sum of the sweep's sizes: the full sweep touches more than 1 GiB.
        assert!(sweep("4K-1G") > 1 << 30 && sweep("4K-64M") < 1 << 30);
        let uown = Experiment::Latency(latency::Options {
            state: "uown".into(),
            ..Default::default()
        });
        assert_eq!(bytes(&m, &uown), sizing::flushed_chase(&m));
        let capped = Experiment::Latency(latency::Options {
            state: "uown".into(),
            size: Some("4M".into()),
            ..Default::default()
        });
        assert_eq!(bytes(&m, &capped), 4 << 20);
        // Six streaming kernels of "all"; the in-cache ones add nothing.
        let all = Experiment::Bandwidth(bandwidth::Options {
            kernel: "all".into(),
            ..Default::default()
        });
        assert_eq!(bytes(&m, &all), 6 * stream);
        let inj = Experiment::Bandwidth(bandwidth::Options {
            injection: true,
            ..Default::default()
        });
        assert_eq!(bytes(&m, &inj), 7 * stream);
        let cexh = Experiment::Latency(latency::Options {
            state: "cexh".into(),
            ..Default::default()
        });
        assert_eq!(bytes(&m, &cexh), 0);
        assert_eq!(bytes(&m, &Experiment::Topo), 0);
    }

    #[test]
    fn a_first_touch_takes_a_positive_time() {
        let s = first_touch_s(Some(0)).expect("a 64 MiB mapping");
        // Only that it is a time: no bound on a machine whose speed is unknown.
        assert!(s > 0.0 && s.is_finite(), "{s}");
    }
}
