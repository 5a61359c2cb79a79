//! A machine's fingerprint read under a root folder ("/": this machine; a folder: a
//! recorded or fake procfs tree), so a command reading that root can tell whether
//! saved results were measured on the machine it reads.

use crate::journal::Fingerprint;
use std::path::Path;

fn text(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The first "KEY : value" of `cpuinfo` among `keys`, in their order.
fn cpuinfo_field(cpuinfo: &str, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|key| {
        cpuinfo.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == *key).then(|| v.trim().to_string())
        })
    })
}

impl Fingerprint {
    /// The fingerprint of the machine whose procfs lies under `root`: host name,
    /// kernel release and version from `proc/sys/kernel`, the CPU model from
    /// `proc/cpuinfo` (as `Provenance::collect` takes them), the architecture this
    /// binary runs on for "/" and `proc/sys/kernel/arch` elsewhere; `topology` is the
    /// caller's summary. A field the tree lacks reads "unknown".
    pub fn at(root: &Path, topology: &str) -> Fingerprint {
        let k = |f: &str| text(&root.join("proc/sys/kernel").join(f));
        let unknown = || "unknown".to_string();
        let kernel = match (k("osrelease"), k("version")) {
            (Some(r), Some(v)) => format!("{r} {v}"),
            _ => unknown(),
        };
        let arch = if root == Path::new("/") {
            std::env::consts::ARCH.to_string()
        } else {
            k("arch").unwrap_or_else(unknown)
        };
        let cpuinfo = text(&root.join("proc/cpuinfo")).unwrap_or_default();
        Fingerprint {
            hostname: k("hostname").unwrap_or_else(unknown),
            arch,
            cpu_model: cpuinfo_field(&cpuinfo, &["model name", "CPU part"]),
            kernel,
            topology: topology.to_string(),
        }
    }

    /// The first field that differs: its name, this fingerprint's value and `now`'s.
    pub fn first_difference(&self, now: &Fingerprint) -> Option<(&'static str, String, String)> {
        let pairs = [
            ("host", self.hostname.clone(), now.hostname.clone()),
            ("architecture", self.arch.clone(), now.arch.clone()),
            (
                "CPU",
                self.cpu_model.clone().unwrap_or_default(),
                now.cpu_model.clone().unwrap_or_default(),
            ),
            ("kernel", self.kernel.clone(), now.kernel.clone()),
            ("topology", self.topology.clone(), now.topology.clone()),
        ];
        pairs.into_iter().find(|(_, a, b)| a != b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provenance::Provenance;

    #[test]
    fn this_machine_read_under_slash_is_its_provenance() {
        let p = Provenance::collect("t", "s");
        let here = Fingerprint::at(Path::new("/"), "t");
        assert_eq!(Fingerprint::of(&p).first_difference(&here), None);
    }

    #[test]
    fn a_tree_gives_its_own_fields_and_unknown_for_missing_ones() {
        let root = std::env::temp_dir().join(format!("numalab-fp-{}", std::process::id()));
        let k = root.join("proc/sys/kernel");
        std::fs::create_dir_all(&k).unwrap();
        std::fs::write(k.join("hostname"), "box\n").unwrap();
        std::fs::write(
            root.join("proc/cpuinfo"),
            "processor : 0\nmodel name : Chip 9\n",
        )
        .unwrap();
        let f = Fingerprint::at(&root, "1 node");
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(f.hostname, "box");
        assert_eq!(f.cpu_model.as_deref(), Some("Chip 9"));
        assert_eq!((f.kernel.as_str(), f.arch.as_str()), ("unknown", "unknown"));
        let mut other = f.clone();
        other.kernel = "6.12".into();
        let d = f.first_difference(&other).unwrap();
        assert_eq!(d, ("kernel", "unknown".into(), "6.12".into()));
    }
}
