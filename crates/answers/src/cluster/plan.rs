//! What `numalab cluster` will do: its hosts (one rank each), the latency matrix in
//! rounds of disjoint pairs (a round-robin tournament), the bandwidth matrix in
//! mpiGraph's shift steps, and an estimate that grows with the hosts, not their pairs.

use numalab_mpi::{Error, JobOptions, Result};
use numalab_results::{Provenance, Record};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Record kind of the plan (`--dry-run`).
pub const KIND_PLAN: &str = "cluster-plan";

/// Most hosts `--hosts N` plans for.
pub const MAX_HOSTS: usize = 100_000;

/// Bytes the run keeps per ordered host pair: three cells (latency, send and receive
/// bandwidth), each an `Option<f64>`. No record is made per pair: the matrices are the
/// state, so N hosts hold `N² × BYTES_PER_PAIR` bytes of figures.
pub const BYTES_PER_PAIR: u64 = 3 * std::mem::size_of::<Option<f64>>() as u64;

/// The user's request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Options {
    /// The job: its hostfile (one rank per host).
    #[serde(default)]
    pub job: JobOptions,
    /// Plan for this many hosts without a hostfile (`--dry-run --hosts N`).
    pub hosts: Option<usize>,
    /// Timed 8-byte round trips per pair of hosts.
    pub lat_iterations: usize,
    /// Bytes per message of the bandwidth matrix.
    pub bw_size: u64,
    /// Messages in flight per timed bandwidth sample.
    pub bw_window: usize,
    /// Timed samples per shift step (after one untimed).
    pub bw_iterations: usize,
    /// Timed passes of the allreduce and the barrier.
    pub coll_iterations: usize,
    /// Timed passes of each memory figure per NUMA node.
    pub mem_iterations: usize,
    /// Bytes of the memory check's chase and of each read stream's buffer per core
    /// (None: past every cache, from each host's last-level cache).
    #[serde(default)]
    pub mem_size: Option<u64>,
}

/// The smallest `--mem-size`: a chase needs pages to wander over.
const MIN_MEM_SIZE: u64 = 1 << 20;

impl Default for Options {
    fn default() -> Self {
        Options {
            job: JobOptions::default(),
            hosts: None,
            lat_iterations: 1000,
            bw_size: 1 << 20,
            bw_window: 8,
            bw_iterations: 5,
            coll_iterations: 20,
            mem_iterations: 3,
            mem_size: None,
        }
    }
}

impl Options {
    /// Check what needs no machine: counts of at least 1, `--hosts` within 2 to
    /// [`MAX_HOSTS`] and not beside a hostfile.
    pub fn check(&self) -> Result<()> {
        self.job.check()?;
        for (flag, n) in [
            ("--lat-iterations", self.lat_iterations),
            ("--bw-window", self.bw_window),
            ("--bw-iterations", self.bw_iterations),
            ("--coll-iterations", self.coll_iterations),
            ("--mem-iterations", self.mem_iterations),
        ] {
            if n == 0 {
                return Err(Error::Usage(format!("invalid {flag} '0': at least 1")));
            }
        }
        if let Some(b) = self.mem_size.filter(|b| *b < MIN_MEM_SIZE) {
            return Err(Error::Usage(format!(
                "invalid --mem-size '{b}': at least 1 MiB (the default is past every cache: 8 x the last-level cache, at least 256 MiB)"
            )));
        }
        if self.bw_size == 0 {
            return Err(Error::Usage(
                "invalid --bw-size '0': at least 1 byte".into(),
            ));
        }
        if self.bw_size.saturating_mul(self.bw_window as u64) > 1 << 30 {
            return Err(Error::Usage(format!(
                "invalid --bw-size '{}' with --bw-window {}: at most 1 GiB in flight per host",
                self.bw_size, self.bw_window
            )));
        }
        match (self.hosts, &self.job.hostfile) {
            (Some(n), _) if !(2..=MAX_HOSTS).contains(&n) => Err(Error::Usage(format!(
                "invalid --hosts '{n}': 2 to {MAX_HOSTS} hosts"
            ))),
            (Some(_), Some(h)) => Err(Error::Usage(format!(
                "invalid --hosts with --hostfile '{}': the hostfile names the hosts; --hosts plans for N hosts without one",
                h.display()
            ))),
            _ => Ok(()),
        }
    }
}

/// The resolved plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The hosts, one rank each, in rank order (`host1`… for `--hosts N`).
    pub hosts: Vec<String>,
    /// Whether the hosts came from a hostfile (else `--hosts N`, a plan only, or the
    /// Slurm allocation).
    pub from_hostfile: bool,
    /// The Slurm allocation whose nodes are the hosts (its job id), when run inside
    /// one without a hostfile.
    #[serde(default)]
    pub allocation: Option<String>,
    /// Rounds of disjoint pairs of the latency matrix.
    pub latency_rounds: usize,
    /// Pairs of hosts (each measured once).
    pub pairs: u64,
    /// Shift steps of the bandwidth matrix (everyone sends to rank+D at once).
    pub shift_steps: usize,
    /// The estimate, seconds.
    pub estimate_s: f64,
    /// Bytes of figures the run keeps (N² × [`BYTES_PER_PAIR`]).
    pub state_bytes: u64,
    /// The options.
    pub options: Options,
}

/// Generous figures of a cluster network for the estimate: a small message's one-way
/// time, a stream's rate, one step's fixed cost, and a host's share of the job's start.
const SMALL_MESSAGE: Duration = Duration::from_micros(50);
const STREAM_BYTES_PER_S: f64 = 1e9;
const STEP_COST: Duration = Duration::from_millis(5);
const START_PER_HOST: Duration = Duration::from_millis(20);
/// The memory check of one NUMA node, generously (every host at once).
const MEMORY_PER_NODE: Duration = Duration::from_secs(5);
/// NUMA nodes assumed per host before the hosts are seen.
const NODES_ASSUMED: u32 = 2;

impl Plan {
    /// Resolve: the hostfile's hosts (one rank each), or `--hosts N` named host1…hostN,
    /// or inside a Slurm allocation its nodes (one rank each).
    pub fn resolve(o: &Options) -> Result<Plan> {
        Plan::resolve_in(o, &|k| std::env::var(k).ok())
    }

    /// [`Plan::resolve`] in the environment `get` (pure, for tests).
    pub fn resolve_in(o: &Options, get: &dyn Fn(&str) -> Option<String>) -> Result<Plan> {
        o.check()?;
        let (hosts, from_hostfile) = match (&o.job.hostfile, o.hosts) {
            (Some(f), _) => (hostfile_hosts(f)?, true),
            (None, Some(n)) => ((1..=n).map(|i| format!("host{i}")).collect(), false),
            (None, None) => {
                let (id, hosts) = allocation_hosts(get)?;
                let mut p = Plan::for_hosts(hosts, false, o);
                p.allocation = Some(id);
                return Ok(p);
            }
        };
        Ok(Plan::for_hosts(hosts, from_hostfile, o))
    }

    fn for_hosts(hosts: Vec<String>, from_hostfile: bool, o: &Options) -> Plan {
        let n = hosts.len();
        let mut p = Plan {
            latency_rounds: rounds(n),
            pairs: (n as u64) * (n as u64 - 1) / 2,
            shift_steps: n - 1,
            state_bytes: (n as u64) * (n as u64) * BYTES_PER_PAIR,
            hosts,
            from_hostfile,
            allocation: None,
            estimate_s: 0.0,
            options: o.clone(),
        };
        p.estimate_s = p.estimate().as_secs_f64();
        p
    }

    /// The job: one rank per host (in an allocation, srun told one task per node).
    pub fn job(&self) -> JobOptions {
        JobOptions {
            ranks: Some(self.hosts.len()),
            ranks_per_host: self.allocation.as_ref().map(|_| 1),
            ..self.options.job.clone()
        }
    }

    /// How long the run may take, generously: the job's start and the memory checks
    /// (every host at once), then rounds and shift steps (each host in one pair or one
    /// send at a time), then the collectives. Linear in the hosts.
    pub fn estimate(&self) -> Duration {
        let o = &self.options;
        let n = self.hosts.len() as u32;
        let start = numalab_mpi::sizes::JOB_START + START_PER_HOST * n;
        let memory = MEMORY_PER_NODE * NODES_ASSUMED * o.mem_iterations as u32 / 3;
        let round = SMALL_MESSAGE * (2 * (o.lat_iterations + 10)) as u32 + STEP_COST;
        let step_bytes = (o.bw_size * o.bw_window as u64 * (o.bw_iterations as u64 + 1)) as f64;
        let step = Duration::from_secs_f64(step_bytes / STREAM_BYTES_PER_S) + STEP_COST;
        let log_n = (usize::BITS - (self.hosts.len().max(2) - 1).leading_zeros()).max(1);
        let coll = SMALL_MESSAGE * log_n * 2 * (o.coll_iterations as u32 + 1) * 2;
        start + memory + round * self.latency_rounds as u32 + step * self.shift_steps as u32 + coll
    }

    /// The plan as one record (its `data` is the plan), what `--dry-run` emits.
    pub fn records(&self, prov: &Provenance) -> Vec<Record> {
        let mut r = Record::new(
            KIND_PLAN,
            "cluster plan",
            prov.clone(),
            serde_json::json!({ "hosts": self.hosts.len(), "from_hostfile": self.from_hostfile }),
        );
        r.set_data(self);
        vec![r]
    }
}

/// Inside a Slurm allocation its id and its nodes: the step's (`SLURM_STEP_NODELIST`,
/// a task of srun's), else the job's; outside one, the one-line error naming what
/// gives the hosts.
fn allocation_hosts(get: &dyn Fn(&str) -> Option<String>) -> Result<(String, Vec<String>)> {
    let id = get("SLURM_JOB_ID").filter(|v| !v.trim().is_empty());
    let list = get("SLURM_STEP_NODELIST").or_else(|| get("SLURM_JOB_NODELIST"));
    let (Some(id), Some(list)) = (id, list) else {
        return Err(Error::Usage(
            "cluster needs its hosts: give --hostfile FILE (one host per line), run it inside a Slurm allocation (salloc -N 3 numalab cluster), or give --hosts N with --dry-run for a plan".into(),
        ));
    };
    let hosts = numalab_mpi::slurm::expand(&list);
    if hosts.len() < 2 {
        return Err(Error::Usage(format!(
            "invalid Slurm allocation {id}: it holds {} ('{list}'); cluster compares at least 2 hosts (3 or more to name an odd one): allocate with salloc -N 3",
            numalab_results::words::count(hosts.len() as u64, "node")
        )));
    }
    Ok((id, hosts))
}

/// The distinct hosts of a hostfile, refused when one would get more than one rank.
fn hostfile_hosts(f: &std::path::Path) -> Result<Vec<String>> {
    let lines = numalab_mpi::hostfile::read(f)?;
    let mut hosts: Vec<String> = Vec::new();
    for l in &lines {
        if let Some(s) = l.slots.filter(|s| *s != 1) {
            return Err(Error::Usage(format!(
                "invalid --hostfile '{}': cluster runs one rank per host, and line {} gives {} slots={s} (give slots=1)",
                f.display(),
                l.line,
                l.host
            )));
        }
        if hosts.contains(&l.host) {
            return Err(Error::Usage(format!(
                "invalid --hostfile '{}': host '{}' is named twice (line {}); cluster runs one rank per host",
                f.display(),
                l.host,
                l.line
            )));
        }
        hosts.push(l.host.clone());
    }
    if hosts.len() < 2 {
        return Err(Error::Usage(format!(
            "invalid --hostfile '{}': {} host; cluster compares at least 2 (3 or more to name an odd one)",
            f.display(),
            hosts.len()
        )));
    }
    Ok(hosts)
}

/// Rounds of a round-robin tournament of `n` hosts: n − 1 when n is even, n when odd
/// (each round one host sits out).
pub fn rounds(n: usize) -> usize {
    if n < 2 {
        0
    } else if n.is_multiple_of(2) {
        n - 1
    } else {
        n
    }
}

/// Host `me`'s partner in round `r` of the tournament of `n` hosts (the circle method:
/// the last seat fixed, the others turning), None when it sits the round out.
pub fn partner(n: usize, r: usize, me: usize) -> Option<usize> {
    let m = if n.is_multiple_of(2) { n } else { n + 1 };
    let turning = m - 1;
    let p = if me == turning {
        r
    } else if me == r {
        turning
    } else {
        (2 * r + turning - me % turning) % turning
    };
    (p < n && p != me).then_some(p)
}

/// The pairs of round `r` (lower host first).
pub fn round_pairs(n: usize, r: usize) -> Vec<(usize, usize)> {
    (0..n)
        .filter_map(|a| partner(n, r, a).filter(|b| a < *b).map(|b| (a, b)))
        .collect()
}

/// Shift step `d` (1 ≤ d < n): the host `me` sends to and the one it receives from.
pub fn shift(n: usize, d: usize, me: usize) -> (usize, usize) {
    ((me + d) % n, (me + n - d % n) % n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planned(n: usize) -> Plan {
        let o = Options {
            hosts: Some(n),
            ..Options::default()
        };
        Plan::resolve(&o).unwrap()
    }

    #[test]
    fn rounds_cover_every_pair_once_and_no_host_twice_in_a_round() {
        for n in 2..=13 {
            let mut seen = std::collections::BTreeSet::new();
            for r in 0..rounds(n) {
                let pairs = round_pairs(n, r);
                let mut hosts: Vec<usize> = pairs.iter().flat_map(|p| [p.0, p.1]).collect();
                let all = hosts.len();
                hosts.sort_unstable();
                hosts.dedup();
                assert_eq!(hosts.len(), all, "n={n} round {r}: a host twice");
                assert_eq!(
                    all,
                    n - n % 2,
                    "n={n} round {r}: every host but a bye plays"
                );
                for (a, b) in pairs {
                    assert_eq!(partner(n, r, b), Some(a), "partners agree");
                    assert!(seen.insert((a, b)), "n={n}: ({a},{b}) twice");
                }
            }
            assert_eq!(seen.len(), n * (n - 1) / 2, "n={n}: every pair");
        }
    }

    #[test]
    fn shift_steps_send_and_receive_every_ordered_pair_once() {
        let n = 7;
        let mut seen = std::collections::BTreeSet::new();
        for d in 1..n {
            for me in 0..n {
                let (to, from) = shift(n, d, me);
                assert_eq!(shift(n, d, to).1, me, "the receiver expects me");
                assert_ne!(from, me);
                assert!(seen.insert((me, to)));
            }
        }
        assert_eq!(seen.len(), n * (n - 1));
    }

    #[test]
    fn ten_thousand_hosts_plan_at_once_and_the_estimate_grows_linearly() {
        let t = std::time::Instant::now();
        let big = planned(10_000);
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
        assert_eq!((big.latency_rounds, big.shift_steps), (9_999, 9_999));
        let small = planned(1_000);
        let ratio = big.estimate_s / small.estimate_s;
        // O(N): ten times the hosts, about ten times the time (not a hundred).
        assert!((5.0..=11.0).contains(&ratio), "ratio {ratio}");
        assert_eq!(
            planned(3).latency_rounds,
            3,
            "an odd count has a bye per round"
        );
    }

    #[test]
    fn a_thousand_hosts_figures_fit_comfortably_in_memory() {
        let p = planned(1000);
        assert_eq!(BYTES_PER_PAIR, 48);
        assert_eq!(p.state_bytes, 1000 * 1000 * 48);
        assert!(p.state_bytes < 64 << 20, "{} bytes", p.state_bytes);
        assert_eq!(p.pairs, 499_500);
    }

    #[test]
    fn inside_a_slurm_allocation_its_nodes_are_the_hosts_one_task_per_node() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        let o = Options::default();
        let job = env(&[("SLURM_JOB_ID", "42"), ("SLURM_JOB_NODELIST", "n[1-3]")]);
        let p = Plan::resolve_in(&o, &job).unwrap();
        assert_eq!(p.hosts, ["n1", "n2", "n3"]);
        assert_eq!(p.allocation.as_deref(), Some("42"));
        assert!(!p.from_hostfile);
        assert_eq!((p.job().ranks, p.job().ranks_per_host), (Some(3), Some(1)));
        assert!(
            p.text().contains("3 hosts from Slurm allocation 42"),
            "{}",
            p.text()
        );
        // A task of a step of two of the nodes: the step's.
        let step = env(&[
            ("SLURM_JOB_ID", "42"),
            ("SLURM_JOB_NODELIST", "n[1-3]"),
            ("SLURM_STEP_NODELIST", "n[2-3]"),
        ]);
        assert_eq!(Plan::resolve_in(&o, &step).unwrap().hosts, ["n2", "n3"]);
        let one = env(&[("SLURM_JOB_ID", "7"), ("SLURM_JOB_NODELIST", "n1")]);
        let e = Plan::resolve_in(&o, &one).unwrap_err().to_string();
        assert!(
            e.starts_with("invalid Slurm allocation 7: it holds 1 node ('n1')"),
            "{e}"
        );
        // Outside one, all three ways are named; --hosts plans without the allocation.
        let e = Plan::resolve_in(&o, &env(&[])).unwrap_err().to_string();
        assert!(
            e.contains("--hostfile") && e.contains("salloc") && e.contains("--hosts"),
            "{e}"
        );
        let planned = Options {
            hosts: Some(4),
            ..Options::default()
        };
        let p = Plan::resolve_in(&planned, &job).unwrap();
        assert_eq!((p.hosts.len(), p.allocation.as_deref()), (4, None));
        assert_eq!(p.job().ranks_per_host, None);
    }

    #[test]
    fn bad_requests_are_named() {
        let mut o = Options {
            hosts: Some(1),
            ..Options::default()
        };
        assert!(o.check().unwrap_err().to_string().contains("--hosts '1'"));
        o.hosts = None;
        assert!(Plan::resolve(&o)
            .unwrap_err()
            .to_string()
            .contains("--hostfile"));
        o.bw_iterations = 0;
        assert!(o
            .check()
            .unwrap_err()
            .to_string()
            .contains("--bw-iterations '0'"));
        assert_eq!(Options::default().check(), Ok(()));
        for (b, ok) in [(0, false), ((1 << 20) - 1, false), (1 << 20, true)] {
            let o = Options {
                mem_size: Some(b),
                ..Options::default()
            };
            match o.check() {
                Ok(()) => assert!(ok, "{b}"),
                Err(e) => assert!(!ok && e.to_string().contains(&format!("--mem-size '{b}'"))),
            }
        }
    }
}
