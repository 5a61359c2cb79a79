//! What the user asks of the survey, and the plan resolved from it on a machine.

use super::cap::cap_sizes;
use super::experiment::{argv, Experiment};
use super::plan::{plan, Step};
use numalab_results::output::table;
use numalab_results::settle::NoiseOptions;
use numalab_topo::{fmt_bytes, Error, Machine, Result};
use serde::{Deserialize, Serialize};

/// The survey's options (plain serde; the CLI fills them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Options {
    /// A shorter battery: fewer sizes and passes.
    pub quick: bool,
    /// Largest buffer of any step, e.g. "4M" (None: each step's own).
    pub max_size: Option<String>,
    /// `--noise-budget` and `--tolerance`, passed to every step that settles by them.
    #[serde(default)]
    pub noise: NoiseOptions,
    /// Also run the seed studies (KSR placement and collectives, EARTH, MPI matrix).
    #[serde(default)]
    pub studies: bool,
}

impl Options {
    /// Check what needs no machine: a `max_size` of at least 64 KiB.
    pub fn check(&self) -> Result<()> {
        self.noise.goal().map_err(Error::Input)?;
        self.max_bytes().map(|_| ())
    }

    /// `max_size` in bytes.
    pub fn max_bytes(&self) -> Result<Option<u64>> {
        let Some(s) = &self.max_size else {
            return Ok(None);
        };
        match numalab_bench::experiment::size_opt("--max-size", s)? {
            b if b < 64 << 10 => Err(Error::input(format!(
                "invalid --max-size '{}': at least 64K (smaller buffers measure only the L1)",
                s.trim()
            ))),
            b => Ok(Some(b)),
        }
    }
}

/// Gives a step the user's settling options where its experiment takes them.
fn pass_noise(s: &mut Step, n: &NoiseOptions) {
    let Some(e) = &mut s.experiment else { return };
    match e {
        Experiment::Latency(o) => o.noise = n.clone(),
        Experiment::Bandwidth(o) => o.noise = n.clone(),
        Experiment::C2c(o) => o.noise = n.clone(),
        Experiment::Invalidate(o) => o.noise = n.clone(),
        Experiment::Intervene(o) => o.noise = n.clone(),
        Experiment::Loaded(o) => o.noise = n.clone(),
        Experiment::Placement(o) => o.noise = n.clone(),
        Experiment::Collectives(o) => o.noise = n.clone(),
        _ => return,
    }
    s.args = argv(e);
}

/// The survey resolved on a machine: its steps and their estimated duration.
pub struct Plan {
    /// Every step, in order.
    pub steps: Vec<Step>,
    /// Whether it is the quick battery.
    pub quick: bool,
    /// Whether the seed studies run.
    pub studies: bool,
    /// The buffer cap, if any.
    pub max_bytes: Option<u64>,
}

impl Plan {
    /// The battery for `m`, with buffers capped as the options ask.
    pub fn resolve(m: &Machine, o: &Options) -> Result<Plan> {
        let max_bytes = o.max_bytes()?;
        let mut steps = plan(m, o.quick, o.studies);
        if let Some(max) = max_bytes {
            steps = cap_sizes(m, steps, max);
        }
        o.check()?;
        for s in &mut steps {
            pass_noise(s, &o.noise);
            // After the cap: a capped buffer touches only what it keeps.
            s.touch_bytes = s
                .experiment
                .as_ref()
                .map_or(0, |e| super::touch::bytes(m, e));
        }
        Ok(Plan {
            steps,
            quick: o.quick,
            studies: o.studies,
            max_bytes,
        })
    }

    /// Seconds the steps are planned to take.
    pub fn estimate_s(&self) -> f64 {
        self.steps.iter().map(|s| s.estimate_s).sum()
    }

    /// Steps that run here (not skipped).
    pub fn runnable(&self) -> usize {
        self.steps.iter().filter(|s| s.skip.is_none()).count()
    }

    /// The plan as a table (`--dry-run`).
    pub fn text(&self) -> String {
        let rows: Vec<Vec<String>> = self
            .steps
            .iter()
            .map(|s| {
                vec![
                    s.section.into(),
                    s.title.clone(),
                    match &s.skip {
                        Some(w) => format!("skipped: {w}"),
                        None => format!("numalab {}", s.args.join(" ")),
                    },
                    format!("{:.1}", s.estimate_s),
                ]
            })
            .collect();
        let pace = super::pace::Pace::uncalibrated();
        format!(
            "survey plan ({}{}): {} steps, about {:.0} s ({})\n\n{}\n",
            if self.quick { "quick" } else { "full" },
            if self.studies {
                ", with the seed studies"
            } else {
                "; seed studies not run: give --studies"
            },
            self.runnable(),
            pace.seconds(self.estimate_s()),
            pace.how(),
            table(&["section", "step", "command", "est. s"], &rows)
        )
    }

    /// The note on buffers capped by `--max-size`, for the start line.
    pub fn cap_note(&self) -> String {
        self.max_bytes
            .map(|b| format!("; buffers capped at {} (--max-size)", fmt_bytes(b)))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn max(s: &str) -> Result<Option<u64>> {
        Options {
            max_size: Some(s.into()),
            ..Options::default()
        }
        .max_bytes()
    }

    #[test]
    fn the_settling_options_reach_every_step_that_settles() {
        let m = numalab_topo::Host::load(&numalab_topo::TopologySource::Synthetic(
            "pack:2 numa:2 core:2 pu:1".into(),
        ))
        .unwrap()
        .machine;
        let o = Options {
            quick: true,
            noise: NoiseOptions {
                noise_budget: Some("300ms".into()),
                tolerance: Some("4".into()),
            },
            ..Options::default()
        };
        let plan = Plan::resolve(&m, &o).unwrap();
        for cmd in ["latency", "bandwidth", "c2c", "invalidate", "intervene"] {
            let steps: Vec<&Step> = plan
                .steps
                .iter()
                .filter(|s| s.skip.is_none() && s.args.first().map(String::as_str) == Some(cmd))
                .collect();
            assert!(!steps.is_empty(), "no {cmd} step");
            for s in steps {
                let a = s.args.join(" ");
                assert!(a.contains("--noise-budget 300ms --tolerance 4"), "{a}");
            }
        }
    }

    proptest! {
        #[test]
        fn max_size_never_panics_and_names_what_it_refuses(s in "\\PC{0,16}") {
            if let Err(e) = max(&s) {
                prop_assert!(e.is_user_error());
                let msg = e.to_string();
                prop_assert!(msg.contains(s.trim()), "{}", msg);
                prop_assert_eq!(msg.lines().count(), 1);
            }
        }

        #[test]
        fn printed_sizes_parse_back(n in 1u64..1024, shift in prop::sample::select(vec![0u32, 10, 20, 30, 40])) {
            let b = n << shift;
            let printed = numalab_topo::fmt_bytes(b);
            match max(&printed) {
                Ok(back) => prop_assert_eq!(back, Some(b)),
                Err(e) => prop_assert!(b < 64 << 10, "{}: {}", printed, e),
            }
        }
    }

    #[test]
    fn the_studies_take_the_users_noise_options_and_their_commands_say_them() {
        let p = numalab_topo::Host::load(&numalab_topo::TopologySource::Xml(
            numalab_fixtures::topology("64amd64-4s2n4ca2co.xml"),
        ))
        .unwrap();
        let noise = NoiseOptions {
            noise_budget: Some("300ms".into()),
            tolerance: Some("4".into()),
        };
        let o = Options {
            studies: true,
            noise: noise.clone(),
            ..Options::default()
        };
        let plan = Plan::resolve(&p.machine, &o).unwrap();
        let mut seen = 0;
        for s in &plan.steps {
            let n = match &s.experiment {
                Some(Experiment::Placement(x)) => &x.noise,
                Some(Experiment::Collectives(x)) => &x.noise,
                _ => continue,
            };
            assert_eq!(n, &noise);
            let a = s.args.join(" ");
            assert!(a.contains("--noise-budget 300ms --tolerance 4"), "{a}");
            seen += 1;
        }
        assert_eq!(seen, 2);
    }
}
