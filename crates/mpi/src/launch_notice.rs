//! Open MPI's boxed reports on mpirun's stderr (a dead rank, a failed launch, too few
//! slots), read into [`Notice`]s so the launcher prints one line each.

use std::path::Path;

/// What mpirun reported about the job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// A rank was killed by a signal.
    RankSignal {
        /// The rank.
        rank: usize,
        /// Host it ran on.
        host: String,
        /// Signal number.
        signal: i32,
        /// Signal name as mpirun gives it ("Killed").
        name: String,
    },
    /// A rank exited with a non-zero status without aborting.
    RankExit {
        /// The rank.
        rank: usize,
        /// Its exit status.
        code: i32,
    },
    /// A rank called MPI_Abort (numalab's ranks do after printing their own error).
    Abort {
        /// The rank.
        rank: usize,
        /// The error code.
        code: i32,
    },
    /// Open MPI had too few slots for the ranks asked for.
    NotEnoughSlots,
    /// mpirun could not start its daemon on every host.
    DaemonsFailed,
    /// mpirun lost its daemon on a host mid-run (a link cut, a host gone).
    LostHost(String),
    /// A host's daemon could not connect back to mpirun.
    Unreachable {
        /// The host whose daemon could not connect.
        host: String,
        /// The host it tried to reach.
        to: String,
    },
    /// The remote shell's own complaint ("ssh: connect to host h2 port 22: …").
    RemoteShell {
        /// The host it names.
        host: String,
        /// Its line.
        line: String,
    },
    /// Open MPI's banner that only repeats what another notice says.
    Redundant,
    /// Any other report, flattened to one line.
    Other(String),
    /// A line in which a rank's transport says a peer went away ("Read -1, expected
    /// 65536, errno = 14"): an echo of a dead rank, held back by the launcher.
    Transport(String),
}

/// Whether a line of mpirun's stderr is a transport's complaint about a peer, as Open
/// MPI's shared-memory and TCP transports print when the other rank died mid-message.
pub fn is_transport(line: &str) -> bool {
    (line.contains(", expected ") && line.contains("errno = "))
        || line.contains("mca_btl_tcp_frag_recv")
        || line.contains("mca_btl_tcp_endpoint")
        || line.contains("mca_btl_tcp_recv_blocking")
}

impl Notice {
    /// A rank died or the job could not go on.
    pub fn is_death(&self) -> bool {
        matches!(
            self,
            Notice::RankSignal { .. }
                | Notice::RankExit { .. }
                | Notice::Abort { .. }
                | Notice::DaemonsFailed
                | Notice::LostHost(_)
                | Notice::Unreachable { .. }
        )
    }

    /// The one line to print, if any (an aborting rank has printed its own), for a
    /// job of `ranks` ranks started on this machine or the hosts of `hostfile`.
    pub fn message(&self, ranks: usize, hostfile: Option<&Path>) -> Option<String> {
        match self {
            Notice::RankSignal {
                rank,
                host,
                signal,
                name,
            } => Some(format!(
                "rank {rank} on host {host} died on signal {signal} ({name}); the job was ended"
            )),
            // Status 2: a refusal, which rank 0 has said in its own line.
            Notice::RankExit { code: 2, .. } => None,
            Notice::RankExit { rank, code } => Some(format!(
                "rank {rank} exited with status {code}; the job was ended"
            )),
            Notice::Abort { .. } | Notice::Redundant | Notice::Transport(_) => None,
            Notice::NotEnoughSlots => Some(format!(
                "invalid --ranks '{}': mpirun has fewer slots than that{}",
                ranks,
                match hostfile {
                    Some(h) => format!(" in hostfile '{}' (add slots=N per host)", h.display()),
                    None => " on this machine".into(),
                }
            )),
            Notice::Other(t) => Some(format!("mpirun: {t}")),
            Notice::LostHost(host) => Some(format!(
                "host {host} was cut off mid-run: mpirun lost its daemon there (the network or the host failed); the job was ended"
            )),
            Notice::DaemonsFailed => Some(
                "mpirun could not start the job on every host of the hostfile; the job was ended before any measurement".into(),
            ),
            Notice::Unreachable { host, to } => Some(format!(
                "host {host} is unreachable: its daemon could not connect back to mpirun on {to} over TCP (the network, a firewall, or no route)"
            )),
            Notice::RemoteShell { host, line } => Some(format!(
                "host {host} could not be started by the remote shell: '{line}'"
            )),
        }
    }
}

/// Splits mpirun's stderr into lines to pass through and boxed reports to read.
#[derive(Debug, Default)]
pub struct BoxFilter {
    inside: bool,
    lines: Vec<String>,
}

fn is_rule(line: &str) -> bool {
    let t = line.trim_end();
    t.len() >= 40 && t.bytes().all(|b| b == b'-')
}

/// A line as the box filter must see it: mpirun's daemons write to one stream, so a
/// transport's complaint without its newline can land in front of a box's opening
/// rule ("[host][…]btl_tcp.c:559 -----…"); the text before the rule and the rule are
/// then two lines, or the box (a dead rank's report) would go unread.
pub fn unglue(line: &str) -> Vec<&str> {
    let t = line.trim_end();
    let dashes = t.len() - t.trim_end_matches('-').len();
    if dashes >= 40 && dashes < t.len() {
        let (before, rule) = t.split_at(t.len() - dashes);
        if !before.trim().is_empty() {
            return vec![before.trim_end(), rule];
        }
    }
    vec![line]
}

impl BoxFilter {
    /// Feed one line: Some(Ok(line)) to pass through, Some(Err(notice)) when a box
    /// closes, None while inside a box.
    pub fn feed(&mut self, line: &str) -> Option<std::result::Result<String, Notice>> {
        if is_rule(line) {
            if self.inside {
                self.inside = false;
                return Some(Err(parse_box(&std::mem::take(&mut self.lines))));
            }
            self.inside = true;
            return None;
        }
        if self.inside {
            self.lines.push(line.to_string());
            return None;
        }
        Some(Ok(line.to_string()))
    }

    /// An unclosed box at the end of the stream.
    pub fn finish(&mut self) -> Option<Notice> {
        if self.inside && !self.lines.is_empty() {
            self.inside = false;
            return Some(parse_box(&std::mem::take(&mut self.lines)));
        }
        None
    }
}

/// The word after `key` in `text`, as a number (trailing punctuation ignored).
fn number_after<T: std::str::FromStr>(text: &str, key: &str) -> Option<T> {
    let rest = &text[text.find(key)? + key.len()..];
    let word: String = rest
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    word.parse().ok()
}

fn word_after(text: &str, key: &str) -> Option<String> {
    let rest = &text[text.find(key)? + key.len()..];
    rest.split_whitespace().next().map(str::to_string)
}

/// The remote shell's complaint about a host, if `line` is one ("ssh: connect to host
/// h2 port 22: Connection refused", "ssh: Could not resolve hostname h2: …").
pub fn remote_shell(line: &str) -> Option<Notice> {
    let rest = line.trim().strip_prefix("ssh: ")?;
    let host = word_after(rest, "host ").or_else(|| word_after(rest, "hostname "))?;
    Some(Notice::RemoteShell {
        host: host.trim_end_matches(':').to_string(),
        line: line.trim().to_string(),
    })
}

/// srun's report of a task that failed ("srun: error: nlab-h2: task 1: Killed", "…:
/// task 0: Exited with exit code 3") as the notice mpirun's box gives; a task srun
/// terminated itself (`--kill-on-bad-exit` once another failed, or a cancel) is an
/// echo. None for any other line.
pub fn srun_task(line: &str) -> Option<Notice> {
    let rest = line.trim().strip_prefix("srun: error: ")?;
    let (host, rest) = rest.split_once(": task ")?;
    let (rank, what) = rest.split_once(": ")?;
    let rank = rank.trim().parse().ok()?;
    if let Some(code) = what.strip_prefix("Exited with exit code ") {
        let code = code.trim().parse().ok()?;
        return Some(Notice::RankExit { rank, code });
    }
    let signal = match what.trim() {
        "Terminated" => return Some(Notice::Redundant),
        "Killed" => libc::SIGKILL,
        "Segmentation fault" => libc::SIGSEGV,
        "Aborted" => libc::SIGABRT,
        "Bus error" => libc::SIGBUS,
        _ => return None,
    };
    Some(Notice::RankSignal {
        rank,
        host: host.trim().to_string(),
        signal,
        name: what.trim().to_string(),
    })
}

/// Read one boxed report.
pub fn parse_box(lines: &[String]) -> Notice {
    let text = lines
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if text.contains("unable to reliably start one or more daemons") {
        return Notice::DaemonsFailed;
    }
    if text.contains("lost communication with a remote daemon") {
        let host = text
            .split_once("Remote daemon")
            .and_then(|(_, r)| word_after(r, " on node "));
        return Notice::LostHost(host.unwrap_or_else(|| "?".into()));
    }
    if text.contains("does not know how to route a message") {
        return Notice::Redundant;
    }
    // A rank's TCP transport failing to reach a peer: under srun, what a rank still
    // running says when its peer has died (held as a transport line, see launch).
    if text.contains("failed to TCP connect to a peer MPI process") {
        return Notice::Transport(text);
    }
    if text.contains("unable to complete a TCP connection") {
        if let Some(host) = word_after(&text, "Local host:") {
            let to = word_after(&text, "Remote host:").unwrap_or_else(|| "?".into());
            return Notice::Unreachable { host, to };
        }
    }
    if text.contains("exited on signal") {
        if let (Some(rank), Some(signal)) = (
            number_after(&text, "process rank"),
            number_after(&text, "exited on signal"),
        ) {
            let name = text
                .split_once("exited on signal")
                .and_then(|(_, r)| r.split_once('(')?.1.split_once(')'))
                .map(|(n, _)| n.to_string())
                .unwrap_or_default();
            return Notice::RankSignal {
                rank,
                host: word_after(&text, " on node ").unwrap_or_else(|| "?".into()),
                signal,
                name,
            };
        }
    }
    if text.contains("MPI_ABORT was invoked") {
        if let (Some(rank), Some(code)) = (
            number_after(&text, "invoked on rank"),
            number_after(&text, "errorcode"),
        ) {
            return Notice::Abort { rank, code };
        }
    }
    if text.contains("exited with non-zero status") {
        // "Process name: [[15384,1],1] Exit code: 2"
        let rank = text
            .split_once("Process name:")
            .and_then(|(_, r)| r.split_once("],")?.1.split_once(']'))
            .and_then(|(n, _)| n.trim().parse().ok());
        if let (Some(rank), Some(code)) = (rank, number_after(&text, "Exit code:")) {
            return Notice::RankExit { rank, code };
        }
    }
    if text.contains("not enough slots available") {
        return Notice::NotEnoughSlots;
    }
    if text.contains("returned a non-zero exit code")
        || text.contains("has exited due to process rank")
    {
        return Notice::Redundant;
    }
    Notice::Other(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: &str = "--------------------------------------------------------------------------";

    fn run(text: &str) -> (Vec<String>, Vec<Notice>) {
        let mut f = BoxFilter::default();
        let (mut pass, mut notes) = (vec![], vec![]);
        for l in text.lines().flat_map(unglue) {
            match f.feed(l) {
                Some(Ok(p)) => pass.push(p),
                Some(Err(n)) => notes.push(n),
                None => {}
            }
        }
        notes.extend(f.finish());
        (pass, notes)
    }

    #[test]
    fn a_box_whose_opening_rule_is_glued_to_a_transport_line_is_still_read() {
        // As seen across two emulated hosts: the remote daemon's complaint had no
        // newline before mpirun's box.
        let text = format!(
            "[nlab-h1][[19206,1],0][btl_tcp.c:559:mca_btl_tcp_recv_blocking] {RULE}\nPrimary job  terminated normally, but 1 process returned\na non-zero exit code. Per user-direction, the job has been aborted.\n{RULE}\n{RULE}\nmpirun noticed that process rank 1 with PID 4023 on node nlab-h2 exited on signal 9 (Killed).\n{RULE}\n"
        );
        let (pass, notes) = run(&text);
        assert_eq!(
            pass,
            vec!["[nlab-h1][[19206,1],0][btl_tcp.c:559:mca_btl_tcp_recv_blocking]"]
        );
        assert!(
            notes.contains(&Notice::RankSignal {
                rank: 1,
                host: "nlab-h2".into(),
                signal: 9,
                name: "Killed".into()
            }),
            "{notes:?}"
        );
        assert_eq!(unglue("plain line"), vec!["plain line"]);
        assert_eq!(unglue(RULE), vec![RULE]);
    }

    #[test]
    fn a_killed_rank_becomes_one_notice_naming_rank_host_and_signal() {
        // Open MPI 4.1.4's words, as this machine printed them.
        let text = format!(
            "rank output\n{RULE}\nPrimary job  terminated normally, but 1 process returned\na non-zero exit code. Per user-direction, the job has been aborted.\n{RULE}\n{RULE}\nmpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed).\n{RULE}\n"
        );
        let (pass, notes) = run(&text);
        assert_eq!(pass, ["rank output"]);
        assert_eq!(notes[0], Notice::Redundant);
        assert_eq!(
            notes[1],
            Notice::RankSignal {
                rank: 1,
                host: "vm".into(),
                signal: 9,
                name: "Killed".into()
            }
        );
        assert_eq!(
            notes[1].message(2, None).unwrap(),
            "rank 1 on host vm died on signal 9 (Killed); the job was ended"
        );
    }

    #[test]
    fn srun_reports_of_failed_tasks_become_the_notices_mpirun_gives() {
        assert_eq!(
            srun_task("srun: error: nlab-h2: task 1: Killed"),
            Some(Notice::RankSignal {
                rank: 1,
                host: "nlab-h2".into(),
                signal: 9,
                name: "Killed".into()
            })
        );
        assert_eq!(
            srun_task("srun: error: n1: task 0: Exited with exit code 3"),
            Some(Notice::RankExit { rank: 0, code: 3 })
        );
        assert_eq!(
            srun_task("srun: error: n1: task 0: Terminated"),
            Some(Notice::Redundant)
        );
        for other in [
            "srun: error: n1: tasks 0-1: Exited with exit code 2",
            "srun: Force Terminated StepId=1.0",
            "rank 0: srun: error: x",
        ] {
            assert_eq!(srun_task(other), None, "{other}");
        }
    }

    #[test]
    fn a_box_of_a_failed_tcp_connect_to_a_peer_is_a_transport_line() {
        let text = format!("{RULE}\nWARNING: Open MPI failed to TCP connect to a peer MPI process.  This\nshould not happen.\n\n  Local host: nlab-h1\n  Message:    connect() to 10.251.0.2:1024 failed\n{RULE}\n");
        let (pass, notes) = run(&text);
        assert!(pass.is_empty(), "{pass:?}");
        assert!(
            matches!(&notes[..], [Notice::Transport(t)] if t.contains("Local host: nlab-h1")),
            "{notes:?}"
        );
    }

    #[test]
    fn transport_complaints_are_told_from_rank_output() {
        assert!(is_transport(
            "[vm:12345] Read -1, expected 65536, errno = 14"
        ));
        assert!(is_transport("[vm][[1,1],0][btl_tcp_frag.c:241:mca_btl_tcp_frag_recv] mca_btl_tcp_frag_recv: readv failed: Connection reset by peer (104)"));
        assert!(!is_transport("mpi 3/4"));
        assert!(!is_transport("numalab: error: expected a size"));
    }

    #[test]
    fn exits_aborts_and_slots_are_read() {
        let exit = format!("{RULE}\nmpirun detected that one or more processes exited with non-zero status, thus causing\nthe job to be terminated. The first process to do so was:\n\n  Process name: [[15384,1],3]\n  Exit code:    2\n{RULE}\n");
        assert_eq!(run(&exit).1, [Notice::RankExit { rank: 3, code: 2 }]);
        let abort = format!("{RULE}\nMPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD\nwith errorcode 2.\n\nNOTE: invoking MPI_ABORT causes Open MPI to kill all MPI processes.\n{RULE}\n");
        assert_eq!(run(&abort).1, [Notice::Abort { rank: 1, code: 2 }]);
        let slots = format!("{RULE}\nThere are not enough slots available in the system to satisfy the 4\nslots that were requested by the application:\n{RULE}\n");
        assert_eq!(run(&slots).1, [Notice::NotEnoughSlots]);
        let other = format!("{RULE}\nmpirun was unable to launch the specified application\n\nExecutable: /x\n{RULE}\n");
        assert_eq!(
            run(&other).1,
            [Notice::Other(
                "mpirun was unable to launch the specified application Executable: /x".into()
            )]
        );
    }
}

#[cfg(test)]
mod host_tests {
    use super::*;

    #[test]
    fn a_host_the_job_could_not_start_on_is_named() {
        let n = remote_shell("ssh: connect to host nlab-h2 port 22: Connection refused").unwrap();
        assert_eq!(
            n.message(2, None).unwrap(),
            "host nlab-h2 could not be started by the remote shell: 'ssh: connect to host nlab-h2 port 22: Connection refused'"
        );
        let n = remote_shell("ssh: Could not resolve hostname h9: Name or service not known");
        assert!(matches!(n, Some(Notice::RemoteShell { host, .. }) if host == "h9"));
        assert_eq!(remote_shell("numalab: error: x"), None);
        let lines: Vec<String> = [
            "A process or daemon was unable to complete a TCP connection",
            "to another process:",
            "  Local host:    nlab-h2",
            "  Remote host:   nlab-head",
        ]
        .map(String::from)
        .to_vec();
        let n = parse_box(&lines);
        assert!(n.is_death());
        assert!(n.message(2, None).unwrap().starts_with(
            "host nlab-h2 is unreachable: its daemon could not connect back to mpirun on nlab-head"
        ));
        let lost: Vec<String> = [
            "ORTE has lost communication with a remote daemon.",
            "  HNP daemon   : [[28134,0],0] on node nlab-head",
            "  Remote daemon: [[28134,0],2] on node nlab-h2",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(parse_box(&lost), Notice::LostHost("nlab-h2".into()));
        let d = parse_box(&["ORTE was unable to reliably start one or more daemons.".into()]);
        assert_eq!(d, Notice::DaemonsFailed);
    }
}
