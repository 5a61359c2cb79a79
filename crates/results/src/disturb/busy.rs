//! How busy each CPU is before a measurement: the share of a short window each CPU
//! spent running tasks at normal priority, running niced ones, and stolen by the
//! hypervisor (`/proc/stat`), and which other tasks were running there (`/proc/*/task`).
//! The survey reads it to measure its single-CPU steps on the quietest CPU.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One CPU's shares (0–1) of a window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuBusy {
    /// OS CPU number.
    pub cpu: u32,
    /// Running tasks at normal priority: user, system, irq and softirq time (guest time
    /// is inside user).
    pub busy: f64,
    /// Running niced tasks (a nice 19 or idle-priority build yields the CPU to a
    /// measurement at once, so it hardly disturbs one).
    #[serde(default)]
    pub niced: f64,
    /// Taken by the hypervisor (steal).
    #[serde(default)]
    pub steal: f64,
    /// Whether niced time competes with the reader: it runs niced or at idle priority
    /// itself (a niced busy loop then takes its share as a normal one would).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub niced_competes: bool,
    /// Other tasks found running there at the window's end: "pid 4242 (sh)".
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub running: Vec<String>,
}

impl CpuBusy {
    /// Busy at the reader's priority or above: normal-priority time, and niced time
    /// where niced work competes with the reader.
    pub fn competing(&self) -> f64 {
        let niced = if self.niced_competes { self.niced } else { 0.0 };
        (self.busy + niced).min(1.0)
    }

    /// The share a measurement there would have to share: busy and stolen.
    pub fn taken(&self) -> f64 {
        (self.competing() + self.steal).min(1.0)
    }

    /// "98 % busy with another process (pid 4242 sh)", or "3 % busy".
    pub fn words(&self) -> String {
        let pct = |x: f64| (x * 100.0).round();
        let busy = self.competing();
        let mut s = format!("{:.0} % busy", pct(busy));
        if busy >= 0.2 {
            s.push_str(match self.running.len() {
                0 => " with other work",
                1 => " with another process",
                _ => " with other processes",
            });
            if !self.running.is_empty() {
                s.push_str(&format!(" ({})", self.running.join(", ")));
            }
        }
        if self.steal >= 0.05 {
            s.push_str(&format!(
                ", {:.0} % stolen by the hypervisor",
                pct(self.steal)
            ));
        }
        s
    }
}

/// Ticks of one `cpuN` line: normal-priority busy, niced, steal, total.
fn ticks(stat: &str, cpu: u32) -> Option<[u64; 4]> {
    let v = super::sampler::cpu_fields(stat, cpu)?;
    // user nice system idle iowait irq softirq steal
    let busy = v[0] + v[2] + v[5] + v[6];
    Some([busy, v[1], v[7], v.iter().sum()])
}

/// Each of `cpus`' shares between two readings of `/proc/stat` (a CPU missing from
/// either, or with no ticks between them, reads as idle).
pub fn shares(before: &str, after: &str, cpus: &[u32]) -> Vec<CpuBusy> {
    cpus.iter()
        .map(|&cpu| {
            let d = match (ticks(before, cpu), ticks(after, cpu)) {
                (Some(a), Some(b)) => [0, 1, 2, 3].map(|i| b[i].saturating_sub(a[i])),
                _ => [0; 4],
            };
            let share = |x: u64| {
                if d[3] == 0 {
                    0.0
                } else {
                    (x as f64 / d[3] as f64).min(1.0)
                }
            };
            CpuBusy {
                cpu,
                busy: share(d[0]),
                niced: share(d[1]),
                steal: share(d[2]),
                niced_competes: false,
                running: Vec::new(),
            }
        })
        .collect()
}

/// `cpus`' shares over `window` (the caller sleeps through it), each busy one with the
/// other tasks running there at its end.
pub fn busy_now(cpus: &[u32], window: Duration) -> Vec<CpuBusy> {
    let read = || std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let before = read();
    std::thread::sleep(window);
    let mut out = shares(&before, &read(), cpus);
    let competes = niced_self();
    for c in &mut out {
        c.niced_competes = competes;
    }
    if out.iter().any(|c| c.competing() >= 0.2) {
        let tasks = running_tasks();
        for c in out.iter_mut().filter(|c| c.competing() >= 0.2) {
            c.running = tasks
                .iter()
                .filter(|(cpu, _)| *cpu == c.cpu)
                .map(|(_, who)| who.clone())
                .take(3)
                .collect();
        }
    }
    out
}

/// Whether this process runs niced or at idle priority (then niced work competes with
/// it on equal or better terms).
fn niced_self() -> bool {
    // SAFETY: plain queries of this process's own scheduling; -1 on failure (read as
    // nice -1 and "not idle", i.e. not niced).
    let (nice, policy) = unsafe {
        (
            libc::getpriority(libc::PRIO_PROCESS, 0),
            libc::sched_getscheduler(0),
        )
    };
    nice > 0 || policy == libc::SCHED_IDLE
}

/// One task's state and CPU from its `stat` line: (state, processor, comm).
fn task_state(stat: &str) -> Option<(char, u32, &str)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?;
    let rest: Vec<&str> = stat.get(close + 1..)?.split_whitespace().collect();
    // After the comm: field 3 (state) is rest[0], field 39 (processor) rest[36].
    let state = rest.first()?.chars().next()?;
    Some((state, rest.get(36)?.parse().ok()?, comm))
}

/// Runnable tasks of other processes, as (CPU, "pid N (comm)"), one per process.
fn running_tasks() -> Vec<(u32, String)> {
    let me = std::process::id().to_string();
    let mut out: Vec<(u32, String)> = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return out;
    };
    for p in procs.flatten() {
        let pid = p.file_name().to_string_lossy().into_owned();
        if pid == me || !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(tasks) = std::fs::read_dir(p.path().join("task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let Ok(s) = std::fs::read_to_string(t.path().join("stat")) else {
                continue;
            };
            if let Some(('R', cpu, comm)) = task_state(&s) {
                let who = format!("pid {pid} {comm}");
                if !out.iter().any(|(c, w)| *c == cpu && *w == who) {
                    out.push((cpu, who));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_split_normal_niced_and_stolen_time() {
        let a = "cpu  0 0 0 0 0 0 0 0\ncpu0 100 50 10 1000 0 0 0 0\ncpu1 5 900 5 100 0 0 0 0\n";
        // CPU 0: 98 busy of 100 ticks; CPU 1: 90 niced, 5 stolen, 5 idle.
        let b = "cpu  0 0 0 0 0 0 0 0\ncpu0 190 50 15 1002 0 2 1 0\ncpu1 5 990 5 105 0 0 0 5\n";
        let s = shares(a, b, &[0, 1, 7]);
        assert!((s[0].busy - 0.98).abs() < 1e-9, "{s:?}");
        assert_eq!((s[0].niced, s[0].steal), (0.0, 0.0));
        assert!((s[1].niced - 0.9).abs() < 1e-9 && (s[1].steal - 0.05).abs() < 1e-9);
        assert!((s[1].taken() - 0.05).abs() < 1e-9);
        // Read from a niced process, niced work competes with it.
        let mut niced = s[1].clone();
        niced.niced_competes = true;
        assert!((niced.taken() - 0.95).abs() < 1e-9);
        assert_eq!(
            niced.words(),
            "90 % busy with other work, 5 % stolen by the hypervisor"
        );
        // A CPU /proc/stat does not list reads as idle, never as a failure.
        assert_eq!((s[2].cpu, s[2].busy), (7, 0.0));
    }

    #[test]
    fn a_busy_cpu_says_what_runs_there() {
        let mut c = CpuBusy {
            cpu: 0,
            busy: 0.98,
            niced: 0.0,
            steal: 0.0,
            niced_competes: false,
            running: vec!["pid 4242 sh".into()],
        };
        assert_eq!(c.words(), "98 % busy with another process (pid 4242 sh)");
        c.running.clear();
        c.steal = 0.1;
        assert_eq!(
            c.words(),
            "98 % busy with other work, 10 % stolen by the hypervisor"
        );
        c.busy = 0.03;
        c.steal = 0.0;
        assert_eq!(c.words(), "3 % busy");
    }

    #[test]
    fn a_task_line_gives_its_state_cpu_and_name() {
        // A comm with a space and a parenthesis, as the kernel prints it.
        let line = "4242 (my (sh) x) R 1 4242 4242 0 -1 4194304 90 0 0 0 500 0 0 0 20 0 1 0 \
                    1000 2000 100 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
        assert_eq!(task_state(line), Some(('R', 1, "my (sh) x")));
        assert_eq!(task_state("12 (x) S"), None);
        // This process's own spinning thread is not another process.
        let me = running_tasks();
        let tag = format!("pid {} ", std::process::id());
        assert!(me.iter().all(|(_, w)| !w.starts_with(&tag)), "{me:?}");
    }
}
