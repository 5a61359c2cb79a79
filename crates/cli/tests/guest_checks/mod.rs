//! What a multi-node guest's output must show, given its layout: the checks behind
//! tests/guest.rs. Each check records a one-line summary of what the command printed
//! (shown with --nocapture) or a failure; all failures are reported together.

mod advise;
mod observed;
mod records;

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One command's output in the guest.
pub struct Section {
    /// Its stdout.
    pub out: String,
    /// Its stderr.
    pub err: String,
    /// Its exit status.
    pub rc: i32,
    /// Its wall time in the guest, seconds.
    pub secs: u64,
}

/// What a layout file says the guest is.
pub struct Layout {
    /// Each node's CPUs (empty: CPU-less).
    pub cpus: BTreeMap<u32, Vec<u32>>,
    /// SLIT rows.
    pub distances: Vec<Vec<u64>>,
    /// Hops rows.
    pub hops: Vec<Vec<u32>>,
    /// (attribute, initiator node, target node, value).
    pub attrs: Vec<(String, u32, u32, u64)>,
    /// The QEMU arguments, joined.
    pub qemu: String,
    /// Each node's memory tier (memory_tierK's K), where the layout says.
    pub tiers: BTreeMap<u32, u64>,
}

fn cpu_list(s: &str) -> Vec<u32> {
    let mut v = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => v.extend(a.parse::<u32>().unwrap()..=b.parse::<u32>().unwrap()),
            None => v.push(part.parse().unwrap()),
        }
    }
    v
}

impl Layout {
    /// Parse `expect.*` and `qemu:` lines.
    pub fn load(path: &Path) -> Layout {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        let mut l = Layout {
            cpus: BTreeMap::new(),
            distances: Vec::new(),
            hops: Vec::new(),
            attrs: Vec::new(),
            qemu: String::new(),
            tiers: BTreeMap::new(),
        };
        let nums =
            |v: &str| -> Vec<u64> { v.split_whitespace().map(|x| x.parse().unwrap()).collect() };
        for line in text.lines() {
            let Some((key, v)) = line.split_once(':') else {
                continue;
            };
            match key.trim() {
                "qemu" => {
                    l.qemu.push_str(v.trim());
                    l.qemu.push(' ');
                }
                "expect.cpus" => {
                    for item in v.split_whitespace() {
                        let (n, c) = item.split_once('=').unwrap();
                        l.cpus.insert(n.parse().unwrap(), cpu_list(c));
                    }
                }
                "expect.tiers" => {
                    for item in v.split_whitespace() {
                        let (n, t) = item.split_once('=').unwrap();
                        l.tiers.insert(n.parse().unwrap(), t.parse().unwrap());
                    }
                }
                "expect.distances" => l.distances.push(nums(v)),
                "expect.hops" => l.hops.push(nums(v).into_iter().map(|x| x as u32).collect()),
                "expect.attr" => {
                    let w: Vec<&str> = v.split_whitespace().collect();
                    l.attrs.push((
                        w[0].to_string(),
                        w[1].parse().unwrap(),
                        w[2].parse().unwrap(),
                        w[3].parse().unwrap(),
                    ));
                }
                _ => {}
            }
        }
        l
    }

    /// Every node.
    pub fn nodes(&self) -> Vec<u32> {
        self.cpus.keys().copied().collect()
    }

    /// Nodes with CPUs.
    pub fn cpu_nodes(&self) -> Vec<u32> {
        self.cpus
            .iter()
            .filter(|(_, c)| !c.is_empty())
            .map(|(n, _)| *n)
            .collect()
    }

    /// The node a CPU belongs to.
    pub fn node_of(&self, cpu: u32) -> Option<u32> {
        self.cpus
            .iter()
            .find(|(_, c)| c.contains(&cpu))
            .map(|(n, _)| *n)
    }

    /// Hops between two nodes.
    pub fn hop(&self, a: u32, b: u32) -> u32 {
        self.hops[a as usize][b as usize]
    }

    /// Distance between two nodes.
    pub fn dist(&self, a: u32, b: u32) -> u64 {
        self.distances[a as usize][b as usize]
    }

    /// The node numalab's `hops:K` from `from` picks: nearest by distance, then lowest.
    pub fn at_hops(&self, from: u32, k: u32) -> Option<u32> {
        self.nodes()
            .into_iter()
            .filter(|&n| self.hop(from, n) == k)
            .min_by_key(|&n| (self.dist(from, n), n))
    }

    /// The distinct hop counts from `from` to `to_nodes`.
    pub fn hop_set(&self, from: u32, to_nodes: &[u32]) -> BTreeSet<u32> {
        to_nodes.iter().map(|&n| self.hop(from, n)).collect()
    }
}

/// The checks of one guest run.
pub struct Checks<'a> {
    name: &'a str,
    l: &'a Layout,
    secs: &'a BTreeMap<String, Section>,
    lines: Vec<String>,
    failures: Vec<String>,
}

impl<'a> Checks<'a> {
    /// Checks of `secs` against `l`.
    pub fn new(name: &'a str, l: &'a Layout, secs: &'a BTreeMap<String, Section>) -> Self {
        Checks {
            name,
            l,
            secs,
            lines: Vec::new(),
            failures: Vec::new(),
        }
    }

    /// A section that ran with exit status `rc`, or a failure.
    fn section(&mut self, name: &str, rc: i32) -> Option<&'a Section> {
        let Some(s) = self.secs.get(name) else {
            self.fail(name, "missing from the console".into());
            return None;
        };
        if s.rc != rc {
            let err = s.err.lines().last().unwrap_or("").to_string();
            self.fail(name, format!("exit {} (expected {rc}): {err}", s.rc));
            return None;
        }
        Some(s)
    }

    /// A section's stdout as JSON records.
    fn records(&mut self, name: &str) -> Option<Vec<Value>> {
        let s = self.section(name, 0)?;
        match serde_json::from_str::<Value>(&s.out) {
            Ok(Value::Array(v)) => Some(v),
            Ok(_) => {
                self.fail(name, "stdout is not a JSON array".into());
                None
            }
            Err(e) => {
                self.fail(name, format!("stdout is not JSON: {e}"));
                None
            }
        }
    }

    fn fail(&mut self, what: &str, why: String) {
        self.failures.push(format!("{what}: {why}"));
    }

    /// `cond` or a failure; true when it held.
    fn expect(&mut self, what: &str, cond: bool, why: impl FnOnce() -> String) -> bool {
        if !cond {
            self.fail(what, why());
        }
        cond
    }

    fn said(&mut self, what: &str, line: String) {
        let secs = self.secs.get(what).map(|s| s.secs).unwrap_or(0);
        self.lines.push(format!("{what} ({secs} s): {line}"));
    }

    /// Every check.
    pub fn all(&mut self) {
        self.topo();
        self.plans();
        self.matrices();
        self.intervene();
        self.invalidate();
        self.suites();
        self.record();
        self.monitor();
        self.survey();
        self.advise();
    }

    /// Print the summary lines; fail with every failure.
    pub fn finish(self) {
        for l in &self.lines {
            eprintln!("guest {}: {l}", self.name);
        }
        assert!(
            self.failures.is_empty(),
            "guest {}: {} failure(s):\n{}",
            self.name,
            self.failures.len(),
            self.failures.join("\n")
        );
    }
}
