//! What a measuring command keeps when SIGINT, SIGTERM or SIGHUP ends it: the one
//! mechanism every measuring command uses. The command [`arm`]s it with how its records
//! are shown (`-o`, `--json` or text); the experiment hands over each part's records as
//! the part ends ([`keep`]). On a signal, a watcher thread marks the kept records as
//! interrupted (a warning on each), shows them as the normal end would, says so in one
//! line, and exits 128 + the signal; the measuring threads are abandoned mid-part,
//! as the part they were in is not a result. Once the command shows its complete
//! records ([`finishing`]), a signal waits for that and then exits 128 + the signal.
//! A part whose record grows as its figures end hands over each fuller version with
//! [`supersede`]. Where `NUMALAB_PARTIAL` names a file, each kept part is also
//! appended to it as one line ([`crate::partial`]), so another process can see which
//! parts have ended.

use crate::record::Record;
use std::sync::atomic::{AtomicI32, AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// How the command shows its records; returns an error line when it could not.
pub type Show = Box<dyn FnOnce(&[Record]) -> Result<(), String> + Send>;

/// The signal received (0: none).
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// Whether the records were claimed for showing: by the command's normal end or by
/// the watcher, whichever came first; the other never shows any.
static CLAIMED: AtomicU8 = AtomicU8::new(NOBODY);
const NOBODY: u8 = 0;
const COMMAND: u8 = 1;
const WATCHER: u8 = 2;
/// The records of the parts that ended.
static KEPT: Mutex<Vec<Record>> = Mutex::new(Vec::new());
/// How the command shows them.
static SHOW: Mutex<Option<Show>> = Mutex::new(None);

/// The signals a measuring command keeps its records on.
pub const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

extern "C" fn on_signal(sig: libc::c_int) {
    // Only the first counts: a second Ctrl-C while the records are shown waits too.
    let _ = SIGNAL.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
}

/// The signal's name as the lines say it.
pub fn name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT (Ctrl-C)",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// The signal received so far, if any.
pub fn pending() -> Option<i32> {
    Some(SIGNAL.load(Ordering::SeqCst)).filter(|&s| s != 0)
}

/// Catch SIGINT, SIGTERM and SIGHUP from now on: [`pending`] says which came. The
/// survey, which keeps its own steps, uses this alone.
pub fn catch() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        let h = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        for s in SIGNALS {
            libc::signal(s, h);
        }
    }
}

/// [`catch`] the signals, and show what was [`keep`]t with `show` when one arrives.
pub fn arm(show: Show) {
    *SHOW.lock().unwrap_or_else(|p| p.into_inner()) = Some(show);
    catch();
    std::thread::Builder::new()
        .name("numalab-signals".into())
        .spawn(watch)
        .expect("start the signal watcher");
}

/// Where kept parts are appended as they end (nothing unless `NUMALAB_PARTIAL` is set).
static SINK: Mutex<Option<crate::partial::Sink>> = Mutex::new(None);

/// One part of the measurement ended: its records are kept should a signal end the rest.
pub fn keep(records: impl IntoIterator<Item = Record>) {
    let records: Vec<Record> = records.into_iter().collect();
    append(&records);
    KEPT.lock()
        .unwrap_or_else(|p| p.into_inner())
        .extend(records);
}

/// A fuller version of records already kept ended (a figure of a record that holds
/// several): each replaces the kept record of the same kind and name, or is added.
pub fn supersede(records: impl IntoIterator<Item = Record>) {
    let records: Vec<Record> = records.into_iter().collect();
    append(&records);
    let mut kept = KEPT.lock().unwrap_or_else(|p| p.into_inner());
    replace(&mut kept, records);
}

/// `new` replacing the records of `kept` with the same kind and name.
fn replace(kept: &mut Vec<Record>, new: Vec<Record>) {
    for r in new {
        match kept
            .iter_mut()
            .find(|k| k.kind == r.kind && k.name == r.name)
        {
            Some(k) => *k = r,
            None => kept.push(r),
        }
    }
}

fn append(records: &[Record]) {
    let mut sink = SINK.lock().unwrap_or_else(|p| p.into_inner());
    sink.get_or_insert_with(crate::partial::Sink::from_env)
        .add(records);
}

/// The command shows its complete records now: a signal no longer shows the kept ones.
/// When the watcher has already begun showing them, this thread waits for it to end
/// the process, so no record is shown twice.
pub fn finishing() {
    let claim = CLAIMED.compare_exchange(NOBODY, COMMAND, Ordering::SeqCst, Ordering::SeqCst);
    if claim == Err(WATCHER) {
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
}

/// After the complete records were shown: a signal that came meanwhile still ends the
/// command with 128 + the signal, as the user asked it to end.
pub fn exit_if_signalled() {
    if let Some(sig) = pending() {
        eprintln!(
            "numalab: error: interrupted by {} as the records were written; they are complete",
            name(sig)
        );
        std::process::exit(128 + sig);
    }
}

fn watch() {
    let sig = loop {
        if let Some(s) = pending() {
            break s;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let claim = CLAIMED.compare_exchange(NOBODY, WATCHER, Ordering::SeqCst, Ordering::SeqCst);
    if claim.is_err() {
        // The command is showing its complete records: it exits when done.
        return;
    }
    let mut kept = std::mem::take(&mut *KEPT.lock().unwrap_or_else(|p| p.into_inner()));
    let show = SHOW.lock().unwrap_or_else(|p| p.into_inner()).take();
    let line = match (kept.is_empty(), show) {
        (true, _) | (_, None) => "nothing had finished, so no records were written".to_string(),
        (false, Some(show)) => {
            mark(&mut kept, sig);
            match show(&kept) {
                Ok(()) => format!(
                    "the records of the parts that had finished were written, each marked interrupted: {}",
                    crate::words::count(kept.len() as u64, "record")
                ),
                Err(e) => format!("the records of the parts that had finished were not written: {e}"),
            }
        }
    };
    use std::io::Write;
    let _ = std::io::stdout().flush();
    eprintln!("numalab: error: interrupted by {}: {line}", name(sig));
    std::process::exit(128 + sig);
}

/// The warning each kept record carries.
pub fn mark(records: &mut [Record], sig: i32) {
    let w = format!(
        "interrupted: {} ended the command before it finished; this record is of a part that had finished, and parts after it are missing",
        name(sig)
    );
    for r in records {
        r.warnings.push(w.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(kind: &str, name: &str, figure: &str) -> Record {
        Record::new(
            kind,
            name,
            crate::Provenance::collect("t", "none"),
            serde_json::json!({ "figure": figure }),
        )
    }

    #[test]
    fn a_fuller_record_replaces_the_kept_one_of_its_kind_and_name() {
        let mut kept = vec![
            rec("c2c", "cpu0-cpu1", "cas"),
            rec("c2c", "cpu0-cpu2", "cas"),
        ];
        replace(
            &mut kept,
            vec![
                rec("c2c", "cpu0-cpu1", "both"),
                rec("c2c-matrix", "cpu0-cpu1", "m"),
            ],
        );
        let got: Vec<(&str, &str, &str)> = kept
            .iter()
            .map(|r| {
                (
                    r.kind.as_str(),
                    r.name.as_str(),
                    r.parameters["figure"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("c2c", "cpu0-cpu1", "both"),
                ("c2c", "cpu0-cpu2", "cas"),
                ("c2c-matrix", "cpu0-cpu1", "m")
            ]
        );
    }
}
