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
        let exe = self.dir.join("numalab");
        if !exe.exists() {
            std::fs::copy(env!("CARGO_BIN_EXE_numalab"), &exe)
                .expect("copy numalab into the cluster");
        }
        exe
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
