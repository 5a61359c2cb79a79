//! Follows a command's processes and threads through /proc (new threads from
//! task/, new processes from each thread's children file, so fork and exec are
//! seen) and samples each: CPU, run and wait time, faults, context switches,
//! migrations, core counters, and every few intervals the process's pages per node.

use crate::counters::{self, CoreSet};
use crate::procfs::Roots;
use crate::system::put_reading;
use crate::trace::{Entry, Event, FieldDesc, ObjKind, Object, Sample};
use perf_event::Counter;
use std::collections::BTreeMap;

struct Thread {
    pid: i32,
    name: String,
    counters: Vec<(String, Counter)>,
}

struct Process {
    comm: String,
    alive: bool,
}

/// The set of processes and threads descended from one root process.
pub struct Follower {
    roots: Roots,
    core: Option<CoreSet>,
    procs: BTreeMap<i32, Process>,
    threads: BTreeMap<i32, Thread>,
}

/// The OS fields every follower samples: (scope, name, unit, is a counter, source, meaning).
const OS_FIELDS: &[(&str, &str, &str, bool, &str, &str)] = &[
    (
        "thread",
        "cpu",
        "cpu",
        false,
        "proc",
        "CPU the thread last ran on (/proc task stat)",
    ),
    (
        "thread",
        "running",
        "0/1",
        false,
        "proc",
        "1 when the thread was runnable (state R)",
    ),
    (
        "thread",
        "run_ns",
        "ns",
        true,
        "proc",
        "time on a CPU (schedstat)",
    ),
    (
        "thread",
        "wait_ns",
        "ns",
        true,
        "proc",
        "time runnable but waiting for a CPU (schedstat)",
    ),
    (
        "thread",
        "minflt",
        "count",
        true,
        "proc",
        "minor page faults",
    ),
    (
        "thread",
        "majflt",
        "count",
        true,
        "proc",
        "major page faults",
    ),
    (
        "thread",
        "vcsw",
        "count",
        true,
        "proc",
        "voluntary context switches",
    ),
    (
        "thread",
        "ivcsw",
        "count",
        true,
        "proc",
        "involuntary context switches",
    ),
    (
        "thread",
        "migrations",
        "count",
        true,
        "proc-sched",
        "migrations between CPUs (se.nr_migrations)",
    ),
    (
        "process",
        "mem",
        "bytes",
        false,
        "numa_maps",
        "resident bytes of the process, all nodes",
    ),
    (
        "process",
        "mem.N",
        "bytes",
        false,
        "numa_maps",
        "resident bytes of the process on node N",
    ),
];

impl Follower {
    /// Follow `root`; `core` opens per-thread hardware counters where they work.
    pub fn new(roots: Roots, root: i32, core: Option<CoreSet>) -> Follower {
        let mut procs = BTreeMap::new();
        procs.insert(
            root,
            Process {
                comm: String::new(),
                alive: true,
            },
        );
        Follower {
            roots,
            core,
            procs,
            threads: BTreeMap::new(),
        }
    }

    /// Field descriptions of thread and process samples.
    pub fn fields(&self) -> Vec<FieldDesc> {
        let mut v: Vec<FieldDesc> = OS_FIELDS
            .iter()
            .map(|&(scope, name, unit, counter, source, what)| {
                FieldDesc::new(scope, name, unit, counter, source, what)
            })
            .collect();
        if let Some(c) = &self.core {
            for d in c.descs.iter().filter(|d| d.error.is_none()) {
                v.push(FieldDesc::new(
                    "thread",
                    &d.field,
                    "count",
                    true,
                    "perf-core",
                    &format!("{} (raw; .enabled_ns/.running_ns beside it)", d.event),
                ));
            }
        }
        v
    }

    /// Live threads.
    pub fn live_threads(&self) -> usize {
        self.threads.len()
    }

    /// Find new processes and threads, note the ones gone; entries go to `out`.
    pub fn discover(&mut self, t_ns: u64, out: &mut Vec<Entry>) {
        let mut queue: Vec<i32> = self
            .procs
            .iter()
            .filter(|(_, p)| p.alive)
            .map(|(k, _)| *k)
            .collect();
        // Threads listed in some live process's task directory this round.
        let mut seen = std::collections::BTreeSet::new();
        while let Some(pid) = queue.pop() {
            let tasks = self.roots.tasks(pid);
            seen.extend(tasks.iter().copied());
            if tasks.is_empty() {
                self.process_exited(t_ns, pid, out);
                continue;
            }
            self.note_comm(t_ns, pid, out);
            for tid in tasks {
                if !self.threads.contains_key(&tid) {
                    self.add_thread(t_ns, pid, tid, out);
                }
                self.adopt_children(t_ns, pid, tid, &mut queue, out);
            }
        }
        self.forget_gone(t_ns, &seen, out);
    }

    /// A process with no tasks left: mark it dead, once, with an exit event.
    fn process_exited(&mut self, t_ns: u64, pid: i32, out: &mut Vec<Entry>) {
        if let Some(p) = self.procs.get_mut(&pid) {
            if p.alive {
                p.alive = false;
                out.push(Entry::Event(Event {
                    t_ns,
                    obj: format!("p{pid}"),
                    what: "exit".into(),
                    detail: String::new(),
                }));
            }
        }
    }

    /// A live process's name: the first one found makes its object, a new one later
    /// is an exec.
    fn note_comm(&mut self, t_ns: u64, pid: i32, out: &mut Vec<Entry>) {
        let comm = self
            .roots
            .stat(pid, pid)
            .map(|s| s.comm)
            .unwrap_or_default();
        let p = self
            .procs
            .get_mut(&pid)
            .expect("queued processes are known");
        if p.comm.is_empty() {
            p.comm = comm.clone();
            out.push(Entry::Object(Object {
                t_ns,
                id: format!("p{pid}"),
                kind: ObjKind::Process,
                pid: Some(pid),
                tid: None,
                node: None,
                name: comm,
                parent: None,
            }));
        } else if !comm.is_empty() && comm != p.comm {
            out.push(Entry::Event(Event {
                t_ns,
                obj: format!("p{pid}"),
                what: "exec".into(),
                detail: comm.clone(),
            }));
            p.comm = comm;
        }
    }

    /// Thread `tid`'s children not yet known: followed from now on (queued to be
    /// searched this round), each with a fork event.
    fn adopt_children(
        &mut self,
        t_ns: u64,
        pid: i32,
        tid: i32,
        queue: &mut Vec<i32>,
        out: &mut Vec<Entry>,
    ) {
        for child in self.roots.children(pid, tid).unwrap_or_default() {
            if let std::collections::btree_map::Entry::Vacant(e) = self.procs.entry(child) {
                e.insert(Process {
                    comm: String::new(),
                    alive: true,
                });
                out.push(Entry::Event(Event {
                    t_ns,
                    obj: format!("p{pid}"),
                    what: "fork".into(),
                    detail: format!("child process {child}"),
                }));
                queue.push(child);
            }
        }
    }

    /// Threads no live process listed this round: forgotten, each with an exit event.
    fn forget_gone(
        &mut self,
        t_ns: u64,
        seen: &std::collections::BTreeSet<i32>,
        out: &mut Vec<Entry>,
    ) {
        let gone: Vec<i32> = self
            .threads
            .iter()
            .filter(|(tid, _)| !seen.contains(*tid))
            .map(|(k, _)| *k)
            .collect();
        for tid in gone {
            if let Some(t) = self.threads.remove(&tid) {
                self.roots.forget(t.pid, tid);
            }
            out.push(Entry::Event(Event {
                t_ns,
                obj: format!("t{tid}"),
                what: "exit".into(),
                detail: String::new(),
            }));
        }
    }

    fn add_thread(&mut self, t_ns: u64, pid: i32, tid: i32, out: &mut Vec<Entry>) {
        let name = self
            .roots
            .stat(pid, tid)
            .map(|s| s.comm)
            .unwrap_or_default();
        out.push(Entry::Object(Object {
            t_ns,
            id: format!("t{tid}"),
            kind: ObjKind::Thread,
            pid: Some(pid),
            tid: Some(tid),
            node: None,
            name: name.clone(),
            parent: Some(format!("p{pid}")),
        }));
        let counters = match &self.core {
            Some(c) => {
                let (ok, failed) = c.open(tid);
                for why in failed {
                    out.push(Entry::Event(Event {
                        t_ns,
                        obj: format!("t{tid}"),
                        what: "counter-failed".into(),
                        detail: why,
                    }));
                }
                ok
            }
            None => vec![],
        };
        self.threads.insert(
            tid,
            Thread {
                pid,
                name,
                counters,
            },
        );
    }

    /// Sample every live thread, and with `pages` every live process's placement;
    /// returns the CPU time spent reading placement (numa_maps walks page tables, so
    /// its cost grows with the processes' size).
    pub fn sample(&mut self, t_ns: u64, pages: bool, out: &mut Vec<Entry>) -> std::time::Duration {
        for (tid, t) in self.threads.iter_mut() {
            let Some(st) = self.roots.stat(t.pid, *tid) else {
                continue;
            };
            // A new thread names itself after it starts, so its first name may be its parent's.
            if st.comm != t.name {
                out.push(Entry::Event(Event {
                    t_ns,
                    obj: format!("t{tid}"),
                    what: "rename".into(),
                    detail: st.comm.clone(),
                }));
                t.name = st.comm.clone();
            }
            let mut v = BTreeMap::new();
            v.insert("cpu".to_string(), st.cpu as f64);
            v.insert("running".into(), if st.state == 'R' { 1.0 } else { 0.0 });
            v.insert("minflt".into(), st.minflt as f64);
            v.insert("majflt".into(), st.majflt as f64);
            if let Some((run, wait)) = self.roots.schedstat(t.pid, *tid) {
                v.insert("run_ns".into(), run as f64);
                v.insert("wait_ns".into(), wait as f64);
            }
            if let Some((a, b)) = self.roots.ctxt(t.pid, *tid) {
                v.insert("vcsw".into(), a as f64);
                v.insert("ivcsw".into(), b as f64);
            }
            if let Some(m) = self.roots.migrations(t.pid, *tid) {
                v.insert("migrations".into(), m as f64);
            }
            for (field, c) in t.counters.iter_mut() {
                if let Ok(r) = counters::read(c) {
                    put_reading(&mut v, field, &r);
                }
            }
            out.push(Entry::Sample(Sample {
                t_ns,
                obj: format!("t{tid}"),
                v,
            }));
        }
        if !pages {
            return std::time::Duration::ZERO;
        }
        // CPU time, not wall time: the budget bounds what the reads take from the machine,
        // and a sampler preempted mid-read (a busy host, an emulated guest) took nothing.
        let t0 = thread_cpu();
        for (pid, p) in &self.procs {
            if !p.alive {
                continue;
            }
            let Some(m) = self.roots.numa_maps(*pid) else {
                continue;
            };
            let mut v: BTreeMap<String, f64> = m
                .iter()
                .map(|(n, b)| (format!("mem.{n}"), *b as f64))
                .collect();
            v.insert("mem".into(), m.values().sum::<u64>() as f64);
            out.push(Entry::Sample(Sample {
                t_ns,
                obj: format!("p{pid}"),
                v,
            }));
        }
        thread_cpu().saturating_sub(t0)
    }
}

/// CPU time of the calling thread.
fn thread_cpu() -> std::time::Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}
