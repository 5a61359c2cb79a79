//! What every experiment shares: the provenance its records carry, progress reports,
//! and the checks on options every experiment has.
//!
//! An experiment is a module with one shape: `Options` (plain serde, what the user
//! asks for) → `Plan::resolve(&Machine, &Options)` (placements and sizes: what
//! `--dry-run` prints) → `measure(&Host, &Plan, …)` → records.

use numalab_results::Provenance;
use numalab_topo::{Error, Host, Result};

/// Provenance and machine warnings, collected once per run and stamped on every record.
#[derive(Debug, Clone)]
pub struct Context {
    /// Tool, host and machine facts.
    pub prov: Provenance,
    /// Warnings about the machine (virtualisation, frequency scaling, …).
    pub warnings: Vec<String>,
}

impl Context {
    /// The context of records about `host`; machine warnings only for this machine.
    pub fn of(host: &Host) -> Self {
        let prov = Provenance::collect(&host.machine.summary(), &host.machine.source);
        let warnings = if host.machine.this_system {
            prov.warnings()
        } else {
            Vec::new()
        };
        Context { prov, warnings }
    }

    /// The context of records that measure nothing (topology, tiers, a plan): no
    /// warning about timings or runs beside it, and no other runs named.
    pub fn describing(host: &Host) -> Self {
        let mut prov = Provenance::collect(&host.machine.summary(), &host.machine.source);
        prov.concurrent_runs.clear();
        let warnings = if host.machine.this_system {
            prov.describing_warnings()
        } else {
            Vec::new()
        };
        Context { prov, warnings }
    }
}

/// Where an experiment reports how far it is (one short line, e.g. "c2c: round 3/8").
pub type Progress<'a> = &'a mut dyn FnMut(&str);

/// A progress sink that drops every report.
pub fn quiet(_: &str) {}

/// At least one timed pass.
pub fn check_iterations(n: usize) -> Result<()> {
    if n == 0 {
        return Err(Error::input(
            "invalid --iterations '0': at least 1 timed pass",
        ));
    }
    Ok(())
}

/// Parse an optional size option (1K = 1024).
pub fn opt_size(s: Option<&str>) -> Result<Option<u64>> {
    s.map(numalab_topo::spec::parse_size).transpose()
}

/// Parse a size option; the error names the option and the value.
pub fn size_opt(opt: &str, s: &str) -> Result<u64> {
    numalab_topo::spec::parse_size(s.trim()).map_err(|_| {
        Error::input(format!(
            "invalid {opt} '{}': a size larger than 0 such as 64, 4K, 16M or 1G (1K = 1024)",
            s.trim()
        ))
    })
}

/// Parse an optional `--level`.
pub fn level(s: Option<&str>) -> Result<Option<numalab_topo::Level>> {
    s.map(|l| {
        numalab_topo::Level::parse(l).ok_or_else(|| {
            Error::input(format!(
                "invalid --level '{l}': one of {}",
                numalab_topo::Level::valid_names()
            ))
        })
    })
    .transpose()
}

/// Parse a comma-separated list; a bad item is named with what is valid, and a value
/// given twice (in any spelling) is refused ([`numalab_topo::lists::once`]).
pub fn list<T: std::fmt::Debug>(
    what: &str,
    s: &str,
    f: impl Fn(&str) -> Option<T>,
    valid: &str,
) -> Result<Vec<T>> {
    let items = s
        .split(',')
        .map(|x| {
            let x = x.trim();
            f(x).map(|v| (x, v))
                .ok_or_else(|| Error::input(format!("invalid {what} item '{x}': {valid}")))
        })
        .collect::<Result<Vec<_>>>()?;
    let key = |(_, v): &&(&str, T)| format!("{v:?}");
    numalab_topo::lists::once_by(what, s, &items, key, |(x, _)| format!("'{x}'"))?;
    Ok(items.into_iter().map(|(_, v)| v).collect())
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
                    let msg = e.to_string();
                    prop_assert!(e.is_user_error());
                    prop_assert!(msg.contains(s.trim()) && msg.contains("--size"), "{}", msg);
                    prop_assert_eq!(msg.lines().count(), 1);
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
