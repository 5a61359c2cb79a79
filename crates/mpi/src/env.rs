//! Are we inside an MPI job, and which rank are we? Read from the launcher's
//! environment (Open MPI's OMPI_COMM_WORLD_*, PMIx, MPICH/Hydra's PMI_*, a Slurm
//! step's SLURM_PROCID), so the answer is known before MPI is initialised.

/// The variable numalab's launcher sets for the ranks it starts: a file rank 0
/// creates, on the launcher's machine, to say the ranks started; it also tells the
/// launcher's watch which processes are this job's ranks.
pub const TOKEN_VAR: &str = "NUMALAB_LAUNCH_TOKEN";

/// What the launcher told this process about the job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobEnv {
    /// Ranks in the job.
    pub size: usize,
    /// This process's rank.
    pub rank: usize,
    /// Ranks on this host, where the launcher says.
    pub local_size: Option<usize>,
    /// This process's rank among those on this host, where the launcher says.
    pub local_rank: Option<usize>,
    /// Which variables said so ("OMPI_COMM_WORLD", "PMIX", "PMI", "SLURM").
    pub source: &'static str,
}

fn num(get: &dyn Fn(&str) -> Option<String>, key: &str) -> Option<usize> {
    get(key).and_then(|v| v.trim().parse().ok())
}

impl JobEnv {
    /// Detect from this process's environment.
    pub fn detect() -> Option<JobEnv> {
        Self::from_vars(&|k| std::env::var(k).ok())
    }

    /// Detect from any variable lookup (pure, for tests).
    pub fn from_vars(get: &dyn Fn(&str) -> Option<String>) -> Option<JobEnv> {
        if let (Some(size), Some(rank)) = (
            num(get, "OMPI_COMM_WORLD_SIZE"),
            num(get, "OMPI_COMM_WORLD_RANK"),
        ) {
            return Some(JobEnv {
                size,
                rank,
                local_size: num(get, "OMPI_COMM_WORLD_LOCAL_SIZE"),
                local_rank: num(get, "OMPI_COMM_WORLD_LOCAL_RANK"),
                source: "OMPI_COMM_WORLD",
            });
        }
        if let (Some(size), Some(rank)) = (num(get, "PMIX_SIZE"), num(get, "PMIX_RANK")) {
            return Some(JobEnv {
                size,
                rank,
                local_size: num(get, "PMIX_LOCAL_SIZE"),
                local_rank: num(get, "PMIX_LOCAL_RANK"),
                source: "PMIX",
            });
        }
        if get("PMIX_RANK").is_some() {
            // Some PMIx launchers give the rank but not the size; MPI_Init tells the rest.
            return Some(JobEnv {
                size: 0,
                rank: num(get, "PMIX_RANK").unwrap_or(0),
                local_size: None,
                local_rank: None,
                source: "PMIX",
            });
        }
        if let (Some(size), Some(rank)) = (num(get, "PMI_SIZE"), num(get, "PMI_RANK")) {
            return Some(JobEnv {
                size,
                rank,
                local_size: num(get, "MPI_LOCALNRANKS"),
                local_rank: num(get, "MPI_LOCALRANKID"),
                source: "PMI",
            });
        }
        // A task of a Slurm step (srun without a PMI plugin that sets PMI_*).
        if let (Some(size), Some(rank), Some(_)) = (
            num(get, "SLURM_NTASKS"),
            num(get, "SLURM_PROCID"),
            get("SLURM_STEP_ID"),
        ) {
            return Some(JobEnv {
                size,
                rank,
                local_size: None,
                local_rank: num(get, "SLURM_LOCALID"),
                source: "SLURM",
            });
        }
        None
    }
}

/// True when this process runs inside an MPI job (started by mpirun, srun, ...).
pub fn in_mpi_job() -> bool {
    JobEnv::detect().is_some()
}

/// This host's name (gethostname), for placement records and pair relations.
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname NUL-terminates on success.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "unknown".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn job(vars: &[(&str, &str)]) -> Option<JobEnv> {
        let m: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        JobEnv::from_vars(&|k| m.get(k).cloned())
    }

    #[test]
    fn open_mpi_variables_give_rank_size_and_local_rank() {
        let j = job(&[
            ("OMPI_COMM_WORLD_SIZE", "4"),
            ("OMPI_COMM_WORLD_RANK", "3"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
            ("PMIX_RANK", "3"),
        ])
        .unwrap();
        assert_eq!(
            (j.size, j.rank, j.local_size, j.local_rank),
            (4, 3, Some(2), Some(1))
        );
        assert_eq!(j.source, "OMPI_COMM_WORLD");
    }

    #[test]
    fn pmix_and_pmi_are_recognised_and_plain_environments_are_not() {
        assert_eq!(
            job(&[("PMIX_RANK", "1"), ("PMIX_SIZE", "2")])
                .unwrap()
                .source,
            "PMIX"
        );
        assert_eq!(job(&[("PMIX_RANK", "1")]).unwrap().rank, 1);
        let p = job(&[("PMI_RANK", "0"), ("PMI_SIZE", "8")]).unwrap();
        assert_eq!((p.size, p.source), (8, "PMI"));
        assert!(job(&[]).is_none());
        // An allocation alone (salloc) is no job; a step's task is.
        assert!(job(&[("SLURM_JOB_ID", "5"), ("SLURM_NTASKS", "2")]).is_none());
        let s = [
            ("SLURM_NTASKS", "2"),
            ("SLURM_PROCID", "1"),
            ("SLURM_STEP_ID", "0"),
        ];
        let s = job(&s).unwrap();
        assert_eq!((s.size, s.rank, s.source), (2, 1, "SLURM"));
        assert!(job(&[("OMPI_COMM_WORLD_SIZE", "x"), ("OMPI_COMM_WORLD_RANK", "0")]).is_none());
    }

    #[test]
    fn hostname_is_not_empty() {
        assert!(!hostname().is_empty());
    }
}
