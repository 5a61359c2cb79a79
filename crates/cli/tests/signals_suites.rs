//! Issue 40 item 10 for `suite placement` and `suite collectives` (threads): SIGINT,
//! SIGTERM and SIGHUP end them with 128 + the signal and keep the records of the parts
//! that finished, each marked interrupted. The signal is sent once the run's own
//! progress line (drawn on a terminal this test opens) says a part finished: no sleep
//! assumes a speed.

mod common;

use common::terminal::OnTerminal;
use std::time::Duration;

/// Run `args -o OUT` with its progress on a terminal, send `sig` once the progress line
/// shows `progress` (drawn after a part's records are kept), and return the records of
/// OUT, each checked to be marked interrupted (none where no terminal can be opened).
fn interrupted(tag: &str, args: &[&str], progress: &str, sig: i32) -> Vec<serde_json::Value> {
    let out_file = common::tmpdir(tag).join("out.json");
    let mut all = args.to_vec();
    all.extend(["-o", out_file.to_str().unwrap()]);
    let Some(mut run) = OnTerminal::spawn(&all) else {
        return Vec::new();
    };
    let shown = run.wait_for(progress, Duration::from_secs(300));
    assert!(
        shown,
        "{args:?} ended before its first part was shown finished: {}",
        run.text()
    );
    run.signal(sig);
    let (code, text) = run.finish(Duration::from_secs(60));
    assert_eq!(
        code,
        Some(128 + sig),
        "{args:?}: the run must outlast the signal (more passes per part): {text}"
    );
    assert!(
        text.contains(&format!(
            "interrupted by {}: the ",
            if sig == libc::SIGINT {
                "SIGINT (Ctrl-C)"
            } else if sig == libc::SIGTERM {
                "SIGTERM"
            } else {
                "SIGHUP"
            }
        )) && text.contains(
            "records of the parts that had finished were written, each marked interrupted"
        ),
        "{args:?}: {text}"
    );
    let body = std::fs::read_to_string(&out_file).unwrap();
    common::validate(body.as_bytes());
    let recs: Vec<serde_json::Value> = serde_json::from_str(&body).unwrap();
    assert!(!recs.is_empty());
    for r in &recs {
        let w = r["warnings"].as_array().unwrap();
        assert!(
            w.iter()
                .any(|w| w.as_str().unwrap().starts_with("interrupted: ")),
            "{args:?}: {r}"
        );
    }
    std::fs::remove_dir_all(out_file.parent().unwrap()).unwrap();
    recs
}

#[test]
fn suite_placement_keeps_its_finished_points_on_each_signal() {
    for (sig, tag) in [
        (libc::SIGINT, "int"),
        (libc::SIGTERM, "term"),
        (libc::SIGHUP, "hup"),
    ] {
        // Many passes per point: the points after the first outlast the signal.
        let args = ["suite", "placement", "--iterations", "5000"];
        let recs = interrupted(&format!("placement-{tag}"), &args, "placement: 1/", sig);
        for r in &recs {
            assert_eq!(r["kind"], "suite-placement", "{r}");
            assert_eq!(r["data"]["data_checked"], true, "{r}");
        }
    }
}

#[test]
fn suite_collectives_keeps_its_finished_measurements() {
    let args = ["suite", "collectives", "--iterations", "20000"];
    let recs = interrupted("collectives-term", &args, "collectives: 1/", libc::SIGTERM);
    for r in &recs {
        assert_eq!(r["kind"], "suite-collectives", "{r}");
    }
}
