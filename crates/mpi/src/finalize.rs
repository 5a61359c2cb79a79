//! What a rank does just before MPI_Finalize. MPICH from 3.3 to 4.1 over UCX (Debian
//! bookworm's 4.0.2 is ch4:ucx) can hang ending a job across hosts: its finalize
//! closes every UCX endpoint, then waits in a PMI barrier without progressing UCX. Over
//! UCX's TCP transport an endpoint's close sends a flush to the peer and waits for the
//! peer's acknowledgement, which the peer sends only while it progresses UCX. A rank
//! whose peer was still inside an MPI call when its flush arrived (the records' gather,
//! a barrier's last message) gets its acknowledgement, finishes its closes and sits in
//! the PMI barrier; the peer's own close then waits for an acknowledgement that never
//! comes. Seen across two emulated hosts: one rank in `read` on the PMI socket, the
//! other spinning in `ucp_worker_progress` under `PMPI_Finalize`. MPICH 4.2 removed that
//! barrier (its commit 08d8105b, "having the process stuck in PMI_barrier may prevent
//! other processes to complete the previous ucp_disconnect_nb").
//!
//! numalab meets its ranks in a PMI barrier of its own first (PMI-1's `barrier_in` on
//! the process manager's socket, `PMI_FD`): once every rank is there no rank is inside
//! an MPI call, so each sends its own flushes before it acknowledges another's and
//! every close completes.

use std::os::fd::RawFd;

/// Whether `library` (MPI_Get_library_version's text) is an MPICH whose finalize waits
/// in a PMI barrier after closing its UCX endpoints: versions 3.3 to 4.1, device ch4:ucx,
/// with the simple PMI-1 client (the default; a `--with-pmi`/`--with-pmix` build speaks
/// another protocol on `PMI_FD`).
pub fn hangs_in_finalize(library: &str) -> bool {
    let field = |name: &str| {
        library
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(str::trim)
    };
    let Some(version) = field("MPICH Version:") else {
        return false;
    };
    let mut parts = version.split(|c: char| !c.is_ascii_digit());
    let major: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let minor: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let affected = (3, 3) <= (major, minor) && (major, minor) < (4, 2);
    let ucx = field("MPICH Device:").is_some_and(|d| d.contains("ucx"));
    let other_pmi = field("MPICH configure:").is_some_and(|c| {
        c.split_whitespace()
            .any(|o| o.starts_with("--with-pmi") && o != "--with-pmi=simple")
    });
    affected && ucx && !other_pmi
}

/// The process manager's PMI-1 socket, when this rank has one to meet the others on: a
/// job of `size` > 1 ranks started by hydra or by srun's `--mpi=pmi2` (which speaks
/// PMI-1 to a client that began in PMI-1, as MPICH's does), and MPICH not asked for
/// PMI-2 (`MPIR_CVAR_PMI_VERSION=2`: another protocol on the same socket). Under srun
/// the hang is the same: MPICH's UCX over TCP hung 3 of 3 jobs whose rank 1 was late
/// (`NUMALAB_MPI_LATE_RANK`) without this barrier, across two emulated hosts.
fn pmi_socket(size: usize, get: &dyn Fn(&str) -> Option<String>) -> Option<RawFd> {
    let pmi2 = get("MPIR_CVAR_PMI_VERSION").is_some_and(|v| v.trim() == "2");
    if size < 2 || pmi2 {
        return None;
    }
    get("PMI_FD")?.trim().parse().ok().filter(|fd| *fd >= 0)
}

/// PMI-1's barrier on `fd`: `cmd=barrier_in`, then wait for `cmd=barrier_out`. Reads
/// one byte at a time so nothing past the reply is taken from MPICH's PMI client.
pub fn pmi_barrier(fd: RawFd) -> Result<(), String> {
    let msg = b"cmd=barrier_in\n";
    let mut sent = 0;
    while sent < msg.len() {
        // SAFETY: writing from a live buffer to a descriptor we do not own or close.
        let n = unsafe { libc::write(fd, msg[sent..].as_ptr().cast(), msg.len() - sent) };
        match n {
            n if n > 0 => sent += n as usize,
            _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            _ => return Err(format!("write: {}", std::io::Error::last_os_error())),
        }
    }
    let mut reply = Vec::new();
    loop {
        let mut b = 0u8;
        // SAFETY: reading one byte into a live local.
        let n = unsafe { libc::read(fd, (&mut b as *mut u8).cast(), 1) };
        match n {
            1 if b == b'\n' => break,
            1 if reply.len() < 1024 => reply.push(b),
            1 => return Err("reply longer than 1 KiB".into()),
            0 => return Err("the process manager closed the socket".into()),
            _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            _ => return Err(format!("read: {}", std::io::Error::last_os_error())),
        }
    }
    let reply = String::from_utf8_lossy(&reply);
    match reply.trim().starts_with("cmd=barrier_out") {
        true => Ok(()),
        false => Err(format!("unexpected reply '{reply}'")),
    }
}

/// Called by every rank of a job of `size` ranks as its last step before
/// MPI_Finalize, with no MPI call after it but the finalize: with an MPICH that
/// [`hangs_in_finalize`], meet the other ranks in a PMI barrier (see the module's
/// text); otherwise nothing.
pub fn before_finalize(size: usize, rank: usize) {
    if !hangs_in_finalize(&crate::launcher::built_with()) {
        return;
    }
    let Some(fd) = pmi_socket(size, &|k| std::env::var(k).ok()) else {
        return;
    };
    if let Err(e) = pmi_barrier(fd) {
        eprintln!(
            "numalab: warning: rank {rank}: the PMI barrier before MPI_Finalize failed ({e}); MPICH's finalize may not end"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    const DEBIAN: &str = "MPICH Version:\t4.0.2\nMPICH Release date:\tThu Apr  7 2022\nMPICH ABI:\t14:2:2\nMPICH Device:\tch4:ucx\nMPICH configure:\t--with-device=ch4:ucx --with-pm=hydra --with-slurm=/usr\n";

    #[test]
    fn only_mpich_3_3_to_4_1_over_ucx_with_simple_pmi_is_affected() {
        assert!(hangs_in_finalize(DEBIAN));
        assert!(hangs_in_finalize(&DEBIAN.replace("4.0.2", "3.4.3")));
        assert!(hangs_in_finalize(&DEBIAN.replace("4.0.2", "4.1rc1")));
        assert!(!hangs_in_finalize(&DEBIAN.replace("4.0.2", "4.2.0")));
        assert!(!hangs_in_finalize(&DEBIAN.replace("4.0.2", "3.2")));
        assert!(!hangs_in_finalize(
            &DEBIAN.replace("ch4:ucx\n", "ch4:ofi\n")
        ));
        assert!(!hangs_in_finalize(
            &DEBIAN.replace("--with-pm=hydra", "--with-pmix=/usr")
        ));
        assert!(hangs_in_finalize(
            &DEBIAN.replace("--with-pm=hydra", "--with-pmi=simple")
        ));
        assert!(!hangs_in_finalize(
            "Open MPI v4.1.4, package: Debian OpenMPI"
        ));
        assert!(!hangs_in_finalize(""));
    }

    #[test]
    fn the_pmi_socket_is_the_process_managers_for_a_job_of_two_or_more_in_pmi_1() {
        let env = |vars: &[(&str, &str)]| {
            let m: HashMap<String, String> = vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            move |k: &str| m.get(k).cloned()
        };
        assert_eq!(pmi_socket(2, &env(&[("PMI_FD", "12")])), Some(12));
        assert_eq!(pmi_socket(1, &env(&[("PMI_FD", "12")])), None);
        assert_eq!(pmi_socket(2, &env(&[])), None);
        assert_eq!(pmi_socket(2, &env(&[("PMI_FD", "x")])), None);
        let srun = env(&[("PMI_FD", "12"), ("SLURM_STEP_ID", "0")]);
        assert_eq!(pmi_socket(2, &srun), Some(12));
        let pmi2 = env(&[("PMI_FD", "12"), ("MPIR_CVAR_PMI_VERSION", "2")]);
        assert_eq!(pmi_socket(2, &pmi2), None);
    }

    /// A process manager's side of the socket: read one request line, answer `reply`.
    fn manager(reply: &'static str) -> (UnixStream, std::thread::JoinHandle<String>) {
        let (rank, mut pm) = UnixStream::pair().unwrap();
        let h = std::thread::spawn(move || {
            let mut got = Vec::new();
            let mut b = [0u8; 1];
            while pm.read(&mut b).unwrap() == 1 && b[0] != b'\n' {
                got.push(b[0]);
            }
            pm.write_all(reply.as_bytes()).unwrap();
            String::from_utf8(got).unwrap()
        });
        (rank, h)
    }

    #[test]
    fn the_barrier_says_barrier_in_and_waits_for_barrier_out_only() {
        let (rank, pm) = manager("cmd=barrier_out\ncmd=next\n");
        assert_eq!(pmi_barrier(rank.as_raw_fd()), Ok(()));
        assert_eq!(pm.join().unwrap(), "cmd=barrier_in");
        // What follows the reply stays on the socket, for MPICH's own client.
        let mut rest = String::new();
        let mut r = &rank;
        r.read_to_string(&mut rest).unwrap();
        assert_eq!(rest, "cmd=next\n");
    }

    #[test]
    fn a_wrong_reply_or_a_closed_socket_is_an_error() {
        let (rank, pm) = manager("cmd=abort\n");
        let e = pmi_barrier(rank.as_raw_fd()).unwrap_err();
        assert_eq!(e, "unexpected reply 'cmd=abort'");
        pm.join().unwrap();
        let (rank, pm) = manager("");
        let e = pmi_barrier(rank.as_raw_fd()).unwrap_err();
        assert!(e.contains("closed"), "{e}");
        pm.join().unwrap();
    }
}
