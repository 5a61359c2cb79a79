//! Where results go when their destination cannot be written: a fallback file in the
//! first of several places that takes it ($TMPDIR, the output folder's parent, the
//! user's home), so one full filesystem does not lose a run.

use std::path::{Path, PathBuf};

/// Fallback file names start with this.
pub const PREFIX: &str = "numalab-rescued-";

/// The folders a fallback for `dest` is tried in, in order, each once: $TMPDIR, the
/// parent of the folder `dest` is in, $HOME.
pub fn places(dest: &Path) -> Vec<PathBuf> {
    let abs = std::path::absolute(dest).unwrap_or_else(|_| dest.to_path_buf());
    let mut out: Vec<PathBuf> = vec![std::env::temp_dir()];
    out.extend(abs.parent().and_then(Path::parent).map(Path::to_path_buf));
    out.extend(std::env::var_os("HOME").map(PathBuf::from));
    let mut seen: Vec<PathBuf> = Vec::new();
    for p in out {
        let key = std::fs::canonicalize(&p).unwrap_or_else(|_| p.clone());
        if !seen.contains(&key) && !p.as_os_str().is_empty() {
            seen.push(key);
        }
    }
    seen
}

/// A fresh name in `dir`: `numalab-rescued-<pid>-<unix time>[.k].<ext>`.
fn fresh(dir: &Path, ext: &str) -> Option<PathBuf> {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let base = format!("{PREFIX}{}-{secs}", std::process::id());
    // Two failures within one second in one process: never overwrite the first.
    (0..100)
        .map(|k| match k {
            0 => dir.join(format!("{base}.{ext}")),
            k => dir.join(format!("{base}.{k}.{ext}")),
        })
        .find(|p| !p.exists())
}

/// Keep something that could not be written to `dest`: `write` creates and fills the
/// file it is given, in each place of [`places`] until one succeeds (a file it left
/// half-written is removed). Returns the file that holds it, or one line saying where
/// it was tried and why each failed.
pub fn keep(
    dest: &Path,
    ext: &str,
    mut write: impl FnMut(&Path) -> std::io::Result<()>,
) -> Result<PathBuf, String> {
    let mut tried = Vec::new();
    for dir in places(dest) {
        let Some(to) = fresh(&dir, ext) else {
            tried.push(format!("'{}' (no free name)", dir.display()));
            continue;
        };
        match write(&to) {
            Ok(()) => return Ok(to),
            Err(e) => {
                let _ = std::fs::remove_file(&to);
                tried.push(format!("'{}' ({e})", dir.display()));
            }
        }
    }
    Err(format!("keeping it failed in {}", tried.join(", ")))
}

/// Fallback files with extension `ext` that may belong to `dest`, newest first.
pub fn candidates(dest: &Path, ext: &str) -> Vec<PathBuf> {
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
    for dir in places(dest) {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.starts_with(PREFIX) && name.ends_with(&format!(".{ext}")) {
                let t = e.metadata().and_then(|m| m.modified());
                found.push((t.unwrap_or(std::time::UNIX_EPOCH), e.path()));
            }
        }
    }
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    found.into_iter().map(|(_, p)| p).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_distinct_and_start_with_tmpdir() {
        let p = places(Path::new("/a/b/out.json"));
        assert_eq!(p[0], std::env::temp_dir());
        let parent = Path::new("/a");
        assert!(p.iter().any(|x| x == parent), "{p:?}");
        let mut d = p.clone();
        d.dedup();
        assert_eq!(d.len(), p.len());
    }

    #[test]
    fn a_failing_place_is_skipped_and_named() {
        let root = std::env::temp_dir().join(format!("numalab-places-{}", std::process::id()));
        let dest = root.join("out").join("r.json");
        std::fs::create_dir_all(&root).unwrap();
        let mut calls = 0;
        // $TMPDIR refuses: the output folder's parent takes it.
        let kept = keep(&dest, "json", |to| {
            calls += 1;
            match calls {
                1 => Err(std::io::Error::other("full")),
                _ => std::fs::write(to, "[]"),
            }
        })
        .unwrap();
        assert_eq!(kept.parent(), Some(root.as_path()));
        assert!(candidates(&dest, "json").contains(&kept));
        std::fs::remove_dir_all(&root).unwrap();
        let e = keep(&dest, "json", |_| Err(std::io::Error::other("full"))).unwrap_err();
        let tmp = std::env::temp_dir().display().to_string();
        assert!(e.contains(&tmp) && e.contains("full"), "{e}");
        assert_eq!(e.lines().count(), 1);
    }
}
