"""Interoperability check: ztfs against the public zTensor implementation.

The public implementation is the PyPI package `ztensor` 2.1.2 (a compiled
wheel of the upstream Rust crate). Run this with the interpreter of the
virtual environment that scripts/venv.sh makes; scripts/interop.sh does both.

Two directions:

  forward   The package writes files (every dtype, logical types, scalar and
            zero-size shapes, nested attributes, canonical and non-canonical
            placement, zstd-seekable parts, tied tensors, 500 tensors, odd
            names, appended generations, streamed and converted files). For
            each, `ztfs check`, `ztfs check --verify`, `ztfs cat` of every
            part, `ztfs digest` (sha256 and xxh3) and `ztfs ls --json` must
            agree with what the package says. The package has no content
            digest (spec §6.4), so this script computes it from the package's
            view of the file (names, shapes, layouts, dtypes, logical types
            and decoded bytes) plus the object attributes and part digests
            read from the manifest, with its own deterministic CBOR encoder.
            That encoder is checked against the package's: every manifest
            the package writes must re-encode to the same bytes.
            A few files the package writes are broken on purpose (or by a
            package bug), and both readers must then reject them.

  mount     Each of those files is also mounted (`ztfs mount FILE MNT` on a
            fresh temporary directory, always released by `ztfs unmount`
            in a finally, also on Ctrl-C/SIGTERM). Object directories are
            found by the true name in their meta.json; for every part the
            decoded file is read by random-offset preads (first, so they
            reach the daemon rather than the page cache), Python mmap and a
            whole read, each compared with the package's bytes; `.raw`
            files with the stored bytes; a part `ztfs cat` refuses must be
            refused in meta.json too. MNT/manifest.json must equal `ztfs
            manifest`, MNT/digest `ztfs digest` (absent when that exits 1).
            A file ztfs rejects must not mount.

  shards    The package cannot write a multi-file model (see zt/sharded.py),
            so this script assembles one: a root it writes itself (local
            blobs copied from a package file, a shard table, deterministic
            CBOR manifest, footer), two package-written files as shards and
            a data shard. The package must open it (positionally) and read
            each object as the bytes of the file it came from, and its deep
            verify must pass; then the root gets every forward check above.
            Renamed (found by size and digest, beside a same-size decoy and
            a wrong file under a positional name) it must still agree, and
            the package's single-file ingest of it must have the same
            content digest.
            ztfs may refuse (exit 1, "refused") to decode a part of a
            non-dense layout or of an unregistered logical type, as the spec
            allows; `ztfs cat --raw` must then give the stored bytes. Any
            other refusal of a part the package decodes is a failure.

  reverse   Every corpus file is opened with the package. Valid files must
            open, read and verify there too; reject files must not be
            accepted. Known, documented differences between the package and
            ztfs are listed in KNOWN_DIFFERENCES (zt/known.py), each with the
            reason from /work/shared/spec/IMPLEMENTER-NOTES.md; anything
            else fails.

The package's API, as found (ztensor 2.1.2; there is nothing else):

  Writer(path, canonical=True, align=None, publish=False, append=False)
      .add(name, data, shape, dtype, logical=None, encoding=None)   dense
      .add_object(name, shape, {part: {dtype, data, logical?, encoding?}},
                  layout="dense", attributes=None)                  any layout
      .stream(name, shape, {part: {dtype, nbytes, ...}}, ...) -> Sink
      .set_attributes(dict)  .ingest(Source)  .finish()  .abandon()
    `data` is any buffer of bytes (numpy arrays must be viewed as uint8).
    canonical=True (the default) means 64 KiB placement, sorted insertion,
    NFC names and no encodings; compression needs canonical=False and
    encoding="zt.zstd-seekable/1". Every part gets an xxh3 digest, and
    byte-identical parts share one blob, canonical or not.
  open(path) / index(path) -> Source, a mapping name -> Tensor; .attributes
      (file attributes; object attributes are not exposed), .verify(deep)
      -> (checked, undigested).
  Tensor: .shape .dtype .logical .layout .parts; t[part].tobytes() gives a
      part's decoded bytes whatever the layout; .verify().
  convert(src, dst, align=None), verify(path), ztensor.numpy.save_file.
  Errors are ValueError "rejected (Rule): ..." or "unsupported: ...", and
  OSError for a missing shard. No content digest (§6.4) anywhere.

Exit status: 0 when everything agrees, 1 on any disagreement, 2 on usage
errors. The last line is "interop: N passed, N failed".

The package, one job a module (each imports only those listed before it);
the shared modules at the top, then a subpackage per --suite:

  cbor        deterministic CBOR encoder, strict decoder
  container   the container read directly; the spec's shared names
  results     pass/fail/note counting and printing
  ztfs        running the ztfs binary
  package     what the PyPI package makes of a file
  content     the §6.4 content digest from the package's view
  facts       facts read from a corpus file, for the allowlist
  mount       the mount check
  zt/         --suite zt
    known       the allowlist (KNOWN_DIFFERENCES)
    generate    files written with the package
    sharded     the multi-file model assembled around package files
    forward     package-written files through ztfs
    mutations   broken copies both readers must reject
    corpus      the corpus through the package (reverse)
  hurray/     --suite hurray
    parse       an HRRYFILE read directly: placement facts, CRC-32C
    layouts     layout buffers built from numpy arrays (spec address functions)
    gen         files written with pyhurray, with JSON sidecars
    cli         the ztfs command spellings for a Hurray file (one place)
    known       the Hurray allowlist (pyhurray refusing valid corpus files)
    check       Hurray forward (ztfs check/ls/cat/mount) and reverse
  views/      --suite views
    model       a mounted model's object directories and `ztfs cat` bytes
    npy         the .npy files of a mount (numpy, np.save)
    safetensors its safetensors view (safetensors package, save_file)
    sharded     sharded safetensors views, and the model that must shard
    check       the views suite: which files, mounting, calling the checks
  safetensors/  --suite safetensors
    sharded     sharded checkpoints written with save_file, through ztfs
    check       safetensors files as input: save_file's files through ztfs, and
                the safetensors corpus through safe_open
  gguf/       --suite gguf
    check       GGUFWriter files through ztfs, reject files through GGUFReader
  pack/       --suite pack
    common      the shared pieces: running `ztfs pack`, sources as their own
                readers give them, the checks of every packed file
    corpus      every valid corpus file packed and compared with ztensor.convert
    options     --zstd, --frame-size, --digest, --align, --shard-size on a generated file
    gguf        GGUF key-values of every type through pack and convert
    npy         .npy files of every dtype packed together
    checkpoint  sharded checkpoints packed
    check       the pack suite: its order, and the mount of a packed model
  main        argument parsing and the run; __main__ calls it

Hurray (--suite hurray runs only this): pyhurray 0.1.0 writes files
covering its whole writing API, each with a sidecar of expected bytes
(hurray/gen.py); ztfs must check, list, cat and mount them
(hurray/check.py); every corpus/hurray/valid/ file must load in pyhurray.

GGUF (--suite gguf runs only this): gguf-py 0.19.0's GGUFWriter writes
files (KVs of several types, arrays and tokenizer tables, F32/F16/Q8_0/Q4_0
tensors, alignments 32, 64, 256); `ztfs cat` must give GGUFReader's tensor
bytes, `ztfs manifest` its fields (types, values, order) and tensor infos,
a mount the same bytes and `.npy` arrays equal to the reader's (dtype and
shape); every corpus/gguf/reject file must be refused by GGUFReader, except
the ones gguf.check.READER_ACCEPTS lists with the reason.

Views (--suite views runs only this): every corpus/valid, Hurray valid,
GGUF valid and sample file, and a package-written model of edge cases, is mounted; each `.npy` file meta.json announces (and no
other) must load with np.load, plain and mmapped, as the announced dtype
and shape with the bytes of the file beside it and of `ztfs cat`, and
match np.save's data; `model.safetensors` must parse (4096-aligned header,
contiguous tensors), hold exactly the objects meta.json announces with the
cat bytes, name the left-out ones in `ztfs.left_out`, load with
safetensors.safe_open and match save_file's data. bf16/f8 files again with
`--npy-dtypes ml` after `import ml_dtypes`; a sample with a small
`--safetensors-header-max` and a generated model whose header passes
100 MB must shard and load as transformers loads a sharded checkpoint.

safetensors input (--suite safetensors runs only this): a file of every
dtype safetensors.numpy.save_file writes (scalars, empty tensors,
metadata) must check, give its header as `ztfs manifest`, and read the
same bytes through `ztfs cat`, the mount's `data` and np.load of
`data.npy`; every corpus/safetensors file must open in safe_open exactly
when ztfs opens it, but for the documented decisions (safetensors.check.KNOWN).

pack (--suite pack runs only this): every valid corpus file (safetensors,
GGUF, zTensor, samples) that `ztfs check` accepts is packed with `ztfs
pack`; the output must pass the package's deep verify and `ztfs check
--verify`, have the content digest computed here (content.py), read back
through the package as the source's own reader reads it, and be
byte-identical to `ztensor.convert`'s output wherever that converts too.
Refusals only as pack.corpus.REFUSED lists them, convert's refusals only
as CONVERT_REFUSES does. Options (--zstd [LEVEL], --frame-size, --digest,
--align, --shard-size) on a generated file: same content digest, same
tensors, compressed only where smaller, tied tensors in one blob,
deterministic bytes. GGUF key-values of every type: pack and convert
byte-identical, attributes as written. A packed model mounted: its
model.safetensors loads in safe_open with the source's bytes.

Run it as `python -m interop` with scripts/ on the path (scripts/interop.sh
does that).
"""

import sys

# The one precondition every module relies on, checked before any of them
# is imported.
try:
    import numpy  # noqa: F401
    import xxhash  # noqa: F401
    import ztensor  # noqa: F401
    import ztensor.numpy  # noqa: F401
    import hurray  # noqa: F401
    import safetensors  # noqa: F401
except ImportError as e:  # pragma: no cover - environment problem
    sys.stderr.write(
        f"interop: {e}; run this with the venv python (scripts/venv.sh)\n"
    )
    sys.exit(2)
