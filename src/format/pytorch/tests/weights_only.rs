//! Agreement with `torch.load(weights_only=True)`, one test per class:
//! the opcodes it reads (by table, both ways), the constructions it
//! accepts, the arguments of each rebuild that change a tensor's values
//! (math bits, state, `BUILD`), dict keys as Python compares them, and
//! calls that cost what their opcodes cost.

use super::super::pickle::{self, Obj, OPCODES};
use super::super::{check_extent, Tensor, Walk};
use super::{global, rule, string, v2_args};
use crate::error::Rule;
use crate::format::safetensors::Dtype;

/// `('storage', torch.TYPE, KEY, 'cpu', numel)` as a persistent id.
fn pid(ty_module: &str, ty: &str, key: &str, numel: u8) -> Vec<u8> {
    let mut p = b"(".to_vec();
    p.extend(string("storage"));
    p.extend(global(ty_module, ty));
    p.extend(string(key));
    p.extend(string("cpu"));
    p.extend([b'K', numel, b't', b'Q']);
    p
}

fn ints(ns: &[u8]) -> Vec<u8> {
    let mut p = b"(".to_vec();
    for &n in ns {
        p.extend([b'K', n]);
    }
    p.push(b't');
    p
}

/// `_rebuild_tensor_v2(storage(TYPE, '0', numel), 0, shape, stride,
/// grad, OrderedDict()[, EXTRA])`.
fn v2(ty: &str, numel: u8, shape: &[u8], grad: bool, extra: &[u8]) -> Vec<u8> {
    let mut p = global("torch._utils", "_rebuild_tensor_v2");
    p.push(b'(');
    p.extend(pid("torch", ty, "0", numel));
    p.extend(b"K\x00");
    p.extend(ints(shape));
    p.extend(ints(&[1][..shape.len().min(1)]));
    p.push(if grad { 0x88 } else { 0x89 });
    p.extend(global("collections", "OrderedDict"));
    p.extend(b")R");
    p.extend(extra);
    p.extend(b"tR");
    p
}

/// `{KEY: True, ...}`.
fn flags(keys: &[&str]) -> Vec<u8> {
    let mut p = b"}(".to_vec();
    for k in keys {
        p.extend(string(k));
        p.push(0x88);
    }
    p.push(b'u');
    p
}

fn pickled(body: &[u8]) -> pickle::Pickled {
    let p = [b"\x80\x02".as_slice(), body, b"."].concat();
    pickle::load(&p).unwrap_or_else(|e| panic!("{e}"))
}

fn refused(body: &[u8]) -> crate::error::Error {
    let p = [b"\x80\x02".as_slice(), body, b"."].concat();
    pickle::load(&p).map(|_| ()).unwrap_err()
}

fn tensor(body: &[u8]) -> pickle::Tensor {
    let got = pickled(body);
    match got.obj(got.value) {
        Some(Obj::Tensor(t)) => t.clone(),
        x => panic!("a tensor: {x:?}"),
    }
}

/// A sample pickle for each opcode torch's loader reads: each must load,
/// and together they use every such opcode of [`OPCODES`].
const READ: [(&str, &[u8]); 26] = [
    ("MARK TUPLE BININT1", b"(K\x01t"),
    ("BININT", b"J\x01\x00\x00\x00"),
    ("BININT2", b"M\x01\x00"),
    ("NONE", b"N"),
    ("SHORT_BINSTRING", b"U\x01a"),
    ("BINUNICODE", b"X\x01\x00\x00\x00a"),
    ("EMPTY_LIST APPEND", b"]K\x01a"),
    ("APPENDS", b"](K\x01e"),
    ("GLOBAL EMPTY_TUPLE REDUCE", b"ccollections\nOrderedDict\n)R"),
    ("BUILD EMPTY_DICT", b"ccollections\nOrderedDict\n)R}b"),
    ("EMPTY_SET", b"\x8f"),
    ("BINPUT BINGET", b"Nq\x00h\x00"),
    ("LONG_BINPUT LONG_BINGET", b"Nr\x00\x00\x00\x00j\x00\x00\x00\x00"),
    ("SETITEM", b"}K\x01K\x02s"),
    ("SETITEMS", b"}(K\x01K\x02u"),
    ("BINFLOAT", b"G?\xf0\x00\x00\x00\x00\x00\x00"),
    ("PROTO", b"\x80\x04N"),
    ("NEWOBJ", b"ccollections\nOrderedDict\n)\x81"),
    ("TUPLE1", b"K\x01\x85"),
    ("TUPLE2", b"K\x01K\x02\x86"),
    ("TUPLE3", b"K\x01K\x02K\x03\x87"),
    ("NEWTRUE", b"\x88"),
    ("NEWFALSE", b"\x89"),
    ("LONG1", b"\x8a\x01\x01"),
    (
        "BINPERSID",
        b"(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x01tQ",
    ),
    ("STOP", b"N"),
];

#[test]
fn every_opcode_torch_reads_is_read_and_every_other_refused_by_name() {
    for (names, body) in READ {
        pickled(body);
        let _ = names;
    }
    for (op, name, read) in OPCODES {
        if read {
            let used = READ.iter().any(|(n, _)| n.split(' ').any(|x| x == name));
            assert!(used, "{name}: torch reads it, and no sample here does");
            continue;
        }
        // The opcode followed by enough bytes for any argument it takes.
        let mut p = b"\x80\x02".to_vec();
        p.push(op);
        p.extend(b"a\nb\n\x00\x00\x00\x00\x00\x00\x00\x00.");
        let e = pickle::load(&p).map(|_| ()).unwrap_err();
        let text = e.to_string();
        match op {
            b'i' => assert!(text.contains("INST") && text.contains("a.b"), "{text}"),
            _ => assert!(text.contains(name), "{name}: {text}"),
        }
        assert!(
            matches!(e.rule(), Some(Rule::TorchPickle | Rule::TorchGlobal)),
            "{name}"
        );
    }
}

#[test]
fn inst_is_refused_naming_the_global_it_calls() {
    let e = refused(b"(X\x01\x00\x00\x00xios\nsystem\n");
    assert_eq!(e.rule(), Some(Rule::TorchGlobal));
    assert!(e.to_string().contains("os.system"), "{e}");
}

#[test]
fn math_bits_are_read_as_torch_sets_them() {
    let t = tensor(&v2("FloatStorage", 6, &[6], false, &flags(&["neg"])));
    assert!(t.neg && !t.conj);
    let t = tensor(&v2(
        "ComplexFloatStorage",
        6,
        &[6],
        false,
        &flags(&["conj"]),
    ));
    assert!(t.conj && !t.neg);
    // A key present sets its bit whatever its bool (torch's
    // set_tensor_metadata); other keys are other backends'.
    let mut neg_false = b"}(".to_vec();
    neg_false.extend(string("neg"));
    neg_false.extend(b"\x89u");
    assert!(tensor(&v2("FloatStorage", 6, &[6], false, &neg_false)).neg);
    let t = tensor(&v2("FloatStorage", 6, &[6], false, &flags(&["other"])));
    assert!(!t.neg && !t.conj);
    assert!(!tensor(&v2("FloatStorage", 6, &[6], false, b"}")).neg);
    assert!(!tensor(&v2("FloatStorage", 6, &[6], false, b"N")).neg);
    // Negation ztfs does not compute (an integer, an unsigned format).
    let e = refused(&v2("LongStorage", 6, &[6], false, &flags(&["neg"])));
    assert_eq!(e.rule(), Some(Rule::TorchTensor), "{e}");
    // Metadata of another kind, or with values that are not bools.
    assert_eq!(
        rule(
            &[
                b"\x80\x02",
                &v2("FloatStorage", 6, &[6], false, b"(K\x01t")[..],
                b"."
            ]
            .concat()
        ),
        Rule::TorchTensor
    );
    let mut int_value = b"}(".to_vec();
    int_value.extend(string("neg"));
    int_value.extend(b"K\x01u");
    let e = refused(&v2("FloatStorage", 6, &[6], false, &int_value));
    assert_eq!(e.rule(), Some(Rule::TorchTensor), "{e}");
}

/// `[1+2j, 3-4j]` conjugated is `[1-2j, 3+4j]`; `x` negated is `-x`, bit
/// for bit (NaN and zero included), from any offset of the view.
#[test]
fn the_math_bits_flip_the_values_bit_for_bit() {
    let t = |dtype, neg, conj| Tensor {
        name: "t".into(),
        dtype,
        shape: vec![2],
        stride: vec![1],
        offset: 0,
        storage: 0,
        neg,
        conj,
        quant: None,
    };
    let read = |t: &Tensor, bytes: &[u8], offset: usize, len: usize| {
        let bits = (t.width() * 8) as u32;
        let v = crate::decode::hurray::RowMajor::strided(
            0,
            bytes.len() as u64,
            &t.shape,
            bits,
            &t.stride,
            0,
        )
        .unwrap()
        .with_sign_flip(t.sign_flip());
        let mut out = vec![0u8; len];
        v.read_into(&bytes, offset as u64, &mut out).unwrap();
        out
    };
    let c = |v: [f32; 4]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let conj = t(Dtype::C64, false, true);
    assert!(!conj.in_place());
    assert_eq!(
        read(&conj, &c([1., 2., 3., -4.]), 0, 16),
        c([1., -2., 3., 4.])
    );
    assert_eq!(
        read(&conj, &c([1., 2., 3., -4.]), 3, 9),
        c([1., -2., 3., 4.])[3..12]
    );
    let neg = t(Dtype::C64, true, false);
    assert_eq!(
        read(&neg, &c([1., 2., 3., -4.]), 0, 16),
        c([-1., -2., -3., 4.])
    );
    let both = t(Dtype::C64, true, true);
    assert_eq!(
        read(&both, &c([1., 2., 3., -4.]), 0, 16),
        c([-1., 2., -3., -4.])
    );
    let f = t(Dtype::F32, true, false);
    let nan = f32::from_bits(0x7fc0_0001);
    let want: Vec<u8> = [-0.0f32, f32::from_bits(0xffc0_0001)]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let have: Vec<u8> = [0.0f32, nan].iter().flat_map(|x| x.to_le_bytes()).collect();
    assert_eq!(read(&f, &have, 0, 8), want);
    // A conjugate bit on a real dtype changes nothing.
    assert!(t(Dtype::F32, false, true).in_place());
    assert!(t(Dtype::F32, false, false).in_place());
}

#[test]
fn a_state_that_rewrites_a_tensor_after_its_rebuild_is_refused() {
    // BUILD on a tensor: torch runs set_(*state).
    let mut p = v2("FloatStorage", 6, &[6], false, b"");
    p.extend(b"(K\x00tb");
    let e = refused(&p);
    assert_eq!(e.rule(), Some(Rule::TorchTensor), "{e}");
    assert!(e.to_string().contains("BUILD of a tensor"), "{e}");
    // _rebuild_from_type_v2(func, Tensor, args, state): state {'data': x}
    // sets .data; an empty state, None or ({}, None) set nothing.
    let wrap = |state: &[u8]| {
        let mut p = global("torch._tensor", "_rebuild_from_type_v2");
        p.push(b'(');
        p.extend(global("torch._utils", "_rebuild_tensor_v2"));
        p.extend(global("torch", "Tensor"));
        p.extend(v2_args());
        p.extend(state);
        p.extend(b"tR");
        p
    };
    let mut data = b"}(".to_vec();
    data.extend(string("data"));
    data.extend(b"K\x01u");
    let e = refused(&wrap(&data));
    assert_eq!(e.rule(), Some(Rule::TorchTensor), "{e}");
    assert!(e.to_string().contains("\"data\""), "{e}");
    for state in [&b"}"[..], b"N", b"}N\x86"] {
        tensor(&wrap(state));
    }
    // _rebuild_parameter_with_state(data, requires_grad, hooks, state).
    let with_state = |state: &[u8]| {
        let mut p = global("torch._utils", "_rebuild_parameter_with_state");
        p.push(b'(');
        p.extend(v2("FloatStorage", 6, &[6], false, b""));
        p.push(0x88);
        p.extend(global("collections", "OrderedDict"));
        p.extend(b")R");
        p.extend(state);
        p.extend(b"tR");
        p
    };
    assert!(tensor(&with_state(b"}")).shape == vec![6]);
    assert_eq!(refused(&with_state(&data)).rule(), Some(Rule::TorchTensor));
}

#[test]
fn requires_grad_and_hooks_are_checked_as_torch_sets_them() {
    // An integer tensor cannot require gradients.
    let e = refused(&v2("LongStorage", 6, &[6], true, b""));
    assert_eq!(e.rule(), Some(Rule::TorchTensor), "{e}");
    tensor(&v2("LongStorage", 6, &[6], false, b""));
    tensor(&v2("FloatStorage", 6, &[6], true, b""));
    // Hooks that are not empty.
    let mut p = global("torch._utils", "_rebuild_tensor_v2");
    p.push(b'(');
    p.extend(pid("torch", "FloatStorage", "0", 6));
    p.extend(b"K\x00");
    p.extend(ints(&[6]));
    p.extend(ints(&[1]));
    p.extend(b"\x89}K\x01K\x02stR");
    assert_eq!(refused(&p).rule(), Some(Rule::TorchTensor));
}

#[test]
fn constructions_torch_accepts_are_read() {
    // OrderedDict([('w', t)]), by REDUCE with a list of pairs.
    let mut p = global("collections", "OrderedDict");
    p.extend(b"(]");
    p.extend(string("w"));
    p.extend(v2("FloatStorage", 6, &[6], false, b""));
    p.extend(b"\x86atR");
    let got = pickled(&p);
    let Some(Obj::OrderedDict(items)) = got.obj(got.value) else {
        panic!("an ordered dict")
    };
    assert!(matches!(got.obj(items[0].1), Some(Obj::Tensor(_))));
    // Parameter(t), by REDUCE and by NEWOBJ; Parameter of an int tensor
    // requires gradients, which torch refuses.
    for op in [b'R', 0x81] {
        let mut p = global("torch.nn.parameter", "Parameter");
        p.extend(v2("FloatStorage", 6, &[6], false, b""));
        p.extend([0x85, op]);
        tensor(&p);
        let mut p = global("torch.nn.parameter", "Parameter");
        p.extend(v2("LongStorage", 6, &[6], false, b""));
        p.extend([0x85, op]);
        assert_eq!(refused(&p).rule(), Some(Rule::TorchTensor));
    }
    // A v2 tensor over an untyped storage is a uint8 one.
    let mut p = global("torch._utils", "_rebuild_tensor_v2");
    p.push(b'(');
    p.extend(pid("torch.storage", "UntypedStorage", "0", 6));
    p.extend(b"K\x00");
    p.extend(ints(&[6]));
    p.extend(ints(&[1]));
    p.push(0x89);
    p.extend(b"NtR");
    assert_eq!(tensor(&p).dtype, Dtype::U8);
    // An empty tensor whose offset lies past its storage.
    let empty = Tensor {
        name: "e".into(),
        dtype: Dtype::F32,
        shape: vec![0, 3],
        stride: vec![3, 1],
        offset: u64::MAX / 2,
        storage: 0,
        neg: false,
        conj: false,
        quant: None,
    };
    assert!(check_extent(&empty, 8).is_ok());
    assert_eq!(empty.byte_offset(), 0);
    // Values that are no tensor: Python 2's builtins, a counter, a set, a
    // device, a complex number, bytes.
    for body in [
        [global("__builtin__", "set"), b"]\x85R".to_vec()].concat(),
        [global("collections", "Counter"), b")R".to_vec()].concat(),
        [global("torch", "device"), string("cpu"), b"\x85R".to_vec()].concat(),
        [
            global("builtins", "complex"),
            b"G?\xf0\x00\x00\x00\x00\x00\x00K\x02\x86R".to_vec(),
        ]
        .concat(),
        [global("builtins", "bytearray"), b")R".to_vec()].concat(),
        [
            global("_codecs", "encode"),
            string("abc"),
            string("latin1"),
            b"\x86R".to_vec(),
        ]
        .concat(),
    ] {
        pickled(&body);
    }
}

/// Two keys Python holds apart but that name one entry (`"1"` and `1`):
/// refused with both; one key set twice is Python's last value.
#[test]
fn dict_keys_that_name_one_entry_are_refused_with_both() {
    let t = v2("FloatStorage", 6, &[6], false, b"");
    let mut p = b"}(".to_vec();
    p.extend(string("1"));
    p.extend(&t);
    p.extend(b"K\x01");
    p.extend(&t);
    p.push(b'u');
    let got = pickled(&p);
    let e = Walk::new(&got)
        .value(got.value, &mut Vec::new(), 0)
        .unwrap_err();
    assert_eq!(e.rule(), Some(Rule::TorchPickle), "{e}");
    let text = e.to_string();
    assert!(
        text.contains("\"1\" (a string)") && text.contains("1 (an int)"),
        "{text}"
    );
    // The same key twice: one entry, its last value.
    let mut p = b"}(".to_vec();
    p.extend(string("w"));
    p.extend(b"K\x01");
    p.extend(string("w"));
    p.extend(&t);
    p.push(b'u');
    let got = pickled(&p);
    let mut walk = Walk::new(&got);
    walk.value(got.value, &mut Vec::new(), 0).unwrap();
    assert_eq!(walk.found.len(), 1);
}

/// A call reads its arguments in place: a tuple of a million values
/// passed to a call is refused by its count, not copied; a device or bytes
/// made of a big string copy nothing.
#[test]
fn a_call_costs_what_its_opcodes_cost() {
    let mut p = b"(".to_vec();
    p.extend(b"N".repeat(1 << 20));
    p.extend(b"tq\x00");
    p.extend(global("collections", "OrderedDict"));
    p.extend(b"h\x00R");
    let e = refused(&p);
    assert!(
        e.to_string().contains("REDUCE with 1048576 arguments"),
        "{e}"
    );
    let big = "x".repeat(1 << 20);
    let mut p = string(&big);
    p.extend(b"q\x00]");
    for _ in 0..2000 {
        p.extend(global("torch", "device"));
        p.extend(b"h\x00\x85Ra");
        p.extend(global("_codecs", "encode"));
        p.extend(b"h\x00");
        p.extend(string("latin1"));
        p.extend(b"\x86Ra");
    }
    let got = pickled(&p);
    assert!(got.held < 4 << 20, "{} bytes held", got.held);
}

/// A key of a megabyte named by many dicts is read once per entry: the
/// walk's reading of keys is bounded too.
#[test]
fn the_walk_reads_keys_within_a_bound() {
    let mut p = string(&"k".repeat(1 << 20));
    p.extend(b"q\x00]");
    for _ in 0..300 {
        p.extend(b"}h\x00K\x01sa");
    }
    let got = pickled(&p);
    let e = Walk::new(&got)
        .value(got.value, &mut Vec::new(), 0)
        .unwrap_err();
    assert!(e.to_string().contains("keys take more than"), "{e}");
}

/// `_rebuild_qtensor(storage(TYPE, '0', 4), 0, (4,), (1,), PARAMS, grad,
/// OrderedDict())`, as torch.save writes a quantized tensor.
fn qtensor(ty: &str, params: &[u8], grad: bool) -> Vec<u8> {
    let mut p = global("torch._utils", "_rebuild_qtensor");
    p.push(b'(');
    p.extend(pid("torch", ty, "0", 4));
    p.extend(b"K\x00");
    p.extend(ints(&[4]));
    p.extend(ints(&[1]));
    p.extend(params);
    p.push(if grad { 0x88 } else { 0x89 });
    p.extend(global("collections", "OrderedDict"));
    p.extend(b")RtR");
    p
}

/// `(torch.per_tensor_affine, 0.5, 3)`.
fn per_tensor() -> Vec<u8> {
    let mut p = b"(".to_vec();
    p.extend(global("torch", "per_tensor_affine"));
    p.push(b'G');
    p.extend(0.5f64.to_be_bytes());
    p.extend(b"K\x03t");
    p
}

/// A quantized tensor of a scheme read here keeps its integers' type and
/// its scheme; one that would need gradients, of a storage that is not
/// quantized, or with parameters of another shape is refused as torch's
/// loader refuses it (or as ztfs does not serve it).
#[test]
fn a_quantized_tensor_keeps_its_scheme() {
    use pickle::{QScheme, QType};
    let t = tensor(&qtensor("QInt8Storage", &per_tensor(), false));
    assert_eq!(t.dtype, Dtype::I8);
    let scheme = QScheme::PerTensor {
        scale: 0.5f64.to_bits(),
        zero_point: 3,
    };
    assert_eq!(t.quant, Some((QType::QInt8, scheme)));
    assert_eq!(
        tensor(&qtensor("QInt32Storage", &per_tensor(), false)).dtype,
        Dtype::I32
    );
    for bad in [
        qtensor("QInt8Storage", &per_tensor(), true),
        qtensor("CharStorage", &per_tensor(), false),
        qtensor("QUInt4x2Storage", &per_tensor(), false),
        qtensor("QUInt8Storage", b"(K\x01t", false),
    ] {
        assert_eq!(refused(&bad).rule(), Some(Rule::TorchTensor));
    }
    // Per channel: scales and zero points must be tensors.
    let mut p = b"(".to_vec();
    p.extend(global("torch", "per_channel_affine"));
    p.extend(b"G");
    p.extend(0.5f64.to_be_bytes());
    p.extend(b"K\x00K\x00t");
    assert_eq!(
        refused(&qtensor("QUInt8Storage", &p, false)).rule(),
        Some(Rule::TorchTensor)
    );
}
