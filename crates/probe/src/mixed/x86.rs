//! The mixed kernels' full-line operations for x86-64: AVX-512, AVX2 and SSE2 (the
//! base ISA), each driver compiled with its feature enabled so the operations inline.

use super::{drive, Isa, MixKernel, Walk, TRIAD_SCALAR};
use core::arch::x86_64::*;

pub struct Avx512;
pub struct Avx2;
pub struct Sse2;

#[target_feature(enable = "avx512f")]
pub unsafe fn drive512(k: MixKernel, nt: bool, w: Walk) -> u64 {
    drive::<Avx512>(k, nt, w)
}

#[target_feature(enable = "avx2")]
pub unsafe fn drive256(k: MixKernel, nt: bool, w: Walk) -> u64 {
    drive::<Avx2>(k, nt, w)
}

pub unsafe fn drive128(k: MixKernel, nt: bool, w: Walk) -> u64 {
    drive::<Sse2>(k, nt, w)
}

impl Isa for Avx512 {
    type V = __m512i;
    #[inline(always)]
    unsafe fn zero() -> __m512i {
        _mm512_setzero_si512()
    }
    #[inline(always)]
    unsafe fn splat(x: i64) -> __m512i {
        _mm512_set1_epi64(x)
    }
    #[inline(always)]
    unsafe fn load_xor(acc: __m512i, p: *const u8) -> __m512i {
        _mm512_xor_si512(acc, _mm512_load_si512(p as *const _))
    }
    #[inline(always)]
    unsafe fn store(p: *mut u8, v: __m512i) {
        _mm512_store_si512(p as *mut _, v)
    }
    #[inline(always)]
    unsafe fn stream(p: *mut u8, v: __m512i) {
        _mm512_stream_si512(p as *mut _, v)
    }
    #[inline(always)]
    unsafe fn triad(a: *mut u8, b: *const u8, c: *const u8, nt: bool) {
        let s = _mm512_set1_pd(TRIAD_SCALAR);
        let x = _mm512_add_pd(
            _mm512_load_pd(b as *const f64),
            _mm512_mul_pd(s, _mm512_load_pd(c as *const f64)),
        );
        if nt {
            _mm512_stream_pd(a as *mut f64, x)
        } else {
            _mm512_store_pd(a as *mut f64, x)
        }
    }
    #[inline(always)]
    unsafe fn update(p: *mut u8) {
        let x = _mm512_load_si512(p as *const _);
        _mm512_store_si512(p as *mut _, _mm512_add_epi64(x, _mm512_set1_epi64(1)))
    }
    #[inline(always)]
    unsafe fn fold(acc: __m512i) -> u64 {
        _mm512_reduce_add_epi64(acc) as u64
    }
    #[inline(always)]
    unsafe fn fence() {
        _mm_sfence()
    }
}

impl Isa for Avx2 {
    type V = (__m256i, __m256i);
    #[inline(always)]
    unsafe fn zero() -> Self::V {
        (_mm256_setzero_si256(), _mm256_setzero_si256())
    }
    #[inline(always)]
    unsafe fn splat(x: i64) -> Self::V {
        (_mm256_set1_epi64x(x), _mm256_set1_epi64x(x))
    }
    #[inline(always)]
    unsafe fn load_xor(acc: Self::V, p: *const u8) -> Self::V {
        (
            _mm256_xor_si256(acc.0, _mm256_load_si256(p as *const _)),
            _mm256_xor_si256(acc.1, _mm256_load_si256(p.add(32) as *const _)),
        )
    }
    #[inline(always)]
    unsafe fn store(p: *mut u8, v: Self::V) {
        _mm256_store_si256(p as *mut _, v.0);
        _mm256_store_si256(p.add(32) as *mut _, v.1);
    }
    #[inline(always)]
    unsafe fn stream(p: *mut u8, v: Self::V) {
        _mm256_stream_si256(p as *mut _, v.0);
        _mm256_stream_si256(p.add(32) as *mut _, v.1);
    }
    #[inline(always)]
    unsafe fn triad(a: *mut u8, b: *const u8, c: *const u8, nt: bool) {
        let s = _mm256_set1_pd(TRIAD_SCALAR);
        for h in [0, 32] {
            let x = _mm256_add_pd(
                _mm256_load_pd(b.add(h) as *const f64),
                _mm256_mul_pd(s, _mm256_load_pd(c.add(h) as *const f64)),
            );
            if nt {
                _mm256_stream_pd(a.add(h) as *mut f64, x)
            } else {
                _mm256_store_pd(a.add(h) as *mut f64, x)
            }
        }
    }
    #[inline(always)]
    unsafe fn update(p: *mut u8) {
        let one = _mm256_set1_epi64x(1);
        for h in [0, 32] {
            let q = p.add(h) as *mut __m256i;
            _mm256_store_si256(q, _mm256_add_epi64(_mm256_load_si256(q), one));
        }
    }
    #[inline(always)]
    unsafe fn fold(acc: Self::V) -> u64 {
        _mm256_extract_epi64::<0>(_mm256_xor_si256(acc.0, acc.1)) as u64
    }
    #[inline(always)]
    unsafe fn fence() {
        _mm_sfence()
    }
}

impl Isa for Sse2 {
    type V = (__m128i, __m128i);
    #[inline(always)]
    unsafe fn zero() -> Self::V {
        (_mm_setzero_si128(), _mm_setzero_si128())
    }
    #[inline(always)]
    unsafe fn splat(x: i64) -> Self::V {
        (_mm_set1_epi64x(x), _mm_set1_epi64x(x))
    }
    #[inline(always)]
    unsafe fn load_xor(acc: Self::V, p: *const u8) -> Self::V {
        let l = |o: usize| _mm_load_si128(p.add(o) as *const _);
        (
            _mm_xor_si128(acc.0, _mm_xor_si128(l(0), l(32))),
            _mm_xor_si128(acc.1, _mm_xor_si128(l(16), l(48))),
        )
    }
    #[inline(always)]
    unsafe fn store(p: *mut u8, v: Self::V) {
        for (o, x) in [(0, v.0), (16, v.1), (32, v.0), (48, v.1)] {
            _mm_store_si128(p.add(o) as *mut _, x);
        }
    }
    #[inline(always)]
    unsafe fn stream(p: *mut u8, v: Self::V) {
        for (o, x) in [(0, v.0), (16, v.1), (32, v.0), (48, v.1)] {
            _mm_stream_si128(p.add(o) as *mut _, x);
        }
    }
    #[inline(always)]
    unsafe fn triad(a: *mut u8, b: *const u8, c: *const u8, nt: bool) {
        let s = _mm_set1_pd(TRIAD_SCALAR);
        for o in [0, 16, 32, 48] {
            let x = _mm_add_pd(
                _mm_load_pd(b.add(o) as *const f64),
                _mm_mul_pd(s, _mm_load_pd(c.add(o) as *const f64)),
            );
            if nt {
                _mm_stream_pd(a.add(o) as *mut f64, x)
            } else {
                _mm_store_pd(a.add(o) as *mut f64, x)
            }
        }
    }
    #[inline(always)]
    unsafe fn update(p: *mut u8) {
        let one = _mm_set1_epi64x(1);
        for o in [0, 16, 32, 48] {
            let q = p.add(o) as *mut __m128i;
            _mm_store_si128(q, _mm_add_epi64(_mm_load_si128(q), one));
        }
    }
    #[inline(always)]
    unsafe fn fold(acc: Self::V) -> u64 {
        _mm_cvtsi128_si64(_mm_xor_si128(acc.0, acc.1)) as u64
    }
    #[inline(always)]
    unsafe fn fence() {
        _mm_sfence()
    }
}
