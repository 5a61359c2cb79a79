//! Access faults on shared pages: the SIGSEGV handler and the fault trampoline.
//!
//! The handler never switches stacks and never takes a lock. It only rewrites the
//! faulting context so that, when the kernel returns from the signal, the faulting thread
//! *calls* a fault routine on its own stack, exactly as if the faulting instruction had
//! been a call: the trampoline saves every general register, the flags and the whole
//! extended (x87/SSE/AVX) state, calls the routine with the fault address, restores
//! everything, puts the stack pointer back and jumps to the faulting instruction, which
//! runs again. The routine therefore runs in ordinary thread context, after sigreturn,
//! with SIGSEGV unblocked: it may lock, allocate, send messages and suspend the user-level
//! thread (a corosensei coroutine) while the page is fetched. corosensei's own trap
//! support only unwinds a coroutine out of a trap, it cannot resume it, hence this.
//!
//! Frame the handler writes below the interrupted code's 128-byte red zone:
//! `[orig_rsp-136] = orig_rip`, then at a 16-aligned address below it
//! `[addr, is_write, t_signal_ns, orig_rsp-136]`; the trampoline ends with
//! `pop rsp; ret 128`, which restores rip and rsp together. The handler runs on an
//! alternate signal stack (see [`ensure_altstack`]) so its own frame never overlaps these
//! words.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;

/// What the trampoline hands the routine.
#[repr(C)]
pub struct FaultFrame {
    /// The faulting data address.
    pub addr: usize,
    /// 1 for a write access.
    pub is_write: usize,
    /// CLOCK_MONOTONIC ns when the handler ran.
    pub t_signal_ns: u64,
    slot: usize,
}

const SLOTS: usize = 64;
static STARTS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
static ENDS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
static CTXS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
static SINK: AtomicUsize = AtomicUsize::new(0);

/// Called in thread context for every fault in a registered range: (ctx, frame).
pub type Sink = fn(usize, &FaultFrame);

/// Register `[start, end)` with an opaque context for the sink; returns the slot.
pub fn register(start: usize, end: usize, ctx: usize) -> usize {
    for i in 0..SLOTS {
        if CTXS[i]
            .compare_exchange(0, ctx, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            STARTS[i].store(start, Ordering::Release);
            ENDS[i].store(end, Ordering::Release);
            return i;
        }
    }
    panic!("more than {SLOTS} DSM regions in one process");
}

/// Forget a registered range.
pub fn unregister(slot: usize) {
    ENDS[slot].store(0, Ordering::Release);
    STARTS[slot].store(0, Ordering::Release);
    CTXS[slot].store(0, Ordering::Release);
}

fn lookup(addr: usize) -> Option<usize> {
    for i in 0..SLOTS {
        let s = STARTS[i].load(Ordering::Acquire);
        if s != 0 && addr >= s && addr < ENDS[i].load(Ordering::Acquire) {
            return Some(CTXS[i].load(Ordering::Acquire));
        }
    }
    None
}

/// Install the handler (once per process) with the routine's sink.
pub fn install(sink: Sink) -> Result<(), String> {
    static ONCE: Once = Once::new();
    let mut err = None;
    ONCE.call_once(|| {
        if let Err(e) = check_xsave() {
            err = Some(e);
            return;
        }
        SINK.store(sink as usize, Ordering::Release);
        // SAFETY: installing a handler with a zeroed, then filled sigaction.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = handler as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut sa.sa_mask);
            if libc::sigaction(libc::SIGSEGV, &sa, std::ptr::null_mut()) != 0 {
                err = Some(format!("sigaction: {}", std::io::Error::last_os_error()));
            }
        }
    });
    match err {
        Some(e) => Err(e),
        None if SINK.load(Ordering::Acquire) == 0 => Err("fault handler not installed".into()),
        None => Ok(()),
    }
}

/// XSAVE components the trampoline leaves out: AMX's tile configuration (17) and tile
/// data (18, 8 KiB). Neither the fault routine nor the library code it calls uses AMX,
/// so the tiles keep their contents across a fault without being saved, and leaving
/// them out keeps the save area within 4 KiB (an Emerald Rapids guest's full area is
/// 11,008 bytes, which the trampoline refused before).
const XSAVE_SKIPPED: u64 = (1 << 17) | (1 << 18);

/// The save mask as the trampoline's `mov eax, …` loads it (EDX stays all ones).
const XSAVE_MASK_LOW: u32 = !(XSAVE_SKIPPED as u32);

/// Bytes an XSAVE (standard form) with `mask` writes where the OS enables `xcr0`: the
/// legacy area and header (576), or the end of the furthest component saved, from CPUID
/// leaf 0xD (EAX size, EBX offset of component i).
fn xsave_bytes(xcr0: u64, mask: u64, component: impl Fn(u32) -> (u32, u32)) -> usize {
    (2..64)
        .filter(|i| xcr0 & mask & (1u64 << i) != 0)
        .map(|i| {
            let (size, offset) = component(i);
            (offset + size) as usize
        })
        .fold(576, usize::max)
}

/// The trampoline saves extended state with XSAVE into a 4 KiB area: refuse to run where
/// that is missing or too small rather than corrupt vector registers.
fn check_xsave() -> Result<(), String> {
    let l1 = std::arch::x86_64::__cpuid(1);
    if l1.ecx & (1 << 27) == 0 {
        return Err("the DSM fault trampoline needs XSAVE enabled by the OS (OSXSAVE)".into());
    }
    let xcr0: u64;
    // SAFETY: XGETBV with ECX = 0 reads XCR0; OSXSAVE (checked above) makes it legal.
    unsafe {
        let (lo, hi): (u32, u32);
        std::arch::asm!("xgetbv", in("ecx") 0, out("eax") lo, out("edx") hi, options(nomem, nostack));
        xcr0 = (hi as u64) << 32 | lo as u64;
    }
    let mask = !XSAVE_SKIPPED;
    let need = xsave_bytes(xcr0, mask, |i| {
        let c = std::arch::x86_64::__cpuid_count(0xd, i);
        (c.eax, c.ebx)
    });
    if need > 4096 - 64 {
        return Err(format!(
            "the extended state the DSM fault trampoline saves takes {need} bytes here (XCR0 {xcr0:#x}), over its 4032"
        ));
    }
    Ok(())
}

/// Give the calling OS thread an alternate signal stack (64 KiB) if it has none, so the
/// handler's frame never lands on the faulting stack. Leaked on purpose: lives with the thread.
pub fn ensure_altstack() {
    // SAFETY: querying and setting this thread's sigaltstack.
    unsafe {
        let mut cur: libc::stack_t = std::mem::zeroed();
        libc::sigaltstack(std::ptr::null(), &mut cur);
        if cur.ss_flags & libc::SS_DISABLE == 0 && cur.ss_size >= 32 * 1024 {
            return;
        }
        let size = 64 * 1024;
        let mem = Box::leak(vec![0u8; size].into_boxed_slice());
        let st = libc::stack_t {
            ss_sp: mem.as_mut_ptr() as *mut _,
            ss_flags: 0,
            ss_size: size,
        };
        libc::sigaltstack(&st, std::ptr::null_mut());
    }
}

extern "C" fn handler(sig: i32, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel hands a valid siginfo and ucontext; we touch only them, the
    // registry atomics, the vDSO clock and the faulting thread's stack below its red zone.
    unsafe {
        // Sent by a process (kill, tgkill, sigqueue: si_code ≤ 0), not by a fault: it
        // must end the rank as it would any program, not be taken for an access.
        if (*info).si_code <= 0 {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
            return;
        }
        let addr = (*info).si_addr() as usize;
        if lookup(addr).is_none() {
            // Not ours: fall back to the default action; returning re-faults and the
            // process dies of SIGSEGV as it would have without the DSM.
            libc::signal(sig, libc::SIG_DFL);
            return;
        }
        let uc = ctx as *mut libc::ucontext_t;
        let g = &mut (*uc).uc_mcontext.gregs;
        let is_write = (g[libc::REG_ERR as usize] & 2 != 0) as usize;
        let rsp = g[libc::REG_RSP as usize] as usize;
        let rip = g[libc::REG_RIP as usize] as usize;
        let mut ts: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
        let slot = rsp - 136;
        *(slot as *mut usize) = rip;
        let frame = ((slot & !15) - 32) as *mut FaultFrame;
        frame.write(FaultFrame {
            addr,
            is_write,
            t_signal_ns: ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64,
            slot,
        });
        g[libc::REG_RSP as usize] = frame as i64;
        g[libc::REG_RIP as usize] = dsm_fault_trampoline as *const () as usize as i64;
    }
}

extern "C" fn fault_routine(frame: *const FaultFrame) {
    // SAFETY: the trampoline passes the frame the handler wrote on this stack.
    let f = unsafe { &*frame };
    let ctx = lookup(f.addr).expect("fault address left the DSM registry");
    let sink = SINK.load(Ordering::Acquire);
    // SAFETY: SINK holds a `Sink` stored by install before any region was registered.
    let sink: Sink = unsafe { std::mem::transmute::<usize, Sink>(sink) };
    sink(ctx, f);
}

unsafe extern "C" {
    fn dsm_fault_trampoline();
}

std::arch::global_asm!(
    ".globl dsm_fault_trampoline",
    ".type dsm_fault_trampoline,@function",
    "dsm_fault_trampoline:",
    // rsp -> FaultFrame (16-aligned)
    "pushfq",
    "push rax", "push rbx", "push rcx", "push rdx", "push rsi", "push rdi", "push rbp",
    "push r8", "push r9", "push r10", "push r11", "push r12", "push r13", "push r14", "push r15",
    "cld",
    "mov rbp, rsp",
    "sub rsp, 4096",
    "and rsp, -64",
    "xor eax, eax",
    "mov [rsp+512], rax", "mov [rsp+520], rax", "mov [rsp+528], rax", "mov [rsp+536], rax",
    "mov [rsp+544], rax", "mov [rsp+552], rax", "mov [rsp+560], rax", "mov [rsp+568], rax",
    "mov eax, {mask}",
    "mov edx, -1",
    "xsave64 [rsp]",
    "lea rdi, [rbp+128]",
    "call {routine}",
    "mov eax, {mask}",
    "mov edx, -1",
    "xrstor64 [rsp]",
    "mov rsp, rbp",
    "pop r15", "pop r14", "pop r13", "pop r12", "pop r11", "pop r10", "pop r9", "pop r8",
    "pop rbp", "pop rdi", "pop rsi", "pop rdx", "pop rcx", "pop rbx", "pop rax",
    "popfq",
    "lea rsp, [rsp+24]",
    "pop rsp",
    "ret 128",
    ".size dsm_fault_trampoline, .-dsm_fault_trampoline",
    routine = sym fault_routine,
    mask = const XSAVE_MASK_LOW,
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::region::{Prot, Region, PAGE};
    use std::sync::atomic::AtomicU64;

    static SEEN: AtomicU64 = AtomicU64::new(0);

    fn sink(ctx: usize, f: &FaultFrame) {
        // SAFETY: ctx is the Region registered below, alive for the test.
        let r = unsafe { &*(ctx as *const Region) };
        let p = r.page_of(f.addr).unwrap();
        SEEN.fetch_add(1 + f.is_write as u64 * 1000, Ordering::Relaxed);
        r.protect(p, Prot::ReadWrite);
    }

    #[test]
    fn the_save_area_leaves_out_amx_tiles_and_fits_an_emerald_rapids_guest() {
        // CPUID leaf 0xD of a Sapphire/Emerald Rapids guest: (size, offset) per component.
        let spr = |i: u32| match i {
            2 => (256, 576),
            5 => (64, 1088),
            6 => (512, 1152),
            7 => (1024, 1664),
            9 => (8, 2688),
            17 => (64, 2752),
            18 => (8192, 2816),
            _ => (0, 0),
        };
        let xcr0 = 0x602e7; // x87, SSE, AVX, AVX-512 (5-7), PKRU, AMX (17, 18)
        assert_eq!(xsave_bytes(xcr0, u64::MAX, spr), 11008);
        assert_eq!(xsave_bytes(xcr0, !XSAVE_SKIPPED, spr), 2696);
        // Without AVX the legacy area and header alone.
        assert_eq!(xsave_bytes(0x3, !XSAVE_SKIPPED, spr), 576);
        assert_eq!(XSAVE_MASK_LOW, 0xfff9_ffff);
    }

    #[test]
    fn faults_resume_with_registers_intact() {
        install(sink).unwrap();
        ensure_altstack();
        let r = Box::new(Region::map(2, None).unwrap());
        r.protect_all(Prot::None);
        let slot = register(
            r.base() as usize,
            r.base() as usize + r.len(),
            &*r as *const _ as usize,
        );
        let p = r.base() as *mut f64;
        let mut acc = [1.5f64; 8];
        for (i, a) in acc.iter_mut().enumerate() {
            // SAFETY: inside the region; the first access of each page faults.
            unsafe {
                let v = std::ptr::read_volatile(p.add(i * 100));
                *a += v;
                std::ptr::write_volatile(p.add(i * 100 + 1), *a * 2.0);
            }
        }
        assert_eq!(acc, [1.5; 8]);
        // One read fault per page: the sink opens each page read-write.
        let seen = SEEN.load(Ordering::Relaxed);
        assert_eq!(seen, 2, "faults seen {seen}");
        let b = &r.sys_page(1)[601 * 8 - PAGE..601 * 8 - PAGE + 8];
        assert_eq!(f64::from_le_bytes(b.try_into().unwrap()), 3.0);
        unregister(slot);
    }
}
