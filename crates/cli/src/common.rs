//! What every command shares: topology choice, output options, errors and exit codes.

use clap::Args;
use numalab_results::{interrupt, output, OutputError, Record};
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

/// `--wait`, on every command that measures.
#[derive(Args, Debug, Clone, Copy)]
pub struct WaitArg {
    /// Before measuring, wait for other numalab measurements on this machine to end
    /// (without it, a run that finds one warns and records it in its provenance).
    #[arg(long, global = true)]
    pub wait: bool,
}

/// `--noise-budget` and `--tolerance`, on every command that measures: one mechanism
/// settles every figure (see `numalab_results::settle`).
#[derive(Args, Debug, Clone, Default)]
pub struct NoiseArgs {
    /// Wall time each measuring step (a size, a kernel, a point) may take to settle its
    /// figure: passes are added, disturbed ones measured again, until the figure's
    /// interval is within --tolerance; a step that cannot is shown "unsettled" with why.
    /// Default: twice its first passes' time (50 ms to 2 s more). Above 0, up to 60s.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub noise_budget: Option<String>,
    /// Half-width of a settled figure's interval, in % of the figure (default 10): the
    /// median's 95 % order-statistic interval, or the best three passes of a best-of-N.
    #[arg(long, value_name = "PCT", allow_hyphen_values = true)]
    pub tolerance: Option<String>,
}

impl NoiseArgs {
    /// As an experiment's options keep them.
    pub fn options(&self) -> numalab_results::settle::NoiseOptions {
        numalab_results::settle::NoiseOptions {
            noise_budget: self.noise_budget.clone(),
            tolerance: self.tolerance.clone(),
        }
    }
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
    Ok(numalab_bench::experiment::size_opt(opt, s)?)
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

    /// Emit records shown as their presenters' text (the registry's one text path).
    pub fn show(&self, records: &[Record]) -> Result<(), CliError> {
        self.emit(records, || numalab_answers::registry::text(records))
    }

    /// Emit records: the file (if asked), then JSON or the readable text on stdout. A
    /// file that cannot be written leaves the records in a fallback file the error names.
    /// A signal that came meanwhile ends the command after them (128 + the signal).
    pub fn emit(&self, records: &[Record], text: impl FnOnce() -> String) -> Result<(), CliError> {
        interrupt::finishing();
        self.write_out(records, text)?;
        interrupt::exit_if_signalled();
        Ok(())
    }

    fn write_out(&self, records: &[Record], text: impl FnOnce() -> String) -> Result<(), CliError> {
        let write = |p: &std::path::Path| output::write_records(p, records);
        self.output.as_deref().map(write).transpose()?;
        let body = if self.json {
            output::to_json(records) + "\n"
        } else {
            text()
        };
        // A full or failing standard output is a run-time error, never a panic.
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        out.write_all(body.as_bytes())
            .and_then(|_| out.flush())
            .map_err(|e| CliError {
                code: 1,
                msg: format!("writing the records to standard output failed: {e}"),
            })
    }

    /// From now on SIGINT, SIGTERM and SIGHUP end the command with the records of the
    /// parts that finished, shown as [`CommonArgs::show`] shows them, each marked
    /// interrupted (`numalab_results::interrupt`).
    pub fn keep_on_signal(&self) {
        let me = self.clone();
        interrupt::arm(Box::new(move |recs: &[Record]| {
            me.write_out(recs, || numalab_answers::registry::text(recs))
                .map_err(|e| e.msg)
        }));
    }
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
    if !dry_run {
        common.keep_on_signal();
    }
    Ok((host, plan, ctx))
}

/// The records' context (provenance and machine warnings) for `host`.
pub fn context(host: &Host) -> numalab_bench::experiment::Context {
    numalab_bench::experiment::Context::of(host)
}

/// The context of a command that measures nothing (`topo`, `tiers`, `plan`).
pub fn describing(host: &Host) -> numalab_bench::experiment::Context {
    numalab_bench::experiment::Context::describing(host)
}
