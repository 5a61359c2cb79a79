//! Issue 40 on full filesystems and endless inputs: a write error is an error (item 8),
//! records are never claimed kept where they are not (item 9), `survey --resume` on a
//! full disk is a run-time failure (item 19), and an input that is a device or a FIFO
//! is refused at once (item 13). Full filesystems are small tmpfs mounts in a private
//! mount namespace (`unshare -m`, as root; skipped with a word otherwise), and device
//! nodes are made in a temporary folder: nothing of the machine's is touched.

mod common;
use common::{bad_input, bounded, tmpdir};
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// What of a filesystem is used up.
#[derive(Clone, Copy, PartialEq)]
enum Full {
    /// Every block: a new file can be made, not filled.
    Blocks,
    /// Every block and every inode: not even an empty file can be made.
    BlocksAndInodes,
}

/// Run the shell `script` in a private mount namespace after mounting a 256 KiB tmpfs of
/// 64 inodes at `$M`, making `dirs` and copying `files` (from, to) in it, then filling
/// it as `full` says; `$NUMALAB` is the binary. None (said) when this process may not
/// mount (not root).
fn on_full_tmpfs(
    base: &Path,
    full: Full,
    dirs: &[&str],
    files: &[(&str, &str)],
    script: &str,
) -> Option<Output> {
    let m = base.join("mnt");
    std::fs::create_dir_all(&m).unwrap();
    let copies: String = files
        .iter()
        .map(|(from, to)| format!("cp '{from}' \"$M/{to}\"\n"))
        .collect();
    let inodes = match full {
        Full::Blocks => "",
        Full::BlocksAndInodes => "i=0; while (: >\"$M/i$i\") 2>/dev/null; do i=$((i+1)); done\n",
    };
    let full = format!(
        "mount -t tmpfs -o size=256k,nr_inodes=64 tmpfs \"$M\" || exit 77\n\
         for d in {}; do mkdir -p \"$M/$d\"; done\n\
         {copies}\
         dd if=/dev/zero of=\"$M/fill\" bs=4k 2>/dev/null\n\
         {inodes}\
         [ \"$(df -k --output=avail \"$M\" | tail -1 | tr -d ' ')\" = 0 ] || exit 78\n\
         {script}",
        dirs.join(" ")
    );
    let out = Command::new("unshare")
        .args(["-m", "sh", "-c", &full])
        .env("M", &m)
        .env("NUMALAB", env!("CARGO_BIN_EXE_numalab"))
        .stdin(Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.code() == Some(77) || o.status.code().is_none() => {
            eprintln!(
                "skipped: no tmpfs could be mounted in a private namespace (needs root): {}",
                String::from_utf8_lossy(&o.stderr)
            );
            None
        }
        Ok(o) => {
            assert_ne!(o.status.code(), Some(78), "the tmpfs did not fill");
            Some(o)
        }
        Err(e) => {
            eprintln!("skipped: unshare: {e}");
            None
        }
    }
}

/// The error lines of a run's stderr ("numalab: error: …").
fn errors(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.starts_with("numalab: error:"))
        .map(String::from)
        .collect()
}

/// Item 8: a Mess CSV that does not fit is exit 1, one line naming the file, and the
/// records were shown; standard output that is a full device (a /dev/full made here)
/// is exit 1 too, never a success nor a panic.
#[test]
fn a_mess_csv_into_a_full_place_is_an_error() {
    let script = "$NUMALAB loaded-latency --size 8M --iterations 1 --delays 0 \
                  --mess-csv \"$M/d/mess.csv\" >/dev/null";
    if let Some(out) = on_full_tmpfs(&tmpdir("full-mess"), Full::Blocks, &["d"], &[], script) {
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("/d/mess.csv") && err.contains("No space left"),
            "{err}"
        );
    }
    // Not even an empty file fits: refused before any work, still exit 1 (the disk,
    // not the user's input).
    let base = tmpdir("full-mess-inodes");
    if let Some(out) = on_full_tmpfs(&base, Full::BlocksAndInodes, &["d"], &[], script) {
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("/d/mess.csv") && err.contains("No space left"),
            "{err}"
        );
    }
    let dir = tmpdir("full-stdout");
    let dev = dir.join("full");
    let c = std::ffi::CString::new(dev.to_str().unwrap()).unwrap();
    // SAFETY: mknod in our own temporary folder, with /dev/full's numbers.
    if unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 7)) } != 0 {
        eprintln!("skipped the full standard output: mknod needs root");
        return;
    }
    for args in [
        vec![
            "loaded-latency",
            "--size",
            "8M",
            "--iterations",
            "1",
            "--delays",
            "0",
            "--mess-csv",
            "-",
        ],
        vec!["latency", "--dry-run"],
        vec!["latency", "--dry-run", "--json"],
    ] {
        let stdout = std::fs::OpenOptions::new().write(true).open(&dev).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_numalab"))
            .args(&args)
            .stdout(stdout)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(err.contains("No space left"), "{args:?}: {err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Item 9: with $TMPDIR, $HOME and the output's folder all full and standard output
/// /dev/null, records that cannot be written are said lost, never "kept in standard
/// output"; with standard output a file, they are kept there and said so.
#[test]
fn records_are_never_said_kept_where_nothing_keeps_them() {
    let script = "export TMPDIR=\"$M/tmp\" HOME=\"$M/home\"\n\
                  $NUMALAB latency --dry-run -o \"$M/d/out.json\" >/dev/null 2>\"$M/../null.err\"\n\
                  echo $? >\"$M/../null.rc\"\n\
                  $NUMALAB latency --dry-run -o \"$M/d/out.json\" >\"$M/../kept.json\"";
    let dir = tmpdir("full-rescue");
    let Some(out) = on_full_tmpfs(&dir, Full::Blocks, &["d", "tmp", "home"], &[], script) else {
        return;
    };
    let err = std::fs::read_to_string(dir.join("null.err")).unwrap();
    let rc = std::fs::read_to_string(dir.join("null.rc")).unwrap();
    assert_eq!(rc.trim(), "1", "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("/d/out.json"), "{err}");
    assert!(!err.contains("kept in"), "{err}");
    assert!(
        err.contains("standard output: a device that keeps nothing"),
        "{err}"
    );
    // Standard output a file: the records go there, and the error says so.
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("kept in 'standard output"), "{err}");
    let kept = std::fs::read(dir.join("kept.json")).unwrap();
    common::validate(&kept);
}

/// A journal of this machine's `survey --quick` that measured nothing yet: its header.
fn unfinished_quick_survey(dir: &Path) -> String {
    let s = dir.join("started");
    let mut job = Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args(["survey", "--quick", "-o", s.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let j = s.join("journal.jsonl");
    let t = std::time::Instant::now();
    let header = loop {
        let text = std::fs::read_to_string(&j).unwrap_or_default();
        if let Some(h) = text.lines().next().filter(|_| text.contains('\n')) {
            break h.to_string();
        }
        assert!(
            t.elapsed().as_secs() < 120,
            "the survey wrote no journal header"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let _ = job.kill();
    let _ = job.wait();
    let out = dir.join("header.jsonl");
    std::fs::write(&out, format!("{header}\n")).unwrap();
    out.display().to_string()
}

/// Item 19: `survey --resume` of a folder on a full disk (no block and no inode left)
/// fails at run time (exit 1) in one line naming the file it could not make, never as
/// a usage error.
#[test]
fn survey_resume_on_a_full_disk_is_a_run_time_failure() {
    let dir = tmpdir("full-resume-src");
    let header = unfinished_quick_survey(&dir);
    let script = "exec $NUMALAB survey --quick --resume \"$M/s\" >/dev/null";
    let Some(out) = on_full_tmpfs(
        &dir,
        Full::BlocksAndInodes,
        &["s"],
        &[(&header, "s/journal.jsonl")],
        script,
    ) else {
        std::fs::remove_dir_all(&dir).unwrap();
        return;
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(errors(&out).len(), 1, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("/s/.numalab-survey.lock") && err.contains("No space left"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Item 13 through the command line: a journal that is a link to /dev/urandom, or a
/// FIFO, is refused at once (exit 2, naming it); a bound makes a regression fail, not hang.
#[test]
fn report_refuses_a_journal_that_is_a_device_or_a_fifo() {
    let dir = tmpdir("endless-journal");
    let (a, b) = (dir.join("urandom"), dir.join("fifo"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    std::os::unix::fs::symlink("/dev/urandom", a.join("journal.jsonl")).unwrap();
    let c = std::ffi::CString::new(b.join("journal.jsonl").to_str().unwrap()).unwrap();
    // SAFETY: mkfifo in our own temporary folder; nothing here opens it.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for (d, kind) in [(&a, "character device"), (&b, "FIFO")] {
        let html = dir.join("r.html");
        let args = ["report", d.to_str().unwrap(), "-o", html.to_str().unwrap()];
        let out = bounded("20", &args, &[]);
        bad_input(&out, &["journal.jsonl", kind], &format!("{args:?}"));
        assert!(!html.exists());
    }
    assert!(Path::new("/dev/urandom").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
