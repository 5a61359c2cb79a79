//! What threads cost: coroutine switch and creation, OS thread switch on one core
//! (futex ping-pong), OS thread creation and join, and EARTH's local/remote spawn.

use crate::timer::Timer;
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, Yielder};
use numalab_topo::bind::pin_current_thread;
use numalab_topo::{Error, Host, Result};
use std::sync::atomic::{AtomicU32, Ordering};

/// ns per coroutine switch: `n` resume/suspend round trips, two switches each.
pub fn coroutine_switch(timer: &Timer, n: usize) -> f64 {
    let mut c = Coroutine::new(|y: &Yielder<(), ()>, ()| loop {
        y.suspend(());
    });
    c.resume(());
    let t0 = timer.start();
    for _ in 0..n {
        c.resume(());
    }
    let t1 = timer.stop();
    timer.ns(t1 - t0) / (2 * n) as f64
}

/// ns to create a coroutine, run it to completion (it calls one function) and
/// drop it: with a freshly mapped stack, or with a stack from a pool.
pub fn coroutine_spawn(timer: &Timer, n: usize, pooled: bool) -> f64 {
    let mut spare: Option<DefaultStack> = if pooled {
        Some(DefaultStack::new(64 * 1024).expect("a 64 KiB stack"))
    } else {
        None
    };
    let mut acc = 0u64;
    let t0 = timer.start();
    for i in 0..n as u64 {
        let body = move |_: &Yielder<(), ()>, ()| crate::server::served(i);
        let mut c = match spare.take() {
            Some(s) => Coroutine::with_stack(s, body),
            None => Coroutine::with_stack(DefaultStack::new(64 * 1024).expect("stack"), body),
        };
        if let corosensei::CoroutineResult::Return(v) = c.resume(()) {
            acc ^= v;
        }
        if pooled {
            spare = Some(c.into_stack());
        }
    }
    let t1 = timer.stop();
    std::hint::black_box(acc);
    timer.ns(t1 - t0) / n as f64
}

/// ns per coroutine, pipelined: create `k` coroutines on pooled stacks (each calls one
/// function), then run them all to the end; `rounds` times. Returns the results'
/// XOR too, so a test can check every coroutine ran.
pub fn coroutine_spawn_many(timer: &Timer, rounds: usize, k: usize) -> (f64, u64) {
    let mut pool: Vec<DefaultStack> = (0..k)
        .map(|_| DefaultStack::new(64 * 1024).expect("a 64 KiB stack"))
        .collect();
    let mut acc = 0u64;
    let t0 = timer.start();
    for r in 0..rounds as u64 {
        let mut cs: Vec<_> = (0..k as u64)
            .map(|j| {
                let stack = pool.pop().expect("one stack per coroutine");
                let x = r * k as u64 + j;
                Coroutine::with_stack(stack, move |_: &Yielder<(), ()>, ()| {
                    crate::server::served(x)
                })
            })
            .collect();
        for c in cs.iter_mut() {
            if let corosensei::CoroutineResult::Return(v) = c.resume(()) {
                acc ^= v;
            }
        }
        pool.extend(cs.into_iter().map(|c| c.into_stack()));
    }
    let t1 = timer.stop();
    (timer.ns(t1 - t0) / (rounds * k).max(1) as f64, acc)
}

fn futex_wait(f: &AtomicU32, val: u32) {
    // SAFETY: FUTEX_WAIT on a live, aligned u32; spurious returns are handled by the caller's loop.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            f.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            val,
            std::ptr::null::<libc::timespec>(),
        )
    };
}

fn futex_wake(f: &AtomicU32) {
    // SAFETY: FUTEX_WAKE on a live, aligned u32.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            f.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            1,
        )
    };
}

/// ns per OS thread switch: two threads pinned to `cpu` hand a turn back and forth
/// `n` times through a futex, so every hand-off is a context switch.
pub fn os_switch(host: &Host, timer: &Timer, cpu: u32, n: usize) -> Result<f64> {
    let turn = AtomicU32::new(0);
    let play = |me: u32| -> Result<()> {
        pin_current_thread(host, cpu)?;
        for _ in 0..n {
            while turn.load(Ordering::Acquire) != me {
                futex_wait(&turn, 1 - me);
            }
            turn.store(1 - me, Ordering::Release);
            futex_wake(&turn);
        }
        Ok(())
    };
    let (t0, t1, r) = std::thread::scope(|s| {
        let t0 = timer.start();
        let a = s.spawn(|| play(0));
        let b = s.spawn(|| play(1));
        let ra = a.join();
        let rb = b.join();
        let t1 = timer.stop();
        (t0, t1, ra.and_then(|x| rb.map(|y| x.and(y))))
    });
    r.map_err(|_| Error::System("a ping-pong thread panicked".into()))??;
    Ok(timer.ns(t1 - t0) / (2 * n) as f64)
}

/// ns to create `k` OS threads pinned to `cpus` (round robin), each calling one
/// function, and join them all.
pub fn os_create_join(host: &Host, timer: &Timer, cpus: &[u32], k: usize) -> Result<f64> {
    let t0 = timer.start();
    let results: Vec<std::thread::Result<Result<u64>>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..k)
            .map(|i| {
                let cpu = cpus[i % cpus.len()];
                s.spawn(move || -> Result<u64> {
                    pin_current_thread(host, cpu)?;
                    Ok(crate::server::served(i as u64))
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join()).collect()
    });
    let t1 = timer.stop();
    for r in results {
        r.map_err(|_| Error::System("a created thread panicked".into()))??;
    }
    Ok(timer.ns(t1 - t0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_topo::TopologySource;

    #[test]
    fn switch_and_spawn_costs_are_positive_and_ordered() {
        let host = Host::load(&TopologySource::ThisSystem).unwrap();
        let timer = Timer::best();
        let co = (0..5)
            .map(|_| coroutine_switch(&timer, 10_000))
            .fold(f64::INFINITY, f64::min);
        assert!(co > 0.0 && co < 10_000.0, "{co}");
        assert!(coroutine_spawn(&timer, 100, true) > 0.0);
        assert!(coroutine_spawn(&timer, 100, false) > 0.0);
        // Every one of the 3 × 16 coroutines ran and returned its function's result.
        let want = (0..48u64).fold(0, |a, x| a ^ crate::server::served(x));
        let (ns, got) = coroutine_spawn_many(&timer, 3, 16);
        assert!(ns > 0.0);
        assert_eq!(got, want);
        let cpu = host.machine.pus[0].os;
        // A kernel context switch costs more than a user-level one (≥ 10×, debug build
        // included): the best of several passes of each, since preemption only adds
        // time, and measured once more before failing.
        let best = |f: &dyn Fn() -> f64| (0..5).map(|_| f()).fold(f64::INFINITY, f64::min);
        let measure = || {
            let co = best(&|| coroutine_switch(&timer, 10_000));
            let os = best(&|| os_switch(&host, &timer, cpu, 200).unwrap());
            (co, os)
        };
        let (co, os) = measure();
        if os <= co {
            let (co2, os2) = measure();
            assert!(
                os2 > co2,
                "os {os} coroutine {co}; again os {os2} coroutine {co2}"
            );
        }
        assert!(os_create_join(&host, &timer, &[cpu], 3).unwrap() > 0.0);
    }
}
