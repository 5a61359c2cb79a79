//! monitor, record, info, dump, export and report TRACE, live on this machine.

mod common;
use common::{bad_input, numalab, tmpdir};
use numalab_prof::metrics::{catalogue, findings, series, Index};
use numalab_prof::trace::{self, ObjKind};
use std::path::PathBuf;
use std::process::Command;

/// The example target (built by `cargo test`; built here when run alone).
fn first_touch() -> PathBuf {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_numalab"));
    let p = bin.parent().unwrap().join("examples/first_touch");
    if !p.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let st = Command::new(cargo)
            .args(["build", "-p", "numalab", "--example", "first_touch"])
            .status()
            .expect("cargo build --example first_touch");
        assert!(st.success());
    }
    p
}

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn record_follows_every_thread_and_sees_pages_first_touched_on_node_0() {
    let d = tmpdir("record");
    let tr = d.join("ft.trace");
    let ft = first_touch();
    let record = || {
        let o = numalab(&[
            "record",
            "-i",
            "20",
            "--pages-every",
            "5",
            "-o",
            tr.to_str().unwrap(),
            "--",
            ft.to_str().unwrap(),
            "32",
            "2",
            "3000",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", s(&o.stderr));
        assert!(s(&o.stderr).contains("exited with status 0"));
        trace::read(&tr).unwrap()
    };
    // The most memory any page sample of the process saw.
    let most_mem = |t: &trace::Trace| {
        let p = t.objects_of(ObjKind::Process).next().unwrap();
        t.samples
            .iter()
            .filter(|x| x.obj == p.id)
            .filter_map(|x| x.v.get("mem").copied())
            .fold(0.0, f64::max)
    };
    // Page samples are capped at 0.25% of the recorder's wall time, so on a busy
    // machine they come seconds apart and may all miss the 32 MiB (one before the
    // first touch, the next after the exit): then record once more.
    let mut t = record();
    if most_mem(&t) < (32 << 20) as f64 {
        eprintln!("no page sample saw the 32 MiB: recording once more");
        t = record();
    }
    assert!(t.end.is_some() && !t.torn_tail);
    let threads: Vec<_> = t.objects_of(ObjKind::Thread).collect();
    // The main thread and both readers, all in the one process.
    assert!(threads.len() >= 3, "{threads:?}");
    assert!(
        threads.iter().any(|o| o.name == "reader0") && threads.iter().any(|o| o.name == "reader1")
    );
    let ix = Index::new(&t);
    let cpus = t
        .header
        .nodes
        .iter()
        .flat_map(|n| n.cpus.clone())
        .collect::<Vec<_>>();
    for o in &threads {
        let sm = ix.of(&o.id);
        assert!(!sm.is_empty(), "{} has samples", o.id);
        for x in sm {
            assert!(cpus.contains(&(x.v["cpu"] as u32)), "a CPU of this machine");
        }
    }
    // Every page of the process sits on node 0 here, and some page sample saw at least
    // the 32 MiB touched (the last one may come before the buffer, from a recorder kept
    // off the CPU, or during the exit).
    let p = t.objects_of(ObjKind::Process).next().unwrap();
    let pages: Vec<_> = ix
        .of(&p.id)
        .iter()
        .filter(|s| s.v.contains_key("mem"))
        .collect();
    for s in &pages {
        assert_eq!(s.v.get("mem.0"), Some(&s.v["mem"]), "{:?}", s.v);
    }
    let most = pages.iter().map(|s| s.v["mem"]).fold(0.0, f64::max);
    assert!(most >= (32 << 20) as f64, "{pages:?}");
    let loc = series(&ix, "thread.page_locality");
    assert!(!loc.is_empty() && loc.iter().all(|p| p.value == 1.0));
    // Each metric names its source; without a PMU the counter metric says why it is absent.
    let cat = catalogue(&ix);
    let lar = cat
        .iter()
        .find(|m| m.name == "thread.local_access_ratio")
        .unwrap();
    assert_eq!(lar.source, "perf-core");
    if !t.source_ok("perf-core") {
        assert!(lar.missing.as_deref().is_some_and(|w| !w.is_empty()));
        assert!(findings(&ix)
            .iter()
            .all(|f| f.what != "local memory access ratio"));
    }
    assert!(findings(&ix)
        .iter()
        .any(|f| f.what.starts_with("page locality (proxy")
            && f.obj == "all threads"
            && f.value == "1.000"));
    // info, dump and the report read it.
    let i = numalab(&["info", tr.to_str().unwrap()]);
    assert!(i.status.success());
    let text = s(&i.stdout);
    for w in [
        "reader0",
        "sources:",
        "metrics derivable",
        "page locality",
        "exit status 0",
    ] {
        assert!(text.contains(w), "info lacks {w}: {text}");
    }
    let dm = numalab(&[
        "dump",
        tr.to_str().unwrap(),
        "--metric",
        "thread.node",
        "--json",
    ]);
    assert!(dm.status.success());
    let rows: Vec<serde_json::Value> = s(&dm.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        !rows.is_empty()
            && rows
                .iter()
                .all(|r| r["metric"] == "thread.node" && r["value"] == 0.0)
    );
    let html = d.join("r.html");
    let r = numalab(&["report", tr.to_str().unwrap(), "-o", html.to_str().unwrap()]);
    assert!(r.status.success(), "{}", s(&r.stderr));
    let h = std::fs::read_to_string(&html).unwrap();
    assert!(h.contains("Threads: where they ran") && h.contains("<svg") && h.contains("perf-core"));
    // Perfetto: a named track per thread, slices with CPU and node, node counter tracks.
    let pj = d.join("p.json");
    let e = numalab(&[
        "export",
        tr.to_str().unwrap(),
        "--perfetto",
        "-o",
        pj.to_str().unwrap(),
    ]);
    assert!(e.status.success(), "{}", s(&e.stderr));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&pj).unwrap()).unwrap();
    let ev = v["traceEvents"].as_array().unwrap();
    let names: Vec<&str> = ev
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .filter_map(|e| e["args"]["name"].as_str())
        .collect();
    assert!(names.iter().any(|n| n.starts_with("reader1")), "{names:?}");
    assert!(ev
        .iter()
        .any(|e| e["ph"] == "X" && e["args"]["node"] == "0" && e["dur"].as_f64().unwrap() > 0.0));
    assert!(ev
        .iter()
        .any(|e| e["ph"] == "C" && e["name"] == "cpu busy %"));
    for e in ev {
        assert!(e["ph"].is_string() && e["pid"].is_number(), "{e}");
    }
}

#[test]
fn a_crashing_target_propagates_its_status_and_leaves_a_complete_trace() {
    let d = tmpdir("crash");
    let tr = d.join("c.trace");
    let o = numalab(&[
        "record",
        "-i",
        "10",
        "-o",
        tr.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        // The child lives 1 s: a recorder sampling every 10 ms sees it even when a
        // busy 2-core machine keeps it off the CPU for hundreds of milliseconds.
        "sleep 1; kill -SEGV $$",
    ]);
    assert_eq!(o.status.code(), Some(128 + 11), "{}", s(&o.stderr));
    assert!(s(&o.stderr).contains("killed by signal 11 (SIGSEGV)"));
    let t = trace::read(&tr).unwrap();
    assert_eq!(t.end.as_ref().unwrap().signal, Some(11));
    // The shell's child was followed as a process of its own. Objects come in order
    // of appearance: the shell first, then its child, named "sleep" when first seen
    // after its exec, or "sh" when seen before it, and then the exec is an event.
    let child = t
        .objects_of(ObjKind::Process)
        .nth(1)
        .expect("a child process");
    let exec_seen = t
        .events
        .iter()
        .any(|e| e.obj == child.id && e.what == "exec" && e.detail == "sleep");
    assert!(
        child.name == "sleep" || (child.name == "sh" && exec_seen),
        "{:?} {:?}",
        t.objects,
        t.events
    );
    assert!(t.events.iter().any(|e| e.what == "fork"));
    let o = numalab(&[
        "record",
        "--force",
        "-o",
        tr.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "exit 7",
    ]);
    assert_eq!(o.status.code(), Some(7), "{}", s(&o.stderr));
}

#[test]
fn a_missing_target_or_bad_option_is_a_one_line_error_and_no_trace() {
    let d = tmpdir("bad");
    let tr = d.join("m.trace");
    let o = numalab(&[
        "record",
        "-o",
        tr.to_str().unwrap(),
        "--",
        "no-such-program-xyz",
    ]);
    bad_input(
        &o,
        &["'no-such-program-xyz'"],
        "a program that is not there",
    );
    assert!(!tr.exists(), "no partial output");
    for (args, needle) in [
        (vec!["record", "-i", "0", "--", "true"], "'0'"),
        (vec!["record", "--pages-every", "0", "--", "true"], "'0'"),
        (vec!["record", "--runon", "9999", "--", "true"], "'9999'"),
        (
            vec!["record", "-o", "/no/such/dir/t.trace", "--", "true"],
            "/no/such/dir",
        ),
        (vec!["monitor", "--count", "0"], "'0'"),
        (vec!["monitor", "--node", "77", "--count", "1"], "node 77"),
        (vec!["monitor", "--interval", "70000"], "'70000'"),
        (vec!["info", "Cargo.toml"], "not a numalab trace"),
        (vec!["export", "Cargo.toml"], "--perfetto"),
    ] {
        bad_input(&numalab(&args), &[needle], &format!("{args:?}"));
    }
    // A trace already there is a measurement: refused, untouched, unless --force.
    let kept = d.join("kept.trace");
    std::fs::write(&kept, "an earlier trace").unwrap();
    let k = kept.to_str().unwrap();
    for args in [
        vec!["record", "-o", k, "--", "true"],
        vec!["monitor", "--count", "1", "-o", k],
    ] {
        bad_input(&numalab(&args), &[k, "--force"], &format!("{args:?}"));
        assert_eq!(std::fs::read_to_string(&kept).unwrap(), "an earlier trace");
    }
    let o = numalab(&["record", "--force", "-o", k, "--", "true"]);
    assert!(o.status.success(), "{}", s(&o.stderr));
    assert_ne!(std::fs::read_to_string(&kept).unwrap(), "an earlier trace");
}

#[test]
fn dump_names_valid_metrics_and_objects() {
    let fx =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../prof/tests/fixtures/two-socket.trace");
    let f = fx.to_str().unwrap();
    let o = numalab(&["dump", f, "--metric", "bogus"]);
    bad_input(&o, &["'bogus'", "thread.page_locality"], "--metric bogus");
    let o = numalab(&["dump", f, "--object", "t999"]);
    assert!(s(&o.stderr).contains("t100"));
    let o = numalab(&["dump", f, "--metric", "node.read_bw", "--object", "n1"]);
    let out = s(&o.stdout);
    assert!(
        o.status.success() && out.contains("1.0486") && !out.contains(" n0 "),
        "{out}"
    );
    // Every row says its unit; counts read as integers (issue 42).
    assert!(
        out.lines().next().unwrap().trim_end().ends_with("unit"),
        "{out}"
    );
    assert!(out.lines().skip(1).all(|l| l.ends_with(" MB/s")), "{out}");
    let o = numalab(&["dump", f, "--raw", "--object", "sys"]);
    let raw = s(&o.stdout);
    let row = raw
        .lines()
        .find(|l| l.contains("numa_hint_faults_local") && !l.contains(" 0 "))
        .expect("a hint-fault row");
    assert!(row.ends_with(" 5 count"), "{row}");
    assert!(!raw.contains(".0000"), "{raw}");
}

#[test]
fn a_recorder_killed_with_sigkill_leaves_a_trace_info_can_read() {
    let d = tmpdir("kill9");
    let tr = d.join("k.trace");
    let mut child = Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args([
            "record",
            "-i",
            "10",
            "-o",
            tr.to_str().unwrap(),
            "--",
            "sleep",
            "60",
        ])
        .spawn()
        .unwrap();
    // Wait until samples have been flushed, then kill without warning.
    let t0 = std::time::Instant::now();
    while std::fs::read_to_string(&tr).map_or(0, |s| s.matches("\"sample\"").count()) < 5 {
        if t0.elapsed().as_secs() >= 20 {
            let _ = child.kill();
            panic!("no samples flushed in 20 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // The target outlives its killed recorder (it sleeps 60 s so that it is surely
    // still running when the kill comes): end it first.
    let t = trace::read(&tr).unwrap();
    if let Some(pid) = t.objects_of(ObjKind::Process).next().and_then(|p| p.pid) {
        let _ = Command::new("kill").arg(pid.to_string()).status();
    }
    let o = numalab(&["info", tr.to_str().unwrap()]);
    assert!(o.status.success(), "{}", s(&o.stderr));
    assert!(s(&o.stdout).contains("end: none"));
    assert!(t.end.is_none() && !t.samples.is_empty());
}

#[test]
fn monitor_prints_count_lines_per_node_and_streams_a_trace() {
    let d = tmpdir("monitor");
    let tr = d.join("mon.trace");
    let o = numalab(&["monitor", "-i", "50", "-c", "3", "-o", tr.to_str().unwrap()]);
    assert!(o.status.success(), "{}", s(&o.stderr));
    let out = s(&o.stdout);
    let t = trace::read(&tr).unwrap();
    let nodes = t.header.nodes.len();
    let rows = out
        .lines()
        .filter(|l| !l.starts_with('#') && !l.contains("node"))
        .count();
    assert_eq!(rows, 3 * nodes, "{out}");
    // The samples are real: free memory is positive and below the node's total.
    let ix = Index::new(&t);
    let free = series(&ix, "node.mem_free");
    assert!(!free.is_empty() && free.iter().all(|p| p.value > 0.0));
    assert_eq!(t.end.as_ref().unwrap().reason, "count reached");
    let r = numalab(&[
        "report",
        tr.to_str().unwrap(),
        "-o",
        d.join("m.html").to_str().unwrap(),
    ]);
    assert!(r.status.success());
}

/// "N sampling rounds" (or "1 sampling round") in a line of text.
fn rounds_in(text: &str) -> Option<u64> {
    let i = text.find(" sampling round")?;
    text[..i]
        .rsplit(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

#[test]
fn record_and_info_count_sampling_rounds_the_same_way() {
    let d = tmpdir("rounds");
    let tr = d.join("r.trace");
    let o = numalab(&[
        "record",
        "-i",
        "20",
        "-o",
        tr.to_str().unwrap(),
        "--",
        "sleep",
        "0.2",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", s(&o.stderr));
    let said = rounds_in(&s(&o.stderr)).expect("record says its rounds");
    let i = numalab(&["info", tr.to_str().unwrap()]);
    assert!(i.status.success(), "{}", s(&i.stderr));
    assert_eq!(rounds_in(&s(&i.stdout)), Some(said), "{}", s(&i.stdout));
    let _ = std::fs::remove_dir_all(d);
}
