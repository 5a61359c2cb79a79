//! Without privileges: a run whose CAP_SYS_NICE is dropped (setpriv) and one under a
//! seccomp filter that refuses mbind, set_mempolicy and move_pages. `numalab topo`
//! lists each refused feature with its reason and fix; a command that must bind and
//! prove memory exits 1 with one line naming the refusal, and prints no figure.

mod common;

use common::validate;
use std::os::unix::process::CommandExt;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_numalab");

/// The features `topo` lists as unavailable, with their reasons.
fn unavailable(out: &Output) -> Vec<(String, String)> {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = validate(&out.stdout);
    v[0]["unavailable"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["feature"].as_str().unwrap().to_string(),
                u["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// A command that must bind and prove 4 MiB on this machine.
const VERIFY: [&str; 9] = [
    "plan", "compact", "-n", "1", "--mem", "local", "--size", "4M", "--verify",
];

// Classic BPF for seccomp: load a word of seccomp_data, compare, return.
const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const RET_K: u16 = 0x06;
const RET_ALLOW: u32 = 0x7fff_0000;
const RET_ERRNO: u32 = 0x0005_0000;
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xc000_003e;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xc000_00b7;

fn op(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// In the child before exec: refuse mbind, set_mempolicy and move_pages with EPERM
/// (as a container's default seccomp profile does without CAP_SYS_NICE).
fn deny_numa_calls() -> std::io::Result<()> {
    let calls = [
        libc::SYS_mbind,
        libc::SYS_set_mempolicy,
        libc::SYS_move_pages,
    ];
    // seccomp_data: nr at offset 0, arch at offset 4; another ABI is allowed through.
    let mut f = vec![
        op(LD_W_ABS, 0, 0, 4),
        op(JEQ_K, 1, 0, AUDIT_ARCH),
        op(RET_K, 0, 0, RET_ALLOW),
        op(LD_W_ABS, 0, 0, 0),
    ];
    for nr in calls {
        f.push(op(JEQ_K, 0, 1, nr as u32));
        f.push(op(RET_K, 0, 0, RET_ERRNO | libc::EPERM as u32));
    }
    f.push(op(RET_K, 0, 0, RET_ALLOW));
    let prog = libc::sock_fprog {
        len: f.len() as u16,
        filter: f.as_mut_ptr(),
    };
    // SAFETY: prctl with the documented arguments; prog outlives the calls.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
            || libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &prog) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

fn try_sandboxed(args: &[&str]) -> std::io::Result<Output> {
    let mut c = Command::new(BIN);
    c.args(args);
    // SAFETY: the hook only makes two prctl calls (async-signal-safe) before exec.
    unsafe { c.pre_exec(deny_numa_calls) };
    c.output()
}

fn sandboxed(args: &[&str]) -> Output {
    try_sandboxed(args).expect("run numalab under the seccomp filter")
}

#[test]
fn a_seccomp_filter_refusing_the_numa_calls_is_named_and_no_placement_is_claimed() {
    let first = match try_sandboxed(&["topo", "--json"]) {
        Ok(o) => o,
        // PR_SET_SECCOMP answers EINVAL on a kernel without seccomp filters.
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            eprintln!("skipped: this kernel has no seccomp filters (CONFIG_SECCOMP_FILTER): {e}");
            return;
        }
        Err(e) => panic!("installing the seccomp filter: {e}"),
    };
    let got = unavailable(&first);
    for feature in [
        "memory binding (mbind)",
        "memory policy (set_mempolicy)",
        "placement proof (move_pages)",
    ] {
        let (_, why) = got
            .iter()
            .find(|(f, _)| f == feature)
            .unwrap_or_else(|| panic!("{feature} unavailable in {got:?}"));
        assert!(
            why.contains("is refused") && why.contains("seccomp") && why.contains("fix: "),
            "{why}"
        );
        assert!(why.contains("--cap-add SYS_NICE"), "{why}");
    }
    // The filter leaves CPU pinning alone: it is not listed.
    assert!(
        !got.iter().any(|(f, _)| f.contains("sched_setaffinity")),
        "{got:?}"
    );
    // The text lists them too.
    let text = sandboxed(&["topo"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("unavailable: memory binding (mbind): mbind(2) is refused"),
        "{text}"
    );
    // Binding and proving memory: one line naming the refusal and the fix, exit 1,
    // and nothing on stdout (no record claims a placement).
    for args in [
        &VERIFY[..],
        &["latency", "--size", "64K", "--iterations", "2", "--json"][..],
    ] {
        let out = sandboxed(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?} printed a result");
        let last = err.trim().lines().last().unwrap_or_default();
        assert!(
            last.contains("mbind(2) is refused") && last.contains("fix: "),
            "{args:?}: {err}"
        );
    }
    // Unfiltered, the same command proves its placement (the filter made the difference).
    let out = Command::new(BIN).args(VERIFY).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn without_cap_sys_nice_the_capability_is_named_and_own_memory_is_still_proved() {
    let drop = [
        "--bounding-set",
        "-sys_nice",
        "--inh-caps",
        "-sys_nice",
        "--",
    ];
    let run = |args: &[&str]| {
        Command::new("setpriv")
            .args(drop)
            .arg(BIN)
            .args(args)
            .output()
    };
    let out = match run(&["topo", "--json"]) {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("skipped: setpriv not found (Debian package util-linux); CAP_SYS_NICE was not dropped");
            return;
        }
        Err(e) => panic!("setpriv: {e}"),
    };
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() && err.starts_with("setpriv") {
        // Dropping a capability from the bounding set needs CAP_SETPCAP (root).
        eprintln!("skipped: setpriv could not drop CAP_SYS_NICE here: {err}");
        return;
    }
    let got = unavailable(&out);
    let (_, why) = got
        .iter()
        .find(|(f, _)| f == "CAP_SYS_NICE")
        .unwrap_or_else(|| panic!("CAP_SYS_NICE unavailable in {got:?}"));
    assert!(
        why.contains("lacks it") && why.contains("fix: ") && why.contains("--cap-add SYS_NICE"),
        "{why}"
    );
    // Without a seccomp profile the kernel still lets a process bind and query its
    // own pages: the placement is proved, not assumed.
    let out = run(&[&VERIFY[..], &["--json"]].concat()).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = validate(&out.stdout);
    assert_eq!(
        v[0]["placement"]["verified"]["memory"]["pages_checked"],
        1024
    );
}
