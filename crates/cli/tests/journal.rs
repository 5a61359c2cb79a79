//! Nothing measured is lost: the survey's journal survives a SIGKILL and `--resume`
//! completes it, a full disk or a vanished folder leaves the records in a named
//! fallback file, and existing results are never replaced without `--force`.
//! Every wait polls a file or a process under an overall timeout; nothing sleeps a
//! fixed time to let a step finish.

mod common;

use common::{bounded, numalab, tmpdir};
use numalab_results::journal;
use numalab_results::words::count_are;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The plan every test here runs: short on a 2-core VM.
const PLAN: [&str; 4] = ["survey", "--quick", "--max-size", "256K"];

/// Overall limit of any one wait or run, seconds.
const LIMIT_S: u64 = 400;

fn survey_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut a: Vec<&str> = PLAN.to_vec();
    a.extend_from_slice(extra);
    a
}

fn one_line_error(out: &std::process::Output) -> String {
    common::bad_input(out, &[], "bad input")
}

/// Record kinds and how many of each: what two runs of one plan share (never numbers).
fn kinds(records: &[Value]) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for r in records {
        *m.entry(r["kind"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    m
}

/// The titles of the survey's step records (one per step), sorted.
fn steps(records: &[Value]) -> Vec<String> {
    let mut v: Vec<String> = records
        .iter()
        .filter(|r| r["kind"] == "survey")
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect();
    v.sort();
    v
}

fn read_json(p: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap()
}

/// An uninterrupted run of the plan, once per test binary. Its folder first holds an
/// earlier survey's files, which are refused without --force and replaced with it.
fn reference() -> &'static Vec<Value> {
    static REF: OnceLock<Vec<Value>> = OnceLock::new();
    REF.get_or_init(|| {
        let dir = tmpdir("journal-ref").join("s");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("results.json"), "[]").unwrap();
        let d = dir.to_str().unwrap();
        let out = bounded("400", &survey_args(&["-o", d]), &[]);
        let err = one_line_error(&out);
        assert!(err.contains(d) && err.contains("--force"), "{err}");
        assert_eq!(
            std::fs::read_to_string(dir.join("results.json")).unwrap(),
            "[]"
        );
        assert!(
            !dir.join(journal::FILE_NAME).exists(),
            "nothing was measured"
        );
        let out = bounded("400", &survey_args(&["-o", d, "--force"]), &[]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let records = read_json(&dir.join("results.json"));
        assert!(records.len() > 20, "{} records", records.len());
        records
    })
}

fn spawn_survey(extra: &[&str], env: &[(&str, &str)]) -> Child {
    let mut c = Command::new(env!("CARGO_BIN_EXE_numalab"));
    c.args(survey_args(extra))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    c.spawn().expect("start numalab survey")
}

/// Whole lines in the journal (the header counts as one).
fn whole_lines(p: &Path) -> usize {
    std::fs::read_to_string(p).map_or(0, |t| t.matches('\n').count())
}

/// Poll until the journal holds at least one finished step; false if the survey ended
/// first (it finished everything before the poll saw it: start again).
fn wait_for_a_step(child: &mut Child, journal: &Path) -> bool {
    let t0 = Instant::now();
    loop {
        if whole_lines(journal) >= 2 {
            return true;
        }
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(LIMIT_S),
            "no step finished in {LIMIT_S} s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn wait_bounded(child: &mut Child) -> std::process::ExitStatus {
    let t0 = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if t0.elapsed() > Duration::from_secs(LIMIT_S) {
            let _ = child.kill();
            panic!("the survey ran past {LIMIT_S} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Start a survey into `dir` and SIGKILL it once its journal holds a finished step and
/// before it finishes; returns the journal as the kill left it.
fn killed_survey(dir: &Path) -> journal::Journal {
    let d = dir.to_str().unwrap();
    let jp = dir.join(journal::FILE_NAME);
    for _ in 0..5 {
        let mut child = spawn_survey(&["-o", d, "--force"], &[]);
        if !wait_for_a_step(&mut child, &jp) {
            continue;
        }
        child.kill().unwrap(); // SIGKILL
        let status = wait_bounded(&mut child);
        let j = journal::read(&jp).unwrap();
        if status.code().is_none() && !j.missing().is_empty() {
            return j;
        }
    }
    panic!("the survey finished each time before it could be killed");
}

#[test]
fn a_killed_survey_keeps_its_steps_and_resume_completes_it() {
    let dir = tmpdir("journal-kill").join("s");
    let d = dir.to_str().unwrap();
    let j = killed_survey(&dir);
    assert!(!dir.join("results.json").exists());
    // Every step the journal lists as finished is there with its records.
    assert!(!j.entries.is_empty());
    for e in &j.entries {
        assert!(j.header.plan.iter().any(|p| p.id == e.step), "{}", e.step);
        assert!(
            e.records.iter().any(|r| r.kind == "survey"),
            "{}: no step record",
            e.step
        );
    }
    let missing: Vec<String> = j.missing().iter().map(|s| s.title.clone()).collect();
    assert!(!missing.is_empty());

    // report DIR renders the finished steps and names the missing ones.
    let html = dir.join("partial.html");
    let out = bounded("120", &["report", d, "-o", html.to_str().unwrap()], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<section id=\"not-measured\">"));
    for t in &missing {
        let line = format!("not measured: step '{t}' (interrupted");
        assert!(text.contains(&line), "{line} not in {text}");
        assert!(page.contains(&line), "{line} not in the HTML");
    }
    // A journal file works as well as its folder.
    let out = bounded(
        "120",
        &[
            "report",
            dir.join(journal::FILE_NAME).to_str().unwrap(),
            "--force",
            "-o",
            html.to_str().unwrap(),
        ],
        &[],
    );
    assert!(out.status.success());

    // Resuming with another plan is refused and leaves the journal alone.
    let before = std::fs::read(dir.join(journal::FILE_NAME)).unwrap();
    let out = bounded("120", &["survey", "--quick", "--resume", d], &[]);
    let err = one_line_error(&out);
    assert!(err.contains("another plan"), "{err}");
    assert!(err.contains("--max-size 256K"), "names how it began: {err}");
    assert_eq!(std::fs::read(dir.join(journal::FILE_NAME)).unwrap(), before);

    // Resuming with the same plan completes it: the same steps and record kinds as an
    // uninterrupted run.
    let out = bounded("400", &survey_args(&["--resume", d]), &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j2 = journal::read(&dir.join(journal::FILE_NAME)).unwrap();
    assert!(j2.missing().is_empty() && !j2.truncated);
    for e in &j.entries {
        assert_eq!(
            j2.entry(&e.step),
            Some(e),
            "a finished step was measured again"
        );
    }
    let resumed = read_json(&dir.join("results.json"));
    let full = reference();
    assert_eq!(steps(&resumed), steps(full));
    assert_eq!(kinds(&resumed), kinds(full));
}

#[test]
fn a_full_disk_leaves_every_record_in_a_named_file() {
    let root = tmpdir("journal-disk");
    let rescue_dir = root.join("tmp");
    std::fs::create_dir_all(&rescue_dir).unwrap();
    let mnt = root.join("small");
    std::fs::create_dir_all(&mnt).unwrap();
    let exe = env!("CARGO_BIN_EXE_numalab");
    // A real full filesystem: a 64 KiB tmpfs in a private mount namespace.
    let script = format!(
        "mount -t tmpfs -o size=64k tmpfs '{m}' || exit 99; exec timeout -k 10 {LIMIT_S} '{exe}' {plan} -o '{m}/s'",
        m = mnt.display(),
        plan = PLAN.join(" ")
    );
    let out = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .env("TMPDIR", &rescue_dir)
        .output()
        .expect("run unshare");
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    let out = if out.status.code() == Some(99) || err.contains("unshare failed") {
        eprintln!(
            "no tmpfs could be mounted ({}); a folder removed mid-run stands in for the full disk",
            err.trim()
        );
        removed_mid_run(&root, &rescue_dir)
    } else {
        // The journal (far larger than 64 KiB) filled the disk and went on in $TMPDIR,
        // complete: a kill after the disk filled would have kept every step too.
        let moved = err
            .lines()
            .find(|l| l.contains("the journal continues in"))
            .and_then(|l| l.split('\'').rfind(|p| p.ends_with(".jsonl")))
            .unwrap_or_else(|| panic!("the journal did not move: {err}"));
        assert!(Path::new(moved).starts_with(&rescue_dir), "{moved}");
        let j = journal::read(Path::new(moved)).unwrap();
        assert!(j.missing().is_empty() && !j.truncated, "{moved}");
        out
    };
    assert_rescued(&out, &rescue_dir);
}

#[test]
fn a_folder_removed_mid_run_leaves_every_record_in_a_named_file() {
    let root = tmpdir("journal-gone");
    let rescue_dir = root.join("tmp");
    std::fs::create_dir_all(&rescue_dir).unwrap();
    let out = removed_mid_run(&root, &rescue_dir);
    assert_rescued(&out, &rescue_dir);
}

/// The survey failed (exit 1) with an error naming a fallback file in `rescue_dir`
/// that holds every record: the reference run's steps and record kinds.
fn assert_rescued(out: &std::process::Output, rescue_dir: &Path) {
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{err}");
    let last = err.trim_end().lines().last().unwrap();
    let named = last
        .split('\'')
        .find(|p| p.contains("numalab-rescued-"))
        .unwrap_or_else(|| panic!("no fallback file named: {last}"));
    assert!(Path::new(named).starts_with(rescue_dir), "{named}");
    let kept = read_json(Path::new(named));
    assert!(
        last.contains(&format!(
            "the {} kept",
            count_are(kept.len() as u64, "record")
        )),
        "{last}"
    );
    let full = reference();
    assert_eq!(steps(&kept), steps(full));
    assert_eq!(kinds(&kept), kinds(full));
}

/// The survey's folder removed once a step has finished: its files cannot be written.
fn removed_mid_run(root: &Path, rescue_dir: &Path) -> std::process::Output {
    let dir: PathBuf = root.join("gone");
    let jp = dir.join(journal::FILE_NAME);
    let env = [("TMPDIR", rescue_dir.to_str().unwrap())];
    for _ in 0..5 {
        let _ = std::fs::remove_dir_all(&dir);
        let mut c = Command::new(env!("CARGO_BIN_EXE_numalab"));
        c.args(survey_args(&["-o", dir.to_str().unwrap()]))
            .env(env[0].0, env[0].1)
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        if !wait_for_a_step(&mut child, &jp) {
            continue;
        }
        std::fs::remove_dir_all(&dir).unwrap();
        let status = wait_bounded(&mut child);
        let out = child.wait_with_output().unwrap();
        if status.code() == Some(0) {
            continue; // it finished before the folder went
        }
        return std::process::Output { status, ..out };
    }
    panic!("the survey finished each time before its folder could be removed");
}

#[test]
fn existing_output_files_are_refused_unless_forced() {
    let dir = tmpdir("journal-force");
    let f = dir.join("t.json");
    let fs = f.to_str().unwrap();
    std::fs::write(&f, "[\"earlier\"]").unwrap();
    let out = numalab(&["topo", "-o", fs]);
    let err = one_line_error(&out);
    assert!(err.contains(fs) && err.contains("--force"), "{err}");
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "[\"earlier\"]");
    let out = numalab(&["topo", "-o", fs, "--force"]);
    assert!(out.status.success());
    assert_eq!(read_json(&f)[0]["kind"], "topo");
}

#[test]
fn an_unwritable_output_file_leaves_the_records_in_a_named_file() {
    let root = tmpdir("journal-rescue");
    let rescue_dir = root.join("tmp");
    std::fs::create_dir_all(&rescue_dir).unwrap();
    let exe = env!("CARGO_BIN_EXE_numalab");
    // A tmpfs filled to the last byte: -o can create its file, not fill it.
    let m = root.join("full");
    std::fs::create_dir_all(&m).unwrap();
    let script = format!(
        "mount -t tmpfs -o size=4k tmpfs '{m}' || exit 99; head -c 1M /dev/zero > '{m}/fill' 2>/dev/null; exec timeout -k 10 120 '{exe}' topo -o '{m}/t.json'",
        m = m.display()
    );
    let out = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .env("TMPDIR", &rescue_dir)
        .output()
        .expect("run unshare");
    if out.status.code() == Some(99)
        || String::from_utf8_lossy(&out.stderr).contains("unshare failed")
    {
        eprintln!(
            "skipped: no tmpfs could be mounted here ({})",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        return;
    }
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    let named = err
        .split('\'')
        .find(|p| p.contains("numalab-rescued-"))
        .unwrap_or_else(|| panic!("no fallback file named: {err}"));
    let kept = read_json(Path::new(named));
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0]["kind"], "topo");
}
