//! IRs written by hand in the form OpenVINO's serializer writes (tabs,
//! `shape="2, 3"`, a port per output with its dims, rt_info at the end),
//! and one test per way of breaking them. Rejections are told apart by
//! where they point (the offset of the offending element), not by text.

use super::*;
use crate::format::types::{DType, LogicalType};

/// A small model: a Parameter, four Consts (f32 matrix, f16 vector, i64
/// scalar, u4 vector packed two to a byte, boolean without a port), a
/// MatMul, an Add and a Result; 46 bytes of weights.
const TINY: &str = r#"<?xml version="1.0"?>
<net name="tiny" version="11">
	<layers>
		<layer id="0" name="input" type="Parameter" version="opset1">
			<data shape="1,3" element_type="f32" />
			<output>
				<port id="0" precision="FP32" names="input">
					<dim>1</dim>
					<dim>3</dim>
				</port>
			</output>
		</layer>
		<layer id="1" name="weight" type="Const" version="opset1">
			<data element_type="f32" shape="2, 3" offset="0" size="24" />
			<output>
				<port id="0" precision="FP32">
					<dim>2</dim>
					<dim>3</dim>
				</port>
			</output>
		</layer>
		<layer id="2" name="matmul" type="MatMul" version="opset1">
			<data transpose_a="false" transpose_b="true" />
			<input>
				<port id="0" precision="FP32"><dim>1</dim><dim>3</dim></port>
				<port id="1" precision="FP32"><dim>2</dim><dim>3</dim></port>
			</input>
			<output>
				<port id="2" precision="FP32"><dim>1</dim><dim>2</dim></port>
			</output>
		</layer>
		<layer id="3" name="bias" type="Const" version="opset1">
			<data element_type="f16" shape="2" offset="24" size="4" />
			<output>
				<port id="0" precision="FP16"><dim>2</dim></port>
			</output>
		</layer>
		<layer id="4" name="scale" type="Const" version="opset1">
			<data element_type="i64" shape="" offset="32" size="8" />
			<output>
				<port id="0" precision="I64" />
			</output>
		</layer>
		<layer id="5" name="packed" type="Const" version="opset1">
			<data element_type="u4" shape="5" offset="40" size="3" />
			<output>
				<port id="0" precision="U4"><dim>5</dim></port>
			</output>
		</layer>
		<layer id="6" name="flags" type="Const" version="opset1">
			<data element_type="boolean" shape="3" offset="43" size="3" />
		</layer>
		<layer id="7" name="add" type="Add" version="opset1">
			<data auto_broadcast="numpy" />
			<input>
				<port id="0" precision="FP32"><dim>1</dim><dim>2</dim></port>
				<port id="1" precision="FP16"><dim>2</dim></port>
			</input>
			<output>
				<port id="2" precision="FP32"><dim>1</dim><dim>2</dim></port>
			</output>
		</layer>
		<layer id="8" name="output" type="Result" version="opset1">
			<input>
				<port id="0" precision="FP32"><dim>1</dim><dim>2</dim></port>
			</input>
		</layer>
	</layers>
	<edges>
		<edge from-layer="0" from-port="0" to-layer="2" to-port="0" />
		<edge from-layer="1" from-port="0" to-layer="2" to-port="1" />
		<edge from-layer="2" from-port="2" to-layer="7" to-port="0" />
		<edge from-layer="3" from-port="0" to-layer="7" to-port="1" />
		<edge from-layer="7" from-port="2" to-layer="8" to-port="0" />
	</edges>
	<rt_info>
		<MO_version value="2024.6" />
		<conversion_parameters>
			<framework value="pytorch" />
			<is_python_object value="True" />
		</conversion_parameters>
	</rt_info>
</net>
"#;

/// TINY's weights: where its last Const ends.
const TINY_BIN: u64 = 46;

/// A Loop whose body holds a Const of its own, with the ids of the main
/// graph (ids are unique per graph).
const LOOP: &str = r#"<?xml version="1.0"?>
<net name="loop" version="11">
	<layers>
		<layer id="0" name="x" type="Parameter" version="opset1">
			<data shape="4" element_type="f32" />
			<output><port id="0" precision="FP32"><dim>4</dim></port></output>
		</layer>
		<layer id="1" name="trip" type="Const" version="opset1">
			<data element_type="i64" shape="" offset="0" size="8" />
			<output><port id="0" precision="I64" /></output>
		</layer>
		<layer id="2" name="loop" type="Loop" version="opset5">
			<port_map>
				<input external_port_id="1" internal_layer_id="0" />
				<output external_port_id="2" internal_layer_id="2" />
			</port_map>
			<back_edges>
				<edge from-layer="2" to-layer="0" />
			</back_edges>
			<input>
				<port id="0" precision="I64" />
				<port id="1" precision="FP32"><dim>4</dim></port>
			</input>
			<output><port id="2" precision="FP32"><dim>4</dim></port></output>
			<body>
				<layers>
					<layer id="0" name="body_x" type="Parameter" version="opset1">
						<data shape="4" element_type="f32" />
						<output><port id="0" precision="FP32"><dim>4</dim></port></output>
					</layer>
					<layer id="1" name="step" type="Const" version="opset1">
						<data element_type="bf16" shape="4" offset="8" size="8" />
						<output><port id="0" precision="BF16"><dim>4</dim></port></output>
					</layer>
					<layer id="2" name="body_out" type="Result" version="opset1">
						<input><port id="0" precision="FP32"><dim>4</dim></port></input>
					</layer>
				</layers>
				<edges>
					<edge from-layer="0" from-port="0" to-layer="2" to-port="0" />
				</edges>
			</body>
		</layer>
		<layer id="3" name="y" type="Result" version="opset1">
			<input><port id="0" precision="FP32"><dim>4</dim></port></input>
		</layer>
	</layers>
	<edges>
		<edge from-layer="1" from-port="0" to-layer="2" to-port="0" />
		<edge from-layer="0" from-port="0" to-layer="2" to-port="1" />
		<edge from-layer="2" from-port="2" to-layer="3" to-port="0" />
	</edges>
</net>
"#;

/// The offset `parse` must report for `xml`: that of the `<` of the
/// first tag holding `marker`.
fn at(xml: &str, marker: &str) -> Option<u64> {
    let i = xml.find(marker).expect("marker in the XML");
    Some(xml[..=i].rfind('<').unwrap() as u64)
}

/// `TINY` with `from` replaced by `to`, once.
fn tiny_with(from: &str, to: &str) -> String {
    assert!(TINY.contains(from), "{from:?}");
    TINY.replacen(from, to, 1)
}

/// Parses `xml`, which must be refused at the tag holding `marker`.
fn refused_at(xml: &str, marker: &str) {
    let e = parse(xml.as_bytes()).expect_err(marker);
    assert_eq!(e.offset, at(xml, marker), "{marker:?}: {e}");
}

#[test]
fn a_hand_written_ir_and_its_bin_ranges() {
    let m = parse(TINY.as_bytes()).unwrap();
    assert_eq!((m.name.as_str(), m.version), ("tiny", 11));
    assert_eq!(m.inputs, ["input"]);
    assert_eq!(m.outputs, ["output"]);
    let ops: Vec<_> = m.ops.iter().map(|(k, &n)| (k.as_str(), n)).collect();
    let want = [
        ("Add", 1),
        ("Const", 5),
        ("MatMul", 1),
        ("Parameter", 1),
        ("Result", 1),
    ];
    assert_eq!(ops, want);
    let got: Vec<_> = m
        .consts
        .iter()
        .map(|c| (c.id, c.graph, c.name.as_str(), c.element_type.as_str()))
        .collect();
    let want = [
        (1, 0, "weight", "f32"),
        (3, 0, "bias", "f16"),
        (4, 0, "scale", "i64"),
        (5, 0, "packed", "u4"),
        (6, 0, "flags", "boolean"),
    ];
    assert_eq!(got, want);
    let ranges: Vec<_> = m
        .consts
        .iter()
        .map(|c| (c.shape.clone(), c.offset, c.size))
        .collect();
    let want = [
        (vec![2, 3], 0, 24),
        (vec![2], 24, 4),
        (vec![], 32, 8),
        (vec![5], 40, 3),
        (vec![3], 43, 3),
    ];
    assert_eq!(ranges, want);
    assert_eq!(m.consts[2].count(), Some(1), "a scalar is one element");

    check_against_bin(&m, TINY_BIN).unwrap();
    check_against_bin(&m, TINY_BIN + 100).unwrap();
    let e = check_against_bin(&m, TINY_BIN - 1).unwrap_err();
    assert_eq!(e.offset, None);
    assert!(check_against_bin(&m, 0).is_err());

    let types: Vec<_> = m
        .consts
        .iter()
        .map(|c| ztensor_type(&c.element_type))
        .collect();
    assert_eq!(types[0], Ok((DType::F32, None)));
    assert_eq!(types[1], Ok((DType::F16, None)));
    assert_eq!(types[2], Ok((DType::I64, None)));
    assert!(types[3].is_err(), "u4 is not served");
    assert_eq!(types[4], Ok((DType::U8, Some(LogicalType::Bool))));
}

#[test]
fn subgraph_consts_are_listed_with_their_graph() {
    let m = parse(LOOP.as_bytes()).unwrap();
    let got: Vec<_> = m
        .consts
        .iter()
        .map(|c| (c.id, c.graph, c.name.as_str(), c.offset))
        .collect();
    assert_eq!(got, [(1, 0, "trip", 0), (1, 1, "step", 8)]);
    // The body's Parameter and Result are not the model's.
    assert_eq!(m.inputs, ["x"]);
    assert_eq!(m.outputs, ["y"]);
    assert_eq!(m.ops["Parameter"], 2);
    assert_eq!(m.ops["Loop"], 1);
    check_against_bin(&m, 16).unwrap();
    assert!(check_against_bin(&m, 15).is_err());
}

#[test]
fn ir_versions_10_and_11_only() {
    let v10 = tiny_with(r#"version="11""#, r#"version="10""#);
    assert_eq!(parse(v10.as_bytes()).unwrap().version, 10);
    for v in ["7", "12", "011x", "", "-11"] {
        let xml = tiny_with(r#"version="11""#, &format!("version={v:?}"));
        refused_at(&xml, "<net");
    }
    refused_at(&tiny_with(r#" version="11""#, ""), "<net");
    let other_root = TINY
        .replace("<net ", "<network ")
        .replace("</net>", "</network>");
    refused_at(&other_root, "<network");
    refused_at(&tiny_with("<net ", "<x:net "), "<x:net");
}

#[test]
fn a_net_name_is_optional_and_unescaped() {
    let m = parse(tiny_with(r#" name="tiny""#, "").as_bytes()).unwrap();
    assert_eq!(m.name, "");
    let xml = tiny_with(r#"name="weight""#, r#"name="w&amp;&#x41;&lt;""#);
    assert_eq!(parse(xml.as_bytes()).unwrap().consts[0].name, "w&A<");
}

#[test]
fn a_dtd_or_an_unknown_entity_is_refused() {
    let dtd = r#"<!DOCTYPE net [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]>"#;
    let xml = TINY.replacen("<net ", &format!("{dtd}\n<net "), 1);
    refused_at(&xml, "<!DOCTYPE");
    let xml = TINY.replacen("<net ", "<!DOCTYPE net>\n<net ", 1);
    refused_at(&xml, "<!DOCTYPE");
    let external = r#"<!DOCTYPE net SYSTEM "file:///etc/passwd">"#;
    refused_at(&TINY.replacen("<net ", external, 1), "<!DOCTYPE");
    // An entity no DTD declares, in an attribute the reader reads.
    refused_at(&tiny_with(r#"name="weight""#, r#"name="&b;""#), "&b;");
    // ... and where the reader reads nothing: in text, in any attribute.
    let xml = tiny_with(
        r#"<MO_version value="2024.6" />"#,
        "<MO_version>&b;</MO_version>",
    );
    let e = parse(xml.as_bytes()).unwrap_err();
    assert_eq!(e.offset, Some(xml.find("&b;").unwrap() as u64));
    let xml = tiny_with(r#"value="pytorch""#, r#"value="&b;""#);
    refused_at(&xml, "&b;");
    let xml = tiny_with(r#"value="pytorch""#, r#"value="&#0;""#);
    refused_at(&xml, "&#0;");
    let refs = "<MO_version>&lt;&gt;&amp;&apos;&quot;&#65;&#x42;</MO_version>";
    parse(tiny_with(r#"<MO_version value="2024.6" />"#, refs).as_bytes()).unwrap();
}

#[test]
fn nesting_deeper_than_the_cap_is_refused() {
    // net (1) > rt_info (2) > x ... : MAX_DEPTH levels in all is fine.
    let nest = |levels: usize| {
        let inner = "<x>".repeat(levels) + &"</x>".repeat(levels);
        tiny_with("<rt_info>", &format!("<rt_info>{inner}"))
    };
    parse(nest(MAX_DEPTH - 2).as_bytes()).unwrap();
    let deep = nest(MAX_DEPTH - 1);
    let e = parse(deep.as_bytes()).unwrap_err();
    let last = deep.find(&"<x>".repeat(MAX_DEPTH - 1)).unwrap() + 3 * (MAX_DEPTH - 2);
    assert_eq!(e.offset, Some(last as u64));
    // Far deeper, and never closed: refused at the same place.
    let abyss = tiny_with(
        "<rt_info>",
        &("<rt_info>".to_string() + &"<x>".repeat(100_000)),
    );
    assert_eq!(parse(abyss.as_bytes()).unwrap_err().offset, e.offset);
}

#[test]
fn a_const_past_the_end_of_the_bin() {
    let xml = tiny_with(r#"offset="43" size="3""#, r#"offset="1000" size="3""#);
    let m = parse(xml.as_bytes()).unwrap();
    assert!(check_against_bin(&m, TINY_BIN).is_err());
    check_against_bin(&m, 1003).unwrap();
    // offset + size past 2^64 is past any .bin.
    let mut m = parse(TINY.as_bytes()).unwrap();
    m.consts[0].offset = u64::MAX - 1;
    assert!(check_against_bin(&m, u64::MAX).is_err());
    // A size taken by hand that disagrees with the shape is refused too.
    let mut m = parse(TINY.as_bytes()).unwrap();
    m.consts[1].size = 5;
    assert!(check_against_bin(&m, u64::MAX).is_err());
}

#[test]
fn a_size_disagreeing_with_the_shape_is_refused() {
    for (from, to) in [
        (
            r#"shape="2, 3" offset="0" size="24""#,
            r#"shape="2, 3" offset="0" size="23""#,
        ),
        (
            r#"shape="2, 3" offset="0" size="24""#,
            r#"shape="2, 3" offset="0" size="25""#,
        ),
        (r#"offset="40" size="3""#, r#"offset="40" size="5""#),
        (r#"shape="" offset="32""#, r#"shape="0" offset="32""#),
        (
            r#"shape="2, 3" offset="0""#,
            r#"shape="4294967296, 4294967296" offset="0""#,
        ),
    ] {
        let xml = tiny_with(from, to);
        let layer = &xml[..xml.find(to).unwrap()];
        let e = parse(xml.as_bytes()).unwrap_err();
        assert_eq!(
            e.offset,
            Some(layer.rfind("<layer ").unwrap() as u64),
            "{to}"
        );
    }
}

#[test]
fn sub_byte_split_and_string_sizes() {
    let one = |t: &str, shape: &str, size: u64| {
        let data = format!(r#"element_type="{t}" shape="{shape}" offset="40" size="{size}""#);
        let xml = tiny_with(r#"element_type="u4" shape="5" offset="40" size="3""#, &data);
        let xml = xml.replace(r#"<port id="0" precision="U4"><dim>5</dim></port>"#, "");
        parse(xml.as_bytes()).map(|m| m.consts[3].size)
    };
    assert_eq!(one("u1", "9", 2), Ok(2));
    assert!(one("u1", "9", 1).is_err());
    assert_eq!(one("nf4", "3", 2), Ok(2));
    assert_eq!(one("f4e2m1", "3", 2), Ok(2));
    // u3: bits counted (1 byte for 1 element), or whole 3-byte groups as
    // the first releases with it wrote.
    assert_eq!(one("u3", "1", 1), Ok(1));
    assert_eq!(one("u3", "1", 3), Ok(3));
    assert!(one("u3", "1", 2).is_err());
    assert_eq!(one("u6", "5", 6), Ok(6));
    assert_eq!(one("u6", "5", 4), Ok(4));
    // A string Const's size depends on its strings, not its shape.
    assert_eq!(one("string", "5", 3), Ok(3));
    assert_eq!(one("f8e4m3", "5", 5), Ok(5));
}

#[test]
fn an_unknown_element_type_is_refused() {
    for t in [
        "f33",
        "F32",
        "FP32",
        "dynamic",
        "undefined",
        "bin",
        "",
        "f32 ",
    ] {
        let xml = tiny_with(
            r#"element_type="f32" shape="2, 3""#,
            &format!(r#"element_type="{t}" shape="2, 3""#),
        );
        refused_at(&xml, &format!(r#"element_type="{t}" shape="2, 3""#));
    }
}

#[test]
fn a_negative_or_non_numeric_dim_is_refused() {
    for shape in [
        "2, -3",
        "-1",
        "2, x",
        "2,,3",
        "2, 3,",
        ",2",
        " ",
        "2 3",
        "+2, 3",
        "2, 0x3",
        "9223372036854775808, 0",
        "18446744073709551616, 0",
    ] {
        let data = format!(r#"shape="{shape}" offset="0""#);
        refused_at(&tiny_with(r#"shape="2, 3" offset="0""#, &data), &data);
    }
    // Spaces around a dim are the serializer's own ", ".
    let m = parse(tiny_with(r#"shape="2, 3""#, r#"shape=" 2 ,3 ""#).as_bytes()).unwrap();
    assert_eq!(m.consts[0].shape, [2, 3]);
    let rank = vec!["1"; crate::format::MAX_RANK + 1].join(",");
    let data = format!(r#"shape="{rank}" offset="0""#);
    refused_at(&tiny_with(r#"shape="2, 3" offset="0""#, &data), &data);
}

#[test]
fn a_shape_disagreeing_with_the_port_dims_is_refused() {
    let dims = "<dim>2</dim>\n\t\t\t\t\t<dim>3</dim>";
    for other in [
        "<dim>3</dim><dim>2</dim>",
        "<dim>2</dim>",
        "<dim>2</dim><dim>3</dim><dim>1</dim>",
        "<dim>2</dim><dim>-1</dim>",
        "",
    ] {
        refused_at(&tiny_with(dims, other), r#"name="weight""#);
    }
    for bad in [
        "<dim>x</dim>",
        "<dim>-2</dim>",
        "<dim></dim>",
        "<dim><a/></dim>",
    ] {
        refused_at(&tiny_with(dims, &format!("<dim>2</dim>{bad}")), bad);
    }
    // Whitespace around a dim's number is taken; a second port is not.
    parse(tiny_with(dims, "<dim> 2 </dim><dim>\n3</dim>").as_bytes()).unwrap();
    let port = r#"<port id="0" precision="FP16"><dim>2</dim></port>"#;
    let two = format!("{port}<port id=\"9\" precision=\"FP16\"><dim>2</dim></port>");
    refused_at(&tiny_with(port, &two), r#"<port id="9""#);
}

#[test]
fn missing_attributes_are_refused() {
    let data = r#"<data element_type="f16" shape="2" offset="24" size="4" />"#;
    for attr in [
        r#" element_type="f16""#,
        r#" shape="2""#,
        r#" offset="24""#,
        r#" size="4""#,
    ] {
        let less = data.replacen(attr, "", 1);
        refused_at(&tiny_with(data, &less), &less);
    }
    let layer = r#"<layer id="3" name="bias" type="Const" version="opset1">"#;
    for attr in [
        r#" id="3""#,
        r#" name="bias""#,
        r#" type="Const""#,
        r#" version="opset1""#,
    ] {
        let less = layer.replacen(attr, "", 1);
        refused_at(&tiny_with(layer, &less), &less);
    }
    let edge = r#"<edge from-layer="0" from-port="0" to-layer="2" to-port="0" />"#;
    for attr in [
        r#" from-layer="0""#,
        r#" from-port="0""#,
        r#" to-layer="2""#,
        r#" to-port="0""#,
    ] {
        let less = edge.replacen(attr, "", 1);
        refused_at(&tiny_with(edge, &less), &less);
    }
    // A Const without <data> at all.
    let xml = tiny_with(
        r#"<data element_type="boolean" shape="3" offset="43" size="3" />"#,
        "",
    );
    refused_at(&xml, r#"name="flags""#);
}

#[test]
fn non_utf8_is_refused_where_it_starts() {
    let mut bytes = TINY.as_bytes().to_vec();
    let i = TINY.find("weight").unwrap();
    bytes[i] = 0xff;
    assert_eq!(parse(&bytes).unwrap_err().offset, Some(i as u64));
    let utf16: Vec<u8> = TINY.encode_utf16().flat_map(|u| u.to_le_bytes()).collect();
    assert!(parse(&utf16).is_err());
    let declared = TINY.replacen(
        r#"<?xml version="1.0"?>"#,
        r#"<?xml version="1.0" encoding="UTF-16"?>"#,
        1,
    );
    assert_eq!(parse(declared.as_bytes()).unwrap_err().offset, Some(0));
    let bom = [b"\xef\xbb\xbf".as_slice(), TINY.as_bytes()].concat();
    assert_eq!(parse(&bom).unwrap(), parse(TINY.as_bytes()).unwrap());
    // Offsets count the byte order mark.
    let broken = tiny_with(r#"size="24""#, r#"size="23""#);
    let e = parse(broken.as_bytes()).unwrap_err();
    let bom = [b"\xef\xbb\xbf".as_slice(), broken.as_bytes()].concat();
    assert_eq!(parse(&bom).unwrap_err().offset, e.offset.map(|o| o + 3));
}

#[test]
fn graph_structure_is_checked() {
    let dup = tiny_with(
        r#"<layer id="3" name="bias""#,
        r#"<layer id="1" name="bias""#,
    );
    refused_at(&dup, r#"<layer id="1" name="bias""#);
    let edge = r#"<edge from-layer="3" from-port="0" to-layer="7" to-port="1" />"#;
    let stray = tiny_with(
        edge,
        r#"<edge from-layer="30" from-port="0" to-layer="7" to-port="1" />"#,
    );
    refused_at(&stray, r#"from-layer="30""#);
    let twice = tiny_with("\t</layers>", "\t</layers>\n\t<layers></layers>");
    refused_at(&twice, "<layers></layers>");
    let none = TINY[..TINY.find("\t<layers>").unwrap()].to_string() + "</net>\n";
    refused_at(&none, "<net");
    let attr = tiny_with(
        r#"name="bias" type="Const""#,
        r#"name="bias" type="Const" name="b""#,
    );
    refused_at(&attr, r#"name="b""#);
    let data = r#"<data element_type="boolean" shape="3" offset="43" size="3" />"#;
    refused_at(&tiny_with(data, &format!("{data}<data/>")), "<data/>");
}

#[test]
fn markup_outside_or_broken_is_refused() {
    refused_at(&format!("{TINY}<net/>"), "<net/>");
    assert_eq!(
        parse(format!("x{TINY}").as_bytes()).unwrap_err().offset,
        Some(0)
    );
    assert!(parse(format!("{TINY}<!-- done -->\n").as_bytes()).is_ok());
    let text = tiny_with("\t<layers>", "\tstray\t<layers>");
    assert!(parse(text.as_bytes()).is_err());
    let cut = &TINY[..TINY.find("</net>").unwrap()];
    assert!(parse(cut.as_bytes()).is_err());
    let crossed = tiny_with("</edges>", "</edge>");
    assert!(parse(crossed.as_bytes()).is_err());
    let decl = tiny_with("<layers>", r#"<layers><?xml version="1.1"?>"#);
    refused_at(&decl, r#"<?xml version="1.1"?>"#);
    assert!(parse(b"").is_err());
    assert!(parse(b"   ").is_err());
}

#[test]
fn const_spellings_and_shared_names() {
    let xml = tiny_with(
        r#"name="bias" type="Const""#,
        r#"name="weight" type="constant""#,
    );
    let m = parse(xml.as_bytes()).unwrap();
    let names: Vec<_> = m.consts.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["weight", "weight", "scale", "packed", "flags"]);
    assert_eq!(m.ops["constant"], 1);
    // "const" is no type OpenVINO knows: a layer like any other.
    let xml = tiny_with(r#"name="bias" type="Const""#, r#"name="bias" type="const""#);
    assert_eq!(parse(xml.as_bytes()).unwrap().consts.len(), 4);
}

#[test]
fn too_many_attributes_or_too_much_xml_is_refused() {
    let many: String = (0..=MAX_ATTRIBUTES)
        .map(|i| format!(" a{i}=\"\""))
        .collect();
    let xml = tiny_with("<rt_info>", &format!("<rt_info><x{many}/>"));
    refused_at(&xml, "<x a0");
    let big = vec![b' '; MAX_XML_LEN as usize + 1];
    assert_eq!(parse(&big).unwrap_err().offset, None);
}

/// Flips bytes of the two IRs at seeded random places: nothing panics,
/// and what is accepted fits a `.bin` exactly as long as its last Const.
#[test]
fn mutations_never_panic() {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for base in [TINY, LOOP] {
        for _ in 0..3000 {
            let mut bytes = base.as_bytes().to_vec();
            for _ in 0..1 + next() % 4 {
                let i = (next() % bytes.len() as u64) as usize;
                bytes[i] = b"<>/=\"&;#x019 -,a"[(next() % 16) as usize];
            }
            if let Ok(m) = parse(&bytes) {
                let end = m
                    .consts
                    .iter()
                    .map(|c| c.offset + c.size)
                    .max()
                    .unwrap_or(0);
                check_against_bin(&m, end).unwrap();
                for c in &m.consts {
                    let _ = ztensor_type(&c.element_type);
                }
            }
        }
    }
}
