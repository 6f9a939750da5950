//! Names (§3.5): non-empty, at most 1024 bytes, no NUL; nothing else. Names
//! that are hostile to a filesystem are valid, and `names-hostile` gathers
//! them for the mount tests.

use super::super::builder::{dense, part, root, xxh3_digest, BlobRef, Fields, FileBuilder};
use super::{reject, structural, valid, w_object, with_object, with_root, Case, W_BLOB};

pub fn cases() -> Vec<Case> {
    let long = "x".repeat(1025);
    // 341 three-byte characters and one two-byte one: 342 characters, 1025 bytes.
    let long_multibyte = format!("{}é", "€".repeat(341));
    vec![
        reject("name-empty-object", "Name", with_objects(&[""])),
        reject("name-empty-part", "Name", with_parts(&[""])),
        reject("name-too-long-object", "Name", with_objects(&[&long])),
        reject(
            "name-too-long-multibyte",
            "Name",
            with_objects(&[&long_multibyte]),
        ),
        reject("name-too-long-part", "Name", with_parts(&[&long])),
        reject("name-nul-object", "Name", with_objects(&["a\0b"])),
        reject("name-nul-part", "Name", with_parts(&["\0"])),
        reject("name-empty-attribute-key", "Name", with_root_attr("")),
        reject("name-attribute-key-nul", "Name", with_root_attr("key\0")),
        reject(
            "name-empty-object-attribute-key",
            "Name",
            with_object_attr(""),
        ),
        reject(
            "name-object-attribute-key-too-long",
            "Name",
            with_object_attr(&long),
        ),
        valid("name-1024-bytes", long_names(&"x".repeat(1024))),
        // 256 four-byte characters.
        valid("name-1024-bytes-multibyte", long_names(&"🦀".repeat(256))),
        valid(
            "name-slash",
            with_objects(&["a/b", "/", "/abs", "trailing/"]),
        ),
        valid("name-dot", with_objects(&["."])),
        valid("name-dotdot", with_objects(&["..", "a/../b"])),
        valid(
            "name-control-chars",
            with_objects(&["\u{1}\t\n\u{1b}[31m\u{7f}"]),
        ),
        // U+00E9 and e + U+0301: the same to a reader of text, two objects here.
        valid("name-non-nfc", with_objects(&["\u{e9}", "e\u{301}"])),
        valid("names-hostile", names_hostile()),
    ]
}

/// The usual file with one copy of object `w` under each of `names`, all
/// sharing its blob.
fn with_objects(names: &[&str]) -> Vec<u8> {
    let objects = names
        .iter()
        .fold(Fields::new(), |acc, n| acc.set(*n, w_object(W_BLOB)));
    with_root(|r| r.set("objects", objects).sorted())
}

/// The usual blob as parts named `names` of a structural object, where no
/// layout rule constrains part names.
fn with_parts(names: &[&str]) -> Vec<u8> {
    let parts = names
        .iter()
        .fold(Fields::new(), |acc, n| acc.set(*n, part("u8", W_BLOB)));
    with_root(|r| {
        r.set("objects", Fields::new().set("w", structural(&[16], parts)))
            .sorted()
    })
}

fn with_root_attr(key: &str) -> Vec<u8> {
    with_root(|r| r.set("attributes", Fields::new().set(key, 1u64)).sorted())
}

fn with_object_attr(key: &str) -> Vec<u8> {
    with_object(|o| o.set("attributes", Fields::new().set(key, 1u64)))
}

/// `name` as an object name, a part name and an attribute key.
fn long_names(name: &str) -> Vec<u8> {
    let parts = Fields::new().set(name, part("u8", W_BLOB));
    let objects = Fields::new()
        .set(name, w_object(W_BLOB))
        .set("w", structural(&[16], parts));
    with_root(|r| {
        r.set("objects", objects)
            .set("attributes", Fields::new().set(name, "long key"))
            .sorted()
    })
}

/// Object names a filesystem must escape, shorten or keep apart.
fn hostile_object_names() -> Vec<String> {
    let prefix = "p".repeat(255);
    let mut names: Vec<String> = [
        "/",
        "a/b",
        "/abs",
        "trailing/",
        "a/../b",
        ".",
        "..",
        "...",
        ".hidden",
        "%2F",
        "a%2Fb",
        "%",
        "%25",
        "a%b",
        "%2e%2e",
        "a\\b",
        "a\u{2215}b",
        "a:b",
        "CON",
        "\t",
        "tab\there",
        "line\nbreak",
        "\u{1}\u{1f}\u{7f}",
        "\u{1b}[31mred",
        "manifest.json",
        "digest",
        "meta.json",
        "data.raw",
        "data",
        "🦀 crab",
        "\u{e9}",
        "e\u{301}",
        "Case",
        "case",
        " ",
        " leading space",
        "trailing space ",
        "\u{202e}rtl-override",
        "\u{feff}bom",
    ]
    .map(String::from)
    .to_vec();
    names.push("x".repeat(1024));
    names.push("é".repeat(512));
    names.push(format!("{prefix}{}", "A".repeat(45)));
    names.push(format!("{prefix}{}", "B".repeat(45)));
    names
}

/// Part names a filesystem must escape, shorten or keep apart.
fn hostile_part_names() -> Vec<String> {
    let mut names: Vec<String> = [
        "data.raw",
        "data",
        "/",
        "a/b",
        ".",
        "..",
        ".hidden",
        "%2F",
        "a%2Fb",
        "manifest.json",
        "digest",
        "meta.json",
        "🦀",
        "\u{e9}",
        "e\u{301}",
        "\u{1}ctl",
    ]
    .map(String::from)
    .to_vec();
    names.push("y".repeat(1024));
    names
}

/// One valid file with every hostile name: each object `n` is dense u8 over
/// the bytes of `n` itself, so a mount test can tell which file it read.
/// The object `hostile-parts` (unknown layout) has a part for each hostile
/// part name, again over its own name's bytes; equal bytes share a blob.
/// Every part carries its xxh3 digest. The root attributes use hostile keys.
fn names_hostile() -> Vec<u8> {
    let mut f = FileBuilder::new();
    let mut placed: Vec<(String, BlobRef)> = Vec::new();
    let mut place = |f: &mut FileBuilder, name: &str| -> Fields {
        let blob = match placed.iter().find(|(n, _)| n == name) {
            Some((_, b)) => *b,
            None => {
                let b = f.blob(name.as_bytes());
                placed.push((name.to_string(), b));
                b
            }
        };
        part("u8", blob).set("digest", xxh3_digest(name.as_bytes()))
    };
    let mut objects = Fields::new();
    for name in hostile_object_names() {
        let data = place(&mut f, &name);
        objects = objects.set(name.as_str(), dense(&[name.len() as u64], data));
    }
    let mut parts = Fields::new();
    for name in hostile_part_names() {
        parts = parts.set(name.as_str(), place(&mut f, &name));
    }
    objects = objects.set("hostile-parts", structural(&[0], parts));
    let attributes = ["/", "..", "a/b", "manifest.json", "\u{e9}", "e\u{301}"]
        .iter()
        .fold(Fields::new(), |acc, k| acc.set(*k, format!("value of {k}")));
    f.finish(
        &root(objects)
            .set("attributes", attributes)
            .sorted()
            .encode(),
    )
}
