//! What the kernel counted for one thread over one pass: involuntary context switches
//! (`getrusage(RUSAGE_THREAD)`), run-queue wait (`/proc/thread-self/schedstat`), its
//! CPU's steal time and its SMT sibling's busy share (`/proc/stat`), the throttling of
//! its cgroup and every ancestor (`cpu.stat`, v2 or v1), and other numalab runs
//! measuring meanwhile (the run lock). Each source that cannot be read counts as zero
//! (and the pass is then judged on the others).

use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Instant;

fn is_zero(v: &u64) -> bool {
    *v == 0
}

fn is_zero_usize(v: &usize) -> bool {
    *v == 0
}

/// What disturbed one thread during one pass (deltas over the pass).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Disturbance {
    /// Wall time of the sampled window, ns.
    pub wall_ns: u64,
    /// The CPU the thread ran on (its steal and sibling were read for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u32>,
    /// Involuntary context switches of the thread (ru_nivcsw delta).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub involuntary_switches: u64,
    /// Time the thread waited runnable on a run queue (schedstat field 2 delta), ns.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub runq_wait_ns: u64,
    /// Steal time of its CPU (/proc/stat), ns (kernel tick resolution).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub steal_ns: u64,
    /// Periods in which its cgroup (or an ancestor) was throttled.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub throttled: u64,
    /// Time its cgroup (or an ancestor) was throttled, µs.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub throttled_us: u64,
    /// Other numalab measurements running at the pass's start or end.
    #[serde(default, skip_serializing_if = "is_zero_usize")]
    pub other_runs: usize,
    /// Busy share (0–1) of its CPU's SMT siblings over the pass (None: no sibling).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sibling_busy: Option<f64>,
}

impl Disturbance {
    fn share(&self, ns: u64) -> f64 {
        if self.wall_ns == 0 {
            return if ns > 0 { 1.0 } else { 0.0 };
        }
        // Steal is counted in whole ticks: one tick in a short pass would read as
        // several times the pass; it cannot exceed it.
        (ns as f64 / self.wall_ns as f64).min(1.0)
    }

    /// Run-queue wait as a share of the pass's wall time.
    pub fn runq_share(&self) -> f64 {
        self.share(self.runq_wait_ns)
    }

    /// Steal time as a share of the pass's wall time (at most 1).
    pub fn steal_share(&self) -> f64 {
        self.share(self.steal_ns)
    }

    /// Accumulate another window (a peer's, or a later part of the same pass).
    pub fn merge(&mut self, o: &Disturbance) {
        self.wall_ns = self.wall_ns.max(o.wall_ns);
        self.involuntary_switches += o.involuntary_switches;
        self.runq_wait_ns = self.runq_wait_ns.max(o.runq_wait_ns);
        self.steal_ns = self.steal_ns.max(o.steal_ns);
        self.throttled += o.throttled;
        self.throttled_us += o.throttled_us;
        self.other_runs = self.other_runs.max(o.other_runs);
        self.sibling_busy = match (self.sibling_busy, o.sibling_busy) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }
}

/// Counters read at one instant (the thread's own, `nivcsw` and `runq_ns`, are read by
/// [`thread_counts`] beside the pass's wall time).
#[derive(Debug, Clone, Default)]
struct Snapshot {
    at: Option<Instant>,
    nivcsw: u64,
    runq_ns: u64,
    steal_ticks: u64,
    sibling: Option<(u64, u64)>,
    throttled: u64,
    throttled_us: u64,
    other_runs: usize,
}

/// Started before a pass on the measuring thread itself; `finish` after it.
#[derive(Debug, Clone)]
pub struct Sampler {
    cpu: Option<u32>,
    start: Snapshot,
}

impl Sampler {
    /// Read the counters now for the calling thread, on `cpu` (None: the CPU it runs on).
    pub fn start(cpu: Option<u32>) -> Sampler {
        let cpu = cpu.or_else(current_cpu);
        let mut start = snapshot(cpu);
        // The thread's own counters last, next to the instant the pass's wall time
        // starts: reading /proc/stat and scanning for other runs can wait on a busy
        // run queue for milliseconds, which belongs to neither pass nor share.
        (start.nivcsw, start.runq_ns) = thread_counts();
        start.at = Some(Instant::now());
        Sampler { cpu, start }
    }

    /// The deltas since `start` (call on the same thread).
    pub fn finish(self) -> Disturbance {
        let wall = self.start.at.map_or(0, |t| t.elapsed().as_nanos() as u64);
        // First, as in `start`: run-queue wait counted over the wall time's span only
        // (read after the slower reads below, a 28 ms pass once showed 36 ms of wait).
        let (nivcsw, runq_ns) = thread_counts();
        let end = Snapshot {
            nivcsw,
            runq_ns,
            ..snapshot(self.cpu)
        };
        let s = &self.start;
        let tick = tick_ns();
        Disturbance {
            wall_ns: wall,
            cpu: self.cpu,
            involuntary_switches: end.nivcsw.saturating_sub(s.nivcsw),
            runq_wait_ns: end.runq_ns.saturating_sub(s.runq_ns),
            steal_ns: end.steal_ticks.saturating_sub(s.steal_ticks) * tick,
            throttled: end.throttled.saturating_sub(s.throttled),
            throttled_us: end.throttled_us.saturating_sub(s.throttled_us),
            other_runs: end.other_runs.max(s.other_runs),
            sibling_busy: match (s.sibling, end.sibling) {
                (Some((b0, t0)), Some((b1, t1))) if t1 > t0 => {
                    Some(b1.saturating_sub(b0) as f64 / (t1 - t0) as f64)
                }
                (Some(_), Some(_)) => Some(0.0),
                _ => None,
            },
        }
    }
}

fn current_cpu() -> Option<u32> {
    // SAFETY: no arguments; returns -1 on failure.
    let c = unsafe { libc::sched_getcpu() };
    (c >= 0).then_some(c as u32)
}

fn tick_ns() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    1_000_000_000 / if hz > 0 { hz as u64 } else { 100 }
}

fn snapshot(cpu: Option<u32>) -> Snapshot {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let (throttled, throttled_us) = cgroup_throttling();
    let steal = cpu.and_then(|c| cpu_line(&stat, c)).map_or(0, |f| f.steal);
    Snapshot {
        at: None,
        nivcsw: 0,
        runq_ns: 0,
        steal_ticks: steal,
        sibling: cpu.and_then(|c| sibling_ticks(&stat, c)),
        throttled,
        throttled_us,
        other_runs: crate::runlock::others().len(),
    }
}

/// The calling thread's involuntary switches and run-queue wait, read together.
fn thread_counts() -> (u64, u64) {
    (involuntary_switches(), runq_wait())
}

fn involuntary_switches() -> u64 {
    // SAFETY: getrusage fills the struct we own.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_THREAD, &mut ru) == 0 {
            ru.ru_nivcsw as u64
        } else {
            0
        }
    }
}

/// Field 2 of `/proc/thread-self/schedstat`: ns spent waiting on a run queue.
fn runq_wait() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

/// One CPU's `/proc/stat` line: busy ticks, total ticks, steal ticks.
struct CpuTicks {
    busy: u64,
    total: u64,
    steal: u64,
}

/// The first eight tick counts of `/proc/stat`'s `cpuN` line: user, nice, system, idle,
/// iowait, irq, softirq, steal (guest time is inside user); missing ones read 0.
pub(crate) fn cpu_fields(stat: &str, cpu: u32) -> Option<[u64; 8]> {
    let tag = format!("cpu{cpu} ");
    let line = stat.lines().find(|l| l.starts_with(&tag))?;
    let mut v = [0u64; 8];
    for (slot, x) in v.iter_mut().zip(line.split_whitespace().skip(1)) {
        *slot = x.parse().unwrap_or(0);
    }
    Some(v)
}

fn cpu_line(stat: &str, cpu: u32) -> Option<CpuTicks> {
    let v = cpu_fields(stat, cpu)?;
    let f = |i: usize| v[i];
    let total: u64 = v.iter().sum();
    Some(CpuTicks {
        busy: total - f(3) - f(4) - f(7),
        total,
        steal: f(7),
    })
}

/// Busy and total ticks of `cpu`'s SMT siblings (None: it has none).
fn sibling_ticks(stat: &str, cpu: u32) -> Option<(u64, u64)> {
    let list = std::fs::read_to_string(format!(
        "/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"
    ))
    .ok()?;
    let sibs: Vec<u32> = parse_list(list.trim())
        .into_iter()
        .filter(|&c| c != cpu)
        .collect();
    if sibs.is_empty() {
        return None;
    }
    let mut out = (0, 0);
    for c in sibs {
        let t = cpu_line(stat, c)?;
        out = (out.0 + t.busy, out.1 + t.total);
    }
    Some(out)
}

/// A kernel CPU list ("0-3,8").
fn parse_list(s: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
                    out.extend(a..=b);
                }
            }
            None => out.extend(part.parse::<u32>().ok()),
        }
    }
    out
}

/// Where the cpu controller is mounted: (mount point, is v2).
fn cgroup_mounts() -> &'static Vec<(PathBuf, bool)> {
    static M: OnceLock<Vec<(PathBuf, bool)>> = OnceLock::new();
    M.get_or_init(|| {
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
        let mut out = Vec::new();
        for l in mounts.lines() {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 4 {
                continue;
            }
            if f[2] == "cgroup2" {
                out.push((PathBuf::from(f[1]), true));
            } else if f[2] == "cgroup" && f[3].split(',').any(|o| o == "cpu") {
                out.push((PathBuf::from(f[1]), false));
            }
        }
        out
    })
}

/// The cgroup folders this process's CPU time is limited by: its own and every
/// ancestor's, for the v1 cpu hierarchy and for v2 (with whether it is v2).
fn cgroup_dirs() -> Vec<(PathBuf, bool)> {
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mut out = Vec::new();
    for l in own.lines() {
        let mut it = l.splitn(3, ':');
        let (_, ctrl, path) = (it.next(), it.next().unwrap_or(""), it.next().unwrap_or(""));
        let v2 = ctrl.is_empty();
        if !v2 && !ctrl.split(',').any(|c| c == "cpu") {
            continue;
        }
        for (mount, is_v2) in cgroup_mounts().iter().filter(|(_, m)| *m == v2) {
            let mut dir = mount.join(path.trim_start_matches('/'));
            loop {
                out.push((dir.clone(), *is_v2));
                if dir == *mount || !dir.pop() {
                    break;
                }
            }
        }
    }
    out
}

/// nr_throttled and throttled µs summed over this process's cgroup and its ancestors.
fn cgroup_throttling() -> (u64, u64) {
    let mut out = (0, 0);
    for (dir, v2) in cgroup_dirs() {
        let Ok(s) = std::fs::read_to_string(dir.join("cpu.stat")) else {
            continue;
        };
        for l in s.lines() {
            let mut kv = l.split_whitespace();
            let (Some(k), Some(v)) = (kv.next(), kv.next().and_then(|v| v.parse::<u64>().ok()))
            else {
                continue;
            };
            match (k, v2) {
                ("nr_throttled", _) => out.0 += v,
                ("throttled_usec", true) => out.1 += v,
                ("throttled_time", false) => out.1 += v / 1000,
                _ => {}
            }
        }
    }
    out
}

/// A CPU quota: `quota_us` of CPU time per `period_us` of wall time (cgroup v2
/// `cpu.max`, v1 `cpu.cfs_quota_us` and `cpu.cfs_period_us`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuQuota {
    /// CPU time allowed per period, µs.
    pub quota_us: u64,
    /// The period, µs.
    pub period_us: u64,
}

impl CpuQuota {
    /// The quota as a share of one CPU (2.0: two CPUs' worth).
    pub fn cpus(&self) -> f64 {
        self.quota_us as f64 / self.period_us.max(1) as f64
    }

    /// "1 ms of CPU per 20 ms (5 % of a CPU)".
    pub fn words(&self) -> String {
        let ms = |us: u64| {
            let v = us as f64 / 1000.0;
            if v == v.round() {
                format!("{v:.0} ms")
            } else {
                format!("{v} ms")
            }
        };
        let share = self.cpus();
        let of = if share < 1.0 {
            format!("{:.0} % of a CPU", share * 100.0)
        } else {
            format!("{} CPUs", (share * 100.0).round() / 100.0)
        };
        format!(
            "{} of CPU per {} ({of})",
            ms(self.quota_us),
            ms(self.period_us)
        )
    }
}

/// One cgroup folder's quota (None: none set, or not readable).
fn quota_of(dir: &std::path::Path, v2: bool) -> Option<CpuQuota> {
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
    let (q, p) = if v2 {
        let s = read("cpu.max")?;
        let mut it = s.split_whitespace();
        (it.next()?.to_string(), it.next()?.to_string())
    } else {
        (read("cpu.cfs_quota_us")?, read("cpu.cfs_period_us")?)
    };
    let quota_us = q.trim().parse::<u64>().ok()?;
    let period_us = p.trim().parse::<u64>().ok().filter(|p| *p > 0)?;
    Some(CpuQuota {
        quota_us,
        period_us,
    })
}

/// The tightest CPU quota over this process's cgroup and its ancestors (None: no quota
/// set, or no cgroup cpu controller mounted where this process can read it).
pub fn cpu_quota() -> Option<CpuQuota> {
    cgroup_dirs()
        .iter()
        .filter_map(|(d, v2)| quota_of(d, *v2))
        .min_by(|a, b| a.cpus().total_cmp(&b.cpus()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_line_gives_busy_total_and_steal() {
        let stat =
            "cpu  9 9 9 9 9 9 9 9 0 0\ncpu0 10 1 5 100 4 0 2 7 0 0\ncpu1 1 1 1 1 1 1 1 1 0 0\n";
        let t = cpu_line(stat, 0).unwrap();
        assert_eq!((t.busy, t.total, t.steal), (18, 129, 7));
        assert!(cpu_line(stat, 2).is_none());
        assert_eq!(parse_list("0-2,8"), vec![0, 1, 2, 8]);
    }

    #[test]
    fn a_spinning_thread_reads_its_own_counters() {
        let s = Sampler::start(None);
        let t = Instant::now();
        while t.elapsed().as_millis() < 5 {
            std::hint::spin_loop();
        }
        let d = s.finish();
        assert!(d.wall_ns >= 5_000_000, "{d:?}");
        assert!(d.runq_share() <= 1.0 && d.steal_share() <= 1.0);
    }

    #[test]
    fn a_quota_is_read_from_either_cgroup_version_and_said_in_words() {
        let dir = std::env::temp_dir().join(format!("nl-quota-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("cpu.max"), "max 100000\n").unwrap();
        assert_eq!(quota_of(&dir, true), None);
        std::fs::write(dir.join("cpu.max"), "1000 20000\n").unwrap();
        let q = quota_of(&dir, true).unwrap();
        assert_eq!((q.quota_us, q.period_us), (1000, 20000));
        assert_eq!(q.words(), "1 ms of CPU per 20 ms (5 % of a CPU)");
        std::fs::write(dir.join("cpu.cfs_quota_us"), "-1\n").unwrap();
        std::fs::write(dir.join("cpu.cfs_period_us"), "100000\n").unwrap();
        assert_eq!(quota_of(&dir, false), None);
        std::fs::write(dir.join("cpu.cfs_quota_us"), "250000\n").unwrap();
        let q = quota_of(&dir, false).unwrap();
        assert_eq!(q.words(), "250 ms of CPU per 100 ms (2.5 CPUs)");
        std::fs::write(dir.join("cpu.cfs_quota_us"), "1500\n").unwrap();
        assert_eq!(
            quota_of(&dir, false).unwrap().words(),
            "1.5 ms of CPU per 100 ms (2 % of a CPU)"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn steal_counted_in_ticks_never_exceeds_the_pass() {
        let d = Disturbance {
            wall_ns: 1_000_000,
            steal_ns: 10_000_000,
            ..Default::default()
        };
        assert_eq!(d.steal_share(), 1.0);
    }
}
