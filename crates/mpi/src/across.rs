//! What numalab sets itself when its ranks span hosts (a `--hostfile`), so that a job
//! across machines runs without the user's MPI environment carrying it: Open MPI's
//! TCP transport on the hosts' own network, numalab's variables passed to the remote
//! ranks, and each setting with its reason, which the ranks record as provenance.

use crate::hostfile::HostLine;
use std::ffi::OsString;
use std::net::Ipv4Addr;

/// The variable that carries the settings to the ranks (`name=value (why)` joined by
/// "; "), read back by [`recorded`].
pub const SETTINGS_VAR: &str = "NUMALAB_LAUNCH_SETTINGS";

/// mpirun arguments and what they set, with why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// Arguments for mpirun, before the program.
    pub args: Vec<OsString>,
    /// One `name=value (why)` per setting, for provenance.
    pub said: Vec<String>,
    /// The same settings as environment variables (`OMPI_MCA_name`), for a launcher
    /// that passes its environment to every rank (srun); the user's own are left out,
    /// as they are in that environment already.
    pub env: Vec<(String, String)>,
}

impl Settings {
    fn mca(&mut self, name: &str, value: &str, why: &str) {
        // The user's own choice, in the environment, wins and is recorded as theirs.
        if let Ok(v) = std::env::var(format!("OMPI_MCA_{name}")) {
            self.said
                .push(format!("{name}={v} (the user's OMPI_MCA_{name})"));
            return;
        }
        self.args
            .extend(["--mca".into(), name.into(), value.into()]);
        self.env.push((format!("OMPI_MCA_{name}"), value.into()));
        self.said.push(format!("{name}={value} ({why})"));
    }

    /// An environment variable for every rank (`-x NAME=VALUE`); the user's own value,
    /// in the environment, is passed on instead and recorded as theirs.
    fn env(&mut self, name: &str, value: &str, why: &str) {
        if let Ok(v) = std::env::var(name) {
            self.args.extend(["-x".into(), name.into()]);
            self.said.push(format!("{name}={v} (the user's)"));
            return;
        }
        self.args
            .extend(["-x".into(), format!("{name}={value}").into()]);
        self.env.push((name.into(), value.into()));
        self.said.push(format!("{name}={value} ({why})"));
    }
}

/// Open MPI's settings for ranks on `hosts`, given the names of the environment
/// variables numalab's ranks read (`forward`), which a remote host's daemon does not
/// inherit as a local one does.
pub fn open_mpi(hosts: &[HostLine], forward: &[String]) -> Settings {
    let mut s = open_mpi_transport(hosts);
    for v in forward {
        s.args.extend(["-x".into(), v.into()]);
    }
    s.said.push(format!(
        "{} passed to every host (-x), as a remote daemon does not inherit them",
        if forward.is_empty() {
            "no NUMALAB_ variable".to_string()
        } else {
            forward.join(", ")
        }
    ));
    s
}

/// Open MPI's transport for ranks on `hosts`: TCP on the hosts' network, keepalives
/// that find a host cut off, one-sided windows over UCX (as `--mca`/`-x` arguments and
/// as the same variables, see [`Settings::env`]).
pub fn open_mpi_transport(hosts: &[HostLine]) -> Settings {
    let mut s = Settings::default();
    s.mca(
        "pml",
        "ob1",
        "point-to-point over the byte transports below, not UCX, which needs its own settings per network",
    );
    s.mca(
        "btl",
        "self,vader,tcp",
        "TCP between hosts, shared memory within one",
    );
    match hosts_network(hosts) {
        Some((net, host, _)) => {
            let why = format!("the network this machine reaches {host} on");
            s.mca("btl_tcp_if_include", &net, &why);
            s.mca("oob_tcp_if_include", &net, &why);
        }
        None => s.said.push(
            "btl_tcp_if_include unset (no interface of this machine is on a remote host's network: Open MPI chooses)".into(),
        ),
    }
    // A host whose link goes down mid-run leaves its ranks and daemon waiting for
    // ever: mpirun's own connection to each daemon then probes it, and a daemon lost
    // ends the job naming its host, within the launcher's stall bound (10 s).
    let keep =
        "a host cut off mid-run is found within about 7 s (mpirun then ends the job naming it)";
    s.mca("oob_tcp_keepalive_time", "2", keep);
    s.mca("oob_tcp_keepalive_intvl", "1", keep);
    s.mca("oob_tcp_keepalive_probes", "5", keep);
    // One-sided windows (the collectives' and earth's RMA): the default choice across
    // hosts fails in MPI_Win_allocate ("invalid window") with ob1 over TCP, and pt2pt
    // computes wrong sums for the collectives; UCX's one-sided component over TCP works.
    s.mca(
        "osc",
        "ucx",
        "one-sided windows over UCX: the default fails to create a window across hosts with ob1 over TCP",
    );
    s.env(
        "UCX_TLS",
        "tcp,self",
        "UCX (the one-sided windows) over TCP, the transport the ranks use between hosts",
    );
    s
}

/// MPICH's settings for ranks on `hosts` (hydra passes them with `-genv`; srun, which
/// passes its environment on, takes them as variables): its UCX transport over TCP on
/// the interface this machine reaches the hosts on (assumed to have the same name on
/// every host), as MPICH 4's ch4:ucx otherwise tries every interface, loopback
/// included.
pub fn ucx(hosts: &[HostLine]) -> Settings {
    let mut s = Settings::default();
    let mut genv = |name: &str, value: &str, why: &str| {
        let (v, why) = match std::env::var(name) {
            Ok(v) => (v, "the user's".to_string()),
            Err(_) => {
                s.env.push((name.to_string(), value.to_string()));
                (value.to_string(), why.to_string())
            }
        };
        s.args
            .extend(["-genv".into(), name.into(), OsString::from(&v)]);
        s.said.push(format!("{name}={v} ({why})"));
    };
    genv("UCX_TLS", "tcp,self", "UCX between hosts over TCP");
    match hosts_network(hosts) {
        Some((_, host, iface)) => genv(
            "UCX_NET_DEVICES",
            &iface,
            &format!("the interface this machine reaches {host} on"),
        ),
        None => s.said.push(
            "UCX_NET_DEVICES unset (no interface of this machine is on a remote host's network: UCX chooses)".into(),
        ),
    }
    s
}

/// The settings the launcher recorded for this rank, if it launched it across hosts.
pub fn recorded() -> Option<String> {
    std::env::var(SETTINGS_VAR).ok().filter(|s| !s.is_empty())
}

/// The names of numalab's variables in this environment plus `extra`, sorted.
pub fn numalab_vars(extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| k.starts_with("NUMALAB_"))
        .chain(extra.iter().map(|s| s.to_string()))
        .collect();
    v.sort();
    v.dedup();
    v
}

/// The first remote host's IPv4 network as this machine sees it (`10.1.2.0/24`), that
/// host's name and the interface whose subnet holds the host's address.
fn hosts_network(hosts: &[HostLine]) -> Option<(String, String, String)> {
    let nets = local_networks();
    hosts.iter().find_map(|h| {
        let addr = resolve_v4(&h.host)?;
        if addr.is_loopback() {
            return None;
        }
        nets.iter()
            .find(|(net, len, _)| same_net(*net, addr, *len))
            .map(|(net, len, name)| {
                let cidr = format!("{}/{len}", masked(*net, *len));
                (cidr, h.host.clone(), name.clone())
            })
    })
}

fn masked(a: Ipv4Addr, len: u32) -> Ipv4Addr {
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    Ipv4Addr::from(u32::from(a) & mask)
}

fn same_net(a: Ipv4Addr, b: Ipv4Addr, len: u32) -> bool {
    masked(a, len) == masked(b, len)
}

/// This machine's IPv4 interfaces but loopback: (address, prefix length, name).
fn local_networks() -> Vec<(Ipv4Addr, u32, String)> {
    let mut out = Vec::new();
    let mut ifs: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills a list freed below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut ifs) } != 0 {
        return out;
    }
    let mut cur = ifs;
    while !cur.is_null() {
        // SAFETY: cur is a node of the list getifaddrs returned.
        let i = unsafe { &*cur };
        cur = i.ifa_next;
        if i.ifa_addr.is_null() || i.ifa_netmask.is_null() {
            continue;
        }
        // SAFETY: both are valid sockaddrs; for AF_INET they are sockaddr_in.
        unsafe {
            if (*i.ifa_addr).sa_family as i32 != libc::AF_INET {
                continue;
            }
            let a = &*(i.ifa_addr as *const libc::sockaddr_in);
            let m = &*(i.ifa_netmask as *const libc::sockaddr_in);
            let addr = Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
            let len = u32::from_be(m.sin_addr.s_addr).count_ones();
            let name = std::ffi::CStr::from_ptr(i.ifa_name)
                .to_string_lossy()
                .into_owned();
            if !addr.is_loopback() {
                out.push((addr, len, name));
            }
        }
    }
    // SAFETY: ifs came from a successful getifaddrs.
    unsafe { libc::freeifaddrs(ifs) };
    out
}

fn resolve_v4(host: &str) -> Option<Ipv4Addr> {
    use std::net::ToSocketAddrs;
    (host, 0)
        .to_socket_addrs()
        .ok()?
        .find_map(|a| match a.ip() {
            std::net::IpAddr::V4(v) => Some(v),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks_are_masked_by_prefix() {
        let a: Ipv4Addr = "10.251.0.7".parse().unwrap();
        assert_eq!(masked(a, 24).to_string(), "10.251.0.0");
        assert!(same_net(a, "10.251.0.200".parse().unwrap(), 24));
        assert!(!same_net(a, "10.251.1.7".parse().unwrap(), 24));
        assert_eq!(masked(a, 0).to_string(), "0.0.0.0");
    }

    #[test]
    fn settings_name_each_value_and_pass_numalab_variables() {
        let s = open_mpi(&[], &["NUMALAB_X".into()]);
        let args: Vec<String> = s.args.iter().map(|a| a.to_string_lossy().into()).collect();
        assert!(
            args.windows(2).any(|w| w == ["-x", "NUMALAB_X"]),
            "{args:?}"
        );
        assert!(s
            .said
            .iter()
            .any(|l| l.contains("btl_tcp_if_include unset")));
        assert!(s.said.iter().any(|l| l.contains("NUMALAB_X passed")));
        if std::env::var_os("UCX_TLS").is_none() && std::env::var_os("OMPI_MCA_osc").is_none() {
            assert!(
                args.windows(2).any(|w| w == ["-x", "UCX_TLS=tcp,self"]),
                "{args:?}"
            );
            assert!(
                args.windows(3).any(|w| w == ["--mca", "osc", "ucx"]),
                "{args:?}"
            );
        }
    }
}
