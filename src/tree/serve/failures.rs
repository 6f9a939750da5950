//! Failed requests, logged so that the log stays readable: a truncated
//! backing file fails every read of every part behind its new end, tens of
//! thousands a second. Each distinct failure (a file, a part, a kind of
//! failure) is logged once in full, naming the backing file and the
//! object; repeats are counted, and the count is logged at 10, 100, 1000,
//! ... and when the mount ends.

use std::collections::HashMap;
use std::sync::Mutex;

/// What failed: the flat part or object index and the kind of failure.
/// The kinds are few and fixed, so the map is bounded by the tree's size.
pub type Key = (u32, &'static str);

/// The failures seen so far and how often each repeated.
#[derive(Default)]
pub struct Failures {
    seen: Mutex<HashMap<Key, (u64, String)>>,
}

impl Failures {
    /// Records a failure of `key`; `line` (the full message, naming the
    /// backing file and the object) is built and logged the first time only.
    pub fn report(&self, key: Key, line: impl FnOnce() -> String) {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        match seen.get_mut(&key) {
            None => {
                let line = line();
                log::error!("{line}");
                seen.insert(key, (1, line));
            }
            Some((n, line)) => {
                *n += 1;
                if is_power_of_ten(*n) {
                    log::error!("{line} (failed {n} times so far)");
                }
            }
        }
    }

    /// Logs the final count of every failure that repeated.
    pub fn summarise(&self) {
        let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        for (n, line) in seen.values().filter(|(n, _)| *n > 1) {
            log::error!("{line} (failed {n} times in all)");
        }
    }

    /// How many times `key` failed.
    #[cfg(test)]
    pub fn count(&self, key: Key) -> u64 {
        let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.get(&key).map_or(0, |(n, _)| *n)
    }
}

fn is_power_of_ten(mut n: u64) -> bool {
    while n >= 10 && n.is_multiple_of(10) {
        n /= 10;
    }
    n == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_failure_is_built_once_and_counted() {
        let f = Failures::default();
        let mut built = 0;
        for _ in 0..1000 {
            f.report((3, "read"), || {
                built += 1;
                "x".into()
            });
        }
        f.report((4, "read"), || "y".into());
        assert_eq!(built, 1);
        assert_eq!(f.count((3, "read")), 1000);
        assert_eq!(f.count((4, "read")), 1);
        assert_eq!(f.count((3, "open")), 0);
        assert!(is_power_of_ten(1) && is_power_of_ten(100) && !is_power_of_ten(20));
    }
}
