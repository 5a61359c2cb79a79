//! mpirun's stdout, passed through. It carries the ranks' output, and also what a
//! remote daemon prints before it could reach mpirun: a remote shell's child writes to
//! the launcher's stdout, so "unable to complete a TCP connection … Local host: h2"
//! lands there, where no one reads it as the error. A rule followed by the opening of
//! one of Open MPI's daemon reports is read as a notice (said on stderr, naming the
//! host); every other line, a ranks' table rule included, passes through unchanged.
//! It also carries the finished configurations a rank on another host keeps (marked
//! lines, see `numalab_results::partial`): they go to the launcher's file, never to the
//! user.

use crate::launch_notice::{parse_box, Notice};
use numalab_results::partial::Collector;
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::mpsc;

/// The first words of the daemons' reports that may reach stdout.
const DAEMON_REPORTS: [&str; 3] = [
    "A process or daemon was unable to complete a TCP connection",
    "ORTE has lost communication with a remote daemon",
    "ORTE was unable to reliably start one or more daemons",
];

fn is_rule(line: &str) -> bool {
    let t = line.trim_end();
    t.len() >= 40 && t.bytes().all(|b| b == b'-')
}

/// Splits stdout's lines into lines to pass and daemon reports.
#[derive(Debug, Default)]
pub struct StdoutBoxes {
    /// A rule held until the next line says whether it opens a report.
    rule: Option<String>,
    /// The report being read.
    inside: Option<Vec<String>>,
}

impl StdoutBoxes {
    /// Feed one line (without its newline): lines to pass (Ok) and reports (Err).
    pub fn feed(&mut self, line: &str) -> Vec<Result<String, Notice>> {
        if let Some(lines) = &mut self.inside {
            if is_rule(line) {
                let lines = std::mem::take(lines);
                self.inside = None;
                return vec![Err(parse_box(&lines))];
            }
            lines.push(line.to_string());
            return Vec::new();
        }
        if let Some(rule) = self.rule.take() {
            if DAEMON_REPORTS
                .iter()
                .any(|p| line.trim_start().starts_with(p))
            {
                self.inside = Some(vec![line.to_string()]);
                return Vec::new();
            }
            let mut out = vec![Ok(rule)];
            out.extend(self.feed(line));
            return out;
        }
        if is_rule(line) {
            self.rule = Some(line.to_string());
            return Vec::new();
        }
        vec![Ok(line.to_string())]
    }

    /// What is held at the end of the stream.
    pub fn finish(&mut self) -> Vec<Result<String, Notice>> {
        let mut out: Vec<Result<String, Notice>> = self.rule.take().map(Ok).into_iter().collect();
        if let Some(lines) = self.inside.take() {
            out.push(Err(parse_box(&lines)));
        }
        out
    }
}

/// Pass `from` through to this process's stdout, sending the daemons' reports as
/// notices and keeping the ranks' marked lines. A line that is not UTF-8 passes as it
/// came.
pub fn filter(from: impl Read, tx: mpsc::Sender<Notice>) {
    let kept = Collector::from_env();
    let mut boxes = StdoutBoxes::default();
    let mut r = BufReader::new(from);
    let mut buf = Vec::new();
    let mut out = std::io::stdout();
    let emit = |items: Vec<Result<String, Notice>>, out: &mut std::io::Stdout| {
        for i in items {
            match i {
                Ok(l) => {
                    let _ = writeln!(out, "{l}");
                }
                Err(n) => {
                    let _ = tx.send(n);
                }
            }
        }
    };
    loop {
        buf.clear();
        match r.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let newline = buf.last() == Some(&b'\n');
        if newline && kept.take(&buf[..buf.len() - 1]) {
            continue;
        }
        if !newline && Collector::is_marked(&buf) {
            continue;
        }
        match std::str::from_utf8(&buf) {
            Ok(text) if newline => emit(boxes.feed(&text[..text.len() - 1]), &mut out),
            _ => {
                emit(boxes.finish(), &mut out);
                let _ = out.write_all(&buf);
            }
        }
        let _ = out.flush();
    }
    emit(boxes.finish(), &mut out);
    let _ = out.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: &str = "--------------------------------------------------------------------------";

    fn run(lines: &[&str]) -> (Vec<String>, Vec<Notice>) {
        let mut b = StdoutBoxes::default();
        let mut items: Vec<Result<String, Notice>> = lines.iter().flat_map(|l| b.feed(l)).collect();
        items.extend(b.finish());
        let (pass, notes): (Vec<_>, Vec<_>) = items.into_iter().partition(|i| i.is_ok());
        (
            pass.into_iter().map(|i| i.unwrap()).collect(),
            notes.into_iter().map(|i| i.unwrap_err()).collect(),
        )
    }

    #[test]
    fn a_daemons_report_on_stdout_becomes_the_notice_naming_its_host() {
        let (pass, notes) = run(&[
            "first",
            RULE,
            "A process or daemon was unable to complete a TCP connection",
            "to another process:",
            "  Local host:    nlab-h2",
            "  Remote host:   nlab-head",
            RULE,
            "last",
        ]);
        assert_eq!(pass, ["first", "last"]);
        assert_eq!(
            notes,
            [Notice::Unreachable {
                host: "nlab-h2".into(),
                to: "nlab-head".into()
            }]
        );
    }

    #[test]
    fn a_ranks_own_rules_pass_through_unchanged() {
        let lines = [RULE, " size  median", RULE, RULE, "x", RULE];
        let (pass, notes) = run(&lines);
        assert_eq!(pass, lines);
        assert!(notes.is_empty());
    }
}
