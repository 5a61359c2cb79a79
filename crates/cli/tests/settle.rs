//! Every figure settles or says it did not. The disturbance is provoked, never
//! timed: a busy loop pinned on the CPU the measurement is pinned to (or a cgroup
//! CPU quota where /sys/fs/cgroup is writable). Whatever the scheduler does, each
//! record has a settle entry, an unsettled one says why, and its table row says
//! "unsettled" — never whether a figure settled.

mod common;

use common::busy::{first_cpu, spinner};
use common::{bad_input, bounded, numalab, tmpdir};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Runs numalab beside a busy loop on the measuring CPU: its text, and its records
/// (written with -o by the same run).
fn beside_a_busy_loop(tag: &str, args: &[&str]) -> (String, Vec<Value>) {
    let dir = tmpdir(tag);
    let file = dir.join("r.json");
    let cpu = first_cpu().to_string();
    let mut a = args.to_vec();
    a.extend(["--cpu", &cpu, "-o", file.to_str().unwrap()]);
    let stop = Arc::new(AtomicBool::new(false));
    let spin = spinner(first_cpu(), stop.clone());
    let out = bounded("300", &a, &[]);
    stop.store(true, Ordering::Relaxed);
    spin.join().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {err}");
    let recs: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (text, recs.as_array().unwrap().clone())
}

/// Each record settled or says why; an unsettled one is marked in the text.
fn settled_or_says_why(text: &str, recs: &[Value], metric: &str) {
    assert!(!recs.is_empty());
    for r in recs {
        let s = &r["settle"];
        let name = r["name"].as_str().unwrap();
        assert_eq!(s["metric"], metric, "{name}: {s}");
        assert!(s["passes"].as_u64() >= Some(3), "{name}: {s}");
        assert!(s["budget_ms"].as_f64() > Some(0.0), "{name}: {s}");
        let (lo, hi) = (s["interval"][0].as_f64(), s["interval"][1].as_f64());
        assert!(lo.is_some() && lo <= hi, "{name}: {s}");
        match s["settled"].as_bool() {
            Some(true) => assert!(s["why"].is_null(), "{name}: {s}"),
            Some(false) => {
                let why = s["why"].as_str().unwrap_or_default();
                assert!(why.starts_with("machine busy: "), "{name}: {s}");
                assert!(
                    text.contains("unsettled*"),
                    "{name} unsettled, not shown: {text}"
                );
                assert!(
                    text.contains(&format!("unsettled* {name}: {metric} not within")),
                    "{name}: no line saying why: {text}"
                );
            }
            None => panic!("{name}: no settle entry: {r}"),
        }
        // Every pass is kept, disturbed and measured-again ones included.
        let passes = r["data"]["disturbance"]["passes"].as_array().unwrap();
        assert_eq!(passes.len() as u64, s["passes"].as_u64().unwrap(), "{name}");
    }
}

#[test]
fn latency_beside_a_busy_loop_settles_or_says_it_did_not() {
    // 8 MiB: a pass of 2^20 loads takes milliseconds, several scheduler slices.
    let args = [
        "latency",
        "--size",
        "8M",
        "--iterations",
        "3",
        "--noise-budget",
        "200ms",
    ];
    let (text, recs) = beside_a_busy_loop("settle-lat", &args);
    settled_or_says_why(&text, &recs, "latency");
}

#[test]
fn bandwidth_beside_a_busy_loop_settles_or_says_it_did_not() {
    let args = [
        "bandwidth",
        "--size",
        "8M",
        "--iterations",
        "3",
        "--noise-budget",
        "300ms",
        "--tolerance",
        "2",
    ];
    let (text, recs) = beside_a_busy_loop("settle-bw", &args);
    assert_eq!(recs[0]["settle"]["tolerance_pct"], 2.0);
    settled_or_says_why(&text, &recs, "bandwidth");
}

#[test]
fn a_bad_budget_or_tolerance_is_one_line_and_exit_2() {
    for cmd in ["latency", "bandwidth"] {
        for (opt, bad) in [
            ("--noise-budget", "0"),
            ("--noise-budget", "-5ms"),
            ("--noise-budget", "NaNs"),
            ("--noise-budget", "5"),
            ("--noise-budget", "2h"),
            ("--tolerance", "0"),
            ("--tolerance", "-3"),
            ("--tolerance", "NaN"),
            ("--tolerance", "1000"),
        ] {
            bad_input(
                &numalab(&[cmd, opt, bad]),
                &[&format!("invalid {opt} '{bad}'")],
                &format!("{cmd} {opt} {bad}"),
            );
        }
    }
}

/// c2c, invalidate and intervene: every measured record has a settle entry of one of
/// its figures, and an unsettled one is marked in the text with a line saying why.
#[test]
fn c2c_invalidate_and_intervene_settle_or_say_they_did_not() {
    for (args, metrics) in [
        (
            vec!["c2c", "--noise-budget", "200ms"],
            &["cas_rtt_half", "modified_read"][..],
        ),
        (
            vec!["invalidate", "--noise-budget", "200ms", "--tolerance", "5"],
            &[
                "rdex_latency",
                "upgrade_latency",
                "rdex_bandwidth",
                "upgrade_bandwidth",
                "zero_bandwidth",
                "uown_rdex_latency",
            ][..],
        ),
        (
            vec![
                "intervene",
                "--states",
                "cexm,dexd",
                "--noise-budget",
                "200ms",
            ],
            &["latency"][..],
        ),
    ] {
        let dir = tmpdir(&format!("settle-{}", args[0]));
        let file = dir.join("r.json");
        let mut a = args.clone();
        a.extend(["-o", file.to_str().unwrap()]);
        let out = bounded("300", &a, &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {err}");
        let text = String::from_utf8_lossy(&out.stdout);
        let recs: Vec<Value> = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        let measured: Vec<&Value> = recs
            .iter()
            .filter(|r| !r["stats"].as_array().unwrap().is_empty())
            .collect();
        assert!(!measured.is_empty(), "{args:?}");
        for r in measured {
            let (s, name) = (&r["settle"], r["name"].as_str().unwrap());
            let metric = s["metric"].as_str().unwrap_or_default();
            assert!(metrics.contains(&metric), "{args:?} {name}: {s}");
            assert_eq!(s["budget_ms"].as_f64(), Some(200.0), "{name}: {s}");
            if s["settled"] == false {
                assert!(text.contains("unsettled*"), "{name}: {text}");
                assert!(
                    text.contains(&format!("unsettled* {name}: {metric} not within")),
                    "{name}: no line saying why: {text}"
                );
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
