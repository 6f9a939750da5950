//! Reading by range (a remote object) against reading from memory: the
//! same file or the same error, the same data rules and the same computed
//! views, with every range asked for inside the file and none in a
//! buffer's bytes at open.

use std::borrow::Cow;
use std::sync::Mutex;

use super::builder::*;
use crate::error::Result;
use crate::format::hurray::{data_rules, read_file, read_file_from, File};
use crate::format::Ranges;

/// A file as a remote store serves it: owned copies, nothing in memory,
/// every range asked for recorded and checked to lie inside the file.
pub(super) struct Fetcher<'a> {
    bytes: &'a [u8],
    pub asked: Mutex<Vec<(u64, u64)>>,
    /// The ranges asked for as small reads (also in `asked`).
    pub small: Mutex<Vec<(u64, u64)>>,
}

impl<'a> Fetcher<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Fetcher<'a> {
        Fetcher {
            bytes,
            asked: Mutex::new(Vec::new()),
            small: Mutex::new(Vec::new()),
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
        self.asked.lock().unwrap().push((offset, len));
        Ok(Cow::Owned(
            self.bytes[offset as usize..(offset + len) as usize].to_vec(),
        ))
    }

    fn get_small(&self, offset: u64, len: u64) -> Result<Cow<'_, [u8]>> {
        self.small.lock().unwrap().push((offset, len));
        self.get(offset, len)
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
                // A buffer of no bytes has none to read (a range around
                // its offset holds padding only).
                let hit = b.size > 0
                    && fetcher
                        .asked
                        .lock()
                        .unwrap()
                        .iter()
                        .any(|&(o, n)| o < off + b.size && off < o + n);
                assert!(!hit, "{name}: a buffer of {:?} was read at open", t.name);
            }
        }
    }
}

/// Descriptors spread through a file (a tensor of 192 KiB each) are read
/// by small reads made ahead, each with the padding on both sides, and
/// nothing else of them by a block: a remote open waits for a few rounds
/// of small requests, not for a block per descriptor.
#[test]
fn spread_descriptors_are_read_ahead_by_small_reads() {
    let tensors = (0..12).map(|i| t(&format!("t{i}"), D::dense(0x11, &[192 << 10], 192 << 10)));
    let built = file(tensors.collect()).build();
    let fetcher = Fetcher::new(&built.bytes);
    let f = read_file_from(&fetcher).unwrap();
    assert_eq!(f, read_file(&built.bytes).unwrap());
    let small = fetcher.small.lock().unwrap().clone();
    for &d in &built.desc_offsets {
        assert!(
            small.iter().any(|&(o, n)| o <= d && d < o + n),
            "descriptor at {d} not in a small read: {small:?}"
        );
    }
    // Header, trailer, index: the reads that are not small.
    let asked = fetcher.asked.lock().unwrap().len();
    assert_eq!(
        asked - small.len(),
        3,
        "{:?}",
        fetcher.asked.lock().unwrap()
    );
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
