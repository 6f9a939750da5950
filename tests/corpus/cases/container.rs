//! The footer and the container (§2): size, magics, version, manifest
//! bounds, size cap and hash, data shards, generations, padding.

use super::super::builder::{
    dense, part, root, xxh3_digest, BlobRef, Fields, FileBuilder, Footer, MAGIC,
};
use super::{reject, valid, w_root, with_footer, Case, DATA};
use xxhash_rust::xxh3::xxh3_64;

pub fn cases() -> Vec<Case> {
    vec![
        reject("file-empty", "FileTooSmall", Vec::new()),
        reject("file-too-small", "FileTooSmall", too_small()),
        // Magic and a footer and nothing else: the smallest valid file.
        valid(
            "minimal-data-shard",
            FileBuilder::new().finish_footer(&Footer::data_shard()),
        ),
        // The first byte with its high bit stripped by a 7-bit channel.
        reject("header-magic", "HeaderMagic", with_header_byte(0x09)),
        // The whole file through a text-mode line-ending translation, which
        // is what the magic's CR LF exists to catch: a damaged header, not
        // a file of another version.
        reject(
            "header-magic-lf-to-crlf",
            "HeaderMagic",
            translated(b"\n", b"\r\n"),
        ),
        reject(
            "header-magic-crlf-to-lf",
            "HeaderMagic",
            translated(b"\r\n", b"\n"),
        ),
        // The footer's LF turned into CR, as by a line-ending translation.
        reject(
            "footer-magic",
            "FooterMagic",
            with_footer(|f| f.magic[7] = 0x0D),
        ),
        reject("version-1", "Version", with_footer(|f| f.version = 1)),
        reject("version-3", "Version", with_footer(|f| f.version = 3)),
        reject(
            "version-big-endian",
            "Version",
            with_footer(|f| f.version = 2u32.swap_bytes()),
        ),
        // Readers must ignore the reserved word (§2.3).
        valid("nonzero-reserved-ignored", with_footer(|f| f.reserved = 1)),
        valid("data-shard", data_shard(|_| {})),
        reject(
            "data-shard-nonzero-offset",
            "ManifestBounds",
            data_shard(|f| f.manifest_offset = 4096),
        ),
        reject(
            "data-shard-nonzero-hash",
            "ManifestBounds",
            data_shard(|f| f.manifest_hash = xxh3_64(b"")),
        ),
        // Also out of bounds and hashed wrong; the size cap comes before both.
        reject(
            "manifest-too-large",
            "ManifestTooLarge",
            with_footer(|f| f.manifest_length = (1 << 30) + 1),
        ),
        // Exactly 1 GiB is allowed by the cap, so this is a bounds failure
        // (and a hash failure, checked later).
        reject(
            "manifest-length-1gib",
            "ManifestBounds",
            with_footer(|f| f.manifest_length = 1 << 30),
        ),
        reject(
            "manifest-offset-misaligned",
            "BlobAlignment",
            manifest_at(8196),
        ),
        // Inside the 4096-byte floor and misaligned.
        reject("manifest-offset-8", "BlobAlignment", manifest_at(8)),
        // The footer points at the magic, with the hash of those 8 bytes: aligned
        // but below 4096. (Not CBOR either; alignment comes first.)
        reject(
            "manifest-offset-zero",
            "BlobAlignment",
            with_footer(|f| {
                (f.manifest_offset, f.manifest_length, f.manifest_hash) = (0, 8, xxh3_64(&MAGIC));
            }),
        ),
        // Starts past the data region. (The hash is left as it was; bounds come first.)
        reject(
            "manifest-past-end",
            "ManifestBounds",
            with_footer(|f| f.manifest_offset += 4096),
        ),
        // One byte into the footer. (The hash no longer matches; bounds come first.)
        reject(
            "manifest-overlaps-footer",
            "ManifestBounds",
            with_footer(|f| f.manifest_length += 1),
        ),
        // Aligned, offset + length wraps around u64.
        reject(
            "manifest-offset-overflow",
            "ManifestBounds",
            with_footer(|f| f.manifest_offset = u64::MAX - 4095),
        ),
        reject(
            "manifest-hash-mismatch",
            "ManifestHash",
            with_footer(|f| f.manifest_hash ^= 1),
        ),
        valid("appended-generation", appended_generation()),
        reject("footer-not-at-eof", "FooterMagic", with_trailing(b"junk!")),
        reject("crashed-append", "FooterMagic", crashed_append()),
        // Readers may ignore padding (§2.4); the public corpus fills it with 0xAB.
        valid("padding-filled-ab", padded_with(0xAB)),
    ]
}

/// 47 bytes: both magics and 31 zero bytes between them.
fn too_small() -> Vec<u8> {
    [&MAGIC[..], &[0; 31], &MAGIC[..]].concat()
}

/// The usual file with its first byte replaced.
fn with_header_byte(byte: u8) -> Vec<u8> {
    let mut bytes = with_footer(|_| {});
    bytes[0] = byte;
    bytes
}

/// The usual file with every `from` replaced by `to`.
fn translated(from: &[u8], to: &[u8]) -> Vec<u8> {
    let bytes = with_footer(|_| {});
    let mut out = Vec::with_capacity(bytes.len() * 2);
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

/// The usual file followed by `junk`.
fn with_trailing(junk: &[u8]) -> Vec<u8> {
    [with_footer(|_| {}), junk.to_vec()]
        .into_iter()
        .flatten()
        .collect()
}

/// A data shard with one blob and its footer edited.
fn data_shard(edit: impl FnOnce(&mut Footer)) -> Vec<u8> {
    let mut f = FileBuilder::new();
    f.blob(DATA);
    let mut footer = Footer::data_shard();
    edit(&mut footer);
    f.finish_footer(&footer)
}

/// The usual file with the manifest stored at `offset` (and the data blob at
/// 4096), the footer pointing at it with the right length and hash.
fn manifest_at(offset: u64) -> Vec<u8> {
    let manifest = w_root().sorted().encode();
    let mut f = FileBuilder::new();
    let (m, _) = if offset < 4096 {
        let m = f.blob_at(offset, &manifest);
        (m, f.blob_at(4096, DATA))
    } else {
        let d = f.blob(DATA);
        (f.blob_at(offset, &manifest), d)
    };
    f.finish_footer(&Footer::for_manifest(m, &manifest))
}

/// Two generations (§2.5): the first manifest and its footer stay in the
/// file as unreferenced bytes; the new manifest keeps one old blob, adds a
/// new one, and drops the old object.
fn appended_generation() -> Vec<u8> {
    let mut f = FileBuilder::new();
    let old = f.blob(b"first generation");
    let first = root(Fields::new().set("old", dense(&[16], part("u8", old))));
    let first = first.sorted().encode();
    let first_ref = f.blob(&first);
    f.append(&Footer::for_manifest(first_ref, &first).bytes());
    let new = f.blob(DATA);
    let objects = Fields::new()
        .set("kept", dense(&[16], part("u8", old)))
        .set(
            "w",
            dense(&[16], part("u8", new).set("digest", xxh3_digest(DATA))),
        );
    f.finish(&root(objects).sorted().encode())
}

/// The usual file and then a new blob, with no footer after it.
fn crashed_append() -> Vec<u8> {
    let usual = with_footer(|_| {});
    let next = (usual.len() as u64).div_ceil(4096) * 4096;
    let mut bytes = usual;
    bytes.resize(next as usize, 0);
    bytes.extend_from_slice(b"a blob whose footer never came");
    bytes
}

/// The usual file with 0xAB padding everywhere.
fn padded_with(filler: u8) -> Vec<u8> {
    let mut f = FileBuilder::new().with_filler(filler);
    let b = f.blob(DATA);
    assert_eq!(b, BlobRef::new(4096, 16));
    f.finish(&w_root().sorted().encode())
}
