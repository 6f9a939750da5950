//! The pickle interpreter and the archive's rules, one test per attack
//! or rule, on byte literals (the interop suite holds whole files against
//! a second reader).

use super::pickle::{self, Obj, Value};
use super::*;
use crate::error::Rule;

mod weights_only;

pub(super) fn rule(data: &[u8]) -> Rule {
    pickle::load(data).unwrap_err().rule().expect("a rejection")
}

/// `BINUNICODE s`.
pub(super) fn string(s: &str) -> Vec<u8> {
    let mut p = vec![b'X'];
    p.extend((s.len() as u32).to_le_bytes());
    p.extend(s.as_bytes());
    p
}

/// `GLOBAL module name` as protocol 2 writes it.
pub(super) fn global(module: &str, name: &str) -> Vec<u8> {
    format!("c{module}\n{name}\n").into_bytes()
}

/// The argument tuple of `_rebuild_tensor_v2` for a 2x3 f32 tensor of
/// storage `'0'` (6 floats), as torch pickles it.
pub(super) fn v2_args() -> Vec<u8> {
    let mut p = b"((X\x07\x00\x00\x00storage".to_vec();
    p.extend(global("torch", "FloatStorage"));
    p.extend(b"X\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x06tQ");
    p.extend(b"K\x00K\x02K\x03\x86K\x03K\x01\x86\x89");
    p.extend(global("collections", "OrderedDict"));
    p.extend(b")Rt");
    p
}

#[test]
fn a_state_dict_of_one_tensor_is_read() {
    // OrderedDict(w=_rebuild_tensor_v2(storage('0', Float, 6), 0, (2, 3), (3, 1), False, OrderedDict()))
    let mut p = b"\x80\x02".to_vec();
    p.extend(global("collections", "OrderedDict"));
    p.extend(b")Rq\x00X\x01\x00\x00\x00w");
    p.extend(global("torch._utils", "_rebuild_tensor_v2"));
    p.extend(v2_args());
    p.extend(b"Rs.");
    let got = pickle::load(&p).unwrap();
    let Some(Obj::OrderedDict(items)) = got.obj(got.value) else {
        panic!("a dict: {:?}", got.value)
    };
    let Some(Obj::Tensor(t)) = got.obj(items[0].1) else {
        panic!("a tensor")
    };
    assert_eq!(
        (t.shape.clone(), t.stride.clone(), t.offset),
        (vec![2, 3], vec![3, 1], 0)
    );
    assert_eq!(t.dtype, crate::format::safetensors::Dtype::F32);
}

#[test]
fn every_global_off_the_allowlist_is_refused_by_name() {
    for (m, n) in [
        ("os", "system"),
        ("posix", "system"),
        ("builtins", "eval"),
        ("builtins", "exec"),
        ("__builtin__", "getattr"),
        ("subprocess", "Popen"),
        ("torch", "load"),
        ("collections", "defaultdict"),
        ("torch", "UntypedStorage"),
        ("torch", "float"),
    ] {
        let mut p = b"\x80\x02".to_vec();
        p.extend(global(m, n));
        p.push(b'.');
        let e = pickle::load(&p).unwrap_err();
        assert_eq!(e.rule(), Some(Rule::TorchGlobal), "{m}.{n}");
        assert!(e.to_string().contains(&format!("{m}.{n}")), "{e}");
    }
    // STACK_GLOBAL is an opcode torch's weights-only loader refuses.
    let e = pickle::load(b"\x80\x02X\x02\x00\x00\x00osX\x06\x00\x00\x00system\x93.").unwrap_err();
    assert_eq!(e.rule(), Some(Rule::TorchPickle));
    assert!(e.to_string().contains("STACK_GLOBAL"), "{e}");
}

#[test]
fn an_allowed_global_called_as_it_builds_nothing_is_refused() {
    let mut p = b"\x80\x02".to_vec();
    p.extend(global("torch", "FloatStorage"));
    p.extend(b")R.");
    assert_eq!(rule(&p), Rule::TorchGlobal);
}

#[test]
fn opcodes_that_call_code_are_refused() {
    for p in [
        &b"\x80\x02(cos\nsystem\nX\x01\x00\x00\x00xo."[..], // OBJ after a refused GLOBAL: refused at the global
        b"\x80\x02(ios\nsystem\nX\x01\x00\x00\x00x.",       // INST
        b"\x80\x02\x82\x01.",                               // EXT1
        b"\x80\x05\x97.",                                   // NEXT_BUFFER
        b"\x80\x02I1\n.",                                   // protocol 0 INT
    ] {
        let r = rule(p);
        assert!(
            matches!(r, Rule::TorchPickle | Rule::TorchGlobal),
            "{p:?}: {r:?}"
        );
    }
}

#[test]
fn bounds_hold_before_anything_grows() {
    let flood = [b"\x80\x02".as_slice(), &[b'('; pickle::MAX_MARKS + 1], b"."].concat();
    assert_eq!(rule(&flood), Rule::TorchPickle);
    // A string claiming more bytes than are left.
    assert_eq!(rule(b"\x80\x02X\xff\xff\xff\x7f."), Rule::TorchPickle);
    assert_eq!(
        rule(b"\x80\x02\x8d\xff\xff\xff\xff\xff\xff\xff\xff."),
        Rule::TorchPickle
    );
    // A memo fetch of an entry never put; a stack underflow; no STOP.
    assert_eq!(rule(b"\x80\x02h\x05."), Rule::TorchPickle);
    assert_eq!(rule(b"\x80\x02s."), Rule::TorchPickle);
    assert_eq!(rule(b"\x80\x02N"), Rule::TorchPickle);
    // An integer past 64 bits is another value, as to Python.
    let got = pickle::load(b"\x80\x02\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01.").unwrap();
    assert_eq!(got.value, Value::Other);
}

/// Objects are cheap to write and dear to hold: a list of empty tuples
/// (`)a`, two bytes each) within the object count (2^22) would hold about
/// 350 MB; the memory bound refuses it first, as it grows.
#[test]
fn what_the_values_hold_in_memory_is_bounded() {
    let n = pickle::MAX_OBJECTS - 10;
    let mut p = b"\x80\x02]".to_vec();
    p.extend(b")a".repeat(n));
    p.push(b'.');
    let e = pickle::load(&p).map(|_| ()).unwrap_err();
    assert_eq!(e.rule(), Some(Rule::TorchPickle), "{e}");
    let bound = format!("{} MiB in memory", pickle::MAX_HELD >> 20);
    assert!(e.to_string().contains(&bound), "{e}");
    // A state dict's worth is far below it.
    let mut p = b"\x80\x02]".to_vec();
    p.extend(b")a".repeat(100_000));
    p.push(b'.');
    assert!(pickle::load(&p).is_ok());
}

#[test]
fn a_memo_bomb_costs_what_its_opcodes_cost() {
    // Each step makes a list of the previous one twice: 2^60 leaves if
    // copied; here 60 lists of two indices.
    let mut p = b"\x80\x02]q\x00".to_vec();
    for _ in 0..60 {
        p.extend(b"](h\x00h\x00eq\x00");
    }
    p.push(b'.');
    let got = pickle::load(&p).unwrap();
    assert!(got.arena.len() < 100);
}

#[test]
fn negative_and_wide_integers_read_as_python_does() {
    let got = pickle::load(b"\x80\x02\x8a\x01\xff.").unwrap();
    assert_eq!(got.value, Value::Int(-1));
    let got = pickle::load(b"\x80\x02\x8a\x02\x00\x80.").unwrap();
    assert_eq!(got.value, Value::Int(-32768));
    let got = pickle::load(b"\x80\x02J\xfe\xff\xff\xff.").unwrap();
    assert_eq!(got.value, Value::Int(-2));
}

#[test]
fn contiguity_is_torchs() {
    let t = |shape: Vec<u64>, stride: Vec<u64>| Tensor {
        name: "t".into(),
        dtype: crate::format::safetensors::Dtype::F32,
        shape,
        stride,
        offset: 0,
        storage: 0,
        neg: false,
        conj: false,
        quant: None,
    };
    assert!(t(vec![2, 3], vec![3, 1]).contiguous());
    assert!(!t(vec![3, 2], vec![1, 3]).contiguous());
    // A dimension of size 1 may have any stride.
    assert!(t(vec![1, 3], vec![99, 1]).contiguous());
    assert!(t(vec![], vec![]).contiguous());
    assert!(!t(vec![2, 2], vec![4, 2]).contiguous());
}

#[test]
fn a_tensor_past_its_storage_is_refused() {
    let t = Tensor {
        name: "t".into(),
        dtype: crate::format::safetensors::Dtype::F32,
        shape: vec![2, 3],
        stride: vec![3, 1],
        offset: 1,
        storage: 0,
        neg: false,
        conj: false,
        quant: None,
    };
    assert!(check_extent(&t, 24).is_err());
    assert!(check_extent(&t, 28).is_ok());
    let huge = Tensor {
        shape: vec![u64::MAX, 2],
        ..t
    };
    assert_eq!(
        check_extent(&huge, 28).unwrap_err().rule(),
        Some(Rule::TorchTensor)
    );
}

#[test]
fn a_rebuild_from_type_wraps_a_rebuild_only() {
    let v2args = v2_args();
    // _rebuild_from_type_v2(_rebuild_tensor_v2, Tensor, ARGS, None): torch's.
    let mut one = b"\x80\x02".to_vec();
    one.extend(global("torch._tensor", "_rebuild_from_type_v2"));
    one.push(b'(');
    one.extend(global("torch._utils", "_rebuild_tensor_v2"));
    one.extend(global("torch", "Tensor"));
    one.extend(&v2args);
    one.extend(b"NtR.");
    let got = pickle::load(&one).unwrap();
    assert!(matches!(got.obj(got.value), Some(Obj::Tensor(_))));
    // A wrap of that wrap: a chain of them would recurse once per level.
    let mut two = b"\x80\x02".to_vec();
    two.extend(global("torch._tensor", "_rebuild_from_type_v2"));
    two.extend(b"q\x00(h\x00");
    two.extend(global("torch", "Tensor"));
    two.push(b'(');
    two.extend(global("torch._utils", "_rebuild_tensor_v2"));
    two.extend(global("torch", "Tensor"));
    two.extend(&v2args);
    two.extend(b"NtNtR.");
    assert_eq!(rule(&two), Rule::TorchGlobal);
}

#[test]
fn a_broadcast_view_whose_byte_size_overflows_is_refused() {
    let t = Tensor {
        name: "t".into(),
        dtype: crate::format::safetensors::Dtype::F64,
        shape: vec![1 << 62],
        stride: vec![0],
        offset: 0,
        storage: 0,
        neg: false,
        conj: false,
        quant: None,
    };
    assert_eq!(
        check_extent(&t, 8).unwrap_err().rule(),
        Some(Rule::TorchTensor)
    );
    let fits = Tensor {
        shape: vec![1 << 40],
        ..t
    };
    assert!(
        check_extent(&fits, 8).is_ok(),
        "a stride-0 view of one element"
    );
}

#[test]
fn a_tensor_named_a_million_times_is_refused() {
    // A dict of MAX_TENSORS + 1 distinct keys, each the same tensor.
    let mut p = b"\x80\x02}q\x00X\x01\x00\x00\x00x".to_vec();
    p.extend(global("torch._utils", "_rebuild_tensor_v2"));
    p.extend(v2_args());
    p.extend(b"Rq\x01s"); // the tensor is in memo 1
    for i in 0..=MAX_TENSORS as u32 {
        if i % 1000 == 0 {
            p.push(b'(');
        }
        p.extend(string(&i.to_string()));
        p.extend(b"h\x01");
        if i % 1000 == 999 || i == MAX_TENSORS as u32 {
            p.push(b'u');
        }
    }
    p.push(b'.');
    let got = pickle::load(&p).unwrap();
    let mut walk = Walk::new(&got);
    let e = walk.value(got.value, &mut Vec::new(), 0).unwrap_err();
    assert_eq!(e.rule(), Some(Rule::TorchTensor), "{e}");
}

#[test]
fn a_tensor_torch_allows_but_ztfs_does_not_serve_is_refused_as_such() {
    for (module, name) in [
        ("torch._utils", "_rebuild_sparse_tensor"),
        ("torch", "per_channel_affine_float_qparams"),
        ("torch", "per_tensor_symmetric"),
    ] {
        let mut p = b"\x80\x02".to_vec();
        p.extend(global(module, name));
        p.push(b'.');
        assert_eq!(rule(&p), Rule::TorchTensor, "{name}");
    }
}
