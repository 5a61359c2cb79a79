//! What this process may do of what numalab needs, found by trying it: capabilities,
//! the NUMA system calls a sandbox (a container's seccomp profile) may refuse, CPU
//! pinning, perf events, reserved huge pages and other processes' numa_maps. Each
//! refusal comes with its reason and the fix (capability, sysctl, mount or profile).

use std::fs;
use std::io::Error as IoError;

/// One thing numalab needs that this process may not do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied {
    /// The feature, e.g. "memory binding (mbind)".
    pub feature: String,
    /// Why: what was refused and by what.
    pub reason: String,
    /// How to get it.
    pub fix: String,
}

fn denied(feature: &str, reason: String, fix: &str) -> Denied {
    Denied {
        feature: feature.into(),
        reason,
        fix: fix.into(),
    }
}

const CAP_SYS_ADMIN: u32 = 21;
const CAP_SYS_NICE: u32 = 23;
const CAP_PERFMON: u32 = 38;

/// The effective capability set of this process (CapEff of /proc/self/status).
fn effective_caps() -> Option<u64> {
    let s = fs::read_to_string("/proc/self/status").ok()?;
    let hex = s.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    u64::from_str_radix(hex.trim(), 16).ok()
}

fn has_cap(caps: Option<u64>, cap: u32) -> bool {
    caps.is_some_and(|c| c & (1 << cap) != 0)
}

/// The fix for a NUMA system call a sandbox refuses.
const SECCOMP_FIX: &str = "allow mbind, set_mempolicy and move_pages in the sandbox: docker/podman run --cap-add SYS_NICE (their default seccomp profile allows these calls only with it), or --security-opt seccomp=PROFILE listing them";

/// Why a system call failed, in words, with the fix; None when it worked.
fn call_refusal(call: &str, rc: libc::c_long, err: IoError) -> Option<(String, &'static str)> {
    if rc >= 0 {
        return None;
    }
    Some(match err.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => (
            format!("{call}(2) is refused ({err}): a seccomp profile or security module denies it, as a container's default profile does without CAP_SYS_NICE"),
            SECCOMP_FIX,
        ),
        Some(libc::ENOSYS) => (
            format!("{call}(2) does not exist here ({err}): the kernel is built without CONFIG_NUMA, or a seccomp profile answers ENOSYS"),
            "a kernel with CONFIG_NUMA, or a seccomp profile that allows the call",
        ),
        _ => (
            format!("{call}(2) failed ({err})"),
            "see the error; numalab needs this call to place and prove memory",
        ),
    })
}

/// Try the NUMA calls numalab binds and proves memory with, on one page of its own
/// in a scratch thread (the policy set is the default one, nothing moves).
fn numa_calls() -> Vec<(&'static str, &'static str, libc::c_long, IoError)> {
    std::thread::spawn(|| {
        let page = 4096usize;
        // SAFETY: a private anonymous mapping of one page, unmapped below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Vec::new();
        }
        let mut out = Vec::new();
        let mut try_call = |feature, call, f: &dyn Fn() -> libc::c_long| {
            let rc = f();
            out.push((feature, call, rc, IoError::last_os_error()));
        };
        // SAFETY: p..p+page is our mapping; MPOL_DEFAULT takes no node mask.
        try_call("memory binding (mbind)", "mbind", &|| unsafe {
            libc::syscall(libc::SYS_mbind, p, page, 0, 0usize, 0usize, 0u32)
        });
        // SAFETY: MPOL_DEFAULT with no mask resets this scratch thread's policy only.
        try_call(
            "memory policy (set_mempolicy)",
            "set_mempolicy",
            &|| unsafe { libc::syscall(libc::SYS_set_mempolicy, 0, 0usize, 0usize) },
        );
        // SAFETY: the page is ours; writing it makes it present for the query.
        unsafe { std::ptr::write_volatile(p as *mut u8, 1) };
        let addrs = [p];
        let status = [0i32];
        // SAFETY: pid 0, one page, nodes NULL: a query of our own page.
        try_call("placement proof (move_pages)", "move_pages", &|| unsafe {
            libc::syscall(
                libc::SYS_move_pages,
                0,
                1usize,
                addrs.as_ptr(),
                std::ptr::null::<i32>(),
                status.as_ptr() as *mut i32,
                0,
            )
        });
        // SAFETY: unmapping the mapping made above.
        unsafe { libc::munmap(p, page) };
        out
    })
    .join()
    .unwrap_or_default()
}

/// CPU pinning: set this scratch thread's affinity to what it already has.
fn pinning() -> Option<Denied> {
    std::thread::spawn(|| {
        // SAFETY: a zeroed cpu_set_t is empty; both calls are sized to it.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: as above.
        if unsafe { libc::sched_getaffinity(0, size, &mut set) } != 0 {
            return None;
        }
        // SAFETY: as above.
        let rc = unsafe { libc::sched_setaffinity(0, size, &set) } as libc::c_long;
        let (reason, _) = call_refusal("sched_setaffinity", rc, IoError::last_os_error())?;
        Some(denied(
            "CPU pinning (sched_setaffinity)",
            reason,
            "allow sched_setaffinity in the sandbox's seccomp profile",
        ))
    })
    .join()
    .unwrap_or(None)
}

/// The NUMA system calls this process may not make, each with why and the fix.
pub fn numa_call_refusals() -> Vec<Denied> {
    numa_calls()
        .into_iter()
        .filter_map(|(feature, call, rc, err)| {
            let (reason, fix) = call_refusal(call, rc, err)?;
            Some(denied(feature, reason, fix))
        })
        .collect()
}

/// The refusal of one NUMA call ("mbind", "set_mempolicy", "move_pages"), if refused.
pub fn refusal_of(call: &str) -> Option<Denied> {
    numa_call_refusals()
        .into_iter()
        .find(|d| d.feature.contains(&format!("({call})")))
}

fn sys_nice(caps: Option<u64>) -> Option<Denied> {
    if has_cap(caps, CAP_SYS_NICE) {
        return None;
    }
    Some(denied(
        "CAP_SYS_NICE",
        format!("this process lacks it (CapEff {}): moving another process's pages (MPOL_MF_MOVE_ALL, migrate_pages) is refused, and a container's default seccomp profile refuses mbind, set_mempolicy and move_pages without it", caps.map_or("unreadable".into(), |c| format!("{c:#x}"))),
        "grant it: docker/podman run --cap-add SYS_NICE, or keep cap_sys_nice in setpriv's or capsh's sets",
    ))
}

fn perf_paranoid(caps: Option<u64>) -> Option<Denied> {
    let level: i32 = fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()?;
    if level <= 0 || has_cap(caps, CAP_PERFMON) || has_cap(caps, CAP_SYS_ADMIN) {
        return None;
    }
    let what = match level {
        3.. => "every perf event (core and uncore counters) is refused to processes without CAP_PERFMON",
        2 => "system-wide and uncore counters (monitor's memory-controller MB/s) are refused; per-thread counters count user space only",
        _ => "system-wide and uncore counters (monitor's memory-controller MB/s) are refused",
    };
    Some(denied(
        "hardware counters (perf_event_paranoid)",
        format!("kernel.perf_event_paranoid is {level}: {what}"),
        "sysctl -w kernel.perf_event_paranoid=0 (on the host for a container), or grant CAP_PERFMON (docker run --cap-add PERFMON)",
    ))
}

fn hugepages() -> Vec<Denied> {
    let count = |f: &str| -> Option<u64> { fs::read_to_string(f).ok()?.trim().parse().ok() };
    let mut out = Vec::new();
    if count("/proc/sys/vm/nr_hugepages") == Some(0) {
        out.push(denied(
            "2 MiB huge pages (hugetlb)",
            "none reserved (vm.nr_hugepages is 0): --page-size 2m is refused; --page-size thp does not need them".into(),
            "reserve them as root: sysctl -w vm.nr_hugepages=N (a container shares the host's pool: reserve on the host), or per node in /sys/devices/system/node/nodeK/hugepages/hugepages-2048kB/nr_hugepages",
        ));
    }
    let gig = "/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages";
    if count(gig) == Some(0) {
        out.push(denied(
            "1 GiB huge pages (hugetlb)",
            format!("none reserved ({gig} is 0): --page-size 1g is refused"),
            "boot with hugepagesz=1G hugepages=N, or as root echo N > /sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages",
        ));
    }
    out
}

/// Another process's numa_maps (init's, or the parent's when this is pid 1).
fn other_numa_maps() -> Option<Denied> {
    let me = std::process::id();
    // SAFETY: getppid has no preconditions.
    let other = if me == 1 {
        (unsafe { libc::getppid() }) as u32
    } else {
        1
    };
    let path = format!("/proc/{other}/numa_maps");
    let err = match fs::read_to_string(&path) {
        Ok(_) => return None,
        Err(e) => e,
    };
    let (reason, fix) = match err.kind() {
        std::io::ErrorKind::NotFound => (
            format!("{path} does not exist: the kernel is built without CONFIG_NUMA"),
            "a kernel with CONFIG_NUMA",
        ),
        _ => (
            format!("reading {path} is refused ({err}): it needs ptrace read access to that process (the same user within kernel.yama.ptrace_scope, or CAP_SYS_PTRACE)"),
            "run as the process's user, or grant CAP_SYS_PTRACE (docker run --cap-add SYS_PTRACE); `numalab record` of its own command needs neither",
        ),
    };
    Some(denied("other processes' pages (numa_maps)", reason, fix))
}

/// Everything numalab needs that this process may not do, with reasons and fixes.
pub fn probe() -> Vec<Denied> {
    let caps = effective_caps();
    let mut out: Vec<Denied> = sys_nice(caps).into_iter().collect();
    out.extend(numa_call_refusals());
    out.extend(pinning());
    out.extend(perf_paranoid(caps));
    out.extend(hugepages());
    out.extend(other_numa_maps());
    out
}
