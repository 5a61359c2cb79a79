//! Red-team cases of issue 40 about input: paths and values that are not what a flag
//! takes, options that do not apply, and the messages and exit statuses they get.

mod common;

/// Asserts a refusal: exit 2, one line on stderr containing every one of `names`,
/// nothing on stdout.
fn assert_refused(args: &[&str], names: &[&str]) -> String {
    let out = common::bounded("120", args, &[]);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    for n in names {
        assert!(err.contains(n), "{args:?}: '{n}' not in {err}");
    }
    assert!(out.stdout.is_empty(), "{args:?} printed on stdout");
    err
}

#[test]
fn a_topology_that_is_not_an_xml_file_is_refused_not_a_panic() {
    let dir = common::tmpdir("topology-dir");
    let d = dir.display().to_string();
    for path in [d.as_str(), "/proc/self/mem", "/dev/null"] {
        for cmd in [
            &["topo"][..],
            &["latency", "--dry-run"],
            &["plan", "pu:0"],
            &["survey", "--dry-run"],
            &["mpi", "latency", "--dry-run"],
        ] {
            let mut args = cmd.to_vec();
            args.extend(["--topology", path]);
            assert_refused(&args, &[path]);
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
