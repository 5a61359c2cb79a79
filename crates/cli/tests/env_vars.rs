//! Every `NUMALAB_*` variable is checked like the MPI ones (issue 40 item 12): a
//! malformed or absurd value is one line naming the variable, its value and the valid
//! range, exit 2, before any work; the README's table lists each variable as the code
//! does. Every run is bounded by `timeout`.

mod common;

#[test]
fn a_bad_value_of_any_variable_is_named_with_its_range_and_exit_2() {
    let cases = [
        (
            "NUMALAB_DSM_POLL_US",
            "99999999999999",
            "a whole number from 1 to 1000000 µs",
        ),
        (
            "NUMALAB_DSM_POLL_US",
            "abc",
            "a whole number from 1 to 1000000 µs",
        ),
        (
            "NUMALAB_DSM_SLICE_NS",
            "-1",
            "a whole number from 100000 to 100000000 ns, or 0",
        ),
        ("NUMALAB_MPI_STALL", "abc", "a number of seconds above 0"),
        (
            "NUMALAB_MPI_THREAD_CAP",
            "multiple",
            "one of single, funneled, serialized",
        ),
        ("NUMALAB_DSM_KILL_SIGNAL", "TERM", "one of KILL, SEGV"),
        ("NUMALAB_PARENT_RUN", "-3", "a whole number from 1 to"),
    ];
    for (var, value, valid) in cases {
        let out = common::bounded(
            "120",
            &["dsm", "run", "sor", "--ranks", "2"],
            &[(var, value)],
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{var}={value}: {err}");
        assert_eq!(err.lines().count(), 1, "{var}={value}: {err}");
        assert!(
            err.starts_with(&format!("numalab: error: invalid {var} '{value}': {valid}")),
            "{var}={value}: {err}"
        );
        assert!(out.stdout.is_empty(), "{var}={value}");
    }
}

#[test]
fn a_good_value_is_obeyed_and_a_test_scripts_own_variable_is_not_refused() {
    // The slice left to the scheduler (0) is a good value; NUMALAB_SKIP_GUEST
    // belongs to the test scripts and is none of numalab's business.
    let out = common::bounded(
        "300",
        &["dsm", "run", "sor", "--ranks", "2", "--json"],
        &[
            ("NUMALAB_DSM_SLICE_NS", "0"),
            ("NUMALAB_SKIP_GUEST", "1"),
            ("OMPI_ALLOW_RUN_AS_ROOT", "1"),
            ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("cannot launch ranks") {
        eprintln!("skipped: no mpirun ({err})");
        return;
    }
    assert_eq!(out.status.code(), Some(0), "{err}");
    common::validate(&out.stdout);
}

#[test]
fn the_readme_lists_every_variable_as_the_code_checks_it() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README.md");
    let table = numalab_results::envvars::table();
    assert!(
        readme.contains(&table),
        "README.md's table of environment variables differs from the code's; it should read:\n{table}"
    );
}
