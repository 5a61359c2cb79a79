//! Slurm on the emulated cluster, for the tests of numalab's `srun` path: Debian's
//! munged and slurmctld in the head host and one slurmd per emulated host
//! (`scripts/test-slurm` on `scripts/test-cluster`), stopped on drop.

use super::cluster::{cluster_test, Cluster};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The programs the Slurm tests need (Debian: slurmctld slurmd slurm-client munge).
const PROGRAMS: &[&str] = &[
    "munged",
    "mungekey",
    "slurmctld",
    "slurmd",
    "srun",
    "salloc",
    "sinfo",
];

/// Why Slurm cannot run here, if it cannot (the cluster's own reasons come first).
pub fn slurm_unavailable() -> Option<String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let missing: Vec<&str> = PROGRAMS
        .iter()
        .copied()
        .filter(|p| !std::env::split_paths(&path).any(|d| d.join(p).is_file()))
        .collect();
    (!missing.is_empty()).then(|| {
        format!(
            "needs Slurm and munge ({} not on the PATH; Debian packages slurmctld slurmd slurm-client munge)",
            missing.join(", ")
        )
    })
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/test-slurm")
}

/// Slurm on a cluster: its slurm.conf; its daemons stopped on drop (the cluster's own
/// drop then ends whatever is left in its hosts).
pub struct Slurm {
    dir: PathBuf,
    conf: String,
}

impl Slurm {
    pub fn up(c: &Cluster) -> Slurm {
        let out = Command::new("timeout")
            .args(["-k", "10", "90"])
            .arg(script())
            .arg("up")
            .arg(&c.dir)
            .output()
            .expect("run scripts/test-slurm");
        assert!(
            out.status.success(),
            "test-slurm up: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let conf = String::from_utf8(out.stdout).unwrap().trim().to_string();
        Slurm {
            dir: c.dir.clone(),
            conf,
        }
    }

    /// `cmd` in the head host with this Slurm's configuration, bounded by `limit_s`.
    pub fn run(&self, c: &Cluster, limit_s: &str, cmd: &[&str]) -> Output {
        self.run_with(c, limit_s, cmd, &[])
    }

    /// [`Slurm::run`] with `env` added.
    pub fn run_with(
        &self,
        c: &Cluster,
        limit_s: &str,
        cmd: &[&str],
        env: &[(&str, &str)],
    ) -> Output {
        let mut all = vec![
            ("SLURM_CONF", self.conf.as_str()),
            ("NUMALAB_MPI_TIMEOUT", "150"),
        ];
        all.extend(env);
        c.in_head(limit_s, cmd, &all)
    }

    pub fn down(&self) {
        let _ = Command::new("timeout")
            .args(["-k", "5", "30"])
            .arg(script())
            .arg("down")
            .arg(&self.dir)
            .status();
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        self.down();
    }
}

/// The cluster (2 hosts) with Slurm's programs at hand, or None (and why, printed).
pub fn slurm_cluster() -> Option<(std::sync::MutexGuard<'static, ()>, Cluster)> {
    if let Some(why) = slurm_unavailable() {
        eprintln!("skipped: {why}");
        return None;
    }
    let one = cluster_test()?;
    Some((one, Cluster::up(2, &[])))
}

/// Each rank's host, in rank order, and the launcher the record names.
pub fn hosts_and_launcher(rec: &serde_json::Value) -> (Vec<String>, String) {
    let p = &rec["placement"];
    (
        super::cluster::rank_hosts(rec),
        p["launcher"].as_str().unwrap().to_string(),
    )
}
