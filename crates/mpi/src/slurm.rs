//! Slurm, for the `srun` launcher: the allocation's nodes (`SLURM_JOB_NODELIST`, in
//! Slurm's compressed form) and what srun needs besides the job's spread: the PMI
//! plugin the MPI library starts with (Open MPI: PMIx; the MPICH family: PMI-2), and
//! across nodes the transport numalab also gives mpirun (Open MPI) or hydra (MPICH's
//! UCX), as variables (srun passes its environment to every task).

use crate::across::{open_mpi_transport, Settings};
use crate::env::JobEnv;
use crate::hostfile::HostLine;

/// The variable srun reads its `--mpi` from; the user's value wins.
pub const MPI_TYPE_VAR: &str = "SLURM_MPI_TYPE";

/// Expand a Slurm host list (`nlab-h[1-3,5],login[01-02],gpu7`) into names, in order;
/// a range keeps its numbers' width (`[01-02]`: 01, 02). A part it cannot read is
/// kept as it is written.
pub fn expand(list: &str) -> Vec<String> {
    split_top(list)
        .into_iter()
        .flat_map(|part| match (part.find('['), part.ends_with(']')) {
            (Some(open), true) => {
                let (stem, body) = (&part[..open], &part[open + 1..part.len() - 1]);
                ranges(body)
                    .map(|nums| nums.into_iter().map(|n| format!("{stem}{n}")).collect())
                    .unwrap_or_else(|| vec![part.to_string()])
            }
            _ => vec![part.to_string()],
        })
        .collect()
}

/// Split at the commas outside brackets.
fn split_top(list: &str) -> Vec<&str> {
    let (mut out, mut depth, mut from) = (Vec::new(), 0i32, 0);
    for (i, c) in list.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&list[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    out.push(&list[from..]);
    out.into_iter()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect()
}

/// `1-3,5` or `01-02`: the numbers as written (zero-padded to the range's width).
fn ranges(body: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for r in body.split(',') {
        let (a, b) = r.split_once('-').unwrap_or((r, r));
        let (lo, hi) = (a.trim().parse::<u64>().ok()?, b.trim().parse::<u64>().ok()?);
        if hi < lo || hi - lo > 100_000 {
            return None;
        }
        let width = a.trim().len();
        out.extend((lo..=hi).map(|n| format!("{n:0width$}")));
    }
    Some(out)
}

/// The allocation's nodes (`SLURM_JOB_NODELIST`), as hosts without slots; None outside
/// an allocation.
pub fn allocation(get: &dyn Fn(&str) -> Option<String>) -> Option<Vec<HostLine>> {
    let nodes = expand(&get("SLURM_JOB_NODELIST")?);
    let hosts = nodes.into_iter().enumerate().map(|(i, host)| HostLine {
        line: i + 1,
        host,
        slots: None,
    });
    Some(hosts.collect()).filter(|h: &Vec<HostLine>| !h.is_empty())
}

/// Is `library` (the MPI library's version string) of the MPICH family?
pub fn mpich_family(library: &str) -> bool {
    let l = library.to_ascii_lowercase();
    l.contains("mpich") || l.contains("mvapich") || l.contains("intel(r) mpi")
}

/// What srun is given besides the spread, for an MPI library `library`, in an
/// environment `get` (the allocation's variables, the user's own settings).
pub fn settings(library: &str, get: &dyn Fn(&str) -> Option<String>) -> Settings {
    let mut s = Settings::default();
    match get(MPI_TYPE_VAR).filter(|v| !v.trim().is_empty()) {
        Some(v) => s
            .said
            .push(format!("--mpi={v} (the user's {MPI_TYPE_VAR})")),
        None => {
            let (plugin, why) = match mpich_family(library) {
                true => ("pmi2", "the MPICH family starts its ranks over PMI-2"),
                false => ("pmix", "Open MPI starts its ranks over PMIx"),
            };
            s.args.push(format!("--mpi={plugin}").into());
            s.said.push(format!("--mpi={plugin} ({why})"));
        }
    }
    let nodes = allocation(get).unwrap_or_default();
    if library.contains("Open MPI") && nodes.len() > 1 {
        // Started by srun there is no mpirun and no daemon: Open MPI's out-of-band
        // channel (oob_*) is not used, so it is not set.
        let t = open_mpi_transport(&nodes);
        let ours = |k: &str| !k.starts_with("OMPI_MCA_oob_");
        s.env.extend(t.env.into_iter().filter(|(k, _)| ours(k)));
        s.said
            .extend(t.said.into_iter().filter(|l| !l.starts_with("oob_")));
    }
    if mpich_family(library) && nodes.len() > 1 {
        // As hydra is given them: UCX over TCP on the hosts' network.
        let t = crate::across::ucx(&nodes);
        s.env.extend(t.env);
        s.said.extend(t.said);
    }
    s.said.push(
        "the launcher's environment passed to every task (srun's default, --export=ALL)".into(),
    );
    s
}

/// A task of a Slurm step of several tasks that srun gave no PMI (`--mpi=none`, often
/// Slurm's default): MPI would start each task as a job of its own. The line saying
/// so and what to run instead, for an MPI library `library`; None for any other job.
pub fn without_pmi(job: &JobEnv, library: &str) -> Option<String> {
    if job.source != "SLURM" || job.size < 2 {
        return None;
    }
    let (plugin, over) = match mpich_family(library) {
        true => ("pmi2", "PMI-2"),
        false => ("pmix", "PMIx"),
    };
    Some(format!(
        "started by srun without a PMI plugin (--mpi=none): numalab's MPI library joins its {} tasks over {over}; run srun --mpi={plugin} (or set {MPI_TYPE_VAR}={plugin}), or run numalab in the allocation without srun and it starts srun itself",
        job.size
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn a_step_without_pmi_is_named_with_the_plugin_to_use() {
        let step = |size| JobEnv {
            size,
            rank: 0,
            local_size: None,
            local_rank: None,
            source: "SLURM",
        };
        let why = without_pmi(&step(2), "Open MPI v4.1.4").unwrap();
        assert!(
            why.contains("its 2 tasks over PMIx; run srun --mpi=pmix"),
            "{why}"
        );
        let why = without_pmi(&step(2), "MPICH Version: 4.0").unwrap();
        assert!(why.contains("srun --mpi=pmi2"), "{why}");
        // One task is a job of one; PMIx or PMI variables are a job srun joined.
        assert_eq!(without_pmi(&step(1), "Open MPI"), None);
        let pmix = JobEnv {
            source: "PMIX",
            ..step(2)
        };
        assert_eq!(without_pmi(&pmix, "Open MPI"), None);
    }

    #[test]
    fn host_lists_expand_in_order_keeping_the_width() {
        assert_eq!(
            expand("nlab-h[1-3,5],login[08-10], gpu7"),
            ["nlab-h1", "nlab-h2", "nlab-h3", "nlab-h5", "login08", "login09", "login10", "gpu7"]
        );
        assert_eq!(expand("node1"), ["node1"]);
        assert!(expand("").is_empty());
        // Unreadable ranges are kept as written, never dropped or guessed.
        assert_eq!(expand("a[3-1],b[x]"), ["a[3-1]", "b[x]"]);
    }

    #[test]
    fn the_pmi_plugin_follows_the_library_and_the_users_choice_wins() {
        let none = env(&[]);
        let ompi = settings("Open MPI v4.1.4, package: Debian", &none);
        assert_eq!(ompi.args, ["--mpi=pmix"]);
        assert!(ompi.env.is_empty(), "one node: no transport settings");
        let mpich = settings("MPICH Version:\t4.0.2", &none);
        assert_eq!(mpich.args, ["--mpi=pmi2"]);
        let user = settings("Open MPI", &env(&[(MPI_TYPE_VAR, "pmi2")]));
        assert!(user.args.is_empty());
        assert_eq!(user.said[0], "--mpi=pmi2 (the user's SLURM_MPI_TYPE)");
    }

    #[test]
    fn across_nodes_open_mpi_and_mpich_get_their_transport_as_variables() {
        let nodes = env(&[("SLURM_JOB_NODELIST", "n[1-2]")]);
        let s = settings("Open MPI v4.1.4", &nodes);
        let has = |k: &str| s.env.iter().any(|(n, _)| n == k);
        if std::env::var_os("OMPI_MCA_btl").is_none() {
            assert!(has("OMPI_MCA_btl"), "{:?}", s.env);
        }
        assert!(s
            .env
            .iter()
            .all(|(n, _)| n.starts_with("OMPI_MCA_") || n == "UCX_TLS"));
        assert!(s.said.last().unwrap().contains("--export=ALL"));
        // MPICH across nodes: UCX over TCP, as hydra is given it; on one node nothing.
        let mpich = settings("MPICH Version: 4", &nodes);
        assert!(mpich.env.iter().all(|(n, _)| n.starts_with("UCX_")));
        if std::env::var_os("UCX_TLS").is_none() {
            assert!(mpich.env.contains(&("UCX_TLS".into(), "tcp,self".into())));
        }
        assert!(mpich.said.iter().any(|l| l.starts_with("UCX_TLS=")));
        let one = env(&[("SLURM_JOB_NODELIST", "n1")]);
        assert!(settings("MPICH Version: 4", &one).env.is_empty());
        let hosts: Vec<String> = allocation(&nodes)
            .unwrap()
            .into_iter()
            .map(|h| h.host)
            .collect();
        assert_eq!(hosts, ["n1", "n2"]);
        assert!(allocation(&env(&[])).is_none());
    }
}
