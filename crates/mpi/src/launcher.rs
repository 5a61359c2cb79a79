//! Which program starts the ranks, and its command line: Open MPI's `mpirun`, MPICH's
//! hydra (`mpiexec.hydra`) or Slurm's `srun` inside an allocation. Chosen with
//! `--launcher`, else detected: `srun` inside an allocation, else the launcher of the
//! MPI library numalab was built with. Each builds its own arguments from the job (ranks,
//! hostfile, ranks per host, binding, the remote shell); what only Open MPI reads
//! (`--mca`, `OMPI_MCA_*`, `--oversubscribe`, running as root) goes to Open MPI alone.

use crate::error::{Error, Result};
use crate::hostfile::HostLine;
use crate::mapping::{MapBy, Mapping};
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The remote shell every launcher reaches another host with (default: ssh).
pub const AGENT_VAR: &str = "NUMALAB_LAUNCH_AGENT";
/// Set by numalab's launcher for its ranks: which launcher started them, and why.
pub const USED_VAR: &str = "NUMALAB_LAUNCHED_BY";
/// What `--launcher` takes.
pub const VALID: &str =
    "valid: mpirun (Open MPI), hydra (MPICH's mpiexec), srun (Slurm, inside an allocation)";

/// A program that starts ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Launcher {
    /// Open MPI's `mpirun`.
    OpenMpi,
    /// MPICH's hydra, `mpiexec.hydra` (also MPICH-family libraries).
    Hydra,
    /// Slurm's `srun`, inside an allocation.
    Srun,
}

/// The job as a launcher needs it.
#[derive(Debug, Clone, Default)]
pub struct Job {
    /// Ranks to start.
    pub ranks: usize,
    /// The user's hostfile and its hosts (None: this machine).
    pub hostfile: Option<(PathBuf, Vec<HostLine>)>,
    /// More ranks than this machine's CPUs, without a hostfile.
    pub oversubscribe: bool,
    /// Running as root (Open MPI refuses it unless told).
    pub root: bool,
    /// `--ranks-per-host` and `--map-by`.
    pub mapping: Mapping,
    /// The remote shell (`NUMALAB_LAUNCH_AGENT`), if set.
    pub agent: Option<PathBuf>,
    /// A path prefix, this launch's own, for files a launcher needs written.
    pub scratch: PathBuf,
    /// The MPI library's version string ([`built_with`]; empty: not known).
    pub library: String,
}

/// A launcher's command line: arguments before the program, environment for it,
/// files to write first, and what was set across hosts, with why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Line {
    /// Arguments before numalab's own command line.
    pub args: Vec<OsString>,
    /// Variables set for the launcher (and so its ranks).
    pub env: Vec<(String, String)>,
    /// Files to write before starting it (path, text), removed after.
    pub files: Vec<(PathBuf, String)>,
    /// Settings for a job across hosts, `name=value (why)` each.
    pub said: Vec<String>,
}

impl Launcher {
    /// Parse `--launcher`'s value, or one line naming it and what is valid.
    pub fn parse(s: &str) -> Result<Launcher> {
        match s.trim().to_ascii_lowercase().as_str() {
            "mpirun" | "openmpi" | "open-mpi" | "ompi" => Ok(Launcher::OpenMpi),
            "hydra" | "mpiexec" | "mpich" => Ok(Launcher::Hydra),
            "srun" | "slurm" => Ok(Launcher::Srun),
            _ => Err(Error::Usage(format!("invalid --launcher '{s}': {VALID}"))),
        }
    }

    /// The value as `--launcher` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Launcher::OpenMpi => "mpirun",
            Launcher::Hydra => "hydra",
            Launcher::Srun => "srun",
        }
    }

    /// The default from an environment lookup and the MPI library's version string
    /// (pure): the launcher and why.
    pub fn detect_from(get: &dyn Fn(&str) -> Option<String>, library: &str) -> (Launcher, String) {
        if let Some(id) = get("SLURM_JOB_ID").filter(|v| !v.trim().is_empty()) {
            return (Launcher::Srun, format!("inside Slurm allocation {id}"));
        }
        let first = library.lines().next().unwrap_or_default().trim();
        if crate::slurm::mpich_family(library) {
            (Launcher::Hydra, format!("numalab is built with {first}"))
        } else if first.is_empty() {
            (Launcher::OpenMpi, "the default".into())
        } else {
            (Launcher::OpenMpi, format!("numalab is built with {first}"))
        }
    }

    /// The launcher for a job numalab starts: `given`, else detected; `srun` outside
    /// an allocation, or with a hostfile, is refused. Also why it was chosen.
    pub fn choose(given: Option<Launcher>, hostfile: Option<&Path>) -> Result<(Launcher, String)> {
        let env = |k: &str| std::env::var(k).ok();
        Self::choose_from(given, hostfile, &env, &built_with())
    }

    /// [`Launcher::choose`] from any environment and library (pure, for tests).
    pub fn choose_from(
        given: Option<Launcher>,
        hostfile: Option<&Path>,
        get: &dyn Fn(&str) -> Option<String>,
        library: &str,
    ) -> Result<(Launcher, String)> {
        let (l, why) = match given {
            Some(l) => (l, "--launcher".to_string()),
            None => Self::detect_from(get, library),
        };
        if l == Launcher::Srun {
            if get("SLURM_JOB_ID").is_none_or(|v| v.trim().is_empty()) {
                return Err(Error::Usage(
                    "invalid --launcher 'srun': not inside a Slurm allocation (SLURM_JOB_ID is unset); run under salloc or sbatch, or give --launcher mpirun or hydra".into(),
                ));
            }
            if let Some(h) = hostfile {
                return Err(Error::Usage(format!(
                    "invalid --hostfile '{}' with --launcher srun: the allocation's nodes are the hosts; drop --hostfile",
                    h.display()
                )));
            }
        }
        Ok((l, why))
    }

    /// The program: `NUMALAB_MPIRUN` if set, else the launcher's name on the PATH; a
    /// clear error naming the package otherwise.
    pub fn program(self) -> Result<PathBuf> {
        let (names, package): (&[&str], &str) = match self {
            Launcher::OpenMpi => (&["mpirun"], "install Open MPI (Debian/Ubuntu package openmpi-bin, with libopenmpi-dev to build)"),
            Launcher::Hydra => (&["mpiexec.hydra", "mpiexec.mpich"], "install MPICH (Debian/Ubuntu package mpich, with libmpich-dev to build)"),
            Launcher::Srun => (&["srun"], "install Slurm's client (Debian/Ubuntu package slurm-client)"),
        };
        let missing = |what: &str| {
            Error::Usage(format!(
                "cannot launch ranks: {what}; {package}, or run numalab under your own launcher"
            ))
        };
        if let Some(p) = std::env::var_os("NUMALAB_MPIRUN") {
            let p = PathBuf::from(p);
            return match is_executable(&p) {
                true => Ok(p),
                false => Err(missing(&format!(
                    "NUMALAB_MPIRUN '{}' is not an executable file",
                    p.display()
                ))),
            };
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        names
            .iter()
            .flat_map(|n| std::env::split_paths(&path).map(move |d| d.join(n)))
            .find(|p| is_executable(p))
            .ok_or_else(|| missing(&format!("{} is not on the PATH", names[0])))
    }

    /// The command line for `job` (pure but for the user's own settings, read from
    /// the environment, which win and are recorded as theirs).
    pub fn line(self, job: &Job) -> Line {
        match self {
            Launcher::OpenMpi => open_mpi(job),
            Launcher::Hydra => hydra(job),
            Launcher::Srun => srun(job),
        }
    }
}

/// The version string of the MPI library this numalab runs with (callable before
/// MPI is initialised).
pub fn built_with() -> String {
    let raw = mpi::environment::library_version().unwrap_or_default();
    raw.trim_matches(|c: char| c == '\0' || c.is_whitespace())
        .to_string()
}

/// Which launcher started this rank, as recorded: numalab's own launch says it (and
/// why); under the user's launcher, what its variables show.
pub fn recorded() -> String {
    if let Some(v) = std::env::var(USED_VAR).ok().filter(|v| !v.is_empty()) {
        return v;
    }
    let has = |k: &str| std::env::var_os(k).is_some();
    match () {
        _ if has("SLURM_STEP_ID") && has("SLURM_PROCID") => "srun (the user's)".into(),
        _ if has("OMPI_COMM_WORLD_SIZE") => "mpirun (the user's)".into(),
        _ if has("PMI_RANK") => "hydra or another PMI launcher (the user's)".into(),
        _ => "none (a single process)".into(),
    }
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

fn os(v: &[&str]) -> Vec<OsString> {
    v.iter().map(OsString::from).collect()
}

/// The MCA variable choosing Open MPI's reduction components, and numalab's choice:
/// Open MPI 4.1's op/avx saturates MPI_SUM on 8-bit integers instead of wrapping, so
/// `mpi latency`'s accumulate would fail its data check.
pub const OP_VAR: &str = "OMPI_MCA_op";
/// Every reduction component but op/avx.
pub const OP_EXCLUDED: &str = "^avx";

fn open_mpi(job: &Job) -> Line {
    let mut l = Line {
        args: os(&["-np", &job.ranks.to_string()]),
        ..Line::default()
    };
    match &job.hostfile {
        Some((h, _)) => {
            l.args.push("--hostfile".into());
            l.args.push(h.clone().into_os_string());
        }
        None if job.oversubscribe => l.args.push("--oversubscribe".into()),
        None => {}
    }
    if job.root {
        l.args.push("--allow-run-as-root".into());
    }
    l.args.extend(job.mapping.mpirun_args());
    // numalab pins each rank itself, with the placement language, and proves it.
    l.args.extend(os(&["--bind-to", "none"]));
    if let Some(a) = &job.agent {
        if std::env::var_os("OMPI_MCA_plm_rsh_agent").is_none() {
            l.args.extend(os(&["--mca", "plm_rsh_agent"]));
            l.args.push(a.clone().into_os_string());
        }
    }
    if let Some((_, hosts)) = &job.hostfile {
        let forward = crate::across::numalab_vars(&[
            crate::env::TOKEN_VAR,
            crate::across::SETTINGS_VAR,
            USED_VAR,
        ]);
        let s = crate::across::open_mpi(hosts, &forward);
        l.args.extend(s.args);
        l.said = s.said;
    }
    if std::env::var_os(OP_VAR).is_none() {
        l.env.push((OP_VAR.into(), OP_EXCLUDED.into()));
    }
    l
}

/// Hydra's hostfile (`host:N`), from the user's: with `--map-by host` one slot a line,
/// which hydra walks round and round; else each host's slots (hydra's default 1).
fn hydra_hosts(hosts: &[HostLine], by_host: bool) -> String {
    hosts
        .iter()
        .map(|h| match h.slots {
            Some(n) if !by_host => format!("{}:{n}\n", h.host),
            _ => format!("{}:1\n", h.host),
        })
        .collect()
}

fn hydra(job: &Job) -> Line {
    let mut l = Line {
        args: os(&["-n", &job.ranks.to_string()]),
        ..Line::default()
    };
    let by_host = job.mapping.map_by == Some(MapBy::Host);
    if let Some((_, hosts)) = &job.hostfile {
        let f = PathBuf::from(format!("{}.hosts", job.scratch.display()));
        l.files.push((f.clone(), hydra_hosts(hosts, by_host)));
        l.args.push("-f".into());
        l.args.push(f.into_os_string());
        let s = crate::across::ucx(hosts);
        l.args.extend(s.args);
        l.said = s.said;
        l.said.push(
            "every variable of the launcher's environment passed to every host (hydra's default)"
                .into(),
        );
    }
    if let (Some(n), false) = (job.mapping.ranks_per_host, by_host) {
        l.args.extend(os(&["-ppn", &n.to_string()]));
    }
    if let Some(a) = &job.agent {
        l.args.extend(os(&["-launcher", "ssh", "-launcher-exec"]));
        l.args.push(a.clone().into_os_string());
    }
    // numalab pins each rank itself, with the placement language, and proves it.
    l.args.extend(os(&["-bind-to", "none"]));
    l
}

/// srun inside the allocation: the tasks and their spread, the PMI plugin of the
/// library, and for Open MPI its transport across nodes and reductions without op/avx
/// as variables (srun passes its environment on; see [`crate::slurm::settings`]).
fn srun(job: &Job) -> Line {
    let s = crate::slurm::settings(&job.library, &|k| std::env::var(k).ok());
    let mut l = Line {
        args: os(&["--ntasks", &job.ranks.to_string()]),
        env: s.env,
        said: s.said,
        ..Line::default()
    };
    if job.library.contains("Open MPI") && std::env::var_os(OP_VAR).is_none() {
        l.env.push((OP_VAR.into(), OP_EXCLUDED.into()));
    }
    if let Some(n) = job.mapping.ranks_per_host {
        l.args.extend(os(&["--ntasks-per-node", &n.to_string()]));
    }
    if job.mapping.map_by == Some(MapBy::Host) {
        l.args.extend(os(&["--distribution", "cyclic"]));
    }
    // numalab pins each rank itself; a rank that fails ends the step at once.
    l.args
        .extend(os(&["--cpu-bind=none", "--kill-on-bad-exit=1"]));
    l.args.extend(s.args);
    l
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn strs(l: &Line) -> Vec<String> {
        l.args
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect()
    }

    fn hosts() -> Vec<HostLine> {
        crate::hostfile::parse("a slots=2\nb\n").unwrap()
    }

    fn job(ranks: usize) -> Job {
        Job {
            ranks,
            scratch: "/s".into(),
            ..Job::default()
        }
    }

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn names_parse_and_a_bad_one_says_what_is_valid() {
        for l in [Launcher::OpenMpi, Launcher::Hydra, Launcher::Srun] {
            assert_eq!(Launcher::parse(l.name()).unwrap(), l);
        }
        assert_eq!(Launcher::parse("MPICH").unwrap(), Launcher::Hydra);
        let e = Launcher::parse("ssh").unwrap_err();
        assert!(e.is_user_error());
        assert!(
            e.to_string()
                .starts_with("invalid --launcher 'ssh': valid: mpirun"),
            "{e}"
        );
    }

    #[test]
    fn the_default_is_srun_in_an_allocation_else_the_librarys_own() {
        let ompi = "Open MPI v4.1.4, package: Debian OpenMPI";
        let mpich = "MPICH Version:\t4.0.2\nMPICH Release date: ...";
        let none = env(&[]);
        assert_eq!(Launcher::detect_from(&none, ompi).0, Launcher::OpenMpi);
        let (l, why) = Launcher::detect_from(&none, mpich);
        assert_eq!(l, Launcher::Hydra);
        assert!(why.contains("MPICH Version"), "{why}");
        let slurm = env(&[("SLURM_JOB_ID", "42")]);
        let (l, why) = Launcher::detect_from(&slurm, mpich);
        assert_eq!(
            (l, why.as_str()),
            (Launcher::Srun, "inside Slurm allocation 42")
        );
    }

    #[test]
    fn srun_outside_an_allocation_or_with_a_hostfile_is_refused() {
        let none = env(&[]);
        let e = Launcher::choose_from(Some(Launcher::Srun), None, &none, "").unwrap_err();
        assert!(e.is_user_error());
        assert!(
            e.to_string()
                .starts_with("invalid --launcher 'srun': not inside a Slurm allocation"),
            "{e}"
        );
        let slurm = env(&[("SLURM_JOB_ID", "7")]);
        assert!(Launcher::choose_from(Some(Launcher::Srun), None, &slurm, "").is_ok());
        let e = Launcher::choose_from(None, Some(Path::new("h")), &slurm, "")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("invalid --hostfile 'h' with --launcher srun"),
            "{e}"
        );
        let (l, why) =
            Launcher::choose_from(Some(Launcher::Hydra), None, &slurm, "Open MPI").unwrap();
        assert_eq!((l, why.as_str()), (Launcher::Hydra, "--launcher"));
    }

    #[test]
    fn open_mpi_gets_its_own_flags_and_only_it_does() {
        let mut j = job(4);
        j.oversubscribe = true;
        j.root = true;
        let a = strs(&Launcher::OpenMpi.line(&j));
        assert_eq!(
            a,
            [
                "-np",
                "4",
                "--oversubscribe",
                "--allow-run-as-root",
                "--bind-to",
                "none"
            ]
        );
        for l in [Launcher::Hydra, Launcher::Srun] {
            let line = l.line(&j);
            let a = strs(&line).join(" ");
            assert!(!a.contains("--mca") && !a.contains("oversubscribe"), "{a}");
            assert!(!a.contains("root") && line.env.is_empty(), "{a}");
        }
    }

    #[test]
    fn open_mpi_across_hosts_names_the_hostfile_and_the_agent() {
        let mut j = job(3);
        j.hostfile = Some(("hosts".into(), hosts()));
        j.agent = Some("/c/agent".into());
        j.mapping.ranks_per_host = Some(1);
        let a = strs(&Launcher::OpenMpi.line(&j));
        assert_eq!(&a[..4], ["-np", "3", "--hostfile", "hosts"]);
        assert!(
            a.windows(2).any(|w| w == ["--map-by", "ppr:1:node"]),
            "{a:?}"
        );
        if std::env::var_os("OMPI_MCA_plm_rsh_agent").is_none() {
            assert!(
                a.windows(3)
                    .any(|w| w == ["--mca", "plm_rsh_agent", "/c/agent"]),
                "{a:?}"
            );
        }
        assert!(a.windows(2).any(|w| w == ["--mca", "btl"]), "{a:?}");
    }

    #[test]
    fn hydra_writes_its_own_hostfile_and_takes_ppn_and_the_agent() {
        let mut j = job(4);
        j.hostfile = Some(("hosts".into(), hosts()));
        j.agent = Some("/c/agent".into());
        j.mapping.ranks_per_host = Some(2);
        let line = Launcher::Hydra.line(&j);
        let a = strs(&line);
        assert_eq!(&a[..4], ["-n", "4", "-f", "/s.hosts"]);
        assert_eq!(line.files, [("/s.hosts".into(), "a:2\nb:1\n".into())]);
        let s = a.join(" ");
        assert!(s.contains("-ppn 2"), "{s}");
        assert!(s.contains("-launcher ssh -launcher-exec /c/agent"), "{s}");
        assert!(s.ends_with("-bind-to none"), "{s}");
        assert!(
            line.said.iter().any(|l| l.starts_with("UCX_TLS=")),
            "{:?}",
            line.said
        );
        // Round robin over hosts: one slot a line, no -ppn (hydra walks the list again).
        j.mapping.map_by = Some(MapBy::Host);
        let line = Launcher::Hydra.line(&j);
        assert_eq!(line.files[0].1, "a:1\nb:1\n");
        assert!(!strs(&line).contains(&"-ppn".to_string()));
        // One machine: no hostfile, no remote settings.
        let a = strs(&Launcher::Hydra.line(&job(2)));
        assert_eq!(a, ["-n", "2", "-bind-to", "none"]);
    }

    #[test]
    fn srun_takes_tasks_per_node_and_cyclic_for_map_by_host() {
        let mut j = job(4);
        j.mapping.ranks_per_host = Some(2);
        j.mapping.map_by = Some(MapBy::Host);
        assert_eq!(
            strs(&Launcher::Srun.line(&j)),
            [
                "--ntasks",
                "4",
                "--ntasks-per-node",
                "2",
                "--distribution",
                "cyclic",
                "--cpu-bind=none",
                "--kill-on-bad-exit=1",
                "--mpi=pmix"
            ]
        );
    }
}
