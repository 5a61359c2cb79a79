//! Nothing lost (issues 35 and 33): traces on a full disk continue in a named file,
//! records find a second place when the output and $TMPDIR are both full, a survey's
//! journal is read past its damaged lines and into the file it continued in, and an
//! MPI suite killed midway keeps the configurations it finished. Full disks are real
//! (a tmpfs in a private mount namespace, gone with it); a test that cannot mount one
//! says so and skips.

mod common;

use common::mpi::{kept_count, partial_in, rank_pid};
use common::{bad_input, numalab, tmpdir};
use numalab_results::journal::{self, Entry, Fingerprint, Header, PlannedStep};
use numalab_results::words::count_are;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const EXE: &str = env!("CARGO_BIN_EXE_numalab");

/// Run `script` (sh) in a private mount namespace after mounting a tmpfs of `size` on
/// `mnt` and filling it up to `free` bytes left; None (skip, reason printed) when
/// mounting is impossible here.
fn on_full_tmpfs(
    mnt: &Path,
    size: &str,
    fill_kib: u64,
    script: &str,
    env: &[(&str, &Path)],
) -> Option<Output> {
    std::fs::create_dir_all(mnt).unwrap();
    let sh = format!(
        "mount -t tmpfs -o size={size} tmpfs '{m}' || exit 99; mkdir -p '{m}/out' '{m}/tmp'; \
         dd if=/dev/zero of='{m}/fill' bs=1K count={fill_kib} 2>/dev/null; {script}",
        m = mnt.display()
    );
    let mut c = Command::new("unshare");
    c.args(["--mount", "--propagation", "private", "sh", "-c", &sh]);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("run unshare");
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(99) || err.contains("unshare failed") {
        eprintln!("skipped: no tmpfs could be mounted here ({})", err.trim());
        return None;
    }
    Some(out)
}

/// The file named in quotes in `text` whose name starts with `prefix`.
fn named(text: &str, prefix: &str) -> PathBuf {
    let p = text
        .split('\'')
        .find(|p| {
            Path::new(p)
                .file_name()
                .is_some_and(|f| f.to_string_lossy().starts_with(prefix))
        })
        .unwrap_or_else(|| panic!("no {prefix}… file named: {text}"));
    PathBuf::from(p)
}

#[test]
fn a_trace_on_a_full_disk_continues_whole_in_a_named_file() {
    let root = tmpdir("rescue-trace");
    let tmp = root.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    // No room at all (the header cannot be written), then 32 KiB free (cut midway).
    for (fill, what) in [(64, "full"), (32, "32 KiB free")] {
        let mnt = root.join(format!("m{fill}"));
        let script = format!(
            "timeout -k 5 120 '{EXE}' record -i 10 -o '{m}/out/t.trace' -- sh -c 'sleep 1.5'; echo \"rc=$?\"; ls -la '{m}/out' >&2",
            m = mnt.display()
        );
        let Some(out) = on_full_tmpfs(&mnt, "64k", fill, &script, &[("TMPDIR", &tmp)]) else {
            return;
        };
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("rc=1"), "{what}: {stdout} {err}");
        assert!(!err.contains("t.trace.tmp"), "{err}");
        // The trace asked for is gone (no empty or cut file), the whole one is named.
        assert!(
            !err.contains(" t.trace\n"),
            "{what}: a file is left behind: {err}"
        );
        let said = err
            .lines()
            .find(|l| l.contains("the whole trace continues in"))
            .unwrap_or_else(|| panic!("{what}: the move is not said: {err}"));
        assert!(
            said.contains("t.trace") && said.contains("No space left"),
            "{said}"
        );
        let moved = named(said, "numalab-rescued-");
        assert!(moved.starts_with(&tmp), "{moved:?}");
        let info = numalab(&["info", moved.to_str().unwrap()]);
        assert!(
            info.status.success(),
            "{}",
            String::from_utf8_lossy(&info.stderr)
        );
        let text = std::fs::read_to_string(&moved).unwrap();
        assert!(text.lines().next().unwrap().contains("\"header\""));
        assert!(
            text.lines().last().unwrap().contains("\"end\""),
            "{what}: no end entry"
        );
        std::fs::remove_file(&moved).unwrap();
    }
}

#[test]
fn records_go_to_a_second_place_when_output_and_tmpdir_are_full() {
    let root = tmpdir("rescue-second");
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mnt = root.join("m");
    let m = mnt.display().to_string();
    // Output, $TMPDIR and the output folder's parent share one full tmpfs: $HOME takes it.
    let script = format!("TMPDIR='{m}/tmp' exec '{EXE}' topo -o '{m}/out/t.json'");
    let Some(out) = on_full_tmpfs(&mnt, "64k", 64, &script, &[("HOME", &home)]) else {
        return;
    };
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    let kept = named(&err, "numalab-rescued-");
    assert!(kept.starts_with(&home), "{kept:?}");
    let recs: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&kept).unwrap()).unwrap();
    assert_eq!(recs[0]["kind"], "topo");
    // $HOME full too: the records go to standard output, a pipe here, and it says so.
    let script = format!("HOME='{m}' TMPDIR='{m}/tmp' exec '{EXE}' topo -o '{m}/out/t.json'");
    let out = on_full_tmpfs(&mnt, "64k", 64, &script, &[]).unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("standard output"), "{err}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json = &stdout[stdout.find("[\n").expect("records on stdout")..];
    let recs: Vec<Value> = serde_json::from_str(json).unwrap();
    assert_eq!(recs[0]["kind"], "topo");
}

/// Damage a line in its middle: a control character, which no JSON may hold unescaped.
fn corrupt(line: &mut String) {
    let (i, c) = line
        .char_indices()
        .find(|(i, _)| *i >= line.len() / 2)
        .unwrap();
    line.replace_range(i..i + c.len_utf8(), "\u{1}");
}

/// A survey journal made by hand: steps a, b, c, each finished with `topo` records.
fn journal_text(continues: Option<String>, steps: &[&str]) -> String {
    let topo = numalab(&["topo", "--json"]);
    assert!(topo.status.success());
    let recs: Vec<numalab_results::Record> = serde_json::from_slice(&topo.stdout).unwrap();
    let plan: Vec<PlannedStep> = ["a", "b", "c"]
        .iter()
        .map(|id| PlannedStep {
            id: id.to_string(),
            title: format!("step {id}"),
            args: vec!["topo".into()],
            skip: None,
        })
        .collect();
    let header = Header {
        format: journal::FORMAT.into(),
        tool_version: "test".into(),
        command_line: vec!["numalab".into(), "survey".into()],
        fingerprint: Fingerprint::of(&recs[0].provenance),
        plan,
        continues,
        run: None,
    };
    let mut text = serde_json::to_string(&header).unwrap() + "\n";
    for id in steps {
        let e = Entry {
            step: id.to_string(),
            status: "1 records".into(),
            seconds: 0.1,
            records: recs.clone(),
        };
        text += &(serde_json::to_string(&e).unwrap() + "\n");
    }
    text
}

#[test]
fn report_reads_a_journal_past_its_damaged_lines_and_names_them() {
    let dir = tmpdir("rescue-damaged");
    let text = journal_text(None, &["a", "b", "c"]);
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    // Step b's line corrupted in its middle; garbage appended after the last.
    corrupt(&mut lines[2]);
    lines.push("\u{1}garbage".into());
    let jp = dir.join(journal::FILE_NAME);
    std::fs::write(&jp, lines.join("\n") + "\n").unwrap();
    let html = dir.join("r.html");
    let out = numalab(&[
        "report",
        dir.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("line 3 (step 'b')") && err.contains("line 5"),
        "{err}"
    );
    assert!(
        stdout.contains("not measured: step 'step b' (its journal line 3 is damaged"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("step 'step a'") && !stdout.contains("step 'step c'"),
        "{stdout}"
    );
    assert!(std::fs::read_to_string(&html).unwrap().contains("step b"));
    // A damaged header still refuses the journal: nothing in it can be trusted.
    corrupt(&mut lines[0]);
    std::fs::write(&jp, lines.join("\n") + "\n").unwrap();
    let out = numalab(&[
        "report",
        dir.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
        "--force",
    ]);
    bad_input(&out, &[], "a journal with a damaged header");
}

#[test]
fn report_follows_a_journal_into_the_file_it_continued_in() {
    let root = tmpdir("rescue-follow");
    let tmp = root.join("tmp");
    let dir = root.join("s");
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::create_dir_all(&dir).unwrap();
    let jp = dir.join(journal::FILE_NAME);
    std::fs::write(&jp, journal_text(None, &["a"])).unwrap();
    let me = std::fs::canonicalize(&jp).unwrap().display().to_string();
    let moved = tmp.join("numalab-rescued-1-2.jsonl");
    std::fs::write(&moved, journal_text(Some(me), &["a", "b", "c"])).unwrap();
    // Another survey's fallback journal beside it is not taken.
    let other = tmp.join("numalab-rescued-1-3.jsonl");
    std::fs::write(
        &other,
        journal_text(Some("/elsewhere/journal.jsonl".into()), &["a", "b", "c"]),
    )
    .unwrap();
    let html = root.join("r.html");
    let out = Command::new(EXE)
        .args([
            "report",
            dir.to_str().unwrap(),
            "-o",
            html.to_str().unwrap(),
        ])
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{err}");
    assert!(err.contains(&moved.display().to_string()), "{err}");
    assert!(!stdout.contains("not measured"), "{stdout}");
    // Without it, the two unfinished steps are named.
    std::fs::remove_file(&moved).unwrap();
    let out = Command::new(EXE)
        .args([
            "report",
            dir.to_str().unwrap(),
            "-o",
            html.to_str().unwrap(),
            "--force",
        ])
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches("not measured").count(), 2, "{stdout}");
}

#[test]
fn report_of_no_records_says_so_and_writes_nothing() {
    let dir = tmpdir("rescue-empty");
    let f = dir.join("empty.json");
    std::fs::write(&f, "[]").unwrap();
    let html = dir.join("r.html");
    let out = numalab(&["report", f.to_str().unwrap(), "-o", html.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("nothing to report") && err.contains("empty.json"),
        "{err}"
    );
    assert!(!html.exists());
}

#[test]
fn plans_name_the_input_as_the_flag_spells_it() {
    let out = numalab(&[
        "suite",
        "cvm",
        "--ranks",
        "2",
        "--apps",
        "sor",
        "--threads",
        "1",
        "--dry-run",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let recs: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let name = recs[0]["name"].as_str().unwrap();
    assert!(name.contains("--input small"), "{name}");
}

#[test]
fn a_killed_mpi_suite_keeps_the_configurations_it_finished() {
    let root = tmpdir("rescue-cvm");
    let tmp = root.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let file = root.join("cvm.json");
    let mut child = Command::new("timeout")
        .args(["-k", "10", "400", EXE, "suite", "cvm", "--ranks", "2"])
        .args(["--apps", "sor,swm", "--threads", "1,2", "-o"])
        .arg(&file)
        .env("TMPDIR", &tmp)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Two of the twelve configurations finished: SIGKILL rank 1, as a crash would.
    let t0 = std::time::Instant::now();
    let partial = loop {
        match partial_in(&tmp) {
            Some((p, n)) if n >= 2 => break p,
            _ => {}
        }
        assert!(child.try_wait().unwrap().is_none(), "the job ended first");
        assert!(
            t0.elapsed().as_secs() < 300,
            "no two configurations in 300 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let pid = rank_pid(&partial, 1).expect("rank 1 is running");
    // SAFETY: signalling a process this test's job started.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let said = err
        .lines()
        .find(|l| l.contains("the job ended early: "))
        .unwrap_or_else(|| panic!("nothing kept: {err}"));
    let n = kept_count(said);
    assert!((2..12).contains(&n) && said.contains(" of 12 "), "{said}");
    let recs: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert!(
        said.contains(&format!(
            "their {} written to",
            count_are(recs.len() as u64, "record")
        )),
        "{said}"
    );
    let mut runs: Vec<&str> = recs.iter().map(|r| r["name"].as_str().unwrap()).collect();
    runs.dedup();
    assert_eq!(runs.len(), n, "{runs:?}");
    assert!(!partial.exists(), "the launcher leaves no partial file");
}

#[test]
fn resume_measures_again_only_the_steps_whose_journal_lines_are_damaged() {
    let dir = tmpdir("rescue-resume").join("s");
    let d = dir.to_str().unwrap();
    let plan = ["survey", "--quick", "--max-size", "256K"];
    let run = |extra: &[&str]| {
        let mut a: Vec<&str> = vec!["600"];
        a.extend(plan);
        a.extend_from_slice(extra);
        let out = common::bounded("600", &a[1..], &[]);
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "{extra:?}: {err}");
        err
    };
    run(&["-o", d]);
    let jp = dir.join(journal::FILE_NAME);
    let whole = journal::read(&jp).unwrap();
    let mut lines: Vec<String> = std::fs::read_to_string(&jp)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    corrupt(&mut lines[2]);
    lines.push("garbage".into());
    std::fs::write(&jp, lines.join("\n") + "\n").unwrap();
    let survey_steps = |p: &Path| {
        let recs: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
        recs.iter().filter(|r| r["kind"] == "survey").count()
    };
    let before = survey_steps(&dir.join("results.json"));
    std::fs::remove_file(dir.join("results.json")).unwrap();
    let err = run(&["--resume", d]);
    let damaged_step = &whole.entries[1].step;
    assert!(
        err.contains(&format!("line 3 (step '{damaged_step}')")) && err.contains("line "),
        "{err}"
    );
    // The start line counts one plan: "N steps … (K of N steps finished before)".
    let start = err
        .lines()
        .find(|l| l.starts_with("numalab survey:"))
        .unwrap();
    let n = start.split(' ').nth(2).unwrap();
    assert!(
        start.contains(&format!(" of {n} steps finished before")),
        "{start}"
    );
    let j = journal::read(&jp).unwrap();
    assert!(j.missing().is_empty());
    // Only the damaged step ran again; the damaged lines stay, named, for a person.
    assert_eq!(j.entries.len(), whole.entries.len());
    assert_eq!(j.damaged.len(), 2);
    assert_eq!(&j.entries.last().unwrap().step, damaged_step);
    assert_eq!(survey_steps(&dir.join("results.json")), before);
}

#[test]
fn ctrl_c_on_mpi_latency_keeps_the_steps_it_finished() {
    let root = tmpdir("rescue-sigint");
    let tmp = root.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let file = root.join("lat.json");
    let mut child = Command::new(EXE)
        .args([
            "mpi",
            "latency",
            "--ranks",
            "2",
            "--ops",
            "pingpong,get,put",
        ])
        .args([
            "--sizes",
            "8,64,512,4K,32K,256K,1M",
            "--iterations",
            "20000",
            "-o",
        ])
        .arg(&file)
        .env("TMPDIR", &tmp)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    let partial = loop {
        match partial_in(&tmp) {
            Some((p, n)) if n >= 1 => break p,
            _ => {}
        }
        if child.try_wait().unwrap().is_some() || t0.elapsed().as_secs() > 300 {
            let _ = child.kill();
            panic!("the job ended, or no step finished in 300 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    // SAFETY: signalling the launcher this test started, as a terminal's Ctrl-C would.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed().as_secs() > 400 {
            let _ = child.kill();
            panic!("the job did not end after Ctrl-C");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(0) {
        return; // every step finished before the signal arrived: nothing to keep
    }
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted by SIGINT"), "{err}");
    let said = err
        .lines()
        .find(|l| l.contains("the job ended early: "))
        .unwrap_or_else(|| panic!("nothing kept: {err}"));
    let recs: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert!(!recs.is_empty());
    assert!(
        said.contains(&format!(
            "their {} written to",
            count_are(recs.len() as u64, "record")
        )),
        "{said}"
    );
    assert!(recs.iter().all(|r| r["kind"] == "mpi-latency"), "{recs:?}");
    assert!(!partial.exists());
}

#[test]
fn a_monitor_trace_on_a_full_disk_continues_in_a_named_file() {
    let root = tmpdir("rescue-monitor");
    let tmp = root.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mnt = root.join("m");
    let script = format!(
        "timeout -k 5 120 '{EXE}' monitor -i 10 -c 20 -o '{m}/out/t.trace' >/dev/null; echo \"rc=$?\"; ls '{m}/out'",
        m = mnt.display()
    );
    let Some(out) = on_full_tmpfs(&mnt, "64k", 64, &script, &[("TMPDIR", &tmp)]) else {
        return;
    };
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("rc=1") && !stdout.contains("t.trace"),
        "{stdout} {err}"
    );
    let moved = named(&err, "numalab-rescued-");
    assert!(moved.starts_with(&tmp), "{moved:?}");
    let info = numalab(&["info", moved.to_str().unwrap()]);
    assert!(
        info.status.success(),
        "{}",
        String::from_utf8_lossy(&info.stderr)
    );
    std::fs::remove_file(&moved).unwrap();
}

#[test]
fn resume_takes_the_steps_a_continued_journal_holds() {
    let root = tmpdir("rescue-adopt");
    let tmp = root.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let dir = root.join("s");
    let (d, t) = (dir.to_str().unwrap(), tmp.to_str().unwrap());
    let plan = ["survey", "--quick", "--max-size", "256K"];
    let run = |extra: &[&str]| {
        let mut a: Vec<&str> = plan.to_vec();
        a.extend_from_slice(extra);
        let out = common::bounded("600", &a, &[("TMPDIR", t)]);
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "{extra:?}: {err}");
        err
    };
    run(&["-o", d]);
    // The journal kept its first three steps; the rest went on in a fallback journal
    // (a full disk), which names it.
    let jp = dir.join(journal::FILE_NAME);
    let text = std::fs::read_to_string(&jp).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    std::fs::write(&jp, lines[..4].join("\n") + "\n").unwrap();
    let mut header: Value = serde_json::from_str(lines[0]).unwrap();
    header["continues"] = std::fs::canonicalize(&jp)
        .unwrap()
        .display()
        .to_string()
        .into();
    let moved = tmp.join("numalab-rescued-1-2.jsonl");
    let rest = lines[1..].join("\n");
    std::fs::write(&moved, format!("{header}\n{rest}\n")).unwrap();
    std::fs::remove_file(dir.join("results.json")).unwrap();
    let err = run(&["--resume", d]);
    let n = lines.len() - 4;
    let taken = format!(
        "{n} finished step{} taken from '{}'",
        if n == 1 { "" } else { "s" },
        moved.display()
    );
    assert!(err.contains(&taken), "{err}");
    let start = err
        .lines()
        .find(|l| l.starts_with("numalab survey:"))
        .unwrap();
    let n = start.split(' ').nth(2).unwrap();
    assert!(
        start.contains(&format!("({n} of {n} steps finished before)")),
        "{start}"
    );
    let j = journal::read(&jp).unwrap();
    assert!(j.missing().is_empty() && j.damaged.is_empty());
    assert_eq!(j.entries.len(), lines.len() - 1, "nothing measured twice");
}
