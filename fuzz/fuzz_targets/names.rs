//! The name escaper (`tree::names`) against its module contract. The input
//! is split at NUL bytes (which no name may hold): the first byte picks the
//! component limit, then come two names, then the directory's reserved
//! names, those that begin with `.` and hold no `%` as suffixes, the others
//! as exact names. Odd first bytes also reserve the second name's plain
//! escape, an escaped component as the tree reserves for part files.
//!
//! For both names, under that directory and under the tree's own reserved
//! sets, asserts the invariants the module hands on: a non-empty component
//! within the limit, no `/`, NUL or control character, no leading `.`, no
//! reserved suffix, no reserved exact name unless shortened from this very
//! name; `unescape` gives the name back exactly when the component is not
//! shortened; distinct names give distinct components. `unescape` also runs
//! on every raw field.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use xxhash_rust::xxh3::xxh3_128;
use ztfs::tree::names::{escape, is_shortened, unescape, Reserved, NAME_MAX};
use ztfs::tree::{PART_NAME_MAX, PART_RESERVED, ROOT_RESERVED};

/// Longest name (spec §3.5), in bytes.
const MAX_NAME_LEN: usize = 1024;

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let fields: Vec<String> = rest
        .split(|&b| b == 0)
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect();
    fields.iter().for_each(|f| drop(unescape(f)));
    let [a, b, others @ ..] = fields.as_slice() else {
        return;
    };
    let max_len = 34 + usize::from(first >> 1) % (NAME_MAX - 33);
    let (suffixes, mut exact): (Vec<&str>, Vec<&str>) = others
        .iter()
        .map(String::as_str)
        .partition(|f| f.starts_with('.') && !f.contains('%'));
    let plain_b = escape(b, &Reserved::NONE, max_len);
    if first & 1 == 1 {
        exact.push(&plain_b);
    }
    let dir = Reserved {
        exact: &exact,
        suffixes: &suffixes,
    };
    for (reserved, limit) in [
        (dir, max_len),
        (ROOT_RESERVED, NAME_MAX),
        (PART_RESERVED, PART_NAME_MAX),
    ] {
        let names = [a, b].map(|n| (n, escape(n, &reserved, limit)));
        for (name, component) in &names {
            if valid_name(name) {
                check_component(name, component, &reserved, limit);
            }
        }
        let [(a, ca), (b, cb)] = &names;
        if a != b && valid_name(a) && valid_name(b) {
            assert_ne!(ca, cb, "distinct names {a:?} and {b:?} share a component");
        }
    }
});

/// A name of §3.5: 1 to 1024 bytes (NUL cannot occur here).
fn valid_name(name: &str) -> bool {
    (1..=MAX_NAME_LEN).contains(&name.len())
}

fn check_component(name: &str, c: &str, reserved: &Reserved<'_>, limit: usize) {
    let ctx = || format!("{name:?} -> {c:?} (limit {limit}, {reserved:?})");
    assert!(!c.is_empty() && c.len() <= limit, "{}", ctx());
    assert!(
        !c.bytes().any(|b| b == b'/' || b < 0x20 || b == 0x7F),
        "{}",
        ctx()
    );
    assert!(!c.starts_with('.'), "{}", ctx());
    assert!(
        !reserved.suffixes.iter().any(|s| c.ends_with(s)),
        "{}",
        ctx()
    );
    let hash = format!("{:032x}", xxh3_128(name.as_bytes()));
    if reserved.exact.contains(&c) {
        assert!(is_shortened(c) && c.ends_with(&hash), "{}", ctx());
    }
    match unescape(c) {
        Some(back) => {
            assert_eq!(back, name, "{}", ctx());
            assert!(!is_shortened(c), "{}", ctx());
        }
        None => assert!(is_shortened(c) && c.ends_with(&hash), "{}", ctx()),
    }
}
