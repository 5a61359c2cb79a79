//! Property tests of the suites' and bench's part and placement parsers:
//! arbitrary input never panics, a refusal names the value on one line, and
//! every printed name parses back.

use numalab_bench::intervene::Placement;
use numalab_suites::{earth, placement};
use proptest::prelude::*;

fn names(err: &str, input: &str) {
    assert!(err.contains(input), "error {err:?} does not name {input:?}");
    if !input.contains(|c: char| c.is_control()) {
        assert_eq!(err.lines().count(), 1, "error {err:?} is not one line");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn earth_parts(s in "[a-z0-9=]{0,8}|\\PC{0,10}") {
        match earth::Part::parse(&s) {
            Ok(p) => prop_assert_eq!(earth::Part::parse(p.name()).unwrap(), p),
            Err(e) => names(&e, &s),
        }
    }

    #[test]
    fn placement_parts(s in "[0-9a-z]{0,3}|\\PC{0,10}") {
        match placement::Part::parse(&s) {
            Ok(p) => prop_assert_eq!(placement::Part::parse(p.name()).unwrap(), p),
            Err(e) => names(&e, &s),
        }
    }

    #[test]
    fn intervention_placements(s in "[xyzhops=0]{0,8}|\\PC{0,10}") {
        match Placement::parse(&s) {
            Ok(p) => prop_assert_eq!(Placement::parse(p.name()).unwrap(), p),
            Err(e) => names(&e, &s),
        }
    }
}

#[test]
fn every_part_round_trips() {
    for p in earth::Part::ALL {
        assert_eq!(earth::Part::parse(p.name()).unwrap(), p);
    }
    for p in placement::Part::ALL {
        assert_eq!(placement::Part::parse(p.name()).unwrap(), p);
    }
}
