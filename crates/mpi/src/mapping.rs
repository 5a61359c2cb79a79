//! How a job's ranks are spread over hosts and inside each host: `--ranks-per-host N`
//! and `--map-by host|node|core`, checked against the hostfile and this machine before
//! anything starts, and said to mpirun in its own flags (numalab still pins each rank
//! itself inside its host, with the placement language).

use crate::error::{Error, Result};
use crate::hostfile::HostLine;
use numalab_topo::ThreadSpec;
use serde::{Deserialize, Serialize};
use std::ffi::OsString;

/// What `--map-by` chooses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MapBy {
    /// Consecutive ranks on different hosts (round robin over the hostfile).
    Host,
    /// Each host filled in turn; inside a host, consecutive ranks on different NUMA nodes.
    Node,
    /// Each host filled in turn; inside a host, one rank per core (compact).
    Core,
}

/// What `--map-by` takes, each value with its meaning.
pub const MAP_VALID: &str = "valid: host (consecutive ranks on different hosts), node (each host filled in turn, its ranks spread over its NUMA nodes), core (each host filled in turn, one rank per core)";

impl MapBy {
    /// Parse `--map-by`'s value, or one line naming it and what is valid.
    pub fn parse(s: &str) -> Result<MapBy> {
        match s.trim().to_ascii_lowercase().as_str() {
            "host" => Ok(MapBy::Host),
            "node" | "numa" => Ok(MapBy::Node),
            "core" => Ok(MapBy::Core),
            _ => Err(Error::Usage(format!("invalid --map-by '{s}': {MAP_VALID}"))),
        }
    }

    /// The value as the flag takes it.
    pub fn name(self) -> &'static str {
        match self {
            MapBy::Host => "host",
            MapBy::Node => "node",
            MapBy::Core => "core",
        }
    }

    /// Where a host's ranks go, in the placement language, when the mapping says.
    pub fn within_host(self) -> Option<&'static str> {
        match self {
            MapBy::Host => None,
            MapBy::Node => Some("scatter:node"),
            MapBy::Core => Some("compact"),
        }
    }
}

/// The job's spread: ranks per host and the mapping.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Mapping {
    /// `--ranks-per-host`.
    pub ranks_per_host: Option<usize>,
    /// `--map-by`.
    pub map_by: Option<MapBy>,
}

impl Mapping {
    /// mpirun's flags for it (Open MPI's names: its "node" is a host).
    pub fn mpirun_args(&self) -> Vec<OsString> {
        let s = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        match (self.ranks_per_host, self.map_by) {
            (Some(n), by) => {
                let mut a = s(&["--map-by", &format!("ppr:{n}:node")]);
                if by == Some(MapBy::Host) {
                    a.extend(s(&["--rank-by", "node"]));
                }
                a
            }
            (None, Some(MapBy::Host)) => s(&["--map-by", "node"]),
            (None, Some(_)) => s(&["--map-by", "slot"]),
            (None, None) => Vec::new(),
        }
    }

    /// The placement spec for a host's ranks: the user's `--rank-cpus`, or the
    /// mapping's; both given and different is refused.
    pub fn rank_cpus(&self, given: &str) -> Result<ThreadSpec> {
        let mine = self.map_by.and_then(MapBy::within_host);
        let spec = match mine {
            Some(m) if given != "compact" && given != m => {
                return Err(Error::Usage(format!(
                    "invalid --map-by '{}': it places each host's ranks ({m}), as --rank-cpus '{given}' does; give one of them",
                    self.map_by.map(MapBy::name).unwrap_or_default()
                )))
            }
            Some(m) => m,
            None => given,
        };
        Ok(ThreadSpec::parse(spec)?)
    }

    /// Ranks for a job on `hosts` hosts when `--ranks` is not given.
    pub fn ranks(&self, hosts: usize) -> Option<usize> {
        self.ranks_per_host.map(|n| n * hosts)
    }

    /// Check the spread before anything starts: `ranks` ranks on the hostfile's
    /// `hosts` (None: this machine alone, with `cpus` CPUs), `is_local` telling this
    /// machine's names.
    pub fn check(
        &self,
        ranks: usize,
        hosts: Option<&[HostLine]>,
        cpus: usize,
        is_local: &dyn Fn(&str) -> bool,
    ) -> Result<()> {
        let Some(n) = self.ranks_per_host else {
            return Ok(());
        };
        let bad = |why: String| {
            Err(Error::Usage(format!(
                "invalid --ranks-per-host '{n}': {why}"
            )))
        };
        if n == 0 {
            return bad("at least 1 rank per host".into());
        }
        let count = hosts.map_or(1, <[HostLine]>::len);
        if ranks != n * count {
            return bad(format!(
                "with --ranks {ranks} on {count} host{}, give --ranks {} or drop --ranks",
                if count == 1 { "" } else { "s" },
                n * count
            ));
        }
        let Some(hosts) = hosts else {
            return match n > cpus {
                true => bad(format!(
                    "this machine has {}",
                    numalab_results::words::count(cpus as u64, "CPU")
                )),
                false => Ok(()),
            };
        };
        for h in hosts {
            let room = h.slots.or_else(|| is_local(&h.host).then_some(cpus));
            if let Some(room) = room.filter(|r| n > *r) {
                let what = match h.slots {
                    Some(_) => format!("slots={room} in the hostfile"),
                    None => numalab_results::words::count(room as u64, "CPU"),
                };
                return bad(format!("host '{}' (line {}) has {what}", h.host, h.line));
            }
        }
        Ok(())
    }

    /// How the placement section says it (None: neither flag given).
    pub fn said(&self) -> Option<String> {
        let parts: Vec<String> = [
            self.ranks_per_host.map(|n| format!("--ranks-per-host {n}")),
            self.map_by.map(|m| format!("--map-by {}", m.name())),
        ]
        .into_iter()
        .flatten()
        .collect();
        (!parts.is_empty()).then(|| parts.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strs(v: Vec<OsString>) -> Vec<String> {
        v.into_iter().map(|s| s.into_string().unwrap()).collect()
    }

    fn lines(text: &str) -> Vec<HostLine> {
        crate::hostfile::parse(text).unwrap()
    }

    #[test]
    fn each_spread_has_its_mpirun_flags() {
        let m = |n, by| Mapping {
            ranks_per_host: n,
            map_by: by,
        };
        assert!(m(None, None).mpirun_args().is_empty());
        assert_eq!(
            strs(m(None, Some(MapBy::Host)).mpirun_args()),
            ["--map-by", "node"]
        );
        assert_eq!(
            strs(m(None, Some(MapBy::Core)).mpirun_args()),
            ["--map-by", "slot"]
        );
        assert_eq!(
            strs(m(Some(2), None).mpirun_args()),
            ["--map-by", "ppr:2:node"]
        );
        assert_eq!(
            strs(m(Some(2), Some(MapBy::Host)).mpirun_args()),
            ["--map-by", "ppr:2:node", "--rank-by", "node"]
        );
        assert_eq!(m(Some(3), None).ranks(2), Some(6));
        assert_eq!(
            m(Some(1), Some(MapBy::Node)).said().unwrap(),
            "--ranks-per-host 1 --map-by node"
        );
    }

    #[test]
    fn map_by_names_what_is_valid_and_places_inside_a_host() {
        assert_eq!(MapBy::parse("Host").unwrap(), MapBy::Host);
        let e = MapBy::parse("socket").unwrap_err().to_string();
        assert!(
            e.starts_with("invalid --map-by 'socket': valid: host"),
            "{e}"
        );
        let node = Mapping {
            ranks_per_host: None,
            map_by: Some(MapBy::Node),
        };
        assert_eq!(
            node.rank_cpus("compact").unwrap().to_string(),
            "scatter:node"
        );
        let e = node.rank_cpus("0,1").unwrap_err().to_string();
        assert!(
            e.contains("--rank-cpus '0,1'") && e.contains("give one"),
            "{e}"
        );
        let given = Mapping::default().rank_cpus("0,1").unwrap();
        assert_eq!(given, ThreadSpec::parse("0,1").unwrap());
    }

    #[test]
    fn ranks_per_host_beyond_a_hosts_room_or_the_rank_count_is_refused() {
        let n = |k| Mapping {
            ranks_per_host: Some(k),
            map_by: None,
        };
        let local = |h: &str| h == "me";
        let err = |r: Result<()>| r.unwrap_err().to_string();
        assert!(err(n(0).check(0, None, 2, &local)).contains("at least 1"));
        assert!(err(n(3).check(3, None, 2, &local)).contains("this machine has 2 CPUs"));
        assert!(n(2).check(2, None, 2, &local).is_ok());
        let h = lines("a slots=4\nb slots=1\n");
        let e = err(n(2).check(4, Some(&h), 2, &local));
        assert!(e.contains("host 'b' (line 2) has slots=1"), "{e}");
        let e = err(n(1).check(3, Some(&h), 2, &local));
        assert!(e.contains("give --ranks 2"), "{e}");
        let h = lines("me\nb\n");
        assert!(err(n(4).check(8, Some(&h), 2, &local)).contains("host 'me' (line 1) has 2 CPUs"));
        assert!(n(2).check(4, Some(&h), 2, &local).is_ok());
    }
}
