//! OpenVINO IRs written by hand in the documented form (`model.xml` and
//! `model.bin`) through the real binary and the real mount: each Const is
//! an object whose bytes are its `.bin` range; a Loop body's constants;
//! names given twice made unique; packed 4-bit constants served raw only,
//! strings left out; the refusals of each rule.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::*;

/// A Const layer (`shape` as the serializer writes it, dims also on its
/// port).
fn konst(id: u32, name: &str, ty: &str, shape: &[u64], offset: u64, size: u64) -> String {
    let text: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let dims: String = shape.iter().map(|d| format!("<dim>{d}</dim>")).collect();
    format!(
        r#"<layer id="{id}" name="{name}" type="Const" version="opset1">
<data element_type="{ty}" shape="{}" offset="{offset}" size="{size}" />
<output><port id="0" precision="FP32">{dims}</port></output>
</layer>
"#,
        text.join(", ")
    )
}

/// A whole `model.xml` of `layers` (and a Parameter and a Result).
fn ir(layers: &str) -> String {
    format!(
        r#"<?xml version="1.0"?>
<net name="hand" version="11">
<layers>
<layer id="100" name="input" type="Parameter" version="opset1">
<data shape="1" element_type="f32" />
<output><port id="0" precision="FP32"><dim>1</dim></port></output>
</layer>
{layers}<layer id="101" name="output" type="Result" version="opset1">
<input><port id="0" precision="FP32"><dim>1</dim></port></input>
</layer>
</layers>
<edges>
<edge from-layer="100" from-port="0" to-layer="101" to-port="0" />
</edges>
</net>
"#
    )
}

/// Writes `NAME.xml` and `NAME.bin` into `dir`; the XML's path.
fn write(dir: &Path, name: &str, xml: &str, bin: &[u8]) -> PathBuf {
    fs::write(dir.join(format!("{name}.bin")), bin).unwrap();
    let p = dir.join(format!("{name}.xml"));
    fs::write(&p, xml).unwrap();
    p
}

#[test]
fn each_constant_is_its_bin_range() {
    let d = tempfile::tempdir().unwrap();
    let bin: Vec<u8> = (0..64u8).collect();
    let body = format!(
        r#"<layer id="3" name="loop" type="Loop" version="opset5">
<body><layers>{}</layers><edges /></body>
</layer>
"#,
        konst(0, "inner", "i8", &[4], 60, 4)
    );
    let layers = [
        konst(1, "w", "f32", &[2, 3], 0, 24),
        konst(2, "w", "f16", &[2], 24, 4),
        konst(4, "scale", "i64", &[], 28, 8),
        konst(5, "packed", "u4", &[5], 36, 3),
        konst(6, "flags", "boolean", &[1], 39, 1),
        body,
    ]
    .concat();
    let mut bin = bin;
    bin[39] = 1; // a boolean byte is 0 or 1
    let f = write(d.path(), "model", &ir(&layers), &bin);
    ztfs_ok(&[Path::new("check"), &f]);
    let listing = String::from_utf8(ztfs_ok(&[Path::new("ls"), &f])).unwrap();
    for name in ["w", "w#2", "scale", "packed", "flags", "inner"] {
        assert!(listing.lines().any(|l| l == name), "{name}: {listing}");
    }
    for (name, range) in [
        ("w", 0..24),
        ("w#2", 24..28),
        ("scale", 28..36),
        ("inner", 60..64),
    ] {
        assert_eq!(cat(&f, name, "data", false).unwrap(), bin[range], "{name}");
    }
    assert_eq!(cat(&f, "packed", "data", true).unwrap(), bin[36..39]);
    let refused = cat(&f, "packed", "data", false).unwrap_err();
    assert!(refused.contains("openvino.u4"), "{refused}");
    let manifest = String::from_utf8(ztfs_ok(&[Path::new("manifest"), &f])).unwrap();
    for said in [
        "\"format\": \"openvino\"",
        "\"Loop\": 1",
        "\"layer_id\": 2",
        "\"bin\": \"model.bin\"",
    ] {
        assert!(manifest.contains(said), "{said} in {manifest}");
    }
    let m = Mount::new(&f, &[]);
    assert_eq!(fs::read(m.join("w/data")).unwrap(), bin[..24]);
    let npy = fs::read(m.join("w#2/data.npy")).unwrap();
    assert!(npy.ends_with(&bin[24..28]), "w#2/data.npy");
}

#[test]
fn a_string_constant_is_left_out_with_why() {
    let d = tempfile::tempdir().unwrap();
    let layers = [
        konst(1, "a", "u8", &[2], 0, 2),
        konst(2, "s", "string", &[1], 2, 9),
    ]
    .concat();
    let f = write(d.path(), "model", &ir(&layers), &[0; 11]);
    let o = ztfs(&[Path::new("check"), &f]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success() && err.contains("constant \"s\" left out"),
        "{err}"
    );
}

#[test]
fn each_rule_refuses_its_ir() {
    let d = tempfile::tempdir().unwrap();
    let one = konst(1, "a", "f32", &[2], 0, 8);
    let past = write(d.path(), "past", &ir(&one), &[0; 4]);
    check_refuses(&past, "OpenVinoConst", "past the .bin");
    let size = write(
        d.path(),
        "size",
        &ir(&konst(1, "a", "f32", &[2], 0, 4)),
        &[0; 8],
    );
    check_refuses(&size, "OpenVinoXml", "takes 8 bytes");
    let missing = d.path().join("alone.xml");
    fs::write(&missing, ir(&one)).unwrap();
    check_refuses(&missing, "OpenVinoBin", "alone.bin");
    let dtd = format!("<!DOCTYPE net [<!ENTITY x \"y\">]>\n{}", ir(&one));
    let dtd = write(d.path(), "dtd", &dtd, &[0; 8]);
    check_refuses(&dtd, "OpenVinoXml", "DOCTYPE");
    let cut = ir(&one);
    let cut = write(d.path(), "cut", &cut[..cut.len() / 2], &[0; 8]);
    check_refuses(&cut, "OpenVinoXml", "");
}
