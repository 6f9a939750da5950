//! Container rejects: header, trailer, bounds, index CRC, index, names,
//! sort order, KV section, placement and padding (file-format.md).

use super::writer::{File, Kv, HAS_INDEX_CRC32C, HAS_KV_METADATA, SORTED_INDEX, TRAILER_LEN};
use super::{empty, patched, reject, usual, w, Case};

pub fn cases() -> Vec<Case> {
    [header(), trailer(), index(), kv(), placement()]
        .into_iter()
        .flatten()
        .collect()
}

/// The empty file (no tensor, no KV) with its header edited.
fn header_edit(edit: impl FnOnce(&mut super::writer::Header)) -> Vec<u8> {
    let mut f = File::new(Vec::new());
    edit(&mut f.header);
    f.bytes()
}

fn header() -> Vec<Case> {
    let h = "HurrayHeader";
    let v = "HurrayVersion";
    let mut too_small = File::new(Vec::new()).bytes();
    too_small.truncate(103);
    vec![
        // Starts with the magic but cannot hold a header and a trailer.
        reject("too-small-103", "HurrayTooSmall", too_small),
        reject("version-major-0", v, header_edit(|h| h.major = 0)),
        reject("version-major-2", v, header_edit(|h| h.major = 2)),
        reject(
            "header-reserved-nonzero",
            h,
            header_edit(|h| h.reserved = [0, 1]),
        ),
        reject(
            "header-reserved-tail-nonzero",
            h,
            header_edit(|h| h.reserved_tail[27] = 1),
        ),
        reject("header-flags-reserved", h, header_edit(|h| h.flags |= 8)),
        reject("header-alignment-0", h, header_edit(|h| h.alignment = 0)),
        reject(
            "header-alignment-not-pow2",
            h,
            header_edit(|h| h.alignment = 6144),
        ),
        reject(
            "header-alignment-2048",
            h,
            header_edit(|h| h.alignment = 2048),
        ),
        reject(
            "header-alignment-4mib",
            h,
            header_edit(|h| h.alignment = 4 << 20),
        ),
        reject(
            "header-first-descriptor-offset-32",
            h,
            header_edit(|h| h.first_descriptor_offset = 32),
        ),
        reject(
            "header-first-descriptor-offset-68",
            h,
            header_edit(|h| h.first_descriptor_offset = 68),
        ),
    ]
}

fn trailer() -> Vec<Case> {
    let empty_file = File::new(Vec::new());
    let b = "HurrayBounds";
    vec![
        reject(
            "trailer-magic",
            "HurrayTrailer",
            empty_file.with_trailer(|t| t.magic = *b"HRRX"),
        ),
        reject(
            "trailer-reserved-nonzero",
            "HurrayTrailer",
            empty_file.with_trailer(|t| t.reserved[3] = 1),
        ),
        reject(
            "bounds-index-past-file",
            b,
            empty_file.with_trailer(|t| t.index_length = 4096),
        ),
        // index_offset + index_length wraps around u64: checked arithmetic.
        reject(
            "bounds-index-offset-overflow",
            b,
            empty_file.with_trailer(|t| t.index_offset = u64::MAX - 4),
        ),
        // The index runs into the trailer by one byte.
        reject(
            "bounds-index-into-trailer",
            b,
            empty_file.with_trailer(|t| t.index_length += 1),
        ),
        reject(
            "bounds-kv-past-file",
            b,
            usual()
                .kv(Kv::new().encode())
                .with_trailer(|t| t.kv_length = 1 << 20),
        ),
        reject(
            "bounds-descriptor-past-file",
            b,
            usual().with_index(|ix| ix.entries[0].descriptor_offset = 1 << 40),
        ),
        reject("bounds-buffer-past-file", b, buffer_past_file()),
        reject(
            "index-crc-mismatch",
            "HurrayIndexCrc",
            usual().with_trailer(|t| t.index_crc32c ^= 1),
        ),
        reject(
            "index-crc-without-flag",
            "HurrayIndexCrc",
            crc_without_flag(),
        ),
    ]
}

/// A u8 `[1 MiB]` tensor whose descriptor, index entry and buffer size
/// agree, with only 16 bytes of it in the file.
fn buffer_past_file() -> Vec<u8> {
    let mut f = usual();
    let d = &mut f.tensors[0].desc;
    d.shape = vec![1 << 20];
    d.buffers[0].size = 1 << 20;
    f.bytes()
}

/// The CRC filled in, the flag unset.
fn crc_without_flag() -> Vec<u8> {
    let crc = super::writer::crc32c(&{
        let p = usual().place(|_| {}, |_| {});
        p.bytes[p.index_offset as usize..p.bytes.len() - TRAILER_LEN].to_vec()
    });
    let mut f = usual();
    f.header.flags &= !HAS_INDEX_CRC32C;
    f.with_trailer(|t| t.index_crc32c = crc)
}

fn index() -> Vec<Case> {
    let i = "HurrayIndex";
    let n = "HurrayName";
    let two = File::new(vec![empty("a"), empty("b")]);
    let mut unsorted = two.clone();
    unsorted.header.flags |= SORTED_INDEX;
    vec![
        // 2^40 entries declared, none present: refused before any
        // allocation sized by the count.
        reject(
            "index-count-2e40",
            i,
            usual().with_index(|ix| {
                ix.count = Some(1 << 40);
                ix.entries.clear();
            }),
        ),
        reject(
            "index-count-short",
            i,
            two.with_index(|ix| ix.count = Some(1)),
        ),
        reject(
            "index-truncated-entry",
            i,
            two.with_index(|ix| ix.count = Some(3)),
        ),
        reject(
            "index-trailing-bytes",
            i,
            usual().with_index(|ix| ix.extra = vec![0; 8]),
        ),
        reject(
            "index-entry-flags",
            i,
            usual().with_index(|ix| ix.entries[0].flags = 1),
        ),
        reject(
            "descriptor-length-mismatch-index",
            i,
            usual().with_index(|ix| ix.entries[0].descriptor_length += 8),
        ),
        reject(
            "index-data-length-mismatch",
            i,
            usual().with_index(|ix| ix.entries[0].data_length += 1),
        ),
        reject("name-empty", n, File::new(vec![empty("")]).bytes()),
        reject(
            "name-not-utf8",
            n,
            File::new(vec![empty(b"a\xFFb")]).bytes(),
        ),
        reject(
            "name-overlong-utf8",
            n,
            File::new(vec![empty(b"\xC0\xAF")]).bytes(),
        ),
        reject(
            "name-duplicate",
            n,
            File::new(vec![empty("a"), empty("a")]).bytes(),
        ),
        reject(
            "sorted-flag-unsorted",
            "HurraySorted",
            unsorted.with_index(|ix| ix.entries.reverse()),
        ),
    ]
}

/// The usual file with KV section `kv`.
fn with_kv(kv: Kv) -> Vec<u8> {
    usual().kv(kv.encode()).bytes()
}

fn kv() -> Vec<Case> {
    let k = "HurrayKv";
    let mut flag_only = usual();
    flag_only.header.flags |= HAS_KV_METADATA;
    let mut trailing = Kv::new().i64("a", 1);
    trailing.extra = vec![0; 4];
    let mut short = Kv::new().i64("a", 1);
    short.count = Some(2);
    let mut huge = Kv::new();
    huge.count = Some(u32::MAX);
    vec![
        reject("kv-bool-2", k, with_kv(Kv::new().raw("b", 0x05, &[2]))),
        reject(
            "kv-tag-reserved",
            k,
            with_kv(Kv::new().raw("t", 0x08, &[0; 8])),
        ),
        reject(
            "kv-tag-private",
            k,
            with_kv(Kv::new().raw("t", 0xF0, &[0; 8])),
        ),
        reject(
            "kv-tag-invalid",
            k,
            with_kv(Kv::new().raw("t", 0xFF, &[0; 8])),
        ),
        reject("kv-tag-0", k, with_kv(Kv::new().raw("t", 0x00, &[0; 8]))),
        reject(
            "kv-array-of-arrays",
            k,
            with_kv(Kv::new().array("a", 0x07, 0, &[])),
        ),
        reject(
            "kv-array-bool-2",
            k,
            with_kv(Kv::new().array("a", 0x05, 2, &[1, 2])),
        ),
        reject("kv-key-empty", k, with_kv(Kv::new().i64("", 1))),
        reject(
            "kv-key-not-utf8",
            k,
            with_kv(Kv::new().raw(b"\xFF", 0x02, &[0; 8])),
        ),
        reject("kv-count-short", k, with_kv(short)),
        reject("kv-count-huge", k, with_kv(huge)),
        reject("kv-trailing-bytes", k, with_kv(trailing)),
        reject(
            "kv-string-length-past-section",
            k,
            with_kv(Kv::new().raw("s", 0x01, &100u32.to_le_bytes())),
        ),
        reject("kv-flag-without-section", k, flag_only.bytes()),
        reject(
            "kv-duplicate",
            "HurrayKvDuplicate",
            with_kv(Kv::new().i64("a", 1).string("a", "x")),
        ),
    ]
}

fn placement() -> Vec<Case> {
    let p = "HurrayPlacement";
    let z = "HurrayPadding";
    let mut misaligned = usual();
    misaligned.tensors[0].gap_before_data = 64;
    let mut page_gap = usual();
    page_gap.tensors[0].gap_before_data = 4096;
    let mut desc_misaligned = File::new(vec![w(), empty("e")]);
    desc_misaligned.tensors[1].gap_before = 4;
    let mut desc_gap = File::new(vec![w(), empty("e")]);
    desc_gap.tensors[1].gap_before = 8;
    let mut index_misaligned = usual();
    index_misaligned.gap_before_index = 4;
    let mut index_gap = usual();
    index_gap.gap_before_index = 8;
    // A 9-byte KV section: 7 bytes of padding before the index.
    let kv = usual().kv(Kv::new().bool("a", true).encode());
    let kv_at = kv.place(|_| {}, |_| {}).kv_offset as usize;
    let mut kv_misaligned = kv.clone();
    kv_misaligned.gap_before_kv = 4;
    let mut full = usual();
    full.tensors[0].tail = super::writer::Tail::Alignment;
    let mut padded = usual();
    padded.header.first_descriptor_offset = 128;
    vec![
        reject("buffer-misaligned", p, misaligned.bytes()),
        // Buffer 0 one page later than the alignment requires.
        reject("placement-buffer-gap-page", p, page_gap.bytes()),
        reject(
            "placement-descriptor-misaligned",
            p,
            desc_misaligned.bytes(),
        ),
        reject("placement-descriptor-gap", p, desc_gap.bytes()),
        reject("placement-index-misaligned", p, index_misaligned.bytes()),
        reject("placement-index-gap", p, index_gap.bytes()),
        reject("placement-kv-misaligned", p, kv_misaligned.bytes()),
        // Two names for one descriptor and buffer.
        reject(
            "placement-overlap",
            p,
            File::new(vec![w()]).with_index(|ix| {
                let mut twin = ix.entries[0].clone();
                twin.name = b"w2".to_vec();
                ix.entries.push(twin);
            }),
        ),
        // A KV section (count 0) located inside the tensor's buffer, whose
        // first four bytes are zero.
        reject("placement-kv-inside-buffer", p, kv_inside_buffer()),
        reject(
            "padding-nonzero-before-buffer",
            z,
            patched(usual().bytes(), 4000, &[1]),
        ),
        reject(
            "padding-nonzero-after-buffer",
            z,
            patched(full.bytes(), 4096 + 16, &[1]),
        ),
        reject(
            "padding-nonzero-after-header",
            z,
            patched(padded.bytes(), 100, &[1]),
        ),
        reject(
            "padding-nonzero-before-index",
            z,
            patched(kv.bytes(), kv_at + 9, &[1]),
        ),
    ]
}

fn kv_inside_buffer() -> Vec<u8> {
    let mut f = usual();
    f.tensors[0].desc.buffers[0].data[..4].fill(0);
    f.with_trailer(|t| {
        t.kv_offset = 4096;
        t.kv_length = 4;
    })
}
