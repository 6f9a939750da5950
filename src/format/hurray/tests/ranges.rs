//! Reading by range (a remote object) against reading from memory: the
//! same file or the same error, the same data rules and the same computed
//! views, with every range asked for inside the file and none in a
//! buffer's bytes at open.

use std::borrow::Cow;
use std::cell::RefCell;

use super::builder::*;
use crate::error::Result;
use crate::format::hurray::{data_rules, read_file, read_file_from, File};
use crate::format::Ranges;

/// A file as a remote store serves it: owned copies, nothing in memory,
/// every range asked for recorded and checked to lie inside the file.
pub(super) struct Fetcher<'a> {
    bytes: &'a [u8],
    pub asked: RefCell<Vec<(u64, u64)>>,
}

impl<'a> Fetcher<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Fetcher<'a> {
        Fetcher {
            bytes,
            asked: RefCell::new(Vec::new()),
        }
    }
}

impl Ranges for Fetcher<'_> {
    fn size(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn get(&self, offset: u64, len: u64) -> Result<Cow<'_, [u8]>> {
        let end = offset.checked_add(len).filter(|&e| e <= self.size());
        assert!(
            end.is_some(),
            "asked for [{offset}, +{len}) of a {}-byte file",
            self.size()
        );
        self.asked.borrow_mut().push((offset, len));
        Ok(Cow::Owned(
            self.bytes[offset as usize..(offset + len) as usize].to_vec(),
        ))
    }
}

/// The same outcome both ways: the same file, or the same error.
pub(super) fn same_both_ways(bytes: &[u8]) -> Option<File> {
    let here = read_file(bytes);
    let there = read_file_from(&Fetcher::new(bytes));
    match (&here, &there) {
        (Ok(a), Ok(b)) => assert_eq!(a, b),
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        _ => panic!("in memory {here:?}, by range {there:?}"),
    }
    here.ok()
}

fn files() -> Vec<(String, Vec<u8>)> {
    let mut v = super::pyhurray_files();
    v.push((
        "basic".into(),
        super::data("hurray-vectors/files/basic.hrry"),
    ));
    let mut b = file(vec![t("x", D::f32x4()), t("y", D::dense(0x48, &[5], 3))]);
    b.kv = kv(&[entry("k", 7, &[1, 1, 0, 0, 0, 1, 0, 0, 0, b'z'])]);
    v.push(("built".into(), b.build().bytes));
    v
}

#[test]
fn a_file_read_by_range_parses_as_in_memory_and_reads_no_buffer() {
    for (name, bytes) in files() {
        let fetcher = Fetcher::new(&bytes);
        let Some(f) = same_both_ways(&bytes) else {
            continue;
        };
        read_file_from(&fetcher).unwrap();
        for t in &f.tensors {
            for (b, &off) in t.descriptor.buffers.iter().zip(&t.buffer_offsets) {
                let hit = fetcher
                    .asked
                    .borrow()
                    .iter()
                    .any(|&(o, n)| o < off + b.size && off < o + n);
                assert!(!hit, "{name}: a buffer of {:?} was read at open", t.name);
            }
        }
    }
}

#[test]
fn data_rules_and_views_read_by_range_agree_with_memory() {
    let mut views = 0;
    for (name, bytes) in files() {
        let Some(f) = same_both_ways(&bytes) else {
            continue;
        };
        let fetcher = Fetcher::new(&bytes);
        let here = data_rules::check_data(&f, &&bytes[..], &mut |_| Ok(()));
        let there = data_rules::check_data(&f, &fetcher, &mut |_| Ok(()));
        assert_eq!(
            here.map_err(|e| e.to_string()),
            there.map_err(|e| e.to_string()),
            "{name}"
        );
        let members = crate::format::hurray::composite_members(&f.tensors);
        for i in 0..f.tensors.len() {
            let Some(Ok(v)) = crate::decode::hurray::view(&f, i, &members) else {
                continue;
            };
            views += 1;
            let mut a = vec![0; v.len() as usize];
            let mut b = vec![1; v.len() as usize];
            v.read_into(&&bytes[..], 0, &mut a).unwrap();
            v.read_into(&fetcher, 0, &mut b).unwrap();
            assert_eq!(a, b, "{name}: {:?}", f.tensors[i].name);
            // An odd range from the middle too.
            if v.len() > 3 {
                let (at, n) = (1, v.len() as usize - 2);
                let mut c = vec![0; n];
                v.read_into(&fetcher, at, &mut c).unwrap();
                assert_eq!(c, a[1..1 + n], "{name}: {:?}", f.tensors[i].name);
            }
        }
    }
    assert!(views >= 5, "only {views} computed views");
}
