//! An emulated cluster for the tests that run ranks across hosts: `scripts/test-cluster`
//! brought up for one test and removed when it is dropped (a panic included; a test
//! process killed outright leaves it to the next `up`'s sweep, by its owner pid).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The script, from the repository root.
pub fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/test-cluster")
}

/// Why this machine cannot host the cluster (not root, no `ip netns`, no mpirun), if it
/// cannot: the tests print it and skip.
pub fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("needs root: the emulated hosts are network, UTS and mount namespaces".into());
    }
    let ok = |cmd: &[&str]| {
        Command::new("timeout")
            .arg("20")
            .args(cmd)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !ok(&["ip", "netns", "list"]) {
        return Some(
            "needs 'ip netns' (Debian package iproute2) in a kernel with network namespaces".into(),
        );
    }
    if !ok(&["unshare", "--uts", "--mount", "true"]) {
        return Some(
            "needs unshare of UTS and mount namespaces (util-linux; a sandbox may refuse it)"
                .into(),
        );
    }
    if !ok(&["mpirun", "--version"]) {
        return Some("needs mpirun (Debian package openmpi-bin)".into());
    }
    None
}

static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The lock the cluster tests of one test binary take one at a time (they share two
/// CPUs), or None (and why, printed) when this machine cannot run the cluster.
pub fn cluster_test() -> Option<std::sync::MutexGuard<'static, ()>> {
    if let Some(why) = unavailable() {
        eprintln!("skipped: {why}");
        return None;
    }
    Some(ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner()))
}

/// One cluster, removed on drop.
pub struct Cluster {
    /// Its directory: hostfile, agent, cpus, hosts.
    pub dir: PathBuf,
}

impl Cluster {
    /// Bring up `hosts` hosts (extra options: `--rate nlab-h2=2mbit`).
    pub fn up(hosts: usize, extra: &[&str]) -> Cluster {
        let out = Command::new("timeout")
            .args(["60", script().to_str().unwrap(), "up", "--hosts"])
            .arg(hosts.to_string())
            .args(["--owner", &std::process::id().to_string()])
            .args(extra)
            .output()
            .expect("run scripts/test-cluster");
        assert!(
            out.status.success(),
            "test-cluster up: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let dir = String::from_utf8(out.stdout).unwrap().trim().to_string();
        Cluster { dir: dir.into() }
    }

    /// A hostfile of the first `n` hosts, one slot each unless `slots` says.
    pub fn hostfile(&self, n: usize, slots: usize) -> PathBuf {
        let f = self.dir.join(format!("hostfile.{n}x{slots}"));
        let text: String = (1..=n)
            .map(|i| format!("nlab-h{i} slots={slots}\n"))
            .collect();
        std::fs::write(&f, text).unwrap();
        f
    }

    /// numalab as every host runs it: mpirun starts the same executable on every host,
    /// and each host has a /tmp of its own, so a build under /tmp (a CI clone) is not
    /// there. The cluster's folder is seen by every host: the binary runs from a copy
    /// in it.
    pub fn exe(&self) -> PathBuf {
        self.copy_in(Path::new(env!("CARGO_BIN_EXE_numalab")), "numalab")
    }

    /// `exe` copied into the cluster's folder as `name` (once), where every host finds it.
    pub fn copy_in(&self, exe: &Path, name: &str) -> PathBuf {
        let copy = self.dir.join(name);
        if !copy.exists() {
            std::fs::copy(exe, &copy)
                .unwrap_or_else(|e| panic!("copy {} into the cluster: {e}", exe.display()));
        }
        copy
    }

    /// Run numalab in the head host (where mpirun runs, on the test network), bounded
    /// by `limit_s`, with the agent as Open MPI's ssh and `env` added.
    pub fn numalab(&self, limit_s: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
        bounded_output(self.command(limit_s, args, env), limit_s, args)
    }

    /// The command [`Cluster::numalab`] runs (`timeout` its process, which passes a
    /// signal on to numalab), to start it in the background.
    pub fn command(&self, limit_s: &str, args: &[&str], env: &[(&str, &str)]) -> Command {
        let agent = self.dir.join("agent");
        let exe = self.exe();
        let mut cmd = vec![exe.to_str().unwrap()];
        cmd.extend(args);
        let mut all = vec![
            ("OMPI_MCA_plm_rsh_agent", agent.to_str().unwrap()),
            ("OMPI_ALLOW_RUN_AS_ROOT", "1"),
            ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
        ];
        all.extend(env);
        self.head_command(limit_s, &cmd, &all)
    }

    /// Run `cmd` in the head host, bounded by `limit_s` (a hang fails the test), with
    /// `env` added.
    pub fn in_head(&self, limit_s: &str, cmd: &[&str], env: &[(&str, &str)]) -> Output {
        bounded_output(self.head_command(limit_s, cmd, env), limit_s, cmd)
    }

    /// `cmd` in the head host under `timeout limit_s`, with `env` added.
    fn head_command(&self, limit_s: &str, cmd: &[&str], env: &[(&str, &str)]) -> Command {
        let mut c = Command::new("timeout");
        c.args(["-k", "10", limit_s, script().to_str().unwrap(), "exec"])
            .arg(&self.dir)
            .arg("nlab-head")
            .args(cmd);
        for (k, v) in env {
            c.env(k, v);
        }
        c
    }

    /// What still runs in the cluster's hosts besides the processes holding their
    /// namespaces ("pid command" each), once it has had 10 s to end: a job that ended
    /// leaves nothing there.
    pub fn left_running(&self) -> Vec<String> {
        let holders: Vec<String> = std::fs::read_dir(&self.dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("pid."))
            .filter_map(|e| std::fs::read_to_string(e.path()).ok())
            .map(|p| p.trim().to_string())
            .collect();
        let spaces = std::fs::read_to_string(self.dir.join("netns.hosts")).unwrap();
        let mut left = Vec::new();
        for _ in 0..50 {
            left = spaces
                .split_whitespace()
                .flat_map(|ns| {
                    let out = Command::new("ip").args(["netns", "pids", ns]).output();
                    String::from_utf8_lossy(&out.map(|o| o.stdout).unwrap_or_default())
                        .split_whitespace()
                        .map(str::to_string)
                        .collect::<Vec<_>>()
                })
                .filter(|p| !holders.contains(p))
                .filter_map(|p| {
                    let cmd = std::fs::read(format!("/proc/{p}/cmdline")).ok()?;
                    // A zombie (empty command line) runs nothing; its parent reaps it.
                    (!cmd.is_empty()).then(|| format!("{p} {}", String::from_utf8_lossy(&cmd)))
                })
                .collect();
            if left.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        left
    }

    /// Run `cmd` on `host` of the cluster (inside its namespaces), asserting it worked.
    pub fn on_host(&self, host: &str, cmd: &str) {
        let out = Command::new("timeout")
            .arg("30")
            .arg(script())
            .arg("exec")
            .arg(&self.dir)
            .args([host, "sh", "-c", cmd])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{host}: {cmd}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Limit what the agent starts on `host` from now on to `quota_us` of CPU per
    /// `period_us` (`test-cluster quota`, a cgroup the cluster's `down` removes); the
    /// cgroup's folder on this machine.
    pub fn quota(&self, host: &str, quota_us: u32, period_us: u32) -> PathBuf {
        let out = Command::new("timeout")
            .arg("30")
            .arg(script())
            .arg("quota")
            .arg(&self.dir)
            .args([host, &quota_us.to_string(), &period_us.to_string()])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "test-cluster quota {host}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let cg = std::fs::read_to_string(self.dir.join(format!("cgroup.{host}"))).unwrap();
        PathBuf::from(cg.trim())
    }

    /// Run the script's `cmd` (cut, mend, ...) on `host`.
    pub fn script(&self, cmd: &str, host: &str) {
        let ok = Command::new(script())
            .arg(cmd)
            .arg(&self.dir)
            .arg(host)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "test-cluster {cmd} {host} failed");
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new("timeout")
            .args(["60", script().to_str().unwrap(), "down"])
            .arg(&self.dir)
            .status();
    }
}

/// What of any cluster is left (namespaces, directories), one per line; empty: nothing.
pub fn leftovers() -> String {
    let out = Command::new(script())
        .arg("leftovers")
        .output()
        .expect("run test-cluster leftovers");
    String::from_utf8(out.stdout).unwrap()
}

/// The JSON records of a run that must have succeeded (its stderr shown if not),
/// checked against the schema.
pub fn ok(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    super::validate(&out.stdout)
}

/// The records of `kind` among `recs`.
pub fn of<'a>(recs: &'a [serde_json::Value], kind: &str) -> Vec<&'a serde_json::Value> {
    recs.iter().filter(|r| r["kind"] == kind).collect()
}

/// The ranks' hosts and CPUs of a record's placement, in rank order.
pub fn ranks_at(rec: &serde_json::Value) -> Vec<(String, u64)> {
    rec["placement"]["per_rank"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["host"].as_str().unwrap().to_string(),
                p["cpu"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The ranks' hosts of a record's placement, in rank order.
pub fn rank_hosts(rec: &serde_json::Value) -> Vec<String> {
    ranks_at(rec).into_iter().map(|(h, _)| h).collect()
}

/// `mpi latency` of 8 B between the first two ranks, one per host of `hostfile`: the
/// arguments, `--ops` and `--iterations` as given.
pub fn latency_args<'a>(hostfile: &'a str, ops: &'a str, iterations: &'a str) -> Vec<&'a str> {
    vec![
        "mpi",
        "latency",
        "--hostfile",
        hostfile,
        "--ranks",
        "2",
        "--sizes",
        "8",
        "--ops",
        ops,
        "--iterations",
        iterations,
    ]
}

/// `suite collectives --mpi` short, reduce included (its combine once read a block
/// before the get that brings it had landed: over TCP a get completes at the next
/// flush); the job's flags are added by the caller.
pub const COLLECTIVES: [&str; 12] = [
    "suite",
    "collectives",
    "--mpi",
    "--threads",
    "2",
    "--sizes",
    "256",
    "--iterations",
    "2",
    "--only",
    "barrier,broadcast,shift,gather,allgather,reduce",
    "--json",
];

/// `suite cvm` small, two apps × two protocols; the job's flags are added by the caller.
pub const CVM: [&str; 11] = [
    "suite",
    "cvm",
    "--input",
    "small",
    "--apps",
    "sor,water-nsq",
    "--protocols",
    "lmw,lmwc",
    "--threads",
    "1",
    "--json",
];

/// `numalab cluster`'s quick options (the figures are anything on shared CPUs; the
/// structure matters): `lat` round trips per pair and `bw_size` messages. The memory
/// check chases and streams 256 MiB: the emulated hosts share this machine's memory,
/// and the default (8 x the LLC) is 4 GiB per host on a 260 MiB L3, which took a
/// 3-host job past its timeout beside a busy CPU.
pub fn quick<'a>(lat: &'a str, bw_size: &'a str) -> [&'a str; 14] {
    [
        "--mem-size",
        "256M",
        "--lat-iterations",
        lat,
        "--bw-size",
        bw_size,
        "--bw-window",
        "2",
        "--bw-iterations",
        "2",
        "--coll-iterations",
        "3",
        "--mem-iterations",
        "1",
    ]
}

/// A `cluster-links` record's data holds `hosts` and whole matrices: every cell off
/// the diagonal measured, none on it.
pub fn matrices_whole(links: &serde_json::Value, hosts: &[&str]) {
    assert_eq!(links["hosts"], serde_json::json!(hosts));
    for m in ["latency_ns", "send_gbps", "recv_gbps"] {
        let rows = links[m].as_array().unwrap();
        assert_eq!(rows.len(), hosts.len(), "{m}");
        for (i, row) in rows.iter().enumerate() {
            for (j, cell) in row.as_array().unwrap().iter().enumerate() {
                assert_eq!(cell.is_null(), i == j, "{m}[{i}][{j}]: {cell}");
            }
        }
    }
}

/// The lines of the journal of a `numalab cluster -o DIR` run (its header first).
pub fn journal_lines(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("journal.jsonl"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// The journal `to` would hold had the run of `from` stopped after `keep` parts.
pub fn cut(from: &Path, to: &Path, keep: usize) {
    std::fs::create_dir_all(to).unwrap();
    let lines = journal_lines(from);
    let text: String = lines[..1 + keep].iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(to.join("journal.jsonl"), text).unwrap();
}

/// The records of a run's folder (`results.json`), checked against the schema.
pub fn results(dir: &Path) -> Vec<serde_json::Value> {
    let v = super::validate(&std::fs::read(dir.join("results.json")).unwrap());
    v.as_array().unwrap().clone()
}

/// The `parts` counts of a cluster run's links record.
pub fn parts(recs: &[serde_json::Value]) -> serde_json::Value {
    of(recs, "cluster-links")[0]["parameters"]["parts"].clone()
}

/// Runs `c` (a `timeout LIMIT …` command) and fails the test when it hung.
fn bounded_output(mut c: Command, limit_s: &str, what: &[&str]) -> Output {
    let out = c.output().expect("run a command in the cluster");
    assert_ne!(
        out.status.code(),
        Some(124),
        "{what:?} hung past {limit_s} s in the cluster: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
