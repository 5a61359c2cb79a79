//! Red-team cases of issue 40 about input: paths and values that are not what a flag
//! takes, options that do not apply, and the messages and exit statuses they get.

mod common;

/// Asserts a refusal: exit 2, one line on stderr containing every one of `names`,
/// nothing on stdout.
fn assert_refused(args: &[&str], names: &[&str]) -> String {
    let out = common::bounded("120", args, &[]);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    for n in names {
        assert!(err.contains(n), "{args:?}: '{n}' not in {err}");
    }
    assert!(out.stdout.is_empty(), "{args:?} printed on stdout");
    err
}

#[test]
fn a_topology_that_is_not_an_xml_file_is_refused_not_a_panic() {
    let dir = common::tmpdir("topology-dir");
    let d = dir.display().to_string();
    for path in [d.as_str(), "/proc/self/mem", "/dev/null"] {
        for cmd in [
            &["topo"][..],
            &["latency", "--dry-run"],
            &["plan", "pu:0"],
            &["survey", "--dry-run"],
            &["mpi", "latency", "--dry-run"],
        ] {
            let mut args = cmd.to_vec();
            args.extend(["--topology", path]);
            assert_refused(&args, &[path]);
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn model_fit_reads_its_csv_header_and_gives_no_local_figure_without_0_hops() {
    let dir = common::tmpdir("model-header");
    let csv = dir.join("m.csv");
    let p = csv.display().to_string();
    std::fs::write(&csv, "a,b\n0,90\n1,140\n").unwrap();
    assert_refused(&["model", "fit", &p], &["'a,b'", "a, b", "hops,latency_ns"]);
    // Swapped columns are mapped by name: local 90, per hop 50.
    std::fs::write(&csv, "latency_ns,hops\n90,0\n140,1\n").unwrap();
    let out = common::numalab(&["model", "fit", &p, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let f = &common::validate(&out.stdout)[0]["data"]["fit"];
    assert!((f["local_ns"].as_f64().unwrap() - 90.0).abs() < 1e-9, "{f}");
    assert!(
        (f["per_hop_ns"].as_f64().unwrap() - 50.0).abs() < 1e-9,
        "{f}"
    );
    // Only 2-hop rows: no local figure, and the text says what cannot be separated.
    std::fs::write(&csv, "hops,latency_ns\n2,200\n2,210\n").unwrap();
    let out = common::numalab(&["model", "fit", &p, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let f = &common::validate(&out.stdout)[0]["data"]["fit"];
    assert!(f["local_ns"].is_null(), "{f}");
    let out = common::numalab(&["model", "fit", &p]);
    let text = String::from_utf8_lossy(&out.stdout);
    let local = text.lines().find(|l| l.trim_start().starts_with("local"));
    assert!(local.is_some_and(|l| l.contains("not separable")), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Records of a `loaded-latency` plan in `dir`, enough for `report` to run.
fn plan_records(dir: &std::path::Path) -> String {
    let recs = dir.join("plan.json").display().to_string();
    let topo = common::topology("16amd64-4distances.xml");
    let out = common::numalab(&[
        "loaded-latency",
        "--dry-run",
        "--topology",
        &topo,
        "-o",
        &recs,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    recs
}

#[test]
fn impossible_mess_reference_rows_are_refused_and_a_bom_is_accepted() {
    let dir = common::tmpdir("mess-reference");
    let recs = plan_records(&dir);
    let csv = dir.join("ref.csv");
    let c = csv.display().to_string();
    let html = dir.join("r.html");
    let h = html.display().to_string();
    let head = "read_pct_rounded,bandwidth_mean,latency_mean\n100,5,80\n";
    for (row, named) in [
        ("100,-5,90", "'-5'"),
        ("100,0,90", "'0'"),
        ("100,1e308,90", "'1e308'"),
        ("100,10,0", "'0'"),
        ("250,10,90", "'250'"),
        ("-5,10,90", "'-5'"),
    ] {
        std::fs::write(&csv, format!("{head}{row}\n")).unwrap();
        assert_refused(
            &["report", &recs, "--reference", &c, "-o", &h],
            &[&c, "line 3", named],
        );
        assert!(!html.exists(), "{row}: a page was written");
    }
    std::fs::write(&csv, format!("\u{feff}{head}50,6,95\n")).unwrap();
    let out = common::numalab(&["report", &recs, "--reference", &c, "-o", &h]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
