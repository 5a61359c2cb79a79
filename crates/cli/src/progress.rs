//! The one progress mechanism: an indicatif bar on stderr, drawn only on a terminal
//! (indicatif hides itself otherwise), never mixed into data on stdout.

use indicatif::{ProgressBar, ProgressStyle};
use std::time::Duration;

/// A bar over a planned duration (tenths of a second), with a message and the time
/// left as the caller last estimated it.
pub struct Bar(ProgressBar);

impl Bar {
    /// A bar for work planned to take `estimate_s` seconds.
    pub fn new(estimate_s: f64) -> Bar {
        let bar = ProgressBar::new((estimate_s * 10.0).ceil() as u64);
        bar.set_style(
            ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {msg} ({prefix})")
                .expect("valid template"),
        );
        bar.set_prefix(format!("about {estimate_s:.0} s left"));
        bar.enable_steady_tick(Duration::from_millis(200));
        Bar(bar)
    }

    /// Show what runs now.
    pub fn message(&self, m: &str) {
        self.0.set_message(m.to_string());
    }

    /// `done_s` seconds have run and `left_s` more are expected now.
    pub fn replan(&self, done_s: f64, left_s: f64) {
        self.0.set_length(((done_s + left_s) * 10.0).ceil() as u64);
        self.0.set_position((done_s * 10.0).floor() as u64);
        self.0.set_prefix(format!("about {left_s:.0} s left"));
    }

    /// Print a line without tearing the bar.
    pub fn suspend(&self, f: impl FnOnce()) {
        self.0.suspend(f);
    }

    /// Remove the bar.
    pub fn finish(&self) {
        self.0.finish_and_clear();
    }
}

/// Run `f` with a progress sink that shows its latest line beside a spinner; the
/// spinner is cleared when `f` returns.
pub fn with_progress<T>(f: impl FnOnce(&mut dyn FnMut(&str)) -> T) -> T {
    let bar = ProgressBar::new_spinner();
    let r = f(&mut |m: &str| {
        bar.set_message(m.to_string());
        bar.tick();
    });
    bar.finish_and_clear();
    r
}

/// A progress sink of `i` of `n` steps for an MPI experiment, "WHAT i/n".
pub fn steps(what: &'static str) -> impl FnMut(usize, usize) {
    let bar = ProgressBar::new(0);
    bar.set_style(ProgressStyle::with_template("{msg} {pos}/{len}").expect("valid template"));
    bar.set_message(what);
    move |i, n| {
        bar.set_length(n as u64);
        bar.set_position(i as u64 + 1);
        if i + 1 == n {
            bar.finish_and_clear();
        }
    }
}
