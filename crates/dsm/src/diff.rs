//! Twins and word diffs (32-bit words, so neighbours written by different ranks merge).

use crate::msg::Diff;

/// Runs of words where `page` differs from `twin`.
pub fn make(twin: &[u32], page: &[u32]) -> Diff {
    let mut d = Vec::new();
    let mut i = 0;
    while i < page.len() {
        if page[i] != twin[i] {
            let s = i;
            while i < page.len() && page[i] != twin[i] {
                i += 1;
            }
            d.push((s as u16, page[s..i].to_vec()));
        } else {
            i += 1;
        }
    }
    d
}

/// Write a diff's words into a page.
pub fn apply(page: &mut [u32], d: &Diff) {
    for (s, w) in d {
        page[*s as usize..*s as usize + w.len()].copy_from_slice(w);
    }
}

/// Bytes a diff holds.
pub fn bytes(d: &Diff) -> usize {
    d.iter().map(|(_, w)| 4 + 4 * w.len()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_carries_exactly_the_changed_words() {
        let twin = vec![0u32; 1024];
        let mut p = twin.clone();
        p[3] = 7;
        p[4] = 8;
        p[1023] = 1;
        let d = make(&twin, &p);
        assert_eq!(d, vec![(3, vec![7, 8]), (1023, vec![1])]);
        let mut q = vec![0u32; 1024];
        q[10] = 5;
        apply(&mut q, &d);
        assert_eq!((q[3], q[4], q[10], q[1023]), (7, 8, 5, 1));
    }
}
