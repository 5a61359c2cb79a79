//! Scripts: each pinned thread runs its own list of steps over shared buffers, in
//! lockstep passes. A pass is: every thread runs its untimed `setup` (owners write
//! their data, so the lines end Modified in the owner's cache), a barrier releases
//! everyone, each thread times its `timed` steps. The placement and collectives
//! suites are lists of such scripts; this is their one timing loop.
//!
//! Steps touch word 0 of each line. Written values depend on the pass, buffer and
//! line ([`value`]), so a caller can check after the run that the data of the last
//! pass really moved (copies, gathers, reductions) and what every reader summed.

use crate::barrier::SpinBarrier;
use crate::sync::{Sync, SyncKind};
use crate::timer::Timer;
use numalab_results::disturb::{Disturbance, Sampler};
use numalab_topo::bind::{pin_current_thread, PinProof};
use numalab_topo::buffer::Buffer;
use numalab_topo::{Error, Host, Result};
use std::sync::atomic::{AtomicBool, Ordering};

/// Lines `first..first+count` of buffer `buf`, visited from `first+start`, wrapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Lines {
    /// Index into the program's buffers.
    pub buf: usize,
    /// First line of the run.
    pub first: usize,
    /// Number of lines.
    pub count: usize,
    /// Offset of the first line visited (a staggered reader starts mid-run).
    pub start: usize,
}

impl Lines {
    /// `count` lines from `first`, visited in order.
    pub fn new(buf: usize, first: usize, count: usize) -> Lines {
        Lines {
            buf,
            first,
            count,
            start: 0,
        }
    }

    /// The same lines, visited from offset `start`.
    pub fn staggered(self, start: usize) -> Lines {
        Lines {
            start: if self.count == 0 {
                0
            } else {
                start % self.count
            },
            ..self
        }
    }

    /// Line numbers in visit order.
    pub fn visit(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.count).map(move |i| self.first + (self.start + i) % self.count)
    }
}

/// How a combining step merges two words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Op {
    /// Wrapping 64-bit sum (exact, so a reduction can be checked).
    Sum,
    /// Unsigned maximum.
    Max,
}

impl Op {
    /// Apply the operation.
    pub fn apply(self, a: u64, b: u64) -> u64 {
        match self {
            Op::Sum => a.wrapping_add(b),
            Op::Max => a.max(b),
        }
    }
}

/// One step of a script.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum Step {
    /// Store [`value`] of this pass into each line.
    Write(Lines),
    /// Load each line's word and sum them (the sum of the last pass is returned).
    Read(Lines),
    /// Copy each source word to the matching destination line.
    Copy {
        /// Where the words come from.
        src: Lines,
        /// Where they go (same count).
        dst: Lines,
    },
    /// dst = op(dst, src), line by line.
    Combine {
        /// Operand read.
        src: Lines,
        /// Operand read and written.
        dst: Lines,
        /// The operation.
        op: Op,
    },
    /// Wait at the program's measured barrier (every script has the same number).
    Sync,
}

/// What one thread does.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Script {
    /// OS CPU it is pinned to.
    pub cpu: u32,
    /// Untimed steps before the release (no `Sync` here).
    pub setup: Vec<Step>,
    /// Timed steps.
    pub timed: Vec<Step>,
}

/// The word written to `line` of buffer `buf` in pass `pass`: distinct per pass,
/// buffer and line, never zero.
pub fn value(pass: usize, buf: usize, line: usize) -> u64 {
    // splitmix64 of the three indices.
    let mut z = ((pass as u64) << 44 ^ (buf as u64) << 28 ^ line as u64)
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) | 1
}

/// A set of scripts over buffers, with the barrier algorithm their `Sync` steps use.
pub struct Program<'a> {
    /// The machine (for pinning).
    pub host: &'a Host,
    /// The timer.
    pub timer: &'a Timer,
    /// The buffers steps refer to.
    pub bufs: Vec<&'a Buffer>,
    /// Line size in bytes.
    pub line: usize,
    /// One script per thread.
    pub scripts: Vec<Script>,
    /// Algorithm of the timed `Sync` steps.
    pub sync: SyncKind,
}

/// Timings of a program run.
#[derive(Debug, Clone)]
pub struct ProgramResult {
    /// Timer ticks of each pass, one vector per script.
    pub ticks: Vec<Vec<u64>>,
    /// Sum of every `Read` of the last pass, per script.
    pub read_sums: Vec<u64>,
    /// Pinning proof per script.
    pub pins: Vec<PinProof>,
    /// What disturbed each timed pass, per script (as `ticks`).
    pub disturb: Vec<Vec<Disturbance>>,
}

struct Ptrs(Vec<(*mut u8, usize)>);
// SAFETY: the buffers outlive the run; scripts touch them only through their steps.
unsafe impl std::marker::Sync for Ptrs {}

impl Ptrs {
    #[inline(always)]
    fn word(&self, buf: usize, line: usize, size: usize) -> *mut u64 {
        // SAFETY: every step's lines were checked against the buffer's length.
        unsafe { self.0[buf].0.add(line * size) as *mut u64 }
    }
}

fn run_steps(
    steps: &[Step],
    p: &Ptrs,
    size: usize,
    pass: usize,
    sync: (&Sync, usize, &mut u64),
) -> u64 {
    let (barrier, id, epoch) = sync;
    let mut sum = 0u64;
    for s in steps {
        match s {
            Step::Write(l) => {
                for line in l.visit() {
                    // SAFETY: bounds checked at validation; a plain word store.
                    unsafe {
                        p.word(l.buf, line, size)
                            .write_volatile(value(pass, l.buf, line))
                    };
                }
            }
            Step::Read(l) => {
                for line in l.visit() {
                    // SAFETY: as above.
                    sum = sum.wrapping_add(unsafe { p.word(l.buf, line, size).read_volatile() });
                }
            }
            Step::Copy { src, dst } => {
                for (a, b) in src.visit().zip(dst.visit()) {
                    // SAFETY: as above.
                    unsafe {
                        let v = p.word(src.buf, a, size).read_volatile();
                        p.word(dst.buf, b, size).write_volatile(v);
                    }
                }
            }
            Step::Combine { src, dst, op } => {
                for (a, b) in src.visit().zip(dst.visit()) {
                    // SAFETY: as above.
                    unsafe {
                        let v = p.word(src.buf, a, size).read_volatile();
                        let d = p.word(dst.buf, b, size);
                        d.write_volatile(op.apply(d.read_volatile(), v));
                    }
                }
            }
            Step::Sync => barrier.wait(id, epoch),
        }
    }
    std::hint::black_box(sum)
}

impl Program<'_> {
    /// Check every step against the buffers and the scripts against each other.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::System(format!("invalid script: {m}")));
        let syncs = |st: &[Step]| st.iter().filter(|s| matches!(s, Step::Sync)).count();
        let want = self.scripts.first().map(|s| syncs(&s.timed)).unwrap_or(0);
        for (i, sc) in self.scripts.iter().enumerate() {
            if syncs(&sc.setup) > 0 {
                return bad(format!("thread {i} has a Sync step in its setup"));
            }
            if syncs(&sc.timed) != want {
                return bad(format!("thread {i} has a different number of Sync steps"));
            }
            for s in sc.setup.iter().chain(&sc.timed) {
                let runs: Vec<&Lines> = match s {
                    Step::Write(l) | Step::Read(l) => vec![l],
                    Step::Copy { src, dst } | Step::Combine { src, dst, .. } => {
                        if src.count != dst.count {
                            return bad(format!(
                                "thread {i}: source and destination differ in length"
                            ));
                        }
                        vec![src, dst]
                    }
                    Step::Sync => vec![],
                };
                for l in runs {
                    let Some(b) = self.bufs.get(l.buf) else {
                        return bad(format!("thread {i}: buffer {} does not exist", l.buf));
                    };
                    if (l.first + l.count) * self.line > b.len() {
                        return bad(format!("thread {i}: lines beyond buffer {}", l.buf));
                    }
                }
            }
        }
        Ok(())
    }

    /// Run `passes` timed passes after one untimed warm-up pass.
    pub fn run(&self, passes: usize) -> Result<ProgramResult> {
        self.validate()?;
        if self.line < 8 {
            return Err(Error::System("line size below one word".into()));
        }
        let n = self.scripts.len();
        let ptrs = Ptrs(self.bufs.iter().map(|b| (b.as_ptr(), b.len())).collect());
        let crew = SpinBarrier::new(n);
        let sync = Sync::new(self.sync, n);
        let failed = AtomicBool::new(false);
        let overhead = (self.timer.overhead_ns * self.timer.hz / 1e9) as u64;
        let out = std::thread::scope(|s| {
            let handles: Vec<_> = self
                .scripts
                .iter()
                .enumerate()
                .map(|(id, sc)| {
                    let (ptrs, crew, sync, failed) = (&ptrs, &crew, &sync, &failed);
                    s.spawn(
                        move || -> Result<(PinProof, Vec<u64>, Vec<Disturbance>, u64)> {
                            let pin = pin_current_thread(self.host, sc.cpu);
                            if pin.is_err() {
                                failed.store(true, Ordering::SeqCst);
                            }
                            crew.wait();
                            if failed.load(Ordering::SeqCst) {
                                return pin.map(|p| (p, Vec::new(), Vec::new(), 0));
                            }
                            let mut epoch = 0u64;
                            let mut ticks = Vec::with_capacity(passes);
                            let mut disturb = Vec::with_capacity(passes);
                            let mut sum = 0;
                            for pass in 0..=passes {
                                run_steps(&sc.setup, ptrs, self.line, pass, (sync, id, &mut epoch));
                                // Read before the barrier, so the threads still start together.
                                let sampler = (pass > 0).then(|| Sampler::start(Some(sc.cpu)));
                                crew.wait();
                                let t0 = self.timer.start();
                                sum = run_steps(
                                    &sc.timed,
                                    ptrs,
                                    self.line,
                                    pass,
                                    (sync, id, &mut epoch),
                                );
                                let t1 = self.timer.stop();
                                if let Some(sampler) = sampler {
                                    ticks.push(t1.saturating_sub(t0).saturating_sub(overhead));
                                    disturb.push(sampler.finish());
                                }
                                crew.wait();
                            }
                            Ok((pin?, ticks, disturb, sum))
                        },
                    )
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(Error::System("a script thread panicked".into())))
                })
                .collect::<Vec<_>>()
        });
        let mut r = ProgramResult {
            ticks: Vec::new(),
            read_sums: Vec::new(),
            pins: Vec::new(),
            disturb: Vec::new(),
        };
        for o in out {
            let (pin, t, d, sum) = o?;
            r.pins.push(pin);
            r.ticks.push(t);
            r.disturb.push(d);
            r.read_sums.push(sum);
        }
        Ok(r)
    }

    /// The word now in `line` of buffer `buf` (to check what a run moved).
    pub fn word(&self, buf: usize, line: usize) -> Option<u64> {
        let b = self.bufs.get(buf)?;
        if (line + 1) * self.line > b.len() {
            return None;
        }
        // SAFETY: in bounds (checked); no script thread runs any more.
        Some(unsafe { (b.as_ptr().add(line * self.line) as *const u64).read_volatile() })
    }

    /// The pass index whose values the buffers hold after `run(passes)`.
    pub fn last_pass(passes: usize) -> usize {
        passes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_topo::plan::resolve_memory;
    use numalab_topo::{MemSpec, PageSize, TopologySource};

    #[test]
    fn staggered_lines_visit_every_line_once_from_the_offset() {
        let l = Lines::new(0, 10, 4).staggered(6);
        assert_eq!(l.visit().collect::<Vec<_>>(), vec![12, 13, 10, 11]);
        assert_eq!(Lines::new(0, 0, 0).staggered(3).visit().count(), 0);
    }

    #[test]
    fn values_differ_by_pass_buffer_and_line_and_are_never_zero() {
        let mut seen = std::collections::HashSet::new();
        for p in 0..4 {
            for b in 0..4 {
                for l in 0..64 {
                    let v = value(p, b, l);
                    assert_ne!(v, 0);
                    assert!(seen.insert(v));
                }
            }
        }
    }

    #[test]
    fn an_owner_writes_a_reader_sums_and_a_copier_moves_the_last_pass() {
        let host = Host::load(&TopologySource::ThisSystem).unwrap();
        let m = &host.machine;
        let cpus: Vec<u32> = m.pus.iter().map(|p| p.os).collect();
        let mem =
            resolve_memory(m, &MemSpec::Node(m.memory_nodes()[0]), PageSize::Base, &[]).unwrap();
        let a = Buffer::allocate(&host, &mem, 64 * 64).unwrap();
        let b = Buffer::allocate(&host, &mem, 64 * 64).unwrap();
        let timer = Timer::best();
        let reader = *cpus.last().unwrap();
        let src = Lines::new(0, 0, 64);
        let prog = Program {
            host: &host,
            timer: &timer,
            bufs: vec![&a, &b],
            line: 64,
            scripts: vec![
                Script {
                    cpu: cpus[0],
                    setup: vec![Step::Write(src)],
                    timed: vec![Step::Sync],
                },
                Script {
                    cpu: reader,
                    setup: vec![],
                    timed: vec![
                        Step::Sync,
                        Step::Read(src.staggered(5)),
                        Step::Copy {
                            src,
                            dst: Lines::new(1, 0, 64),
                        },
                    ],
                },
            ],
            sync: SyncKind::Dissemination,
        };
        let r = prog.run(3).unwrap();
        assert_eq!(r.ticks.len(), 2);
        assert!(r.ticks.iter().all(|t| t.len() == 3));
        let last = Program::last_pass(3);
        let want = (0..64).fold(0u64, |s, l| s.wrapping_add(value(last, 0, l)));
        assert_eq!(r.read_sums[1], want);
        for l in 0..64 {
            assert_eq!(prog.word(1, l), Some(value(last, 0, l)));
        }
        assert_eq!(prog.word(1, 64), None);
    }

    #[test]
    fn scripts_that_do_not_fit_their_buffers_are_refused() {
        let host = Host::load(&TopologySource::ThisSystem).unwrap();
        let m = &host.machine;
        let mem =
            resolve_memory(m, &MemSpec::Node(m.memory_nodes()[0]), PageSize::Base, &[]).unwrap();
        let a = Buffer::allocate(&host, &mem, 4096).unwrap();
        let timer = Timer::best();
        let cpu = m.pus[0].os;
        let mk = |timed: Vec<Step>| Program {
            host: &host,
            timer: &timer,
            bufs: vec![&a],
            line: 64,
            scripts: vec![Script {
                cpu,
                setup: vec![],
                timed,
            }],
            sync: SyncKind::Central,
        };
        assert!(mk(vec![Step::Read(Lines::new(0, 60, 5))])
            .validate()
            .is_err());
        assert!(mk(vec![Step::Read(Lines::new(1, 0, 1))])
            .validate()
            .is_err());
        assert!(mk(vec![Step::Read(Lines::new(0, 60, 4))])
            .validate()
            .is_ok());
    }
}
