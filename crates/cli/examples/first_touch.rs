//! A small target for `numalab record`'s tests and overhead benchmark: the main
//! thread first-touches a buffer (so every page lands on its node), then worker
//! threads read it over and over — a memory-bound, multithreaded program.
//!
//! first_touch [MIB=64] [THREADS=2] [MS=600] [PASSES]
//!
//! With PASSES each reader makes exactly that many passes (fixed work, for timing
//! overhead) and MS is ignored; it prints the read phase's wall time.

use std::time::{Duration, Instant};

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("numbers: MIB THREADS MS"))
        .collect();
    let mib = *args.first().unwrap_or(&64) as usize;
    let threads = *args.get(1).unwrap_or(&2) as usize;
    let ms = *args.get(2).unwrap_or(&600);
    let fixed = args.get(3).copied().filter(|p| *p > 0);
    let words = mib << 17;
    // Written by this thread only: first touch places every page on its node.
    let buf: Vec<u64> = (0..words as u64).collect();
    let buf = std::sync::Arc::new(buf);
    let t0 = Instant::now();
    let until = t0 + Duration::from_millis(ms);
    let handles: Vec<_> = (0..threads)
        .map(|k| {
            let b = buf.clone();
            std::thread::Builder::new()
                .name(format!("reader{k}"))
                .spawn(move || {
                    let mut sum = 0u64;
                    let mut passes = 0u64;
                    while fixed.map_or(Instant::now() < until, |p| passes < p) {
                        // One word per line, a stride that defeats neither the prefetcher nor the bandwidth.
                        sum = b.iter().step_by(8).fold(sum, |s, x| s.wrapping_add(*x));
                        passes += 1;
                    }
                    (sum, passes)
                })
                .expect("spawn")
        })
        .collect();
    let mut passes = 0;
    for h in handles {
        passes += h.join().expect("join").1;
    }
    println!(
        "first_touch: {mib} MiB, {threads} threads, {passes} passes, read phase {:.3} ms",
        t0.elapsed().as_secs_f64() * 1e3
    );
}
