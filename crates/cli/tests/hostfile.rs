//! `--hostfile` and `--ranks` as the launcher checks them before mpirun starts (issue
//! 33 item 5): one numalab line naming the file, the line and the host; exit 2 for
//! the file's content and for a host that does not resolve (the user's input).

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

fn hostfile(tag: &str, text: &str) -> PathBuf {
    let f = common::tmpdir(&format!("hostfile-{tag}")).join("hosts");
    std::fs::write(&f, text).unwrap();
    f
}

fn launch(file: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["mpi", "latency", "--ranks", "2", "--sizes", "8"];
    args.extend_from_slice(&["--hostfile", file.to_str().unwrap()]);
    args.extend_from_slice(extra);
    common::bounded(
        "120",
        &args,
        &[
            ("OMPI_ALLOW_RUN_AS_ROOT", "1"),
            ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
        ],
    )
}

/// One line on stderr holding every needle, nothing on stdout, exit 2.
fn one_line(out: &Output, needles: &[&str]) {
    common::bad_input(out, needles, "a bad hostfile");
}

#[test]
fn an_empty_or_malformed_hostfile_is_one_usage_error_naming_the_line() {
    let empty = hostfile("empty", "# no hosts yet\n\n");
    let named = format!("--hostfile '{}'", empty.display());
    for extra in [&[][..], &["--dry-run"]] {
        one_line(&launch(&empty, extra), &[&named, "names no host"]);
    }
    let bad = hostfile("malformed", "localhost slots=2\nnode2 slots=two\n");
    let named = format!("--hostfile '{}'", bad.display());
    one_line(
        &launch(&bad, &[]),
        &[
            &named,
            "line 2 'node2 slots=two'",
            "slots takes a whole number",
        ],
    );
}

#[test]
fn a_host_that_does_not_resolve_is_named_with_its_line_before_launching() {
    // Bounded like every MPI launch here, though `--version` starts no ranks.
    let probe = std::process::Command::new("timeout")
        .args(["20", "mpirun", "--version"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: mpirun not found (Debian package openmpi-bin)");
        return;
    }
    let f = hostfile(
        "unresolved",
        "# cluster\nlocalhost slots=1\nno-such-host.invalid slots=1\n",
    );
    one_line(
        &launch(&f, &[]),
        &[
            "cannot reach host 'no-such-host.invalid'",
            &format!("--hostfile '{}' (line 3)", f.display()),
        ],
    );
}

#[test]
fn a_rank_count_below_the_least_is_said_in_good_english() {
    for (args, least) in [
        (
            &["mpi", "latency", "--ranks", "1", "--dry-run"][..],
            "at least 2 ranks",
        ),
        (
            &["dsm", "run", "sor", "--ranks", "0", "--dry-run"],
            "at least 1 rank",
        ),
    ] {
        let out = common::bounded("60", args, &[]);
        let err = common::bad_input(&out, &[least], &format!("{args:?}"));
        assert!(!err.contains("1 ranks"), "{args:?}: {err}");
    }
}

#[test]
fn a_host_named_twice_is_one_usage_error_before_anything_starts() {
    let dup = hostfile("twice", "node1 slots=1\nnode2\nnode1 slots=2\n");
    one_line(&launch(&dup, &[]), &["'node1' is named on lines 1 and 3"]);
    let me = hostfile("this-machine-twice", "localhost\n127.0.0.1 slots=2\n");
    one_line(&launch(&me, &[]), &["both name this machine"]);
}

/// `mpi latency` with `args` (no --ranks unless given), bounded.
fn spread(args: &[&str]) -> Output {
    let mut all = vec!["mpi", "latency", "--sizes", "8"];
    all.extend_from_slice(args);
    common::bounded(
        "120",
        &all,
        &[
            ("OMPI_ALLOW_RUN_AS_ROOT", "1"),
            ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
        ],
    )
}

#[test]
fn a_spread_beyond_a_hosts_room_is_one_usage_error_before_anything_starts() {
    let two = hostfile("spread", "node1 slots=1\nnode2 slots=1\n");
    let two = two.to_str().unwrap();
    let cpus = std::thread::available_parallelism().unwrap().get();
    let beyond = (cpus + 1).to_string();
    let cpus_said = format!(
        "this machine has {}",
        numalab_results::words::count(cpus as u64, "CPU")
    );
    for (args, needles) in [
        (
            vec!["--hostfile", two, "--ranks-per-host", "2"],
            vec!["--ranks-per-host '2'", "host 'node1' (line 1) has slots=1"],
        ),
        (
            vec!["--hostfile", two, "--ranks-per-host", "1", "--ranks", "3"],
            vec!["give --ranks 2"],
        ),
        (vec!["--ranks-per-host", &beyond], vec![&cpus_said[..]]),
        (
            vec!["--ranks-per-host", "0"],
            vec!["at least 1 rank per host"],
        ),
        (vec!["--map-by", "socket"], vec!["'socket'", "valid: host"]),
        (
            vec!["--ranks", "2", "--map-by", "node", "--rank-cpus", "0"],
            vec!["invalid --map-by 'node'", "--rank-cpus '0'"],
        ),
    ] {
        for dry in [&[][..], &["--dry-run"]] {
            let all = [&args[..], dry].concat();
            common::bad_input(&spread(&all), &needles, &format!("{all:?}"));
        }
    }
}

#[test]
fn the_spread_flags_become_mpiruns_in_the_plan() {
    let out = common::bounded(
        "60",
        &[
            "mpi",
            "ranks",
            "--ranks-per-host",
            "2",
            "--map-by",
            "host",
            "--dry-run",
        ],
        &[],
    );
    let text = common::ok_text(&out);
    assert!(
        text.contains("mpirun -np 2 --map-by ppr:2:node --rank-by node"),
        "{text}"
    );
}
