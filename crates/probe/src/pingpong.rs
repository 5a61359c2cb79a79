//! Core-to-core ping-pong: two pinned threads hand a counter back and forth with
//! compare-and-swap on one cache line; a round trip moves the line there and back.

use crate::crew::{Crew, CrewResult, Member, Pass};
use crate::state::LineState;
use crate::timer::Timer;
use numalab_results::disturb::Disturbance;
use numalab_topo::bind::PinProof;
use numalab_topo::buffer::Buffer;
use numalab_topo::{Error, Host, Result};
use std::sync::atomic::{AtomicU64, Ordering};

/// Round-trip samples (ns per round trip) of one pair, with pinning proof.
#[derive(Debug, Clone)]
pub struct PingPong {
    /// ns per round trip, one per pass (timed on the initiator).
    pub rtt_ns: Vec<f64>,
    /// What disturbed each pass on either CPU (both sides' counts merged).
    pub disturb: Vec<Disturbance>,
    /// Pinning proof of initiator and responder.
    pub pins: Vec<PinProof>,
}

/// Time `round_trips` CAS round trips between CPUs `a` (initiator) and `b`, `samples`
/// times, on a line in `line_buf` (its first 64 bytes; bound where the caller wants).
pub fn ping_pong(
    host: &Host,
    timer: &Timer,
    a: u32,
    b: u32,
    line_buf: &Buffer,
    round_trips: u64,
    samples: usize,
) -> Result<PingPong> {
    if a == b {
        return Err(Error::bad(
            "CPU pair",
            format!("{a},{b}"),
            "two different CPUs",
        ));
    }
    // SAFETY: the buffer is at least a page, page-aligned, and lives through the crew.
    let flag: &AtomicU64 = unsafe { &*(line_buf.as_ptr() as *const AtomicU64) };
    let no_lines: [u32; 0] = [];
    let crew = Crew {
        host,
        timer,
        members: [a, b]
            .iter()
            .map(|&cpu| Member {
                cpu,
                base: line_buf.as_ptr(),
                lines: &no_lines,
                line: 64,
            })
            .collect(),
        helpers: Vec::new(),
        state: LineState::Warm,
        preread: false,
        evict_bytes: 0,
        first_stops: false,
    };
    let res = crew.run(samples, false, |i| {
        move |pass: &Pass| {
            // The warm-up call is short; timed calls do every round trip.
            let n = if pass.timed {
                round_trips
            } else {
                round_trips.min(1000)
            };
            hand_over(flag, i, n);
            // The responder's work is not timed meaningfully; the initiator's is.
            n
        }
    })?;
    Ok(round_trips_of(timer, res))
}

/// One pass of side `i` (0: the initiator, which resets the flag first): `n` round
/// trips of the counter in `flag`, by compare-and-swap.
fn hand_over(flag: &AtomicU64, i: usize, n: u64) {
    if i == 0 {
        flag.store(0, Ordering::SeqCst);
    }
    // Initiator moves 2k -> 2k+1, responder 2k+1 -> 2k+2; both stop after n.
    let (mine, last) = if i == 0 {
        (0u64, 2 * n - 2)
    } else {
        (1u64, 2 * n - 1)
    };
    let mut want = mine;
    loop {
        if flag
            .compare_exchange(want, want + 1, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            if want >= last {
                break;
            }
            want += 2;
        }
        // No pause between attempts: the usual CAS ping-pong (as the
        // core-to-core tools run it) retries at once.
    }
}

/// The round trips of a crew's passes, timed on the initiator.
fn round_trips_of(timer: &Timer, res: CrewResult) -> PingPong {
    // Both start on the crew's barrier; the initiator's time covers n round trips
    // (its last CAS needs the responder's answer to the previous one).
    let rtt_ns = res.samples[0]
        .iter()
        .map(|t| timer.ns(t.ticks) / t.units as f64)
        .collect();
    // A round trip needs both threads: a pass is disturbed if either side was.
    let mut disturb = res.disturb[0].clone();
    for (d, o) in disturb.iter_mut().zip(&res.disturb[1]) {
        d.merge(o);
    }
    PingPong {
        rtt_ns,
        disturb,
        pins: res.pins,
    }
}

/// Round trips per sample of [`distance`]: 100 round trips of 20–600 ns is 2–60 µs a
/// sample, long enough that the timer's resolution does not matter, short enough
/// that most samples fall between two interruptions.
pub const DISTANCE_ROUND_TRIPS: u64 = 100;

/// Samples of [`distance`]; the least is kept (a sample can only be made longer by
/// what else runs, never shorter than the round trip).
pub const DISTANCE_SAMPLES: usize = 9;

/// How far apart CPUs `a` and `b` are now: the least of [`DISTANCE_SAMPLES`] CAS
/// ping-pongs of [`DISTANCE_ROUND_TRIPS`] round trips, on the first line of `line_buf`
/// (a probe of some tens of µs, recorded beside a figure that needs both CPUs).
pub fn distance(
    host: &Host,
    timer: &Timer,
    a: u32,
    b: u32,
    line_buf: &Buffer,
) -> Result<numalab_results::distance::CpuDistance> {
    let pp = ping_pong(
        host,
        timer,
        a,
        b,
        line_buf,
        DISTANCE_ROUND_TRIPS,
        DISTANCE_SAMPLES,
    )?;
    let least = pp
        .rtt_ns
        .iter()
        .copied()
        .filter(|x| x.is_finite() && *x > 0.0)
        .fold(f64::INFINITY, f64::min);
    Ok(numalab_results::distance::CpuDistance {
        cpus: [a, b],
        rtt_ns: if least.is_finite() { least } else { f64::NAN },
        samples: pp.rtt_ns.len(),
        round_trips: DISTANCE_ROUND_TRIPS,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_topo::plan::resolve_memory;
    use numalab_topo::{MemSpec, PageSize, TopologySource};

    #[test]
    fn a_distance_names_its_pair_and_keeps_the_least_of_its_samples() {
        let host = Host::load(&TopologySource::ThisSystem).unwrap();
        let m = &host.machine;
        let mem =
            resolve_memory(m, &MemSpec::Node(m.memory_nodes()[0]), PageSize::Base, &[]).unwrap();
        let buf = Buffer::allocate(&host, &mem, 4096).unwrap();
        let timer = Timer::best();
        let (a, b) = (m.pus[0].os, m.pus.last().unwrap().os);
        if a == b {
            // One CPU: there is no pair, and the probe refuses it.
            assert!(distance(&host, &timer, a, b, &buf).is_err());
            return;
        }
        let d = distance(&host, &timer, a, b, &buf).unwrap();
        assert_eq!(d.cpus, [a, b]);
        assert_eq!(
            (d.samples, d.round_trips),
            (DISTANCE_SAMPLES, DISTANCE_ROUND_TRIPS)
        );
        assert!(d.rtt_ns.is_finite() && d.rtt_ns > 0.0, "{d:?}");
        assert!(distance(&host, &timer, a, a, &buf).is_err());
    }
}
