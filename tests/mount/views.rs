//! The legacy views through the real mount: every `.npy` file `meta.json`
//! announces, on every mountable corpus file (zTensor and Hurray), is a
//! numpy v1.0 header padded to a page followed by exactly the bytes of the
//! file beside it; `model.safetensors` deserialises with the reference
//! reader (the `safetensors` crate) and each tensor's bytes are its
//! object's data file; a lowered header limit serves shards and an index
//! a loader can follow.
//!
//! The numpy and Python safetensors loaders themselves are run by the
//! interop check (`scripts/interop`, suite `views`).

use crate::common;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use common::*;

/// Reads `path`; `Err` only for EIO (any other error fails the test).
fn read_or_eio(path: &Path) -> Result<Vec<u8>, ()> {
    match fs::read(path) {
        Ok(b) => Ok(b),
        Err(e) if e.raw_os_error() == Some(libc::EIO) => Err(()),
        Err(e) => panic!("{}: {e}", path.display()),
    }
}

/// The Python tuple numpy writes for `shape`.
fn tuple(shape: &[u64]) -> String {
    match shape {
        [d] => format!("({d},)"),
        _ => {
            let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
            format!("({})", dims.join(", "))
        }
    }
}

/// One `.npy` file against its announcement and the file beside it.
fn check_npy(dir: &Path, npy: &Json, beside: &str) {
    let path = dir.join(npy["file"].text());
    let what = path.display().to_string();
    let (got, want) = (read_or_eio(&path), read_or_eio(&dir.join(beside)));
    let (got, want) = match (got, want) {
        (Ok(g), Ok(w)) => (g, w),
        (Err(()), Err(())) => return,
        (g, w) => panic!(
            "{what}: .npy read {:?}, {beside} read {:?}",
            g.is_ok(),
            w.is_ok()
        ),
    };
    assert_eq!(&got[..8], b"\x93NUMPY\x01\x00", "{what}: magic and version");
    let hlen = usize::from(u16::from_le_bytes([got[8], got[9]]));
    let start = 10 + hlen;
    assert_eq!(start % 4096, 0, "{what}: data starts at {start}");
    let text = std::str::from_utf8(&got[10..start]).expect("ASCII header");
    let shape: Vec<u64> = npy["shape"].items().iter().map(Json::uint).collect();
    let dict = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
        npy["descr"].text(),
        tuple(&shape)
    );
    assert!(text.starts_with(&dict), "{what}: header {text:?}");
    assert!(text[dict.len()..]
        .trim_end_matches('\n')
        .bytes()
        .all(|b| b == b' '));
    assert!(text.ends_with('\n'), "{what}: header ends in a newline");
    assert_same(&got[start..], &want, &what);
}

/// The data file of a tensor's directory, as meta.json names it: a
/// quantized tensor's values, else its data.
fn tensor_file(meta: &Json) -> String {
    if meta["format"].opt_text().as_deref() == Some("hurray") {
        // `data`, or a quantized tensor's values (`dequantized`).
        return meta["data"]["file"].text().to_string();
    }
    if !meta["values"].is_null() {
        return meta["values"]["file"].text().to_string();
    }
    // A tensor whose data its format computes (a PyTorch strided view).
    if meta["view"].opt_text().as_deref() == Some("data") {
        return "data".into();
    }
    served(&meta["parts"].items()[0])
        .decoded
        .expect("a decoded data part")
}

/// Every `.npy` of `m` checked; returns the objects' metadata by name.
fn check_npys(m: &Mount) -> BTreeMap<String, (std::path::PathBuf, Json)> {
    let mut metas = BTreeMap::new();
    for (name, rel) in object_dirs(m) {
        let dir = m.join(&rel);
        let meta = meta(&dir);
        if !meta["npy"].is_null() {
            check_npy(&dir, &meta["npy"], &tensor_file(&meta));
        }
        if !meta["view_npy"].is_null() {
            check_npy(&dir, &meta["view_npy"], meta["view"].text());
        }
        if !meta["parts"].is_null() {
            for p in meta["parts"].items() {
                if !p["npy"].is_null() {
                    check_npy(&dir, &p["npy"], &served(p).decoded.expect("decoded"));
                } else if served(p).decoded.is_some() {
                    assert!(!p["no_npy"].is_null(), "{name:?}: no .npy and no reason");
                }
            }
        }
        metas.insert(name, (dir, meta));
    }
    metas
}

/// One safetensors file of `m` against the objects' data files; returns
/// the names it holds.
fn check_safetensors_file(
    path: &Path,
    metas: &BTreeMap<String, (std::path::PathBuf, Json)>,
) -> Vec<String> {
    let what = path.display().to_string();
    let Ok(bytes) = read_or_eio(path) else {
        // Only a tensor whose own file fails may fail the whole file.
        let broken = metas.values().any(|(dir, meta)| {
            !meta["safetensors"].is_null() && read_or_eio(&dir.join(tensor_file(meta))).is_err()
        });
        assert!(broken, "{what}: EIO, but every tensor's file reads");
        return metas
            .iter()
            .filter(|(_, (_, meta))| {
                meta["safetensors"]["file"].opt_text().as_deref()
                    == path.file_name().and_then(|f| f.to_str())
            })
            .map(|(n, _)| n.clone())
            .collect();
    };
    let (n, header) =
        safetensors::SafeTensors::read_metadata(&bytes).unwrap_or_else(|e| panic!("{what}: {e:?}"));
    assert_eq!((n + 8) % 4096, 0, "{what}: data starts on a page");
    let st =
        safetensors::SafeTensors::deserialize(&bytes).unwrap_or_else(|e| panic!("{what}: {e:?}"));
    let mut names = Vec::new();
    for (name, view) in st.tensors() {
        let (dir, meta) = &metas[&name];
        let mut want = fs::read(dir.join(tensor_file(meta))).expect("the tensor's file");
        let announced = &meta["safetensors"];
        // Values narrowed by --dequantize: the f32 values rounded (the
        // rounding is numpy's and ml_dtypes', tested on their vectors).
        let narrow = announced["dtype"]
            .opt_text()
            .and_then(|d| ztfs::decode::dequant::narrow::Float::parse(&d.to_lowercase()));
        if let Some(to) = narrow.filter(|f| f.width() == 2 && !meta["values"].is_null()) {
            let mut out = vec![0; want.len() / 2];
            to.narrow(&want, &mut out);
            want = out;
        }
        assert_same(view.data(), &want, &format!("{what}: {name:?}"));
        assert_eq!(
            format!("{:?}", view.dtype()),
            announced["dtype"].text(),
            "{name:?}"
        );
        let shape: Vec<usize> = announced["shape"]
            .items()
            .iter()
            .map(|d| d.uint() as usize)
            .collect();
        assert_eq!(view.shape(), shape, "{name:?}");
        names.push(name);
    }
    if let Some(meta) = header.metadata() {
        assert_eq!(meta.get("format").map(String::as_str), Some("pt"), "{what}");
    }
    names
}

/// `model.safetensors` (or its shards) of `m` against the objects.
fn check_safetensors(m: &Mount, metas: &BTreeMap<String, (std::path::PathBuf, Json)>) -> usize {
    let root: Vec<String> = dir_names(m.path())
        .iter()
        .map(|n| n.to_string_lossy().into_owned())
        .collect();
    let files: Vec<&String> = root
        .iter()
        .filter(|n| n.ends_with(".safetensors"))
        .collect();
    if metas.is_empty() {
        assert!(
            files.is_empty(),
            "safetensors files of a model of no objects"
        );
        return 0;
    }
    let mut held = Vec::new();
    for f in &files {
        held.extend(check_safetensors_file(&m.join(f), metas));
    }
    held.sort();
    let announced: Vec<String> = (metas.iter())
        .filter(|(_, (_, meta))| !meta["safetensors"].is_null())
        .map(|(n, _)| n.clone())
        .collect();
    assert_eq!(held, announced, "tensors held and announced");
    for (name, (_, meta)) in metas {
        assert!(
            meta["safetensors"].is_null() != meta["no_safetensors"].is_null(),
            "{name:?}: in safetensors or a reason, not both"
        );
    }
    files.len()
}

#[test]
fn every_view_file_matches_the_file_beside_it() {
    let mut files = mountable_files();
    files.extend(hurray_files());
    files.push(sample("tiny-llama.hrry"));
    let failed: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let r = std::panic::catch_unwind(|| {
                let m = Mount::new(file, &[]);
                let metas = check_npys(&m);
                check_safetensors(&m, &metas);
            });
            r.err()
                .map(|e| format!("{}: {}", file.display(), panic_text(&*e)))
        })
        .collect();
    assert!(
        failed.is_empty(),
        "{} files fail:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

/// `--dequantize f32|f16|bf16`: `model.safetensors` holds every quantized
/// tensor (GGUF's and a `.zt`'s `gguf.<type>/1`, mx and quant_group
/// objects) as its values in that type; without it, none, each with why.
#[test]
fn dequantize_puts_every_quantized_tensor_in_model_safetensors() {
    let mut files: Vec<_> = mountable_files()
        .into_iter()
        .filter(|f| {
            let n = f.to_string_lossy();
            n.contains("gguf") || n.contains("mx") || n.contains("quant")
        })
        .collect();
    files.push(corpus().join("gguf/valid/basic.gguf"));
    // Views that are not values (a PyTorch checkpoint's strided f16 and
    // bf16 tensors) are served as they are, whatever --dequantize says.
    let torch = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/torch/math-bits.pt");
    files.push(torch);
    assert!(files.len() >= 5, "{files:?}");
    let mut held = 0;
    for file in &files {
        for (args, dtype) in [
            (&[][..], None),
            (&["--dequantize", "f32"][..], Some("F32")),
            (&["--dequantize", "f16"][..], Some("F16")),
            (&["--dequantize", "bf16"][..], Some("BF16")),
        ] {
            let m = Mount::new(file, args);
            let metas = check_npys(&m);
            check_safetensors(&m, &metas);
            for (name, (_, meta)) in &metas {
                if meta["values"].is_null() {
                    continue;
                }
                let what = format!("{}: {name:?} {args:?}", file.display());
                match dtype {
                    None => assert!(
                        meta["no_safetensors"].text().contains("--dequantize"),
                        "{what}"
                    ),
                    Some(d) => {
                        assert_eq!(
                            meta["safetensors"]["dtype"].opt_text().as_deref(),
                            Some(d),
                            "{what}"
                        );
                        held += 1;
                    }
                }
            }
        }
    }
    assert!(held >= 9, "{held} quantized tensors held");
}

#[test]
fn npy_dtypes_ml_names_bfloat16_and_f8() {
    let file = valid("dtypes-all");
    let plain = Mount::new(&file, &[]);
    let ml = Mount::new(&file, &["--npy-dtypes", "ml"]);
    let descrs = |m: &Mount| -> Vec<String> {
        check_npys(m)
            .values()
            .filter_map(|(_, meta)| meta["parts"].items()[0]["npy"]["descr"].opt_text())
            .collect()
    };
    let (a, b) = (descrs(&plain), descrs(&ml));
    assert!(
        a.contains(&"<V2".to_string()) && !a.contains(&"bfloat16".to_string()),
        "{a:?}"
    );
    assert!(
        b.contains(&"bfloat16".to_string()) && !b.contains(&"<V2".to_string()),
        "{b:?}"
    );
    let f8 = valid("ltypes-all");
    let ml = Mount::new(&f8, &["--npy-dtypes", "ml"]);
    let all: String = check_npys(&ml)
        .values()
        .map(|(_, m)| format!("{m:?}"))
        .collect();
    for name in ["float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu"] {
        assert!(all.contains(name), "{name} not among the .npy descrs");
    }
}

/// The benchmark's writer: N small f32 objects sharing a few blobs (tied
/// weights), written without the code under test.
use crate::gen_manifest;

#[test]
fn a_long_header_is_served_as_shards_and_an_index() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("many.zt");
    fs::write(&file, gen_manifest::build(2000)).unwrap();
    let m = Mount::new(&file, &["--safetensors-header-max", "16384"]);
    let metas = check_npys(&m);
    let shards = check_safetensors(&m, &metas);
    assert!(shards >= 2, "{shards} shards");
    assert!(
        !m.join("model.safetensors").exists(),
        "one file beside the shards"
    );
    let index = fs::read_to_string(m.join("model.safetensors.index.json")).expect("the index");
    let index = Json::parse(&index);
    let mut total = 0;
    for (name, (dir, meta)) in &metas {
        let file = index["weight_map"][name.as_str()].opt_text();
        assert_eq!(
            file,
            meta["safetensors"]["file"].opt_text(),
            "{name:?} in the weight map"
        );
        if file.is_some() {
            total += fs::metadata(dir.join(tensor_file(meta))).unwrap().len();
        }
    }
    assert_eq!(index["metadata"]["total_size"].uint(), total);
    // And a model whose entries cannot fit at all has no safetensors file,
    // logged, while the rest of the mount serves.
    let m = Mount::new(
        &valid("name-1024-bytes"),
        &["--safetensors-header-max", "1000"],
    );
    assert!(dir_names(m.path())
        .iter()
        .all(|n| !n.to_string_lossy().contains("safetensors")));
    assert!(m.log().contains("no model.safetensors"), "{}", m.log());
}

#[test]
fn verify_holds_back_exactly_the_tensors_that_fail_it() {
    // "w" holds a bool byte 0x02: with --verify its bytes are never served,
    // through any file; the header and the other tensors still are.
    let m = Mount::new(&valid("bool-invalid-byte"), &["--verify"]);
    let metas = check_npys(&m);
    let path = m.join("model.safetensors");
    let bytes = |off: u64, len: usize| {
        let f = fs::File::open(&path).unwrap();
        let mut buf = vec![0; len];
        std::os::unix::fs::FileExt::read_at(&f, &mut buf, off).map(|n| buf[..n].to_vec())
    };
    let header = bytes(0, 4096).expect("the header reads");
    let n = u64::from_le_bytes(header[..8].try_into().unwrap());
    let start = 8 + n;
    let text = std::str::from_utf8(&header[8..start as usize]).expect("UTF-8");
    let Json::Object(entries) = Json::parse(text.trim_end()) else {
        panic!("a header that is not a JSON object: {text:?}");
    };
    for (name, info) in entries.iter().filter(|e| e.0 != "__metadata__") {
        let (dir, _) = &metas[name];
        let file_reads = read_or_eio(&dir.join("data"));
        let offsets = info["data_offsets"].items();
        let (b, e) = (offsets[0].uint(), offsets[1].uint());
        let got = bytes(start + b, (e - b) as usize);
        match file_reads {
            Ok(want) => assert_eq!(got.expect("a good tensor reads"), want, "{name:?}"),
            Err(()) => assert_eq!(got.unwrap_err().raw_os_error(), Some(libc::EIO), "{name:?}"),
        }
    }
    assert!(metas.contains_key("w"));
    assert!(
        read_or_eio(&m.join("w/data.npy")).is_err(),
        "w/data.npy under --verify"
    );
}
