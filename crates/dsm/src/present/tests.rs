//! The DSM's text and HTML views against records made for each case.

use super::*;

/// A `dsm` summary record of `app` (2 ranks, T = 1) that ran `time` ns against a
/// sequential `seq` ns, as `dsm run` or `suite cvm` (`suite`) writes it.
fn summary(app: &str, time: f64, seq: f64, suite: bool) -> Record {
    let prov = numalab_results::Provenance::collect("test", "synthetic");
    let mut params = serde_json::json!({
        "app": app, "protocol": "lmwc", "threads": 1, "ranks": 2, "net_delay_ns": 0,
    });
    if suite {
        params[SUITE_PARAM] = "cvm".into();
    }
    let sum = crate::Stats {
        total_ns: 2 * time as u64,
        acquires: 40,
        remote_faults: 10,
        remote_fault_ns: 10 * 100_000,
        bytes: 40 * 4096,
        ..Default::default()
    };
    let mut r = Record::new("dsm", &format!("{app} lmwc T=1 ranks=2"), prov, params);
    r.set_data(&RunData {
        // A record from before the busiest rank was kept.
        per_interval: crate::experiment::PerInterval::of(
            &sum,
            &[sum.clone(), sum.clone()],
            Some(seq),
        )
        .map(|p| crate::experiment::PerInterval { busiest: None, ..p }),
        sum,
        time_ns: time,
        sequential_ns: Some(seq),
        speedup_vs_sequential: Some(seq / time),
        check: None,
        per_remote_fault_ns: Some(100_000.0),
        costs: None,
        cores_shared: None,
    });
    r
}

#[test]
fn a_run_slower_than_the_sequential_program_is_explained_in_text_and_html() {
    let slow = |suite| summary("water-nsq", 10e6, 3e6, suite);
    let fast = |suite| summary("sor", 1e6, 3e6, suite);
    let want = [
        "water-nsq lmwc T=1",
        ": speedup 0.30 < 1: per interval and rank ",
        " KiB sent, ",
        " round trips ≈ ",
        " µs of communication against ",
        " µs of sequential compute per interval (",
        "breaks even only under ",
    ];
    for suite in [false, true] {
        let text = DsmPresenter.text(&[slow(suite)]).unwrap();
        let line = text
            .lines()
            .find(|l| l.contains(": speedup 0.30 < 1"))
            .unwrap_or_else(|| panic!("no line for the slow run:\n{text}"));
        for part in want {
            assert!(line.contains(part), "{part}: {line}");
        }
        assert_eq!(text.contains(explain::TITLE), suite, "{text}");
        let text = DsmPresenter.text(&[fast(suite)]).unwrap();
        assert!(
            !text.contains("< 1:"),
            "a run faster than the sequential one: {text}"
        );
    }
    let html = DsmPresenter.html(&[slow(true), fast(true)]).unwrap();
    assert!(html.contains(explain::TITLE), "{html}");
    assert_eq!(html.matches("<li>").count(), 1, "only the slow run: {html}");
    assert!(
        html.contains("water-nsq lmwc T=1: speedup 0.30 &lt; 1: per interval"),
        "{html}"
    );
}

#[test]
fn a_sequential_reference_that_waited_for_a_cpu_is_named() {
    let check = |cpu| crate::experiment::Check {
        max_rel_diff: 0.0,
        tolerance: 0.0,
        sequential_ns: 10_000_000,
        sequential_cpu_ns: cpu,
        sequential_runs_ns: Vec::new(),
        sequential_moved: None,
    };
    assert_eq!(starved(None), "");
    // The runs the median is of, as their range; nothing from an older record.
    assert_eq!(runs(Some(&check(None))), "");
    let mut three = check(None);
    three.sequential_runs_ns = vec![125_000_000, 113_160_000, 118_490_000];
    assert_eq!(runs(Some(&three)), " (median of 3 runs, 113.16–125.00 ms)");
    assert_eq!(starved(Some(&check(None))), "");
    assert_eq!(starved(Some(&check(Some(9_000_000)))), "");
    let t = starved(Some(&check(Some(2_500_000))));
    assert!(t.contains("only 2.50 ms of it on a CPU"), "{t}");
    // A speedup above the rank count is said, one within it is not.
    assert!(beyond(Some(2.98), Some(2)).starts_with(" (above its 2 ranks: the host's speed moved"));
    assert_eq!(beyond(Some(2.1), Some(2)), "");
    assert_eq!(beyond(Some(5.0), Some(1)), "");
    assert_eq!(beyond(None, Some(2)), "");
    // Timed on another CPU than its rank's: said where and why.
    let mut c = check(Some(9_000_000));
    c.sequential_moved = Some(crate::reference::Moved {
        cpu: 1,
        from: 0,
        why: "100 % busy with another process (pid 4242 sh)".into(),
    });
    assert_eq!(
        starved(Some(&c)),
        " (timed on CPU 1: CPU 0 was 100 % busy with another process (pid 4242 sh))"
    );
}

#[test]
fn page_counts_of_one_read_in_the_singular() {
    // Every count the interval and prefetch lines print, at `n`.
    let counted = |n| crate::Stats {
        intervals: n,
        private_pages: n,
        remote_faults: n,
        prefetch_msgs: n,
        prefetched: n,
        prefetch_waits: n,
        touched_ahead: n,
        ahead_msgs: n,
        ..Default::default()
    };
    let one = counted(1);
    let t = interval_line(&one) + &prefetch_line(&one);
    assert!(
        t.contains("over 1 interval (the ranks' together); 1 page private"),
        "{t}"
    );
    assert!(
        t.contains("1 remote fault, 1 bulk prefetch bringing 1 page (1 fault waited"),
        "{t}"
    );
    assert!(
        t.contains(
            "1 read-ahead (a stride or a dense window) asking 1 page (0 nobody had touched)"
        ),
        "{t}"
    );
    let two = counted(2);
    let t = interval_line(&two) + &prefetch_line(&two);
    assert!(
        t.contains("over 2 intervals (the ranks' together); 2 pages private"),
        "{t}"
    );
    assert!(
        t.contains("2 remote faults, 2 bulk prefetches bringing 2 pages (2 faults waited"),
        "{t}"
    );
    assert!(
        t.contains("2 read-aheads (a stride or a dense window) asking 2 pages"),
        "{t}"
    );
}
