//! `numalab bandwidth --mix` and `--injection` end to end: bad input, plans on real
//! machines' topologies, and small measured runs on this machine (relations only).

mod common;

use common::{numalab, tmpdir, topology};
use serde_json::Value;

fn bw(args: &[&str]) -> Value {
    common::run_json("bandwidth", args)
}

/// The 16-core, 8-node fixture with node 1's memory taken away.
fn memoryless_node_1(dir: &std::path::Path) -> String {
    let xml = std::fs::read_to_string(topology("16amd64-4distances.xml")).unwrap();
    let (head, tail) = xml.split_once(r#"os_index="1""#).unwrap();
    let tail = tail.replacen(r#"local_memory="8589934592""#, r#"local_memory="0""#, 1);
    let p = dir.join("memoryless-node1.xml");
    std::fs::write(&p, format!(r#"{head}os_index="1"{tail}"#)).unwrap();
    p.display().to_string()
}

#[test]
fn bad_mixes_exit_2_naming_the_value_and_write_nothing() {
    let dir = tmpdir("mix-bad");
    let f = dir.join("o.json").display().to_string();
    let no_mem = memoryless_node_1(&dir);
    for (args, names) in [
        (vec!["--mix", "0:0"], "neither reads nor writes"),
        (vec!["--mix", "3-1"], "'3-1'"),
        (vec!["--mix", "1:0,x:1"], "'x:1'"),
        (vec!["--mix", "1:0,,1:1"], "''"),
        (vec!["--mix", "21:0"], "at most 20"),
        (vec!["--mix", "1:1", "--store", "fast"], "'fast'"),
        (vec!["--mix", "update", "--store", "nt"], "update"),
        (vec!["--mix", "1:1", "--kernel", "copy"], "'copy'"),
        (vec!["--mix", "1:1", "--state", "uown"], "'uown'"),
        (vec!["--mix", "1:1", "--mem-node", "99"], "node 99"),
        (vec!["--mix", "3:1", "--size", "8K"], "mix 3:1"),
        (
            vec![
                "--mix",
                "1:1",
                "--topology",
                &no_mem,
                "--mem-node",
                "1",
                "--dry-run",
            ],
            "node 1",
        ),
    ] {
        let mut a = vec!["bandwidth"];
        a.extend_from_slice(&args);
        a.extend_from_slice(&["-o", &f]);
        let out = numalab(&a);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(names), "{args:?}: {err}");
        let errs = err.lines().filter(|l| l.contains("error")).count();
        assert_eq!(errs, 1, "{args:?}: one error line: {err}");
        assert!(out.stdout.is_empty() && !dir.join("o.json").exists());
    }
}

#[test]
fn the_injection_plan_has_every_row_on_every_memory_node() {
    let rows = [
        ("1:0", "regular"),
        ("3:1", "regular"),
        ("2:1", "regular"),
        ("1:1", "regular"),
        ("0:1", "regular"),
        ("0:1", "nt"),
        ("triad", "regular"),
    ];
    // A node's size of 0 in a topology file means unknown, so the nodes with no memory
    // that the injection table skips exist only on a live machine.
    for (topo, nodes) in [(topology("16amd64-4distances.xml"), 8)] {
        let v = bw(&["--injection", "--dry-run", "--topology", &topo]);
        let recs = v.as_array().unwrap();
        assert_eq!(recs.len(), rows.len() * nodes, "{topo}");
        let mut seen = std::collections::BTreeSet::new();
        for r in recs {
            assert_eq!(r["kind"], "bandwidth-mix-plan");
            let p = &r["parameters"];
            // One requestor per core by default (this fixture: 16 cores).
            assert_eq!(p["requestors"], 16);
            assert_eq!(p["table"], "injection");
            let key = (
                p["mix"].as_str().unwrap().to_string(),
                p["store"].as_str().unwrap().to_string(),
            );
            assert!(
                rows.iter()
                    .any(|(m, s)| key == (m.to_string(), s.to_string())),
                "{key:?}"
            );
            seen.insert((key, p["nodes"][0].as_u64().unwrap()));
        }
        assert_eq!(seen.len(), rows.len() * nodes);
        assert!(
            !seen.iter().any(|(_, n)| nodes == 7 && *n == 1),
            "node 1 has no memory"
        );
    }
    // --mem-node picks one node; --mix replaces the rows; a mix without writes runs once.
    let topo = topology("16amd64-4distances.xml");
    let v = bw(&[
        "--injection",
        "--dry-run",
        "--topology",
        &topo,
        "--mem-node",
        "2",
        "--mix",
        "1:0,1:1",
        "--store",
        "regular,nt",
        "-n",
        "4",
    ]);
    let recs = v.as_array().unwrap();
    let got: Vec<String> = recs
        .iter()
        .map(|r| {
            format!(
                "{} {}",
                r["parameters"]["mix"].as_str().unwrap(),
                r["parameters"]["store"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(got, ["1:0 regular", "1:1 regular", "1:1 nt"]);
    assert!(recs
        .iter()
        .all(|r| r["parameters"]["nodes"][0] == 2 && r["parameters"]["requestors"] == 4));
}

fn share(r: &Value) -> f64 {
    r["data"]["read_share_issued"].as_f64().unwrap()
}

/// One test so that measurements do not run beside each other.
#[test]
fn measured_mixes_issue_their_read_share_and_the_table_has_every_row() {
    let v = bw(&[
        "--mix",
        "1:0,3:1,2:1,1:1,0:1,triad,update",
        "--store",
        "regular,nt",
        "--size",
        "1M",
        "--iterations",
        "2",
    ]);
    let recs = v.as_array().unwrap();
    // 1:0 once (no stores), update regular only: 1 + 5 × 2 + 1.
    let nt = "nt".to_string();
    let kinds: Vec<(String, String)> = recs
        .iter()
        .map(|r| {
            (
                r["parameters"]["mix"].as_str().unwrap().into(),
                r["parameters"]["store"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(recs.len(), 12, "{kinds:?}");
    for m in ["3:1", "2:1", "1:1", "0:1", "triad"] {
        assert!(kinds.contains(&(m.into(), nt.clone())), "{m} nt");
        assert!(kinds.contains(&(m.into(), "regular".into())), "{m} regular");
    }
    for r in recs {
        let p = &r["parameters"];
        let (reads, writes) = (p["reads"].as_f64().unwrap(), p["writes"].as_f64().unwrap());
        // Every stream advances together: the issued read share is exactly the mix's.
        assert_eq!(share(r), reads / (reads + writes), "{}", r["name"]);
        let d = &r["data"];
        let (rd, wr) = (
            d["issued_read_bytes"].as_f64().unwrap(),
            d["issued_write_bytes"].as_f64().unwrap(),
        );
        assert!(rd + wr > 0.0);
        let g = common::stat(r, "bandwidth", "median");
        common::assert_sane("issued bandwidth", g, 2000.0);
        // The traffic estimate: a write-allocate read per regular store, none for nt
        // stores or update (whose own read is the allocate).
        let t = common::stat(r, "traffic_estimate", "median");
        let extra = if p["store"] == "regular" && p["mix"] != "update" {
            wr
        } else {
            0.0
        };
        let want = g * (rd + wr + extra) / (rd + wr);
        assert!(
            (t - want).abs() <= 1e-9 * want,
            "{}: traffic {t}, want {want}",
            r["name"]
        );
        // Counters: a figure with its source, or why not; never a bare zero.
        let c = &d["counters"];
        assert!(
            c["source"].is_string() && c["gbps"].is_number()
                || c["unavailable"]
                    .as_str()
                    .unwrap()
                    .starts_with("counters unavailable: "),
            "{c}"
        );
        // How far the first requestor was from each other one (up to 4), for compare.
        let cpus = p["requestor_cpus"].as_array().unwrap();
        let d = r["placement"]["distance"].as_array().map_or(0, Vec::len);
        assert_eq!(d, (cpus.len() - 1).min(4), "{}", r["placement"]);
        if d > 0 {
            let d0 = &r["placement"]["distance"][0];
            assert_eq!(d0["cpus"], serde_json::json!([cpus[0], cpus[1]]), "{d0}");
        }
        // Placement proved: every buffer of every requestor has its proof.
        let mem = r["placement"]["verified"]["memory"].as_array().unwrap();
        assert_eq!(mem.len(), 1);
        assert_eq!(
            mem[0].as_array().unwrap().len(),
            p["buffers_per_requestor"].as_u64().unwrap() as usize
        );
        // Every stream starts at its own page offset (bandwidth::stagger), the first at 0.
        let offs: Vec<u64> = p["buffer_offsets"][0]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o.as_u64().unwrap())
            .collect();
        assert_eq!(offs.len(), mem[0].as_array().unwrap().len(), "{offs:?}");
        assert!(
            offs.iter()
                .enumerate()
                .all(|(g, &o)| o == g as u64 * 17 * 4096),
            "{offs:?}"
        );
    }
    // The injection table, measured small: every row appears in the text table.
    let out = numalab(&[
        "bandwidth",
        "--injection",
        "--size",
        "256K",
        "--iterations",
        "1",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = text
        .split("Injection table")
        .nth(1)
        .expect("an injection table");
    for row in [
        "reads only",
        "3:1",
        "2:1",
        "1:1",
        "writes only ",
        "writes only, nt stores",
        "stream-triad-like (2:1)",
    ] {
        assert!(table.contains(row), "row {row:?} in {table}");
    }
}
