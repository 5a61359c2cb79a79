//! The numalab binary end to end: schemas, exit codes, no partial files.

mod common;

use common::{bad_input, numalab, tmpdir, topology, validate};

#[test]
fn topo_json_validates_against_the_schema() {
    let out = numalab(&["topo", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = validate(&out.stdout);
    let rec = &v[0];
    assert_eq!(rec["kind"], "topo");
    assert!(!rec["data"]["pus"].as_array().unwrap().is_empty());
    assert!(rec["provenance"]["kernel"].as_str().unwrap().len() > 1);
}

#[test]
fn topo_of_every_shared_topology_validates() {
    for name in [
        "16amd64-4distances.xml",
        "8intel64-4n2t-memattrs.xml",
        "offline-cpu0-node0.xml",
    ] {
        let out = numalab(&["topo", "--json", "--topology", &topology(name)]);
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        validate(&out.stdout);
        let text = numalab(&["topo", "--topology", &topology(name)]);
        assert!(String::from_utf8_lossy(&text.stdout).contains("NUMA nodes"));
    }
}

#[test]
fn plan_json_validates_and_verify_proves_placement() {
    let out = numalab(&[
        "plan", "compact", "-n", "1", "--mem", "local", "--size", "4M", "--verify", "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = validate(&out.stdout);
    let placement = &v[0]["placement"];
    let cpu = placement["resolved"]["threads"][0]["os"].as_u64().unwrap();
    assert_eq!(
        placement["verified"]["threads"][0]["observed_cpu"].as_u64(),
        Some(cpu)
    );
    assert_eq!(placement["verified"]["memory"]["pages_checked"], 1024);

    let out = numalab(&[
        "plan",
        "scatter:node",
        "-n",
        "8",
        "--mem",
        "farthest",
        "--json",
        "--topology",
        &topology("64amd64-4s2n4ca2co.xml"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    validate(&out.stdout);
}

#[test]
fn csv_and_json_files_are_written() {
    let d = tmpdir("files");
    for ext in ["json", "csv"] {
        let f = d.join(format!("t.{ext}"));
        let out = numalab(&["topo", "-o", f.to_str().unwrap()]);
        assert!(out.status.success());
        let body = std::fs::read_to_string(&f).unwrap();
        if ext == "json" {
            validate(body.as_bytes());
        } else {
            assert!(body.starts_with("kind,name,metric,unit,n,min,p5,median,mean,p95,max,stdev"));
        }
    }
}

/// Each bad input: exit 2, one line naming the value, and no output file.
#[test]
fn bad_input_exits_2_naming_the_value_without_partial_files() {
    let d = tmpdir("bad");
    let f = d.join("out.json");
    let fs = f.to_str().unwrap();
    let bad_xml = d.join("bad.xml");
    std::fs::write(&bad_xml, "<topology>not really</topology>").unwrap();
    let txt = d.join("x.txt");
    let xml16 = topology("16amd64-4distances.xml");
    let offline = topology("offline-cpu0-node0.xml");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["plan", "9999", "-o", fs], "CPU 9999"),
        (vec!["plan", "--mem", "99", "-o", fs], "node 99"),
        (vec!["plan", "frobnicate", "-o", fs], "'frobnicate'"),
        (vec!["plan", "batch:0", "-o", fs], "'batch:0'"),
        (vec!["plan", "--page-size", "3m", "-o", fs], "'3m'"),
        (vec!["plan", "--size", "0", "--mem", "0", "-o", fs], "'0'"),
        (
            vec!["plan", "--mem", "0", "--size", "900T", "-o", fs],
            "900",
        ),
        (vec!["plan", "-n", "0", "-o", fs], "0"),
        (
            vec!["topo", "--topology", "/no/such.xml", "-o", fs],
            "/no/such.xml",
        ),
        (
            vec!["topo", "--topology", bad_xml.to_str().unwrap(), "-o", fs],
            "bad.xml",
        ),
        (vec!["topo", "-o", "/no/such/dir/x.json"], "/no/such/dir"),
        (vec!["topo", "-o", txt.to_str().unwrap()], "x.txt"),
        (vec!["plan", "--verify", "--topology", &xml16], "--verify"),
        // The directory exists but takes no files: refused before measuring.
        (
            vec!["latency", "--size", "64K", "-o", "/proc/numalab.json"],
            "cannot create a file in '/proc'",
        ),
        (
            vec!["report", fs, "-o", "/proc/numalab.html"],
            "cannot create a file in '/proc'",
        ),
        (
            vec![
                "plan",
                "scatter:node",
                "-n",
                "9",
                "--topology",
                &offline,
                "-o",
                fs,
            ],
            "reaches only 8 usable CPUs",
        ),
    ];
    for (args, needle) in cases {
        bad_input(&numalab(&args), &[needle], &format!("{args:?}"));
        assert!(!f.exists(), "{args:?} left a file");
    }
}

#[test]
fn help_and_version() {
    let out = numalab(&["--version"]);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("numalab "));
    let out = numalab(&["--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    for cmd in ["topo", "plan", "schema"] {
        assert!(help.contains(cmd), "{help}");
    }
}

#[test]
fn plan_text_shows_no_cpu_kind_column_on_a_machine_of_one_kind() {
    let out = numalab(&[
        "plan",
        "compact",
        "-n",
        "2",
        "--topology",
        &topology("64amd64-4s2n4ca2co.xml"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let header = text
        .lines()
        .find(|l| l.trim_start().starts_with("thread"))
        .unwrap_or_else(|| panic!("no threads table: {text}"));
    assert!(
        header.contains("node") && !header.contains("kind"),
        "{header}"
    );
    assert!(text.contains("2 threads on"), "{text}");
}

/// The CPU-kind column tells threads apart only on a hybrid CPU: `plan` shows it on a
/// P/E-core topology and never prints a column of zeros ("kind 0") elsewhere.
#[test]
fn plan_shows_the_cpu_kind_column_only_on_a_hybrid_cpu() {
    let header = |xml: &str, threads: &str| {
        let out = numalab(&["plan", threads, "--topology", &topology(xml)]);
        assert!(
            out.status.success(),
            "{xml}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let line = text.lines().find(|l| l.trim_start().starts_with("thread"));
        let cols: Vec<String> = line
            .unwrap_or_else(|| panic!("{xml}: no threads table in {text}"))
            .split_whitespace()
            .map(str::to_string)
            .collect();
        cols
    };
    let plain = header("16em64t-4s2c2t.xml", "0-3");
    assert!(plain.contains(&"node".to_string()), "{plain:?}");
    assert!(!plain.contains(&"kind".to_string()), "{plain:?}");
    let hybrid = header("20em64t-hybrid-1p6c2t+2ca4co1t.xml", "0-15");
    assert!(hybrid.contains(&"kind".to_string()), "{hybrid:?}");
}

/// `topo`, `tiers` and `plan` measure nothing: their records and text name the
/// hypervisor (when there is one) but never warn that timings or figures may be
/// disturbed, nor name other runs (issue 42 item 4).
#[test]
fn commands_that_measure_nothing_do_not_warn_of_disturbance() {
    // The suites' and the DSM's dry runs plan and measure nothing either.
    for args in [
        &["topo"][..],
        &["tiers"],
        &["plan", "-n", "1"],
        &["suite", "collectives", "--dry-run"],
        &["suite", "earth", "--dry-run"],
        &["suite", "cvm", "--dry-run"],
        &["dsm", "run", "sor", "--dry-run"],
        &["cluster", "--dry-run", "--hosts", "3"],
    ] {
        let what = args.join(" ");
        let json = numalab(&[args, &["--json"]].concat());
        assert!(
            json.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&json.stderr)
        );
        let text = numalab(args);
        assert!(text.status.success(), "{what}");
        let mut said: Vec<String> = validate(&json.stdout)
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| r["warnings"].as_array().unwrap().clone())
            .map(|w| w.as_str().unwrap().to_string())
            .collect();
        said.extend(
            String::from_utf8_lossy(&text.stdout)
                .lines()
                .map(String::from),
        );
        for line in said {
            for word in ["timings", "disturbed", "another numalab measurement"] {
                assert!(!line.contains(word), "{what}: '{word}' in: {line}");
            }
        }
    }
}

/// `plan --verify` on a CPU of one kind shows no CPU-kind column (no "kind 0").
#[test]
fn plan_verify_on_a_cpu_of_one_kind_has_no_kind_column() {
    let topo = validate(&numalab(&["topo", "--json"]).stdout);
    if topo[0]["data"]["cpu_kinds"].as_array().map_or(0, Vec::len) > 1 {
        eprintln!("skipped: this CPU has several kinds (hybrid)");
        return;
    }
    let out = numalab(&["plan", "-n", "1", "--verify"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let header = text
        .lines()
        .find(|l| l.trim_start().starts_with("thread"))
        .unwrap_or_else(|| panic!("no threads table in {text}"));
    assert!(header.contains("verified"), "{text}");
    assert!(!header.split_whitespace().any(|c| c == "kind"), "{text}");
}

/// `topo` and `tiers` show one size per node on this machine, and each says which
/// figure it shows (issue 42 item 4).
#[test]
fn topo_and_tiers_agree_on_each_nodes_size_and_say_which_figure() {
    let ok_json = |args: &[&str]| {
        let out = numalab(args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        validate(&out.stdout)
    };
    let topo = ok_json(&["topo", "--json"]);
    let tiers = ok_json(&["tiers", "--json"]);
    let nodes = topo[0]["data"]["nodes"].as_array().unwrap();
    for t in tiers
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "tiers")
    {
        let n = &t["data"]["node"];
        let Some(node) = nodes.iter().find(|x| x["os"] == *n) else {
            continue;
        };
        assert_eq!(t["data"]["mem_bytes"], node["total_bytes"], "node {n}");
    }
    let said = |args: &[&str]| String::from_utf8_lossy(&numalab(args).stdout).to_string();
    assert!(said(&["topo"]).contains("total: the node's memory as hwloc reports it"));
    assert!(said(&["tiers"]).contains("memory: the node's MemTotal (sysfs)"));
}
