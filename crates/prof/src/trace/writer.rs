//! Writing a trace as a stream. A trace file that can no longer be written (disk full,
//! folder removed) continues, whole, in a fallback file (see
//! `numalab_results::rescue`): the lines written so far are copied there and the
//! cut-short original is removed, so no empty or torn file is left behind.

use super::{Entry, Header};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Streams entries to a file, one JSON object per line.
pub struct Writer {
    sink: Box<dyn Write + Send>,
    /// Entries not yet written (a flush writes them).
    pending: Vec<u8>,
    /// The file being written (None for another sink): where a rescue copies from.
    file: Option<PathBuf>,
    /// Bytes of whole lines the file holds.
    written: usize,
    /// The file asked for (the first one, also when a fallback fails in turn).
    asked: Option<PathBuf>,
    /// Once the trace moved: why, and from where.
    moved: Option<String>,
}

impl Writer {
    /// Create (truncate) the file and write the header. Standard output (`-`,
    /// `/dev/stdout`) is written in place; anything else that is no regular file is
    /// refused, never truncated (`numalab_results::outpath`).
    pub fn create(path: &Path, header: &Header) -> std::io::Result<Writer> {
        use numalab_results::outpath::{target, Target};
        let path = match target(path).map_err(std::io::Error::other)? {
            Target::Stdout => return Self::to(Box::new(std::io::stdout()), header),
            Target::File(real) => real,
        };
        let path = path.as_path();
        let f = std::fs::File::create(path)?;
        let mut w = Self::new(Box::new(f));
        w.file = Some(path.to_path_buf());
        w.asked = Some(path.to_path_buf());
        w.start(header)
    }

    /// Write to any sink (tests, stdout).
    pub fn to(sink: Box<dyn Write + Send>, header: &Header) -> std::io::Result<Writer> {
        Self::new(sink).start(header)
    }

    fn new(sink: Box<dyn Write + Send>) -> Writer {
        Writer {
            sink,
            pending: Vec::new(),
            file: None,
            written: 0,
            asked: None,
            moved: None,
        }
    }

    fn start(mut self, header: &Header) -> std::io::Result<Writer> {
        self.put(&Entry::Header(Box::new(header.clone())))?;
        self.flush()?;
        Ok(self)
    }

    /// Append one entry (buffered until the next flush).
    pub fn put(&mut self, e: &Entry) -> std::io::Result<()> {
        serde_json::to_writer(&mut self.pending, e)?;
        self.pending.push(b'\n');
        Ok(())
    }

    /// Push buffered entries to the file; called once per interval. When the file
    /// cannot take them, the trace continues in a fallback file ([`Writer::moved`]).
    pub fn flush(&mut self) -> std::io::Result<()> {
        match self
            .sink
            .write_all(&self.pending)
            .and_then(|_| self.sink.flush())
        {
            Ok(()) => {
                self.written += self.pending.len();
                self.pending.clear();
                Ok(())
            }
            Err(e) => match self.file.clone() {
                Some(p) => self.rescue(&p, e),
                None => Err(e),
            },
        }
    }

    /// The file the trace is in now (None for another sink).
    pub fn path(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// Once the trace moved to a fallback file: one line saying why and where.
    pub fn moved(&self) -> Option<&str> {
        self.moved.as_deref()
    }

    /// Continue the trace at `from` in a fallback file after writing it failed with `e`.
    fn rescue(&mut self, from: &Path, e: std::io::Error) -> std::io::Result<()> {
        // Only a regular file can be read back (never /dev/full or a pipe), and only
        // a whole prefix makes a whole trace.
        if !std::fs::metadata(from).is_ok_and(|m| m.is_file()) {
            return Err(e);
        }
        let mut prefix = Vec::new();
        let read = std::fs::File::open(from)
            .and_then(|f| f.take(self.written as u64).read_to_end(&mut prefix));
        if read.is_err() || prefix.len() != self.written {
            return Err(e);
        }
        let mut file = None;
        let kept = numalab_results::rescue::keep(from, "trace", |to| {
            let mut f = std::fs::File::create_new(to)?;
            f.write_all(&prefix)?;
            f.write_all(&self.pending)?;
            f.sync_data()?;
            file = Some(f);
            Ok(())
        });
        let kept = kept.and_then(|to| {
            file.take()
                .map(|f| (to, f))
                .ok_or_else(|| "no fallback file was opened".to_string())
        });
        match kept {
            Ok((to, f)) => {
                // Everything is in the new file: the cut-short one would only mislead.
                let _ = std::fs::remove_file(from);
                let why = format!(
                    "writing the trace '{}' failed ({e}); the whole trace continues in '{}'",
                    self.asked.as_deref().unwrap_or(from).display(),
                    to.display()
                );
                self.moved = Some(why);
                self.sink = Box::new(f);
                self.written = prefix.len() + self.pending.len();
                self.pending.clear();
                self.file = Some(to);
                Ok(())
            }
            Err(tried) => {
                // Keep the readable prefix (whole lines), or nothing at all.
                match self.written {
                    0 => {
                        let _ = std::fs::remove_file(from);
                    }
                    n => {
                        let _ = std::fs::OpenOptions::new()
                            .write(true)
                            .open(from)
                            .and_then(|f| f.set_len(n as u64));
                    }
                }
                Err(std::io::Error::new(e.kind(), format!("{e}; {tried}")))
            }
        }
    }
}
