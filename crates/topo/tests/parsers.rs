//! Property tests of every parser in topo: arbitrary input never panics (nor
//! hangs), an error names the value it refuses on one line, and what a printer
//! writes parses back to the same value.

use numalab_topo::spec::parse_size;
use numalab_topo::{cpulist, Level, MemSpec, PageSize, ThreadSpec};
use proptest::prelude::*;

/// A refusal names the value as given and fits on one line (for inputs without
/// control characters, which a shell argument rarely has).
fn names(err: &str, input: &str) {
    assert!(err.contains(input), "error {err:?} does not name {input:?}");
    if !input.contains(|c: char| c.is_control()) {
        assert_eq!(err.lines().count(), 1, "error {err:?} is not one line");
    }
}

/// Inputs close to the grammar: words, numbers, ranges, colons and commas.
fn specish() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just("node".to_string()),
            Just("pu".to_string()),
            Just("l3".to_string()),
            Just("scatter".to_string()),
            Just("batch".to_string()),
            Just("compact".to_string()),
            Just("hops".to_string()),
            Just("interleave".to_string()),
            Just("local".to_string()),
            Just("farthest".to_string()),
            Just(":".to_string()),
            Just(",".to_string()),
            Just("-".to_string()),
            "[0-9]{1,11}",
        ],
        0..8,
    )
    .prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn thread_specs(s in prop_oneof![specish(), "\\PC{0,24}"]) {
        match ThreadSpec::parse(&s) {
            Ok(spec) => {
                let printed = spec.to_string();
                prop_assert_eq!(ThreadSpec::parse(&printed).unwrap(), spec, "{}", printed);
            }
            Err(e) => names(&e.to_string(), &s),
        }
    }

    #[test]
    fn memory_specs(s in prop_oneof![specish(), "\\PC{0,24}"]) {
        match MemSpec::parse(&s) {
            Ok(spec) => {
                let printed = spec.to_string();
                prop_assert_eq!(MemSpec::parse(&printed).unwrap(), spec, "{}", printed);
            }
            Err(e) => names(&e.to_string(), &s),
        }
    }

    #[test]
    fn page_sizes(s in prop_oneof![Just("2m".to_string()), "\\PC{0,8}"]) {
        match PageSize::parse(&s) {
            Ok(p) => prop_assert_eq!(PageSize::parse(p.name()).unwrap(), p),
            Err(e) => names(&e.to_string(), &s),
        }
    }

    #[test]
    fn sizes(n in 0u64..1 << 40, suffix in "(|b|k|K|KiB|m|M|g|G|t|T|x|kk)", junk in "\\PC{0,6}") {
        let s = format!("{n}{suffix}");
        match parse_size(&s) {
            Ok(bytes) => {
                let shift = match suffix.to_ascii_lowercase().chars().next() {
                    Some('k') => 10, Some('m') => 20, Some('g') => 30, Some('t') => 40, _ => 0,
                };
                prop_assert_eq!(Some(bytes), n.checked_mul(1 << shift));
            }
            Err(e) => names(&e.to_string(), &s),
        }
        if let Err(e) = parse_size(&junk) {
            names(&e.to_string(), &junk);
        }
    }

    #[test]
    fn cpu_lists(s in prop_oneof![specish(), "[0-9,\\- ]{0,20}"]) {
        match cpulist::parse("cpu list", &s) {
            Ok(ids) => {
                let mut sorted = ids.clone();
                sorted.sort_unstable();
                let printed = cpulist::format(&ids);
                prop_assert_eq!(cpulist::parse("cpu list", &printed).unwrap(), sorted);
            }
            Err(e) => names(&e.to_string(), &s),
        }
    }

    #[test]
    fn levels(s in "\\PC{0,10}") {
        if let Some(l) = Level::parse(&s) {
            prop_assert_eq!(Level::parse(l.name()), Some(l));
        }
    }
}

/// The largest range the list parser accepts is parsed in well under a second
/// (it once checked every index against all earlier ones: quadratic, minutes).
#[test]
fn the_largest_range_parses_without_quadratic_work() {
    let ids = cpulist::parse("cpu list", "0-1048576").unwrap();
    assert_eq!(ids.len(), 1_048_577);
    assert!(cpulist::parse("cpu list", "0-1048577").is_err());
}

/// The same for a thread spec that merges a large range into earlier CPUs.
#[test]
fn a_thread_spec_merging_a_large_range_parses_without_quadratic_work() {
    match ThreadSpec::parse("0,1-1048576").unwrap() {
        ThreadSpec::List(items) => assert_eq!(items.len(), 1),
        other => panic!("{other:?}"),
    }
}
