//! Why a run is slower than the sequential program, in one line per run, from what the
//! record measured: an interval's communication (bytes, round trips and their time at
//! the run's remote-fault latency) against the sequential compute the ranks split
//! between two synchronizations.

use crate::experiment::PerInterval;

/// The heading above the lines in `suite cvm`'s text.
pub(super) const TITLE: &str =
    "Runs slower than the sequential program: communication per interval and rank against the sequential compute per interval (measured)";

/// The line for run `name` at `speedup` (as shown); with n ranks the run can beat the
/// sequential program only where an interval's communication takes under (1 − 1/n) of
/// its compute.
pub(super) fn line(name: &str, speedup: &str, p: Option<&PerInterval>) -> String {
    let head = format!("{name}: speedup {speedup} < 1");
    let Some(p) = p else {
        return format!("{head}: no interval measured (no rank acquired)");
    };
    let us = |v: f64| format!("{:.0} µs", v / 1e3);
    let comm = p.round_trip_ns.map_or(
        "(µs not measured: no remote fault timed)".to_string(),
        |ns| format!("≈ {} of communication", us(ns)),
    );
    let mut s = format!(
        "{head}: per interval and rank {:.1} KiB sent, {:.1} round trips {comm}",
        p.bytes / 1024.0,
        p.round_trips,
    );
    if p.ranks < 2 {
        // One rank does all the work plus the DSM's bookkeeping: no interval can pay.
        s.push_str(" (one rank: it does all the work and the DSM's bookkeeping, so it cannot beat the sequential program)");
    } else if let Some(q) = p.sequential_ns {
        let room = q * (1.0 - 1.0 / p.ranks as f64);
        s.push_str(&format!(
            " against {} of sequential compute per interval ({:.0} intervals; on {} ranks it breaks even only under {} of communication)",
            us(q),
            p.intervals_per_rank,
            p.ranks,
            us(room)
        ));
        if p.round_trip_ns.is_some_and(|c| c < room) {
            s.push_str(&elsewhere(p, q * p.intervals_per_rank));
        }
    }
    s
}

/// Where a run whose communication fits its intervals lost its time: the rank the run
/// waited for, its application part against its share of the sequential program `seq`.
fn elsewhere(p: &PerInterval, seq: f64) -> String {
    let Some(b) = &p.busiest else {
        return String::new();
    };
    let ms = |v: u64| format!("{:.1} ms", v as f64 / 1e6);
    let cpu = if b.compute_cpu_ns > 0 {
        format!(
            "; its compute thread was on a CPU for {} of the run's {}",
            ms(b.compute_cpu_ns),
            ms(b.total_ns)
        )
    } else {
        String::new()
    };
    format!(
        "; that fits, so the time went elsewhere: rank {}'s application part took {} against {} (the sequential program ÷ {}){cpu}, its service thread handling messages for {}",
        b.rank,
        ms(b.app_ns),
        ms((seq / p.ranks as f64) as u64),
        p.ranks,
        ms(b.io_ns)
    )
}

/// Where the ranks' CPU time went over the parallel section: the compute threads'
/// CPU time against their wall time (the rest they waited or were preempted) and the
/// service threads' (empty for records from before it was measured).
pub(super) fn cpu_line(s: &crate::Stats) -> String {
    if s.compute_cpu_ns == 0 {
        return String::new();
    }
    let ms = |v: u64| format!("{:.2} ms", v as f64 / 1e6);
    format!(
        "CPU time (the ranks' together): compute threads {} of {} ({:.0} %), service threads {}\n",
        ms(s.compute_cpu_ns),
        ms(s.total_ns),
        100.0 * s.compute_cpu_ns as f64 / s.total_ns.max(1) as f64,
        ms(s.service_cpu_ns)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn per(rt: Option<f64>) -> PerInterval {
        PerInterval {
            ranks: 2,
            intervals_per_rank: 30.0,
            bytes: 2048.0,
            round_trips: 3.0,
            faults: 4.0,
            mprotects: 5.0,
            sequential_ns: Some(100_000.0),
            round_trip_ns: rt,
            busiest: Some(crate::stats::Busiest {
                rank: 1,
                app_ns: 4_500_000,
                io_ns: 700_000,
                total_ns: 6_000_000,
                compute_cpu_ns: 2_900_000,
            }),
        }
    }

    #[test]
    fn the_line_names_every_part_on_one_line() {
        let l = line("water-nsq lmwc T=1", "0.20", Some(&per(Some(300_000.0))));
        assert!(
            l.starts_with("water-nsq lmwc T=1: speedup 0.20 < 1: "),
            "{l}"
        );
        for part in [
            "2.0 KiB sent",
            "3.0 round trips",
            "≈ 300 µs of communication",
            "against 100 µs of sequential compute per interval (30 intervals",
            "on 2 ranks it breaks even only under 50 µs",
        ] {
            assert!(l.contains(part), "{part}: {l}");
        }
        assert!(!l.contains('\n'));
    }

    #[test]
    fn communication_that_fits_names_the_rank_the_run_waited_for() {
        // 30 µs of round trips fit the 50 µs of room: the line says where time went.
        let l = line("barnes lmwc T=1", "0.60", Some(&per(Some(30_000.0))));
        assert!(
            l.ends_with("; that fits, so the time went elsewhere: rank 1's application part took 4.5 ms against 1.5 ms (the sequential program ÷ 2); its compute thread was on a CPU for 2.9 ms of the run's 6.0 ms, its service thread handling messages for 0.7 ms"),
            "{l}"
        );
        // Without the CPU time (not measured), the clause about it is left out.
        let mut unmeasured = per(Some(30_000.0));
        unmeasured.busiest.as_mut().unwrap().compute_cpu_ns = 0;
        let l = line("barnes lmwc T=1", "0.60", Some(&unmeasured));
        assert!(
            l.ends_with(
                "(the sequential program ÷ 2), its service thread handling messages for 0.7 ms"
            ),
            "{l}"
        );
        // Past the room the communication is the reason, and nothing more is said.
        let l = line("barnes lmwc T=1", "0.60", Some(&per(Some(300_000.0))));
        assert!(!l.contains("elsewhere"), "{l}");
        let older = PerInterval {
            busiest: None,
            ..per(Some(30_000.0))
        };
        let l = line("barnes lmwc T=1", "0.60", Some(&older));
        assert!(l.ends_with("under 50 µs of communication)"), "{l}");
    }

    #[test]
    fn cpu_time_is_said_only_where_measured() {
        assert_eq!(cpu_line(&crate::Stats::default()), "");
        let s = crate::Stats {
            total_ns: 4_000_000,
            compute_cpu_ns: 3_000_000,
            service_cpu_ns: 500_000,
            ..Default::default()
        };
        assert_eq!(
            cpu_line(&s),
            "CPU time (the ranks' together): compute threads 3.00 ms of 4.00 ms (75 %), service threads 0.50 ms\n"
        );
    }

    #[test]
    fn one_rank_is_said_to_be_unable_to_beat_the_sequential_program() {
        let p = PerInterval {
            ranks: 1,
            ..per(Some(100e3))
        };
        let l = line("sor lmwc T=1 ranks=1", "0.90", Some(&p));
        assert!(l.contains("one rank"), "{l}");
        assert!(!l.contains("breaks even"), "{l}");
    }

    #[test]
    fn a_run_without_timed_faults_or_intervals_says_so() {
        let l = line("ocean lmw T=1", "0.50", Some(&per(None)));
        assert!(
            l.contains("(µs not measured: no remote fault timed)"),
            "{l}"
        );
        let l = line("ocean lmw T=1", "0.50", None);
        assert!(
            l.ends_with("no interval measured (no rank acquired)"),
            "{l}"
        );
    }
}
