//! Property tests of the probe's name parsers (kernels, states, barriers,
//! traffic, layouts): arbitrary input never panics, a refusal names the value
//! on one line, and every printed name parses back to the same value.

use numalab_probe::bw::BwKernel;
use numalab_probe::inject::Traffic;
use numalab_probe::layout::Order;
use numalab_probe::state::{LineState, Request};
use numalab_probe::sync::SyncKind;
use proptest::prelude::*;

fn names(err: &str, input: &str) {
    assert!(err.contains(input), "error {err:?} does not name {input:?}");
    if !input.contains(|c: char| c.is_control()) {
        assert_eq!(err.lines().count(), 1, "error {err:?} is not one line");
    }
}

fn wordish() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]{0,9}(:[0-9]{0,21})?",
        "\\PC{0,12}",
        Just("shrd:0".to_string()),
        Just("shrd:".to_string()),
        Just("shrd:99999999999999999999999".to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn line_states(s in wordish()) {
        match LineState::parse(&s) {
            Ok(st) => prop_assert_eq!(LineState::parse(&st.name()).unwrap(), st),
            Err(e) => names(&e, &s),
        }
    }

    #[test]
    fn requests(s in wordish()) {
        match Request::parse(&s) {
            Ok(r) => prop_assert_eq!(Request::parse(r.name()).unwrap(), r),
            Err(e) => names(&e, &s),
        }
    }

    #[test]
    fn bandwidth_kernels(s in wordish()) {
        match BwKernel::parse(&s) {
            Ok(k) => prop_assert_eq!(BwKernel::parse(k.name()).unwrap(), k),
            Err(e) => names(&e, &s),
        }
    }

    #[test]
    fn barriers(s in wordish()) {
        match SyncKind::parse(&s) {
            Ok(k) => prop_assert_eq!(SyncKind::parse(k.name()).unwrap(), k),
            Err(e) => names(&e, &s),
        }
    }

    #[test]
    fn traffic(s in wordish()) {
        match Traffic::parse(&s) {
            Ok(t) => prop_assert_eq!(Traffic::parse(t.name()).unwrap(), t),
            Err(e) => names(&e, &s),
        }
    }

    #[test]
    fn orders(s in wordish()) {
        // `Order::parse` answers Option; the CLI words the refusal.
        let _ = Order::parse(&s);
    }
}

#[test]
fn every_name_round_trips() {
    for k in BwKernel::ALL {
        assert_eq!(BwKernel::parse(k.name()).unwrap(), k);
    }
    for k in SyncKind::ALL {
        assert_eq!(SyncKind::parse(k.name()).unwrap(), k);
    }
    for st in ["warm", "uown", "shrd:3", "cexh", "cexm", "dexd", "dext"] {
        assert_eq!(LineState::parse(st).unwrap().name(), st);
    }
}
