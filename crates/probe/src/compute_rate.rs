//! How long one iteration of the overlap table's computation takes on this thread
//! (the EARTH suite sizes its work from it): the suite asks, the timer runs here.

use crate::overlap;
use crate::Timer;

/// ns per iteration of [`overlap::compute`], from 2^20 iterations.
pub fn ns_per_iteration(timer: &Timer) -> f64 {
    let t0 = timer.start();
    overlap::compute(1 << 20);
    timer.ns(timer.stop() - t0) / (1 << 20) as f64
}
