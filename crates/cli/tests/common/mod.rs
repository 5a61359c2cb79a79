//! Helpers shared by the CLI integration tests.
#![allow(dead_code)]

pub mod browser;
pub mod busy;
pub mod cluster;
pub mod mpi;
pub mod slurm;
pub mod terminal;
pub mod wording;

use std::path::PathBuf;
use std::process::{Command, Output};

pub fn numalab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args(args)
        .output()
        .expect("run numalab")
}

/// The bad-input standard on `out`: exit status 2, nothing on stdout, one line on
/// stderr, no panic, naming each of `needles`; returns that line. `what` names the call
/// in the failure messages.
pub fn bad_input(out: &Output, needles: &[&str], what: &str) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{what}: {err}");
    assert!(
        out.stdout.is_empty(),
        "{what}: partial output on stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{what}: not one line: {err}"
    );
    assert!(!err.contains("panicked"), "{what}: {err}");
    for n in needles {
        assert!(err.contains(n), "{what}: {n:?} not in {err}");
    }
    err
}

pub fn topology(name: &str) -> String {
    numalab_fixtures::topology(name).display().to_string()
}

pub fn validate(stdout: &[u8]) -> serde_json::Value {
    let schema: serde_json::Value = serde_json::from_str(numalab_results::SCHEMA_JSON).unwrap();
    let v: serde_json::Value = serde_json::from_slice(stdout).expect("stdout is JSON");
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&v)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "schema errors: {errors:?}");
    v
}

/// Make `root`'s procfs name the fixture surveys' machine (tests/fixtures/tiers/README.md)
/// with host name `host`: `tiers --from FIXTURE --root ROOT` reads only a survey of the
/// machine under its root.
pub fn fixture_machine(root: &std::path::Path, host: &str) {
    let k = root.join("proc/sys/kernel");
    std::fs::create_dir_all(&k).unwrap();
    for (f, v) in [
        ("hostname", host),
        ("osrelease", "6.18.44-fc-v782"),
        ("version", "#1 SMP PREEMPT_DYNAMIC @0"),
        ("arch", "x86_64"),
    ] {
        std::fs::write(k.join(f), format!("{v}\n")).unwrap();
    }
    let cpuinfo = "processor\t: 0\nmodel name\t: AMD EPYC\n";
    std::fs::write(root.join("proc/cpuinfo"), cpuinfo).unwrap();
    // `tiers --root` takes only a tree that has a node folder.
    std::fs::create_dir_all(root.join("sys/devices/system/node")).unwrap();
}

/// This machine's provenance, as a dry run here records it.
pub fn this_machine_provenance() -> serde_json::Value {
    let out = numalab(&["latency", "--dry-run", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v[0]["provenance"].clone()
}

/// A copy of the fixture survey `fixture` at `out` that names this machine: every
/// record's fingerprint (host, architecture, CPU, kernel, topology summary) is the
/// live machine's, taken at run time (CI runs on another machine than the one the
/// fixture was made on). Its figures stay the fixture's: for tests of what is done
/// with a survey of this machine, such as `tiers --export-hwloc`.
pub fn survey_of_this_machine(fixture: &std::path::Path, out: &std::path::Path) {
    let prov = this_machine_provenance();
    let text = std::fs::read_to_string(fixture).unwrap();
    let mut recs: serde_json::Value = serde_json::from_str(&text).unwrap();
    for r in recs.as_array_mut().unwrap() {
        for f in ["hostname", "arch", "cpu_model", "kernel", "topology"] {
            r["provenance"][f] = prov[f].clone();
        }
    }
    std::fs::write(out, serde_json::to_string_pretty(&recs).unwrap()).unwrap();
}

/// Make `root`'s procfs name this machine, as `fixture_machine` names the fixture's:
/// host name, kernel and CPU copied from this machine's /proc.
pub fn this_machine_procfs(root: &std::path::Path) {
    let k = root.join("proc/sys/kernel");
    std::fs::create_dir_all(&k).unwrap();
    for f in ["hostname", "osrelease", "version"] {
        let v = std::fs::read_to_string(format!("/proc/sys/kernel/{f}")).unwrap();
        std::fs::write(k.join(f), v).unwrap();
    }
    std::fs::write(k.join("arch"), format!("{}\n", std::env::consts::ARCH)).unwrap();
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap();
    std::fs::write(root.join("proc/cpuinfo"), cpuinfo).unwrap();
    std::fs::create_dir_all(root.join("sys/devices/system/node")).unwrap();
}

/// The directories [`tmpdir`] made in this test process.
static MADE: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
static AT_EXIT: std::sync::Once = std::sync::Once::new();

/// Remove what [`tmpdir`] made: the test harness leaves through libc's `exit`, passed
/// or failed, so this runs once every test of the binary has ended (a guard per
/// directory would not do: many tests keep only a path joined onto it).
extern "C" fn remove_made() {
    let made = std::mem::take(&mut *MADE.lock().unwrap_or_else(|p| p.into_inner()));
    for d in made {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// A fresh directory for one test (`numalab-cli-TAG-PID` in the temp dir), removed
/// when the test binary exits.
pub fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("numalab-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    AT_EXIT.call_once(|| {
        // SAFETY: registers a function that takes no arguments and does not unwind
        // (it ignores every error); called once per process.
        unsafe { libc::atexit(remove_made) };
    });
    MADE.lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(d.clone());
    d
}

/// Run `numalab CMD --json ARGS…`, assert success, validate and return the records.
pub fn run_json(cmd: &str, args: &[&str]) -> serde_json::Value {
    let mut a = vec![cmd];
    a.extend_from_slice(args);
    a.push("--json");
    let out = numalab(&a);
    assert!(
        out.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    validate(&out.stdout)
}

/// The stdout of a run as text, once the run is seen to have succeeded (else the test
/// fails with its stderr).
pub fn ok_text(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A statistic's field of a record's metric.
pub fn stat(rec: &serde_json::Value, metric: &str, field: &str) -> f64 {
    rec["stats"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["metric"] == metric)
        .unwrap_or_else(|| panic!("no {metric} in {}", rec["name"]))[field]
        .as_f64()
        .unwrap()
}

/// A measured claim that holds by a wide margin (≥ 3×) under any scheduling: checked on
/// `first`; if it fails there, measured once more afresh with `again` and checked on
/// that, so one preemption (which only ever adds time) cannot fail it, while a claim
/// that is really false fails twice. Never re-checks the same data.
pub fn claim<T>(
    what: &str,
    first: T,
    again: impl FnOnce() -> T,
    check: impl Fn(&T) -> Result<(), String>,
) {
    if let Err(e1) = check(&first) {
        eprintln!("{what}: {e1}; measuring once more");
        if let Err(e2) = check(&again()) {
            panic!("{what}: {e1}; measured again: {e2}");
        }
    }
}

/// `claim` on a fresh measurement each time.
pub fn measured_claim<T>(
    what: &str,
    measure: impl Fn() -> T,
    check: impl Fn(&T) -> Result<(), String>,
) {
    claim(what, measure(), &measure, check)
}

/// `Ok` when `ok`, else the message: the failing half of a claim.
pub fn ensure(ok: bool, msg: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(msg())
    }
}

/// A measured time or rate that is physically possible whatever the scheduling:
/// positive, finite and below `bound` (a bound no preemption reaches, e.g. 1 s in ns).
pub fn assert_sane(what: &str, x: f64, bound: f64) {
    assert!(x > 0.0 && x.is_finite() && x < bound, "{what}: {x}");
}

/// Runs numalab under `timeout -k 10 LIMIT` with extra environment, and fails the test
/// when it had to be killed: a hang (of MPI ranks, say) is a defect, never a wait.
pub fn bounded(limit_s: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new("timeout");
    c.args(["-k", "10", limit_s, env!("CARGO_BIN_EXE_numalab")])
        .args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("run timeout numalab");
    assert_ne!(
        out.status.code(),
        Some(124),
        "numalab {args:?} hung past {limit_s} s: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
