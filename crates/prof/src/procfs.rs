//! Readers for the OS counters that work everywhere: /proc per thread and process,
//! numa_maps, /proc/vmstat, /proc/stat and the per-node sysfs files. Parsers take
//! text so they are tested on captured files; readers add the paths.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Where /proc and /sys are (tests point these at fixtures), and the files kept
/// open between samples: re-reading an open /proc or sysfs file from offset 0 skips
/// the open, stat and close that otherwise cost as much as the read.
#[derive(Debug)]
pub struct Roots {
    /// Usually "/proc".
    pub proc: PathBuf,
    /// Usually "/sys".
    pub sys: PathBuf,
    open: RefCell<HashMap<PathBuf, fs::File>>,
}

impl Clone for Roots {
    fn clone(&self) -> Self {
        Roots {
            proc: self.proc.clone(),
            sys: self.sys.clone(),
            open: RefCell::default(),
        }
    }
}

impl Default for Roots {
    fn default() -> Self {
        Roots {
            proc: "/proc".into(),
            sys: "/sys".into(),
            open: RefCell::default(),
        }
    }
}

/// Fields of /proc/PID/task/TID/stat that the recorder keeps.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskStat {
    /// Command name (without parentheses).
    pub comm: String,
    /// State letter (R, S, D, Z, …).
    pub state: char,
    /// Minor faults.
    pub minflt: u64,
    /// Major faults.
    pub majflt: u64,
    /// User time in clock ticks.
    pub utime: u64,
    /// System time in clock ticks.
    pub stime: u64,
    /// CPU the task last ran on.
    pub cpu: u32,
}

/// Parse a stat line; the command may contain spaces and parentheses.
pub fn parse_stat(s: &str) -> Option<TaskStat> {
    let open = s.find('(')?;
    let close = s.rfind(')')?;
    let comm = s.get(open + 1..close)?.to_string();
    // Fields after the command, numbered from 3 (state) as in proc(5).
    let f: Vec<&str> = s.get(close + 2..)?.split_whitespace().collect();
    let at = |n: usize| f.get(n - 3).and_then(|v| v.parse::<u64>().ok());
    Some(TaskStat {
        comm,
        state: f.first()?.chars().next()?,
        minflt: at(10)?,
        majflt: at(12)?,
        utime: at(14)?,
        stime: at(15)?,
        cpu: u32::try_from(at(39)?).ok()?,
    })
}

/// Run time and wait time (ns) from schedstat.
pub fn parse_schedstat(s: &str) -> Option<(u64, u64)> {
    let mut it = s.split_whitespace().map(|v| v.parse::<u64>().ok());
    Some((it.next()??, it.next()??))
}

/// Voluntary and involuntary context switches from status.
pub fn parse_ctxt(s: &str) -> Option<(u64, u64)> {
    let get = |k: &str| {
        s.lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    Some((
        get("voluntary_ctxt_switches:")?,
        get("nonvoluntary_ctxt_switches:")?,
    ))
}

/// Migrations between CPUs (se.nr_migrations) from /proc/…/sched.
pub fn parse_migrations(s: &str) -> Option<u64> {
    s.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == "se.nr_migrations")
            .then(|| v.trim().parse().ok())
            .flatten()
    })
}

/// Bytes resident per node from numa_maps ("N0=12" counts pages of
/// kernelpagesize_kB each; huge pages count in their own size).
pub fn parse_numa_maps(s: &str) -> BTreeMap<u32, u64> {
    let mut out = BTreeMap::new();
    for l in s.lines() {
        let page_kb = l
            .split_whitespace()
            .find_map(|w| w.strip_prefix("kernelpagesize_kB="))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(4);
        for w in l.split_whitespace() {
            let Some(rest) = w.strip_prefix('N') else {
                continue;
            };
            let Some((n, pages)) = rest.split_once('=') else {
                continue;
            };
            if let (Ok(n), Ok(p)) = (n.parse::<u32>(), pages.parse::<u64>()) {
                // Saturating: a damaged line must not overflow (a panic in debug builds).
                let bytes = p.saturating_mul(page_kb).saturating_mul(1024);
                let e = out.entry(n).or_insert(0u64);
                *e = e.saturating_add(bytes);
            }
        }
    }
    out
}

/// "key value" files (vmstat, numastat) as a map.
pub fn parse_kv(s: &str) -> BTreeMap<String, u64> {
    s.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let k = it.next()?;
            let v = it.next()?.parse().ok()?;
            Some((k.to_string(), v))
        })
        .collect()
}

/// MemTotal and MemFree (bytes) from a node's meminfo ("Node 0 MemFree: 123 kB").
pub fn parse_node_meminfo(s: &str) -> Option<(u64, u64)> {
    let get = |k: &str| {
        s.lines().find_map(|l| {
            let (left, right) = l.split_once(':')?;
            left.trim_end()
                .ends_with(k)
                .then(|| right.split_whitespace().next()?.parse::<u64>().ok())
                .flatten()
        })
    };
    Some((
        get("MemTotal")?.checked_mul(1024)?,
        get("MemFree")?.checked_mul(1024)?,
    ))
}

/// Busy and total jiffies per CPU from /proc/stat.
pub fn parse_cpu_times(s: &str) -> BTreeMap<u32, (u64, u64)> {
    let mut out = BTreeMap::new();
    for l in s.lines() {
        // "cpu0 …" lines only; the aggregate "cpu  …" line has a space.
        let Some(rest) = l
            .strip_prefix("cpu")
            .filter(|r| r.starts_with(|c: char| c.is_ascii_digit()))
        else {
            continue;
        };
        let mut it = rest.split_whitespace();
        let Some(Ok(cpu)) = it.next().map(|c| c.parse::<u32>()) else {
            continue;
        };
        let v: Vec<u64> = it.filter_map(|x| x.parse().ok()).collect();
        if v.len() < 5 {
            continue;
        }
        // user nice system idle iowait irq softirq steal: idle and iowait are not busy;
        // guest time is already inside user.
        // Saturating: absurd counts in damaged text must not overflow.
        let total = v.iter().take(8).fold(0u64, |a, x| a.saturating_add(*x));
        let idle = v[3].saturating_add(v[4]).min(total);
        out.insert(cpu, (total - idle, total));
    }
    out
}

/// The reader side: paths under the roots.
impl Roots {
    fn read(&self, p: &Path) -> Option<String> {
        fs::read_to_string(p).ok()
    }

    /// Read a small file sampled every interval through a kept-open descriptor.
    fn reread(&self, p: &Path) -> Option<String> {
        let mut open = self.open.borrow_mut();
        if !open.contains_key(p) {
            open.insert(p.to_path_buf(), fs::File::open(p).ok()?);
        }
        let f = open.get(p)?;
        let mut buf = vec![0u8; 4096];
        let mut n = 0;
        loop {
            match f.read_at(&mut buf[n..], n as u64) {
                Ok(0) => break,
                Ok(k) => {
                    n += k;
                    if n == buf.len() {
                        buf.resize(buf.len() * 2, 0);
                    }
                }
                Err(_) => {
                    // The task exited (ESRCH) or the file went away: forget it.
                    open.remove(p);
                    return None;
                }
            }
        }
        buf.truncate(n);
        String::from_utf8(buf).ok()
    }

    /// Close the kept-open files of a thread that exited.
    pub fn forget(&self, pid: i32, tid: i32) {
        let dir = self
            .proc
            .join(pid.to_string())
            .join("task")
            .join(tid.to_string());
        self.open.borrow_mut().retain(|k, _| !k.starts_with(&dir));
    }

    fn task(&self, pid: i32, tid: i32, file: &str) -> Option<String> {
        self.reread(
            &self
                .proc
                .join(pid.to_string())
                .join("task")
                .join(tid.to_string())
                .join(file),
        )
    }

    /// Thread ids of a process (empty when it is gone).
    pub fn tasks(&self, pid: i32) -> Vec<i32> {
        let mut v: Vec<i32> = fs::read_dir(self.proc.join(pid.to_string()).join("task"))
            .map(|d| {
                d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        v.sort_unstable();
        v
    }

    /// Child processes of one thread (needs CONFIG_PROC_CHILDREN).
    pub fn children(&self, pid: i32, tid: i32) -> Option<Vec<i32>> {
        let s = self.task(pid, tid, "children")?;
        Some(
            s.split_whitespace()
                .filter_map(|v| v.parse().ok())
                .collect(),
        )
    }

    /// stat of a thread.
    pub fn stat(&self, pid: i32, tid: i32) -> Option<TaskStat> {
        parse_stat(&self.task(pid, tid, "stat")?)
    }

    /// schedstat (run ns, wait ns) of a thread.
    pub fn schedstat(&self, pid: i32, tid: i32) -> Option<(u64, u64)> {
        parse_schedstat(&self.task(pid, tid, "schedstat")?)
    }

    /// Context switches of a thread.
    pub fn ctxt(&self, pid: i32, tid: i32) -> Option<(u64, u64)> {
        parse_ctxt(&self.task(pid, tid, "status")?)
    }

    /// CPU migrations of a thread (needs CONFIG_SCHED_DEBUG's sched file).
    pub fn migrations(&self, pid: i32, tid: i32) -> Option<u64> {
        parse_migrations(&self.task(pid, tid, "sched")?)
    }

    /// Bytes per node of a process, None when numa_maps cannot be read.
    pub fn numa_maps(&self, pid: i32) -> Option<BTreeMap<u32, u64>> {
        Some(parse_numa_maps(
            &self.read(&self.proc.join(pid.to_string()).join("numa_maps"))?,
        ))
    }

    /// /proc/vmstat.
    pub fn vmstat(&self) -> Option<BTreeMap<String, u64>> {
        Some(parse_kv(&self.reread(&self.proc.join("vmstat"))?))
    }

    /// Busy and total jiffies per CPU.
    pub fn cpu_times(&self) -> Option<BTreeMap<u32, (u64, u64)>> {
        Some(parse_cpu_times(&self.reread(&self.proc.join("stat"))?))
    }

    fn node_dir(&self, node: u32) -> PathBuf {
        self.sys
            .join("devices/system/node")
            .join(format!("node{node}"))
    }

    /// A node's numastat counters.
    pub fn numastat(&self, node: u32) -> Option<BTreeMap<String, u64>> {
        Some(parse_kv(
            &self.reread(&self.node_dir(node).join("numastat"))?,
        ))
    }

    /// A node's total and free bytes.
    pub fn node_meminfo(&self, node: u32) -> Option<(u64, u64)> {
        parse_node_meminfo(&self.reread(&self.node_dir(node).join("meminfo"))?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_with_spaces_and_parens_in_the_name() {
        let s = "4242 (a (b) c) R 1 2 3 0 -1 4194560 70 0 1 0 12 34 0 0 20 0 3 0 99 1000 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 5 0 0 0 0 0";
        let t = parse_stat(s).unwrap();
        assert_eq!(t.comm, "a (b) c");
        assert_eq!(t.state, 'R');
        assert_eq!(
            (t.minflt, t.majflt, t.utime, t.stime, t.cpu),
            (70, 1, 12, 34, 5)
        );
        assert!(parse_stat("garbage").is_none());
    }

    #[test]
    fn numa_maps_sums_pages_times_page_size_per_node() {
        let s = "7f00 default anon=3 dirty=3 N0=2 N1=1 kernelpagesize_kB=4\n\
                 7f10 bind:1 huge anon=1 dirty=1 N1=1 kernelpagesize_kB=2048\n\
                 7f20 default file=/x mapped=2 mapmax=3 N0=2 kernelpagesize_kB=4\n";
        let m = parse_numa_maps(s);
        assert_eq!(m[&0], 4 * 4096);
        assert_eq!(m[&1], 4096 + 2048 * 1024);
    }

    #[test]
    fn cpu_times_exclude_idle_and_iowait() {
        let s = "cpu  9 9 9 9 9 9 9 9 0 0\ncpu0 10 0 5 80 5 0 0 0 0 0\ncpu1 1 1 1 1 1 1 1 1 0 0\nintr 5\n";
        let m = parse_cpu_times(s);
        assert_eq!(m[&0], (15, 100));
        assert_eq!(m[&1], (6, 8));
        assert_eq!(m.len(), 2);
    }

    #[test]
    fn small_files() {
        assert_eq!(
            parse_schedstat("81903819 5343928 204\n"),
            Some((81903819, 5343928))
        );
        let st = "Name:\tx\nvoluntary_ctxt_switches:\t7\nnonvoluntary_ctxt_switches:\t3\n";
        assert_eq!(parse_ctxt(st), Some((7, 3)));
        let sched =
            "x (1, #threads: 1)\n---\nse.sum_exec_runtime : 1.0\nse.nr_migrations   :   12\n";
        assert_eq!(parse_migrations(sched), Some(12));
        let mi = "Node 0 MemTotal:       24000 kB\nNode 0 MemFree:        1000 kB\nNode 0 MemUsed: 23000 kB\n";
        assert_eq!(parse_node_meminfo(mi), Some((24000 * 1024, 1000 * 1024)));
        let kv = parse_kv("numa_hit 5\nnuma_miss 0\n");
        assert_eq!(kv["numa_hit"], 5);
    }

    #[test]
    fn live_reads_of_this_process() {
        let r = Roots::default();
        let pid = std::process::id() as i32;
        let tasks = r.tasks(pid);
        assert!(tasks.contains(&pid));
        let st = r.stat(pid, pid).expect("own stat");
        assert!(!st.comm.is_empty());
        let maps = r.numa_maps(pid);
        if let Some(m) = maps {
            assert!(m.values().sum::<u64>() > 0, "a running process has pages");
        }
        assert!(r.cpu_times().is_some_and(|m| !m.is_empty()));
        // A kept-open file reads the same fresh content twice.
        let a = r.cpu_times().unwrap();
        let b = r.cpu_times().unwrap();
        assert_eq!(a.len(), b.len());
        assert!(a
            .iter()
            .all(|(c, (busy, total))| b[c].0 >= *busy && b[c].1 >= *total));
    }
}
