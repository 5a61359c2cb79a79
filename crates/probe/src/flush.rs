//! Pushing lines out of every cache of the coherence domain: clflushopt (or clflush)
//! on x86-64, `dc civac` on aarch64. Either writes a dirty line back and invalidates
//! it everywhere, which is how `uown` lines are made and requestors' caches cleared.

#[cfg(target_arch = "x86_64")]
mod imp {
    use core::arch::asm;
    use core::arch::x86_64::__cpuid_count;

    #[allow(unused_unsafe)] // cpuid is safe from Rust 1.87 on, unsafe before
    fn has_clflushopt() -> bool {
        // SAFETY: cpuid leaf 7 exists on every CPU with AVX-era features; on older
        // ones the bit reads as zero and clflush is used.
        unsafe { __cpuid_count(7, 0).ebx & (1 << 23) != 0 }
    }

    pub fn method() -> &'static str {
        if has_clflushopt() {
            "clflushopt + mfence"
        } else {
            "clflush + mfence"
        }
    }

    pub unsafe fn flush(base: *const u8, lines: &[u32], line: usize) {
        if has_clflushopt() {
            for &l in lines {
                asm!("clflushopt [{}]", in(reg) base.add(l as usize * line), options(nostack));
            }
        } else {
            for &l in lines {
                asm!("clflush [{}]", in(reg) base.add(l as usize * line), options(nostack));
            }
        }
        asm!("mfence", options(nostack));
    }
}

#[cfg(target_arch = "aarch64")]
mod imp {
    use core::arch::asm;

    pub fn method() -> &'static str {
        "dc civac + dsb ish"
    }

    pub unsafe fn flush(base: *const u8, lines: &[u32], line: usize) {
        for &l in lines {
            asm!("dc civac, {}", in(reg) base.add(l as usize * line), options(nostack));
        }
        asm!("dsb ish", options(nostack));
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod imp {
    pub fn method() -> &'static str {
        "none (no cache-flush instruction implemented for this architecture)"
    }
    pub unsafe fn flush(_: *const u8, _: &[u32], _: usize) {}
}

/// Whether this architecture can flush lines (otherwise states needing it are unavailable).
pub fn available() -> bool {
    cfg!(any(target_arch = "x86_64", target_arch = "aarch64"))
}

/// The instruction sequence used, for provenance.
pub fn method() -> &'static str {
    imp::method()
}

/// Write back and invalidate the lines `base + l * line` for every `l` in `lines`.
///
/// # Safety
/// Every such address must lie in a live mapping.
pub unsafe fn flush_lines(base: *const u8, lines: &[u32], line: usize) {
    imp::flush(base, lines, line)
}

/// Write back and invalidate every line of `base..base + bytes`.
///
/// # Safety
/// The range must be mapped.
pub unsafe fn flush_range(base: *const u8, bytes: usize, line: usize) {
    let first = base as usize / line * line;
    let n = (base as usize + bytes - first).div_ceil(line);
    let mut idx = [0u32; 256];
    let mut done = 0;
    while done < n {
        let k = (n - done).min(idx.len());
        for (i, x) in idx[..k].iter_mut().enumerate() {
            *x = (done + i) as u32;
        }
        // SAFETY: the caller maps the range; the lines lie inside it.
        unsafe { imp::flush(first as *const u8, &idx[..k], line) };
        done += k;
    }
}
