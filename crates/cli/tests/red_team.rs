//! Cases from the red-team runs (issue 35): closed pipes, hostile environments and
//! the messages and exit statuses they get.

mod common;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

/// Runs numalab with a stdout whose reading end is already closed.
fn into_closed_pipe(args: &[&str]) -> std::process::Output {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args(args)
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("run numalab")
}

#[test]
fn a_closed_stdout_ends_quietly() {
    for args in [
        &["schema"][..],
        &["topo"],
        &["survey", "--dry-run"],
        &["suite", "cvm", "--ranks", "2", "--dry-run"],
        &["latency", "--dry-run", "--json"],
    ] {
        let out = into_closed_pipe(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !err.contains("panicked") && !err.contains("Broken pipe"),
            "{args:?}: {err}"
        );
        // Ended by SIGPIPE, as any Unix filter is, or done before it wrote.
        assert!(
            out.status.signal() == Some(libc::SIGPIPE) || out.status.success(),
            "{args:?}: {:?} {err}",
            out.status
        );
    }
}
