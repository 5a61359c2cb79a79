//! MPI and DSM across hosts (issue 44), on an emulated cluster (`scripts/test-cluster`:
//! one network, UTS and mount namespace per host, mpirun in a head host, an ssh-like
//! agent). Needs root and `ip netns`; skipped with the reason otherwise. The cluster
//! tests take one at a time (they share two CPUs). Nothing here compares timings: each
//! run is bounded and checked for where its ranks ran and what it computed.

mod common;

use common::cluster::{
    cluster_test, latency_args, leftovers, ok, rank_hosts, ranks_at, Cluster, COLLECTIVES, CVM,
};

#[test]
fn mpi_latency_and_bandwidth_run_between_two_hosts_with_numalabs_own_settings() {
    let Some(_one) = cluster_test() else { return };
    let c = Cluster::up(3, &[]);
    let hosts = c.hostfile(2, 1);
    let h = hosts.to_str().unwrap();
    let lat = ok(&c.numalab(
        "300",
        &[&latency_args(h, "pingpong", "1000")[..], &["--json"]].concat(),
        &[("NUMALAB_MPI_TIMEOUT", "240")],
    ));
    let rec = &lat.as_array().unwrap()[0];
    // One rank per host, each inside its host's CPU set (nlab-h1: CPU 0, nlab-h2: CPU 1):
    // not both pinned to CPU 0, as hosts that each believe they own the machine would.
    assert_eq!(
        ranks_at(rec),
        [("nlab-h1".to_string(), 0), ("nlab-h2".to_string(), 1)]
    );
    let settings = rec["placement"]["launch_settings"].as_str().unwrap();
    for s in [
        "btl=self,vader,tcp",
        "btl_tcp_if_include=10.251.0.0/24",
        "oob_tcp_if_include=10.251.0.0/24",
    ] {
        assert!(settings.contains(s), "{s} not in {settings}");
    }
    let bw = ok(&c.numalab(
        "300",
        &[
            "mpi",
            "bandwidth",
            "--hostfile",
            h,
            "--ranks",
            "2",
            "--sizes",
            "64K",
            "--iterations",
            "20",
            "--json",
        ],
        &[("NUMALAB_MPI_TIMEOUT", "240")],
    ));
    let rec = &bw.as_array().unwrap()[0];
    assert_eq!(ranks_at(rec).len(), 2);
    assert_ne!(ranks_at(rec)[0].0, ranks_at(rec)[1].0);
}

/// The latency statistic `stat` of `op`'s record in `recs`, in ns.
fn latency_of(recs: &serde_json::Value, op: &str, stat: &str) -> f64 {
    let rec = recs
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"].as_str().unwrap().starts_with(&format!("{op} ")))
        .unwrap_or_else(|| panic!("no {op} record in {recs}"));
    rec["stats"][0][stat].as_f64().unwrap()
}

#[test]
fn one_sided_get_and_put_across_hosts_are_not_below_the_pairs_half_round_trip() {
    let Some(_one) = cluster_test() else { return };
    let c = Cluster::up(2, &[]);
    let hosts = c.hostfile(2, 1);
    let args = latency_args(hosts.to_str().unwrap(), "pingpong,get,put", "500");
    let v = ok(&c.numalab(
        "300",
        &[&args[..], &["--json"]].concat(),
        &[("NUMALAB_MPI_TIMEOUT", "240")],
    ));
    // A physical bound, not a timing target: a get or put completed at the target
    // takes at least a round trip over the hosts' network, and the ping-pong's fastest
    // half round trip is a floor for it (the defect read 150 ns, against ~10 µs).
    let half_rtt = latency_of(&v, "pingpong", "min");
    for op in ["get", "put"] {
        let median = latency_of(&v, op, "median");
        assert!(
            median >= half_rtt,
            "{op} across hosts reads {median:.0} ns, below the ping-pong's half round trip {half_rtt:.0} ns"
        );
    }
}

#[test]
fn dsm_sor_with_one_rank_per_host_matches_the_sequential_program() {
    let Some(_one) = cluster_test() else { return };
    let c = Cluster::up(2, &[]);
    let hosts = c.hostfile(2, 1);
    let v = ok(&c.numalab(
        "400",
        &[
            "dsm",
            "run",
            "sor",
            "--ranks",
            "2",
            "--hostfile",
            hosts.to_str().unwrap(),
            "--json",
        ],
        &[("NUMALAB_MPI_TIMEOUT", "360")],
    ));
    let recs = v.as_array().unwrap();
    let d = &recs[0]["data"];
    assert!(
        d["check"]["max_rel_diff"].as_f64().unwrap() <= d["check"]["tolerance"].as_f64().unwrap(),
        "{}",
        d["check"]
    );
    let at = ranks_at(&recs[0]);
    assert_eq!(at.len(), 2);
    assert_ne!(at[0].0, at[1].0, "one rank per host: {at:?}");
}

#[test]
fn a_rank_killed_on_a_remote_host_ends_the_job_naming_the_rank() {
    let Some(_one) = cluster_test() else { return };
    let c = Cluster::up(2, &[]);
    let hosts = c.hostfile(2, 1);
    let out = c.numalab(
        "200",
        &latency_args(hosts.to_str().unwrap(), "pingpong", "1000"),
        &[
            ("NUMALAB_MPI_KILL_RANK", "1"),
            ("NUMALAB_MPI_TIMEOUT", "150"),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("rank 1") && err.contains("nlab-h2"), "{err}");
}

#[test]
fn the_cluster_leaves_nothing_behind_also_when_its_owner_was_killed() {
    let Some(_one) = cluster_test() else { return };
    let c = Cluster::up(3, &["--rate", "nlab-h3=2mbit"]);
    let name = c.dir.file_name().unwrap().to_str().unwrap().to_string();
    let holders: Vec<String> = std::fs::read_dir(&c.dir)
        .unwrap()
        .filter_map(|e| {
            let n = e.unwrap().file_name().into_string().unwrap();
            n.starts_with("pid.")
                .then(|| std::fs::read_to_string(c.dir.join(&n)).unwrap())
        })
        .collect();
    assert_eq!(holders.len(), 4, "three hosts and the head");
    assert!(leftovers().contains(&name));
    drop(c);
    let left = leftovers();
    assert!(!left.contains(&name), "left behind: {left}");
    for p in holders {
        assert!(gone_soon(p.trim()), "process {p} left");
    }
    // A cluster whose owner died without removing it goes with the next `up`'s sweep.
    let mut owner = std::process::Command::new("sleep")
        .arg("600")
        .spawn()
        .unwrap();
    let orphan = std::process::Command::new(common::cluster::script())
        .args(["up", "--hosts", "1", "--owner", &owner.id().to_string()])
        .output()
        .unwrap();
    let orphan = String::from_utf8(orphan.stdout).unwrap().trim().to_string();
    owner.kill().unwrap();
    owner.wait().unwrap();
    let next = Cluster::up(1, &[]);
    let gone = std::path::Path::new(&orphan)
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        !leftovers().contains(&gone),
        "{gone} was not swept: {}",
        leftovers()
    );
    drop(next);
}

/// True once process `pid` has ended (gone, or a zombie awaiting its parent's reaping),
/// within 10 s: SIGKILL takes effect asynchronously.
fn gone_soon(pid: &str) -> bool {
    for _ in 0..100 {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(st)
                if st
                    .rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('Z')) =>
            {
                return true
            }
            Ok(_) => std::thread::sleep(std::time::Duration::from_millis(100)),
        }
    }
    false
}

/// Every `dsm-run` record of `recs` computed what the sequential program does.
fn all_verified(recs: &[serde_json::Value]) -> usize {
    let runs: Vec<&serde_json::Value> = recs.iter().filter(|r| r["kind"] == "dsm").collect();
    for r in &runs {
        let c = &r["data"]["check"];
        assert!(
            c["max_rel_diff"].as_f64().unwrap() <= c["tolerance"].as_f64().unwrap(),
            "{} not verified: {c}",
            r["description"]
        );
    }
    runs.len()
}

#[test]
fn the_matrix_across_hosts_is_host_by_host_with_ranks_mapped_by_host() {
    let Some(_one) = cluster_test() else { return };
    let c = Cluster::up(2, &[]);
    let hosts = c.hostfile(2, 2);
    let v = ok(&c.numalab(
        "300",
        &[
            "mpi",
            "matrix",
            "--hostfile",
            hosts.to_str().unwrap(),
            "--ranks-per-host",
            "2",
            "--map-by",
            "host",
            "--iterations",
            "200",
            "--warmup",
            "10",
            "--json",
        ],
        &[("NUMALAB_MPI_TIMEOUT", "240")],
    ));
    let recs = v.as_array().unwrap();
    let m = recs.iter().find(|r| r["kind"] == "mpi-matrix").unwrap();
    // --map-by host: consecutive ranks on different hosts, two on each.
    assert_eq!(rank_hosts(m), ["nlab-h1", "nlab-h2", "nlab-h1", "nlab-h2"]);
    assert_eq!(
        m["placement"]["mapping"],
        "--ranks-per-host 2 --map-by host"
    );
    for p in m["placement"]["per_rank"].as_array().unwrap() {
        for field in ["rank", "host", "cpu", "node"] {
            assert!(!p[field].is_null(), "{field} missing in {p}");
        }
    }
    let by_host = &m["data"]["by_host"];
    assert_eq!(by_host["labels"], serde_json::json!(["nlab-h1", "nlab-h2"]));
    // Four pairs between the hosts, one inside each.
    assert_eq!(by_host["pairs"], serde_json::json!([[1, 4], [4, 1]]));
    assert!(by_host["median_ns"][0][1].as_f64().unwrap() > 0.0);
}

#[test]
fn suite_cvm_with_ranks_on_two_hosts_completes_and_verifies() {
    let Some(_one) = cluster_test() else { return };
    let c = Cluster::up(2, &[]);
    let hosts = c.hostfile(2, 1);
    let job = ["--ranks", "2", "--hostfile", hosts.to_str().unwrap()];
    let v = ok(&c.numalab(
        "400",
        &[&CVM[..], &job].concat(),
        &[("NUMALAB_MPI_TIMEOUT", "360")],
    ));
    let recs = v.as_array().unwrap();
    assert_eq!(all_verified(recs), 4, "two apps × two protocols");
    let run = recs
        .iter()
        .find(|r| r["data"]["check"].is_object())
        .unwrap();
    let at = ranks_at(run);
    assert_ne!(at[0].0, at[1].0, "one rank per host: {at:?}");
}

#[test]
fn collectives_and_earth_run_between_ranks_on_two_hosts() {
    let Some(_one) = cluster_test() else { return };
    let c = Cluster::up(2, &[]);
    let hosts = c.hostfile(2, 1);
    let h = hosts.to_str().unwrap();
    let env = [("NUMALAB_MPI_TIMEOUT", "240")];
    let job = ["--ranks", "2", "--hostfile", h];
    let coll = ok(&c.numalab("300", &[&COLLECTIVES[..], &job].concat(), &env));
    let runs: Vec<&serde_json::Value> = coll
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "collective-mpi")
        .collect();
    assert!(!runs.is_empty());
    let at = ranks_at(runs[0]);
    assert_ne!(at[0].0, at[1].0, "{at:?}");
    let earth = ok(&c.numalab(
        "300",
        &[
            "suite",
            "earth",
            "--mpi",
            "--ranks",
            "2",
            "--hostfile",
            h,
            "--parts",
            "ops",
            "--iterations",
            "2",
            "--json",
        ],
        &env,
    ));
    let rows: Vec<&serde_json::Value> = earth
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "suite-earth-mpi")
        .collect();
    assert!(!rows.is_empty());
    let at = ranks_at(rows[0]);
    assert_ne!(at[0].0, at[1].0, "{at:?}");
}

/// `mpi latency` pingpong between the two hosts of `hosts`, with `env`.
fn pingpong(
    c: &Cluster,
    hosts: &std::path::Path,
    iterations: &str,
    env: &[(&str, &str)],
) -> std::process::Output {
    let args = latency_args(hosts.to_str().unwrap(), "pingpong", iterations);
    c.numalab("300", &args, env)
}

/// How many processes run the cluster's copy of numalab (the launcher and its ranks).
fn running(c: &Cluster) -> usize {
    let exe = c.dir.join("numalab");
    let exe = exe.to_str().unwrap().as_bytes();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c.starts_with(exe)))
        .count()
}

#[test]
fn a_failed_agent_an_unreachable_host_and_another_version_end_the_job_naming_the_host() {
    let Some(_one) = cluster_test() else { return };
    let c = Cluster::up(2, &[]);
    let hosts = c.hostfile(2, 1);
    let env = [("NUMALAB_MPI_TIMEOUT", "200")];
    // The agent (the launcher's ssh) refuses nlab-h2.
    std::fs::write(c.dir.join("fail.nlab-h2"), "").unwrap();
    let out = pingpong(&c, &hosts, "100", &env);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("host nlab-h2 could not be started by the remote shell"),
        "{err}"
    );
    std::fs::remove_file(c.dir.join("fail.nlab-h2")).unwrap();
    // nlab-h2 unreachable: its daemon starts but cannot connect back to mpirun.
    c.script("cut", "nlab-h2");
    let out = pingpong(&c, &hosts, "100", &env);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    // Named on stderr (the daemon's own report reaches mpirun's stdout), once.
    assert!(
        err.contains("numalab: error: host nlab-h2 is unreachable: its daemon could not connect back to mpirun on nlab-head"),
        "{err}"
    );
    assert_eq!(err.matches("numalab: error:").count(), 1, "{err}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("TCP connection"), "{stdout}");
    assert!(c.left_running().is_empty(), "{:?}", c.left_running());
    c.script("mend", "nlab-h2");
    // Another numalab version on nlab-h2: refused before any measurement, both named.
    let out = pingpong(
        &c,
        &hosts,
        "100",
        &[("NUMALAB_MPI_FAKE_VERSION", "nlab-h2=0.0.9"), env[0]],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("numalab 0.0.9 on nlab-h2 (rank 1)") && err.contains("on nlab-h1 (rank 0)"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

// Once ignored: in CI the orted left on the cut host (its remote shell in a process
// group of its own) outlived the group kill and held the job's output open for over 9
// minutes. The launcher now kills whatever mpirun started that is left.
#[test]
fn a_link_cut_mid_run_ends_the_job_within_the_stall_bound_naming_the_host() {
    let Some(_one) = cluster_test() else { return };
    let c = Cluster::up(2, &[]);
    let hosts = c.hostfile(2, 1);
    let cut_at = std::thread::scope(|s| {
        let cutter = s.spawn(|| {
            // Once the launcher and both ranks run, and a little after.
            let t = std::time::Instant::now();
            while running(&c) < 3 && t.elapsed().as_secs() < 120 {
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            std::thread::sleep(std::time::Duration::from_secs(2));
            c.script("cut", "nlab-h2");
            std::time::Instant::now()
        });
        // Far more iterations than the test waits for: only the cut ends it.
        let out = pingpong(&c, &hosts, "100000000", &[("NUMALAB_MPI_TIMEOUT", "250")]);
        (cutter.join().unwrap(), out)
    });
    let (at, out) = cut_at;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("host nlab-h2 was cut off mid-run"), "{err}");
    // Well before the overall bound (250 s): the stall bound's order (10 s), with
    // room for a loaded machine.
    assert!(
        at.elapsed().as_secs() < 60,
        "ended {:?} after the cut: {err}",
        at.elapsed()
    );
    // Nothing of the job is left on any host, the cut one included.
    let left = c.left_running();
    assert!(left.is_empty(), "left running: {left:?}");
}
