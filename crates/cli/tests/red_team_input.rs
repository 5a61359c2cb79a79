//! Red-team cases of issue 40 about input: paths and values that are not what a flag
//! takes, options that do not apply, and the messages and exit statuses they get.

mod common;

/// Asserts a refusal: exit 2, one line on stderr containing every one of `names`,
/// nothing on stdout.
fn assert_refused(args: &[&str], names: &[&str]) -> String {
    let out = common::bounded("120", args, &[]);
    common::bad_input(&out, names, &format!("{args:?}"))
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

#[test]
fn every_experiment_that_allocates_per_thread_checks_memory_in_its_plan() {
    // A topology file's nodes hold what the file says: 1 TiB per thread fits none.
    let topo = common::topology("16amd64-4distances.xml");
    for cmd in [
        &["bandwidth", "-n", "2", "--size", "1T"][..],
        &["matrix", "bandwidth", "--size", "1T"],
        &["matrix", "latency", "--size", "1T"],
        &["latency", "--size", "1T"],
        &["loaded-latency", "--size", "1T"],
        &["suite", "collectives", "--sizes", "1T"],
    ] {
        let mut args = cmd.to_vec();
        args.extend(["--dry-run", "--topology", &topo]);
        assert_refused(&args, &["node"]);
    }
    // And on this machine, where free memory is the bound.
    for cmd in [
        &["matrix", "bandwidth", "--size", "64T"][..],
        &["suite", "collectives", "--sizes", "64T"],
    ] {
        let mut args = cmd.to_vec();
        args.push("--dry-run");
        assert_refused(&args, &["node"]);
    }
}

#[test]
fn options_that_do_not_apply_are_refused_by_name() {
    let dir = common::tmpdir("not-apply");
    let trace = dir.join("t.json");
    let t = trace.display().to_string();
    let out = common::bounded("60", &["record", "-o", &t, "--", "true"], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = dir.join("r.html").display().to_string();
    for (args, names) in [
        (
            &["bandwidth", "--store", "nt", "--dry-run"][..],
            &["--store", "'nt'", "--mix"][..],
        ),
        (
            &["bandwidth", "--mix", "1:0", "--helpers", "1", "--dry-run"],
            &["--helpers", "'1'"],
        ),
        (
            &["loaded-latency", "--cpu", "0,1", "--dry-run"],
            &["--cpu", "'0,1'"],
        ),
        (
            &["invalidate", "--cpu", "0,1", "--dry-run"],
            &["--cpu", "'0,1'"],
        ),
        (
            &["intervene", "--cpu", "0,1", "--dry-run"],
            &["--cpu", "'0,1'"],
        ),
        (
            &["report", &t, "--reference", "x.csv", "-o", &html],
            &["--reference", "'x.csv'"],
        ),
    ] {
        assert_refused(args, names);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_mpi_timeout_below_a_second_is_refused_not_shown_as_0_s() {
    let out = common::bounded(
        "60",
        &["mpi", "latency", "--ranks", "2", "--sizes", "8"],
        &[("NUMALAB_MPI_TIMEOUT", "0.001")],
    );
    let err = common::bad_input(
        &out,
        &["NUMALAB_MPI_TIMEOUT '0.001'", "1 second"],
        "NUMALAB_MPI_TIMEOUT=0.001",
    );
    assert!(!err.contains("(0 s)"), "{err}");
}

#[test]
fn tiers_refuses_a_root_that_is_not_a_tree_and_a_size_beyond_memory() {
    let dir = common::tmpdir("tiers-root");
    let file = dir.join("f");
    std::fs::write(&file, "x").unwrap();
    let f = file.display().to_string();
    let d = dir.display().to_string();
    for root in ["/nonexistent", f.as_str(), d.as_str()] {
        assert_refused(&["tiers", "--root", root], &["--root", root]);
    }
    assert_refused(
        &["tiers", "--verify-interleave", "1T"],
        &["'1T'", "1 TiB", "available"],
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn tiers_names_each_malformed_file_with_its_content() {
    let root = common::tmpdir("tiers-garbage");
    let put = |rel: &str, body: &str| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    };
    let n0 = "sys/devices/system/node/node0";
    put(&format!("{n0}/cpulist"), "0-1\n");
    put(&format!("{n0}/meminfo"), "Node 0 MemTotal: 1048576 kB\n");
    put(&format!("{n0}/access1/initiators/read_latency"), "abc\n");
    put("sys/devices/system/node/node1/cpulist", "0-zz\n");
    put("sys/devices/system/node/node2/cpulist", "\n");
    put("sys/devices/system/node/node2/meminfo", "garbage\n");
    put("sys/kernel/mm/numa/demotion_enabled", "maybe\n");
    put(
        "sys/devices/virtual/memory_tiering/memory_tier4/nodelist",
        "zz\n",
    );
    let r = root.display().to_string();
    let out = common::numalab(&["tiers", "--root", &r, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = common::validate(&out.stdout);
    let sys = v
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["kind"] == "tiers-system")
        .unwrap();
    let text: Vec<String> = sys["data"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["text"].as_str().unwrap().to_string())
        .collect();
    let all = text.join("\n");
    for want in ["'abc'", "'0-zz'", "'garbage'", "'maybe'", "'zz'"] {
        assert!(all.contains(want), "{want} not named:\n{all}");
    }
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn cosmetic_lines_say_what_is_true() {
    // An index beyond any machine is named as such, not as a missing index.
    let err = assert_refused(&["plan", "pu:4294967296"], &["4294967296", "beyond"]);
    assert!(!err.contains("needs an index"), "{err}");
    // A trace of a program that ends at once gives no share of a span too short for one.
    let dir = common::tmpdir("cosmetic");
    let t = dir.join("t.json").display().to_string();
    let out = common::bounded("60", &["record", "-o", &t, "--", "true"], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = common::bounded("60", &["info", &t], &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    if let Some(line) = text.lines().find(|l| l.contains("the sampler used")) {
        assert!(
            line.contains("too short") || !line.contains("0.000 s"),
            "{line}"
        );
    }
    // A 1e308 median gives a short ratio; a record repeated in B is a duplicate.
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/report/charts.json"
    );
    let all: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    let mut one = all
        .into_iter()
        .find(|r| r["stats"].as_array().is_some_and(|s| s.len() == 1))
        .unwrap();
    let (a, b) = (dir.join("a.json"), dir.join("b.json"));
    std::fs::write(&a, serde_json::to_string(&[&one]).unwrap()).unwrap();
    for f in ["min", "p5", "median", "mean", "p95", "max"] {
        one["stats"][0][f] = serde_json::json!(1e308);
    }
    std::fs::write(&b, serde_json::to_string(&[&one, &one]).unwrap()).unwrap();
    let (a, b) = (a.display().to_string(), b.display().to_string());
    let out = common::numalab(&["compare", &a, &b]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let longest = text
        .split(|c: char| !c.is_ascii_digit())
        .map(str::len)
        .max()
        .unwrap_or(0);
    assert!(longest < 30, "a {longest}-digit number:\n{text}");
    assert!(
        !text.contains("only in B") && text.contains("0 repeated in A and 1 in B"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
