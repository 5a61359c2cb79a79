//! Option checks shared by `monitor` and `record`.

use crate::common::{bad, CliError};
use numalab_results::outpath;
use numalab_topo::Host;
use std::path::Path;
use std::time::Duration;

/// An interval in ms between 1 and 60000.
pub fn interval(opt: &str, ms: u64) -> Result<Duration, CliError> {
    if !(1..=60_000).contains(&ms) {
        return Err(bad(format!(
            "invalid {opt} '{ms}': an interval in milliseconds from 1 to 60000"
        )));
    }
    Ok(Duration::from_millis(ms))
}

/// A CPU this machine has.
pub fn runon(host: &Host, cpu: Option<u32>) -> Result<Option<u32>, CliError> {
    match cpu {
        Some(c) if host.machine.pu(c).is_none() => Err(bad(format!(
            "invalid --runon '{c}': usable CPUs here are {}",
            host.machine.cpu_list()
        ))),
        c => Ok(c),
    }
}

/// The trace path can be written: create it now (empty) so a bad path fails before any
/// work. A file that already holds something (an earlier trace, or anything else) is
/// refused unless `force`: a recording is a measurement, and nothing measured is
/// replaced silently. What is no regular file (a directory, device, FIFO) is refused
/// by `numalab_results::outpath`; standard output (`-`, `/dev/stdout`) is written in place.
pub fn trace_path(p: &Path, force: bool) -> Result<(), CliError> {
    let real = match outpath::target(p)? {
        outpath::Target::Stdout => return Ok(()),
        outpath::Target::File(real) => real,
    };
    if !force && std::fs::metadata(&real).is_ok_and(|m| m.len() > 0) {
        return Err(bad(format!(
            "'{}' already holds {}: give --force to replace it, or another name with -o",
            p.display(),
            if numalab_prof::trace::is_trace(&real) {
                "a trace"
            } else {
                "something (not a trace)"
            }
        )));
    }
    std::fs::File::create(&real).map(|_| ()).map_err(|e| {
        bad(format!(
            "invalid output '{}': cannot write it: {e}",
            p.display()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn intervals_outside_the_range_are_named(ms in any::<u64>()) {
            match interval("--interval", ms) {
                Ok(d) => prop_assert_eq!(d.as_millis() as u64, ms),
                Err(e) => {
                    prop_assert!(!(1..=60_000).contains(&ms));
                    prop_assert!(e.msg.contains(&format!("'{ms}'")), "{}", e.msg);
                    prop_assert_eq!(e.msg.lines().count(), 1);
                }
            }
        }
    }
}
