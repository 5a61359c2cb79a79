//! What every command shares: topology choice, output options, errors and exit codes.

use clap::Args;
use numalab_results::{output, OutputError, Provenance, Record};
use numalab_topo::{Host, TopologySource};
use std::path::PathBuf;

pub use crate::progress::{with_progress, Bar};

/// An error with its exit status: 2 for the user's input, 1 for everything else.
#[derive(Debug)]
pub struct CliError {
    /// Exit status.
    pub code: i32,
    /// One line naming the bad value and what is valid.
    pub msg: String,
}

/// A usage error (exit 2) with its one-line message.
pub fn bad(msg: impl Into<String>) -> CliError {
    CliError {
        code: 2,
        msg: msg.into(),
    }
}

/// A size option as bytes, or the one-line error naming the option and value.
pub fn size_opt(opt: &str, s: &str) -> Result<u64, CliError> {
    numalab_topo::spec::parse_size(s.trim()).map_err(|_| {
        bad(format!(
            "invalid {opt} '{}': a size larger than 0 such as 64, 4K, 16M or 1G (1K = 1024)",
            s.trim()
        ))
    })
}

/// Measuring commands plan against a topology file only with --dry-run.
pub fn check_measurable(c: &CommonArgs, dry_run: bool) -> Result<(), CliError> {
    if c.topology.is_some() && !dry_run {
        return Err(bad("invalid option '--topology' without '--dry-run': only this machine can be measured; add --dry-run to see the plan"));
    }
    Ok(())
}

impl From<numalab_topo::Error> for CliError {
    fn from(e: numalab_topo::Error) -> Self {
        CliError {
            code: if e.is_user_error() { 2 } else { 1 },
            msg: e.to_string(),
        }
    }
}

impl From<OutputError> for CliError {
    fn from(e: OutputError) -> Self {
        CliError {
            code: if matches!(e, OutputError::BadPath { .. } | OutputError::Exists { .. }) {
                2
            } else {
                1
            },
            msg: e.to_string(),
        }
    }
}

/// Options every command takes.
#[derive(Args, Debug, Clone)]
pub struct CommonArgs {
    /// Plan against an hwloc XML file instead of this machine (nothing is bound or measured).
    #[arg(long, value_name = "FILE.xml")]
    pub topology: Option<PathBuf>,
    /// Print records as JSON on stdout instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Also write the records to FILE (.json or .csv, by extension).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Replace the -o FILE even if it already holds results.
    #[arg(long)]
    pub force: bool,
}

impl CommonArgs {
    /// Check the output path before any work, so bad input fails fast and leaves no file.
    pub fn validate(&self) -> Result<(), CliError> {
        if let Some(p) = &self.output {
            output::check_path(p)?;
            output::check_fresh(p, self.force)?;
        }
        Ok(())
    }

    /// Where the topology comes from.
    pub fn source(&self) -> TopologySource {
        match &self.topology {
            Some(p) => TopologySource::Xml(p.clone()),
            None => TopologySource::ThisSystem,
        }
    }

    /// Load the topology.
    pub fn host(&self) -> Result<Host, CliError> {
        Ok(Host::load(&self.source())?)
    }

    /// Emit records: the file (if asked), then JSON or the readable text on stdout. A
    /// file that cannot be written leaves the records in a fallback file the error names.
    pub fn emit(&self, records: &[Record], text: impl FnOnce() -> String) -> Result<(), CliError> {
        if let Some(p) = &self.output {
            output::write_records(p, records)?;
        }
        if self.json {
            println!("{}", output::to_json(records));
        } else {
            print!("{}", text());
        }
        Ok(())
    }
}

impl CommonArgs {
    /// Emit records shown as their presenters' text (the registry's one text path).
    pub fn show(&self, records: &[Record]) -> Result<(), CliError> {
        self.emit(records, || numalab_suites::registry::text(records))
    }
}

/// Provenance for a record about `host`, with its warnings.
pub fn provenance(host: &Host) -> (Provenance, Vec<String>) {
    let p = Provenance::collect(&host.machine.summary(), &host.machine.source);
    let w = if host.machine.this_system {
        p.warnings()
    } else {
        Vec::new()
    };
    (p, w)
}

/// The steps every measuring command takes before it measures, in this order: the
/// common flags, the experiment's options (`check`), whether this machine can be
/// measured (only a dry run plans another), the host, the plan (`resolve`) and the
/// records' context.
pub fn prepare<P, E1, E2>(
    common: &CommonArgs,
    dry_run: bool,
    check: impl FnOnce() -> Result<(), E1>,
    resolve: impl FnOnce(&numalab_topo::Machine) -> Result<P, E2>,
) -> Result<(Host, P, numalab_bench::experiment::Context), CliError>
where
    CliError: From<E1> + From<E2>,
{
    common.validate()?;
    check()?;
    check_measurable(common, dry_run)?;
    let host = common.host()?;
    let plan = resolve(&host.machine)?;
    let ctx = context(&host);
    Ok((host, plan, ctx))
}

/// The records' context (provenance and machine warnings) for `host`.
pub fn context(host: &Host) -> numalab_bench::experiment::Context {
    numalab_bench::experiment::Context::of(host)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Sizes and near misses: digits, suffixes, spaces and signs.
    fn sizeish() -> impl Strategy<Value = String> {
        "[0-9]{0,22}[ ]?(K|M|G|T|KiB|MB|b|x|-1|\\.5)?"
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn size_options_never_panic_and_name_what_they_refuse(s in prop_oneof![sizeish(), "\\PC{0,20}"]) {
            match size_opt("--size", &s) {
                Ok(b) => prop_assert!(b > 0),
                Err(e) => {
                    prop_assert_eq!(e.code, 2);
                    prop_assert!(e.msg.contains(s.trim()) && e.msg.contains("--size"), "{}", e.msg);
                    prop_assert_eq!(e.msg.lines().count(), 1);
                }
            }
        }

        #[test]
        fn printed_sizes_parse_back(n in 1u64..1024, shift in prop::sample::select(vec![0u32, 10, 20, 30, 40])) {
            let b = n << shift;
            prop_assert_eq!(size_opt("--size", &numalab_topo::fmt_bytes(b)).unwrap(), b);
            let suffix = ["", "K", "M", "G", "T"][shift as usize / 10];
            prop_assert_eq!(size_opt("--size", &format!("{n}{suffix}")).unwrap(), b);
        }
    }
}
