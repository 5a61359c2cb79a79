//! `numalab suite placement|collectives`: plans on real topologies, live runs on this
//! machine with checked data, and bad input.

mod common;

use common::{bad_input, numalab, run_json, stat, topology};

#[test]
fn placement_plans_batches_owners_and_domains_on_a_four_socket_machine() {
    let topo = topology("64amd64-4s2n4ca2co.xml");
    let v = run_json(
        "suite",
        &[
            "placement",
            "--dry-run",
            "--topology",
            &topo,
            "--parts",
            "1,3",
        ],
    );
    let plan = &v[0]["data"];
    assert_eq!(plan["level"], "node");
    let domains = plan["domains"].as_array().unwrap();
    assert_eq!(domains.len(), 8);
    let letter = |cpu: u64| {
        domains
            .iter()
            .find(|d| {
                d["cpus"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|c| c.as_u64() == Some(cpu))
            })
            .map(|d| d["letter"].as_str().unwrap().to_string())
            .unwrap()
    };
    let curves = plan["curves"].as_array().unwrap();
    let batch4 = curves.iter().find(|c| c["label"] == "batch 4").unwrap();
    let order: Vec<String> = batch4["readers"].as_array().unwrap()[..12]
        .iter()
        .map(|c| letter(c.as_u64().unwrap()))
        .collect();
    assert_eq!(
        order,
        ["A", "A", "A", "A", "B", "B", "B", "B", "C", "C", "C", "C"]
    );
    // Suite I moves the owner across domain A; it is never a reader.
    let owners: Vec<u64> = curves
        .iter()
        .filter(|c| c["part"] == "Suite1")
        .map(|c| c["owners"][0].as_u64().unwrap())
        .collect();
    assert_eq!(owners, [0, 4, 7]);
    for c in curves {
        let o = &c["owners"][0];
        assert!(!c["readers"].as_array().unwrap().contains(o));
        assert_eq!(c["counts"].as_array().unwrap().len(), 63);
    }
}

#[test]
fn placement_runs_here_with_checked_reads_and_says_what_it_cannot_run() {
    let v = run_json(
        "suite",
        &["placement", "--size", "64K", "--iterations", "3"],
    );
    let recs = v.as_array().unwrap();
    let measured: Vec<_> = recs
        .iter()
        .filter(|r| r["kind"] == "suite-placement" && !r["stats"].as_array().unwrap().is_empty())
        .collect();
    assert!(!measured.is_empty());
    for r in &measured {
        // A line read from another core's cache or memory, in the fastest pass: above
        // 0.1 ns, and below 1 ms, which a descheduled owner or reader on a shared VM
        // can add to a pass but never to the best of them.
        let t = stat(r, "read_time", "min");
        assert!(t > 0.1 && t < 1e6, "{}: {t}", r["name"]);
        assert_eq!(r["data"]["data_checked"], true);
        // Three first passes, more while the point had not settled.
        let n = r["stats"][0]["n"].as_u64().unwrap();
        assert!(
            n >= 3 && n <= r["settle"]["passes"].as_u64().unwrap(),
            "{r}"
        );
        let k = r["parameters"]["readers"].as_u64().unwrap() as usize;
        assert_eq!(r["data"]["per_reader"].as_array().unwrap().len(), k);
    }
    for part in ["exp0", "suite1", "suite4"] {
        assert!(
            measured.iter().any(|r| r["parameters"]["part"] == part),
            "{part} missing"
        );
    }
    // Every part that did not run is named with its reason.
    let out = numalab(&[
        "suite",
        "placement",
        "--size",
        "64K",
        "--iterations",
        "2",
        "--level",
        "node",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let nodes = run_json("topo", &[])[0]["data"]["nodes"]
        .as_array()
        .map(|n| n.len())
        .unwrap_or(1);
    if nodes == 1 {
        assert!(
            text.contains(
                "not run here: Suite II: Suite II (remote readers) needs at least two node domains"
            ),
            "{text}"
        );
        assert!(text.contains("not run here: Suite III"), "{text}");
    }
    assert!(text.contains("Experiment 0"), "{text}");
}

#[test]
fn collectives_run_here_move_the_right_data_and_fit_models() {
    let v = run_json(
        "suite",
        &["collectives", "--sizes", "1K,4K", "--iterations", "3"],
    );
    let recs = v.as_array().unwrap();
    let names: Vec<&str> = recs.iter().map(|r| r["name"].as_str().unwrap()).collect();
    for want in [
        "remote-read CPU",
        "barrier-central P=",
        "barrier-tree P=",
        "barrier-dissemination P=",
        "broadcast-same P=",
        "broadcast-distinct P=",
        "shift-1 P=",
        "gather-linear P=",
        "gather-tree P=",
        "allgather-linear P=",
        "allgather-tree P=",
        "allgather-ring P=",
        "reduce-sum-linear P=",
        "reduce-max-tree P=",
    ] {
        assert!(
            names.iter().any(|n| n.starts_with(want)),
            "no {want} in {names:?}"
        );
    }
    for r in recs.iter().filter(|r| {
        r["kind"] == "suite-collectives" && r["parameters"]["collective"] != "remote-read"
    }) {
        assert_eq!(r["data"]["data_checked"], true);
        // The fastest pass, below 100 ms. Whether 4 KiB blocks gather slower than
        // 1 KiB ones is closer than a shared VM keeps: compare/timing-claims reports it.
        let t = stat(r, "time", "min");
        assert!(t > 0.0 && t < 1e8, "{}: {t}", r["name"]);
    }
    for name in ["gather-linear P=2 1024B", "gather-linear P=2 4096B"] {
        assert!(recs.iter().any(|r| r["name"] == name), "no {name}");
    }
    let models: Vec<_> = recs
        .iter()
        .filter(|r| r["kind"] == "suite-collectives-model")
        .collect();
    assert!(models
        .iter()
        .any(|m| m["name"] == "broadcast-same T = C0 + C1·P + C2·lines"));
    let fit = &models
        .iter()
        .find(|m| m["name"] == "gather-linear T = C0 + C1·P + C2·lines")
        .unwrap()["data"];
    assert_eq!(fit["n"], 2);
    // Only P = 2 exists here: the P term is named as undetermined, not zeroed.
    if run_json("topo", &[])[0]["data"]["pus"]
        .as_array()
        .unwrap()
        .len()
        == 2
    {
        assert!(fit["coefficients"][1]["value"].is_null());
        assert!(fit["note"].as_str().unwrap().contains("C1 (P)"));
    }
}

#[test]
fn collectives_offer_the_osu_layout() {
    let out = numalab(&[
        "suite",
        "collectives",
        "--only",
        "broadcast",
        "--sizes",
        "256,1K",
        "--iterations",
        "2",
        "--osu",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let header = text
        .lines()
        .find(|l| l.starts_with("# Size"))
        .expect("an OSU header");
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        [
            "#",
            "Size",
            "Avg",
            "Latency(us)",
            "Min",
            "Latency(us)",
            "Max",
            "Latency(us)",
            "Iterations"
        ]
    );
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("256 ") || l.starts_with("1024 "))
        .collect();
    assert_eq!(rows.len(), 4, "{text}");
    for r in rows {
        // Five numbers, then "unsettled*" where the measurement did not settle.
        let w: Vec<&str> = r.split_whitespace().collect();
        assert!(w.len() == 5 || w[5..] == ["unsettled*"], "{r}");
        let f: Vec<f64> = w[..5].iter().map(|x| x.parse().unwrap()).collect();
        assert!(f[2] <= f[1] && f[1] <= f[3], "min ≤ avg ≤ max: {r}");
    }
}

#[test]
fn bad_suite_input_exits_2_naming_the_value() {
    let cpus = run_json("topo", &[])[0]["data"]["pus"]
        .as_array()
        .unwrap()
        .len();
    let too_many = (cpus + 1).to_string();
    for (args, want) in [
        (
            vec!["placement", "--readers", too_many.as_str()],
            format!("'{too_many}'"),
        ),
        (
            vec!["placement", "--batches", "4,0"],
            "--batches '0'".into(),
        ),
        (vec!["placement", "--unit", "word"], "'word'".into()),
        (vec!["placement", "--parts", "9"], "'9'".into()),
        (
            vec!["collectives", "--threads", too_many.as_str()],
            format!("--threads '{too_many}'"),
        ),
        (
            vec!["collectives", "--threads", "0"],
            "--threads '0'".into(),
        ),
        (
            vec!["collectives", "--sizes", "1K,0"],
            "--sizes item '0'".into(),
        ),
        (vec!["collectives", "--barrier", "mcs"], "'mcs'".into()),
        (vec!["collectives", "--only", "scatter"], "'scatter'".into()),
        (
            vec!["placement", "--tolerance", "0"],
            "--tolerance '0'".into(),
        ),
        (
            vec!["collectives", "--noise-budget", "5"],
            "--noise-budget '5'".into(),
        ),
        (
            vec!["collectives", "--mpi", "--tolerance", "0"],
            "--tolerance '0'".into(),
        ),
        (
            vec!["collectives", "--mpi", "--noise-budget", "-1s"],
            "--noise-budget '-1s'".into(),
        ),
        (vec!["placement", "--topology", "x.xml"], "--dry-run".into()),
    ] {
        let mut a = vec!["suite"];
        a.extend(args.iter().copied());
        bad_input(&numalab(&a), &[&want], &format!("{args:?}"));
    }
}
