//! Twins and word diffs (32-bit words, so neighbours written by different ranks merge).

/// A diff: runs of changed 32-bit words, kept flat (two allocations however many runs
/// it has: SOR's red-black sweeps change every other double, 256 runs a page, which as
/// one vector per run cost the service thread a malloc and a free per run each time a
/// diff was made, copied, sent or received).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Diff {
    /// (first word, words) of each run, in page order.
    runs: Vec<(u16, u16)>,
    /// The runs' words, one run after another.
    words: Vec<u32>,
}

impl Diff {
    /// Append a run of `n` words starting at word `start`, taken from `words`.
    pub fn push(&mut self, start: u16, n: usize, words: impl IntoIterator<Item = u32>) {
        let before = self.words.len();
        self.words.extend(words.into_iter().take(n));
        debug_assert_eq!(self.words.len() - before, n, "a run shorter than it says");
        self.runs.push((start, n as u16));
    }

    /// The runs: (first word, words).
    pub fn runs(&self) -> impl Iterator<Item = (u16, &[u32])> + '_ {
        let mut at = 0;
        self.runs.iter().map(move |&(s, n)| {
            let w = &self.words[at..at + n as usize];
            at += n as usize;
            (s, w)
        })
    }

    /// Runs in the diff.
    pub fn len(&self) -> usize {
        self.runs.len()
    }

    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// A diff of the given runs (tests).
    #[cfg(test)]
    pub fn of(runs: &[(u16, &[u32])]) -> Diff {
        let mut d = Diff::default();
        for (s, w) in runs {
            d.push(*s, w.len(), w.iter().copied());
        }
        d
    }
}

/// Runs of words where `page` differs from `twin`.
pub fn make(twin: &[u32], page: &[u32]) -> Diff {
    let mut d = Diff::default();
    let mut i = 0;
    while i < page.len() {
        if page[i] != twin[i] {
            let s = i;
            while i < page.len() && page[i] != twin[i] {
                i += 1;
            }
            d.push(s as u16, i - s, page[s..i].iter().copied());
        } else {
            i += 1;
        }
    }
    d
}

/// Write a diff's words into a page.
pub fn apply(page: &mut [u32], d: &Diff) {
    for (s, w) in d.runs() {
        page[s as usize..s as usize + w.len()].copy_from_slice(w);
    }
}

/// Bytes a diff holds (as sent: a word for each run's start, one per word).
pub fn bytes(d: &Diff) -> usize {
    4 * (d.runs.len() + d.words.len())
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
        assert_eq!(d, Diff::of(&[(3, &[7, 8]), (1023, &[1])]));
        assert_eq!((d.len(), bytes(&d)), (2, 4 * 5));
        let mut q = vec![0u32; 1024];
        q[10] = 5;
        apply(&mut q, &d);
        assert_eq!((q[3], q[4], q[10], q[1023]), (7, 8, 5, 1));
        assert!(make(&twin, &twin).is_empty());
    }

    #[test]
    fn every_other_word_changed_is_one_run_per_word() {
        // SOR's pattern: half the words change, none adjacent.
        let twin = vec![1u32; 1024];
        let p: Vec<u32> = (0..1024u32)
            .map(|i| if i % 2 == 0 { i + 7 } else { 1 })
            .collect();
        let d = make(&twin, &p);
        assert_eq!(d.len(), 512);
        let mut q = twin.clone();
        apply(&mut q, &d);
        assert_eq!(q, p);
    }
}
