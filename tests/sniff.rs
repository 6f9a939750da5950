//! Which reader refuses a broken file: a file that is plainly of format X
//! (its shape, a magic one byte off, its name) is refused by X's rules,
//! never by zTensor's `HeaderMagic` or `FileTooSmall` (a file of a format
//! ztfs does not read is named: tests/cli.rs). Each case runs `ztfs check`.

mod common;

use common::*;

fn st(len: u64, rest: &[u8]) -> Vec<u8> {
    [&len.to_le_bytes()[..], rest].concat()
}

/// `ztfs check` of `bytes` named `name`: its exit code and stderr.
fn check(name: &str, bytes: &[u8]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    let o = ztfs(&["check".as_ref(), path.as_os_str()]);
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn a_broken_file_is_refused_by_its_own_formats_rules() {
    let tensor = br#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}"#;
    let bom = [b"\xef\xbb\xbf".as_slice(), tensor].concat();
    let index = br#"{"metadata":{},"weight_map":{"a":"m.safetensors"}}"#;
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        // safetensors: a BOM, a length of 2^32 and more, under 48 bytes.
        (
            "bom.safetensors",
            st(bom.len() as u64, &[&bom[..], &[0; 4]].concat()),
            "SafetensorsJson",
        ),
        ("bom", st(bom.len() as u64, &bom), "SafetensorsJson"),
        ("big", st(1 << 32, tensor), "SafetensorsHeaderTooLarge"),
        (
            "huge",
            st(u64::MAX >> 8, b"{}"),
            "SafetensorsHeaderTooLarge",
        ),
        ("short", st(20, b"{\"a\""), "SafetensorsHeaderBounds"),
        ("len.safetensors", st(2, b""), "SafetensorsHeaderBounds"),
        (
            "tiny.safetensors",
            b"\x02\0".to_vec(),
            "SafetensorsHeaderBounds",
        ),
        // An index with a BOM: JSON has none (Python's json.load refuses it).
        (
            "model.safetensors.index.json",
            [b"\xef\xbb\xbf".as_slice(), index].concat(),
            "SafetensorsIndexJson",
        ),
        (
            "i.json",
            [b"\xef\xbb\xbf".as_slice(), index].concat(),
            "SafetensorsIndexJson",
        ),
        ("e.index.json", Vec::new(), "SafetensorsIndex"),
        // A magic one byte off is that format's file, with its magic rule.
        (
            "h",
            [b"HRRYFILX".as_slice(), &[0; 200]].concat(),
            "HurrayHeader",
        ),
        (
            "h2",
            [b"HRRYF\0LE".as_slice(), &[0; 200]].concat(),
            "HurrayHeader",
        ),
        (
            "g",
            [b"GGUG\x03\0\0\0".as_slice(), &[0; 200]].concat(),
            "GgufMagic",
        ),
        ("g.gguf", b"GGUF\x03\0\0\0".to_vec(), "GgufMagic"),
        (
            "z",
            [b"\x89ZT3\r\n\x1a\n".as_slice(), &[0; 200]].concat(),
            "HeaderMagic",
        ),
    ];
    for (name, bytes, rule) in &cases {
        let (code, err) = check(name, bytes);
        assert_eq!(code, Some(1), "{name}: {err}");
        assert!(
            err.contains(&format!("({rule}")),
            "{name}: want {rule}: {err}"
        );
    }
}
