//! Cases from the red-team runs (issue 35): closed pipes, hostile environments and
//! the messages and exit statuses they get.

mod common;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};

/// Runs numalab with a stdout whose reading end is already closed.
fn into_closed_pipe(args: &[&str]) -> std::process::Output {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args(args)
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("run numalab")
}

#[test]
fn a_closed_stdout_ends_quietly() {
    for args in [
        &["schema"][..],
        &["topo"],
        &["survey", "--dry-run"],
        &["suite", "cvm", "--ranks", "2", "--dry-run"],
        &["latency", "--dry-run", "--json"],
    ] {
        let out = into_closed_pipe(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !err.contains("panicked") && !err.contains("Broken pipe"),
            "{args:?}: {err}"
        );
        // Ended by SIGPIPE, as any Unix filter is, or done before it wrote.
        assert!(
            out.status.signal() == Some(libc::SIGPIPE) || out.status.success(),
            "{args:?}: {:?} {err}",
            out.status
        );
    }
}

#[test]
fn a_bad_mpi_timeout_is_refused_not_ignored() {
    for v in ["abc", "0", "-5", "inf"] {
        let out = common::bounded(
            "60",
            &["mpi", "latency", "--ranks", "2", "--sizes", "8"],
            &[("NUMALAB_MPI_TIMEOUT", v)],
        );
        common::bad_input(
            &out,
            &[&format!("NUMALAB_MPI_TIMEOUT '{v}'")],
            &format!("NUMALAB_MPI_TIMEOUT={v}"),
        );
    }
}

#[test]
fn the_timeout_ends_a_launcher_whose_child_holds_the_pipe() {
    // A launcher that leaves a child holding its stderr open, then hangs: numalab must
    // end both at the bound, not wait for the pipe to close.
    let dir = common::tmpdir("orphan-launcher");
    let pidfile = dir.join("child.pid");
    let script = dir.join("mpirun");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nsleep 600 &\necho $! > {}\nsleep 600\n",
            pidfile.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let t = std::time::Instant::now();
    let out = common::bounded(
        "120",
        &["mpi", "latency", "--ranks", "2", "--sizes", "8"],
        &[
            ("NUMALAB_MPIRUN", script.to_str().unwrap()),
            ("NUMALAB_MPI_TIMEOUT", "2"),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("NUMALAB_MPI_TIMEOUT (2 s)"), "{err}");
    // Generous: the bound is 2 s and the pipe's drain 2 s more.
    assert!(t.elapsed().as_secs() < 60, "took {:?}", t.elapsed());
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Gone, or a zombie its new parent has not reaped yet (state Z).
    let running = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rsplit(')').next().map(|r| r.trim_start().to_string()))
            .is_some_and(|r| !r.starts_with('Z'))
    };
    let t = std::time::Instant::now();
    while running() && t.elapsed().as_secs() < 10 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(!running(), "the launcher's child {pid} outlived the job");
}

#[test]
fn an_option_that_does_not_apply_or_an_empty_item_is_refused_by_name() {
    let topo = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/topologies/16em64t-4s2c2t.xml"
    );
    for (args, names) in [
        (
            &["suite", "cvm", "--threads", "1,,2", "--dry-run"][..],
            "--threads item ''",
        ),
        (
            &["suite", "collectives", "--mpi", "--sizes", "3", "--dry-run"],
            "--sizes '3'",
        ),
        (
            &["suite", "earth", "--ranks", "2", "--dry-run"],
            "--ranks '2'",
        ),
        (
            &["suite", "collectives", "--hostfile", "h", "--dry-run"],
            "--hostfile 'h'",
        ),
        (
            &["suite", "earth", "--mpi", "--mlp-size", "1T", "--dry-run"],
            "--mlp-size '1T'",
        ),
        (
            &[
                "mpi",
                "matrix",
                "--topology",
                topo,
                "--dry-run",
                "--rank-cpus",
                "0,200",
            ],
            "--rank-cpus '0,200'",
        ),
    ] {
        let out = common::bounded("60", args, &[]);
        common::bad_input(&out, &[names], &format!("{args:?}"));
    }
}

/// A fixture of this crate's tests.
fn fixture(p: &str) -> String {
    format!("{}/tests/fixtures/{p}", env!("CARGO_MANIFEST_DIR"))
}

/// Every command that writes a file, as argv with `OUT` where the file goes; `trace`
/// is a trace `record` wrote, `root` a tree naming this machine and `tiers` a survey of
/// it (`--export-hwloc` takes only a survey of this machine).
fn writers(trace: &str, root: &str, tiers: &str) -> Vec<Vec<String>> {
    let (survey, records) = (
        fixture("advise/two-socket.json"),
        fixture("report/charts.json"),
    );
    let mut v: Vec<Vec<String>> = numalab_answers::experiments::ALL
        .iter()
        .map(|e| {
            let mut a: Vec<String> = e.command.iter().map(|s| s.to_string()).collect();
            a.extend(e.dry_run.iter().map(|s| s.to_string()));
            a.extend(["--dry-run".into(), "-o".into(), "OUT.json".into()]);
            a
        })
        .collect();
    for a in [
        vec!["report", &records, "-o", "OUT.html"],
        vec!["report", trace, "-o", "OUT.html"],
        vec!["compare", &records, &records, "-o", "OUT.html"],
        vec!["export", trace, "--perfetto", "-o", "OUT.json"],
        vec![
            "advise",
            &survey,
            "--threads",
            "2",
            "--footprint",
            "1G",
            "-o",
            "OUT.json",
        ],
        vec![
            "tiers",
            "--root",
            root,
            "--from",
            tiers,
            "--export-hwloc",
            "OUT.xml",
        ],
        vec!["record", "-o", "OUT.trace", "--", "true"],
        vec!["monitor", "-c", "1", "-i", "10", "-o", "OUT.trace"],
    ] {
        v.push(a.into_iter().map(String::from).collect());
    }
    v
}

#[test]
fn every_command_that_writes_a_file_refuses_one_that_holds_something() {
    let dir = common::tmpdir("no-overwrite");
    let trace = dir.join("true.trace");
    let t = trace.to_str().unwrap();
    let out = common::bounded("60", &["record", "-o", t, "--", "true"], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let root = dir.join("this-machine");
    common::this_machine_procfs(&root);
    let tiers = dir.join("cxl-here.json");
    common::survey_of_this_machine(Path::new(&fixture("tiers/cxl-survey.json")), &tiers);
    let (r, s) = (root.to_str().unwrap(), tiers.to_str().unwrap());
    for (i, args) in writers(t, r, s).iter().enumerate() {
        // Whatever the file held (another run's results, a user's notes) stays.
        let keep = format!("[\"kept {i}\"]\n");
        let mut file = None;
        let argv: Vec<String> = args
            .iter()
            .map(|a| match a.strip_prefix("OUT") {
                Some(ext) => {
                    let p = dir.join(format!("{i}{ext}"));
                    std::fs::write(&p, &keep).unwrap();
                    file = Some(p.clone());
                    p.to_string_lossy().into_owned()
                }
                None => a.clone(),
            })
            .collect();
        let file = file.expect("an output");
        let a: Vec<&str> = argv.iter().map(String::as_str).collect();
        let out = common::bounded("60", &a, &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{argv:?}: {err}");
        assert!(err.contains("--force"), "{argv:?}: {err}");
        // Item 19: a trace writer names what the file holds, not "a trace".
        if a.contains(&"record") || a.contains(&"monitor") {
            assert!(err.contains("something (not a trace)"), "{argv:?}: {err}");
        }
        assert_eq!(std::fs::read_to_string(&file).unwrap(), keep, "{argv:?}");
        // With --force it is replaced (a dry run's plan, a report, a trace).
        let mut forced = a.clone();
        let at = forced
            .iter()
            .position(|x| *x == "-o" || *x == "--export-hwloc");
        forced.insert(at.unwrap(), "--force");
        if forced.contains(&"record") || forced.contains(&"monitor") {
            continue; // sampling needs no second run to show the rule
        }
        let out = common::bounded("120", &forced, &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{forced:?}: {err}");
        assert_ne!(std::fs::read_to_string(&file).unwrap(), keep, "{forced:?}");
    }
}

#[test]
fn a_survey_folder_has_one_writer_at_a_time() {
    let dir = common::tmpdir("one-writer");
    let d = dir.join("s");
    let ds = d.to_str().unwrap();
    let mut first = Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args(["survey", "--quick", "-o", ds])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = first.id() as i32;
    let t = std::time::Instant::now();
    while !d.join("journal.jsonl").exists() {
        assert!(
            t.elapsed().as_secs() < 120,
            "the survey never started its journal"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Stopped, it still holds the folder: the checks below cannot race its end.
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    for args in [
        &["survey", "--quick", "--resume", ds][..],
        &["survey", "--quick", "--force", "-o", ds],
    ] {
        let out = common::bounded("60", args, &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!(
                "being written by another numalab survey (pid {pid})"
            )),
            "{err}"
        );
    }
    // SAFETY: as above; SIGKILL ends it stopped or not.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let _ = first.wait();
}

#[test]
fn a_flag_parse_error_is_one_line_naming_the_option() {
    for (args, names) in [
        (&["mpi", "latency", "--ranks", "-1"][..], "--ranks '-1'"),
        (&["mpi", "bandwidth", "--pair", "-1,0"], "--pair '-1,0'"),
        (&["mpi", "latency", "--warmup=-1"], "--warmup"),
        (&["latency", "--bogus"], "'--bogus'"),
    ] {
        let out = common::numalab(args);
        let err = common::bad_input(&out, &[names], &format!("{args:?}"));
        assert!(err.starts_with("numalab: error: "), "{err}");
    }
    // Help is still help, on stdout, exit 0.
    let out = common::numalab(&["latency", "--help"]);
    assert!(out.status.success() && !out.stdout.is_empty());
}

/// The report fixture's records with `edit` applied to each.
fn edited_fixture(
    dir: &std::path::Path,
    name: &str,
    edit: impl Fn(&mut serde_json::Value),
) -> String {
    let text = std::fs::read_to_string(fixture("report/charts.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v.as_array_mut().unwrap().iter_mut().for_each(edit);
    let p = dir.join(name);
    std::fs::write(&p, v.to_string()).unwrap();
    p.to_string_lossy().into_owned()
}

#[test]
fn records_of_an_unknown_schema_are_refused_naming_it() {
    let dir = common::tmpdir("schema-99");
    let f = edited_fixture(&dir, "r99.json", |r| {
        r["schema"] = "numalab.record/99".into()
    });
    let html = dir.join("r.html");
    for args in [
        vec!["report", &f, "-o", html.to_str().unwrap()],
        vec!["compare", &f, &f],
    ] {
        common::bad_input(
            &common::numalab(&args),
            &["'numalab.record/99'", "'numalab.record/1'"],
            &format!("{args:?}"),
        );
    }
    assert!(!html.exists());
}

#[test]
fn a_huge_figure_is_printed_in_exponent_form() {
    let dir = common::tmpdir("huge");
    let f = edited_fixture(&dir, "big.json", |r| {
        for s in r["stats"].as_array_mut().into_iter().flatten() {
            for k in ["min", "p5", "median", "mean", "p95", "max"] {
                s[k] = 1e308.into();
            }
        }
    });
    let out = common::numalab(&["compare", &f, &f]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("1.000e308"), "{text}");
    assert!(text.lines().all(|l| l.len() < 400), "{text}");
}

#[test]
fn a_launcher_that_starts_no_rank_is_said_to() {
    for (launcher, status) in [("/bin/false", "status 1"), ("/bin/true", "status 0")] {
        let out = common::bounded(
            "60",
            &["mpi", "latency", "--ranks", "2", "--sizes", "8"],
            &[("NUMALAB_MPIRUN", launcher)],
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{launcher}: {err}");
        assert!(
            err.contains(&format!("{launcher} ended ({status}) without starting")),
            "{err}"
        );
        assert!(out.stdout.is_empty());
    }
}

/// The pids whose parent is `parent`.
fn children(parent: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    s.rsplit(')')
                        .next()?
                        .split_whitespace()
                        .nth(1)?
                        .parse()
                        .ok()
                })
                == Some(parent)
        })
        .collect()
}

#[test]
fn mpirun_killed_from_outside_ends_the_job_with_a_word() {
    if Command::new("mpirun").arg("--version").output().is_err() {
        eprintln!("skipped: mpirun not found (Debian package openmpi-bin)");
        return;
    }
    let job = Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args([
            "mpi", "latency", "--ranks", "2", "--sizes", "64K", "--ops", "pingpong",
        ])
        .args(["--iterations", "1000000"])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = std::time::Instant::now();
    let mpirun = loop {
        if let Some(&p) = children(job.id()).first() {
            break p;
        }
        assert!(t.elapsed().as_secs() < 60, "mpirun never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    std::thread::sleep(std::time::Duration::from_millis(500));
    // SAFETY: signalling the job's mpirun, as a user's kill -9 would.
    unsafe { libc::kill(mpirun as i32, libc::SIGKILL) };
    let out = job.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("mpirun was ended by signal 9 from outside numalab"),
        "{err}"
    );
}

#[test]
fn counts_that_size_memory_are_refused_before_anything_starts() {
    // Each would have grown past this machine's memory (the window: 12 GiB a rank
    // before the kernel's OOM killer); refused in one line before mpirun starts.
    for (args, names) in [
        (
            &[
                "mpi",
                "bandwidth",
                "--ranks",
                "2",
                "--sizes",
                "8",
                "--window",
                "100000000",
            ][..],
            "--window '100000000'",
        ),
        (
            &[
                "suite",
                "earth",
                "--mpi",
                "--ranks",
                "2",
                "--parts",
                "mask",
                "--loop-n",
                "100000000000",
            ],
            "--loop-n '100000000000'",
        ),
        (
            &[
                "suite",
                "earth",
                "--parts",
                "mask",
                "--loop-n",
                "100000000000",
            ],
            "--loop-n",
        ),
        (
            &["suite", "earth", "--parts", "mlp", "--mlp-size", "1T"],
            "--mlp-size '1T'",
        ),
    ] {
        let out = common::bounded("60", args, &[]);
        common::bad_input(&out, &[names, "available"], &format!("{args:?}"));
    }
}

#[test]
fn a_trace_resaved_by_another_json_writer_is_still_a_trace() {
    let dir = common::tmpdir("resaved-trace");
    let (t1, t2, html) = (dir.join("a.trace"), dir.join("b.trace"), dir.join("r.html"));
    let out = common::numalab(&["record", "-o", t1.to_str().unwrap(), "--", "true"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // What Python's json.dumps or jq write: a space after every colon.
    let spaced: String = std::fs::read_to_string(&t1)
        .unwrap()
        .lines()
        .map(|l| l.replace("\":", "\": ") + "\n")
        .collect();
    std::fs::write(&t2, spaced).unwrap();
    let out = common::numalab(&["report", t2.to_str().unwrap(), "-o", html.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(std::fs::read_to_string(&html).unwrap().contains("<svg"));
}

#[test]
fn report_names_the_rule_a_superlinear_figure_broke_and_never_states_it() {
    let dir = common::tmpdir("superlinear");
    let html = dir.join("r.html");
    // The fixture as measured: two cores 15.4 GB/s, one core 8.6 GB/s (1.8×).
    let f = edited_fixture(&dir, "sound.json", |_| {});
    let out = common::numalab(&["report", &f, "-o", html.to_str().unwrap()]);
    let text = common::ok_text(&out);
    assert!(
        text.contains("2 cores together 15.4 GB/s (1.8×)")
            && !text.contains("rule bandwidth-scaling"),
        "{text}"
    );
    // Two cores at 30.7 GB/s would be 3.6× one core: the report says which rule it
    // broke, the card shows it as implausible, and no sentence states either figure.
    let f = edited_fixture(&dir, "superlinear.json", |r| {
        if r["parameters"].get("requestor_cpus").is_some() && r["parameters"]["kernel"] == "readv" {
            for s in r["stats"].as_array_mut().into_iter().flatten() {
                for k in ["min", "p5", "median", "mean", "p95", "max"] {
                    s[k] = (s[k].as_f64().unwrap() * 2.0).into();
                }
            }
        }
    });
    let html2 = dir.join("r2.html");
    let out = common::numalab(&["report", &f, "-o", html2.to_str().unwrap()]);
    let text = common::ok_text(&out);
    assert!(
        text.contains("implausible (rule bandwidth-scaling)"),
        "{text}"
    );
    assert!(
        text.contains("rule bandwidth-scaling: 2 threads readv 30.7 GB/s from memory, 3.6×"),
        "{text}"
    );
    assert!(
        !text.contains("together") && !text.contains("streams"),
        "{text}"
    );
    let page = std::fs::read_to_string(&html2).unwrap();
    assert!(page.contains("<code>bandwidth-scaling</code>") && !page.contains("together"));
    // The detail tables still show the figure, but marked as breaking the rule.
    assert!(
        page.contains("30.71 ✗ (bandwidth-scaling)") && page.contains("<td>30.71 ✗</td>"),
        "{page}"
    );
}
