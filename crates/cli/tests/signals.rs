//! SIGINT, SIGTERM and SIGHUP end a measuring command with 128 + the signal and keep
//! what it measured (issue 40 item 10): a sweep's finished sizes, `suite earth`'s
//! finished parts, the survey's steps; `record` passes the signal on to its target and
//! `monitor` ends its trace with an end entry. Every run is bounded; no test relies on
//! a fixed short sleep: a run signalled before anything finished is tried again with
//! twice the wait, and the survey, `record` and `monitor` wait for their files to show
//! progress.

mod common;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn spawn(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start numalab")
}

/// The pids whose parent is `pid`.
fn children(pid: u32) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|s| {
                    s.rsplit_once(')')?
                        .1
                        .split_whitespace()
                        .nth(1)?
                        .parse()
                        .ok()
                })
                == Some(pid)
        })
        .collect()
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit(')').next().map(|r| r.trim_start().to_string()))
        .is_some_and(|r| !r.starts_with('Z'))
}

/// Send `sig` and wait at most `limit`; a run still going then is killed (with its
/// children) and fails the test. No process it started may outlive it.
fn signal_and_finish(mut job: Child, sig: i32, limit: Duration) -> Output {
    let kids = children(job.id());
    // SAFETY: signalling the process this test started.
    unsafe { libc::kill(job.id() as i32, sig) };
    let t = Instant::now();
    while job.try_wait().unwrap().is_none() {
        if t.elapsed() > limit {
            let _ = job.kill();
            for k in &kids {
                // SAFETY: ending processes this test's run started.
                unsafe { libc::kill(*k, libc::SIGKILL) };
            }
            panic!("still running {} s after signal {sig}", limit.as_secs());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = job.wait_with_output().unwrap();
    let t = Instant::now();
    while kids.iter().any(|&k| alive(k)) && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    for &k in &kids {
        assert!(!alive(k), "child {k} outlived the run");
    }
    out
}

/// Run `args -o OUT` and send `sig` after a wait, doubled until some part had finished
/// when it came; then the records in OUT, each marked interrupted.
fn interrupted(tag: &str, args: &[&str], sig: i32) -> Vec<serde_json::Value> {
    let out_file = common::tmpdir(tag).join("out.json");
    let mut wait = Duration::from_secs(2);
    loop {
        let _ = std::fs::remove_file(&out_file);
        let mut all = args.to_vec();
        all.extend(["-o", out_file.to_str().unwrap()]);
        let job = spawn(&all);
        std::thread::sleep(wait);
        let out = signal_and_finish(job, sig, Duration::from_secs(60));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(128 + sig), "{args:?}: {err}");
        if err.contains("nothing had finished, so no records were written") {
            assert!(!out_file.exists(), "{args:?}: a file with nothing in it");
            wait *= 2;
            assert!(
                wait < Duration::from_secs(200),
                "{args:?}: nothing ever finished"
            );
            continue;
        }
        assert!(
            err.contains(
                "records of the parts that had finished were written, each marked interrupted"
            ),
            "{args:?}: {err}"
        );
        let text = std::fs::read_to_string(&out_file).unwrap();
        let recs: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
        common::validate(text.as_bytes());
        assert!(!recs.is_empty());
        for r in &recs {
            let w = r["warnings"].as_array().unwrap();
            assert!(
                w.iter()
                    .any(|w| w.as_str().unwrap().starts_with("interrupted: ")),
                "{args:?}: {r}"
            );
        }
        return recs;
    }
}

#[test]
fn a_sweep_keeps_its_finished_sizes_on_each_signal() {
    for (sig, tag) in [
        (libc::SIGINT, "int"),
        (libc::SIGTERM, "term"),
        (libc::SIGHUP, "hup"),
    ] {
        let recs = interrupted(&format!("sweep-{tag}"), &["latency", "--sweep"], sig);
        assert!(recs.iter().all(|r| r["kind"] == "latency"), "{recs:?}");
    }
}

#[test]
fn suite_earth_keeps_its_finished_parts() {
    let recs = interrupted("earth-term", &["suite", "earth"], libc::SIGTERM);
    assert!(!recs.is_empty());
}

/// Wait until `file` holds at least `lines` lines (progress a run wrote), at most 5 min.
fn wait_for_lines(file: &Path, lines: usize) {
    let t = Instant::now();
    while std::fs::read_to_string(file).map_or(0, |s| s.lines().count()) < lines {
        assert!(
            t.elapsed() < Duration::from_secs(300),
            "{} never grew",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn the_survey_on_sigterm_writes_its_files_and_keeps_its_journal() {
    let dir = common::tmpdir("survey-term").join("s");
    let job = spawn(&["survey", "--quick", "-o", dir.to_str().unwrap()]);
    // The header and one finished step.
    wait_for_lines(&dir.join("journal.jsonl"), 2);
    let out = signal_and_finish(job, libc::SIGTERM, Duration::from_secs(120));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{err}");
    assert!(err.contains("measured before SIGTERM"), "{err}");
    let recs: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    assert!(!recs.as_array().unwrap().is_empty());
    assert!(dir.join("report.html").is_file() && dir.join("journal.jsonl").is_file());
}

#[test]
fn record_passes_sigterm_to_its_target_and_ends_the_trace() {
    let trace = common::tmpdir("record-term").join("t.trace");
    let job = spawn(&[
        "record",
        "-i",
        "50",
        "-o",
        trace.to_str().unwrap(),
        "--",
        "sleep",
        "600",
    ]);
    wait_for_lines(&trace, 3);
    let target = children(job.id());
    let out = signal_and_finish(job, libc::SIGTERM, Duration::from_secs(60));
    let err = String::from_utf8_lossy(&out.stderr);
    // numalab record exits with its target's status: killed by SIGTERM.
    assert_eq!(out.status.code(), Some(143), "{err}");
    assert!(
        target.iter().all(|&p| !alive(p)),
        "the target was left running"
    );
    let text = std::fs::read_to_string(&trace).unwrap();
    let end: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(
        (end["type"].as_str(), end["signal"].as_i64()),
        (Some("end"), Some(15)),
        "{end}"
    );
}

#[test]
fn monitor_on_sighup_ends_its_trace_with_an_end_entry() {
    let trace = common::tmpdir("monitor-hup").join("m.trace");
    let job = spawn(&["monitor", "-i", "50", "-o", trace.to_str().unwrap()]);
    wait_for_lines(&trace, 3);
    let out = signal_and_finish(job, libc::SIGHUP, Duration::from_secs(60));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(129), "{err}");
    let text = std::fs::read_to_string(&trace).unwrap();
    let end: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(end["type"], "end", "{end}");
    assert_eq!(end["reason"], "interrupted by SIGHUP", "{end}");
}

/// Run `args(scale)` with `-o OUT` and `NUMALAB_PARTIAL` naming a file the run appends
/// each finished part to; once that file holds a part (polled, however slow the
/// machine), send `sig`. A run that ended before the signal came is tried again with
/// twice the work. The records in OUT, each marked interrupted.
fn interrupted_after_a_part(
    tag: &str,
    args: impl Fn(usize) -> Vec<String>,
    sig: i32,
) -> Vec<serde_json::Value> {
    let dir = common::tmpdir(tag);
    let (out_file, parts) = (dir.join("out.json"), dir.join("parts.jsonl"));
    for scale in [1, 2, 4, 8] {
        let _ = std::fs::remove_file(&out_file);
        let _ = std::fs::remove_file(&parts);
        let mut all = args(scale);
        all.extend(["-o".into(), out_file.to_str().unwrap().into()]);
        let job = Command::new(env!("CARGO_BIN_EXE_numalab"))
            .args(&all)
            .env("NUMALAB_PARTIAL", &parts)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start numalab");
        wait_for_lines(&parts, 1);
        let out = signal_and_finish(job, sig, Duration::from_secs(60));
        let err = String::from_utf8_lossy(&out.stderr);
        if out.status.success() {
            // It finished between the part and the signal: more work, then.
            continue;
        }
        assert_eq!(out.status.code(), Some(128 + sig), "{all:?}: {err}");
        assert!(
            err.contains(
                "records of the parts that had finished were written, each marked interrupted"
            ),
            "{all:?}: {err}"
        );
        let text = std::fs::read_to_string(&out_file).unwrap();
        common::validate(text.as_bytes());
        let recs: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
        assert!(!recs.is_empty());
        for r in &recs {
            let w = r["warnings"].as_array().unwrap();
            assert!(
                w.iter()
                    .any(|w| w.as_str().unwrap().starts_with("interrupted: ")),
                "{all:?}: {r}"
            );
        }
        return recs;
    }
    panic!("{tag}: every run ended before its signal, even with 8 times the work");
}

/// Long parts: a tolerance no figure meets, so each adds passes up to its pass limit.
fn strings(v: &[&str], iterations: usize) -> Vec<String> {
    let mut a: Vec<String> = v.iter().map(|s| s.to_string()).collect();
    a.extend(
        [
            "--iterations",
            &iterations.to_string(),
            "--noise-budget",
            "60s",
            "--tolerance",
            "0.01",
        ]
        .map(String::from),
    );
    a
}

#[test]
fn c2c_keeps_its_finished_pairs_and_figures_on_sigint() {
    let args = |k| {
        strings(
            &["c2c", "--round-trips", "2000", "--read-size", "1M"],
            50 * k,
        )
    };
    let recs = interrupted_after_a_part("c2c-int", args, libc::SIGINT);
    assert!(recs.iter().all(|r| r["kind"] == "c2c"), "{recs:?}");
    for r in &recs {
        // A pair kept after its CAS figures, or after both: each settled or says why.
        assert!(r["stats"][0]["metric"] == "cas_rtt_half", "{r}");
        assert!(r["settle"]["settled"].is_boolean(), "{r}");
    }
}

#[test]
fn invalidate_keeps_its_finished_figures_on_sigterm() {
    let recs = interrupted_after_a_part(
        "inv-term",
        |k| strings(&["invalidate"], 50 * k),
        libc::SIGTERM,
    );
    assert!(recs.iter().all(|r| r["kind"] == "invalidate"), "{recs:?}");
    let first = &recs[0];
    assert_eq!(first["stats"][0]["metric"], "rdex_latency", "{first}");
    assert!(first["settle"]["settled"].is_boolean(), "{first}");
}

#[test]
fn intervene_keeps_its_finished_placements_on_sighup() {
    let recs = interrupted_after_a_part(
        "iv-hup",
        |k| strings(&["intervene", "--states", "cexh,cexm,dexd,dext"], 50 * k),
        libc::SIGHUP,
    );
    assert_eq!(recs[0]["kind"], "intervene-uown", "{recs:?}");
    for r in recs
        .iter()
        .filter(|r| !r["stats"].as_array().unwrap().is_empty())
    {
        assert!(r["settle"]["settled"].is_boolean(), "{r}");
    }
}

#[test]
fn bandwidth_keeps_its_finished_kernels_on_sigint() {
    // Each kernel adds passes towards a tolerance none meets, so the later kernels are
    // still running when the first one's records are kept.
    let recs = interrupted_after_a_part(
        "bw-int",
        |k| {
            strings(
                &[
                    "bandwidth",
                    "--kernel",
                    "read,readv,copy,zero",
                    "--size",
                    "4M",
                ],
                20 * k,
            )
        },
        libc::SIGINT,
    );
    assert!(recs.iter().all(|r| r["kind"] == "bandwidth"), "{recs:?}");
    let kernels: Vec<&str> = recs
        .iter()
        .filter_map(|r| r["parameters"]["kernel"].as_str())
        .collect();
    assert!(!kernels.is_empty(), "{recs:?}");
    assert_eq!(kernels[0], "read", "{kernels:?}");
    for r in &recs {
        assert!(r["settle"]["settled"].is_boolean(), "{r}");
    }
}

/// Threads of `pid` named as the process (its main and measuring threads; the signal
/// watcher is named apart).
fn workers(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| {
        d.flatten()
            .filter(|e| {
                std::fs::read_to_string(e.path().join("comm")).is_ok_and(|c| c.trim() == "numalab")
            })
            .count()
    })
}

#[test]
fn loaded_latency_keeps_its_finished_points() {
    let out_file = common::tmpdir("loaded-term").join("out.json");
    let base = ["loaded-latency", "--size", "16M", "--inject-size", "16M"];
    let plan = common::numalab(&[&base[..], &["--dry-run"]].concat());
    if !plan.status.success() {
        // One core: no injector CPU off the chaser's (the plan says so).
        eprintln!("skipped: {}", String::from_utf8_lossy(&plan.stderr));
        return;
    }
    let mut iterations = 5;
    loop {
        let _ = std::fs::remove_file(&out_file);
        let it = iterations.to_string();
        let o = out_file.to_str().unwrap();
        let job = spawn(&[&base[..], &["--iterations", &it, "-o", o]].concat());
        // The unloaded point (the chase alone) comes first; once an injector runs
        // beside the chase (main, chase and injector threads), it has finished.
        let t = Instant::now();
        while workers(job.id()) < 3 {
            assert!(
                t.elapsed() < Duration::from_secs(300),
                "no loaded point began"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let out = signal_and_finish(job, libc::SIGTERM, Duration::from_secs(60));
        let err = String::from_utf8_lossy(&out.stderr);
        if out.status.success() {
            // Every point ended before the signal came: give the run more to do.
            iterations *= 4;
            assert!(iterations < 1000, "the run always ended first: {err}");
            continue;
        }
        assert_eq!(out.status.code(), Some(143), "{err}");
        assert!(err.contains("each marked interrupted"), "{err}");
        let text = std::fs::read_to_string(&out_file).unwrap();
        common::validate(text.as_bytes());
        let recs: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
        assert_eq!(recs[0]["name"], "unloaded", "{text}");
        // 11 delays after the unloaded point: the ones not reached are missing.
        assert!(recs.len() < 12, "{} records", recs.len());
        for r in &recs {
            assert_eq!(r["kind"], "loaded-latency");
            assert!(r["settle"]["metric"].is_string(), "{r}");
            let w = r["warnings"].as_array().unwrap();
            assert!(w
                .iter()
                .any(|w| w.as_str().unwrap().starts_with("interrupted: ")));
        }
        return;
    }
}
