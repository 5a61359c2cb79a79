//! The user's `--hostfile`, read in Open MPI's syntax (`host [slots=N] [max_slots=N]`,
//! `#` comments) and its hosts' names resolved before mpirun starts: mpirun's own
//! words for an empty or malformed file, and ssh's for a host that does not resolve,
//! are several lines of another program's text and the wrong exit status.

use crate::error::{Error, Result};
use std::path::Path;

/// One host line of a hostfile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostLine {
    /// Line number, from 1.
    pub line: usize,
    /// The host's name or address (without a `user@`).
    pub host: String,
    /// Its `slots=` value, if given.
    pub slots: Option<usize>,
}

const EXAMPLE: &str = "one host per line, e.g. 'node1 slots=4'";

/// Keys Open MPI reads as a host's slot count, and as its maximum.
const SLOT_KEYS: [&str; 4] = ["slots", "count", "cpu", "cpus"];
const MAX_KEYS: [&str; 4] = ["max_slots", "max-slots", "slots_max", "slots-max"];

fn host_name_ok(h: &str) -> bool {
    !h.is_empty()
        && h.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._:[]%".contains(c))
}

/// One line's host, or why it is not one (None: a blank or comment line).
fn parse_line(text: &str) -> Option<std::result::Result<(String, Option<usize>), String>> {
    let body = text.split('#').next().unwrap_or("").trim();
    let mut words = body.split_whitespace();
    let first = words.next()?;
    let host = first.rsplit('@').next().unwrap_or(first);
    if first.contains('=') || !host_name_ok(host) {
        return Some(Err(format!(
            "'{first}' is not a host name (a line starts with the host, then slots=N)"
        )));
    }
    let (mut slots, mut max) = (None, None);
    for w in words {
        let Some((k, v)) = w.split_once('=') else {
            return Some(Err(format!(
                "'{w}' is not KEY=VALUE (slots=N, max_slots=N)"
            )));
        };
        let num = v.parse::<usize>().ok().filter(|n| *n > 0);
        match (k, num) {
            (k, Some(n)) if SLOT_KEYS.contains(&k) => slots = Some(n),
            (k, Some(n)) if MAX_KEYS.contains(&k) => max = Some(n),
            (k, None) if SLOT_KEYS.contains(&k) || MAX_KEYS.contains(&k) => {
                return Some(Err(format!("'{w}': {k} takes a whole number above 0")))
            }
            ("user" | "username" | "user_name" | "user-name", _) if !v.is_empty() => {}
            _ => {
                return Some(Err(format!(
                    "unknown key '{k}' (valid: slots=N, max_slots=N)"
                )))
            }
        }
    }
    if let (Some(s), Some(m)) = (slots, max) {
        if m < s {
            return Some(Err(format!("max_slots={m} is below slots={s}")));
        }
    }
    Some(Ok((host.to_string(), slots)))
}

/// The host lines of a hostfile's text, or the first bad line: (line, its text, why).
pub fn parse(text: &str) -> std::result::Result<Vec<HostLine>, (usize, String, String)> {
    let mut hosts = Vec::new();
    for (i, l) in text.lines().enumerate() {
        match parse_line(l) {
            None => {}
            Some(Ok((host, slots))) => hosts.push(HostLine {
                line: i + 1,
                host,
                slots,
            }),
            Some(Err(why)) => return Err((i + 1, l.trim().to_string(), why)),
        }
    }
    Ok(hosts)
}

/// Read and check the hostfile at `path`: its hosts, or a usage error naming the file
/// (and the line) when it cannot be read, holds no host or has a malformed line.
pub fn read(path: &Path) -> Result<Vec<HostLine>> {
    let bad = |why: String| Error::Usage(format!("invalid --hostfile '{}': {why}", path.display()));
    let text = numalab_results::outpath::read_input_bytes(path)
        .map_err(|e| bad(format!("{}; {EXAMPLE}", e.why)))?;
    let text = String::from_utf8(text).map_err(|_| bad(format!("not text; {EXAMPLE}")))?;
    let hosts =
        parse(&text).map_err(|(n, l, why)| bad(format!("line {n} '{l}': {why}; {EXAMPLE}")))?;
    if hosts.is_empty() {
        return Err(bad(format!("it names no host; {EXAMPLE}")));
    }
    if let Some(why) = twice(&hosts, &is_local) {
        return Err(bad(format!("{why}; {EXAMPLE}")));
    }
    Ok(hosts)
}

/// Why a host is named twice, if one is: the same name on two lines, or two names for
/// this machine (`local`), which mpirun would treat as two machines and double-book.
fn twice(hosts: &[HostLine], local: &dyn Fn(&str) -> bool) -> Option<String> {
    for (i, a) in hosts.iter().enumerate() {
        for b in &hosts[..i] {
            if a.host.eq_ignore_ascii_case(&b.host) {
                return Some(format!(
                    "host '{}' is named on lines {} and {} (give it once, with slots=N)",
                    a.host, b.line, a.line
                ));
            }
            if local(&a.host) && local(&b.host) {
                return Some(format!(
                    "lines {} '{}' and {} '{}' both name this machine (give it once, with slots=N)",
                    b.line, b.host, a.line, a.host
                ));
            }
        }
    }
    None
}

/// Names that are this machine, which need no look-up.
pub fn is_local(host: &str) -> bool {
    let me = crate::env::hostname();
    let short = me.split('.').next().unwrap_or(&me).to_string();
    host == "localhost"
        || host.starts_with("127.")
        || host == "::1"
        || host.eq_ignore_ascii_case(&me)
        || host.eq_ignore_ascii_case(&short)
}

/// Why `host` does not resolve, if it does not (getaddrinfo).
fn unresolved(host: &str) -> Option<String> {
    let name = std::ffi::CString::new(host.trim_matches(['[', ']'])).ok()?;
    let mut res: *mut libc::addrinfo = std::ptr::null_mut();
    // SAFETY: name is NUL-terminated; hints may be null; res receives a list that is
    // freed below when the call succeeded.
    let rc =
        unsafe { libc::getaddrinfo(name.as_ptr(), std::ptr::null(), std::ptr::null(), &mut res) };
    if rc == 0 {
        // SAFETY: res came from a successful getaddrinfo.
        unsafe { libc::freeaddrinfo(res) };
        return None;
    }
    // SAFETY: gai_strerror returns a static NUL-terminated string for any code.
    let why = unsafe { std::ffi::CStr::from_ptr(libc::gai_strerror(rc)) };
    Some(why.to_string_lossy().into_owned())
}

/// Every host of the hostfile at `path` resolves (this machine's names need no
/// look-up): else a usage error naming the file, the line and the host (exit 2).
pub fn check_hosts(path: &Path) -> Result<()> {
    for h in read(path)? {
        if is_local(&h.host) {
            continue;
        }
        if let Some(why) = unresolved(&h.host) {
            return Err(Error::Usage(format!(
                "cannot reach host '{}' of --hostfile '{}' (line {}): its name does not resolve ({why})",
                h.host,
                path.display(),
                h.line
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_mpi_syntax_is_read_with_comments_and_users() {
        let text = "# cluster\n\nnode1 slots=4 max_slots=8  # big\nme@node2\tcount=2\n10.0.0.3\n";
        let h = parse(text).unwrap();
        let got: Vec<_> = h
            .iter()
            .map(|h| (h.line, h.host.as_str(), h.slots))
            .collect();
        assert_eq!(
            got,
            [
                (3, "node1", Some(4)),
                (4, "node2", Some(2)),
                (5, "10.0.0.3", None)
            ]
        );
    }

    #[test]
    fn a_malformed_line_is_named_with_its_number_and_reason() {
        for (text, line, why) in [
            ("node1\nnode2 slots=x\n", 2, "slots takes a whole number"),
            ("node1 slots=0\n", 1, "slots takes a whole number"),
            ("slots=4\n", 1, "is not a host name"),
            ("node1 4\n", 1, "is not KEY=VALUE"),
            ("node1 colour=red\n", 1, "unknown key 'colour'"),
            ("node1 slots=4 max_slots=2\n", 1, "below slots=4"),
            ("no/de\n", 1, "is not a host name"),
        ] {
            let (n, _, w) = parse(text).unwrap_err();
            assert_eq!(n, line, "{text:?}");
            assert!(w.contains(why), "{text:?}: {w}");
        }
    }

    #[test]
    fn a_host_named_twice_is_refused_naming_both_lines() {
        let h = parse("node1\nnode2 slots=2\nNODE1\n").unwrap();
        let why = twice(&h, &|_| false).unwrap();
        assert!(why.contains("'NODE1' is named on lines 1 and 3"), "{why}");
        let h = parse("localhost\nnode2\n127.0.0.1 slots=2\n").unwrap();
        let why = twice(&h, &|n| n == "localhost" || n.starts_with("127.")).unwrap();
        assert!(why.contains("both name this machine"), "{why}");
        assert!(twice(&parse("a\nb\n").unwrap(), &|_| false).is_none());
    }

    #[test]
    fn local_names_need_no_lookup_and_an_invalid_domain_does_not_resolve() {
        assert!(is_local("localhost") && is_local(&crate::env::hostname()));
        assert!(unresolved("localhost").is_none());
        assert!(unresolved("no-such-host.invalid").is_some());
    }
}
