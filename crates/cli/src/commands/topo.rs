//! `numalab topo`: the machine as a compact tree plus tables.

use crate::common::{describing, CliError, CommonArgs};
use clap::Args;

/// Arguments of `numalab topo`.
#[derive(Args, Debug)]
pub struct TopoArgs {
    #[command(flatten)]
    common: CommonArgs,
}

/// Run `numalab topo`.
pub fn run(a: TopoArgs) -> Result<(), CliError> {
    a.common.validate()?;
    let host = a.common.host()?;
    let rec = numalab_bench::machine::topo_record(&host, &describing(&host));
    a.common.show(std::slice::from_ref(&rec))
}
