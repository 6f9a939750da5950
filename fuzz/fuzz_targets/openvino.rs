//! `format::openvino::parse` on raw bytes (an IR's `model.xml`), and
//! `check_against_bin` of what it accepts. Asserts that an accepted
//! model's Consts have the sizes their shapes and types give, at most
//! MAX_RANK dims and a type that maps to zTensor's or says why not; that
//! a `.bin` as long as the furthest Const end fits them all and one byte
//! shorter does not; that its objects have one name each; and that
//! nothing panics or allocates past the cap (fuzz_targets/common).
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use ztfs::format::openvino;
use ztfs::format::MAX_RANK;

fuzz_target!(|data: &[u8]| {
    let Ok(m) = openvino::parse(data) else {
        return;
    };
    assert!(m.version == 10 || m.version == 11);
    assert!(m.ops.values().sum::<u64>() >= m.consts.len() as u64);
    let mut end = 0u64;
    for c in &m.consts {
        c.check_size()
            .expect("an accepted Const's size is its shape's");
        assert!(c.shape.len() <= MAX_RANK);
        if let Err(why) = openvino::ztensor_type(&c.element_type) {
            assert!(!why.is_empty());
        }
        // Both at most i64::MAX: the sum fits.
        end = end.max(c.offset + c.size);
    }
    openvino::check_against_bin(&m, end).expect("the furthest end fits");
    if end > 0 {
        assert!(openvino::check_against_bin(&m, end - 1).is_err());
    }
    // Objects: one name each, every Const an object or left out.
    let n = m.consts.len();
    let (objects, file) = openvino::objects::objects(m, "model.bin");
    let names: std::collections::HashSet<&str> = objects.iter().map(|o| &*o.name).collect();
    assert_eq!(names.len(), objects.len(), "unique object names");
    assert_eq!(objects.len() + file.left_out.len(), n);
});
