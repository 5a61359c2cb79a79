//! Bandwidth kernels (snbench Table 4.3 plus today's): each streams over a region
//! line by line and returns the bytes it counts.
//!
//! Byte accounting ("counted" is what bandwidth figures use, STREAM's convention;
//! "traffic" adds what write-allocate caches move as well):
//!
//! | kernel  | per line                         | counted | traffic |
//! |---------|----------------------------------|---------|---------|
//! | read    | one 8-byte load (snbench `sum`)  | 64      | 64      |
//! | readv   | full-line vector loads           | 64      | 64      |
//! | rdsh    | one load, software prefetch ahead| 64      | 64      |
//! | rdex    | one 8-byte store (fill), in cache| 64      | 64      |
//! | zero    | one 8-byte store beyond the LLC  | 64      | 128 (RFO + writeback) |
//! | upgrade | one 8-byte store to a shared line| 64      | 0 data (invalidations) |
//! | nt      | full-line non-temporal stores    | 64      | 64      |
//! | copy    | full-line load + store           | 128     | 192 (RFO of the destination) |

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};

/// Lines between checks of the stop flag (256 KiB of 64-byte lines).
pub const CHUNK_LINES: usize = 4096;
/// Prefetch distance of `rdsh`, in lines.
pub const PREFETCH_LINES: usize = 16;

/// A bandwidth kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BwKernel {
    /// One 8-byte load per line.
    Read,
    /// Full-line vector loads.
    Readv,
    /// One load per line with a software prefetch ahead.
    Rdsh,
    /// One 8-byte store per line, buffer within the cache.
    Rdex,
    /// One 8-byte store per line, buffer beyond the LLC.
    Zero,
    /// One 8-byte store per line the requestor shares.
    Upgrade,
    /// Full-line non-temporal stores.
    Nt,
    /// Full-line copy from the first half of the region to the second.
    Copy,
}

impl BwKernel {
    /// Every kernel, in table order.
    pub const ALL: [BwKernel; 8] = [
        BwKernel::Read,
        BwKernel::Readv,
        BwKernel::Rdsh,
        BwKernel::Rdex,
        BwKernel::Zero,
        BwKernel::Upgrade,
        BwKernel::Nt,
        BwKernel::Copy,
    ];

    /// Parse a kernel name.
    pub fn parse(s: &str) -> Result<BwKernel, String> {
        Self::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                format!(
                    "invalid kernel '{s}': expected one of {}",
                    Self::ALL.map(|k| k.name()).join(", ")
                )
            })
    }

    /// Name as the CLI spells it.
    pub fn name(self) -> &'static str {
        match self {
            BwKernel::Read => "read",
            BwKernel::Readv => "readv",
            BwKernel::Rdsh => "rdsh",
            BwKernel::Rdex => "rdex",
            BwKernel::Zero => "zero",
            BwKernel::Upgrade => "upgrade",
            BwKernel::Nt => "nt",
            BwKernel::Copy => "copy",
        }
    }

    /// Counted bytes per line processed (see the module table).
    pub fn counted_per_line(self, line: usize) -> usize {
        if self == BwKernel::Copy {
            2 * line
        } else {
            line
        }
    }

    /// Bytes moved per line including write-allocate traffic (see the module table).
    pub fn traffic_per_line(self, line: usize) -> usize {
        match self {
            BwKernel::Zero => 2 * line,
            BwKernel::Upgrade => 0,
            BwKernel::Copy => 3 * line,
            _ => line,
        }
    }

    /// Whether the kernel stores.
    pub fn writes(self) -> bool {
        matches!(
            self,
            BwKernel::Rdex | BwKernel::Zero | BwKernel::Upgrade | BwKernel::Nt | BwKernel::Copy
        )
    }
}

/// Vector width used for full-line kernels, chosen at run time.
pub fn vector_bits() -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return 512;
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            return 256;
        }
        128
    }
    #[cfg(target_arch = "aarch64")]
    {
        128
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        64
    }
}

/// The instruction set behind [`vector_bits`], for the record.
pub fn vector_isa() -> &'static str {
    match (cfg!(target_arch = "x86_64"), vector_bits()) {
        (true, 512) => "AVX-512",
        (true, 256) => "AVX2",
        (true, _) => "SSE2",
        (false, 128) => "NEON (compiler-vectorised)",
        _ => "scalar",
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use core::arch::x86_64::*;

    #[target_feature(enable = "avx512f")]
    pub unsafe fn readv512(p: *const u8, lines: usize) -> u64 {
        let mut a = _mm512_setzero_si512();
        for i in 0..lines {
            a = _mm512_xor_si512(a, _mm512_load_si512(p.add(i * 64) as *const _));
        }
        _mm512_reduce_add_epi64(a) as u64
    }

    #[target_feature(enable = "avx2")]
    pub unsafe fn readv256(p: *const u8, lines: usize) -> u64 {
        let (mut a, mut b) = (_mm256_setzero_si256(), _mm256_setzero_si256());
        for i in 0..lines {
            a = _mm256_xor_si256(a, _mm256_load_si256(p.add(i * 64) as *const _));
            b = _mm256_xor_si256(b, _mm256_load_si256(p.add(i * 64 + 32) as *const _));
        }
        _mm256_extract_epi64::<0>(_mm256_xor_si256(a, b)) as u64
    }

    pub unsafe fn readv128(p: *const u8, lines: usize) -> u64 {
        let mut a = _mm_setzero_si128();
        for i in 0..lines {
            for j in 0..4 {
                a = _mm_xor_si128(a, _mm_load_si128(p.add(i * 64 + j * 16) as *const _));
            }
        }
        _mm_cvtsi128_si64(a) as u64
    }

    #[target_feature(enable = "avx512f")]
    pub unsafe fn nt512(p: *mut u8, lines: usize) {
        let v = _mm512_set1_epi64(1);
        for i in 0..lines {
            _mm512_stream_si512(p.add(i * 64) as *mut _, v);
        }
        _mm_sfence();
    }

    #[target_feature(enable = "avx2")]
    pub unsafe fn nt256(p: *mut u8, lines: usize) {
        let v = _mm256_set1_epi64x(1);
        for i in 0..lines {
            _mm256_stream_si256(p.add(i * 64) as *mut _, v);
            _mm256_stream_si256(p.add(i * 64 + 32) as *mut _, v);
        }
        _mm_sfence();
    }

    pub unsafe fn nt128(p: *mut u8, lines: usize) {
        let v = _mm_set1_epi64x(1);
        for i in 0..lines * 4 {
            _mm_stream_si128(p.add(i * 16) as *mut _, v);
        }
        _mm_sfence();
    }

    #[target_feature(enable = "avx512f")]
    pub unsafe fn copy512(s: *const u8, d: *mut u8, lines: usize) {
        for i in 0..lines {
            _mm512_store_si512(
                d.add(i * 64) as *mut _,
                _mm512_load_si512(s.add(i * 64) as *const _),
            );
        }
    }

    #[target_feature(enable = "avx2")]
    pub unsafe fn copy256(s: *const u8, d: *mut u8, lines: usize) {
        for i in 0..lines * 2 {
            _mm256_store_si256(
                d.add(i * 32) as *mut _,
                _mm256_load_si256(s.add(i * 32) as *const _),
            );
        }
    }

    pub unsafe fn copy128(s: *const u8, d: *mut u8, lines: usize) {
        for i in 0..lines * 4 {
            _mm_store_si128(
                d.add(i * 16) as *mut _,
                _mm_load_si128(s.add(i * 16) as *const _),
            );
        }
    }

    pub unsafe fn prefetch(p: *const u8) {
        _mm_prefetch::<_MM_HINT_T0>(p as *const i8);
    }
}

unsafe fn readv(p: *const u8, lines: usize, bits: u32) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        match bits {
            512 => x86::readv512(p, lines),
            256 => x86::readv256(p, lines),
            _ => x86::readv128(p, lines),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = bits;
        let w = std::slice::from_raw_parts(p as *const u64, lines * 8);
        w.iter().fold(0u64, |a, x| a ^ x)
    }
}

unsafe fn nt(p: *mut u8, lines: usize, bits: u32) {
    #[cfg(target_arch = "x86_64")]
    {
        match bits {
            512 => x86::nt512(p, lines),
            256 => x86::nt256(p, lines),
            _ => x86::nt128(p, lines),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = bits;
        // No portable non-temporal store: plain full-line stores (recorded as such).
        std::slice::from_raw_parts_mut(p as *mut u64, lines * 8).fill(1);
    }
}

unsafe fn copy(s: *const u8, d: *mut u8, lines: usize, bits: u32) {
    #[cfg(target_arch = "x86_64")]
    {
        match bits {
            512 => x86::copy512(s, d, lines),
            256 => x86::copy256(s, d, lines),
            _ => x86::copy128(s, d, lines),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = bits;
        std::ptr::copy_nonoverlapping(s, d, lines * 64);
    }
}

#[inline(always)]
unsafe fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    x86::prefetch(p);
    #[cfg(target_arch = "aarch64")]
    core::arch::asm!("prfm pldl1keep, [{}]", in(reg) p, options(nostack, readonly));
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let _ = p;
}

/// Run `kernel` over `lines` 64-byte lines at `base` (64-byte aligned), `reps` times,
/// checking `stop` between chunks. Returns the counted bytes done.
///
/// # Safety
/// `base` must be valid for reads and writes of `lines * 64` bytes (for copy: the
/// first half is read, the second half written), 64-byte aligned.
pub unsafe fn run(
    kernel: BwKernel,
    base: *mut u8,
    lines: usize,
    reps: usize,
    stop: Option<&AtomicBool>,
) -> u64 {
    const LINE: usize = 64;
    let span = if kernel == BwKernel::Copy {
        lines / 2
    } else {
        lines
    };
    // Chosen once, outside the streaming loop.
    let bits = vector_bits();
    let mut done_lines = 0u64;
    let mut sink = 0u64;
    'outer: for _ in 0..reps {
        let mut i = 0;
        while i < span {
            let n = CHUNK_LINES.min(span - i);
            let p = base.add(i * LINE);
            match kernel {
                BwKernel::Read => {
                    for l in 0..n {
                        sink = sink.wrapping_add((p.add(l * LINE) as *const u64).read_volatile());
                    }
                }
                BwKernel::Readv => sink ^= readv(p, n, bits),
                BwKernel::Rdsh => {
                    for l in 0..n {
                        let ahead = i + l + PREFETCH_LINES;
                        if ahead < span {
                            prefetch(base.add(ahead * LINE));
                        }
                        sink = sink.wrapping_add((p.add(l * LINE) as *const u64).read_volatile());
                    }
                }
                BwKernel::Rdex | BwKernel::Zero | BwKernel::Upgrade => {
                    for l in 0..n {
                        (p.add(l * LINE + 8) as *mut u64).write_volatile(l as u64);
                    }
                }
                BwKernel::Nt => nt(p, n, bits),
                BwKernel::Copy => copy(p, base.add((span + i) * LINE), n, bits),
            }
            done_lines += n as u64;
            i += n;
            if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
                break 'outer;
            }
        }
    }
    std::hint::black_box(sink);
    done_lines * kernel.counted_per_line(LINE) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[repr(C, align(64))]
    struct Lines([u8; 64 * 64]);

    #[test]
    fn every_kernel_counts_its_bytes() {
        let mut m = Box::new(Lines([0; 64 * 64]));
        for k in BwKernel::ALL {
            // SAFETY: 64 aligned lines.
            let b = unsafe { run(k, m.0.as_mut_ptr(), 64, 3, None) };
            let lines = if k == BwKernel::Copy { 32 } else { 64 };
            assert_eq!(b, 3 * lines * k.counted_per_line(64) as u64, "{k:?}");
            assert!(k.traffic_per_line(64) <= 3 * 64);
        }
        assert_eq!(BwKernel::Zero.traffic_per_line(64), 128);
        assert_eq!(BwKernel::Copy.traffic_per_line(64), 192);
    }

    #[test]
    fn copy_and_nt_write_what_they_should() {
        let mut m = Box::new(Lines([0; 64 * 64]));
        for (i, b) in m.0[..32 * 64].iter_mut().enumerate() {
            *b = (i % 251) as u8;
        }
        // SAFETY: as above.
        unsafe { run(BwKernel::Copy, m.0.as_mut_ptr(), 64, 1, None) };
        assert_eq!(m.0[..32 * 64], m.0[32 * 64..]);
        // SAFETY: as above.
        unsafe { run(BwKernel::Nt, m.0.as_mut_ptr(), 64, 1, None) };
        assert!(m
            .0
            .chunks(8)
            .all(|w| u64::from_le_bytes(w.try_into().unwrap()) == 1));
    }

    #[test]
    fn a_raised_stop_ends_after_one_chunk() {
        let mut v = vec![0u8; 64 * CHUNK_LINES * 4 + 64];
        let off = v.as_ptr().align_offset(64);
        let stop = AtomicBool::new(true);
        // SAFETY: 4 chunks of aligned lines.
        let b = unsafe {
            run(
                BwKernel::Read,
                v.as_mut_ptr().add(off),
                CHUNK_LINES * 4,
                10,
                Some(&stop),
            )
        };
        assert_eq!(b, (CHUNK_LINES * 64) as u64);
        assert!(BwKernel::parse("bogus").unwrap_err().contains("'bogus'"));
    }
}
