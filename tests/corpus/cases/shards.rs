//! The shard table and shard references (§7, implementer notes §1), checked
//! from the root manifest alone: no shard file of these roots is in the
//! corpus, so `check` can only warn that they are unavailable. `check
//! --verify` must read every part, so it must refuse the parts whose shard
//! it cannot resolve: the root is still valid (no rejection) and the parts
//! are not verified (no pass). `samples/sharded` and the folders under
//! `families/` are roots with their shards present (or deliberately wrong).

use super::super::builder::{dense, part, root, sha256_digest, BlobRef, CborItem, Fields};
use super::super::Outcome;
use super::{file, reject, valid, valid_then, w_object, Case, DATA, W_BLOB};

pub fn cases() -> Vec<Case> {
    [tables(), names(), schema(), blobs()]
        .into_iter()
        .flatten()
        .collect()
}

/// A shard entry of `size` bytes with a well-formed digest.
fn entry(size: u64) -> Fields {
    Fields::new()
        .set("size", size)
        .set("digest", sha256_digest(b"a shard the corpus does not hold"))
}

/// A table declaring each of `names` as a 1 MiB shard.
fn table(names: &[&str]) -> Fields {
    names
        .iter()
        .fold(Fields::new(), |acc, n| acc.set(*n, entry(1 << 20)))
}

/// A dense u8 object over `blob` in shard `shard`.
fn foreign(shard: &str, blob: BlobRef) -> Fields {
    dense(&[blob.length], part("u8", blob).set("shard", shard))
}

/// A root with the table `shards`, the usual local object `w`, and
/// `objects`.
fn sharded(shards: impl Into<CborItem>, objects: Fields) -> Vec<u8> {
    let shards = shards.into();
    file(&[DATA], |_| {
        root(objects.set("w", w_object(W_BLOB)))
            .set("shards", shards)
            .sorted()
    })
}

/// The usual file with a shard table of one entry under `name`.
fn with_shard_key(name: &str) -> Vec<u8> {
    sharded(table(&[name]), Fields::new())
}

/// A root declaring shard `00001` and object `x` in shard `shard`.
fn with_shard_ref(shard: &str) -> Vec<u8> {
    let x = foreign(shard, W_BLOB);
    sharded(table(&["00001"]), Fields::new().set("x", x))
}

/// A valid root with parts in shards the corpus does not hold.
fn valid_missing_shards(name: &'static str, bytes: Vec<u8>) -> Case {
    valid_then(name, Outcome::Refused, bytes)
}

/// A root declaring shard `a` of `size` bytes and objects over `refs` in it.
fn in_shard(size: u64, refs: &[BlobRef]) -> Vec<u8> {
    let objects = refs
        .iter()
        .zip(["x", "y"])
        .fold(Fields::new(), |acc, (b, n)| acc.set(n, foreign("a", *b)));
    sharded(Fields::new().set("a", entry(size)), objects)
}

fn tables() -> Vec<Case> {
    let note = entry(1 << 20).set("note", "unknown keys in an entry are ignored");
    let together = Fields::new()
        .set("a", foreign("00001", W_BLOB))
        .set("b", foreign("00002", BlobRef::new(65536, 1024)));
    // Overlapping ranges, each in a different file: the root and two shards.
    let same_offsets = Fields::new()
        .set("x", foreign("a", BlobRef::new(4096, 32)))
        .set("y", foreign("b", BlobRef::new(4096, 64)));
    vec![
        valid_missing_shards(
            "local-and-foreign-parts-together",
            sharded(table(&["00001"]).set("00002", note), together),
        ),
        valid_missing_shards(
            "blob-same-offset-two-shards",
            sharded(table(&["a", "b"]), same_offsets),
        ),
        valid("shards-empty-table", sharded(Fields::new(), Fields::new())),
        valid(
            "shard-size-48",
            sharded(Fields::new().set("a", entry(48)), Fields::new()),
        ),
    ]
}

fn names() -> Vec<Case> {
    let s64 = "s".repeat(64);
    let s65 = "s".repeat(65);
    let allowed = table(&["00001-of-00002", "a..b", "Z_9", "-", "_", &s64]);
    let x = Fields::new().set("x", foreign(&s64, W_BLOB));
    vec![
        // Every character class, dots after the first byte, 64 bytes.
        valid_missing_shards("shard-names-allowed", sharded(allowed, x)),
        reject("shard-key-slash", "ShardName", with_shard_key("sub/dir")),
        reject(
            "shard-key-leading-dot",
            "ShardName",
            with_shard_key(".hidden"),
        ),
        reject("shard-key-dotdot", "ShardName", with_shard_key("..")),
        reject("shard-key-65-bytes", "ShardName", with_shard_key(&s65)),
        reject("shard-key-empty", "ShardName", with_shard_key("")),
        reject("shard-key-non-ascii", "ShardName", with_shard_key("\u{e9}")),
        reject("shard-key-space", "ShardName", with_shard_key("a b")),
        // A part's shard value is checked as a name before it is looked up, so
        // these are ShardName and not ShardRef.
        reject("shard-ref-slash", "ShardName", with_shard_ref("sub/dir")),
        reject(
            "shard-ref-parent",
            "ShardName",
            with_shard_ref("../etc/passwd"),
        ),
        reject("shard-ref-65-bytes", "ShardName", with_shard_ref(&s65)),
        reject("shard-ref-empty", "ShardName", with_shard_ref("")),
        reject("shard-ref-undeclared", "ShardRef", with_shard_ref("00002")),
        reject(
            "shard-ref-without-table",
            "ShardRef",
            file(&[DATA], |_| {
                let objects = Fields::new()
                    .set("x", foreign("00001", W_BLOB))
                    .set("w", w_object(W_BLOB));
                root(objects).sorted()
            }),
        ),
    ]
}

fn schema() -> Vec<Case> {
    let with_entry = |e: Fields| sharded(Fields::new().set("a", e), Fields::new());
    vec![
        reject(
            "schema-shards-not-map",
            "Schema",
            sharded(CborItem::Array(vec![]), Fields::new()),
        ),
        reject(
            "schema-shard-key-not-text",
            "Schema",
            sharded(Fields::new().set(1u64, entry(1 << 20)), Fields::new()),
        ),
        reject(
            "schema-shard-entry-not-map",
            "Schema",
            sharded(Fields::new().set("a", 1024u64), Fields::new()),
        ),
        reject(
            "schema-shard-missing-size",
            "Schema",
            with_entry(entry(1 << 20).remove("size")),
        ),
        reject(
            "schema-shard-missing-digest",
            "Schema",
            with_entry(entry(1 << 20).remove("digest")),
        ),
        reject(
            "schema-shard-size-not-int",
            "Schema",
            with_entry(entry(1 << 20).set("size", "1048576")),
        ),
        // Smaller than magic and footer.
        reject(
            "schema-shard-size-too-small",
            "Schema",
            with_entry(entry(47)),
        ),
        reject(
            "schema-shard-digest-uppercase-hex",
            "Schema",
            with_entry(entry(1 << 20).set("digest", "xxh3:ABCDEF0123456789")),
        ),
        reject(
            "schema-shard-ref-not-text",
            "Schema",
            sharded(
                table(&["00001"]),
                Fields::new().set("x", dense(&[16], part("u8", W_BLOB).set("shard", 1u64))),
            ),
        ),
    ]
}

fn blobs() -> Vec<Case> {
    vec![
        // The shard's data region ends at 8192 - 40 = 8152.
        reject(
            "shard-blob-past-declared-size",
            "BlobBounds",
            in_shard(8192, &[BlobRef::new(4096, 4057)]),
        ),
        valid_missing_shards(
            "shard-blob-at-declared-end",
            in_shard(8192, &[BlobRef::new(4096, 4056)]),
        ),
        reject(
            "shard-blob-overlap",
            "BlobOverlap",
            in_shard(
                1 << 20,
                &[BlobRef::new(4096, 8192), BlobRef::new(8192, 4096)],
            ),
        ),
        reject(
            "shard-blob-misaligned",
            "BlobAlignment",
            in_shard(8192, &[BlobRef::new(4100, 16)]),
        ),
    ]
}
