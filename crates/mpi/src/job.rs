//! The job a command asks for: how many ranks, on which hosts, where each host's
//! ranks run. [`JobOptions`] is what the user said (plain serde); [`Launch`] is it
//! checked against the machine, ready for [`crate::launch::ensure`] and
//! [`crate::World::start`].

use crate::error::{Error, Result};
use crate::launch::LaunchRequest;
use crate::launcher::Launcher;
use crate::mapping::{MapBy, Mapping};
use crate::world::{Threading, WorldOptions};
use numalab_topo::Machine;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What the user asked of the job (`--ranks`, `--hostfile`, `--rank-cpus`,
/// `--ranks-per-host`, `--map-by`, `--launcher`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobOptions {
    /// Ranks to start (None: the enclosing job's size, else the command's minimum).
    pub ranks: Option<usize>,
    /// Hosts for mpirun, one per line (`host slots=N`); None: this machine.
    pub hostfile: Option<PathBuf>,
    /// Where each host's ranks run, in the placement language.
    pub rank_cpus: String,
    /// Ranks on each host (None: as the hostfile's slots and `map_by` give).
    #[serde(default)]
    pub ranks_per_host: Option<usize>,
    /// How ranks are spread over hosts and inside each (None: mpirun's default).
    #[serde(default)]
    pub map_by: Option<MapBy>,
    /// The program that starts the ranks (None: detected, see [`Launcher::choose`]).
    #[serde(default)]
    pub launcher: Option<Launcher>,
}

impl Default for JobOptions {
    fn default() -> Self {
        JobOptions {
            ranks: None,
            hostfile: None,
            rank_cpus: "compact".into(),
            ranks_per_host: None,
            map_by: None,
            launcher: None,
        }
    }
}

/// The job resolved: the launcher's request and what every rank does when it starts.
#[derive(Debug, Clone)]
pub struct Launch {
    /// What mpirun is asked for.
    pub req: LaunchRequest,
    /// Thread level and rank placement.
    pub world: WorldOptions,
}

impl Launch {
    /// Ranks in the job.
    pub fn ranks(&self) -> usize {
        self.req.ranks
    }
}

impl JobOptions {
    /// Without `--mpi` (a suite's threads form, `mpi` false) the job's flags do not
    /// apply: refused, not ignored.
    pub fn without_mpi(&self, mpi: bool) -> Result<()> {
        if mpi {
            return Ok(());
        }
        let given = [
            ("--ranks", self.ranks.map(|n| n.to_string())),
            (
                "--hostfile",
                self.hostfile.as_ref().map(|h| h.display().to_string()),
            ),
            (
                "--rank-cpus",
                (self.rank_cpus != "compact").then(|| self.rank_cpus.clone()),
            ),
            (
                "--ranks-per-host",
                self.ranks_per_host.map(|n| n.to_string()),
            ),
            ("--map-by", self.map_by.map(|m| m.name().to_string())),
            ("--launcher", self.launcher.map(|l| l.name().to_string())),
        ];
        match given.into_iter().find_map(|(f, v)| Some((f, v?))) {
            Some((f, v)) => Err(Error::Usage(format!(
                "invalid {f} '{v}': it applies with --mpi only"
            ))),
            None => Ok(()),
        }
    }

    /// Check what needs no machine: the placement parses, a given rank count is at least 1.
    pub fn check(&self) -> Result<()> {
        self.mapping().rank_cpus(&self.rank_cpus)?;
        if self.ranks == Some(0) {
            return Err(Error::Usage("invalid --ranks '0': at least 1 rank".into()));
        }
        if self.ranks_per_host == Some(0) {
            return Err(Error::Usage(
                "invalid --ranks-per-host '0': at least 1 rank per host".into(),
            ));
        }
        Ok(())
    }

    /// The spread the user asked for.
    pub fn mapping(&self) -> Mapping {
        Mapping {
            ranks_per_host: self.ranks_per_host,
            map_by: self.map_by,
        }
    }

    /// The job for a command that needs at least `min_ranks` ranks, checked against
    /// `m` before anything starts.
    pub fn resolve(&self, m: &Machine, min_ranks: usize) -> Result<Launch> {
        self.check()?;
        let mapping = self.mapping();
        let spec = mapping.rank_cpus(&self.rank_cpus)?;
        let job = crate::env::JobEnv::detect();
        // Inside a job its launcher already ran: nothing to choose.
        let (launcher, launcher_why) = match &job {
            Some(_) => (Launcher::OpenMpi, "inside a job".to_string()),
            None => Launcher::choose(self.launcher, self.hostfile.as_deref())?,
        };
        // Inside a job the launcher checked the spread; its size is the job's. Under
        // srun the hosts are the allocation's nodes.
        let hosts = match (&self.hostfile, &job) {
            (Some(h), None) => Some(crate::hostfile::read(h)?),
            (None, None) if launcher == Launcher::Srun => {
                crate::slurm::allocation(&|k| std::env::var(k).ok())
            }
            _ => None,
        };
        let ranks = match (self.ranks, &job) {
            (Some(n), _) => n,
            (None, Some(j)) if j.size > 0 => j.size,
            (None, _) => mapping
                .ranks(hosts.as_ref().map_or(1, Vec::len))
                .unwrap_or(min_ranks.max(2)),
        };
        let req = LaunchRequest {
            ranks,
            hostfile: self.hostfile.clone(),
            cpus: m.pus.len(),
            min_ranks,
            estimate: None,
            mapping,
            launcher,
            launcher_why,
        };
        req.validate()?;
        if job.is_none() {
            let local = |h: &str| crate::hostfile::is_local(h);
            mapping.check(ranks, hosts.as_deref(), req.cpus, &local)?;
        }
        // The ranks of this host (or of the topology planned against) must find CPUs;
        // other hosts check theirs when they start.
        crate::place::host_cpus(m, &spec, ranks.min(req.cpus.max(1))).map_err(|e| match e {
            Error::Usage(why) => {
                Error::Usage(format!("invalid --rank-cpus '{}': {why}", self.rank_cpus))
            }
            e => e,
        })?;
        Ok(Launch {
            req,
            world: WorldOptions {
                threading: Threading::Single,
                rank_cpus: spec,
                mapping: mapping.said(),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_pass_and_a_zero_or_unparsable_request_is_named() {
        assert_eq!(JobOptions::default().check(), Ok(()));
        let mut o = JobOptions {
            ranks: Some(0),
            ..JobOptions::default()
        };
        assert!(o.check().unwrap_err().to_string().contains("'0'"));
        o.ranks = None;
        o.rank_cpus = "bogus".into();
        assert!(o.check().unwrap_err().is_user_error());
    }
}
