//! Names in the mounted tree: how a zTensor object or part name becomes a
//! path component, and back.
//!
//! Object and part names are arbitrary UTF-8 of 1 to 1024 bytes without
//! U+0000 (spec §3.5). They may contain `/`, be `.` or `..`, start with `.`,
//! hold control characters, or run past `NAME_MAX`, so they are never handed
//! to the kernel as they are. Every name goes through [`escape`]:
//!
//! 1. **Percent-encoding.** `%`, `/`, the control characters U+0000–U+001F
//!    and U+007F, and a leading `.` (the first byte only) are written as
//!    `%XX`, two uppercase hex digits per UTF-8 byte. Everything else is kept
//!    as it is, non-ASCII, spaces and `~` included. So `a/b` → `a%2Fb`,
//!    `.` → `%2E`, `..` → `%2E.`, `.hidden` → `%2Ehidden`, `50%` → `50%25`.
//! 2. **Reserved names.** Each directory tells which names the filesystem
//!    itself uses there ([`Reserved`]): exact names (`manifest.json` and
//!    `digest` at the root, `meta.json` in an object directory) and suffixes
//!    (`.raw`, `.json`, `.npy` after a part name). If the result of step 1
//!    ends with a reserved suffix, the `.` that begins the suffix is encoded
//!    too (`data.raw` → `data%2Eraw`); when several suffixes match, the
//!    shortest decides. Then, if the result equals a reserved exact name, its
//!    first character not yet encoded is encoded too (`digest` →
//!    `%64igest`, `meta.json` → `%6Deta.json`), again while the result is
//!    still reserved. Exact names may themselves be escaped components, such
//!    as the part files beside an object's subdirectories; in the rare case
//!    where a reserved result has nothing left to encode (the part `%` is
//!    `%25`, and so is a subdirectory named `%`), it takes the hashed form of
//!    step 3 instead, whatever its length.
//! 3. **Long names.** If the result is longer than the caller's limit (255
//!    bytes, [`NAME_MAX`], or less where the caller appends a suffix such as
//!    `.raw`), it is cut to the longest prefix that splits neither a `%XX`
//!    triple nor a UTF-8 character and leaves room for a 34-byte tail: `%~`
//!    and the 32 lowercase hex digits of the XXH3-128 (seed 0) of the real
//!    name's bytes, as `xxhsum -H2` prints it. Such a component is called
//!    shortened ([`is_shortened`]). The empty name, which zTensor forbids
//!    but other formats allow (an `.npz` member named `.npy`, a PyTorch
//!    dict key `""`), takes this form too: `%~` and its hash.
//!
//! [`unescape`] decodes every `%XX` and so recovers the real name from any
//! component that was not shortened. `%~` never occurs in an unshortened
//! component, where every `%` is followed by two hex digits, so shortened and
//! unshortened components cannot collide, and the 128-bit hash keeps
//! shortened components apart. A shortened component cannot be decoded: the
//! real name has to be looked up by the component, or read from the
//! directory's metadata.
//!
//! Invariants handed on, for every name and every [`Reserved`] that meets its
//! preconditions: the component is non-empty, at most `max_len` bytes, holds
//! no `/`, no NUL and no control character, does not start with `.` (so it is
//! neither `.` nor `..`), and ends with none of the reserved suffixes; it is
//! none of the reserved exact names, unless one of those is itself a
//! shortened component of the same name (it ends with the same hash); two
//! different names give two different components (up to an XXH3-128
//! collision).
//!
//! This module deliberately does not normalise Unicode: two names that look
//! alike but differ in bytes stay two entries. It does no I/O and keeps no
//! state.

use std::fmt::Write as _;

use xxhash_rust::xxh3::xxh3_128;

/// The longest path component the kernel accepts, in bytes (Linux `NAME_MAX`).
pub const NAME_MAX: usize = 255;

/// Marks a shortened component; it never occurs in an unshortened one.
const SHORT_MARK: &str = "%~";

/// Lowercase hex digits of the XXH3-128 hash in a shortened component.
const HASH_HEX_LEN: usize = 32;

/// Bytes taken by the tail of a shortened component: the mark and the hash.
/// It is also the smallest `max_len` that [`escape`] accepts.
const SHORT_TAIL_LEN: usize = SHORT_MARK.len() + HASH_HEX_LEN;

const UPPER_HEX: &[u8; 16] = b"0123456789ABCDEF";

/// The names the filesystem itself uses in one directory, which an escaped
/// name must never take.
///
/// Exact names may be anything, escaped components included. Suffixes are
/// the filesystem's own endings, and [`escape`] checks that each one begins
/// with `.` and contains no `%`.
#[derive(Clone, Copy, Debug)]
pub struct Reserved<'a> {
    /// Whole components the directory already holds, e.g. `meta.json` or the
    /// escaped name of a part file.
    pub exact: &'a [&'a str],
    /// Endings the directory appends to escaped names, e.g. `.raw`.
    pub suffixes: &'a [&'a str],
}

impl Reserved<'_> {
    /// A directory that reserves nothing.
    pub const NONE: Reserved<'static> = Reserved {
        exact: &[],
        suffixes: &[],
    };

    /// Whether the suffixes meet the preconditions of the type.
    fn is_well_formed(&self) -> bool {
        self.suffixes
            .iter()
            .all(|s| s.starts_with('.') && !s.contains('%'))
    }
}

/// Turns a real object or part name into a path component of at most
/// `max_len` bytes, following the scheme in the module documentation.
///
/// The common case, a name with nothing to encode that fits, is one scan and
/// one allocation.
///
/// # Panics
///
/// If `max_len` is less than 34 (the tail of a shortened component), or if a
/// reserved suffix does not begin with `.` or contains `%`. Both are mistakes
/// of the caller, never of the file.
pub fn escape(name: &str, reserved: &Reserved<'_>, max_len: usize) -> String {
    assert!(
        max_len >= SHORT_TAIL_LEN,
        "component limit {max_len} is below the {SHORT_TAIL_LEN} bytes a shortened name needs"
    );
    assert!(
        reserved.is_well_formed(),
        "reserved suffixes must start with '.' and hold no '%': {:?}",
        reserved.suffixes
    );
    let mut component = percent_encode(name);
    let stuck = avoid_reserved(&mut component, reserved).is_err();
    // The empty name (zTensor forbids it; an .npz member `.npy` or a
    // PyTorch dict key "" has it) has no component of its own.
    if stuck || component.len() > max_len || component.is_empty() {
        shorten(&mut component, name, max_len);
    }
    component
}

/// Recovers the real name from a component made by [`escape`].
///
/// Returns `None` for a shortened component (whose real name cannot be
/// recovered) and for anything `escape` cannot produce at all: an empty
/// component, a `%` not followed by two uppercase hex digits, bytes that do
/// not decode to UTF-8, or a decoded NUL. It does not check that the
/// component is the canonical escape of its result (`%61` decodes to `a`);
/// a caller that needs that compares `escape` of the result with the
/// component.
pub fn unescape(component: &str) -> Option<String> {
    if component.is_empty() {
        return None;
    }
    let bytes = component.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let high = hex_value(*bytes.get(i + 1)?)?;
            let low = hex_value(*bytes.get(i + 2)?)?;
            decoded.push(high << 4 | low);
            i += 3;
        } else {
            decoded.push(b);
            i += 1;
        }
    }
    if decoded.contains(&0) {
        return None;
    }
    String::from_utf8(decoded).ok()
}

/// Whether `component` has the shape of a shortened component, whose real
/// name [`unescape`] cannot recover: it ends with `%~` and 32 lowercase hex
/// digits. Every component [`escape`] shortened has it, and no other
/// component `escape` makes does.
pub fn is_shortened(component: &str) -> bool {
    let Some(tail_start) = component.len().checked_sub(SHORT_TAIL_LEN) else {
        return false;
    };
    let tail = &component.as_bytes()[tail_start..];
    let (mark, hash) = tail.split_at(SHORT_MARK.len());
    mark == SHORT_MARK.as_bytes() && hash.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Whether a byte is always percent-encoded, wherever it stands.
fn always_encoded(b: u8) -> bool {
    matches!(b, b'%' | b'/' | 0x00..=0x1F | 0x7F)
}

/// Step 1: encode `%`, `/`, control characters and a leading `.`.
fn percent_encode(name: &str) -> String {
    let bytes = name.as_bytes();
    let leading_dot = bytes.first() == Some(&b'.');
    let encoded = bytes.iter().filter(|&&b| always_encoded(b)).count() + usize::from(leading_dot);
    if encoded == 0 {
        return name.to_owned();
    }
    let mut out = String::with_capacity(bytes.len() + 2 * encoded);
    // Every byte encoded here is ASCII, so each `i` below is a char boundary.
    let mut literal_start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if always_encoded(b) || (i == 0 && leading_dot) {
            out.push_str(&name[literal_start..i]);
            push_triple(&mut out, b);
            literal_start = i + 1;
        }
    }
    out.push_str(&name[literal_start..]);
    out
}

/// Step 2: keep the component off the directory's reserved names.
///
/// Fails, leaving the component reserved, when it equals an exact name and
/// every character in it is already encoded; the caller then hashes it.
///
/// Encoding the `.` of the shortest matching suffix leaves no suffix
/// matching: a reserved suffix starts with `.` and holds no `%`, so one that
/// still matched would lie inside the rest of the shorter suffix, and so
/// would have matched and been shorter. Encoding a literal character later
/// cannot create a match either: a match lies after the last `%`, and that
/// part of the component was already there before.
fn avoid_reserved(component: &mut String, reserved: &Reserved<'_>) -> Result<(), ()> {
    let shortest_suffix = reserved
        .suffixes
        .iter()
        .filter(|suffix| component.ends_with(*suffix))
        .map(|suffix| suffix.len())
        .min();
    if let Some(suffix_len) = shortest_suffix {
        encode_char_at(component, component.len() - suffix_len);
    }
    // Each round encodes one more literal character, so this ends.
    while reserved.exact.contains(&component.as_str()) {
        let literal = first_literal(component).ok_or(())?;
        encode_char_at(component, literal);
    }
    Ok(())
}

/// Where the first character that is not part of a `%XX` triple starts.
fn first_literal(escaped: &str) -> Option<usize> {
    let bytes = escaped.as_bytes();
    let mut at = 0;
    while bytes.get(at) == Some(&b'%') {
        at += 3;
    }
    (at < bytes.len()).then_some(at)
}

/// Percent-encodes every byte of the (literal) character starting at `at`.
fn encode_char_at(component: &mut String, at: usize) {
    let Some(c) = component[at..].chars().next() else {
        return;
    };
    let mut utf8 = [0; 4];
    let mut triples = String::with_capacity(3 * c.len_utf8());
    for &b in c.encode_utf8(&mut utf8).as_bytes() {
        push_triple(&mut triples, b);
    }
    component.replace_range(at..at + c.len_utf8(), &triples);
}

/// Step 3: cut the component to leave room for `%~` and the name's hash
/// (not at all if it already leaves room), then append them.
fn shorten(component: &mut String, name: &str, max_len: usize) {
    let cut = cut_point(component, max_len - SHORT_TAIL_LEN);
    component.truncate(cut);
    component.push_str(SHORT_MARK);
    // Writing into a String cannot fail.
    let _ = write!(component, "{:032x}", xxh3_128(name.as_bytes()));
}

/// The longest prefix length of an escaped string, at most `room`, that
/// splits neither a `%XX` triple nor a UTF-8 character.
fn cut_point(escaped: &str, room: usize) -> usize {
    let bytes = escaped.as_bytes();
    let mut cut = room.min(bytes.len());
    // A `%` always starts a triple, and hex digits are never `%`, so a cut
    // inside a triple has its `%` one or two bytes before it.
    if cut >= 1 && bytes[cut - 1] == b'%' {
        cut -= 1;
    } else if cut >= 2 && bytes[cut - 2] == b'%' {
        cut -= 2;
    }
    while !escaped.is_char_boundary(cut) {
        cut -= 1;
    }
    cut
}

fn push_triple(out: &mut String, b: u8) {
    out.push('%');
    out.push(char::from(UPPER_HEX[usize::from(b >> 4)]));
    out.push(char::from(UPPER_HEX[usize::from(b & 0x0F)]));
}

/// The value of an uppercase hex digit; `escape` never writes lowercase ones.
fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: Reserved<'static> = Reserved {
        exact: &["manifest.json", "digest"],
        suffixes: &[],
    };
    const OBJECT: Reserved<'static> = Reserved {
        exact: &["meta.json"],
        suffixes: &[],
    };
    const PART: Reserved<'static> = Reserved {
        exact: &[],
        suffixes: &[".raw", ".json", ".npy"],
    };

    fn plain(name: &str) -> String {
        escape(name, &Reserved::NONE, NAME_MAX)
    }

    /// Asserts the component invariants and, when not shortened, the round trip.
    fn check(name: &str, reserved: &Reserved<'_>, max_len: usize) -> String {
        let c = escape(name, reserved, max_len);
        assert!(!c.is_empty() && c.len() <= max_len, "{c:?}");
        assert!(
            !c.contains('/') && !c.contains('\0') && !c.starts_with('.'),
            "{c:?}"
        );
        if is_shortened(&c) {
            assert_eq!(unescape(&c), None);
        } else {
            assert_eq!(unescape(&c).as_deref(), Some(name));
        }
        c
    }

    #[test]
    fn plain_names_are_kept() {
        assert_eq!(
            plain("model.layers.0.mlp.up_proj.weight"),
            "model.layers.0.mlp.up_proj.weight"
        );
        assert_eq!(plain("a b~c"), "a b~c");
        assert_eq!(plain("a."), "a.");
        assert_eq!(plain("a..b"), "a..b");
    }

    /// The empty name (an .npz member `.npy`): its hashed form, never an
    /// empty component (which fails a whole directory's listing).
    #[test]
    fn the_empty_name_takes_the_hashed_form() {
        for reserved in [&ROOT, &OBJECT, &PART, &Reserved::NONE] {
            let c = check("", reserved, NAME_MAX);
            assert_eq!(c, format!("%~{:032x}", xxh3_128(b"")));
        }
    }

    #[test]
    fn slash_and_percent_are_encoded() {
        assert_eq!(plain("a/b"), "a%2Fb");
        assert_eq!(plain("/"), "%2F");
        assert_eq!(plain("%"), "%25");
        assert_eq!(plain("50%/x%2F"), "50%25%2Fx%252F");
    }

    #[test]
    fn only_a_leading_dot_is_encoded() {
        assert_eq!(plain("."), "%2E");
        assert_eq!(plain(".."), "%2E.");
        assert_eq!(plain(".hidden"), "%2Ehidden");
        assert_eq!(plain("..."), "%2E..");
        assert_eq!(plain("./x"), "%2E%2Fx");
    }

    #[test]
    fn control_characters_are_encoded() {
        assert_eq!(plain("\n"), "%0A");
        assert_eq!(plain("\u{7f}"), "%7F");
        assert_eq!(plain("a\u{1}b\u{1f}"), "a%01b%1F");
        assert_eq!(plain("\t."), "%09.");
    }

    #[test]
    fn non_ascii_is_kept() {
        assert_eq!(plain("poids_é€😀"), "poids_é€😀");
        assert_eq!(plain("\u{80}\u{a0}"), "\u{80}\u{a0}");
        assert_eq!(plain(".é"), "%2Eé");
    }

    #[test]
    fn reserved_exact_names_get_their_first_byte_encoded() {
        assert_eq!(check("digest", &ROOT, NAME_MAX), "%64igest");
        assert_eq!(check("manifest.json", &ROOT, NAME_MAX), "%6Danifest.json");
        assert_eq!(check("meta.json", &OBJECT, NAME_MAX), "%6Deta.json");
        assert_eq!(check("meta.json", &ROOT, NAME_MAX), "meta.json");
        assert_eq!(check("digests", &ROOT, NAME_MAX), "digests");
        let accented = Reserved {
            exact: &["é.json"],
            suffixes: &[],
        };
        assert_eq!(check("é.json", &accented, NAME_MAX), "%C3%A9.json");
    }

    #[test]
    fn the_escape_of_a_reserved_name_is_not_reserved_again() {
        // `%64igest` is what `digest` becomes, so it must itself be escaped.
        assert_eq!(check("%64igest", &ROOT, NAME_MAX), "%2564igest");
        assert_ne!(
            escape("%64igest", &ROOT, NAME_MAX),
            escape("digest", &ROOT, NAME_MAX)
        );
    }

    #[test]
    fn reserved_suffixes_get_their_dot_encoded() {
        assert_eq!(check("data.raw", &PART, NAME_MAX), "data%2Eraw");
        assert_eq!(check("config.json", &PART, NAME_MAX), "config%2Ejson");
        assert_eq!(check("x.npy", &PART, NAME_MAX), "x%2Enpy");
        assert_eq!(check("x.raw.raw", &PART, NAME_MAX), "x.raw%2Eraw");
        assert_eq!(check("raw", &PART, NAME_MAX), "raw");
        assert_eq!(check("xraw", &PART, NAME_MAX), "xraw");
        // The leading dot is already encoded, so the suffix no longer matches.
        assert_eq!(check(".raw", &PART, NAME_MAX), "%2Eraw");
        assert_eq!(check("x.RAW", &PART, NAME_MAX), "x.RAW");
    }

    #[test]
    fn overlapping_suffixes_are_settled_by_the_shortest() {
        let both = Reserved {
            exact: &[],
            suffixes: &[".tar.gz", ".gz"],
        };
        assert_eq!(check("x.tar.gz", &both, NAME_MAX), "x.tar%2Egz");
        let reversed = Reserved {
            exact: &[],
            suffixes: &[".gz", ".tar.gz"],
        };
        assert_eq!(check("x.tar.gz", &reversed, NAME_MAX), "x.tar%2Egz");
    }

    #[test]
    fn the_exact_rule_is_checked_after_the_suffix_rule() {
        let r = Reserved {
            exact: &["meta.json", "meta"],
            suffixes: &[".json"],
        };
        assert_eq!(check("meta.json", &r, NAME_MAX), "meta%2Ejson");
        assert_eq!(check("meta", &r, NAME_MAX), "%6Deta");
    }

    #[test]
    fn escaped_exact_names_are_avoided_one_character_at_a_time() {
        let r = Reserved {
            exact: &["digest", "%64igest"],
            suffixes: &[],
        };
        assert_eq!(check("digest", &r, NAME_MAX), "%64%69gest");
        // A subdirectory named like a part file of the same directory.
        let part = escape("a%", &PART, NAME_MAX - 4);
        assert_eq!(part, "a%25");
        let taken = ["meta.json", part.as_str()];
        let r = Reserved {
            exact: &taken,
            suffixes: PART.suffixes,
        };
        assert_eq!(check("a%", &r, NAME_MAX), "%61%25");
        assert_eq!(check("%a", &r, NAME_MAX), "%25a");
    }

    #[test]
    fn a_reserved_name_with_nothing_left_to_encode_is_hashed() {
        let r = Reserved {
            exact: &["%25", "%2E"],
            suffixes: &[],
        };
        for name in ["%", "."] {
            let c = check(name, &r, NAME_MAX);
            let hash = format!("{:032x}", xxh3_128(name.as_bytes()));
            assert_eq!(c, format!("{}%~{hash}", plain(name)));
            assert!(is_shortened(&c));
        }
        assert_eq!(check("%%", &r, NAME_MAX), "%25%25");
    }

    #[test]
    fn a_1024_byte_name_is_shortened_with_the_marker() {
        let name = "w".repeat(1024);
        let c = check(&name, &Reserved::NONE, NAME_MAX);
        assert_eq!(c.len(), NAME_MAX);
        assert!(is_shortened(&c));
        assert_eq!(&c[..221], &name[..221]);
        assert_eq!(&c[221..223], "%~");
        assert_eq!(unescape(&c), None);
    }

    #[test]
    fn the_hash_is_xxh3_128_as_xxhsum_prints_it() {
        // `printf 'a%.0s' $(seq 300) | xxhsum -H2`
        let c = plain(&"a".repeat(300));
        assert_eq!(&c[c.len() - 32..], "5e563f2cb28d2005c1d17581d8eb7e21");
        assert_eq!(
            format!("{:032x}", xxh3_128(b"model.layers.0.mlp.up_proj.weight")),
            "12d5254f3458e0db8a474b05516d321b"
        );
    }

    #[test]
    fn names_sharing_a_long_prefix_stay_distinct() {
        let stem = "p".repeat(255);
        let a = check(
            &format!("{stem}{}", "a".repeat(45)),
            &Reserved::NONE,
            NAME_MAX,
        );
        let b = check(
            &format!("{stem}{}", "b".repeat(45)),
            &Reserved::NONE,
            NAME_MAX,
        );
        assert_eq!(a.len(), NAME_MAX);
        assert_eq!(a[..221], b[..221]);
        assert_ne!(a, b);
    }

    #[test]
    fn the_cut_never_splits_a_triple() {
        // The room is 255 - 34 = 221 bytes; the triple `%2F` starts at 220.
        let name = format!("{}/{}", "a".repeat(220), "b".repeat(100));
        let c = check(&name, &Reserved::NONE, NAME_MAX);
        assert_eq!(&c[..222], format!("{}%~", "a".repeat(220)));
        // The triple starts at 219 and would end at 222.
        let name = format!("{}/{}", "a".repeat(219), "b".repeat(100));
        let c = check(&name, &Reserved::NONE, NAME_MAX);
        assert_eq!(&c[..221], format!("{}%~", "a".repeat(219)));
        // The triple ends exactly at 221 and is kept.
        let name = format!("{}/{}", "a".repeat(218), "b".repeat(100));
        let c = check(&name, &Reserved::NONE, NAME_MAX);
        assert_eq!(&c[..223], format!("{}%2F%~", "a".repeat(218)));
    }

    #[test]
    fn the_cut_never_splits_a_character() {
        // `😀` is 4 bytes at 219..223, across the 221-byte room.
        let name = format!("{}😀{}", "a".repeat(219), "b".repeat(100));
        let c = check(&name, &Reserved::NONE, NAME_MAX);
        assert_eq!(&c[..221], format!("{}%~", "a".repeat(219)));
        assert_eq!(c.len(), 219 + 34);
        let name = "é".repeat(200);
        let c = check(&name, &Reserved::NONE, NAME_MAX);
        assert_eq!(&c[..222], format!("{}%~", "é".repeat(110)));
    }

    #[test]
    fn the_limit_is_the_callers() {
        let name = "x".repeat(252);
        assert_eq!(check(&name, &PART, NAME_MAX), name);
        let c = check(&name, &PART, NAME_MAX - ".raw".len());
        assert!(is_shortened(&c) && c.len() == 251);
        let c = check(&"%".repeat(20), &Reserved::NONE, 40);
        assert_eq!(&c[..8], "%25%25%~");
        let c = check(&"/".repeat(40), &Reserved::NONE, SHORT_TAIL_LEN);
        assert!(c.starts_with("%~") && c.len() == SHORT_TAIL_LEN);
    }

    #[test]
    #[should_panic(expected = "component limit")]
    fn a_limit_too_small_for_the_tail_panics() {
        escape("x", &Reserved::NONE, SHORT_TAIL_LEN - 1);
    }

    #[test]
    #[should_panic(expected = "reserved suffixes")]
    fn a_suffix_without_a_dot_panics() {
        escape(
            "x",
            &Reserved {
                exact: &[],
                suffixes: &["raw"],
            },
            NAME_MAX,
        );
    }

    #[test]
    fn unescape_rejects_what_escape_cannot_produce() {
        assert_eq!(unescape(""), None);
        assert_eq!(unescape("%"), None);
        assert_eq!(unescape("%2"), None);
        assert_eq!(unescape("%2e"), None);
        assert_eq!(unescape("%G0"), None);
        assert_eq!(unescape("%00"), None);
        assert_eq!(unescape("%FF"), None);
        assert_eq!(unescape("%C3"), None);
        assert_eq!(unescape("a%~0123"), None);
        assert_eq!(unescape("%C3%A9%2E").as_deref(), Some("é."));
        assert_eq!(unescape("%61").as_deref(), Some("a"));
    }

    #[test]
    fn is_shortened_wants_the_whole_tail() {
        let hash = "0123456789abcdef0123456789abcdef";
        assert!(is_shortened(&format!("%~{hash}")));
        assert!(is_shortened(&format!("x%~{hash}")));
        assert!(!is_shortened(&format!("x%~{}", hash.to_uppercase())));
        assert!(!is_shortened(&format!("x%~{}", &hash[1..])));
        assert!(!is_shortened("%~"));
        assert!(!is_shortened("plain"));
    }
}
