//! Issue 40, item 1: every writer refuses, before any work, an output that is no regular
//! file (a character device made here, a FIFO, a directory, a symbolic link to each),
//! leaves it as it was, and refuses one file named twice. Device nodes are made in a
//! temporary folder (`mknod`, as root); the machine's own /dev is never touched.

mod common;
use common::{bad_input, bounded, tmpdir};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

/// A character device in `dir` with the numbers of /dev/full (1, 7), or None (said)
/// when this process may not make one.
fn full_device(dir: &Path) -> Option<PathBuf> {
    let p = dir.join("full.csv");
    let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    // SAFETY: mknod on a path in our own temporary folder.
    let made = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 7)) };
    if made != 0 {
        eprintln!(
            "skipped the device cases: mknod failed ({}); they need root",
            std::io::Error::last_os_error()
        );
        return None;
    }
    Some(p)
}

fn fifo(dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(name);
    let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a path in our own temporary folder; the test never opens it.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    p
}

/// What a path is, without following a link: compared before and after each run.
fn what(p: &Path) -> String {
    let m = std::fs::symlink_metadata(p).unwrap();
    let t = m.file_type();
    match () {
        _ if t.is_symlink() => format!("link to {}", std::fs::read_link(p).unwrap().display()),
        _ if t.is_char_device() => "char device".into(),
        _ if t.is_fifo() => "fifo".into(),
        _ if t.is_dir() => "dir".into(),
        _ => format!("file of {} bytes", m.len()),
    }
}

/// The special outputs: FIFO, directory, a device when one can be made, and a link to each.
fn specials(dir: &Path, ext: &str) -> Vec<(PathBuf, &'static str)> {
    let mut out = vec![
        (fifo(dir, &format!("fifo.{ext}")), "a FIFO"),
        (dir.join(format!("dir.{ext}")), "a directory"),
    ];
    std::fs::create_dir(&out[1].0).unwrap();
    let dev = dir.join(format!("dev.{ext}"));
    let c = std::ffi::CString::new(dev.to_str().unwrap()).unwrap();
    // SAFETY: mknod in our own temporary folder: /dev/null's numbers, never the real one.
    if unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) } == 0 {
        out.push((dev, "a character device"));
    } else {
        eprintln!("skipped the device outputs: mknod needs root");
    }
    let links: Vec<(PathBuf, &'static str)> = out
        .iter()
        .map(|(p, k)| {
            let l = dir.join(format!("link-{}", p.file_name().unwrap().to_str().unwrap()));
            std::os::unix::fs::symlink(p, &l).unwrap();
            (l, *k)
        })
        .collect();
    out.extend(links);
    out
}

/// Runs numalab (bounded) and asserts a one-line refusal, exit 2, naming `p` and `kind`,
/// with `p` left as it was.
fn refused(args: &[&str], p: &Path, kind: &str) {
    let before = what(p);
    let out = bounded("60", args, &[]);
    bad_input(
        &out,
        &[&p.display().to_string(), kind],
        &format!("{args:?}"),
    );
    assert_eq!(what(p), before, "{args:?} changed {}", p.display());
}

/// Item 1's case: `--mess-csv` of a device node measured and then renamed a regular file
/// over it (exit 0, nothing written). Now it is refused before any work.
#[test]
fn mess_csv_never_replaces_a_device_node() {
    let dir = tmpdir("files-full");
    let Some(full) = full_device(&dir) else {
        return;
    };
    let f = full.display().to_string();
    let args = [
        "loaded-latency",
        "--size",
        "8M",
        "--iterations",
        "1",
        "--delays",
        "0",
        "--mess-csv",
        &f,
    ];
    refused(&args, &full, "a character device");
    assert!(std::fs::symlink_metadata(&full)
        .unwrap()
        .file_type()
        .is_char_device());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every writer, every special output.
#[test]
fn every_writer_refuses_what_is_no_regular_file() {
    let dir = tmpdir("files-walk");
    let d = |n: &str| dir.join(n).display().to_string();
    // Inputs the readers need: records, a trace.
    let recs = d("in.json");
    let out = common::numalab(&["latency", "--dry-run", "-o", &recs]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let trace = d("in.trace");
    let out = bounded("60", &["record", "-o", &trace, "--", "true"], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let advise =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/advise/two-socket.json");
    let survey = advise.display().to_string();
    let cxl = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiers/cxl-survey.json");
    let cxl = cxl.display().to_string();
    for ext in ["json", "csv", "html", "trace", "xml"] {
        for (p, kind) in specials(&dir, ext) {
            let o = p.display().to_string();
            let cases: Vec<Vec<&str>> = match ext {
                "json" => vec![
                    vec!["latency", "--dry-run", "-o", &o],
                    vec!["export", &trace, "--perfetto", "-o", &o],
                    vec!["advise", &survey, "-o", &o],
                    vec!["survey", "--quick", "-o", &o],
                ],
                "csv" => vec![
                    vec!["latency", "--dry-run", "-o", &o],
                    vec![
                        "loaded-latency",
                        "--size",
                        "8M",
                        "--iterations",
                        "1",
                        "--delays",
                        "0",
                        "--mess-csv",
                        &o,
                    ],
                ],
                "html" => vec![
                    vec!["report", &recs, "-o", &o],
                    vec!["report", &trace, "-o", &o],
                    vec!["compare", &recs, &recs, "-o", &o],
                ],
                "trace" => vec![
                    vec!["record", "-o", &o, "--", "true"],
                    vec!["monitor", "-c", "1", "-i", "10", "-o", &o],
                ],
                _ => vec![vec!["tiers", "--from", &cxl, "--export-hwloc", &o]],
            };
            for args in cases {
                // A survey folder that is no folder is refused as such, not by the file rule.
                let kind = if args[0] == "survey" && kind != "a directory" {
                    "survey -o names a folder"
                } else {
                    kind
                };
                if args[0] == "survey" && kind == "a directory" {
                    continue;
                }
                refused(&args, &p, kind);
            }
        }
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let n = e.file_name().to_string_lossy().to_string();
            if n.ends_with(&format!(".{ext}")) && !n.starts_with("in.") {
                let p = e.path();
                let _ = std::fs::remove_file(&p).or_else(|_| std::fs::remove_dir(&p));
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A survey folder whose files are no regular files: refused up front, nothing removed.
#[test]
fn a_survey_folder_holding_a_fifo_is_refused_before_any_work() {
    let dir = tmpdir("files-survey");
    for name in ["journal.jsonl", "results.json", "report.html"] {
        let folder = dir.join(name.replace('.', "-"));
        std::fs::create_dir(&folder).unwrap();
        let p = fifo(&folder, name);
        let f = folder.display().to_string();
        for extra in [&[][..], &["--force"][..]] {
            let mut args = vec!["survey", "--quick", "-o", &f];
            args.extend_from_slice(extra);
            refused(&args, &p, "a FIFO");
        }
        let resume = ["survey", "--quick", "--resume", &f];
        let out = bounded("60", &resume, &[]);
        assert_eq!(out.status.code(), Some(2));
        assert_eq!(what(&p), "fifo");
    }
    // A regular file where the folder should be: one clear line, not "File exists".
    let file = dir.join("plain");
    std::fs::write(&file, "x").unwrap();
    let f = file.display().to_string();
    refused(
        &["survey", "--quick", "-o", &f],
        &file,
        "a regular file; survey -o names a folder",
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Two outputs naming one file, or an output naming an input: refused before any work.
#[test]
fn one_file_named_twice_is_refused_before_any_work() {
    let dir = tmpdir("files-same");
    let d = |n: &str| dir.join(n).display().to_string();
    let a = d("a.json");
    let out = common::numalab(&["latency", "--dry-run", "-o", &a]);
    assert!(out.status.success());
    let before = std::fs::read(&a).unwrap();
    let csv = d("m.csv");
    let dot = format!("{}/./m.csv", dir.display());
    let loaded = [
        "loaded-latency",
        "--size",
        "8M",
        "--iterations",
        "1",
        "--delays",
        "0",
        "--mess-csv",
        &csv,
        "-o",
        &dot,
    ];
    for (args, want) in [
        (&loaded[..], "same file as --mess-csv"),
        (&["report", &a, "-o", &a, "--force"][..], "names the input"),
        (
            &["compare", &a, &a, "-o", &a, "--force"][..],
            "names the input",
        ),
    ] {
        bad_input(&bounded("60", args, &[]), &[want], &format!("{args:?}"));
    }
    assert_eq!(std::fs::read(&a).unwrap(), before, "the input is untouched");
    assert!(
        !Path::new(&csv).exists(),
        "nothing measured, nothing written"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A survey journal of steps a, b, c with `topo` records for `done`, of run `run`.
fn journal(run: &str, continues: Option<String>, done: &[&str]) -> String {
    use numalab_results::journal::{Entry, Fingerprint, Header, PlannedStep, FORMAT};
    let topo = common::numalab(&["topo", "--json"]);
    let recs: Vec<numalab_results::Record> = serde_json::from_slice(&topo.stdout).unwrap();
    let plan = ["a", "b", "c"].map(|id| PlannedStep {
        id: id.into(),
        title: format!("step {id}"),
        args: vec!["topo".into()],
        skip: None,
    });
    let header = Header {
        format: FORMAT.into(),
        tool_version: "test".into(),
        command_line: vec!["numalab".into(), "survey".into()],
        fingerprint: Fingerprint::of(&recs[0].provenance),
        plan: plan.to_vec(),
        continues,
        run: Some(run.into()),
    };
    let mut text = serde_json::to_string(&header).unwrap() + "\n";
    for id in done {
        let e = Entry {
            step: id.to_string(),
            status: "1 records".into(),
            seconds: 0.1,
            records: recs.clone(),
        };
        text += &(serde_json::to_string(&e).unwrap() + "\n");
    }
    text
}

/// Item 3: a leftover fallback journal of an earlier run of the same folder never
/// counts for a newer run: its run id is not the journal's.
#[test]
fn a_stale_rescue_of_an_earlier_run_is_not_followed() {
    let root = tmpdir("files-stale");
    let (tmp, dir) = (root.join("tmp"), root.join("s"));
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::create_dir_all(&dir).unwrap();
    let jp = dir.join(numalab_results::journal::FILE_NAME);
    std::fs::write(&jp, journal("new", None, &["a"])).unwrap();
    let me = std::fs::canonicalize(&jp).unwrap().display().to_string();
    let stale = tmp.join("numalab-rescued-1-2.jsonl");
    std::fs::write(&stale, journal("old", Some(me), &["a", "b", "c"])).unwrap();
    let html = root.join("r.html").display().to_string();
    let t = tmp.display().to_string();
    let d = dir.display().to_string();
    let out = bounded("60", &["report", &d, "-o", &html], &[("TMPDIR", &t)]);
    let err = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains(&stale.display().to_string()), "{err}");
    assert!(stdout.contains("not measured: step 'step b'"), "{stdout}");
    // The same file of this run is followed.
    std::fs::write(
        &stale,
        journal(
            "new",
            Some(std::fs::canonicalize(&jp).unwrap().display().to_string()),
            &["a", "b", "c"],
        ),
    )
    .unwrap();
    let out = bounded(
        "60",
        &["report", &d, "-o", &html, "--force"],
        &[("TMPDIR", &t)],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(!stdout.contains("not measured"), "{stdout}");
    std::fs::remove_dir_all(&root).unwrap();
}

/// Item 2: a run folder (or temporary directory) that does not exist is never created
/// with its parents: the run warns and creates nothing.
#[test]
fn a_missing_run_folder_parent_is_never_created() {
    let root = tmpdir("files-rundir");
    let gone = root.join("none");
    let x = gone.join("x").display().to_string();
    let t = gone.display().to_string();
    let args = [
        "loaded-latency",
        "--size",
        "8M",
        "--iterations",
        "1",
        "--delays",
        "0",
    ];
    for env in [("NUMALAB_RUN_DIR", x.as_str()), ("TMPDIR", t.as_str())] {
        let out = bounded("120", &args, &[env]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{env:?}: {err}");
        assert!(err.contains("cannot register this run"), "{env:?}: {err}");
        assert!(!gone.exists(), "{env:?} created {}", gone.display());
    }
    std::fs::remove_dir_all(&root).unwrap();
}

/// Item 19, the file parts: each bad input gets one line saying what it is (exit 2).
#[test]
fn bad_inputs_say_what_they_are() {
    let dir = tmpdir("files-inputs");
    let d = |n: &str| dir.join(n).display().to_string();
    let a = d("a.json");
    assert!(common::numalab(&["latency", "--dry-run", "-o", &a])
        .status
        .success());
    std::fs::write(d("none.json"), "[]").unwrap();
    std::fs::write(d("empty.json"), "").unwrap();
    std::fs::write(d("cut.trace"), "{\"type\":\"header\",\"for").unwrap();
    std::fs::create_dir(d("hosts")).unwrap();
    let plan = journal("r", None, &[]).replacen("\"plan\":[", "\"plan\":[],\"x\":[", 1);
    std::fs::write(d("journal.jsonl"), plan).unwrap();
    let html = d("r.html");
    let (none, empty, cut, hosts, j) = (
        d("none.json"),
        d("empty.json"),
        d("cut.trace"),
        d("hosts"),
        d("journal.jsonl"),
    );
    for (args, want) in [
        (vec!["compare", &a, &none], "holds no records"),
        (vec!["report", &empty, "-o", &html], "it is empty"),
        (vec!["report", &cut, "-o", &html], "trace cut short"),
        (vec!["report", &j, "-o", &html], "plans no steps"),
        (
            vec!["mpi", "latency", "--hostfile", &hosts, "--sizes", "8"],
            "is a directory",
        ),
    ] {
        bad_input(&bounded("60", &args, &[]), &[want], &format!("{args:?}"));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Item 19: `survey -o FILE` names the file and what -o takes, not "File exists".
#[test]
fn survey_into_a_regular_file_is_refused_naming_it() {
    let dir = tmpdir("files-survey-file");
    let f = dir.join("notes.txt");
    std::fs::write(&f, "mine\n").unwrap();
    let p = f.display().to_string();
    let out = bounded("60", &["survey", "--quick", "-o", &p], &[]);
    let err = bad_input(
        &out,
        &[&p, "a regular file", "names a folder"],
        "survey -o a file",
    );
    assert!(!err.contains("os error 17"), "{err}");
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "mine\n");
    std::fs::remove_dir_all(&dir).unwrap();
}
