//! Property tests for `tree::names`: hostile names against the escaping
//! scheme, and `escape` against a naive model written from the scheme's text.

use std::collections::HashSet;

use proptest::collection::{hash_set, vec};
use proptest::prelude::*;
use proptest::sample::select;
use xxhash_rust::xxh3::xxh3_128;
use ztfs::tree::names::{escape, is_shortened, unescape, Reserved, NAME_MAX};

/// The spec's limit on an object or part name, in bytes.
const MAX_NAME_BYTES: usize = 1024;

const ROOT: Reserved<'static> = Reserved {
    exact: &["manifest.json", "digest"],
    suffixes: &[],
};
const OBJECT: Reserved<'static> = Reserved {
    exact: &["meta.json"],
    suffixes: &[],
};
/// The endings the tree gives the files beside a part.
const PART_SUFFIXES: &[&str] = &[".raw", ".json", ".npy"];
const PART: Reserved<'static> = Reserved {
    exact: &[],
    suffixes: PART_SUFFIXES,
};
/// Overlapping suffixes, exact names that are also suffix matches, and
/// exact names that are escapes themselves, some with nothing left to encode.
const MIXED: Reserved<'static> = Reserved {
    exact: &[
        "digest",
        "%64igest",
        "meta.json",
        "é",
        "x.gz",
        "%25",
        "%2E",
        "%2E.",
        "%2E%2E",
        "a%2Fb",
    ],
    suffixes: &[".gz", ".tar.gz", ".json", ".é"],
};

fn reserved() -> impl Strategy<Value = Reserved<'static>> {
    select(vec![Reserved::NONE, ROOT, OBJECT, PART, MIXED])
}

/// Limits around 255, the suffix-trimmed ones, and the smallest accepted.
fn max_len() -> impl Strategy<Value = usize> {
    let limits = [NAME_MAX, NAME_MAX - 4, NAME_MAX - 5, 34, 35, 36, 37, 40, 64];
    select(limits.to_vec())
}

fn hostile_char() -> impl Strategy<Value = char> {
    let favourites = "/%.~\n\u{7f}é€😀E2a gz".chars().collect::<Vec<_>>();
    prop_oneof![
        8 => select(favourites),
        2 => (1u8..0x20).prop_map(char::from),
        1 => any::<char>().prop_filter("names hold no NUL", |c| *c != '\0'),
    ]
}

/// Keeps the first characters that fit in the spec's 1024 bytes.
fn fit(chars: Vec<char>) -> String {
    let mut name = String::new();
    for c in chars {
        if name.len() + c.len_utf8() > MAX_NAME_BYTES {
            break;
        }
        name.push(c);
    }
    name
}

/// Names that are, or end in, something a directory reserves, or what the
/// escape of such a name looks like.
fn reserved_lookalike() -> impl Strategy<Value = String> {
    let words = "digest manifest.json meta.json meta é x.gz . .. .raw %64igest %6Deta.json \
                 data%2Eraw %2E %~ % %% a/b %61%2Fb";
    let suffixes = ".raw .json .npy .gz .tar.gz .é .raw.raw %2Eraw";
    let words: Vec<&str> = words.split_whitespace().collect();
    let suffixes: Vec<&str> = suffixes.split_whitespace().collect();
    prop_oneof![
        select(words).prop_map(str::to_owned),
        (vec(hostile_char(), 0..6), select(suffixes))
            .prop_map(|(stem, suffix)| fit(stem.into_iter().chain(suffix.chars()).collect())),
    ]
}

fn hostile_name() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => vec(hostile_char(), 1..12).prop_map(fit),
        2 => vec(hostile_char(), 60..400).prop_map(fit),
        1 => (hostile_char(), 1..=MAX_NAME_BYTES).prop_map(|(c, n)| fit(vec![c; n])),
        2 => reserved_lookalike(),
    ]
}

/// Sets of names that agree on a long stem, so that shortening cuts them
/// to the same prefix and only the hash tells them apart.
fn names_sharing_a_stem() -> impl Strategy<Value = HashSet<String>> {
    let tails = hash_set(vec(hostile_char(), 0..4), 1..16);
    (vec(hostile_char(), 40..300), tails).prop_map(|(stem, tails)| {
        tails
            .into_iter()
            .map(|tail| fit(stem.iter().copied().chain(tail).collect()))
            .collect()
    })
}

fn triples(c: char) -> String {
    let mut utf8 = [0; 4];
    let bytes = c.encode_utf8(&mut utf8).bytes();
    bytes.map(|b| format!("%{b:02X}")).collect()
}

/// The escaped string cut into `%XX` triples and single characters.
fn tokens(escaped: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = escaped;
    while let Some(c) = rest.chars().next() {
        let len = if c == '%' { 3 } else { c.len_utf8() };
        out.push(&rest[..len]);
        rest = &rest[len..];
    }
    out
}

/// Step 2's exact rule; `true` when it is stuck on a fully encoded name.
fn naive_exact_rule(out: &mut String, reserved: &Reserved<'_>) -> bool {
    while reserved.exact.contains(&out.as_str()) {
        let toks = tokens(out);
        let Some(i) = toks.iter().position(|t| !t.starts_with('%')) else {
            return true;
        };
        let encoded: String = toks[i].chars().map(triples).collect();
        *out = toks[..i].concat() + &encoded + &toks[i + 1..].concat();
    }
    false
}

/// The scheme's steps 1 and 2, as its text states them, one character at a
/// time; `true` when the result must be hashed whatever its length.
fn naive_unshortened(name: &str, reserved: &Reserved<'_>) -> (String, bool) {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        let control = c < '\u{20}' || c == '\u{7f}';
        if c == '%' || c == '/' || control || (i == 0 && c == '.') {
            out += &triples(c);
        } else {
            out.push(c);
        }
    }
    let matching = reserved.suffixes.iter().filter(|s| out.ends_with(**s));
    if let Some(suffix) = matching.min_by_key(|s| s.len()) {
        let dot = out.len() - suffix.len();
        out = format!("{}%2E{}", &out[..dot], &out[dot + 1..]);
    }
    let stuck = naive_exact_rule(&mut out, reserved);
    (out, stuck)
}

/// The scheme's step 3: whole triples and characters while they fit, then the tail.
fn naive_escape(name: &str, reserved: &Reserved<'_>, max_len: usize) -> String {
    let (full, stuck) = naive_unshortened(name, reserved);
    if !stuck && full.len() <= max_len {
        return full;
    }
    let room = max_len - 34;
    let mut prefix = String::new();
    for token in tokens(&full) {
        if prefix.len() + token.len() > room {
            break;
        }
        prefix += token;
    }
    format!("{prefix}%~{:032x}", xxh3_128(name.as_bytes()))
}

proptest! {
    #[test]
    fn escape_matches_the_naive_model(name in hostile_name(), r in reserved(), max_len in max_len()) {
        prop_assert_eq!(escape(&name, &r, max_len), naive_escape(&name, &r, max_len));
    }

    #[test]
    fn lookalikes_match_the_naive_model(
        name in reserved_lookalike(), r in select(vec![ROOT, OBJECT, PART, MIXED])
    ) {
        prop_assert_eq!(escape(&name, &r, NAME_MAX), naive_escape(&name, &r, NAME_MAX));
    }

    #[test]
    fn unshortened_components_round_trip(name in hostile_name(), r in reserved(), max_len in max_len()) {
        for limit in [NAME_MAX, max_len] {
            let component = escape(&name, &r, limit);
            if is_shortened(&component) {
                prop_assert_eq!(unescape(&component), None);
            } else {
                prop_assert_eq!(unescape(&component), Some(name.clone()));
            }
        }
    }

    #[test]
    fn a_component_is_shortened_exactly_when_it_must_be(
        name in hostile_name(), r in reserved(), max_len in max_len()
    ) {
        let component = escape(&name, &r, max_len);
        let unlimited = escape(&name, &r, usize::MAX);
        if unlimited.contains("%~") {
            // Reserved with nothing left to encode: hashed at any length.
            prop_assert!(is_shortened(&unlimited) && is_shortened(&component));
        } else {
            prop_assert_eq!(is_shortened(&component), unlimited.len() > max_len);
        }
    }

    #[test]
    fn components_are_valid(name in hostile_name(), r in reserved(), max_len in max_len()) {
        let c = escape(&name, &r, max_len);
        prop_assert!(!c.is_empty());
        prop_assert!(c.len() <= max_len, "{} bytes: {:?}", c.len(), c);
        prop_assert!(!c.contains('/') && !c.contains('\0'), "{:?}", c);
        prop_assert!(!c.chars().any(|ch| ch.is_ascii_control()), "{:?}", c);
        prop_assert!(c != "." && c != ".." && !c.starts_with('.'), "{:?}", c);
    }

    #[test]
    fn components_are_never_reserved(name in hostile_name(), r in reserved(), max_len in max_len()) {
        let c = escape(&name, &r, max_len);
        prop_assert!(!r.exact.contains(&c.as_str()), "{:?} is reserved in {:?}", c, r);
        for suffix in r.suffixes {
            prop_assert!(!c.ends_with(suffix), "{:?} ends with reserved {:?}", c, suffix);
        }
    }

    #[test]
    fn distinct_names_give_distinct_components(
        names in hash_set(hostile_name(), 1..64), r in reserved(), max_len in max_len()
    ) {
        let components: HashSet<String> = names.iter().map(|n| escape(n, &r, max_len)).collect();
        prop_assert_eq!(components.len(), names.len());
    }

    #[test]
    fn names_cut_to_one_prefix_stay_distinct(
        names in names_sharing_a_stem(), r in reserved(), max_len in max_len()
    ) {
        let components: HashSet<String> = names.iter().map(|n| escape(n, &r, max_len)).collect();
        prop_assert_eq!(components.len(), names.len());
    }

    #[test]
    fn subdirectories_never_take_a_part_file_name(
        parts in hash_set(hostile_name(), 1..8), others in hash_set(hostile_name(), 0..8)
    ) {
        // As the tree builder does: part files first, then subdirectories
        // reserved against them; a subdirectory often shares a part's name.
        let part_reserved = Reserved { exact: &["meta.json"], suffixes: PART_SUFFIXES };
        let mut taken = vec!["meta.json".to_owned()];
        for p in &parts {
            let c = escape(p, &part_reserved, NAME_MAX - ".raw".len());
            taken.push(format!("{c}.raw"));
            taken.push(c);
        }
        let taken_refs: Vec<&str> = taken.iter().map(String::as_str).collect();
        let dir_reserved = Reserved { exact: &taken_refs, suffixes: PART_SUFFIXES };
        let mut seen: HashSet<String> = taken.iter().cloned().collect();
        for s in parts.union(&others) {
            let c = escape(s, &dir_reserved, NAME_MAX);
            prop_assert!(seen.insert(c.clone()), "{:?} from {:?} is taken", c, s);
            prop_assert_eq!(c, naive_escape(s, &dir_reserved, NAME_MAX));
        }
    }

    #[test]
    fn unescape_never_panics_and_never_yields_an_impossible_name(s in any::<String>()) {
        if let Some(name) = unescape(&s) {
            prop_assert!(!name.is_empty() && !name.contains('\0'));
        }
    }

    #[test]
    fn unescape_inverts_any_percent_encoding(name in hostile_name(), mask in vec(any::<bool>(), 0..64)) {
        // Encoding more than `escape` does still decodes to the same name.
        let component: String = name
            .chars()
            .zip(mask.iter().copied().chain(std::iter::repeat(false)))
            .map(|(c, extra)| if extra || c == '%' { triples(c) } else { c.to_string() })
            .collect();
        prop_assert_eq!(unescape(&component), Some(name));
    }
}
