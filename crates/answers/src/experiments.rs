//! Every experiment numalab runs, listed once: the command that runs it, its
//! `Options` type, and a value of those options that `check()` must refuse. The
//! registry test walks this list (Options round-trip through serde, `check()`
//! refuses the bad value in one line, `--dry-run --json` gives plan records), and
//! the CLI's test checks that every measuring command is listed here.
//! Adding an experiment adds one line here, beside its presenter's line in
//! [`crate::registry`].

use numalab_suites::{collectives, cvm, earth, placement};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::marker::PhantomData;

/// One experiment's options, seen without its type: what the registry test needs.
pub trait OptionsShape: Sync {
    /// `Options::default()` as JSON.
    fn default_json(&self) -> Value;
    /// JSON read into `Options` and written back; the error is serde's.
    fn round_trip(&self, v: Value) -> Result<Value, String>;
    /// `Options::check()` of the options this JSON holds.
    fn check(&self, v: Value) -> Result<(), String>;
    /// The default options with one value that `check()` must refuse.
    fn bad_json(&self) -> Value;
}

/// An experiment: its command line and its options.
pub struct Experiment {
    /// The command words, e.g. `["mpi", "latency"]` (an experiment that a flag selects,
    /// such as `suite earth --mpi`, has the flag in `dry_run`).
    pub command: &'static [&'static str],
    /// Flags a dry run on any machine needs besides `--dry-run` (e.g. `--ranks 2`).
    pub dry_run: &'static [&'static str],
    /// Its options.
    pub options: &'static dyn OptionsShape,
}

/// The shape of one `Options` type: how to make it refuse, and how to check it.
pub struct Shape<O> {
    /// Spoils one value of the default options.
    pub spoil: fn(&mut O),
    /// The type's own `check()`, its error as text.
    pub check: fn(&O) -> Result<(), String>,
    /// Marks the options type (fn() keeps `Shape` Sync whatever `O` is).
    pub of: PhantomData<fn() -> O>,
}

impl<O: Serialize + DeserializeOwned + Default> OptionsShape for Shape<O> {
    fn default_json(&self) -> Value {
        to_json(&O::default())
    }
    fn round_trip(&self, v: Value) -> Result<Value, String> {
        let o: O = serde_json::from_value(v).map_err(|e| e.to_string())?;
        Ok(to_json(&o))
    }
    fn check(&self, v: Value) -> Result<(), String> {
        let o: O = serde_json::from_value(v).map_err(|e| e.to_string())?;
        (self.check)(&o)
    }
    fn bad_json(&self) -> Value {
        let mut o = O::default();
        (self.spoil)(&mut o);
        to_json(&o)
    }
}

fn to_json<O: Serialize>(o: &O) -> Value {
    // Options are plain structs of numbers, strings and lists: serialising cannot fail.
    serde_json::to_value(o).expect("options serialise")
}

/// The shape of `$ty`, whose `check()` must refuse the default after `$spoil`.
macro_rules! shape {
    ($ty:ty, $spoil:expr) => {
        &Shape::<$ty> {
            spoil: $spoil,
            check: |o| o.check().map_err(|e| e.to_string()),
            of: PhantomData,
        }
    };
}

/// Every experiment, in the order `numalab --help` lists their commands.
pub static ALL: &[Experiment] = &[
    Experiment {
        command: &["tiers"],
        dry_run: &[],
        options: shape!(crate::tiers::Options, |o| o.nodes = Some("bogus".into())),
    },
    Experiment {
        command: &["latency"],
        dry_run: &[],
        options: shape!(numalab_bench::latency::Options, |o| o.iterations = 0),
    },
    Experiment {
        command: &["bandwidth"],
        dry_run: &[],
        options: shape!(numalab_bench::bandwidth::Options, |o| o.iterations = 0),
    },
    Experiment {
        command: &["c2c"],
        dry_run: &[],
        options: shape!(numalab_bench::c2c::Options, |o| o.metric = "bogus".into()),
    },
    Experiment {
        command: &["matrix", "latency"],
        dry_run: &[],
        options: shape!(numalab_bench::matrix::Options, |o| o.level = "bogus".into()),
    },
    Experiment {
        command: &["matrix", "bandwidth"],
        dry_run: &[],
        options: shape!(numalab_bench::matrix::Options, |o| o.iterations = 0),
    },
    Experiment {
        command: &["invalidate"],
        dry_run: &[],
        options: shape!(numalab_bench::invalidate::Options, |o| o.per_node = 0),
    },
    Experiment {
        command: &["intervene"],
        dry_run: &[],
        options: shape!(numalab_bench::intervene::Options, |o| o.states =
            "bogus".into()),
    },
    Experiment {
        command: &["loaded-latency"],
        dry_run: &[],
        options: shape!(numalab_bench::loaded::Options, |o| o.traffic =
            "bogus".into()),
    },
    Experiment {
        command: &["suite", "placement"],
        dry_run: &[],
        options: shape!(placement::Options, |o| o.unit = "bogus".into()),
    },
    Experiment {
        command: &["suite", "collectives"],
        dry_run: &[],
        options: shape!(collectives::Options, |o| o.barrier = "bogus".into()),
    },
    Experiment {
        command: &["suite", "earth"],
        dry_run: &[],
        options: shape!(earth::Options, |o| o.parts = "bogus".into()),
    },
    Experiment {
        command: &["suite", "earth"],
        dry_run: &["--mpi", "--ranks", "2"],
        options: shape!(earth::mpi::Options, |o| o.parts = vec!["bogus".into()]),
    },
    Experiment {
        command: &["suite", "collectives"],
        dry_run: &["--mpi", "--ranks", "2"],
        options: shape!(collectives::mpi::Options, |o| o.iterations = 0),
    },
    Experiment {
        command: &["mpi", "ranks"],
        dry_run: &["--ranks", "2"],
        options: shape!(numalab_mpi::ranks::Options, |o| o.job.ranks = Some(0)),
    },
    Experiment {
        command: &["mpi", "latency"],
        dry_run: &["--ranks", "2"],
        options: shape!(numalab_mpi::p2p::Options, |o| o.window = 0),
    },
    Experiment {
        command: &["mpi", "bandwidth"],
        dry_run: &["--ranks", "2"],
        options: shape!(numalab_mpi::p2p::Options, |o| o.iterations = Some(0)),
    },
    Experiment {
        command: &["mpi", "bandwidth"],
        dry_run: &["--bidirectional", "--ranks", "2"],
        options: shape!(numalab_mpi::p2p::Options, |o| o.sizes = vec![0]),
    },
    Experiment {
        command: &["mpi", "matrix"],
        dry_run: &["--ranks", "2"],
        options: shape!(numalab_mpi::matrix::Options, |o| o.iterations = 0),
    },
    Experiment {
        command: &["suite", "cvm"],
        dry_run: &["--ranks", "2"],
        options: shape!(cvm::CvmOptions, |o| o.threads = vec![0]),
    },
    Experiment {
        command: &["dsm", "run"],
        dry_run: &["sor", "--ranks", "2"],
        options: shape!(numalab_dsm::experiment::Options, |o| o.threads = 0),
    },
    Experiment {
        command: &["cluster"],
        dry_run: &["--hosts", "4"],
        options: shape!(crate::cluster::Options, |o| o.lat_iterations = 0),
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_experiments_options_round_trip_through_serde() {
        for e in ALL {
            let v = e.options.default_json();
            let back = e.options.round_trip(v.clone());
            assert_eq!(back.as_ref(), Ok(&v), "{:?}", e.command);
        }
    }

    #[test]
    fn every_experiment_accepts_its_defaults_and_refuses_its_bad_value_in_one_line() {
        for e in ALL {
            assert_eq!(
                e.options.check(e.options.default_json()),
                Ok(()),
                "{:?}",
                e.command
            );
            let bad = e.options.bad_json();
            assert_ne!(
                bad,
                e.options.default_json(),
                "{:?} spoils nothing",
                e.command
            );
            let err = e
                .options
                .check(bad)
                .expect_err("the spoiled options are refused");
            assert_eq!(err.lines().count(), 1, "{:?}: {err}", e.command);
            assert!(
                err.contains("bogus") || err.contains('0'),
                "{:?}: {err}",
                e.command
            );
        }
    }

    #[test]
    fn commands_are_listed_once() {
        let mut seen = std::collections::BTreeSet::new();
        for e in ALL {
            let line = [e.command, e.dry_run].concat().join(" ");
            assert!(seen.insert(line), "{:?} {:?} twice", e.command, e.dry_run);
        }
    }
}
