//! The one rule for a value given twice in a list flag (`--kernel read,read`,
//! `--delays 0,0`, `--sizes 4K,4096`, a CPU list `0-3,2`, …): refused (exit 2), naming
//! the flag, the list as typed and the value. A value typed twice is a mistake, and
//! measuring it twice would only look like more data; silently dropping the repeat
//! would hide the mistake.

use crate::error::{Error, Result};
use std::collections::HashSet;

/// Refuse the first value of `items` given twice in the list `list` of the flag `what`.
/// `name` spells a value as the message shows it, and two values are the same when
/// their names are: so values of two spellings (`4K`, `4096`) are named alike.
pub fn once<T>(
    what: &str,
    list: &str,
    items: impl IntoIterator<Item = T>,
    name: impl Fn(&T) -> String,
) -> Result<()> {
    once_by(what, list, items, &name, &name)
}

/// [`once`] where two values are the same when their `key`s are, and the message shows
/// the second as `name` spells it (such as the item as typed).
pub fn once_by<T, K: Eq + std::hash::Hash>(
    what: &str,
    list: &str,
    items: impl IntoIterator<Item = T>,
    key: impl Fn(&T) -> K,
    name: impl Fn(&T) -> String,
) -> Result<()> {
    let mut seen = HashSet::new();
    for x in items {
        if !seen.insert(key(&x)) {
            return Err(repeated(what, list, &name(&x)));
        }
    }
    Ok(())
}

/// The message of [`once`]: one line naming the flag, the list and the repeated value.
pub fn repeated(what: &str, list: &str, value: &str) -> Error {
    Error::input(format!(
        "invalid {what} '{list}': {value} is given twice; give each value once"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeat_is_named_with_the_flag_and_the_list() {
        assert!(once("--delays", "0,10", [0u64, 10], |d| d.to_string()).is_ok());
        let e = once("--delays", "0,10,0", [0u64, 10, 0], |d| d.to_string())
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "invalid --delays '0,10,0': 0 is given twice; give each value once"
        );
        assert!(e.lines().count() == 1);
        // Two spellings of one value are one value.
        let e = once("--sizes", "4K,4096", [4096u64, 4096], |b| {
            format!("{b} bytes")
        })
        .unwrap_err();
        assert!(
            e.is_user_error() && e.to_string().contains("4096 bytes"),
            "{e}"
        );
    }
}
