//! The Slurm path (issue 44 item 3) for real: Debian's munged and slurmctld in the
//! emulated cluster's head host and one slurmd per emulated host (`scripts/test-slurm`
//! on `scripts/test-cluster`), then `salloc -N 2 numalab ...` in the head host, where
//! numalab, inside the allocation, launches its ranks with `srun` (Open MPI over
//! PMIx). Needs root, `ip netns` and Slurm's and munge's programs; skipped with the
//! reason otherwise. Asserts where the ranks ran, which launcher started them and what
//! they computed, never a timing; every run is bounded by `timeout`.

mod common;

use common::cluster::{ok, Cluster, COLLECTIVES, CVM};
use common::slurm::{hosts_and_launcher, slurm_cluster, Slurm};

#[test]
fn salloc_runs_mpi_latency_with_srun_one_rank_on_each_of_two_hosts() {
    let Some((_one, c)) = slurm_cluster() else {
        return;
    };
    let slurm = Slurm::up(&c);
    // Slurm itself first: a step on both nodes, each in its own emulated host.
    let out = slurm.run(&c, "60", &["srun", "-N", "2", "hostname"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let mut names: Vec<&str> = text.lines().collect();
    names.sort();
    assert_eq!(
        names,
        ["nlab-h1", "nlab-h2"],
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let exe = c.exe();
    let exe = exe.to_str().unwrap();
    let args = ["salloc", "-N", "2", exe, "mpi", "latency", "--sizes", "8"];
    let v = ok(&slurm.run(&c, "200", &[&args[..], &["--json"]].concat()));
    let recs = v.as_array().unwrap();
    assert!(!recs.is_empty());
    for rec in recs {
        let (hosts, launcher) = hosts_and_launcher(rec);
        assert_eq!(hosts, ["nlab-h1", "nlab-h2"], "one rank per node");
        assert!(
            launcher.starts_with("srun (inside Slurm allocation "),
            "{launcher}"
        );
        assert_eq!(rec["parameters"]["relation"], "other machine");
        let settings = rec["placement"]["launch_settings"].as_str().unwrap();
        for s in ["--mpi=pmix", "btl_tcp_if_include=10.251.0.0/24"] {
            assert!(settings.contains(s), "{s} not in {settings}");
        }
    }
    // Each rank inside its host's CPU (slurmd runs with it, and its tasks inherit it).
    let cpus: Vec<u64> = recs[0]["placement"]["per_rank"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["cpu"].as_u64().unwrap())
        .collect();
    assert_eq!(cpus, [0, 1 % cpus_here()]);
    users_own_srun(&c, &slurm, exe);
    slurm.down();
    let left = c.left_running();
    assert!(
        left.is_empty(),
        "left running after Slurm stopped: {left:?}"
    );
}

/// Started by the user's `srun` itself, numalab runs as the ranks: with PMIx it
/// measures and names srun as the user's; without a PMI plugin (this Slurm's default,
/// `MpiDefault=none`) every task says, before MPI starts, what to run instead: exit 2.
fn users_own_srun(c: &Cluster, slurm: &Slurm, exe: &str) {
    let latency = [exe, "mpi", "latency", "--sizes", "8", "--ops", "pingpong"];
    let pmix = [
        &["salloc", "-N", "2", "srun", "--mpi=pmix"][..],
        &latency,
        &["--json"],
    ];
    let v = ok(&slurm.run(c, "200", &pmix.concat()));
    let (hosts, launcher) = hosts_and_launcher(&v.as_array().unwrap()[0]);
    assert_eq!(hosts, ["nlab-h1", "nlab-h2"]);
    assert_eq!(launcher, "srun (the user's)");
    let out = slurm.run(
        c,
        "120",
        &[&["salloc", "-N", "2", "srun"][..], &latency].concat(),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let said: Vec<&str> = err.lines().filter(|l| l.starts_with("numalab:")).collect();
    assert_eq!(said.len(), 1, "said once, by rank 0: {err}");
    assert!(
        said[0].contains("without a PMI plugin") && said[0].contains("srun --mpi=pmix"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

/// This machine's CPUs (the emulated hosts take CPU (i-1) mod CPUs).
fn cpus_here() -> u64 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u64)
}

#[test]
fn salloc_runs_dsm_sor_one_rank_per_node_verified_against_the_sequential_program() {
    let Some((_one, c)) = slurm_cluster() else {
        return;
    };
    let slurm = Slurm::up(&c);
    let exe = c.exe();
    let args = [
        "salloc",
        "-N",
        "2",
        exe.to_str().unwrap(),
        "dsm",
        "run",
        "sor",
        "--input",
        "small",
        // One rank on each of the allocation's nodes: 2 ranks, no --ranks needed.
        "--ranks-per-host",
        "1",
        "--json",
    ];
    let v = ok(&slurm.run(&c, "300", &args));
    let rec = &v.as_array().unwrap()[0];
    let (hosts, launcher) = hosts_and_launcher(rec);
    assert_eq!(hosts, ["nlab-h1", "nlab-h2"]);
    assert!(launcher.starts_with("srun (inside Slurm allocation "));
    assert_eq!(rec["placement"]["mapping"], "--ranks-per-host 1");
    let check = &rec["data"]["check"];
    assert!(
        check["max_rel_diff"].as_f64().unwrap() <= check["tolerance"].as_f64().unwrap(),
        "{check}"
    );
}

#[test]
fn a_rank_killed_under_srun_ends_the_job_naming_the_rank_and_its_host() {
    let Some((_one, c)) = slurm_cluster() else {
        return;
    };
    let slurm = Slurm::up(&c);
    let exe = c.exe();
    let args = [
        "salloc",
        "-N",
        "2",
        exe.to_str().unwrap(),
        "mpi",
        "latency",
        "--sizes",
        "8",
    ];
    let out = slurm.run_with(&c, "120", &args, &[("NUMALAB_MPI_KILL_RANK", "1")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let said: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("numalab: error:"))
        .collect();
    assert_eq!(
        said,
        ["numalab: error: rank 1 on host nlab-h2 died on signal 9 (Killed); the job was ended"],
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn salloc_runs_the_collectives_and_suite_cvm_across_two_hosts_under_srun() {
    let Some((_one, c)) = slurm_cluster() else {
        return;
    };
    let slurm = Slurm::up(&c);
    let exe = c.exe();
    let exe = exe.to_str().unwrap();
    let salloc = ["salloc", "-N", "2", exe];
    // One-sided windows across hosts included (osc ucx, set as variables for srun).
    let v = ok(&slurm.run(&c, "250", &[&salloc[..], &COLLECTIVES].concat()));
    let runs: Vec<&serde_json::Value> = v
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "collective-mpi")
        .collect();
    assert!(!runs.is_empty());
    for r in runs {
        let (hosts, launcher) = hosts_and_launcher(r);
        assert_eq!(hosts, ["nlab-h1", "nlab-h2"]);
        assert!(launcher.starts_with("srun (inside Slurm allocation "));
    }
    let v = ok(&slurm.run(&c, "300", &[&salloc[..], &CVM].concat()));
    let runs: Vec<&serde_json::Value> = v
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "dsm")
        .collect();
    assert_eq!(runs.len(), 4, "two apps × two protocols");
    for r in runs {
        let check = &r["data"]["check"];
        assert!(
            check["max_rel_diff"].as_f64().unwrap() <= check["tolerance"].as_f64().unwrap(),
            "{} not verified: {check}",
            r["description"]
        );
        assert_eq!(hosts_and_launcher(r).0, ["nlab-h1", "nlab-h2"]);
    }
}

/// Every record ran on nlab-h1 and nlab-h2, started by numalab's srun over PMI-2 with
/// MPICH's UCX over TCP, on MPICH.
fn by_srun_on_mpich(v: &serde_json::Value) {
    let recs = v.as_array().unwrap();
    assert!(!recs.is_empty());
    for rec in recs {
        let (hosts, launcher) = hosts_and_launcher(rec);
        assert_eq!(hosts, ["nlab-h1", "nlab-h2"], "one rank per node");
        assert!(
            launcher.starts_with("srun (inside Slurm allocation "),
            "{launcher}"
        );
        let p = &rec["placement"];
        assert!(p["mpi_library"].as_str().unwrap().contains("MPICH"), "{p}");
        let settings = p["launch_settings"].as_str().unwrap();
        for s in ["--mpi=pmi2", "UCX_TLS=tcp,self"] {
            assert!(settings.contains(s), "{s} not in {settings}");
        }
    }
}

/// numalab built against MPICH, inside `salloc -N 2`: it starts its ranks with
/// `srun --mpi=pmi2`, one on each host. `mpi latency` with rank 1 kept inside MPI for
/// 1 s as rank 0 finalizes (MPICH 4.0's UCX finalize hung so under srun too, without
/// numalab's PMI barrier: see numalab_mpi::finalize), then `dsm run sor`, verified.
#[test]
fn salloc_runs_the_mpich_build_with_srun_over_pmi2_one_rank_on_each_of_two_hosts() {
    let Some(exe) = common::mpi::mpich_build() else {
        return;
    };
    let Some((_one, c)) = slurm_cluster() else {
        return;
    };
    let slurm = Slurm::up(&c);
    // Each host has a /tmp of its own: the binary runs from the cluster's folder.
    let copy = c.dir.join("numalab-mpich");
    std::fs::copy(&exe, &copy).expect("copy the MPICH build into the cluster");
    let salloc = ["salloc", "-N", "2", copy.to_str().unwrap()];
    let latency = [
        "mpi", "latency", "--sizes", "8", "--ops", "pingpong", "--json",
    ];
    let late = [("NUMALAB_MPI_LATE_RANK", "1")];
    let v = ok(&slurm.run_with(&c, "200", &[&salloc[..], &latency].concat(), &late));
    by_srun_on_mpich(&v);
    assert_eq!(v[0]["parameters"]["relation"], "other machine");
    let sor = [
        "dsm",
        "run",
        "sor",
        "--input",
        "small",
        "--ranks-per-host",
        "1",
        "--json",
    ];
    let v = ok(&slurm.run(&c, "300", &[&salloc[..], &sor].concat()));
    by_srun_on_mpich(&v);
    let check = &v[0]["data"]["check"];
    assert!(
        check["max_rel_diff"].as_f64().unwrap() <= check["tolerance"].as_f64().unwrap(),
        "{check}"
    );
    slurm.down();
    let left = c.left_running();
    assert!(
        left.is_empty(),
        "left running after Slurm stopped: {left:?}"
    );
}
