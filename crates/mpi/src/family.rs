//! Everything mpirun started, kept track of so that none of it outlives the job. Open
//! MPI starts each remote shell (ssh, or an agent) in a process group of its own, and
//! what that shell starts (a daemon, on an emulated host one that holds the launcher's
//! output open) escapes a kill of mpirun's group; once mpirun has ended, its orphans
//! are no longer below it. So the launcher notes every descendant of mpirun as it
//! watches the job (pid and start time, which tells a reused pid apart), and kills
//! those still running when the job ends.

use std::collections::HashMap;

/// mpirun's descendants seen so far: pid → start time (clock ticks since boot).
#[derive(Debug, Default, Clone)]
pub struct Family {
    seen: HashMap<i32, u64>,
}

/// A running process's parent pid and start time, from `/proc/PID/stat` (None for
/// one that is gone or a zombie: it runs nothing any more).
fn parent_and_start(pid: i32) -> Option<(i32, u64)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: the fields follow the last ')'.
    let f: Vec<&str> = s.rsplit_once(')')?.1.split_whitespace().collect();
    if f.first() == Some(&"Z") {
        return None;
    }
    Some((f.get(1)?.parse().ok()?, f.get(19)?.parse().ok()?))
}

/// Every process below `root` (children, theirs, …), `root` excluded.
pub fn descendants(root: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let parents: Vec<(i32, i32)> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| Some((pid, parent_and_start(pid)?.0)))
        .collect();
    let mut family = vec![root];
    let mut i = 0;
    while i < family.len() {
        let p = family[i];
        family.extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    family.split_off(1)
}

impl Family {
    /// Note `pids` (descendants of the launcher just read).
    pub fn note(&mut self, pids: &[i32]) {
        for &pid in pids {
            if let Some((_, start)) = parent_and_start(pid) {
                self.seen.entry(pid).or_insert(start);
            }
        }
    }

    /// The processes noted that still run (same pid, same start time).
    pub fn left(&self) -> Vec<i32> {
        let mut v: Vec<i32> = self
            .seen
            .iter()
            .filter(|(&pid, &start)| parent_and_start(pid).is_some_and(|(_, s)| s == start))
            .map(|(&pid, _)| pid)
            .collect();
        v.sort_unstable();
        v
    }

    /// SIGKILL what is left, each with the process group it leads: a remote shell's
    /// group holds what it started. How many were killed.
    pub fn kill_left(&self) -> usize {
        let left = self.left();
        for &pid in &left {
            // SAFETY: getpgid and kill take plain integers; a process already gone only
            // makes them fail with ESRCH. The pid was checked against its start time.
            unsafe {
                if libc::getpgid(pid) == pid {
                    libc::kill(-pid, libc::SIGKILL);
                }
                libc::kill(pid, libc::SIGKILL);
            }
        }
        left.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::Command;
    use std::time::{Duration, Instant};

    #[test]
    fn a_grandchild_in_its_own_group_is_noted_and_killed_after_its_parent_ended() {
        // A shell in its own process group (as Open MPI starts its remote shell) that
        // backgrounds a long sleep and exits: the sleep is orphaned.
        let mut sh = Command::new("sh")
            .args(["-c", "sleep 60 & echo $!; sleep 2"])
            .stdout(std::process::Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(sh.stdout.as_mut().unwrap()),
            &mut line,
        )
        .unwrap();
        let sleeper: i32 = line.trim().parse().unwrap();
        let mut fam = Family::default();
        let me = std::process::id() as i32;
        let t = Instant::now();
        while !fam.seen.contains_key(&sleeper) && t.elapsed() < Duration::from_secs(20) {
            fam.note(&descendants(me));
        }
        assert!(fam.seen.contains_key(&sleeper), "the grandchild was noted");
        sh.wait().unwrap();
        assert!(fam.left().contains(&sleeper), "it outlived its parent");
        assert!(!descendants(me).contains(&sleeper), "no longer below us");
        assert!(fam.kill_left() >= 1);
        let t = Instant::now();
        while fam.left().contains(&sleeper) && t.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(!fam.left().contains(&sleeper), "killed");
    }

    #[test]
    fn a_reused_pid_is_not_what_was_noted() {
        let mut fam = Family::default();
        // A pid noted with another start time is someone else's now.
        let me = std::process::id() as i32;
        fam.seen.insert(me, u64::MAX);
        assert!(fam.left().is_empty());
    }
}
