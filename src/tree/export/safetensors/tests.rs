//! The plan against the reference reader (the `safetensors` crate): whole
//! files and any range of them, one file and shards.

use super::*;

/// Object `o`'s bytes: a pattern of its own.
fn bytes_of(o: u32, len: u64) -> Vec<u8> {
    (0..len)
        .map(|k| (k as u32).wrapping_mul(31).wrapping_add(o * 7) as u8)
        .collect()
}

struct Model {
    names: Vec<String>,
    shapes: Vec<Vec<u64>>,
}

impl Model {
    fn new(n: u32, name_len: usize) -> Model {
        let names = (0..n)
            .map(|i| format!("{i:0>width$}\"é\u{1}", width = name_len))
            .collect();
        let shapes = (0..n).map(|i| vec![u64::from(i % 3), 2]).collect();
        Model { names, shapes }
    }

    fn candidates(&self) -> Vec<Candidate> {
        (0..self.names.len() as u32)
            .map(|i| Candidate {
                object: i,
                dtype: if i % 2 == 0 { "F32" } else { "BF16" },
                len: u64::from(i % 3) * 2 * if i % 2 == 0 { 4 } else { 2 },
            })
            .collect()
    }

    fn plan(&self, max: u64) -> Plan {
        let describe = |o: u32| {
            (
                self.names[o as usize].as_str(),
                &self.shapes[o as usize][..],
            )
        };
        Plan::new(
            &self.candidates(),
            &describe,
            Some(r#"{"format":"pt","a":"b"}"#),
            max,
            None,
        )
        .unwrap()
    }

    /// Bytes `[offset, offset + size)` of shard `s`.
    fn read(&self, plan: &Plan, s: usize, offset: u64, size: u64) -> Vec<u8> {
        let describe = |o: u32| {
            (
                self.names[o as usize].as_str(),
                &self.shapes[o as usize][..],
            )
        };
        let mut out = Vec::new();
        for seg in plan.segments(s, offset, size, &describe) {
            match seg {
                Segment::Text(t) => out.extend_from_slice(&t),
                Segment::Tensor {
                    object,
                    offset,
                    len,
                } => {
                    let all = bytes_of(object, 1 << 12);
                    out.extend_from_slice(&all[offset as usize..(offset + len) as usize]);
                }
            }
        }
        out
    }
}

fn check_shard(m: &Model, plan: &Plan, s: usize) -> Vec<String> {
    let file = m.read(plan, s, 0, u64::MAX);
    assert_eq!(file.len() as u64, plan.shards[s].len());
    assert_eq!(plan.shards[s].data_start() % 4096, 0);
    let st = safetensors::SafeTensors::deserialize(&file).unwrap();
    let mut names = Vec::new();
    for (name, view) in st.tensors() {
        let i = m.names.iter().position(|n| *n == name).unwrap() as u32;
        assert_eq!(
            view.shape(),
            m.shapes[i as usize]
                .iter()
                .map(|&d| d as usize)
                .collect::<Vec<_>>()
        );
        assert_eq!(view.data(), &bytes_of(i, view.data().len() as u64)[..]);
        names.push(name);
    }
    // Every range of the file is the same range of the whole.
    let mut seed = 12345u64;
    for _ in 0..200 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let off = (seed >> 33) % file.len() as u64;
        let len = (seed >> 7) % 9000;
        let got = m.read(plan, s, off, len);
        let end = (off + len).min(file.len() as u64);
        assert_eq!(got, &file[off as usize..end as usize], "range {off}+{len}");
    }
    names
}

#[test]
fn one_file_reads_back_with_the_reference_reader() {
    let m = Model::new(40, 3);
    let plan = m.plan(HEADER_MAX);
    assert_eq!(plan.shards.len(), 1);
    assert_eq!(plan.shard_name(0), FILE);
    assert!(plan.index_len().is_none());
    let names = check_shard(&m, &plan, 0);
    assert_eq!(names.len(), 40);
    let file = m.read(&plan, 0, 0, u64::MAX);
    let (_, meta) = safetensors::SafeTensors::read_metadata(&file).unwrap();
    let meta = meta.metadata().as_ref().unwrap();
    assert_eq!(meta.get("format").map(String::as_str), Some("pt"));
    assert_eq!(plan.shard_of(7), Some(0));
    let lean = m.plan(HEADER_MAX).without_tables();
    assert!(lean.same_files(&plan) && lean.shard_of(7) == Some(0));
}

#[test]
fn an_empty_model_is_a_valid_file() {
    let m = Model::new(0, 1);
    let plan = m.plan(HEADER_MAX);
    assert!(check_shard(&m, &plan, 0).is_empty());
}

#[test]
fn a_long_header_is_sharded_with_an_index() {
    let m = Model::new(300, 200);
    let plan = m.plan(16384);
    let n = plan.shards.len();
    assert!(n >= 4, "{n} shards");
    let mut all = Vec::new();
    for s in 0..n {
        assert!(plan.shards[s].data_start() - 8 <= 16384);
        all.extend(check_shard(&m, &plan, s));
        assert_eq!(
            plan.shard_name(s),
            format!("model-{:05}-of-{n:05}.safetensors", s + 1)
        );
    }
    all.sort();
    let mut want = m.names.clone();
    want.sort();
    assert_eq!(all, want);
    let describe = |o: u32| (m.names[o as usize].as_str(), &m.shapes[o as usize][..]);
    let len = plan.index_len().unwrap();
    let index = plan.read_index(0, len, &describe);
    assert_eq!(index.len() as u64, len);
    // Any range of the index is the same range of the whole.
    for off in (0..len).step_by(997) {
        assert_eq!(
            plan.read_index(off, 333, &describe),
            &index[off as usize..(off + 333).min(len) as usize]
        );
    }
    let text = String::from_utf8(index).unwrap();
    assert!(text.starts_with(&format!(
        r#"{{"metadata":{{"total_size":{}}},"weight_map":{{"#,
        plan.total_size
    )));
    assert_eq!(plan.shard_of(299), Some(n - 1));
    assert_eq!(plan.without_tables().shard_of(299), Some(n - 1));
    assert!(text.contains(&format!(
        r#"\u0001":"model-{:05}-of-{n:05}.safetensors"}}}}"#,
        n
    )));
}

#[test]
fn an_entry_that_cannot_fit_fails_the_plan() {
    let m = Model::new(2, 5000);
    let describe = |o: u32| (m.names[o as usize].as_str(), &m.shapes[o as usize][..]);
    assert!(Plan::new(&m.candidates(), &describe, Some("{}"), 4096, None).is_err());
}

#[test]
fn metadata_alone_past_the_limit_is_refused_with_no_tensor() {
    let describe = |_: u32| ("", &[][..]);
    let metadata = format!(r#"{{"a":"{}"}}"#, "x".repeat(5000));
    assert!(Plan::new(&[], &describe, Some(&metadata), 4096, None).is_err());
    let plan = Plan::new(&[], &describe, Some(r#"{"a":"b"}"#), 4096, None).unwrap();
    assert!(plan.shards[0].data_start() - 8 <= 4096);
}
