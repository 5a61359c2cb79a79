//! `suite cvm`: the seed's multithreaded-CVM study as a plan of `dsm run`s — every app ×
//! protocol × threads per rank × net delay in one MPI job — and its tables: execution
//! time normalised to T = 1 with the breakdown (Figures 3, 5, 6), the speedup over the
//! sequential program (Figure 2), the DSM actions (Tables 2 and 3) and the thread-switch
//! classes (Figure 7). Each run's result is checked against its sequential twin.

use numalab_dsm::experiment::{measure, Options, Plan};
use numalab_dsm::present::SUITE_PARAM;
use numalab_mpi::{Error, JobOptions, Launch, World};
use numalab_results::{Provenance, Record};
use numalab_topo::{Host, Machine};
use serde::{Deserialize, Serialize};

/// What the user asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CvmOptions {
    /// The job: ranks, hosts and where they run.
    #[serde(default)]
    pub job: JobOptions,
    /// Apps (default: all).
    pub apps: Vec<String>,
    /// Protocols (default: lmw, lsw, seq).
    pub protocols: Vec<String>,
    /// Threads per rank (default 1, 2, 4, 8).
    pub threads: Vec<usize>,
    /// Net delays (default "0").
    pub net_delays: Vec<String>,
    /// small or paper.
    pub input: String,
}

impl Default for CvmOptions {
    fn default() -> Self {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect();
        CvmOptions {
            job: JobOptions::default(),
            apps: s(&["sor", "swm", "fft", "water-nsq", "ocean", "barnes"]),
            protocols: s(&["lmw", "lsw", "seq"]),
            threads: vec![1, 2, 4, 8],
            net_delays: s(&["0"]),
            input: "small".into(),
        }
    }
}

impl CvmOptions {
    /// Check what needs no machine: no empty list, and every run's options.
    pub fn check(&self) -> Result<(), Error> {
        self.job.check()?;
        for (flag, empty) in [
            ("--apps", self.apps.is_empty()),
            ("--protocols", self.protocols.is_empty()),
            ("--threads", self.threads.is_empty()),
            ("--net-delay", self.net_delays.is_empty()),
        ] {
            if empty {
                return Err(Error::Usage(format!(
                    "invalid {flag} '': give at least one"
                )));
            }
        }
        self.runs().iter().try_for_each(|o| o.check())
    }

    /// The options of every run, in order.
    fn runs(&self) -> Vec<Options> {
        let mut runs = Vec::new();
        for d in &self.net_delays {
            for app in &self.apps {
                for p in &self.protocols {
                    for &t in &self.threads {
                        runs.push(Options {
                            job: self.job.clone(),
                            app: app.clone(),
                            protocol: p.clone(),
                            threads: t,
                            net_delay: d.clone(),
                            input: self.input.clone(),
                            scale: 1,
                        });
                    }
                }
            }
        }
        runs
    }
}

/// Every run of the suite, in order, for the job `launch` starts.
pub fn resolve(m: &Machine, launch: &Launch, o: &CvmOptions) -> Result<Vec<Plan>, Error> {
    o.runs()
        .iter()
        .map(|r| Plan::resolve(m, launch, r))
        .collect()
}

/// Every run's plan as a record, what `--dry-run` emits.
pub fn plan_records(plans: &[Plan], prov: &Provenance) -> Vec<Record> {
    plans.iter().map(|p| p.record(prov)).collect()
}

/// Run every plan in this job (collective); rank 0 gets all records. `progress` is
/// called on rank 0 before each run.
pub fn run(
    world: &World,
    host: &Host,
    plans: &[Plan],
    progress: &dyn Fn(usize, &Plan),
) -> Result<Option<Vec<Record>>, String> {
    let mut all = Vec::new();
    // Kept as each run ends, so a job that dies keeps the runs it finished.
    let mut kept = numalab_results::partial::Sink::from_env();
    for (i, p) in plans.iter().enumerate() {
        if world.rank == 0 {
            progress(i, p);
        }
        if let Some(mut r) = measure(world, host, p)? {
            // Marked as the suite's, so they are shown as its tables.
            for rec in &mut r {
                rec.parameters[SUITE_PARAM] = "cvm".into();
            }
            kept.add(&r);
            all.extend(r);
        }
    }
    Ok((world.rank == 0).then_some(all))
}
