//! Chase kernels: `walk` (loads: READ) and `modify` (store to the line, then load
//! the pointer: RDEX, or UPGRD on lines the requestor shares), each with k dependent
//! ALU operations after every load for the restart search.
//!
//! Written as inline assembly per architecture, unrolled by hand with `.rept`, so
//! the compiler can neither hoist the load above the store nor drop the work; the
//! adds use a register holding zero, which the core cannot know without the value.

use serde::{Deserialize, Serialize};

/// Loads per loop iteration.
pub const UNROLL: usize = 16;

/// Largest number of dependent work operations a kernel can have after a load.
pub const MAX_WORK: usize = 127;

/// `fn(start, iterations, zero) -> end`: follows `iterations * UNROLL` pointers.
pub type KernelFn = unsafe fn(*const u8, usize, usize) -> *const u8;

/// The access a kernel makes to each line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// Load the pointer (READ).
    Read,
    /// Store to the line's second word, then load the pointer (RDEX / UPGRD).
    Modify,
}

/// One chase kernel in inline asm: `$pre` (a store, or nothing) then the load and
/// K dependent adds, `.rept`-unrolled UNROLL times around one counted loop.
macro_rules! chase_asm {
    ($name:ident, [$($pre:literal)?], $load:literal, $add:literal, $dec:literal, $jump:literal, $($opt:ident),*) => {
        pub unsafe fn $name<const K: usize>(mut p: *const u8, iters: usize, zero: usize) -> *const u8 {
            core::arch::asm!(
                "2:",
                ".rept {u}",
                $($pre,)?
                $load,
                ".rept {k}",
                $add,
                ".endr",
                ".endr",
                $dec,
                $jump,
                p = inout(reg) p,
                n = inout(reg) iters => _,
                z = in(reg) zero,
                u = const super::UNROLL,
                k = const K,
                options($($opt),*),
            );
            p
        }
    };
}

#[cfg(target_arch = "x86_64")]
mod imp {
    chase_asm!(
        walk,
        [],
        "mov {p}, qword ptr [{p}]",
        "add {p}, {z}",
        "dec {n}",
        "jnz 2b",
        nostack,
        readonly
    );
    chase_asm!(
        modify,
        ["mov qword ptr [{p} + 8], {z}"],
        "mov {p}, qword ptr [{p}]",
        "add {p}, {z}",
        "dec {n}",
        "jnz 2b",
        nostack
    );

    pub const NAME: &str = "x86-64 inline asm";
}

#[cfg(target_arch = "aarch64")]
mod imp {
    chase_asm!(
        walk,
        [],
        "ldr {p}, [{p}]",
        "add {p}, {p}, {z}",
        "subs {n}, {n}, #1",
        "b.ne 2b",
        nostack,
        readonly
    );
    chase_asm!(
        modify,
        ["str {z}, [{p}, #8]"],
        "ldr {p}, [{p}]",
        "add {p}, {p}, {z}",
        "subs {n}, {n}, #1",
        "b.ne 2b",
        nostack
    );

    pub const NAME: &str = "aarch64 inline asm";
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod imp {
    use super::UNROLL;
    use std::hint::black_box;

    pub unsafe fn walk<const K: usize>(mut p: *const u8, iters: usize, zero: usize) -> *const u8 {
        for _ in 0..iters * UNROLL {
            p = (p as *const *const u8).read_volatile();
            for _ in 0..K {
                p = (p as usize).wrapping_add(black_box(zero)) as *const u8;
            }
        }
        p
    }

    pub unsafe fn modify<const K: usize>(mut p: *const u8, iters: usize, zero: usize) -> *const u8 {
        for _ in 0..iters * UNROLL {
            (p.add(8) as *mut usize).write_volatile(zero);
            p = (p as *const *const u8).read_volatile();
            for _ in 0..K {
                p = (p as usize).wrapping_add(black_box(zero)) as *const u8;
            }
        }
        p
    }

    pub const NAME: &str = "portable Rust (volatile loads; no asm for this architecture)";
}

/// How the kernels were built, for provenance.
pub const IMPLEMENTATION: &str = imp::NAME;

seq_macro::seq!(K in 0..=127 {
    static WALK: [KernelFn; MAX_WORK + 1] = [#(imp::walk::<K>,)*];
    static MODIFY: [KernelFn; MAX_WORK + 1] = [#(imp::modify::<K>,)*];
});

/// The kernel for an access with `work` dependent operations per load.
pub fn kernel(access: Access, work: usize) -> Option<KernelFn> {
    let table = match access {
        Access::Read => &WALK,
        Access::Modify => &MODIFY,
    };
    table.get(work).copied()
}

/// Follow `loads` pointers (rounded up to a multiple of [`UNROLL`]) from `p`.
///
/// # Safety
/// `p` must start a cyclic chase written by [`crate::layout::link`] (or a pointer to itself),
/// valid for reads (and writes of the second word for [`Access::Modify`]).
#[inline(always)]
pub unsafe fn run(f: KernelFn, p: *const u8, loads: usize) -> *const u8 {
    let iters = loads.div_ceil(UNROLL).max(1);
    f(p, iters, std::hint::black_box(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_follow_the_chain_and_keep_pointers() {
        // Four 64-byte lines chained 0 -> 2 -> 1 -> 3 -> 0.
        let mut mem = vec![0usize; 32];
        let base = mem.as_mut_ptr() as *mut u8;
        let order = [0u32, 2, 1, 3];
        // SAFETY: mem holds 4 lines.
        unsafe { crate::layout::link(base, &order, 64) };
        for access in [Access::Read, Access::Modify] {
            for work in [0, 1, 5, MAX_WORK] {
                let f = kernel(access, work).unwrap();
                // 16 loads = 4 full cycles: back at the start.
                // SAFETY: a valid cyclic chase.
                let end = unsafe { run(f, base, 16) };
                assert_eq!(end, base as *const u8, "{access:?} k={work}");
            }
        }
        // SAFETY: same chase; the pointers survived the modify kernel.
        assert!(unsafe { crate::layout::is_single_cycle(base, &order, 64) });
        assert!(kernel(Access::Read, MAX_WORK + 1).is_none());
    }
}
