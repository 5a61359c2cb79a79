//! Timing a call made many times in a row on this thread (the EARTH suite's local
//! calls, spawns and requests through a helper): the suite builds the call, this times it.

use crate::Timer;

/// Time `n` calls of `f` per pass on this thread, ns per call.
pub fn per_call(timer: &Timer, it: usize, n: usize, mut f: impl FnMut(usize)) -> Vec<f64> {
    f(0);
    (0..it)
        .map(|_| {
            let t0 = timer.start();
            for i in 0..n {
                f(i);
            }
            timer.ns(timer.stop() - t0) / n as f64
        })
        .collect()
}
