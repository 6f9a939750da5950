//! The reader against the reference: valid files, mutated in their header
//! bytes, offsets, shapes, dtypes and lengths, are accepted by
//! [`read_header`] exactly when `safetensors::SafeTensors::deserialize`
//! (the crate 0.8) accepts them, and then both give every tensor the same
//! dtype, shape and bytes. Where this reader refuses on purpose (the
//! decisions in the module doc), the refusal must name that decision.

use proptest::prelude::*;

use super::super::*;
use super::file;

/// One header entry as written, possibly broken.
#[derive(Debug, Clone)]
struct Entry {
    name: String,
    dtype: String,
    shape: Vec<u64>,
    start: u64,
    end: u64,
}

#[derive(Debug, Clone)]
enum Mutation {
    None,
    /// Replace byte `pos` (modulo the length of `N` and the header).
    HeaderByte(usize, u8),
    Dtype(usize, String),
    Dim(usize, usize, u64),
    AddDim(usize, u64),
    DropDim(usize),
    Start(usize, i8),
    End(usize, i8),
    /// Bytes added to (or removed from) the end of the file.
    DataLen(i8),
    /// Added to `N`.
    HeaderLen(i16),
    /// Tensor `i` takes tensor `j`'s name.
    SameName(usize, usize),
    EmptyName(usize),
    MetadataNumber,
}

const NAMES: [&str; 6] = ["F128", "f32", "BOOL ", "C128", "", "U8\u{0}"];

fn dtype_name() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(Dtype::ALL.to_vec()).prop_map(|d| d.name().to_string()),
        1 => prop::sample::select(NAMES.to_vec()).prop_map(str::to_string),
    ]
}

fn dim() -> impl Strategy<Value = u64> {
    prop_oneof![
        8 => 0u64..6,
        1 => Just(u64::MAX),
        1 => Just(1u64 << 62),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        2 => Just(Mutation::None),
        4 => (any::<usize>(), any::<u8>()).prop_map(|(p, b)| Mutation::HeaderByte(p, b)),
        2 => (any::<usize>(), dtype_name()).prop_map(|(i, d)| Mutation::Dtype(i, d)),
        2 => (any::<usize>(), any::<usize>(), dim()).prop_map(|(i, j, v)| Mutation::Dim(i, j, v)),
        1 => (any::<usize>(), dim()).prop_map(|(i, v)| Mutation::AddDim(i, v)),
        1 => any::<usize>().prop_map(Mutation::DropDim),
        2 => (any::<usize>(), -3i8..4).prop_map(|(i, d)| Mutation::Start(i, d)),
        2 => (any::<usize>(), -3i8..4).prop_map(|(i, d)| Mutation::End(i, d)),
        2 => (-3i8..4).prop_map(Mutation::DataLen),
        2 => (-9i16..10).prop_map(Mutation::HeaderLen),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(i, j)| Mutation::SameName(i, j)),
        1 => any::<usize>().prop_map(Mutation::EmptyName),
        1 => Just(Mutation::MetadataNumber),
    ]
}

/// A valid set of tensors: (name, dtype, shape), laid out in order.
fn tensors() -> impl Strategy<Value = Vec<(Dtype, Vec<u64>)>> {
    let one = (
        prop::sample::select(Dtype::ALL.to_vec()),
        prop::collection::vec(0u64..4, 0..3),
    )
        .prop_map(|(d, mut shape)| {
            // Whole bytes for the sub-byte dtypes: four elements at a time.
            if d.bits() % 8 != 0 {
                shape.push(4);
            }
            (d, shape)
        });
    prop::collection::vec(one, 0..5)
}

fn build(ts: &[(Dtype, Vec<u64>)], metadata: bool, reverse: bool, m: &Mutation) -> Vec<u8> {
    let mut entries = Vec::new();
    let mut at = 0u64;
    for (i, (d, shape)) in ts.iter().enumerate() {
        let n: u64 = shape.iter().product::<u64>() * d.bits() / 8;
        entries.push(Entry {
            name: format!("t{i}.w"),
            dtype: d.name().to_string(),
            shape: shape.clone(),
            start: at,
            end: at + n,
        });
        at += n;
    }
    let mut data: Vec<u8> = (0..at).map(|i| (i * 7 + 3) as u8).collect();
    let mut meta = metadata.then(|| r#"{"format":"pt","k":"v"}"#.to_string());
    let k = entries.len().max(1);
    let pick = |i: &usize| i % k;
    match m {
        Mutation::Dtype(i, d) if !entries.is_empty() => entries[pick(i)].dtype = d.clone(),
        Mutation::Dim(i, j, v) if !entries.is_empty() => {
            let s = &mut entries[pick(i)].shape;
            if !s.is_empty() {
                let j = j % s.len();
                s[j] = *v;
            }
        }
        Mutation::AddDim(i, v) if !entries.is_empty() => entries[pick(i)].shape.push(*v),
        Mutation::DropDim(i) if !entries.is_empty() => {
            entries[pick(i)].shape.pop();
        }
        Mutation::Start(i, d) if !entries.is_empty() => {
            let e = &mut entries[pick(i)];
            e.start = e.start.saturating_add_signed(*d as i64);
        }
        Mutation::End(i, d) if !entries.is_empty() => {
            let e = &mut entries[pick(i)];
            e.end = e.end.saturating_add_signed(*d as i64);
        }
        Mutation::DataLen(d) => {
            let n = (data.len() as i64 + *d as i64).max(0) as usize;
            data.resize(n, 0xee);
        }
        Mutation::SameName(i, j) if !entries.is_empty() => {
            entries[pick(i)].name = entries[pick(j)].name.clone();
        }
        Mutation::EmptyName(i) if !entries.is_empty() => entries[pick(i)].name.clear(),
        Mutation::MetadataNumber => meta = Some(r#"{"format":1}"#.to_string()),
        _ => {}
    }
    if reverse {
        entries.reverse();
    }
    let mut parts: Vec<String> = meta
        .map(|m| format!(r#""__metadata__":{m}"#))
        .into_iter()
        .collect();
    for e in &entries {
        parts.push(format!(
            r#"{}:{{"dtype":{},"shape":{:?},"data_offsets":[{},{}]}}"#,
            serde_json::to_string(&e.name).unwrap(),
            serde_json::to_string(&e.dtype).unwrap(),
            e.shape,
            e.start,
            e.end
        ));
    }
    let mut f = file(&format!("{{{}}}", parts.join(",")), &data);
    match m {
        Mutation::HeaderByte(p, b) => {
            let n = u64::from_le_bytes(f[..8].try_into().unwrap()) as usize;
            let p = p % (8 + n);
            f[p] = *b;
        }
        Mutation::HeaderLen(d) => {
            let n = u64::from_le_bytes(f[..8].try_into().unwrap());
            let n = n.saturating_add_signed(*d as i64);
            f[..8].copy_from_slice(&n.to_le_bytes());
        }
        _ => {}
    }
    f
}

/// True when the header holds an entry the crate's serde derive takes but
/// this reader refuses on purpose: an entry that is not an object, or a
/// dtype that is not a string.
fn serde_only_entry(bytes: &[u8]) -> bool {
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let v: serde_json::Value = match serde_json::from_slice(&bytes[8..8 + n]) {
        Ok(v) => v,
        Err(_) => return false,
    };
    let Some(map) = v.as_object() else {
        return false;
    };
    map.iter()
        .filter(|(k, _)| *k != METADATA_KEY)
        .any(|(_, e)| !e.is_object() || e.get("dtype").is_some_and(|d| !d.is_string()))
}

/// Why this reader may refuse a file the crate accepts, or `Err` when the
/// refusal is not one of the documented decisions.
fn documented(bytes: &[u8], e: &Error) -> std::result::Result<(), String> {
    let header_start = bytes.get(8).copied();
    match e.rule() {
        Some(Rule::SafetensorsDuplicateKey) => Ok(()),
        Some(Rule::SafetensorsJson) if header_start != Some(b'{') => Ok(()),
        Some(Rule::SafetensorsEntry) if serde_only_entry(bytes) => Ok(()),
        _ => Err(format!("the crate accepts, ztfs refuses: {e}")),
    }
}

fn agree(bytes: &[u8]) -> std::result::Result<(), String> {
    let theirs = safetensors::SafeTensors::deserialize(bytes);
    let ours = read_header(bytes);
    match (theirs, ours) {
        (Err(_), Err(_)) => Ok(()),
        (Err(t), Ok(_)) => Err(format!("ztfs accepts, the crate refuses: {t:?}")),
        (Ok(_), Err(e)) => documented(bytes, &e),
        (Ok(st), Ok(h)) => {
            if st.len() != h.tensors.len() {
                return Err(format!("{} tensors against {}", st.len(), h.tensors.len()));
            }
            for t in &h.tensors {
                let v = st.tensor(&t.name).map_err(|e| format!("{e:?}"))?;
                let (off, len) = h.file_range(t);
                let ours = &bytes[off as usize..(off + len) as usize];
                let shape: Vec<u64> = v.shape().iter().map(|&d| d as u64).collect();
                let dtype = format!("{:?}", v.dtype());
                if ours != v.data() || shape != t.shape || dtype != t.dtype.name() {
                    return Err(format!("tensor {:?} differs", t.name));
                }
            }
            Ok(())
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn accepts_exactly_what_the_crate_accepts(
        ts in tensors(),
        metadata in any::<bool>(),
        reverse in any::<bool>(),
        m in mutation(),
    ) {
        let bytes = build(&ts, metadata, reverse, &m);
        if let Err(why) = agree(&bytes) {
            prop_assert!(false, "{why} ({m:?})");
        }
    }
}

#[test]
fn the_decisions_are_where_the_crate_differs() {
    let t = r#"{"dtype":"U8","shape":[1],"data_offsets":[0,1]}"#;
    let cases = [
        (format!(" {{\"a\":{t}}}"), Rule::SafetensorsJson),
        (
            format!(r#"{{"a":{t},"a":{t}}}"#),
            Rule::SafetensorsDuplicateKey,
        ),
        (
            format!(r#"{{"__metadata__":{{"k":"1","k":"2"}},"a":{t}}}"#),
            Rule::SafetensorsDuplicateKey,
        ),
        (
            r#"{"a":["U8",[1],[0,1]]}"#.to_string(),
            Rule::SafetensorsEntry,
        ),
        (
            r#"{"a":{"dtype":{"U8":null},"shape":[1],"data_offsets":[0,1]}}"#.to_string(),
            Rule::SafetensorsEntry,
        ),
    ];
    for (header, rule) in cases {
        let f = file(&header, &[5]);
        assert!(
            safetensors::SafeTensors::deserialize(&f).is_ok(),
            "the crate now refuses {header}: drop the decision"
        );
        assert_eq!(
            read_header(&f).err().and_then(|e| e.rule()),
            Some(rule),
            "{header}"
        );
    }
}

#[test]
fn where_the_format_is_silent_the_crate_decides() {
    for header in [
        r#"{"__metadata__":null,"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#,
        r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":[{}]}}"#,
        "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}\t\n\r ",
    ] {
        let f = file(header, &[5]);
        assert!(
            safetensors::SafeTensors::deserialize(&f).is_ok(),
            "{header}"
        );
        assert!(read_header(&f).is_ok(), "{header}");
    }
}
