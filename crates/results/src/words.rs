//! Counted nouns in printed text: "1 injector", "2 injectors", never "1 injector(s)".

/// `n` and the noun, plural unless `n` is 1 (an `s` added; see [`count_as`] for others).
pub fn count(n: u64, one: &str) -> String {
    format!("{n} {}", noun(n, one))
}

/// `n` and the noun, with its own plural (`pass`/`passes`).
pub fn count_as(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The noun alone, plural unless `n` is 1 ("node 1" / "nodes 0-1" before a list).
pub fn noun(n: u64, one: &str) -> String {
    if n == 1 {
        one.to_string()
    } else {
        format!("{one}s")
    }
}

/// The count, its noun and the verb that agrees: "1 record is", "2 records are".
pub fn count_are(n: u64, one: &str) -> String {
    format!("{} {}", count(n, one), if n == 1 { "is" } else { "are" })
}

/// "1 pass", "3 passes": the count numalab says most.
pub fn passes(n: usize) -> String {
    count_as(n as u64, "pass", "passes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(count(1, "injector"), "1 injector");
        assert_eq!(count(0, "injector"), "0 injectors");
        assert_eq!(count(2, "thread"), "2 threads");
        assert_eq!(count_as(1, "pass", "passes"), "1 pass");
        assert_eq!(count_as(3, "pass", "passes"), "3 passes");
        assert_eq!(noun(1, "node"), "node");
        assert_eq!(noun(2, "node"), "nodes");
        assert_eq!(count_are(1, "record"), "1 record is");
        assert_eq!(count_are(24, "record"), "24 records are");
    }
}
