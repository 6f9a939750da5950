//! ONNX messages written by hand, field by field (the interop suite is to
//! check them against the `onnx` package's own files).

use super::*;
use crate::format::protobuf::encode::{len_field, v, varint_field};

fn pair(number: u64, k: &str, val: &str) -> Vec<u8> {
    len_field(
        number,
        &[len_field(1, k.as_bytes()), len_field(2, val.as_bytes())].concat(),
    )
}

/// A TensorProto of f32 `data` in raw_data, dims `dims`.
fn raw_tensor(name: &str, dims: &[u64], data: &[u8]) -> Vec<u8> {
    let packed: Vec<u8> = dims.iter().flat_map(|&d| v(d)).collect();
    [
        len_field(1, &packed),
        varint_field(2, 1),
        len_field(8, name.as_bytes()),
        len_field(9, data),
    ]
    .concat()
}

fn node(op: &str, outputs: &[&str], attrs: &[Vec<u8>]) -> Vec<u8> {
    let mut n = Vec::new();
    for o in outputs {
        n.extend(len_field(2, o.as_bytes()));
    }
    n.extend(len_field(4, op.as_bytes()));
    for a in attrs {
        n.extend(len_field(5, a));
    }
    n
}

fn model(graph: &[u8]) -> Vec<u8> {
    [
        varint_field(1, 9),
        len_field(2, b"pytorch"),
        len_field(3, b"2.9"),
        len_field(8, &[len_field(1, b""), varint_field(2, 17)].concat()),
        len_field(7, graph),
        pair(14, "author", "me"),
    ]
    .concat()
}

#[test]
fn a_model_s_tensors_and_facts() {
    let w: Vec<u8> = (0..6).flat_map(|i| (i as f32).to_le_bytes()).collect();
    // int64_data, packed, for a Constant's value.
    let ints = [
        varint_field(2, 7),
        varint_field(1, 3),
        len_field(7, &[v(1), v(2), v(3)].concat()),
        len_field(8, b"ignored"),
    ]
    .concat();
    let sub = len_field(5, &raw_tensor("inner", &[1], &1f32.to_le_bytes()));
    let if_node = node(
        "If",
        &["y"],
        &[[len_field(1, b"then_branch"), len_field(6, &sub)].concat()],
    );
    let external = [
        len_field(8, b"ext"),
        varint_field(2, 1),
        varint_field(1, 4),
        pair(13, "location", "weights.bin"),
        pair(13, "offset", "4096"),
        pair(13, "length", "16"),
        varint_field(14, 1),
    ]
    .concat();
    let sparse = len_field(1, &raw_tensor("sp", &[1], &[0; 4]));
    let graph = [
        len_field(
            1,
            &node(
                "Constant",
                &["c"],
                &[[len_field(1, b"value"), len_field(5, &ints)].concat()],
            ),
        ),
        len_field(5, &raw_tensor("w", &[2, 3], &w)),
        len_field(1, &if_node),
        len_field(5, &external),
        len_field(15, &sparse),
        len_field(11, &len_field(1, b"x")),
        len_field(12, &len_field(1, b"y")),
        len_field(1, &node("MatMul", &["z"], &[])),
        len_field(1, &node("MatMul", &["z2"], &[])),
    ]
    .concat();
    let bytes = model(&graph);
    let m = parse(&bytes).unwrap();
    assert_eq!(m.ir_version, Some(9));
    assert_eq!(
        (m.producer_name.as_str(), m.producer_version.as_str()),
        ("pytorch", "2.9")
    );
    assert_eq!(m.opsets, [(String::new(), 17)]);
    assert_eq!(m.metadata, [("author".to_string(), "me".to_string())]);
    assert_eq!(
        (m.inputs.as_slice(), m.outputs.as_slice()),
        (&["x".to_string()][..], &["y".to_string()][..])
    );
    assert_eq!(m.ops.get("MatMul"), Some(&2));
    assert_eq!(m.ops.get("Constant"), Some(&1));
    assert_eq!(m.sparse, ["sp"]);
    let names: Vec<&str> = m.tensors.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["c", "w", "inner", "ext"]);
    let c = &m.tensors[0];
    assert_eq!(
        (c.data_type, c.dims.as_slice(), &c.source),
        (7, &[3u64][..], &Source::Constant { depth: 0 })
    );
    let Data::Typed {
        field: 7,
        message: (at, len),
    } = c.data
    else {
        panic!("{:?}", c.data)
    };
    assert_eq!(&bytes[at as usize..(at + len) as usize], &ints[..]);
    let t = &m.tensors[1];
    assert_eq!(t.dims, [2, 3]);
    let Data::Raw { offset, len } = t.data else {
        panic!()
    };
    assert_eq!(&bytes[offset as usize..(offset + len) as usize], &w[..]);
    assert_eq!(m.tensors[2].source, Source::Initializer { depth: 1 });
    assert_eq!(
        m.tensors[3].data,
        Data::External {
            location: "weights.bin".into(),
            offset: Some(4096),
            length: Some(16)
        }
    );
}

#[test]
fn fields_in_any_order_split_and_repeated() {
    // dims unpacked then packed; the name twice (the last wins); an
    // unknown field; a known field in another wire type (kept as unknown).
    let t = [
        len_field(9, &[1, 2, 3, 4]),
        len_field(8, b"first"),
        varint_field(1, 2),
        len_field(1, &v(2)),
        len_field(2, b"not a varint"),
        varint_field(2, 2),
        varint_field(99, 5),
        len_field(8, b"last"),
    ]
    .concat();
    let m = parse(&model(&len_field(5, &t))).unwrap();
    let t = &m.tensors[0];
    assert_eq!(
        (t.name.as_str(), t.dims.as_slice(), t.data_type),
        ("last", &[2u64, 2][..], 2)
    );
}

#[test]
fn what_this_reader_refuses() {
    let cases: Vec<(Vec<u8>, &str)> = vec![
        ([varint_field(1, 9)].concat(), "a model with no graph"),
        (
            model(&len_field(5, &varint_field(1, u64::MAX))),
            "a negative dim -1",
        ),
        (
            model(&len_field(5, &len_field(8, &[0xff]))),
            "a string that is not UTF-8",
        ),
        (
            model(&len_field(5, &varint_field(14, 2))),
            "data_location 2 is neither DEFAULT (0) nor EXTERNAL (1)",
        ),
        (
            model(&len_field(5, &varint_field(14, 1))),
            "external data with no location",
        ),
        (
            model(&len_field(
                5,
                &[
                    varint_field(14, 1),
                    pair(13, "location", "a"),
                    pair(13, "offset", "-1"),
                ]
                .concat(),
            )),
            "external_data offset \"-1\" is not a whole number",
        ),
        (
            vec![0x0e],
            "not protobuf: a wire type protobuf does not have (6 or 7)",
        ),
    ];
    for (bytes, what) in cases {
        assert_eq!(parse(&bytes).unwrap_err().what, what);
    }
}

#[test]
fn subgraphs_nest_only_so_deep() {
    let nest = |depth: u32| {
        let mut g = Vec::new();
        for _ in 0..depth {
            g = node(
                "Loop",
                &["o"],
                &[[len_field(1, b"body"), len_field(6, &g)].concat()],
            );
            g = len_field(1, &g);
        }
        model(&g)
    };
    assert!(parse(&nest(MAX_GRAPH_DEPTH)).is_ok());
    let e = parse(&nest(MAX_GRAPH_DEPTH + 1)).unwrap_err();
    assert!(e.what.contains("nested deeper"), "{e}");
}

/// A graph written in two parts is one graph (protobuf merges a message
/// field written twice); a Constant's tensor in two parts is refused.
#[test]
fn a_graph_in_two_parts_is_merged() {
    let g1 = len_field(5, &raw_tensor("a", &[1], &[0; 4]));
    let g2 = len_field(5, &raw_tensor("b", &[1], &[0; 4]));
    let bytes = [varint_field(1, 9), len_field(7, &g1), len_field(7, &g2)].concat();
    let names: Vec<String> = parse(&bytes)
        .unwrap()
        .tensors
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["a", "b"]);
    let t = raw_tensor("", &[1], &[0; 4]);
    let attr = [len_field(1, b"value"), len_field(5, &t), len_field(5, &t)].concat();
    let g = len_field(1, &node("Constant", &["c"], &[attr]));
    let e = parse(&model(&g)).unwrap_err();
    assert!(e.what.contains("two parts"), "{e}");
}
