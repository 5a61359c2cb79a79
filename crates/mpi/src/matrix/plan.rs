//! What `numalab mpi matrix` measures: every pair of ranks, one at a time.

use crate::error::{Error, Result};
use crate::job::{JobOptions, Launch};
use crate::sizes::{check_nonzero, check_sizes};
use numalab_results::{Provenance, Record};
use serde::{Deserialize, Serialize};

/// Record kind of the matrix's plan (`--dry-run`).
pub const KIND_PLAN: &str = "mpi-matrix-plan";

/// The user's request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Options {
    /// The job: ranks, hosts and where they run.
    #[serde(default)]
    pub job: JobOptions,
    /// Message size in bytes.
    pub size: u64,
    /// Timed round trips per pair.
    pub iterations: usize,
    /// Untimed round trips first.
    pub warmup: usize,
}

/// The resolved plan: every unordered pair, one at a time (the others wait).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Ranks in the job.
    pub ranks: usize,
    /// Pairs (lower rank times).
    pub pairs: Vec<(usize, usize)>,
    /// The options.
    pub options: Options,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            job: JobOptions::default(),
            size: 8,
            iterations: 10_000,
            warmup: 100,
        }
    }
}

impl Options {
    /// Check what needs no machine: a message of at least 1 byte, at least one round trip.
    pub fn check(&self) -> Result<()> {
        self.job.check()?;
        check_nonzero("--size", &[self.size])?;
        if self.iterations == 0 {
            return Err(Error::Usage("invalid --iterations '0': at least 1".into()));
        }
        Ok(())
    }
}

impl Plan {
    /// Resolve the options for the job `launch` starts.
    pub fn resolve(launch: &Launch, o: &Options) -> Result<Plan> {
        Plan::for_ranks(launch.ranks(), o)
    }

    /// Resolve for a job of `ranks` ranks.
    fn for_ranks(ranks: usize, o: &Options) -> Result<Plan> {
        check_sizes("--size", &[o.size], ranks, 2)?;
        if o.iterations == 0 {
            return Err(Error::Usage("invalid --iterations '0': at least 1".into()));
        }
        let pairs = (0..ranks)
            .flat_map(|a| (a + 1..ranks).map(move |b| (a, b)))
            .collect();
        Ok(Plan {
            ranks,
            pairs,
            options: o.clone(),
        })
    }

    /// How long the job may take with `crowding` ranks per CPU, generously: every
    /// pair's round trips, one pair at a time (see [`crate::sizes::transfer_estimate`]).
    pub fn estimate(&self, crowding: f64) -> std::time::Duration {
        let trips = (self.options.iterations + self.options.warmup) as u64;
        let messages = 2 * trips * self.pairs.len() as u64;
        crate::sizes::transfer_estimate(messages, self.options.size, crowding)
            + crate::sizes::JOB_START.mul_f64(crowding)
    }

    /// The plan as one record (its `data` is the plan), what `--dry-run` emits.
    pub fn records(&self, prov: &Provenance) -> Vec<Record> {
        let mut r = Record::new(
            KIND_PLAN,
            "mpi matrix plan",
            prov.clone(),
            serde_json::json!({ "ranks": self.ranks, "size": self.options.size }),
        );
        r.set_data(self);
        vec![r]
    }

    /// The plan as text, for --dry-run.
    pub fn text(&self) -> String {
        format!(
            "mpi matrix plan: {} ranks, {} one at a time, ping-pong of {} B, {} after {} warm-up each\n",
            self.ranks,
            numalab_results::words::count(self.pairs.len() as u64, "pair"),
            self.options.size,
            numalab_results::words::count(self.options.iterations as u64, "round trip"),
            self.options.warmup
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_cover_every_rank_once_and_bad_sizes_are_refused() {
        let o = Options {
            size: 8,
            iterations: 10,
            warmup: 1,
            ..Options::default()
        };
        let p = Plan::for_ranks(4, &o).unwrap();
        assert_eq!(p.pairs.len(), 6);
        assert!(p.pairs.iter().all(|(a, b)| a < b));
        let mut z = o.clone();
        z.size = 0;
        assert!(Plan::for_ranks(2, &z).is_err());
        assert!(z.check().unwrap_err().to_string().contains("'0'"));
        assert_eq!(Options::default().check(), Ok(()));
    }
}
