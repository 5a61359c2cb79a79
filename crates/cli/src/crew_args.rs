//! The crew flags of measuring commands: requestors, memory and helpers.

use clap::Args;
use numalab_bench::crew::CrewOptions;

/// Where a measurement's requestors, helpers and memory go (shared by measuring commands).
#[derive(Args, Debug)]
pub struct CrewArgs {
    /// Requestor placement (the language of `numalab plan`); several requestors run
    /// simultaneously, each on its own buffer with its own statistics.
    #[arg(long = "cpu", visible_alias = "threads", default_value = "compact")]
    pub cpu: String,
    /// Number of requestors (default: 1 for compact/scatter/batch, every CPU listed otherwise).
    #[arg(short = 'n', long = "count")]
    pub count: Option<usize>,
    /// Home node: node number, local, hops:K, farthest (relative to the first requestor).
    #[arg(long = "mem-node", default_value = "local")]
    pub mem_node: String,
    /// Helper placement for states that need helpers (default: nearest CPUs on other cores).
    #[arg(long)]
    pub helpers: Option<String>,
}

impl CrewArgs {
    /// The flags as library options.
    pub fn options(&self) -> CrewOptions {
        CrewOptions {
            cpu: self.cpu.clone(),
            count: self.count,
            mem_node: self.mem_node.clone(),
            helpers: self.helpers.clone(),
        }
    }
}
