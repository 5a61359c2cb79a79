//! Every `NUMALAB_*` environment variable numalab reads, in one table with the values
//! each takes. [`check_all`] runs when numalab starts, so a bad value is one line
//! naming the variable, its value and what is valid (exit 2) before any work, never
//! a value silently ignored or an absurd one obeyed; the crates that read them do so
//! through the getters here, which apply the same rules.

use std::time::Duration;

/// What values a variable takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// A number of seconds above 0 and below 1e9.
    Seconds,
    /// A whole number in `min..=max`, or 0 where `zero` says what 0 means.
    Whole {
        /// Least value (besides 0 when `zero` is given).
        min: u64,
        /// Greatest value.
        max: u64,
        /// The unit, in words ("µs", "ns", "" for a count).
        unit: &'static str,
        /// What 0 means, where 0 is valid outside `min..=max`.
        zero: Option<&'static str>,
    },
    /// One of these words.
    Choice(&'static [&'static str]),
    /// A path: any non-empty value (what it must be is checked where it is used).
    Path,
}

/// One variable: its name, its values and what it does.
#[derive(Debug, Clone, Copy)]
pub struct Var {
    /// The variable's name.
    pub name: &'static str,
    /// The values it takes.
    pub kind: Kind,
    /// What it does, for the README's table.
    pub what: &'static str,
}

/// The largest pid Linux gives (`/proc/sys/kernel/pid_max` is at most 2^22).
const PID_MAX: u64 = 1 << 22;
/// The most ranks a job can have, for the fault-injection variables.
const RANK_MAX: u64 = 1 << 20;

/// Every variable numalab reads, once.
pub const VARS: &[Var] = &[
    Var {
        name: "NUMALAB_MPIRUN",
        kind: Kind::Path,
        what: "the mpirun to launch ranks with (an executable file)",
    },
    Var {
        name: "NUMALAB_MPI_TIMEOUT",
        kind: Kind::Seconds,
        what:
            "bound on an MPI job's run time (default: ten times its plan's estimate, at least 60 s)",
    },
    Var {
        name: "NUMALAB_MPI_STALL",
        kind: Kind::Seconds,
        what:
            "how long a rank or the launcher may stay stopped before the job is ended (default 10)",
    },
    Var {
        name: "NUMALAB_DSM_POLL_US",
        kind: Kind::Whole {
            min: 1,
            max: 1_000_000,
            unit: "µs",
            zero: None,
        },
        what: "the DSM's sleep between polls for messages (default 20)",
    },
    Var {
        name: "NUMALAB_DSM_DOORBELL",
        kind: Kind::Choice(&["on", "off"]),
        what: "off: the DSM's service thread polls while its rank computes, as before the doorbell (default on)",
    },
    Var {
        name: "NUMALAB_DSM_SPIN_US",
        kind: Kind::Whole {
            min: 1,
            max: 1_000_000,
            unit: "µs",
            zero: Some("sleeping on the doorbell at once"),
        },
        what: "how long the DSM's service thread spins after a message, its threads all blocked, before it sleeps on its doorbell (default 200)",
    },
    Var {
        name: "NUMALAB_DSM_SLICE_NS",
        kind: Kind::Whole {
            min: 100_000,
            max: 100_000_000,
            unit: "ns",
            zero: Some("the scheduler's default slice"),
        },
        what: "the scheduler slice the DSM's service thread asks for (default 100000)",
    },
    Var {
        name: "NUMALAB_RUN_DIR",
        kind: Kind::Path,
        what: "the folder where measuring runs announce themselves (default $TMPDIR/numalab-runs)",
    },
    Var {
        name: "NUMALAB_MPI_KILL_RANK",
        kind: Kind::Whole {
            min: 0,
            max: RANK_MAX,
            unit: "",
            zero: None,
        },
        what: "tests only: this rank kills itself once MPI is up",
    },
    Var {
        name: "NUMALAB_MPI_FAKE_VERSION",
        kind: Kind::Path,
        what: "tests only: HOST=VERSION, numalab on that host says it is that version",
    },
    Var {
        name: "NUMALAB_MPI_THREAD_CAP",
        kind: Kind::Choice(&["single", "funneled", "serialized"]),
        what: "tests only: treat MPI's thread level as at most this",
    },
    Var {
        name: "NUMALAB_MPI_LATE_RANK",
        kind: Kind::Whole {
            min: 0,
            max: RANK_MAX,
            unit: "",
            zero: None,
        },
        what: "tests only: this rank keeps probing MPI for 1 s before MPI_Finalize, while the others are done",
    },
    Var {
        name: "NUMALAB_DSM_KILL_RANK",
        kind: Kind::Whole {
            min: 0,
            max: RANK_MAX,
            unit: "",
            zero: None,
        },
        what: "tests only: this DSM rank kills itself mid-run",
    },
    Var {
        name: "NUMALAB_DSM_KILL_SIGNAL",
        kind: Kind::Choice(&["KILL", "SEGV"]),
        what: "tests only: the signal NUMALAB_DSM_KILL_RANK uses (default KILL)",
    },
    Var {
        name: "NUMALAB_CLUSTER_ROOT",
        kind: Kind::Path,
        what: "cluster: read each host's THP, NUMA balancing, governor and huge pages under this folder instead of / (a recorded or fake tree, e.g. one per host in a test)",
    },
    Var {
        name: "NUMALAB_PARENT_RUN",
        kind: Kind::Whole {
            min: 1,
            max: PID_MAX,
            unit: "",
            zero: None,
        },
        what: "set by numalab for its children: the pid of the run they belong to",
    },
    Var {
        name: "NUMALAB_PARTIAL",
        kind: Kind::Path,
        what: "set by numalab's launcher for its ranks: where finished configurations are kept; for any measuring command, a file each finished part's records are appended to as one line",
    },
    Var {
        name: "NUMALAB_PARTIAL_ON_STDOUT",
        kind: Kind::Choice(&["1"]),
        what: "set by numalab's launcher for its ranks: a rank that does not find NUMALAB_PARTIAL's file (it runs on another host) sends each finished configuration on its stdout as a marked line, which the launcher keeps and does not show",
    },
    Var {
        name: "NUMALAB_LAUNCH_AGENT",
        kind: Kind::Path,
        what: "the remote shell the launcher reaches other hosts with instead of ssh (Open MPI: --mca plm_rsh_agent; hydra: -launcher-exec)",
    },
    Var {
        name: "NUMALAB_LAUNCHED_BY",
        kind: Kind::Path,
        what: "set by numalab's launcher for its ranks: which launcher started them and why (recorded in each record's placement)",
    },
    Var {
        name: "NUMALAB_LAUNCH_TOKEN",
        kind: Kind::Path,
        what: "set by numalab's launcher for its ranks: the file rank 0 creates when it starts",
    },
];

impl Kind {
    /// What is valid, in words.
    pub fn valid(&self) -> String {
        match self {
            Kind::Seconds => "a number of seconds above 0 (and below 1e9), e.g. 600".into(),
            Kind::Whole {
                min,
                max,
                unit,
                zero,
            } => {
                let unit = if unit.is_empty() {
                    String::new()
                } else {
                    format!(" {unit}")
                };
                let zero = zero.map_or(String::new(), |z| format!(", or 0 for {z}"));
                format!("a whole number from {min} to {max}{unit}{zero}")
            }
            Kind::Choice(words) => format!("one of {}", words.join(", ")),
            Kind::Path => "a path (not empty)".into(),
        }
    }

    /// Whether `v` is valid.
    fn accepts(&self, v: &str) -> bool {
        match self {
            Kind::Seconds => seconds(v).is_some(),
            Kind::Whole { min, max, zero, .. } => v
                .parse::<u64>()
                .is_ok_and(|n| (*min..=*max).contains(&n) || (n == 0 && zero.is_some())),
            Kind::Choice(words) => words.contains(&v),
            Kind::Path => !v.is_empty(),
        }
    }
}

fn seconds(v: &str) -> Option<Duration> {
    v.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s < 1e9)
        .map(Duration::from_secs_f64)
}

fn var(name: &str) -> &'static Var {
    VARS.iter()
        .find(|v| v.name == name)
        .unwrap_or_else(|| panic!("{name} is not in envvars::VARS"))
}

/// Check `value` of the variable `name`: the one-line error names both and what is valid.
pub fn check(name: &str, value: &str) -> Result<(), String> {
    let v = var(name);
    if v.kind.accepts(value) {
        Ok(())
    } else {
        Err(format!("invalid {name} '{value}': {}", v.kind.valid()))
    }
}

/// Check every variable of [`VARS`] set in this process's environment. Other
/// `NUMALAB_*` names are the test scripts' own (`NUMALAB_SKIP_GUEST` …), not numalab's.
pub fn check_all() -> Result<(), String> {
    for v in VARS {
        get(v.name)?;
    }
    Ok(())
}

/// The variable's text, when set; a value that breaks its rule is an error.
fn get(name: &str) -> Result<Option<String>, String> {
    match std::env::var_os(name) {
        None => Ok(None),
        Some(v) => {
            let v = v.to_string_lossy().into_owned();
            check(name, &v).map(|()| Some(v))
        }
    }
}

/// A [`Kind::Seconds`] variable, when set.
pub fn duration(name: &str) -> Result<Option<Duration>, String> {
    Ok(get(name)?.and_then(|v| seconds(&v)))
}

/// A [`Kind::Whole`] variable, when set.
pub fn whole(name: &str) -> Result<Option<u64>, String> {
    Ok(get(name)?.and_then(|v| v.parse().ok()))
}

/// A [`Kind::Choice`] variable, when set.
pub fn choice(name: &str) -> Result<Option<String>, String> {
    get(name)
}

/// The README's table of the variables (kept in step by a test).
pub fn table() -> String {
    let mut t = String::from("| variable | values | what it does |\n|---|---|---|\n");
    for v in VARS {
        t += &format!("| `{}` | {} | {} |\n", v.name, v.kind.valid(), v.what);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absurd_and_malformed_values_are_named_with_the_valid_range() {
        assert_eq!(
            check("NUMALAB_DSM_POLL_US", "99999999999999").unwrap_err(),
            "invalid NUMALAB_DSM_POLL_US '99999999999999': a whole number from 1 to 1000000 µs"
        );
        assert_eq!(
            check("NUMALAB_MPI_STALL", "abc").unwrap_err(),
            "invalid NUMALAB_MPI_STALL 'abc': a number of seconds above 0 (and below 1e9), e.g. 600"
        );
        for (name, bad) in [
            ("NUMALAB_MPI_STALL", "-5"),
            ("NUMALAB_MPI_STALL", ""),
            ("NUMALAB_DSM_POLL_US", "abc"),
            ("NUMALAB_DSM_POLL_US", "0"),
            ("NUMALAB_DSM_SLICE_NS", "-1"),
            ("NUMALAB_DSM_SLICE_NS", "5"),
            ("NUMALAB_MPI_STALL", "0"),
            ("NUMALAB_MPI_TIMEOUT", "inf"),
            ("NUMALAB_MPI_THREAD_CAP", "multiple"),
            ("NUMALAB_PARENT_RUN", "x"),
            ("NUMALAB_MPIRUN", ""),
        ] {
            let e = check(name, bad).unwrap_err();
            assert!(e.starts_with(&format!("invalid {name} '{bad}': ")), "{e}");
        }
        for (name, good) in [
            ("NUMALAB_DSM_POLL_US", "20"),
            ("NUMALAB_DSM_SLICE_NS", "0"),
            ("NUMALAB_DSM_SLICE_NS", "100000"),
            ("NUMALAB_MPI_STALL", " 2.5 "),
            ("NUMALAB_DSM_KILL_SIGNAL", "SEGV"),
        ] {
            assert_eq!(check(name, good), Ok(()), "{name}={good}");
        }
    }

    #[test]
    fn every_variable_is_listed_once_and_says_what_is_valid() {
        for v in VARS {
            assert_eq!(
                VARS.iter().filter(|x| x.name == v.name).count(),
                1,
                "{}",
                v.name
            );
            assert!(!v.kind.valid().is_empty() && !v.what.is_empty());
        }
        assert!(table().contains("| `NUMALAB_DSM_SLICE_NS` | a whole number from 100000 to 100000000 ns, or 0 for the scheduler's default slice |"));
    }
}
