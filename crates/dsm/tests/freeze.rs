//! The single-writer freeze bounds how often a page two ranks write in turn moves.

use numalab_dsm::apps::App;
use numalab_dsm::{run_local, Config, Ctx, ProtocolKind};
use std::time::{Duration, Instant};

/// Two ranks write their own word of one page, with a little local work between writes
/// and no synchronisation: false sharing at its worst for a single-writer protocol.
struct PingPong {
    writes: u64,
}

impl App for PingPong {
    fn name(&self) -> &'static str {
        "ping-pong"
    }
    fn pages(&self) -> usize {
        1
    }
    fn run(&self, c: &Ctx) {
        let w = c.at::<u64>(8 * c.rank());
        for i in 1..=self.writes {
            // SAFETY: in the region; the DSM serialises the page between ranks.
            unsafe { std::ptr::write_volatile(w, i) };
            let t = Instant::now();
            while t.elapsed() < Duration::from_micros(10) {
                std::hint::spin_loop();
            }
        }
        c.barrier();
    }
    fn result(&self, c: &Ctx) -> Vec<f64> {
        // SAFETY: in the region, after the final barrier.
        (0..c.ranks())
            .map(|r| unsafe { std::ptr::read_volatile(c.at::<u64>(8 * r)) } as f64)
            .collect()
    }
    fn sequential(&self) -> Vec<f64> {
        vec![self.writes as f64; 2]
    }
}

/// Pages received by all ranks, and the run's wall time.
fn run(p: ProtocolKind, freeze: Duration) -> (u64, u64, Duration) {
    let app = PingPong { writes: 3000 };
    let cfg = Config {
        threads: 1,
        protocol: p,
        net_delay: Duration::ZERO,
        pages: app.pages(),
        locks: 0,
        base: None,
        watchdog: Duration::from_secs(60),
        gc_bytes: 1 << 20,
        freeze,
    };
    let t = Instant::now();
    let out = run_local(2, cfg, &app).unwrap();
    let wall = t.elapsed();
    assert_eq!(out[0].result.as_deref(), Some(&app.sequential()[..]));
    let moves = out.iter().map(|o| o.stats.pages_received).sum();
    let freezes = out.iter().map(|o| o.stats.freezes).sum();
    (moves, freezes, wall)
}

#[test]
fn freeze_bounds_page_moves_on_ping_pong() {
    let freeze = Duration::from_millis(20);
    for p in [ProtocolKind::Lsw, ProtocolKind::Seq] {
        let (moves, freezes, wall) = run(p, freeze);
        // A page leaves a rank no sooner than `freeze` after it arrived there, so over the
        // run it moves at most once per freeze time, plus the first move and the final
        // read of the result.
        let bound = (wall.as_nanos() / freeze.as_nanos()) as u64 + 3;
        eprintln!("{p:?} freeze {freeze:?}: {moves} page moves ({freezes} held back) in {wall:?}");
        assert!(
            moves <= bound,
            "{p:?}: {moves} page moves in {wall:?} with a {freeze:?} freeze (at most {bound})"
        );
    }
}

#[test]
fn without_freeze_the_page_still_arrives_right() {
    for p in [ProtocolKind::Lsw, ProtocolKind::Seq] {
        let (moves, freezes, wall) = run(p, Duration::ZERO);
        eprintln!("{p:?} no freeze: {moves} page moves in {wall:?}");
        assert_eq!(freezes, 0, "{p:?} held requests back with no freeze");
    }
}
