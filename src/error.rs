//! Errors: a rejection names the rule it enforces, a refusal says what this
//! reader will not interpret, and everything else is I/O or usage.
//!
//! The rule names are the public implementation's (`ztensor` crate, `Rule`),
//! so results can be compared file by file with its conformance corpus.

use std::fmt;

/// The rules, written once: the enum, [`Rule::name`] and [`Rule::ALL`]
/// come from this one list, so a rule cannot be left out of either.
macro_rules! rules {
    ($($(#[$doc:meta])* $rule:ident,)*) => {
        /// The rule a rejected file breaks. Each cites the section of the
        /// zTensor v2 spec (Draft 4), or of the other format's own text,
        /// that makes it a MUST.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Rule {
            $($(#[$doc])* $rule,)*
        }

        impl Rule {
            /// The rule's name as printed and as used in the corpus table.
            pub fn name(self) -> &'static str {
                match self {
                    $(Rule::$rule => stringify!($rule),)*
                }
            }

            /// Every rule, in the order above, for documentation and the
            /// corpus table.
            pub const ALL: &'static [Rule] = &[$(Rule::$rule,)*];
        }
    };
}

rules! {
/// Shorter than magic plus footer, 48 bytes (§2.1).
FileTooSmall,
/// The first eight bytes are not the magic (§2.2).
HeaderMagic,
/// The last eight bytes are not the magic (§2.2).
FooterMagic,
/// The footer version is not 2 (§2.3).
Version,
/// The manifest blob lies outside the data region, or a data shard's
/// footer does not zero offset and hash (§2.3, §7.2).
ManifestBounds,
/// The manifest is longer than 1 GiB (§3.1).
ManifestTooLarge,
/// The manifest bytes do not hash to the footer's XXH3-64 (§2.3).
ManifestHash,
/// The manifest is not well-formed CBOR, or uses an item the format
/// forbids: tags, indefinite lengths, undefined, trailing bytes (§3.1).
CborSyntax,
/// Well-formed CBOR that is not in deterministic encoding: a head or a
/// float wider than needed, a NaN other than f97e00, unsorted keys (§3.1).
CborDeterminism,
/// A map repeats a key (§3.1).
CborDuplicateKey,
/// An item deeper than 32 levels from the manifest root (§3.1).
CborDepth,
/// A field is missing, of the wrong type, or out of range (§3).
Schema,
/// An object, part or attribute name breaks §3.5.
Name,
/// Rank above 64 or an element count that overflows u64 (§3.3).
Shape,
/// A blob offset is not a multiple of 4096 or is below 4096 (§2.4).
BlobAlignment,
/// A blob runs past the data region of its file (§2.4).
BlobBounds,
/// Two blobs in one file overlap without being identical (§2.4, §3.6.4).
BlobOverlap,
/// A part names a shard the table does not declare (§3.4, §7.1).
ShardRef,
/// A shard name is outside `[A-Za-z0-9._-]{1,64}` or starts with `.` (§7.1).
ShardName,
/// Object metadata breaks its layout's rules (§5.1, §5.2).
LayoutRule,
/// Decoded data breaks its layout's or logical type's content rules
/// (bool bytes, f4_e2m1 padding nibble, sparse indices) (§5.2, App. A).
LayoutData,
/// A dense part's decoded size is not the size function of its element
/// count (§5.1).
DenseSize,
/// Stored bytes break their encoding profile (§5.3).
Encoding,
/// Decoded bytes do not hash to the part's digest (§3.4).
Digest,
/// A resolved shard is not the file the table describes (§7.1, §7.3).
ShardIdentity,
/// Shorter than a Hurray header and trailer, 104 bytes (file-format.md § File Layout).
HurrayTooSmall,
/// The container major version is not 1 (§ File Header).
HurrayVersion,
/// A header field breaks its rule: reserved bytes or file flag bits set, `data_buffer_alignment` not a power of two in 4096..=2 MiB, `first_descriptor_offset` below 64 or not a multiple of 8 (§ File Header).
HurrayHeader,
/// The trailer's magic is not `HRRY` or its reserved bytes are not zero (§ Trailer).
HurrayTrailer,
/// The index, the KV section, a descriptor or a buffer lies outside the file or runs into the trailer (§ Trailer, § Index Section).
HurrayBounds,
/// The index does not match its CRC-32C, or a CRC is present without the HAS_INDEX_CRC32C flag (§ File Flags, § Trailer).
HurrayIndexCrc,
/// The index is malformed: truncated or trailing bytes, entry flags set, a `descriptor_length`, `data_offset` or `data_length` that disagrees with the descriptor (§ Index Section).
HurrayIndex,
/// A tensor name is empty, not UTF-8, or repeated (§ Index Section).
HurrayName,
/// SORTED_INDEX is set but the names are not in strictly increasing byte order (§ File Flags).
HurraySorted,
/// The KV section is malformed: truncated or trailing bytes, an empty or non-UTF-8 key, a bool other than 0 or 1, a reserved, private or invalid tag, the flag set without a section (§ KV Metadata Section).
HurrayKv,
/// The KV section repeats a key (§ KV Metadata Section).
HurrayKvDuplicate,
/// A descriptor, buffer, KV section or index is misaligned, out of order, overlapping another structure, or separated from the previous one by more than alignment requires (§ Tensor Region, § Alignment and Padding Summary).
HurrayPlacement,
/// A padding byte is not 0x00 (§ Alignment and Padding Summary).
HurrayPadding,
/// A descriptor's magic, major version, length, reserved flag bits or rank breaks metadata.md § Fixed Header, or its fields do not fill its length exactly.
HurrayDescriptor,
/// An element type tag is reserved or invalid, or the extension type section is missing, unexpected or malformed (element-types.md, metadata.md § Extension Type Section).
HurrayType,
/// A layout tag is reserved or invalid, or its fields, rank or buffer count break the layout's rules (metadata.md § Layout-Specific Fields, layouts/).
HurrayLayout,
/// A buffer handle breaks buffer-protocol.md (alignment, device tag, sync mode, memory class, reserved byte), a buffer's size is not what its layout requires (a dense buffer's elements, sparse index arrays, CSF level arrays, a block-paged pool or table), or `byte_offset` lies beyond buffer 0.
HurrayBuffer,
/// The quantization section is malformed or inconsistent with the tensor (quantization.md).
HurrayQuant,
/// The shard section breaks `offset + shape <= parent_shape` or its own rules (metadata.md § Shard Section).
HurrayShard,
/// The statistics section has reserved bits or bytes set or an impossible value (metadata.md § Statistics Section).
HurrayStats,
/// A composite head or member breaks layouts/composite.md: members missing (a torn composite), an open count, a member section where none belongs.
HurrayComposite,
/// An element count or buffer size overflows u64 (metadata.md § Core Variable Fields).
HurrayShape,
// safetensors input
/// The header length `N` is over 100,000,000 bytes, the `safetensors` crate's `MAX_HEADER_SIZE` (checked before the file's length).
SafetensorsHeaderTooLarge,
/// The file is shorter than the 8-byte header length, or `8 + N` runs past its end.
SafetensorsHeaderBounds,
/// The header is not UTF-8 (README § Format: "a JSON UTF-8 string").
SafetensorsUtf8,
/// The header does not begin with `{` (a MUST of README § Format), or is not one valid JSON value (syntax, trailing characters other than whitespace, nesting past serde_json's 127 levels).
SafetensorsJson,
/// A key occurs twice in one object of the header (README § Format notes: "Duplicate keys are disallowed").
SafetensorsDuplicateKey,
/// A tensor entry is not an object with `dtype` (a string), `shape` (an array of integers in 0..2^64) and `data_offsets` (two such integers).
SafetensorsEntry,
/// A dtype name is not one the `safetensors` crate 0.8 lists (`BOOL`, `F4`, `F6_E2M3`, ..., `U64`; exact case).
SafetensorsDtype,
/// `__metadata__` is not an object whose values are all strings (or `null`).
SafetensorsMetadata,
/// In offset order, a tensor does not start where the previous one ended (the first at 0): a gap or an overlap; or it ends before it starts (README § Format notes: the byte buffer cannot contain holes).
SafetensorsOffsets,
/// A tensor's element count times its dtype's bits overflows 64 bits, is not whole bytes (sub-byte dtypes), or is not the length its `data_offsets` span.
SafetensorsSize,
/// The tensors do not end where the file ends: bytes after the last tensor, or tensors past the end of the file.
SafetensorsCoverage,
// Hugging Face sharded safetensors checkpoints (an index and its files;
// src/format/safetensors/index.rs).
/// A Hugging Face index (`model.safetensors.index.json`) is longer than 64 MiB (`MAX_INDEX_LEN`), checked before it is read: transformers reads the whole file with `json.load`; ztfs bounds it.
SafetensorsIndexTooLarge,
/// The index is not UTF-8, not one valid JSON value (serde_json, as for the safetensors header), or not a JSON object (transformers `load_sharded_checkpoint` indexes it as a dict).
SafetensorsIndexJson,
/// A key occurs twice in one object of the index: Python's `json.load` keeps the last, so two readers could map a tensor to different files (refused as the safetensors header's repeated keys are).
SafetensorsIndexDuplicateKey,
/// `weight_map` is missing or not an object whose values are strings (transformers reads `index["weight_map"]` as tensor name → file name).
SafetensorsIndexWeightMap,
/// `metadata` is present but not an object (transformers writes `{"total_size": N}` there and reads it as a dict).
SafetensorsIndexMetadata,
/// A file name in `weight_map` is not one path component: empty, `.`, `..`, or holding `/`, `\` or NUL (transformers joins it onto the index's folder; a name from a file must not leave it).
SafetensorsIndexFileName,
/// `weight_map` names more than 100,000 files (`MAX_INDEX_FILES`), checked before any is opened.
SafetensorsIndexTooManyFiles,
/// A tensor named in `weight_map` is not in the file it names (transformers reports it as a missing key).
SafetensorsIndexMissingTensor,
/// A tensor of a named file is not in `weight_map`, or is mapped to another file (so present in two files): two readers could pick different copies.
SafetensorsIndexUnlisted,
// GGUF input (ggml docs/gguf.md, versions 2 and 3; src/format/gguf).
/// The first four bytes are not `GGUF`, or the file is shorter than the 24-byte header (gguf.md § File Structure).
GgufMagic,
/// The version is not 2 or 3: version 1, a big-endian (byte-swapped) file, or an unknown version (gguf.md § File Structure).
GgufVersion,
/// A tensor, KV or array element count that the bytes left in the file cannot hold, at the fewest bytes each entry takes, or metadata past 256 MiB in memory (gguf.md § File Structure).
GgufCount,
/// A malformed key-value pair: truncated, an empty, repeated or non-UTF-8 key, an unknown value type, a bool byte other than 0/1, a non-UTF-8 string, arrays nested too deep (gguf.md § Standardized key-value pairs, `gguf_metadata_value_type`).
GgufKv,
/// A malformed tensor info: truncated, a name over 64 bytes, holding U+0000, not UTF-8 or repeated, more than 4 dims, a dim or element count not below 2^63 - 1, an unknown ggml type, a row not a whole number of blocks, a byte size that overflows (gguf.md `gguf_tensor_info_t`).
GgufTensorInfo,
/// `general.alignment` not a `uint32`, or not a power of two that is a multiple of 8 (gguf.md § Required: general.alignment).
GgufAlignment,
/// A tensor's data misplaced: an offset not a multiple of the alignment, bytes past the end of the file, two tensors overlapping, a data section starting past the end (gguf.md `tensor_data`).
GgufData,
/// A file of a split model (`NAME-0000K-of-0000N.gguf`, opened from its first file) disagrees with the split: its `split.no` is not K - 1, its `split.count` not N, its `split.tensors.count` not the first file's, a tensor name is in two files, or the files together do not hold `split.tensors.count` tensors (llama.cpp's loader refuses each).
GgufSplit,
// PyTorch checkpoints (`torch.save`'s zip format; src/format/pytorch).
/// A zip archive (a PyTorch checkpoint, a `.npz`) rawzip cannot read (no end of central directory, a truncated or malformed directory or local header, a member past the end of the file, more than `MAX_MEMBERS` members), or a member of a kind ztfs does not read: encrypted, or compressed where it must be mapped (`torch.save` stores every member) or by another method than deflate.
Zip,
/// The archive is not `torch.save`'s layout: no `ARCHIVE/data.pkl`, members under more than one top folder, a storage's `ARCHIVE/data/KEY` missing or of another size than its id says, `byteorder` other than `little`; or it is a TorchScript archive (`constants.pkl`, `code/`), whose code ztfs does not run.
TorchArchive,
/// `data.pkl` is not a pickle this reader interprets: an opcode outside protocols 2-5's that build values (or one that calls code: `INST`, `OBJ`, `NEWOBJ`, `EXT*`, out-of-band buffers), truncated, a stack or memo misuse, a value of the wrong kind for an opcode, or a limit passed (`MAX_OBJECTS`, `MAX_CELLS`, `MAX_MEMO`, `MAX_MARKS`, `MAX_DEPTH`).
TorchPickle,
/// A global outside the allowlist `torch.load(weights_only=True)` keeps for state dicts (`os.system`, `builtins.eval`, any class of the program's): refused by name, never looked up; or an allowed one called in a way it does not build a state dict's value.
TorchGlobal,
/// A tensor ztfs cannot serve as the file says it: a dtype with no zTensor type (complex128, quantized), a size or stride that is not a tuple of small non-negative ints, or elements past the end of its storage.
TorchTensor,
// ONNX models (`ModelProto`, onnx.proto; src/format/onnx).
/// The bytes are not protobuf: a truncated field, a varint past 10 bytes, a length past the end of its message, wire type 6 or 7, an unmatched group, groups nested past 32 deep (protobuf's encoding guide; every protobuf parser refuses these).
OnnxProtobuf,
/// Not a model ONNX's readers load: no graph, subgraphs nested past `MAX_GRAPH_DEPTH`, a non-UTF-8 string, a negative dim, `data_location` neither DEFAULT nor EXTERNAL, external data with no `location` or a non-numeric `offset`/`length`, a tensor with no name, or a file of 2 GiB or more (protobuf's limit on a message, which onnx.proto's comments state for a model).
OnnxModel,
/// Two tensors of the model with one name: two initializers, or an initializer and a `Constant` output, in one graph (onnx.checker: a graph is in SSA form) or across a graph and its subgraphs (a tree has one object a name).
OnnxDuplicate,
/// A tensor's bytes are not its dims times its type's width: `raw_data`, an external `length`, the values of its typed field, or no data at all for a tensor with elements (onnx.numpy_helper.to_array refuses each).
OnnxLength,
/// An external data `location` that leaves the model's folder: absolute, holding a `..` component or a NUL, or through a symlink leading outside (onnx's `_validate_external_data_path` refuses the first three).
OnnxExternalPath,
/// An external data file that is not there, or not a regular file.
OnnxExternalMissing,
/// An external tensor's `offset` plus its bytes past the end of its file.
OnnxExternalRange,
// OpenVINO IR (`model.xml` + `model.bin`; src/format/openvino).
/// `model.xml` is not an IR this reader takes: not UTF-8 or well-formed XML, a DOCTYPE or an unknown entity, limits passed (size, depth, elements, attributes), no `<net>` of version 10 or 11, a layer without `id`, `name`, `type` or `version`, a Const without `element_type`, `shape`, `offset` or `size` or with one that is not a whole number, a `size` other than the bytes its shape and element type take, a shape that disagrees with its port's dims, a layer id twice in a graph, an edge to a missing layer (OpenVINO's IR deserializer).
OpenVinoXml,
/// A Const's bytes (`offset` + `size`) end past the end of the `.bin`.
OpenVinoConst,
/// The `.bin` beside `model.xml` (its name with `.bin`) is not there, or not a regular file.
OpenVinoBin,
}

impl Rule {
    /// Parses a rule name as printed by [`Rule::name`].
    pub fn from_name(s: &str) -> Option<Rule> {
        Rule::ALL.iter().copied().find(|r| r.name() == s)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Everything that can go wrong in ztfs.
#[derive(Debug)]
pub enum Error {
    /// The file breaks a MUST of the format and is rejected.
    Reject { rule: Rule, detail: String },
    /// The file is valid, but this reader will not interpret something it
    /// holds: an unknown encoding, logical type, layout or digest algorithm.
    /// A refusal, never a reinterpretation (§4.2, §5.2, §5.3).
    Unsupported(String),
    /// A name the caller asked for does not exist.
    NotFound(String),
    /// A read of bytes past the end of what holds them (a file, a blob,
    /// an object by URL): the bytes are not there, which is not a refusal
    /// to interpret them. The text says what and where.
    OutOfRange(String),
    /// A file that is not zTensor v2 but is recognisably something else.
    Foreign(String),
    /// The caller asked for something that makes no sense.
    Usage(String),
    /// The operating system failed us.
    Io {
        context: String,
        source: std::io::Error,
    },
    /// An error about `file` (a path or a URL, as shown): said after its
    /// name, which the command line then does not put first again.
    At { file: String, error: Box<Error> },
    /// An error that has already been printed; only its exit code remains.
    Reported(Box<Error>),
    /// Work abandoned because nobody waits for its result any more (a
    /// mount's reader that gave up).
    Interrupted,
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A rejection under `rule`.
    pub fn reject(rule: Rule, detail: impl Into<String>) -> Error {
        Error::Reject {
            rule,
            detail: detail.into(),
        }
    }

    /// True for an open refused for the limit on open files
    /// ([`crate::sys::is_open_limit`]): every other open would meet it too.
    pub fn is_open_limit(&self) -> bool {
        match self {
            Error::Io { source, .. } => crate::sys::is_open_limit(source),
            Error::At { error, .. } | Error::Reported(error) => error.is_open_limit(),
            Error::Reject { .. }
            | Error::Unsupported(_)
            | Error::NotFound(_)
            | Error::OutOfRange(_)
            | Error::Foreign(_)
            | Error::Usage(_)
            | Error::Interrupted => false,
        }
    }

    /// An I/O error with what we were doing.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// `error`, about `file` (a path or a URL, as shown).
    pub fn at(file: impl Into<String>, error: Error) -> Error {
        Error::At {
            file: file.into(),
            error: Box::new(error),
        }
    }

    /// The file the error names itself: an I/O error's, or one given by
    /// [`Error::at`]. The command line puts its model's name before an
    /// error about anything else.
    pub fn about(&self) -> Option<&str> {
        match self {
            Error::Io { context, .. } => Some(context),
            Error::At { file, .. } => Some(file),
            Error::Reported(e) => e.about(),
            Error::Reject { .. }
            | Error::Unsupported(_)
            | Error::NotFound(_)
            | Error::OutOfRange(_)
            | Error::Foreign(_)
            | Error::Usage(_)
            | Error::Interrupted => None,
        }
    }

    /// The error itself, without the file it is about or its having been
    /// reported: what its kind is.
    pub fn kind(&self) -> &Error {
        match self {
            Error::At { error, .. } | Error::Reported(error) => error.kind(),
            e => e,
        }
    }

    /// The rule, when this is a rejection.
    pub fn rule(&self) -> Option<Rule> {
        match self {
            Error::Reject { rule, .. } => Some(*rule),
            Error::At { error, .. } => error.rule(),
            Error::Reported(e) => e.rule(),
            _ => None,
        }
    }

    /// The message without its kind ("rejected (Rule): ", "refused: ").
    pub fn detail(&self) -> String {
        match self {
            Error::Reject { detail, .. } => detail.clone(),
            Error::Unsupported(s)
            | Error::NotFound(s)
            | Error::OutOfRange(s)
            | Error::Foreign(s)
            | Error::Usage(s) => s.clone(),
            Error::Io { context, source } => format!("{context}: {source}"),
            Error::At { file, error } => format!("{file}: {}", error.detail()),
            Error::Reported(e) => e.detail(),
            Error::Interrupted => "interrupted".into(),
        }
    }

    /// The kind's name in the error's JSON form: `rejected`, `refused`
    /// (unsupported), `foreign`, `not_found`, `out_of_range`, `usage`,
    /// `io`, `interrupted`.
    pub fn kind_name(&self) -> &'static str {
        match self.kind() {
            Error::Reject { .. } => "rejected",
            Error::Unsupported(_) => "refused",
            Error::Foreign(_) => "foreign",
            Error::NotFound(_) => "not_found",
            Error::OutOfRange(_) => "out_of_range",
            Error::Usage(_) => "usage",
            Error::Io { .. } => "io",
            Error::At { .. } | Error::Reported(_) | Error::Interrupted => "interrupted",
        }
    }

    /// The error as one JSON object, for programs that drive the command
    /// line (`ZTFS_ERROR_FORMAT=json`; the Python package): its kind, rule,
    /// message as printed, the detail without its kind, the file it is
    /// about and the exit code.
    pub fn to_json(&self, file: Option<&str>) -> String {
        serde_json::json!({
            "error": self.kind_name(),
            "rule": self.rule().map(Rule::name),
            "message": self.to_string(),
            "detail": self.detail(),
            "file": self.about().or(file),
            "exit_code": self.exit_code(),
        })
        .to_string()
    }

    /// The process exit code for this error: 1 for a file that is rejected
    /// or refused, 2 for usage and I/O.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Reject { .. } => 1,
            Error::Unsupported(_) => 1,
            Error::Foreign(_) => 1,
            // Asking for an object the file does not have is the caller's mistake.
            Error::NotFound(_) => 2,
            Error::OutOfRange(_) => 2,
            Error::Usage(_) => 2,
            Error::Io { .. } => 2,
            Error::At { error, .. } => error.exit_code(),
            Error::Reported(e) => e.exit_code(),
            // Never reaches the command line; a usage-class code if it did.
            Error::Interrupted => 2,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Reject { rule, detail } => write!(f, "rejected ({rule}): {detail}"),
            Error::Unsupported(s) => write!(f, "refused: {s}"),
            Error::NotFound(s) => write!(f, "not found: {s}"),
            Error::OutOfRange(s) => f.write_str(s),
            Error::Foreign(s) => f.write_str(s),
            Error::Usage(s) => f.write_str(s),
            Error::Io { context, source } => write!(f, "{context}: {source}"),
            Error::At { file, error } => write!(f, "{file}: {error}"),
            Error::Reported(e) => e.fmt(f),
            Error::Interrupted => f.write_str("interrupted: nobody waits for the result"),
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error about a file says the file once, keeps its kind, rule and
    /// exit code, and tells the command line which file it named.
    #[test]
    fn an_error_at_a_file_names_it_and_keeps_its_kind() {
        let e = Error::at("u", Error::Unsupported("too big".into()));
        assert_eq!(e.to_string(), "u: refused: too big");
        assert_eq!(e.detail(), "u: too big");
        assert_eq!((e.about(), e.exit_code()), (Some("u"), 1));
        assert!(matches!(e.kind(), Error::Unsupported(_)));
        let e = Error::Reported(Box::new(Error::at(
            "m.zt",
            Error::reject(Rule::HeaderMagic, "x"),
        )));
        assert_eq!(
            (e.about(), e.rule()),
            (Some("m.zt"), Some(Rule::HeaderMagic))
        );
        let io = Error::io("m.zt", std::io::Error::from_raw_os_error(libc::ENOENT));
        assert_eq!(io.about(), Some("m.zt"));
        assert_eq!(Error::Usage("x".into()).about(), None);
    }

    /// The JSON form keeps the kind, rule and file through the wrappers.
    #[test]
    fn the_json_form_names_kind_rule_and_file() {
        let e = Error::Reported(Box::new(Error::at(
            "m.zt",
            Error::reject(Rule::HeaderMagic, "x"),
        )));
        let v: serde_json::Value = serde_json::from_str(&e.to_json(None)).unwrap();
        assert_eq!(v["error"], "rejected");
        assert_eq!(v["rule"], "HeaderMagic");
        assert_eq!(v["message"], "m.zt: rejected (HeaderMagic): x");
        assert_eq!(
            (v["file"].as_str(), v["exit_code"].as_i64()),
            (Some("m.zt"), Some(1))
        );
        let v: serde_json::Value =
            serde_json::from_str(&Error::Foreign("a gzip file".into()).to_json(Some("f"))).unwrap();
        assert_eq!(
            (v["error"].as_str(), v["file"].as_str()),
            (Some("foreign"), Some("f"))
        );
        assert!(v["rule"].is_null());
    }

    /// The rule names of the documentation's tables: the first cell of a
    /// table row that holds only names in backticks (`` `HeaderMagic` /
    /// `FooterMagic` ``), in README.md and every page under docs/.
    fn documented() -> Vec<(String, String)> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut pages = vec![root.join("README.md")];
        let mut dirs = vec![root.join("docs")];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.extension().is_some_and(|x| x == "md") {
                    pages.push(p);
                }
            }
        }
        let mut names = Vec::new();
        for page in pages {
            let text = std::fs::read_to_string(&page).unwrap();
            for line in text.lines() {
                let Some(cell) = line.strip_prefix("| ").and_then(|l| l.split(" |").next()) else {
                    continue;
                };
                let words: Vec<&str> = cell
                    .split([' ', '/', ','])
                    .filter(|w| !w.is_empty())
                    .collect();
                let names_only = words.iter().all(|w| {
                    let inner = w.strip_prefix('`').and_then(|w| w.strip_suffix('`'));
                    inner.is_some_and(|n| {
                        // CamelCase: a rule, not a dtype (`F32`).
                        n.starts_with(|c: char| c.is_ascii_uppercase())
                            && n.chars().any(|c| c.is_ascii_lowercase())
                            && n.chars().all(|c| c.is_ascii_alphanumeric())
                    })
                });
                if names_only && !words.is_empty() {
                    let where_ = page.file_name().unwrap().to_string_lossy().into_owned();
                    names.extend(
                        words
                            .iter()
                            .map(|w| (w.trim_matches('`').to_string(), where_.clone())),
                    );
                }
            }
        }
        names
    }

    #[test]
    fn every_rule_is_documented_and_every_documented_rule_exists() {
        let documented = documented();
        let unknown: Vec<&(String, String)> = documented
            .iter()
            .filter(|(n, _)| Rule::from_name(n).is_none())
            .collect();
        assert!(unknown.is_empty(), "documented but not rules: {unknown:?}");
        let missing: Vec<&str> = (Rule::ALL.iter())
            .map(|r| r.name())
            .filter(|n| !documented.iter().any(|(d, _)| d == n))
            .collect();
        assert!(
            missing.is_empty(),
            "rules in no table of the documentation: {missing:?}"
        );
    }

    #[test]
    fn names_are_unique_and_parse_back() {
        let mut seen = std::collections::HashSet::new();
        for &r in Rule::ALL {
            assert!(seen.insert(r.name()), "{} twice", r.name());
            assert_eq!(Rule::from_name(r.name()), Some(r));
        }
    }
}
