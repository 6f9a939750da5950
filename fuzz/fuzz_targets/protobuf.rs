//! `format::protobuf::fields` (the wire reader ONNX models are read on)
//! on raw bytes, every length-delimited value read again as a message, as
//! deep as it goes; and `format::onnx::parse` on the same bytes. Asserts
//! that each value lies inside the bytes at the offset it names, that a
//! tensor's raw data and typed message do, that packed readers end, that
//! a typed field converts to exactly its part's bytes or is refused, and
//! that nothing panics.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use ztfs::format::onnx::{self, Data};
use ztfs::format::protobuf::{fields, packed_fixed, packed_varints, Value};

/// Reads `buf` (at `base` in `data`) as a message, and each of its
/// length-delimited values as one too, to `depth` levels.
fn walk(data: &[u8], buf: &[u8], base: u64, depth: u32) {
    for f in fields(buf, base) {
        let Ok(f) = f else { return };
        assert!(f.number >= 1 && f.number < 1 << 29);
        if let Value::Len(bytes, at) = f.value {
            let at = at as usize;
            assert_eq!(&data[at..at + bytes.len()], bytes, "offset");
            let _ = packed_varints(bytes).count();
            let _ = packed_fixed::<4>(bytes).map(|c| c.count());
            if depth < 16 {
                walk(data, bytes, at as u64, depth + 1);
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    walk(data, data, 0, 0);
    if let Ok(m) = onnx::parse(data) {
        // Typed fields converted within their counts: never more bytes
        // than the object's part says.
        if let Ok((objects, file)) = onnx::objects::objects(m.clone()) {
            for (o, &i) in objects.iter().zip(&file.tensor) {
                let t = &file.model.tensors[i];
                let Data::Typed { message: (at, len), .. } = t.data else {
                    continue;
                };
                let msg = &data[at as usize..(at + len) as usize];
                let count = t.dims.iter().product();
                let mut n = 0u64;
                let r = onnx::typed::convert(msg, at, t.data_type, count, &mut |b| {
                    n += b.len() as u64;
                    Ok(())
                });
                if r.is_ok() {
                    assert_eq!(n, o.parts[0].blob.length, "converted length");
                }
            }
        }
        for t in &m.tensors {
            let (at, len) = match t.data {
                Data::Raw { offset, len } => (offset, len),
                Data::Typed { message, .. } => message,
                Data::External { .. } | Data::None => continue,
            };
            assert!(
                at.checked_add(len).is_some_and(|e| e <= data.len() as u64),
                "in the file"
            );
        }
    }
});
