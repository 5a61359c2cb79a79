//! Composite coherence states (snbench Table 4.1) and what preparing each one takes.

use crate::kernel::Access;
use serde::{Deserialize, Serialize};

/// The state of the test lines when the requestor's timed pass starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LineState {
    /// No preparation: the chase runs over and over and lines stay wherever the
    /// requestor's own previous pass left them (the lmbench memory-hierarchy curve).
    Warm,
    /// Unowned: written back and flushed from every cache before each pass.
    Uown,
    /// Shared: flushed, then K helper threads read every line.
    Shrd(usize),
    /// Clean-exclusive hit: flushed, then one helper reads every line (it holds them E).
    Cexh,
    /// Clean-exclusive miss: as cexh, then the helper streams through an eviction
    /// buffer twice its private cache so the lines leave its private caches unmodified.
    Cexm,
    /// Dirty-exclusive downgrade: a helper holds the lines Modified; the requestor reads.
    Dexd,
    /// Dirty-exclusive transfer: a helper holds the lines Modified; the requestor writes.
    Dext,
}

/// The request the requestor makes (snbench Table 4.2): its kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Request {
    /// Loads: the `walk` kernel.
    Read,
    /// Store to a line not held: the `modify` kernel.
    Rdex,
    /// Store to a line the requestor shares: it reads every line after the helpers,
    /// untimed, then runs the `modify` kernel.
    Upgrade,
}

impl Request {
    /// Parse `read`, `rdex` or `upgrade`.
    pub fn parse(s: &str) -> Result<Request, String> {
        match s {
            "read" => Ok(Request::Read),
            "rdex" | "modify" => Ok(Request::Rdex),
            "upgrade" | "upgrd" => Ok(Request::Upgrade),
            _ => Err(format!(
                "invalid kernel '{s}': expected read, rdex or upgrade"
            )),
        }
    }

    /// Name as the CLI spells it.
    pub fn name(self) -> &'static str {
        match self {
            Request::Read => "read",
            Request::Rdex => "rdex",
            Request::Upgrade => "upgrade",
        }
    }

    /// The kernel's access.
    pub fn access(self) -> Access {
        match self {
            Request::Read => Access::Read,
            Request::Rdex | Request::Upgrade => Access::Modify,
        }
    }
}

impl LineState {
    /// Parse `warm`, `uown`, `shrd:K`, `cexh`, `cexm`, `dexd` or `dext`.
    pub fn parse(s: &str) -> Result<LineState, String> {
        let bad = || {
            format!("invalid state '{s}': expected warm, uown, shrd:K (K ≥ 1), cexh, cexm, dexd or dext")
        };
        Ok(match s {
            "warm" => LineState::Warm,
            "uown" => LineState::Uown,
            "shrd" => LineState::Shrd(1),
            "cexh" => LineState::Cexh,
            "cexm" => LineState::Cexm,
            "dexd" => LineState::Dexd,
            "dext" => LineState::Dext,
            _ => match s.strip_prefix("shrd:").map(str::parse::<usize>) {
                Some(Ok(k)) if k >= 1 => LineState::Shrd(k),
                _ => return Err(bad()),
            },
        })
    }

    /// Name as the CLI spells it.
    pub fn name(self) -> String {
        match self {
            LineState::Warm => "warm".into(),
            LineState::Uown => "uown".into(),
            LineState::Shrd(k) => format!("shrd:{k}"),
            LineState::Cexh => "cexh".into(),
            LineState::Cexm => "cexm".into(),
            LineState::Dexd => "dexd".into(),
            LineState::Dext => "dext".into(),
        }
    }

    /// Helper threads the state needs.
    pub fn helpers(self) -> usize {
        match self {
            LineState::Warm | LineState::Uown => 0,
            LineState::Shrd(k) => k,
            _ => 1,
        }
    }

    /// Whether lines are prepared (and the requestor's caches cleared) before every pass.
    pub fn prepared(self) -> bool {
        self != LineState::Warm
    }

    /// The request a state implies when the user names none.
    pub fn default_request(self) -> Request {
        match self {
            LineState::Dext => Request::Rdex,
            _ => Request::Read,
        }
    }

    /// Check that the state and request make the transaction they name.
    pub fn check_request(self, r: Request) -> Result<(), String> {
        match (self, r) {
            (LineState::Dexd, Request::Rdex | Request::Upgrade) => Err(format!(
                "invalid kernel '{}' for state dexd: a dirty-exclusive downgrade is a READ; use --kernel read, or --state dext for an ownership transfer",
                r.name()
            )),
            (LineState::Dext, Request::Read | Request::Upgrade) => Err(format!(
                "invalid kernel '{}' for state dext: a dirty-exclusive transfer is an RDEX; use --kernel rdex, or --state dexd for a downgrade",
                r.name()
            )),
            (s, Request::Upgrade) if !matches!(s, LineState::Shrd(_)) => Err(format!(
                "invalid kernel 'upgrade' for state {}: an upgrade needs lines the requestor shares; use --state shrd:K",
                s.name()
            )),
            _ => Ok(()),
        }
    }

    /// How the state is produced, in words, for the record.
    pub fn how(self) -> String {
        match self {
            LineState::Warm => "no preparation; timed passes follow an untimed warm-up pass over the same chase".into(),
            LineState::Uown => "before each pass every test line is flushed (written back and invalidated in all caches)".into(),
            LineState::Shrd(k) => format!(
                "before each pass every test line is flushed, then {} read every line{}",
                numalab_results::words::count(k as u64, "helper thread"),
                if k == 1 { " (with one sharer x86 caches usually hold the line Exclusive, as in cexh)" } else { "" }
            ),
            LineState::Cexh => "before each pass every test line is flushed, then one helper reads every line (Exclusive in its cache)".into(),
            LineState::Cexm => "best effort: before each pass every test line is flushed, one helper reads every line, then reads an eviction buffer twice its private (L2) cache so the clean lines leave its private caches; where they end (shared L3, memory) depends on the cache hierarchy".into(),
            LineState::Dexd | LineState::Dext => "before each pass every test line is flushed, then one helper stores to every line (Modified in its cache)".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_names_round_trip() {
        for s in [
            "warm", "uown", "shrd:1", "shrd:3", "cexh", "cexm", "dexd", "dext",
        ] {
            assert_eq!(LineState::parse(s).unwrap().name(), s);
        }
        for s in ["shrd:0", "shrd:x", "mod", ""] {
            assert!(LineState::parse(s).unwrap_err().contains(&format!("'{s}'")));
        }
    }

    #[test]
    fn requests_match_states() {
        assert!(LineState::Dexd.check_request(Request::Rdex).is_err());
        assert!(LineState::Dext.check_request(Request::Read).is_err());
        assert!(LineState::Uown.check_request(Request::Upgrade).is_err());
        assert!(LineState::Shrd(2).check_request(Request::Upgrade).is_ok());
        assert_eq!(LineState::Dext.default_request(), Request::Rdex);
        assert_eq!(LineState::Shrd(4).helpers(), 4);
        assert_eq!(LineState::Uown.helpers(), 0);
    }
}
