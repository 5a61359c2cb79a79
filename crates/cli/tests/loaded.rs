//! `numalab loaded-latency`: plan, bad input, and the curve's ordering on this machine.

mod common;

use common::{bad_input, ensure, measured_claim, numalab, run_json, stat, topology};

#[test]
fn injectors_default_to_every_other_core() {
    let topo = topology("16amd64-4distances.xml");
    let v = run_json("loaded-latency", &["--dry-run", "--topology", &topo]);
    let inj = v[0]["placement"]["resolved"]["injectors"]
        .as_array()
        .unwrap();
    assert_eq!(inj.len(), 15);
    assert!(inj.iter().all(|t| t["os"] != 0));
    assert_eq!(v[0]["data"]["delays"][0], 20000);
    assert_eq!(
        v[0]["data"]["delays"].as_array().unwrap().last().unwrap(),
        0
    );
    let v = run_json(
        "loaded-latency",
        &[
            "--dry-run",
            "--topology",
            &topo,
            "--injectors",
            "8-11",
            "--delays",
            "500,0",
        ],
    );
    assert_eq!(v[0]["parameters"]["injector_cpus"], "8-11");
}

#[test]
fn bad_input_is_named() {
    let topo = topology("16amd64-4distances.xml");
    for (flag, value) in [
        ("--traffic", "rw"),
        ("--delays", "fast"),
        ("--injectors", "0"),
        ("--size", "4K"),
        ("--iterations", "0"),
    ] {
        let out = numalab(&[
            "loaded-latency",
            "--dry-run",
            "--topology",
            &topo,
            flag,
            value,
        ]);
        bad_input(&out, &[value], &format!("{flag} {value}"));
    }
}

#[test]
fn less_delay_injects_more_traffic() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        eprintln!("skipped: injectors need a second core");
        return;
    }
    // Injectors spinning 2000 times after each line inject ~20× less than ones that do
    // not spin: the best pass of each (preemption only lowers a rate).
    let measure = || {
        run_json(
            "loaded-latency",
            &[
                "--delays",
                "2000,0",
                "--iterations",
                "2",
                "--size",
                "32M",
                "--inject-size",
                "32M",
            ],
        )
    };
    measured_claim("injected bandwidth", measure, |v| {
        let recs = v.as_array().unwrap();
        assert_eq!(recs.len(), 3);
        assert_eq!(recs[0]["name"], "unloaded");
        assert!(recs[0]["stats"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["metric"] != "injected_bandwidth"));
        // The fastest pass, below 1 ms per load whatever the scheduling.
        for r in recs {
            let l = stat(r, "latency", "min");
            assert!(l > 0.0 && l < 1e6, "{l}");
        }
        let slow = stat(&recs[1], "injected_bandwidth", "max");
        let fast = stat(&recs[2], "injected_bandwidth", "max");
        assert!(slow > 0.0 && fast < 5_000.0, "{slow} {fast}");
        ensure(fast > slow, || {
            format!("delay 0: {fast} GB/s, delay 2000: {slow} GB/s")
        })
    });
}

#[test]
fn a_family_plans_one_curve_per_write_percentage() {
    let topo = topology("16amd64-4distances.xml");
    let v = run_json(
        "loaded-latency",
        &[
            "--dry-run",
            "--topology",
            &topo,
            "--writes",
            "0,25,50,75,100",
            "--delays",
            "500,0",
        ],
    );
    assert_eq!(
        v[0]["data"]["write_pcts"],
        serde_json::json!([0, 25, 50, 75, 100])
    );
    assert_eq!(v[0]["parameters"]["traffic"], "mix");
    let text = numalab(&[
        "loaded-latency",
        "--dry-run",
        "--topology",
        &topo,
        "--writes",
        "0,50",
    ]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("0, 50 % writes"));
}

#[test]
fn bad_family_input_is_named_and_writes_nothing() {
    let topo = topology("16amd64-4distances.xml");
    let dir = common::tmpdir("loaded-bad");
    let csv = dir.join("curves.csv").display().to_string();
    for (flag, value, named) in [
        ("--writes", "120", "'120'"),
        ("--writes", "-5", "'-5'"),
        ("--writes", "0,half", "'half'"),
        ("--writes", "0,0", "'0'"),
        ("--mem-node", "9", "9"),
        ("--traffic", "write", "'write'"),
    ] {
        let mut args = vec![
            "loaded-latency",
            "--dry-run",
            "--topology",
            &topo,
            "--mess-csv",
            &csv,
            flag,
            value,
        ];
        if flag != "--writes" {
            args.extend(["--writes", "0,50"]);
        }
        let out = numalab(&args);
        bad_input(&out, &[named], &format!("{flag} {value}"));
        assert!(!std::path::Path::new(&csv).exists());
    }
    // A CSV that already holds curves is kept unless --force.
    std::fs::write(&csv, "read_pct_rounded\n").unwrap();
    let out = numalab(&[
        "loaded-latency",
        "--dry-run",
        "--topology",
        &topo,
        "--mess-csv",
        &csv,
    ]);
    bad_input(&out, &["--force"], "a CSV that holds curves");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_family_issues_its_mixes_and_writes_mess_columns() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        eprintln!("skipped: injectors need a second core");
        return;
    }
    let dir = common::tmpdir("loaded-family");
    let csv = dir.join("curves.csv");
    let csv_s = csv.display().to_string();
    let measure = || {
        run_json(
            "loaded-latency",
            &[
                "--writes",
                "0,50,100",
                "--delays",
                "2000,0",
                "--iterations",
                "2",
                "--size",
                "16M",
                "--inject-size",
                "16M",
                "--mess-csv",
                &csv_s,
                "--force",
            ],
        )
    };
    measured_claim("family bandwidth", measure, |v| {
        let recs = v.as_array().unwrap();
        assert_eq!(recs.len(), 1 + 3 * 2);
        assert_eq!(recs[0]["name"], "unloaded");
        for (i, want) in [1.0, 0.5, 0.0].iter().enumerate() {
            let (slow, fast) = (&recs[1 + 2 * i], &recs[2 + 2 * i]);
            assert_eq!(slow["parameters"]["delay"], 2000);
            for r in [slow, fast] {
                // The issued share is the mix's, whatever the timing (one check's lines at most apart).
                let share = stat(r, "read_share", "median");
                assert!((share - want).abs() < 0.02, "{}: {share}", r["name"]);
            }
            let (s, f) = (
                stat(slow, "issued_bandwidth", "max"),
                stat(fast, "issued_bandwidth", "max"),
            );
            ensure(f > s, || {
                format!("{}: pace 0 {f} GB/s, pace 2000 {s} GB/s", fast["name"])
            })?;
        }
        let text = std::fs::read_to_string(&csv).unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next().unwrap(), numalab_bench::loaded::MESS_HEADER);
        let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
        assert_eq!(rows.len(), 6);
        assert!(rows.iter().all(|r| r.len() == 9));
        // Mess's read percentage of the traffic: writes only read each line first (50 %).
        let pcts: Vec<&str> = rows.iter().map(|r| r[0]).collect();
        assert_eq!(pcts, ["100", "100", "67", "67", "50", "50"]);
        Ok(())
    });
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn report_overlays_a_mess_reference() {
    let dir = common::tmpdir("loaded-ref");
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/mess/clx-excerpt.csv"
    );
    // Records of a plan are enough for the report to run; the reference is drawn alone.
    let recs = dir.join("plan.json").display().to_string();
    let topo = topology("16amd64-4distances.xml");
    let out = numalab(&[
        "loaded-latency",
        "--dry-run",
        "--topology",
        &topo,
        "-o",
        &recs,
    ]);
    assert!(out.status.success());
    let html = dir.join("r.html").display().to_string();
    let out = numalab(&["report", &recs, "--reference", fixture, "-o", &html]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("another machine"), "no reference label");
    assert!(page.contains("100% reads") && page.contains("50% reads"));
    assert!(page.contains("<svg"));
    // A file that is not Mess's: one line, exit 2, no page.
    let bad = dir.join("bad.csv");
    std::fs::write(&bad, "a,b\n1,2\n").unwrap();
    let html2 = dir.join("r2.html");
    let out = numalab(&[
        "report",
        &recs,
        "--reference",
        bad.to_str().unwrap(),
        "-o",
        html2.to_str().unwrap(),
    ]);
    bad_input(&out, &["read_pct_rounded"], "a reference not Mess's");
    assert!(!html2.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
