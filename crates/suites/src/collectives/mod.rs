//! The KSR collective-communication study (seed 002) as probe scripts: every
//! thread's block is first written by its owner; the algorithms then move it with
//! plain loads and stores between barriers, as the KSR did on its shared memory.
//!
//! Buffers per thread t (each on t's own node): `src(t)` its block (the root's is P
//! blocks, for the distinct-lines broadcast), `dst(t)` room for P blocks, `res(t)`
//! one block for reductions.

mod experiment;
pub mod mpi;
mod present;
pub use present::{CollectiveData, CollectivesPresenter};
pub mod run;
mod text;
mod view;
pub use experiment::{plan_record, records, run as run_suite, Options};
pub use text::{osu_text, text};
pub use view::Results;

use numalab_probe::script::{Lines, Op, Script, Step};
use numalab_probe::sync::SyncKind;
use serde::Serialize;

/// A collective operation (and its algorithm).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub enum Kind {
    /// Barrier cost alone.
    Barrier(SyncKind),
    /// Everyone copies the root's block (the same lines).
    BroadcastSame,
    /// Everyone copies its own block of the root's P blocks (node contention).
    BroadcastDistinct,
    /// Thread i copies the block of thread (i + k) mod P (link contention).
    Shift(usize),
    /// Concatenate-one, algorithm 1: the root reads every block in turn.
    GatherLinear,
    /// Concatenate-one, algorithm 2: a binary tree, blocks doubling per stage.
    GatherTree,
    /// Concatenate-all, algorithm 1: linear gather, then broadcast.
    AllgatherLinear,
    /// Concatenate-all, algorithm 2: tree gather, then broadcast.
    AllgatherTree,
    /// Concatenate-all, algorithm 3: P − 1 shifts to the neighbour.
    AllgatherRing,
    /// Reduction: gather, compute at the root, broadcast.
    ReduceLinear(Op),
    /// Reduction: combining tree up, then down the tree.
    ReduceTree(Op),
}

/// Buffer index of thread t's block.
pub fn src(t: usize) -> usize {
    3 * t
}
/// Buffer index of thread t's P-block area.
pub fn dst(t: usize) -> usize {
    3 * t + 1
}
/// Buffer index of thread t's result block.
pub fn res(t: usize) -> usize {
    3 * t + 2
}

impl Kind {
    /// Stable name used in records and output.
    pub fn name(self) -> String {
        let op = |o: Op| match o {
            Op::Sum => "sum",
            Op::Max => "max",
        };
        match self {
            Kind::Barrier(s) => format!("barrier-{}", s.name()),
            Kind::BroadcastSame => "broadcast-same".into(),
            Kind::BroadcastDistinct => "broadcast-distinct".into(),
            Kind::Shift(k) => format!("shift-{k}"),
            Kind::GatherLinear => "gather-linear".into(),
            Kind::GatherTree => "gather-tree".into(),
            Kind::AllgatherLinear => "allgather-linear".into(),
            Kind::AllgatherTree => "allgather-tree".into(),
            Kind::AllgatherRing => "allgather-ring".into(),
            Kind::ReduceLinear(o) => format!("reduce-{}-linear", op(o)),
            Kind::ReduceTree(o) => format!("reduce-{}-tree", op(o)),
        }
    }

    /// The seed's name for it.
    pub fn seed_name(self) -> &'static str {
        match self {
            Kind::Barrier(_) => "synchronization (§5.1)",
            Kind::BroadcastSame => "broadcast (§5.2)",
            Kind::BroadcastDistinct => "node contention (§5.3, Table 2)",
            Kind::Shift(_) => "cyclic shift (§5.4, Table 3)",
            Kind::GatherLinear => "concatenate-one, algorithm 1 (§5.5)",
            Kind::GatherTree => "concatenate-one, algorithm 2 (§5.5)",
            Kind::AllgatherLinear => "concatenate-all, algorithm 1 (§5.6)",
            Kind::AllgatherTree => "concatenate-all, algorithm 2 (§5.6)",
            Kind::AllgatherRing => "concatenate-all, algorithm 3 (§5.6)",
            Kind::ReduceLinear(_) => "reduction, gather-compute-broadcast (§5.7)",
            Kind::ReduceTree(_) => "reduction, tree",
        }
    }

    /// Shift distances to measure for P threads: 1, powers of two, P/2 and P − 1.
    pub fn shift_distances(p: usize) -> Vec<usize> {
        let mut d: Vec<usize> = (0..)
            .map(|i| 1usize << i)
            .take_while(|&k| k < p)
            .chain([p / 2, p.saturating_sub(1)])
            .filter(|&k| k >= 1 && k < p)
            .collect();
        d.sort_unstable();
        d.dedup();
        d
    }

    /// Lines thread t's source buffer needs.
    pub fn src_lines(self, t: usize, p: usize, n: usize) -> usize {
        if self == Kind::BroadcastDistinct && t == 0 {
            p * n
        } else {
            n
        }
    }
}

/// Timed `Sync` steps per barrier measurement (the cost is divided by this).
pub const BARRIER_REPS: usize = 64;

fn block(buf: usize, b: usize, n: usize) -> Lines {
    Lines::new(buf, b * n, n)
}

fn copy(src: Lines, dst: Lines) -> Step {
    Step::Copy { src, dst }
}

/// Stages of a binary tree over p threads: 1, 2, 4, … below p.
fn stages(p: usize) -> Vec<usize> {
    (0..).map(|i| 1usize << i).take_while(|&s| s < p).collect()
}

/// Linear gather into dst(0): the root copies every block.
fn gather_linear(t: usize, p: usize, n: usize, out: &mut Vec<Step>) {
    if t == 0 {
        for j in 0..p {
            out.push(copy(block(src(j), 0, n), block(dst(0), j, n)));
        }
    }
}

/// Tree gather into dst(0): at stage s, t (a multiple of 2s) copies blocks t+s.. from t+s.
fn gather_tree(t: usize, p: usize, n: usize, out: &mut Vec<Step>) {
    out.push(copy(block(src(t), 0, n), block(dst(t), t, n)));
    for s in stages(p) {
        out.push(Step::Sync);
        if t.is_multiple_of(2 * s) && t + s < p {
            let first = (t + s) * n;
            let count = ((t + 2 * s).min(p) - (t + s)) * n;
            out.push(copy(
                Lines::new(dst(t + s), first, count),
                Lines::new(dst(t), first, count),
            ));
        }
    }
}

/// Everyone but the root copies the root's P blocks.
fn broadcast_all(t: usize, p: usize, n: usize, out: &mut Vec<Step>) {
    out.push(Step::Sync);
    if t > 0 {
        out.push(copy(
            Lines::new(dst(0), 0, p * n),
            Lines::new(dst(t), 0, p * n),
        ));
    }
}

/// Thread t's timed steps for `kind` with p threads and blocks of n lines.
pub fn timed(kind: Kind, t: usize, p: usize, n: usize) -> Vec<Step> {
    let mut out = Vec::new();
    match kind {
        Kind::Barrier(_) => out.extend(std::iter::repeat_n(Step::Sync, BARRIER_REPS)),
        Kind::BroadcastSame => {
            if t > 0 {
                out.push(copy(block(src(0), 0, n), block(dst(t), 0, n)));
            }
        }
        Kind::BroadcastDistinct => {
            if t > 0 {
                out.push(copy(block(src(0), t, n), block(dst(t), 0, n)));
            }
        }
        Kind::Shift(k) => out.push(copy(block(src((t + k) % p), 0, n), block(dst(t), 0, n))),
        Kind::GatherLinear => gather_linear(t, p, n, &mut out),
        Kind::GatherTree => gather_tree(t, p, n, &mut out),
        Kind::AllgatherLinear => {
            gather_linear(t, p, n, &mut out);
            broadcast_all(t, p, n, &mut out);
        }
        Kind::AllgatherTree => {
            gather_tree(t, p, n, &mut out);
            broadcast_all(t, p, n, &mut out);
        }
        Kind::AllgatherRing => {
            out.push(copy(block(src(t), 0, n), block(dst(t), t, n)));
            for s in 1..p {
                out.push(Step::Sync);
                let b = (t + s) % p;
                out.push(copy(block(dst((t + 1) % p), b, n), block(dst(t), b, n)));
            }
        }
        Kind::ReduceLinear(op) => {
            gather_linear(t, p, n, &mut out);
            if t == 0 {
                out.push(copy(block(dst(0), 0, n), block(res(0), 0, n)));
                for j in 1..p {
                    out.push(Step::Combine {
                        src: block(dst(0), j, n),
                        dst: block(res(0), 0, n),
                        op,
                    });
                }
            }
            out.push(Step::Sync);
            if t > 0 {
                out.push(copy(block(res(0), 0, n), block(res(t), 0, n)));
            }
        }
        Kind::ReduceTree(op) => {
            out.push(copy(block(src(t), 0, n), block(res(t), 0, n)));
            let st = stages(p);
            for &s in &st {
                out.push(Step::Sync);
                if t.is_multiple_of(2 * s) && t + s < p {
                    out.push(Step::Combine {
                        src: block(res(t + s), 0, n),
                        dst: block(res(t), 0, n),
                        op,
                    });
                }
            }
            for &s in st.iter().rev() {
                out.push(Step::Sync);
                if t % (2 * s) == s {
                    out.push(copy(block(res(t - s), 0, n), block(res(t), 0, n)));
                }
            }
        }
    }
    out
}

/// The scripts of `kind` on `cpus` (P = cpus.len()) with blocks of n lines.
pub fn scripts(kind: Kind, cpus: &[u32], n: usize) -> Vec<Script> {
    let p = cpus.len();
    cpus.iter()
        .enumerate()
        .map(|(t, &cpu)| Script {
            cpu,
            setup: match kind {
                Kind::Barrier(_) => vec![],
                _ => vec![Step::Write(Lines::new(src(t), 0, kind.src_lines(t, p, n)))],
            },
            timed: timed(kind, t, p, n),
        })
        .collect()
}

/// What the buffers must hold after the run, as (buffer, line, expected source
/// (buffer, line)) for moved words, or the reduction of every thread's line i.
pub enum Expect {
    /// dst word = the value written to (src buffer, src line).
    Moved(Vec<(usize, usize, usize, usize)>),
    /// res(t) line i = op over all threads' src line i, for every t in `holders`.
    Reduced {
        /// The operation.
        op: Op,
        /// Threads whose result block must hold it.
        holders: Vec<usize>,
    },
    /// Nothing moves (barriers).
    Nothing,
}

/// What `kind` must have produced with p threads and blocks of n lines.
pub fn expect(kind: Kind, p: usize, n: usize) -> Expect {
    let mut v = Vec::new();
    let gathered = |t: usize, v: &mut Vec<_>| {
        for j in 0..p {
            for i in 0..n {
                v.push((dst(t), j * n + i, src(j), i));
            }
        }
    };
    match kind {
        Kind::Barrier(_) => return Expect::Nothing,
        Kind::BroadcastSame | Kind::BroadcastDistinct => {
            for t in 1..p {
                let from = if kind == Kind::BroadcastSame {
                    0
                } else {
                    t * n
                };
                v.extend((0..n).map(|i| (dst(t), i, src(0), from + i)));
            }
        }
        Kind::Shift(k) => {
            for t in 0..p {
                v.extend((0..n).map(|i| (dst(t), i, src((t + k) % p), i)));
            }
        }
        Kind::GatherLinear | Kind::GatherTree => gathered(0, &mut v),
        Kind::AllgatherLinear | Kind::AllgatherTree | Kind::AllgatherRing => {
            (0..p).for_each(|t| gathered(t, &mut v))
        }
        Kind::ReduceLinear(op) | Kind::ReduceTree(op) => {
            return Expect::Reduced {
                op,
                holders: (0..p).collect(),
            }
        }
    }
    Expect::Moved(v)
}

/// The collectives measured for P threads (shift distances depend on P).
pub fn kinds(p: usize, barriers: &[SyncKind]) -> Vec<Kind> {
    let mut v: Vec<Kind> = barriers.iter().map(|&s| Kind::Barrier(s)).collect();
    v.extend([Kind::BroadcastSame, Kind::BroadcastDistinct]);
    v.extend(Kind::shift_distances(p).into_iter().map(Kind::Shift));
    v.extend([
        Kind::GatherLinear,
        Kind::GatherTree,
        Kind::AllgatherLinear,
        Kind::AllgatherTree,
        Kind::AllgatherRing,
        Kind::ReduceLinear(Op::Sum),
        Kind::ReduceTree(Op::Sum),
        Kind::ReduceLinear(Op::Max),
        Kind::ReduceTree(Op::Max),
    ]);
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_probe::script::value;
    use std::collections::{HashMap, HashSet};

    /// Run scripts phase by phase (a phase ends at a Sync), failing on any word one
    /// thread writes while another touches it in the same phase: a race-free
    /// algorithm computes the same result run this way as run in parallel.
    fn simulate(scripts: &[Script]) -> HashMap<(usize, usize), u64> {
        let mut mem = HashMap::new();
        for s in scripts {
            for st in &s.setup {
                if let Step::Write(l) = st {
                    for line in l.visit() {
                        mem.insert((l.buf, line), value(1, l.buf, line));
                    }
                }
            }
        }
        let phases: Vec<Vec<Vec<&Step>>> = scripts
            .iter()
            .map(|s| {
                s.timed
                    .split(|x| matches!(x, Step::Sync))
                    .map(|p| p.iter().collect())
                    .collect()
            })
            .collect();
        let count = phases[0].len();
        assert!(
            phases.iter().all(|p| p.len() == count),
            "unequal Sync counts"
        );
        for ph in 0..count {
            let mut writes: Vec<HashSet<(usize, usize)>> = Vec::new();
            let mut reads: Vec<HashSet<(usize, usize)>> = Vec::new();
            for t in &phases {
                let (mut w, mut r) = (HashSet::new(), HashSet::new());
                for st in &t[ph] {
                    match st {
                        Step::Copy { src, dst } | Step::Combine { src, dst, .. } => {
                            r.extend(src.visit().map(|l| (src.buf, l)));
                            w.extend(dst.visit().map(|l| (dst.buf, l)));
                        }
                        Step::Read(l) => r.extend(l.visit().map(|x| (l.buf, x))),
                        Step::Write(l) => w.extend(l.visit().map(|x| (l.buf, x))),
                        Step::Sync => {}
                    }
                }
                writes.push(w);
                reads.push(r);
            }
            for a in 0..phases.len() {
                for b in 0..phases.len() {
                    if a != b {
                        assert!(
                            writes[a].is_disjoint(&reads[b]),
                            "race in phase {ph}: {a} writes what {b} reads"
                        );
                        assert!(writes[a].is_disjoint(&writes[b]), "race in phase {ph}");
                    }
                }
            }
            for t in &phases {
                for st in &t[ph] {
                    match st {
                        Step::Copy { src, dst } => {
                            for (a, b) in src.visit().zip(dst.visit()) {
                                let v = *mem.get(&(src.buf, a)).expect("read of an unwritten word");
                                mem.insert((dst.buf, b), v);
                            }
                        }
                        Step::Combine { src, dst, op } => {
                            for (a, b) in src.visit().zip(dst.visit()) {
                                let v = mem[&(src.buf, a)];
                                let d = mem[&(dst.buf, b)];
                                mem.insert((dst.buf, b), op.apply(d, v));
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        mem
    }

    #[test]
    fn every_algorithm_moves_the_right_data_without_races_for_any_p() {
        for p in 1..=13usize {
            let cpus: Vec<u32> = (0..p as u32).collect();
            for kind in kinds(p, &SyncKind::ALL) {
                let n = 3;
                let mem = simulate(&scripts(kind, &cpus, n));
                match expect(kind, p, n) {
                    Expect::Nothing => {}
                    Expect::Moved(v) => {
                        assert!(!v.is_empty() || p == 1, "{} P={p}", kind.name());
                        for (b, l, sb, sl) in v {
                            assert_eq!(
                                mem.get(&(b, l)),
                                Some(&value(1, sb, sl)),
                                "{} P={p}",
                                kind.name()
                            );
                        }
                    }
                    Expect::Reduced { op, holders } => {
                        assert_eq!(holders.len(), p);
                        for t in holders {
                            for i in 0..n {
                                let want = (1..p).fold(value(1, src(0), i), |a, j| {
                                    op.apply(a, value(1, src(j), i))
                                });
                                assert_eq!(
                                    mem.get(&(res(t), i)),
                                    Some(&want),
                                    "{} P={p} t={t}",
                                    kind.name()
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn tree_algorithms_take_log_stages_and_the_ring_p_minus_one() {
        let syncs = |k: Kind, p: usize| {
            timed(k, 0, p, 1)
                .iter()
                .filter(|s| matches!(s, Step::Sync))
                .count()
        };
        assert_eq!(syncs(Kind::GatherTree, 8), 3);
        assert_eq!(syncs(Kind::GatherTree, 5), 3);
        assert_eq!(syncs(Kind::AllgatherRing, 8), 7);
        assert_eq!(syncs(Kind::ReduceTree(Op::Sum), 8), 6);
        assert_eq!(syncs(Kind::GatherLinear, 8), 0);
        assert_eq!(Kind::shift_distances(8), vec![1, 2, 4, 7]);
        assert_eq!(Kind::shift_distances(2), vec![1]);
        assert!(Kind::shift_distances(1).is_empty());
    }
}
