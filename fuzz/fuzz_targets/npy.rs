//! `npy::read_header` (what `ztfs pack` reads `.npy` files with) on whole
//! files. Asserts that a rejection is a refusal, and that an accepted
//! header places its data at the end of the file, exactly as long as its
//! shape and type make.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use ztfs::error::Error;
use ztfs::format::npy::read_header;

fuzz_target!(|data: &[u8]| {
    match read_header(data, data.len() as u64) {
        Ok(h) => {
            assert_eq!(h.data_offset + h.data_len, data.len() as u64, "fills the file");
            let n: u64 = h.shape.iter().product();
            let width = match h.logical {
                Some("complex64") => 8,
                Some("complex128") => 16,
                _ => h.dtype.width(),
            };
            assert_eq!(n * width, h.data_len, "size");
        }
        Err(e) => assert!(matches!(e, Error::Unsupported(_)), "{e}"),
    }
});
