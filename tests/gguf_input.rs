//! GGUF files through the real binary and the real mount: every valid GGUF
//! file of the corpus mounted, each tensor's `data` equal to `ztfs cat`
//! and to its bytes in the file (located independently from the tensor
//! info of `manifest.json`), `.npy` for the unquantized types, the shape
//! reversed from the GGUF dims, `manifest.json` equal to `ztfs manifest`,
//! no `digest`; `ls -l`; every rejected GGUF file refused before
//! anything is mounted; a split model of more files than the open-file
//! limit allows.

mod common;
#[allow(dead_code)]
#[path = "corpus/gguf/writer.rs"]
mod writer;

use std::fs;
use std::path::{Path, PathBuf};

use common::*;

fn gguf_rows(open: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    rows()
        .iter()
        .filter(|r| r.dir.starts_with("gguf/") && open(&r.open))
        .map(Row::path)
        .collect()
}

fn check_gguf_mount(file: &Path) {
    let bytes = fs::read(file).unwrap();
    // A split model's tensors are in the file its info names.
    let split_file = |info: &json::Json| -> Vec<u8> {
        if info["split"].is_null() {
            return bytes.clone();
        }
        let doc =
            json::Json::parse(&String::from_utf8(ztfs_ok(&[Path::new("manifest"), file])).unwrap());
        let name = doc["split_files"].items()[info["split"].uint() as usize]
            .text()
            .to_string();
        fs::read(file.with_file_name(name)).unwrap()
    };
    let m = Mount::new(file, &[]);
    let manifest = fs::read(m.join("manifest.json")).unwrap();
    assert_eq!(manifest, ztfs_ok(&[Path::new("manifest"), file]));
    assert!(!m.join("digest").exists(), "a GGUF mount has no digest");
    let doc = json::Json::parse(std::str::from_utf8(&manifest).unwrap());
    assert_eq!(doc["format"].text(), "gguf");
    let infos = doc["tensors"].items();
    let dirs = object_dirs(&m);
    assert_eq!(dirs.len(), infos.len(), "one directory per tensor");
    for info in infos {
        let name = info["name"].text();
        let dir = m.join(&dirs[name]);
        let (start, len) = (
            info["file_offset"].uint() as usize,
            info["length"].uint() as usize,
        );
        let holder = split_file(info);
        let want = &holder[start..start + len];
        let data = fs::read(dir.join("data")).unwrap();
        assert_same(&data, want, &format!("{name}: data vs the file"));
        assert_same(
            &cat(file, name, "data", false).unwrap(),
            want,
            &format!("{name}: cat"),
        );
        let meta = meta(&dir);
        let dims: Vec<u64> = info["dims"].items().iter().map(|d| d.uint()).collect();
        let shape: Vec<u64> = meta["shape"].items().iter().map(|d| d.uint()).collect();
        assert_eq!(
            shape,
            dims.iter().rev().copied().collect::<Vec<_>>(),
            "{name}: shape"
        );
        assert_eq!(meta["ggml_type"].text(), info["type"].text());
        let quantized = info["block_elems"].uint() > 1 || info["type"].text().starts_with("tq");
        let npy = fs::read(dir.join("data.npy")).unwrap_or_else(|e| panic!("{name}: {e}"));
        if quantized {
            // A quantized tensor's data.npy is its values: f32 in its
            // shape, the bytes of its `dequantized` file and of `cat
            // --values` (against gguf-py in the interop suite).
            assert!(meta["layout"].text().starts_with("gguf."), "{name}");
            let values = fs::read(dir.join("dequantized")).unwrap();
            let count: u64 = dims.iter().product();
            assert_eq!(values.len() as u64, count * 4, "{name}");
            let (header, payload) = npy.split_at(npy.len() - values.len());
            assert!(payload == values, "{name}: data.npy payload");
            let header = String::from_utf8_lossy(header).into_owned();
            let shape: Vec<String> = dims.iter().rev().map(u64::to_string).collect();
            let shape = match shape.len() {
                1 => format!("({},)", shape[0]),
                _ => format!("({})", shape.join(", ")),
            };
            assert!(header.contains("'descr': '<f4'"), "{name}: {header}");
            assert!(
                header.contains(&format!("'shape': {shape}")),
                "{name}: {header}"
            );
            assert!(cat_values(file, name) == values, "{name}: cat --values");
            assert_eq!(
                meta["values"]["dequantized_from"].text(),
                info["type"].text()
            );
            assert_eq!(meta["values"]["npy"].text(), "data.npy");
            assert!(
                meta["parts"].items()[0]["npy"].is_null(),
                "{name}: the blocks' .npy"
            );
        } else {
            assert_eq!(&npy[npy.len() - len..], want, "{name}: .npy payload");
            assert_eq!(meta["layout"].text(), "dense");
            assert!(!dir.join("dequantized").exists(), "{name}");
        }
        assert!(!dir.join("data.raw").exists(), "{name}: no .raw file");
    }
}

#[test]
fn every_valid_gguf_file_mounts_and_serves_its_bytes() {
    let files = gguf_rows(|o| o == "valid");
    assert!(files.len() >= 8, "{files:?}");
    for f in files {
        check_gguf_mount(&f);
    }
}

#[test]
fn rejected_gguf_files_are_not_mounted() {
    let m = Mount::unmounted();
    for f in gguf_rows(|o| o.starts_with("reject:")) {
        let out = m.mount(&f, &[]);
        assert_eq!(out.status.code(), Some(1), "{}", f.display());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("rejected (Gguf"), "{}: {err}", f.display());
        assert!(!is_mounted(m.path()), "{}", f.display());
    }
}

#[test]
fn ls_long_names_ggml_types_and_shapes() {
    let f = corpus().join("gguf/valid/basic.gguf");
    let out = String::from_utf8(ztfs_ok(&[Path::new("ls"), Path::new("-l"), &f])).unwrap();
    let line = |name: &str| {
        out.lines()
            .find(|l| l.ends_with(&format!(" {name}")))
            .unwrap_or_else(|| panic!("{name} in {out}"))
            .to_string()
    };
    assert!(line("token_embd.weight").contains("[2, 3]"), "{out}");
    assert!(line("blk.0.q4_k").contains("gguf.q4_k/1"), "{out}");
    assert!(line("blk.0.q8_0").contains("q8_0"), "{out}");
    let check = ztfs(&[Path::new("check"), Path::new("--verify"), &f]);
    assert!(check.status.success());
    let digest = ztfs(&[Path::new("digest"), &f]);
    assert_eq!(digest.status.code(), Some(1));
    let shard = ztfs(&[
        Path::new("check"),
        Path::new("--shard"),
        Path::new("a=b"),
        &f,
    ]);
    assert_eq!(shard.status.code(), Some(2));
}

#[test]
fn manifest_keeps_kv_types_and_order() {
    let f = corpus().join("gguf/valid/basic.gguf");
    let doc = json::Json::parse(&String::from_utf8(ztfs_ok(&[Path::new("manifest"), &f])).unwrap());
    let kv = doc["kv"].items();
    let types: Vec<&str> = kv.iter().map(|e| e["type"].text()).collect();
    assert_eq!(
        types,
        [
            "string",
            "string",
            "uint8",
            "int8",
            "uint16",
            "int16",
            "uint32",
            "int32",
            "float32",
            "bool",
            "uint64",
            "int64",
            "float64",
            "array<string>",
            "array<float32>",
            "array<array>",
            "array<int32>"
        ]
    );
    assert_eq!(kv[10]["value"].uint(), u64::MAX);
    let tokens: Vec<&str> = kv[13]["value"].items().iter().map(|t| t.text()).collect();
    assert_eq!(tokens, ["<s>", "</s>", "é", ""]);
    let split = corpus().join("gguf/valid/split-file.gguf");
    let out = ztfs(&[Path::new("check"), &split]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("split"));
}

/// A GGUF header of `tensors` tensors and `kv` KVs, then `rest`.
fn gguf_head(tensors: u64, kv: u64, rest: &[u8]) -> Vec<u8> {
    let mut b = b"GGUF".to_vec();
    b.extend_from_slice(&3u32.to_le_bytes());
    b.extend_from_slice(&tensors.to_le_bytes());
    b.extend_from_slice(&kv.to_le_bytes());
    b.extend_from_slice(rest);
    b
}

#[test]
fn a_sparse_1_tib_file_with_huge_counts_is_rejected_not_a_crash() {
    // An array KV "a" of 2^36 strings: within 1 TiB at 8 bytes each.
    let mut array = 1u64.to_le_bytes().to_vec();
    array.extend_from_slice(b"a");
    array.extend_from_slice(&9u32.to_le_bytes());
    array.extend_from_slice(&8u32.to_le_bytes());
    array.extend_from_slice(&(1u64 << 36).to_le_bytes());
    let cases = [
        ("kv count", gguf_head(0, 1 << 36, &[]), "GgufKv"),
        ("tensor count", gguf_head(1 << 35, 0, &[]), "GgufTensorInfo"),
        ("array count", gguf_head(0, 1, &array), "GgufCount"),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (what, head, rule) in cases {
        let path = dir.path().join("sparse.gguf");
        fs::write(&path, &head).unwrap();
        fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(1 << 40)
            .unwrap();
        let out = ztfs(&[Path::new("check"), &path]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{what}: {err}");
        assert!(err.contains(&format!("rejected ({rule})")), "{what}: {err}");
    }
}

/// A split model opened from its first file whose last file is missing is
/// not opened: the error names the file (an I/O error, exit 2, as for a
/// sharded checkpoint's missing file). A later file is read alone, with
/// the note.
#[test]
fn a_split_model_missing_a_file_is_not_opened() {
    let src = corpus().join("gguf/split/usual");
    let dir = tempfile::tempdir().unwrap();
    for n in ["m-00001-of-00003.gguf", "m-00002-of-00003.gguf"] {
        fs::copy(src.join(n), dir.path().join(n)).unwrap();
    }
    let out = ztfs(&[
        Path::new("check"),
        &dir.path().join("m-00001-of-00003.gguf"),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("m-00003-of-00003.gguf"), "{err}");
    let out = ztfs(&[Path::new("check"), &src.join("m-00002-of-00003.gguf")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("read alone"), "{err}");
    let out = ztfs(&[Path::new("ls"), &src.join("m-00001-of-00003.gguf")]);
    assert!(out.status.success());
    let listed = String::from_utf8_lossy(&out.stdout);
    for t in ["token_embd.weight", "blk.0.ffn_up.weight", "output.weight"] {
        assert!(listed.contains(t), "{t} in {listed}");
    }
}

/// A split model of `count` files in `dir`, each one f32 tensor `tNO` of
/// four values: the first file's path.
fn write_split(dir: &Path, count: u16) -> PathBuf {
    use writer::{pattern, str_v, Gguf, V};
    for no in 0..count {
        let mut g = Gguf::new();
        if no == 0 {
            g = g.kv("general.architecture", str_v("llama"));
        }
        let g = g
            .kv("split.no", V(2, no.to_le_bytes().to_vec()))
            .kv("split.count", V(2, count.to_le_bytes().to_vec()))
            .kv(
                "split.tensors.count",
                V(5, i32::from(count).to_le_bytes().to_vec()),
            )
            .tensor(&format!("t{no}"), &[4], 0, &pattern(16, no as u8));
        let name = format!("m-{:05}-of-{count:05}.gguf", no + 1);
        fs::write(dir.join(name), g.bytes()).unwrap();
    }
    dir.join(format!("m-00001-of-{count:05}.gguf"))
}

/// `ztfs ARGS...` with the open-file limit lowered to `soft`, and the hard
/// limit to `hard` where given (`ulimit -Sn`, then `-Hn`: the soft limit
/// may not exceed the hard one).
fn ztfs_under_nofile(
    soft: u64,
    hard: Option<u64>,
    args: &[&std::ffi::OsStr],
) -> std::process::Output {
    let hard = hard.map_or(String::new(), |h| format!(" && ulimit -Hn {h}"));
    let script = format!("ulimit -Sn {soft}{hard} && exec \"$@\"");
    std::process::Command::new("sh")
        .args(["-c", &script, "sh", BIN])
        .args(args)
        .output()
        .unwrap()
}

/// A split model of 100 files, each held open, under a limit of 64 open
/// files (soft and hard) is refused saying so: the file count, the limit
/// and `ulimit -n`, exit 2; under a soft limit of 64 with a higher hard
/// one it opens, ztfs raising the soft limit to the hard at start.
#[test]
fn a_split_model_over_the_open_file_limit_says_how_to_raise_it() {
    let dir = tempfile::tempdir().unwrap();
    let first = write_split(dir.path(), 100);
    let args = [std::ffi::OsStr::new("check"), first.as_os_str()];
    let o = ztfs_under_nofile(64, Some(64), &args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    for said in [
        "too many open files",
        "100 files",
        "may open 64",
        "`ulimit -n 164`",
    ] {
        assert!(err.contains(said), "{said:?} in {err}");
    }

    // A hard limit of 256 (a lowering here; CI runs as root, which may
    // raise it too): never skipped.
    let o = ztfs_under_nofile(64, Some(256), &args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let ls = [std::ffi::OsStr::new("ls"), first.as_os_str()];
    let listed = ztfs_under_nofile(64, Some(256), &ls);
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert_eq!(listed.lines().count(), 100, "{listed}");
}

/// `ztfs cat --values` of a quantized tensor is its values as gguf-py
/// 0.19.0's `quants.dequantize` gives them, bit for bit: for every block
/// type, the blocks of tests/data/dequant (finite scales, then random
/// bytes with NaN and infinite scales; scripts/dequant-vectors.py) written
/// as a GGUF tensor, against gguf-py's output beside them.
#[test]
fn cat_values_of_every_block_type_is_gguf_pys() {
    use writer::Gguf;
    let ids = [
        ("q4_0", 2),
        ("q4_1", 3),
        ("q5_0", 6),
        ("q5_1", 7),
        ("q8_0", 8),
        ("q2_k", 10),
        ("q3_k", 11),
        ("q4_k", 12),
        ("q5_k", 13),
        ("q6_k", 14),
        ("iq2_xxs", 16),
        ("iq2_xs", 17),
        ("iq3_xxs", 18),
        ("iq1_s", 19),
        ("iq4_nl", 20),
        ("iq3_s", 21),
        ("iq2_s", 22),
        ("iq4_xs", 23),
        ("iq1_m", 29),
        ("tq1_0", 34),
        ("tq2_0", 35),
        ("mxfp4", 39),
        ("nvfp4", 40),
    ];
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/dequant");
    let sizes = fs::read_to_string(data.join("sizes.txt")).unwrap();
    let d = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for line in sizes.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (name, values): (&str, usize) = (f[0], f[1].parse().unwrap());
        let bytes: usize = f[2].parse().unwrap();
        let Some(&(_, id)) = ids.iter().find(|e| e.0 == name) else {
            continue;
        };
        let blocks = fs::read(data.join(format!("{name}.bin"))).unwrap();
        let want = fs::read(data.join(format!("{name}.f32"))).unwrap();
        let n = (blocks.len() / bytes * values) as u64;
        let g = Gguf::new().tensor("w", &[n], id, &blocks);
        let file = d.path().join(format!("{name}.gguf"));
        fs::write(&file, g.bytes()).unwrap();
        let got = cat_values(&file, "w");
        assert_eq!(got.len(), want.len(), "{name}");
        assert!(got == want, "{name}: values differ from gguf-py's");
        // Without --values: the blocks, byte for byte.
        assert_eq!(cat(&file, "w", "data", false).unwrap(), blocks, "{name}");
        checked += 1;
    }
    assert_eq!(checked, ids.len(), "every type of the vectors");
    // Q8_K, which gguf-py does not dequantize: ggml's d × q.
    let mut q8k = 2.0f32.to_le_bytes().to_vec();
    q8k.extend((0..256).map(|i| i as u8));
    q8k.extend([0; 32]);
    let g = Gguf::new().tensor("k", &[256], 15, &q8k);
    let file = d.path().join("q8_k.gguf");
    fs::write(&file, g.bytes()).unwrap();
    let want: Vec<u8> = (0..256)
        .flat_map(|i| (f32::from(i as u8 as i8) * 2.0).to_le_bytes())
        .collect();
    assert_eq!(cat_values(&file, "k"), want);
    // A dense tensor's values are its data.
    let g = Gguf::new().tensor("f", &[4], 0, &[1u8; 16]);
    let file = d.path().join("f32.gguf");
    fs::write(&file, g.bytes()).unwrap();
    assert_eq!(cat_values(&file, "f"), vec![1u8; 16]);
}

fn cat_values(file: &Path, tensor: &str) -> Vec<u8> {
    ztfs_ok(&[
        Path::new("cat"),
        Path::new("--values"),
        Path::new("--"),
        file,
        Path::new(tensor),
    ])
}

/// `pack --dequantize`: a float `.zt` whose quantized tensors are dense
/// tensors of their values (as `cat --values` gives them) and whose other
/// tensors are as they were; with `--to-folder`, a `model.safetensors`
/// holding them (without it the folder is refused); a tensor of a type
/// ztfs does not dequantize refuses the pack, naming it, while the mount
/// serves its blocks and says why it has no values.
#[test]
fn pack_dequantize_writes_the_values_and_refuses_what_it_cannot() {
    let src = corpus().join("gguf/valid/basic.gguf");
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("f32.zt");
    let s = |p: &Path| p.as_os_str().to_owned();
    ztfs_ok(&[
        s(Path::new("pack")),
        "--dequantize".into(),
        "f32".into(),
        "-o".into(),
        s(&out),
        s(&src),
    ]);
    ztfs_ok(&[s(Path::new("check")), "--verify".into(), s(&out)]);
    let listing = String::from_utf8(ztfs_ok(&[Path::new("ls"), Path::new("-l"), &out])).unwrap();
    for name in ["blk.0.q4_0", "blk.0.q4_k", "blk.0.q8_0", "blk.0.tq2_0"] {
        let line = listing
            .lines()
            .find(|l| l.ends_with(&format!(" {name}")))
            .unwrap();
        assert!(line.starts_with("dense") && line.contains("f32"), "{line}");
        assert!(
            cat(&out, name, "data", false).unwrap() == cat_values(&src, name),
            "{name}"
        );
    }
    assert_eq!(
        cat(&out, "f16", "data", false),
        cat(&src, "f16", "data", false)
    );

    // --to-folder: refused without --dequantize, written with it.
    let folder = d.path().join("folder");
    let args = |extra: &[&str]| {
        let mut a = vec![
            s(Path::new("pack")),
            s(&src),
            "--to-folder".into(),
            s(&folder),
        ];
        a.extend(extra.iter().map(|x| x.into()));
        a
    };
    let refused = ztfs(&args(&[]));
    assert_eq!(
        refused.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--dequantize"));
    ztfs_ok(&args(&["--dequantize", "bf16"]));
    let bytes = fs::read(folder.join("model.safetensors")).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let q4k = st.tensor("blk.0.q4_k").unwrap();
    assert_eq!(format!("{:?}", q4k.dtype()), "BF16");
    let values = cat_values(&src, "blk.0.q4_k");
    let want: Vec<u8> = values
        .chunks_exact(4)
        .flat_map(|b| {
            let v = f32::from_le_bytes(b.try_into().unwrap());
            ztfs::decode::dequant::narrow::bf16_bits(v).to_le_bytes()
        })
        .collect();
    assert!(q4k.data() == want);

    // Q1_0 (id 41): a block type ztfs reads but does not dequantize.
    let g = writer::Gguf::new().tensor("q1", &[128], 41, &[0x11; 18]);
    let q1 = d.path().join("q1.gguf");
    fs::write(&q1, g.bytes()).unwrap();
    let refused = ztfs(&[
        s(Path::new("pack")),
        "--dequantize".into(),
        "f32".into(),
        "-o".into(),
        s(&d.path().join("q1.zt")),
        s(&q1),
    ]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_ne!(refused.status.code(), Some(0), "{err}");
    assert!(err.contains("\"q1\"") && err.contains("q1_0"), "{err}");
    assert!(!d.path().join("q1.zt").exists());
    let m = Mount::new(&q1, &[]);
    let dir = m.join("q1");
    assert_eq!(fs::read(dir.join("data")).unwrap(), vec![0x11; 18]);
    assert!(!dir.join("dequantized").exists());
    let meta = meta(&dir);
    assert!(meta["values"].is_null());
    assert!(
        meta["no_values"].text().contains("q1_0"),
        "{:?}",
        meta["no_values"]
    );
}

/// A GGUF packed with `--zstd`: its quantized tensors' blocks are stored
/// compressed in the `.zt`, and their values are still there, the same as
/// the GGUF's (from the decoded part: `cat --values`, `pack --dequantize`;
/// a mount's `data.npy` in the interop suite, gguf/real.py).
#[test]
fn values_of_compressed_blocks_are_the_ggufs() {
    use writer::Gguf;
    // Q8_0 blocks that compress: a scale of 1.0 (f16), quants in a cycle.
    let blocks: Vec<u8> = (0..512)
        .flat_map(|b: u32| {
            let mut block = vec![0x00, 0x3c];
            block.extend((0..32).map(|i| ((b + i) % 7) as u8));
            block
        })
        .collect();
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("q.gguf");
    fs::write(
        &src,
        Gguf::new().tensor("w", &[512, 32], 8, &blocks).bytes(),
    )
    .unwrap();
    let zt = d.path().join("q.zt");
    let s = |p: &Path| p.as_os_str().to_owned();
    ztfs_ok(&[
        s(Path::new("pack")),
        "--zstd".into(),
        "-o".into(),
        s(&zt),
        s(&src),
    ]);
    let manifest = String::from_utf8(ztfs_ok(&[Path::new("manifest"), &zt])).unwrap();
    assert!(manifest.contains("zt.zstd-seekable/1"), "{manifest}");
    let want = cat_values(&src, "w");
    assert_eq!(want.len(), 512 * 32 * 4);
    assert!(
        cat_values(&zt, "w") == want,
        "cat --values of the compressed blocks"
    );
    // pack --dequantize reads them too.
    let f32s = d.path().join("f32.zt");
    ztfs_ok(&[
        s(Path::new("pack")),
        "--dequantize".into(),
        "f32".into(),
        "-o".into(),
        s(&f32s),
        s(&zt),
    ]);
    assert!(
        cat(&f32s, "w", "data", false).unwrap() == want,
        "pack --dequantize"
    );
}
