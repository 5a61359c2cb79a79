//! `numalab cluster` (issue 45) on the emulated cluster (`scripts/test-cluster`): the
//! odd host, link and setting named from a run with one rank per host. Needs root and
//! `ip netns`; skipped with the reason otherwise. Findings and records are asserted,
//! never timings.

mod common;

use common::cluster::{cluster_test, matrices_whole, of, quick, Cluster};
use common::validate;

#[test]
fn cluster_names_the_rate_limited_hosts_links_and_the_host_with_another_setting() {
    let Some(_one) = cluster_test() else { return };
    // The script limits what nlab-h3 sends; the bridge's port to it limits what it
    // receives (inside the cluster's own namespace, gone with it).
    let c = Cluster::up(3, &["--rate", "nlab-h3=20mbit"]);
    limit_receive(&c, "h3");
    // Each host's private /tmp holds a settings tree: THP is never on nlab-h2 only.
    for (h, thp) in [
        ("nlab-h1", "[always] madvise never"),
        ("nlab-h2", "always madvise [never]"),
        ("nlab-h3", "[always] madvise never"),
    ] {
        let dir = "/tmp/fake/sys/kernel/mm/transparent_hugepage";
        c.on_host(
            h,
            &format!("mkdir -p {dir} && echo '{thp}' > {dir}/enabled"),
        );
    }
    let hosts = c.hostfile(3, 1);
    // Records to a file in the cluster's folder (the head host's /tmp is its own).
    let file = c.dir.join("cluster.json");
    let run = ["cluster", "--hostfile", hosts.to_str().unwrap()];
    let out = c.numalab(
        "150",
        &[
            &run[..],
            &quick("50", "1M"),
            &["-o", file.to_str().unwrap()],
        ]
        .concat(),
        &[
            ("NUMALAB_MPI_TIMEOUT", "120"),
            ("NUMALAB_CLUSTER_ROOT", "/tmp/fake"),
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The findings come first, before the memory table and the matrices.
    let at = |what: &str| text.find(what).unwrap_or_else(|| panic!("{what}: {text}"));
    assert!(at("Findings") < at("Memory per host and node"), "{text}");
    assert!(at("Memory per host and node") < at("Latency, us"), "{text}");
    for part in [
        "odd link: nlab-h3's links in (",
        "odd link: nlab-h3's links out (",
    ] {
        assert!(text.contains(part), "{part}: {text}");
    }
    assert!(
        text.contains("setting differs: THP: always on nlab-h1, nlab-h3; never on nlab-h2"),
        "{text}"
    );
    let v = validate(&std::fs::read(&file).unwrap());
    let recs = v.as_array().unwrap();
    let kinds = |k: &str| recs.iter().filter(|r| r["kind"] == k).count();
    assert_eq!(kinds("cluster-host"), 3);
    assert_eq!((kinds("cluster-links"), kinds("cluster-findings")), (1, 1));
    let f = &recs
        .iter()
        .find(|r| r["kind"] == "cluster-findings")
        .unwrap()["data"];
    let bw = odd_bandwidth_links(f);
    // Its row (what it sends) and its column (what it receives), in the send or the
    // receive matrix: a receive that finds its data already arrived reads fast, which
    // can widen the healthy cells of one matrix on a loaded machine.
    for part in ["from", "to"] {
        assert!(
            bw.iter().any(|(_, p, h)| p == part && h == "nlab-h3"),
            "nlab-h3's {part} links not named: {f}"
        );
    }
    // With 3 hosts no single cell is judged (too few cells), and a healthy host's row
    // is held against cells that all touch nlab-h3: only nlab-h3 can be named.
    assert!(
        bw.iter().all(|(_, _, h)| h == "nlab-h3"),
        "only nlab-h3's links are odd in bandwidth: {f}"
    );
    matrices_whole(
        &of(recs, "cluster-links")[0]["data"],
        &["nlab-h1", "nlab-h2", "nlab-h3"],
    );
    for r in of(recs, "cluster-host") {
        assert_eq!(r["data"]["settings_root"], "/tmp/fake", "{r}");
        assert!(!r["data"]["memory"].as_array().unwrap().is_empty(), "{r}");
    }
    let thp: Vec<&serde_json::Value> = f["settings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["setting"] == "THP")
        .collect();
    assert_eq!(thp.len(), 1, "THP named as differing: {f}");
    assert_eq!(
        thp[0]["values"],
        serde_json::json!([["always", ["nlab-h1", "nlab-h3"]], ["never", ["nlab-h2"]]])
    );
}

#[test]
fn cluster_names_the_host_under_a_cpu_quota_for_its_memory_figures_and_no_other() {
    let Some(_one) = cluster_test() else { return };
    // nlab-h3 shares CPU 0 with nlab-h1, and every host runs its memory check at once:
    // nlab-h3's fair share of CPU 0 is half of it, so its quota must be below a half
    // to throttle every pass (at 10 ms per 20 ms it once went unthrottled in CI). With
    // quick()'s 256 MiB chase, not 8 x the LLC (4 GiB on a 260 MiB L3), the job ends
    // well inside its timeout at a quarter of a CPU.
    let c = Cluster::up(3, &[]);
    let cg = c.quota("nlab-h3", 5000, 20000);
    let hosts = c.hostfile(3, 1);
    let file = c.dir.join("cluster.json");
    let run = ["cluster", "--hostfile", hosts.to_str().unwrap()];
    let out = c.numalab(
        "360",
        &[
            &run[..],
            &quick("20", "64K"),
            &["-o", file.to_str().unwrap()],
        ]
        .concat(),
        &[("NUMALAB_MPI_TIMEOUT", "300")],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("odd host: nlab-h3's memory figures were measured under a CPU quota: its cgroup was throttled "),
        "{text}"
    );
    let v = validate(&std::fs::read(&file).unwrap());
    let recs = v.as_array().unwrap();
    let f = &of(recs, "cluster-findings")[0]["data"];
    let throttled: Vec<&str> = f["throttled_hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["host"].as_str().unwrap())
        .collect();
    assert_eq!(throttled, ["nlab-h3"], "{f}");
    let t = &f["throttled_hosts"][0]["throttling"];
    assert_eq!(
        t["quota"],
        serde_json::json!({"quota_us": 5000, "period_us": 20000})
    );
    assert!(t["throttled_us"].as_u64().unwrap() > 0, "{t}");
    // No other host is named for a quota: none was throttled. (The MAD rule's
    // `odd_hosts` are not asserted: on this loaded VM another host's figures can move
    // 1.5x while nlab-h3's stay near the third's; rule.rs tests that rule.)
    // The other hosts have this machine's quota (none, unless the tests run in a
    // container that has one).
    let here = numalab_results::disturb::cpu_quota();
    for r in of(recs, "cluster-host") {
        let t = &r["data"]["throttling"];
        if r["data"]["host"] != "nlab-h3" {
            assert_eq!(t["throttled_passes"], 0, "{r}");
            assert_eq!(t["quota"], serde_json::json!(here), "{r}");
        }
        assert!(t["passes"].as_u64().unwrap() > 0, "{r}");
    }
    // The quota is a setting that differs, too.
    let quota: Vec<&serde_json::Value> = f["settings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["setting"] == "CPU quota")
        .collect();
    assert_eq!(
        quota[0]["values"],
        serde_json::json!([
            [
                here.map_or("none found".into(), |q| q.words()),
                ["nlab-h1", "nlab-h2"]
            ],
            ["5 ms of CPU per 20 ms (25 % of a CPU)", ["nlab-h3"]]
        ]),
        "{f}"
    );
    drop(c);
    assert!(!cg.exists(), "{} left behind", cg.display());
}

#[test]
fn five_hosts_give_five_by_five_matrices_and_name_the_rate_limited_hosts_links() {
    let Some(_one) = cluster_test() else { return };
    // 5 hosts on 2 CPUs, nlab-h5's link limited to 20 mbit both ways: its links are
    // named. 1 MiB messages, since with 64 KiB ones hosts sharing a CPU read 0.002-0.006
    // GB/s (a scheduler slice per message), as slow as the limited link. A run took
    // 46 s on this 2-vCPU machine beside other builds and past 120 s at a load of 16,
    // so its bounds are wide.
    let c = Cluster::up(5, &["--rate", "nlab-h5=20mbit"]);
    limit_receive(&c, "h5");
    let hosts = c.hostfile(5, 1);
    let file = c.dir.join("cluster.json");
    let run = ["cluster", "--hostfile", hosts.to_str().unwrap()];
    let out = c.numalab(
        "280",
        &[
            &run[..],
            &quick("20", "1M"),
            &["-o", file.to_str().unwrap()],
        ]
        .concat(),
        &[("NUMALAB_MPI_TIMEOUT", "240")],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = validate(&std::fs::read(&file).unwrap());
    let recs = v.as_array().unwrap();
    let mut seen: Vec<&str> = recs
        .iter()
        .filter(|r| r["kind"] == "cluster-host")
        .map(|r| r["data"]["host"].as_str().unwrap())
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        ["nlab-h1", "nlab-h2", "nlab-h3", "nlab-h4", "nlab-h5"]
    );
    let kinds = |k: &str| recs.iter().filter(|r| r["kind"] == k).count();
    assert_eq!((kinds("cluster-links"), kinds("cluster-findings")), (1, 1));
    let bw = odd_bandwidth_links(&of(recs, "cluster-findings")[0]["data"]);
    for part in ["from", "to"] {
        assert!(
            bw.iter().any(|(_, p, h)| p == part && h == "nlab-h5"),
            "nlab-h5's {part} links not named: {bw:?}; {}",
            of(recs, "cluster-links")[0]["data"]
        );
    }
    // The healthy links read 10-400x the limited ones (0.04-0.9 against 0.002-0.006
    // GB/s): no other host's row or column is named.
    assert!(
        bw.iter().all(|(_, _, h)| h == "nlab-h5"),
        "only nlab-h5's links are odd in bandwidth: {bw:?}; {}",
        of(recs, "cluster-links")[0]["data"]
    );
    // The hosts in rank order, the hostfile's.
    matrices_whole(
        &of(recs, "cluster-links")[0]["data"],
        &["nlab-h1", "nlab-h2", "nlab-h3", "nlab-h4", "nlab-h5"],
    );
    // The run against itself: every host figure and link cell matched, none moved.
    let f = file.to_str().unwrap();
    let cmp = common::numalab(&["compare", f, f]);
    let text = String::from_utf8_lossy(&cmp.stdout);
    assert!(
        cmp.status.success(),
        "{}",
        String::from_utf8_lossy(&cmp.stderr)
    );
    assert!(text.starts_with("0 of "), "{text}");
    assert!(!text.contains("hosts only in"), "{text}");
    for part in ["nlab-h5 node 0", "nlab-h1 → nlab-h2", "nlab-h5 → nlab-h4"] {
        assert!(text.contains(part), "{part}: {text}");
    }
}

/// Limit what the bridge's port `port` (to host nlab-`port`) passes to 20 mbit: what
/// that host receives (the script's `--rate` limits what it sends).
fn limit_receive(c: &Cluster, port: &str) {
    let bridge = std::fs::read_to_string(c.dir.join("netns.bridge")).unwrap();
    let tc = std::process::Command::new("ip")
        .args(["-n", bridge.trim(), "link", "show", port])
        .status()
        .unwrap();
    assert!(tc.success(), "the bridge's port {port}");
    let st = std::process::Command::new("tc")
        .args([
            "-n",
            bridge.trim(),
            "qdisc",
            "add",
            "dev",
            port,
            "root",
            "tbf",
        ])
        .args(["rate", "20mbit", "burst", "32kbit", "latency", "400ms"])
        .status()
        .unwrap();
    assert!(st.success(), "tc on the bridge's port {port}");
}

/// The (matrix, part, host) of each odd link the findings name in a bandwidth matrix.
fn odd_bandwidth_links(f: &serde_json::Value) -> Vec<(String, String, String)> {
    f["odd_links"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["matrix"].as_str().unwrap().contains("bandwidth"))
        .map(|o| {
            let s = |k: &str| o[k].as_str().unwrap_or("").to_string();
            (s("matrix"), s("part"), s("host"))
        })
        .collect()
}
