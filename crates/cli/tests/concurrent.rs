//! Two measurements at once: the second warns and records the first in its
//! provenance; `--wait` waits for the first to end; a run killed with SIGKILL
//! leaves nothing that later runs mistake for a live one.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn numalab(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_numalab"));
    c.env("NUMALAB_RUN_DIR", dir)
        .env_remove("NUMALAB_PARENT_RUN");
    c
}

/// A measurement that runs until killed.
fn long_run(dir: &Path) -> Child {
    numalab(dir)
        .args(["latency", "--size", "32M", "--iterations", "100000"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let t = Instant::now();
    while !cond() {
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

const SHORT: [&str; 6] = ["latency", "--size", "64K", "--iterations", "2", "--json"];

#[test]
fn a_second_measurement_warns_records_the_first_and_can_wait_for_it() {
    let dir = common::tmpdir("concurrent");
    let mut a = long_run(&dir);
    let a_pid = a.id();
    let a_file = dir.join(format!("{a_pid}.run"));
    wait_for("the first run to register", || a_file.exists());

    // Without --wait: measured, with a warning and the other run in the provenance.
    let b = numalab(&dir).args(SHORT).output().unwrap();
    let err = String::from_utf8_lossy(&b.stderr);
    assert!(b.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "another numalab measurement is running on this machine (pid {a_pid}"
        )),
        "{err}"
    );
    let v = common::validate(&b.stdout);
    let rec = &v[0];
    assert_eq!(
        rec["provenance"]["concurrent_runs"][0]["pid"].as_u64(),
        Some(a_pid as u64),
        "{rec}"
    );
    assert!(rec["provenance"]["concurrent_runs"][0]["command"]
        .as_str()
        .unwrap()
        .contains("latency --size 32M"));
    assert!(rec["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains(&format!("pid {a_pid}"))));

    // With --wait: blocks while the first measures, then runs alone.
    let mut c = numalab(&dir)
        .args(SHORT)
        .arg("--wait")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert!(c.try_wait().unwrap().is_none(), "--wait did not wait");
    a.kill().unwrap(); // SIGKILL: the first run leaves its file behind
    a.wait().unwrap();
    let t = Instant::now();
    let out = loop {
        if c.try_wait().unwrap().is_some() {
            break c.wait_with_output().unwrap();
        }
        assert!(t.elapsed() < Duration::from_secs(120), "--wait never ended");
        std::thread::sleep(Duration::from_millis(50));
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains(&format!("waiting for pid {a_pid}")), "{err}");
    let v = common::validate(&out.stdout);
    assert!(
        v[0]["provenance"].get("concurrent_runs").is_none(),
        "{}",
        v[0]["provenance"]
    );
    // The killed run's file was recognised as stale and removed; the finished runs removed theirs.
    assert!(!a_file.exists());
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn dry_runs_and_descriptive_commands_neither_warn_nor_wait() {
    let dir = common::tmpdir("concurrent-dry");
    let mut a = long_run(&dir);
    let a_file = dir.join(format!("{}.run", a.id()));
    wait_for("the first run to register", || a_file.exists());
    for args in [
        vec!["latency", "--dry-run", "--wait"],
        vec!["topo"],
        vec!["schema"],
    ] {
        let out = numalab(&dir).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {err}");
        assert!(
            !err.contains("another numalab measurement") && !err.contains("waiting for"),
            "{args:?}: {err}"
        );
    }
    // Commands that measure nothing take no --wait.
    for cmd in [
        "topo", "schema", "info", "dump", "report", "compare", "model",
    ] {
        let out = numalab(&dir).args([cmd, "--wait"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cmd} --wait: {err}");
        assert!(err.contains("'--wait'"), "{cmd} --wait: {err}");
    }
    // Bad input while another run measures: still one line, exit 2.
    let bad = numalab(&dir)
        .args(["latency", "--size", "0"])
        .output()
        .unwrap();
    common::bad_input(&bad, &[], "bad input while another run measures");
    a.kill().unwrap();
    a.wait().unwrap();
}
