//! The kernel's rule that puts a memory node in a tier, re-implemented from Linux
//! v6.12: `mt_perf_to_adistance()` and `mt_set_default_dram_perf()` in
//! mm/memory-tiers.c, fed by `hmat_set_default_dram_perf()` and
//! `hmat_calculate_adistance()` in drivers/acpi/numa/hmat.c, and the tier number of
//! `find_create_memory_tier()`. The arithmetic is the kernel's: `unsigned int`
//! (u32, wrapping) left to right, the result stored in an `int`.

/// The abstract distance of DRAM: `(4 * MEMTIER_CHUNK_SIZE) + (MEMTIER_CHUNK_SIZE >> 1)`.
pub const ADISTANCE_DRAM: i32 = 4 * 128 + (128 >> 1);
/// `MEMTIER_CHUNK_BITS`: a tier spans 128 units of abstract distance.
pub const CHUNK_BITS: u32 = 7;
/// What the rule follows, for the record and the text.
pub const SOURCE: &str = "mt_perf_to_adistance() in mm/memory-tiers.c, Linux v6.12 (reference: hmat_set_default_dram_perf(), access class 1)";

/// A node's performance as the kernel's `struct access_coordinate` holds it: ns and
/// MB/s, 0 where the firmware gave nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Perf {
    /// Read latency, ns.
    pub read_latency: u32,
    /// Write latency, ns.
    pub write_latency: u32,
    /// Read bandwidth, MB/s.
    pub read_bandwidth: u32,
    /// Write bandwidth, MB/s.
    pub write_bandwidth: u32,
}

impl Perf {
    /// Read and write alike (what QEMU's hmat-lb and a read-only measurement give).
    pub fn symmetric(latency: u32, bandwidth: u32) -> Perf {
        Perf {
            read_latency: latency,
            write_latency: latency,
            read_bandwidth: bandwidth,
            write_bandwidth: bandwidth,
        }
    }

    fn lat(&self) -> u32 {
        self.read_latency.wrapping_add(self.write_latency)
    }

    fn bw(&self) -> u32 {
        self.read_bandwidth.wrapping_add(self.write_bandwidth)
    }

    /// The kernel refuses a coordinate whose latency or bandwidth sum is 0 (-EINVAL).
    pub fn usable(&self) -> bool {
        self.lat() != 0 && self.bw() != 0
    }
}

/// The tier (memory_tierK's K) of an abstract distance: `round_down(adist, 128) >> 7`.
pub fn tier(adist: i32) -> i32 {
    adist >> CHUNK_BITS
}

/// `mt_perf_to_adistance()`: None where the kernel returns an error and so keeps
/// the default DRAM distance (a zero sum).
pub fn adistance(perf: &Perf, dram: &Perf) -> Option<i32> {
    if !perf.usable() || !dram.usable() {
        return None;
    }
    // int * unsigned int is unsigned int in C: every step wraps at 2^32, left to right.
    let a = (ADISTANCE_DRAM as u32).wrapping_mul(perf.lat()) / dram.lat();
    let a = a.wrapping_mul(dram.bw()) / perf.bw();
    Some(a as i32)
}

/// Why the kernel has no DRAM reference, so that every node gets the default distance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoReference {
    /// No node with CPUs and memory has HMAT values.
    Missing,
    /// The first such node's values sum to 0 (`mt_set_default_dram_perf()` -EINVAL).
    Zero(u32),
    /// A second DRAM node differs from the first by more than 10 % in one value.
    Mismatch(u32, u32),
}

/// `hmat_set_default_dram_perf()`: the first node with CPUs and memory that has HMAT
/// values is the reference; every later one must be within 10 % of it, value by
/// value, else the kernel disables the performance-based distance altogether.
/// `dram` lists (node, its access-1 values when it has an HMAT target), in node order.
pub fn dram_reference(dram: &[(u32, Option<Perf>)]) -> Result<(u32, Perf), NoReference> {
    let mut reference: Option<(u32, Perf)> = None;
    for (n, p) in dram {
        let Some(p) = p else { continue };
        if !p.usable() {
            return match reference {
                // A later node's -EINVAL also aborts hmat_set_default_dram_perf(), but
                // the reference already set stays in force.
                Some(r) => Ok(r),
                None => Err(NoReference::Zero(*n)),
            };
        }
        match reference {
            None => reference = Some((*n, *p)),
            Some((r, rp)) => {
                // The kernel's abs() takes an unsigned difference as a signed int.
                let off = |a: u32, b: u32| {
                    (a.wrapping_sub(b) as i32).unsigned_abs() as u64 * 10 > b as u64
                };
                if off(p.read_latency, rp.read_latency)
                    || off(p.write_latency, rp.write_latency)
                    || off(p.read_bandwidth, rp.read_bandwidth)
                    || off(p.write_bandwidth, rp.write_bandwidth)
                {
                    return Err(NoReference::Mismatch(r, *n));
                }
            }
        }
    }
    reference.ok_or(NoReference::Missing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debian_6_12_guest_oracle_gives_tiers_4_6_and_54() {
        // QEMU hmat-lb: DRAM 100 ns / 40 GB/s, CPU-less 120 ns / 32 GB/s and 300 ns / 10 GB/s;
        // sysfs reports MB/s (either 1000 or 1024 per GB gives the same ratios).
        for gb in [1000, 1024] {
            let dram = Perf::symmetric(100, 40 * gb);
            let t = |l, b| tier(adistance(&Perf::symmetric(l, b * gb), &dram).unwrap());
            assert_eq!(t(100, 40), 4);
            assert_eq!(t(120, 32), 6);
            assert_eq!(t(300, 10), 54);
        }
        assert_eq!(
            adistance(&Perf::symmetric(100, 40), &Perf::symmetric(100, 40)),
            Some(576)
        );
    }

    #[test]
    fn the_other_guest_layouts_give_their_expected_tiers() {
        // tests/guests/tiers-two-socket.layout and tiers-partial-hmat.layout, DRAM
        // 100 ns / 40 GB/s; MB/s of 1000 or 1024 per GB alike.
        for gb in [1000, 1024] {
            let dram = Perf::symmetric(100, 40 * gb);
            let a = |l, b| adistance(&Perf::symmetric(l, b * gb), &dram).unwrap();
            // Two sockets: the near CPU-less node stays in DRAM's tier, the far one not.
            assert_eq!((a(105, 38), tier(a(105, 38))), (635, 4));
            assert_eq!((a(200, 15), tier(a(200, 15))), (3072, 24));
            // Partial HMAT: tiers 5 and 12; the node without entries keeps 576, tier 4.
            assert_eq!((a(110, 36), tier(a(110, 36))), (703, 5));
            assert_eq!((a(170, 25), tier(a(170, 25))), (1566, 12));
        }
        assert_eq!(tier(ADISTANCE_DRAM), 4);
    }

    #[test]
    fn integer_steps_truncate_left_to_right_like_the_kernel() {
        // 576 * 240 / 200 = 691 (not 691.2), then 691 * 80000 / 64000 = 863.
        let dram = Perf::symmetric(100, 40_000);
        assert_eq!(adistance(&Perf::symmetric(120, 32_000), &dram), Some(863));
        // A zero sum is the kernel's -EINVAL: no distance from the rule.
        assert_eq!(adistance(&Perf::default(), &dram), None);
        let no_bw = Perf {
            read_latency: 5,
            ..Perf::default()
        };
        assert_eq!(adistance(&no_bw, &dram), None);
    }

    #[test]
    fn the_reference_is_the_first_dram_node_and_a_10_percent_mismatch_disables_it() {
        let a = Perf::symmetric(100, 40_000);
        let near = Perf::symmetric(109, 37_000);
        let far = Perf::symmetric(89, 40_000);
        assert_eq!(dram_reference(&[(0, Some(a)), (1, Some(near))]), Ok((0, a)));
        assert_eq!(dram_reference(&[(0, None), (1, Some(near))]), Ok((1, near)));
        assert_eq!(
            dram_reference(&[(0, Some(a)), (1, Some(far))]),
            Err(NoReference::Mismatch(0, 1))
        );
        assert_eq!(dram_reference(&[(0, None)]), Err(NoReference::Missing));
        assert_eq!(
            dram_reference(&[(2, Some(Perf::default()))]),
            Err(NoReference::Zero(2))
        );
    }
}
