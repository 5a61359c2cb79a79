//! `numalab suite cvm`: the seed's multithreaded-CVM study (seed 003) as one MPI job of
//! `dsm run`s; rank 0 prints the seed's tables.

use super::mpi::{start, JobArgs};
use crate::common::{bad, check_measurable, context, CliError, CommonArgs};
use clap::Args;
use numalab_mpi::world::fail;
use numalab_mpi::Threading;
use numalab_suites::cvm::{self, CvmOptions};

/// Arguments of `numalab suite cvm`.
#[derive(Args, Debug)]
pub struct CvmArgs {
    /// Apps, comma-separated (sor, swm, fft, water-nsq, ocean, barnes).
    #[arg(long, default_value = "sor,swm,fft,water-nsq,ocean,barnes")]
    apps: String,
    /// Protocols, comma-separated.
    #[arg(long, default_value = "lmw,lsw,seq")]
    protocols: String,
    /// Threads per rank, comma-separated.
    #[arg(long, default_value = "1,2,4,8")]
    threads: String,
    /// Net delays to sweep, comma-separated (0, 0.5us, 2us, 30us, 1ms …).
    #[arg(long, default_value = "0")]
    net_delay: String,
    /// Input size: small, or paper (the seed's Table 1).
    #[arg(long, default_value = "small")]
    input: String,
    /// Print the plan without starting ranks.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    job: JobArgs,
    #[command(flatten)]
    common: CommonArgs,
}

fn list(s: &str) -> Vec<String> {
    s.split(',')
        .map(|x| x.trim().to_string())
        .filter(|x| !x.is_empty())
        .collect()
}

/// `--threads`: a comma-separated list of counts.
fn counts(s: &str) -> Result<Vec<usize>, CliError> {
    list(s)
        .iter()
        .map(|t| {
            t.parse::<usize>()
                .map_err(|_| bad(format!("invalid --threads '{t}': counts such as 1,2,4,8")))
        })
        .collect()
}

/// Run `numalab suite cvm`.
pub fn run(a: CvmArgs) -> Result<(), CliError> {
    a.common.validate()?;
    let o = CvmOptions {
        job: a.job.options(),
        apps: list(&a.apps),
        protocols: list(&a.protocols),
        threads: counts(&a.threads)?,
        net_delays: list(&a.net_delay),
        input: a.input.clone(),
    };
    o.check()?;
    check_measurable(&a.common, a.dry_run)?;
    let host = a.common.host()?;
    let mut launch = o.job.resolve(&host.machine, 2)?;
    launch.world.threading = Threading::Multiple;
    let plans = cvm::resolve(&host.machine, &launch, &o)?;
    if a.dry_run {
        return a
            .common
            .show(&cvm::plan_records(&plans, &context(&host).prov));
    }
    let world = start(&host, &launch.req, &launch.world)?;
    let n = plans.len();
    let recs = cvm::run(&world, &host, &plans, &|i, p| {
        eprintln!("[{}/{n}] {}", i + 1, p.describe())
    })
    .unwrap_or_else(|e| fail(Some(&world), &numalab_mpi::Error::System(e)));
    match recs {
        Some(recs) => a.common.show(&recs),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn lists_never_panic_and_hold_no_blanks(s in "\\PC{0,24}") {
            let v = list(&s);
            prop_assert!(v.iter().all(|x| !x.is_empty() && x.trim() == x));
            prop_assert_eq!(list(&v.join(",")), v);
        }

        #[test]
        fn thread_counts_name_what_they_refuse(s in prop_oneof!["[0-9, x-]{0,16}", "\\PC{0,16}"]) {
            match counts(&s) {
                Ok(v) => prop_assert_eq!(counts(&v.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(",")).unwrap(), v),
                Err(e) => {
                    prop_assert_eq!(e.code, 2);
                    prop_assert!(list(&s).iter().any(|t| e.msg.contains(&format!("'{t}'"))), "{}", e.msg);
                    if !s.contains(|c: char| c.is_control()) {
                        prop_assert_eq!(e.msg.lines().count(), 1);
                    }
                }
            }
        }
    }
}
