//! The measuring core of numalab: timers, chase layouts, line-state preparation,
//! kernels (inline asm per architecture) and pinned worker threads.

// The kernels are unsafe fns whose bodies are one unsafe operation each (asm, raw
// pointer walks, intrinsics); marking every operation again is left to a change that
// is timed on its own, since these are the timed loops.
#![allow(unsafe_op_in_unsafe_fn)]

pub mod barrier;
pub mod bw;
pub mod chase;
pub mod compute_rate;
pub mod core_clock;
pub mod crew;
pub mod flush;
pub mod inject;
pub mod kernel;
pub mod layout;
pub mod loop7;
pub mod mix;
pub mod mixed;
pub mod mlp;
pub mod overlap;
pub mod per_call;
pub mod pingpong;
pub mod runner;
pub mod script;
pub mod server;
pub mod split_phase;
pub mod state;
pub mod switch;
pub mod sync;
pub mod timer;

pub use chase::{Chase, SelfLoop};
pub use crew::{span_ticks, Crew, CrewResult, Member, Pass, Timed};
pub use kernel::Access;
pub use layout::{Layout, Order};
pub use mix::{Mix, Store};
pub use runner::{run_round, Requestor, Round, RoundResult, Setup, Target};
pub use state::{LineState, Request};
pub use timer::{Timer, TimerKind};
