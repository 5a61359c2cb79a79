//! A numalab run whose standard error is a terminal (a pseudo-terminal opened here), so
//! its progress line is drawn as a user sees it. Tests wait on that line for a part to
//! finish before they act, never on a sleep that assumes a speed.

use std::fs::File;
use std::io::Read;
use std::os::unix::io::FromRawFd;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A run with its standard error on a pseudo-terminal, and all it has drawn there.
pub struct OnTerminal {
    child: Child,
    seen: Arc<Mutex<Vec<u8>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl OnTerminal {
    /// Start `numalab ARGS` with stdin and stdout on /dev/null and stderr on a 200-column
    /// terminal; None (said) where no pseudo-terminal can be opened.
    pub fn spawn(args: &[&str]) -> Option<OnTerminal> {
        let (mut master, mut slave) = (0, 0);
        let size = libc::winsize {
            ws_row: 40,
            ws_col: 200,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: openpty fills the two descriptors it is given; no name or termios.
        let opened = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                &size,
            )
        };
        if opened != 0 {
            let e = std::io::Error::last_os_error();
            eprintln!("skipped: no pseudo-terminal to draw the progress on (openpty: {e})");
            return None;
        }
        // SAFETY: both descriptors were just opened and are owned here alone.
        let (master, slave) = unsafe { (File::from_raw_fd(master), File::from_raw_fd(slave)) };
        let child = Command::new(env!("CARGO_BIN_EXE_numalab"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(slave))
            .spawn()
            .expect("start numalab");
        // The builder (and with it this process's copy of the terminal's other end) is
        // gone: the reader sees the end when the run's own copies close.
        let seen = Arc::new(Mutex::new(Vec::new()));
        let into = seen.clone();
        let reader = std::thread::spawn(move || {
            let mut master = master;
            let mut buf = [0u8; 4096];
            // A read fails (EIO) once every holder of the other end has closed it.
            while let Ok(n @ 1..) = master.read(&mut buf) {
                into.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Some(OnTerminal {
            child,
            seen,
            reader: Some(reader),
        })
    }

    /// Everything drawn so far, as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.seen.lock().unwrap()).into_owned()
    }

    /// The run's process id.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Wait until the terminal shows `want`, at most `limit`: false when the run ended
    /// first (its exit status is then in [`OnTerminal::finish`]).
    pub fn wait_for(&mut self, want: &str, limit: Duration) -> bool {
        let t = Instant::now();
        loop {
            if self.text().contains(want) {
                return true;
            }
            if self.child.try_wait().unwrap().is_some() {
                return false;
            }
            if t.elapsed() > limit {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "'{want}' not shown in {} s; the terminal held: {}",
                    limit.as_secs(),
                    self.text()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Send `sig` to the run.
    pub fn signal(&self, sig: i32) {
        // SAFETY: signalling the process this test started.
        unsafe { libc::kill(self.pid(), sig) };
    }

    /// Wait for the run to end, at most `limit` (after it, the run is killed and the test
    /// fails): its exit code and all it drew.
    pub fn finish(mut self, limit: Duration) -> (Option<i32>, String) {
        let t = Instant::now();
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if t.elapsed() > limit {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("still running {} s on: {}", limit.as_secs(), self.text());
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        (status.code(), self.text())
    }
}
