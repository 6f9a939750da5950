//! ONNX models through the real binary and the real mount, written by
//! hand (the interop suite holds the `onnx` package's against
//! `numpy_helper.to_array`): every storage form of a tensor read the
//! same, in any field order; subgraph and Constant tensors; a typed
//! tensor larger than a mount's `--cache-mib`; 4-bit and string tensors
//! never served as wrong bytes; each rule's refusal; a secret outside the
//! model's folder never served.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::onnx::*;
use common::*;

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    fs::write(&p, bytes).unwrap();
    p
}

fn values(n: usize) -> Vec<f32> {
    (0..n).map(|i| i as f32 * 0.25 - 3.0).collect()
}

/// The same six values in every storage form, and the bytes they are.
#[test]
fn every_storage_form_reads_the_same_bytes() {
    let d = tempfile::tempdir().unwrap();
    let want = f32s(&values(6));
    let bits: Vec<u64> = values(6).iter().map(|x| x.to_bits() as u64).collect();
    write(d.path(), "w.bin", &[b"pad".as_slice(), &want].concat());
    let dims = [2, 3];
    let ts = [
        tensor("raw", 1, &dims, Store::Raw(&want), false),
        tensor("raw_reversed", 1, &dims, Store::Raw(&want), true),
        tensor("packed", 1, &dims, Store::Typed(4, &bits, 1), false),
        tensor("split_runs", 1, &dims, Store::Typed(4, &bits, 3), true),
        tensor("unpacked", 1, &dims, Store::Typed(4, &bits, 0), false),
        tensor(
            "external",
            1,
            &dims,
            Store::External("w.bin", Some(3), Some(24)),
            false,
        ),
    ];
    let f = write(d.path(), "m.onnx", &model(&graph(&[], &ts)));
    ztfs_ok(&[Path::new("check"), "--verify".as_ref(), &f]);
    for name in [
        "raw",
        "raw_reversed",
        "packed",
        "split_runs",
        "unpacked",
        "external",
    ] {
        assert_eq!(cat(&f, name, "data", false).unwrap(), want, "{name}");
    }
    let listing = String::from_utf8(ztfs_ok(&[Path::new("ls"), "-l".as_ref(), &f])).unwrap();
    let marked = |m: &str| listing.lines().filter(|l| l.ends_with(m)).count();
    assert_eq!(marked(" (typed)"), 3, "{listing}");
    assert_eq!(marked(" [file w.bin]"), 1, "{listing}");
    let m = Mount::new(&f, &[]);
    for name in ["raw", "split_runs", "external"] {
        assert_eq!(fs::read(m.join(name).join("data")).unwrap(), want, "{name}");
        let npy = fs::read(m.join(name).join("data.npy")).unwrap();
        assert!(npy.ends_with(&want), "{name}: data.npy");
    }
}

/// Narrow types in `int32_data` are cut to their width; int64, double
/// and uint64 fields as they are.
#[test]
fn typed_fields_of_every_width() {
    let d = tempfile::tempdir().unwrap();
    let minus_one = u64::MAX; // -1 as protobuf writes an int32 varint
    let ts = [
        tensor(
            "i8",
            3,
            &[3],
            Store::Typed(5, &[minus_one, 5, 300], 1),
            false,
        ),
        tensor(
            "f16",
            10,
            &[2],
            Store::Typed(5, &[0x3c00, 0xc000], 0),
            false,
        ),
        tensor("b", 9, &[2], Store::Typed(5, &[1, 0], 1), false),
        tensor("i64", 7, &[2], Store::Typed(7, &[minus_one, 7], 1), false),
        tensor(
            "f64",
            11,
            &[1],
            Store::Typed(10, &[2.5f64.to_bits()], 1),
            false,
        ),
        tensor("u32", 12, &[1], Store::Typed(11, &[7], 0), false),
    ];
    let f = write(d.path(), "m.onnx", &model(&graph(&[], &ts)));
    let expect: [(&str, Vec<u8>); 6] = [
        ("i8", vec![0xff, 5, 44]),
        ("f16", vec![0x00, 0x3c, 0x00, 0xc0]),
        ("b", vec![1, 0]),
        ("i64", [(-1i64).to_le_bytes(), 7i64.to_le_bytes()].concat()),
        ("f64", 2.5f64.to_le_bytes().to_vec()),
        ("u32", 7u32.to_le_bytes().to_vec()),
    ];
    for (name, want) in expect {
        assert_eq!(cat(&f, name, "data", false).unwrap(), want, "{name}");
    }
}

/// Initializers of a subgraph and a Constant's value are objects; a
/// typed tensor far larger than the mount's memory budget is served.
#[test]
fn subgraphs_constants_and_a_large_typed_tensor() {
    let d = tempfile::tempdir().unwrap();
    let n = 3 << 20; // 12 MiB of f32, with --cache-mib 4
    let big: Vec<u64> = (0..n as u64).map(|i| (i as f32).to_bits() as u64).collect();
    let inner = graph(
        &[],
        &[tensor(
            "body/w",
            1,
            &[2],
            Store::Raw(&f32s(&[1.0, 2.0])),
            false,
        )],
    );
    let c = tensor("", 6, &[1], Store::Raw(&9i32.to_le_bytes()), false);
    let g = graph(
        &[constant("/c_out", &c), if_node("if_out", &inner)],
        &[tensor(
            "big",
            1,
            &[n as i64],
            Store::Typed(4, &big, 2),
            false,
        )],
    );
    let f = write(d.path(), "m.onnx", &model(&g));
    assert_eq!(cat(&f, "body/w", "data", false).unwrap(), f32s(&[1.0, 2.0]));
    assert_eq!(
        cat(&f, "/c_out", "data", false).unwrap(),
        9i32.to_le_bytes()
    );
    let manifest = String::from_utf8(ztfs_ok(&[Path::new("manifest"), &f])).unwrap();
    for said in [
        "\"Constant\": 1",
        "\"If\": 1",
        "\"version\": 17",
        "\"typed\"",
    ] {
        assert!(manifest.contains(said), "{said} in {manifest}");
    }
    let m = Mount::new(&f, &["--cache-mib", "4"]);
    let got = fs::read(m.join("big/data")).unwrap();
    assert!(got.len() == n * 4, "{} bytes", got.len());
    let want: Vec<f32> = (0..n).map(|i| i as f32).collect();
    assert!(got == f32s(&want), "big/data differs");
}

/// A 4-bit tensor's `data` is refused and its packed bytes served as
/// `data.raw`; a string tensor is left out with why.
#[test]
fn packed_and_string_tensors_are_never_wrong_bytes() {
    let d = tempfile::tempdir().unwrap();
    let s = [
        tensor("int4", 22, &[3], Store::Raw(&[0x21, 0x03]), false),
        tensor("text", 8, &[1], Store::Typed(6, &[], 0), false),
    ];
    let f = write(d.path(), "m.onnx", &model(&graph(&[], &s)));
    assert_eq!(cat(&f, "int4", "data", true).unwrap(), [0x21, 0x03]);
    let refused = cat(&f, "int4", "data", false).unwrap_err();
    assert!(refused.contains("onnx.int4"), "{refused}");
    let manifest = String::from_utf8(ztfs_ok(&[Path::new("manifest"), &f])).unwrap();
    assert!(manifest.contains("a string tensor"), "{manifest}");
    let listing = String::from_utf8(ztfs_ok(&[Path::new("ls"), &f])).unwrap();
    assert!(!listing.contains("text"), "{listing}");
}

#[test]
fn each_rule_refuses_its_model() {
    let d = tempfile::tempdir().unwrap();
    let w = f32s(&[1.0, 2.0]);
    let ok = |name: &str| tensor(name, 1, &[2], Store::Raw(&w), false);
    let one = |name: &str, t: Vec<u8>| write(d.path(), name, &model(&graph(&[], &[t])));
    write(d.path(), "data.bin", &w);
    let cases: Vec<(PathBuf, &str, &str)> = vec![
        (
            write(
                d.path(),
                "dup.onnx",
                &model(&graph(&[], &[ok("a"), ok("a")])),
            ),
            "OnnxDuplicate",
            "two tensors named \"a\"",
        ),
        (
            write(
                d.path(),
                "dup-const.onnx",
                &model(&graph(&[constant("a", &ok(""))], &[ok("a")])),
            ),
            "OnnxDuplicate",
            "\"a\"",
        ),
        (
            write(
                d.path(),
                "dup-sub.onnx",
                &model(&graph(&[if_node("o", &graph(&[], &[ok("a")]))], &[ok("a")])),
            ),
            "OnnxDuplicate",
            "\"a\"",
        ),
        (
            one("short.onnx", tensor("a", 1, &[3], Store::Raw(&w), false)),
            "OnnxLength",
            "raw_data of 8 bytes",
        ),
        (
            one(
                "count.onnx",
                tensor("a", 1, &[3], Store::Typed(4, &[1, 2], 1), false),
            ),
            "OnnxLength",
            "2 values",
        ),
        (
            one("none.onnx", tensor("a", 1, &[3], Store::Nothing, false)),
            "OnnxLength",
            "no data",
        ),
        (
            one(
                "ext-len.onnx",
                tensor(
                    "a",
                    1,
                    &[2],
                    Store::External("data.bin", None, Some(4)),
                    false,
                ),
            ),
            "OnnxLength",
            "an external length of 4 bytes",
        ),
        (
            one(
                "ext-range.onnx",
                tensor(
                    "a",
                    1,
                    &[2],
                    Store::External("data.bin", Some(4), None),
                    false,
                ),
            ),
            "OnnxExternalRange",
            "8 bytes at offset 4 of \"data.bin\"",
        ),
        (
            one(
                "ext-missing.onnx",
                tensor("a", 1, &[2], Store::External("gone.bin", None, None), false),
            ),
            "OnnxExternalMissing",
            "gone.bin",
        ),
        (
            one(
                "abs.onnx",
                tensor(
                    "a",
                    1,
                    &[2],
                    Store::External("/etc/passwd", None, None),
                    false,
                ),
            ),
            "OnnxExternalPath",
            "absolute",
        ),
        (
            one(
                "up.onnx",
                tensor("a", 1, &[2], Store::External("../x.bin", None, None), false),
            ),
            "OnnxExternalPath",
            "leads out",
        ),
        (
            one("neg.onnx", tensor("a", 1, &[-2], Store::Raw(&w), false)),
            "OnnxModel",
            "a negative dim",
        ),
        (
            write(d.path(), "no-graph.onnx", &varint_field(1, 9)),
            "OnnxModel",
            "no graph",
        ),
    ];
    for (f, rule, why) in &cases {
        check_refuses(f, rule, why);
    }
    let whole = model(&graph(&[], &[ok("a")]));
    let cut = write(d.path(), "cut.onnx", &whole[..whole.len() - 3]);
    check_refuses(&cut, "OnnxProtobuf", "not protobuf");
    // 2 GiB (a sparse file): past protobuf's limit on one message.
    let big = write(d.path(), "big.onnx", &whole);
    fs::OpenOptions::new()
        .write(true)
        .open(&big)
        .unwrap()
        .set_len(1 << 31)
        .unwrap();
    check_refuses(&big, "OnnxModel", "under 2 GiB");
}

/// An external location that reaches outside the model's folder, through
/// a symlink or a symlinked folder, is refused, and the secret there
/// appears in no output; a symlink inside the folder is followed.
#[test]
fn a_secret_outside_the_folder_is_never_served() {
    let d = tempfile::tempdir().unwrap();
    let secret = b"SECRET!!";
    write(d.path(), "secret.bin", secret);
    let dir = d.path().join("model");
    fs::create_dir(&dir).unwrap();
    fs::write(dir.join("inside.bin"), secret).unwrap();
    std::os::unix::fs::symlink("../secret.bin", dir.join("out.bin")).unwrap();
    std::os::unix::fs::symlink("inside.bin", dir.join("in.bin")).unwrap();
    std::os::unix::fs::symlink("..", dir.join("up")).unwrap();
    let ext = |loc: &str| tensor("a", 3, &[8], Store::External(loc, None, None), false);
    let one = |name: &str, loc: &str| write(&dir, name, &model(&graph(&[], &[ext(loc)])));
    for (f, why) in [
        (one("out.onnx", "out.bin"), "outside the folder"),
        (one("through.onnx", "up/secret.bin"), "symlink"),
    ] {
        check_refuses(&f, "OnnxExternalPath", why);
        for args in [vec!["cat"], vec!["manifest"], vec!["ls", "-l"]] {
            let mut argv: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
            argv.push(f.as_os_str());
            if args == ["cat"] {
                argv.push("a".as_ref());
            }
            let o = ztfs(&argv);
            let all = [o.stdout, o.stderr].concat();
            assert!(!all.windows(8).any(|w| w == secret), "{args:?} {f:?}");
        }
    }
    let inside = one("in.onnx", "in.bin");
    assert_eq!(cat(&inside, "a", "data", false).unwrap(), secret);
}
