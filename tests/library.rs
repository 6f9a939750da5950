//! `ztfs::Model`, the in-process reader: every tensor of the sample read
//! whole equals its bytes read in pieces and, where it is stored as it is,
//! the file's bytes at the offset `mapped` gives; a compressed copy reads
//! the same; objects with no tensor form are left out with a reason.

use std::os::unix::fs::FileExt;
use std::path::Path;

use ztfs::library::Options;
use ztfs::Model;

fn sample() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/samples/tiny-llama.zt")
}

fn whole(m: &Model, t: &ztfs::library::Tensor) -> Vec<u8> {
    let mut buf = vec![0; t.len() as usize];
    m.read(t, 0, &mut buf).unwrap();
    buf
}

#[test]
fn tensors_read_whole_in_pieces_and_from_the_map_alike() {
    let m = Model::open(&sample(), Options::default()).unwrap();
    assert_eq!(m.tensors().len(), 12);
    assert!(m.left_out().is_empty());
    let mut mapped = 0;
    for t in m.tensors() {
        let all = whole(&m, t);
        let count: u64 = t.shape().iter().product();
        assert_eq!(t.len() % count.max(1), 0, "{}", t.name());
        for cut in [1usize, 7, 100] {
            let mut pieces = Vec::new();
            for at in (0..all.len()).step_by(cut) {
                let mut buf = vec![0; cut.min(all.len() - at)];
                m.read(t, at as u64, &mut buf).unwrap();
                pieces.extend(buf);
            }
            assert_eq!(pieces, all, "{} in pieces of {cut}", t.name());
        }
        if let Some((file, offset)) = m.mapped(t) {
            let mut buf = vec![0; all.len()];
            file.read_exact_at(&mut buf, offset).unwrap();
            assert_eq!(buf, all, "{} from its file", t.name());
            mapped += 1;
        }
        // Past the end is an error, never a short read.
        assert!(m.read(t, t.len(), &mut [0]).is_err());
    }
    assert_eq!(mapped, 12, "every tensor of the sample is stored as it is");
}

#[test]
fn a_compressed_copy_reads_the_same_and_is_never_mapped() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("z.zt");
    let st = std::process::Command::new(env!("CARGO_BIN_EXE_ztfs"))
        .args(["pack", "--zstd", "-o"])
        .arg(&out)
        .arg(sample())
        .status()
        .unwrap();
    assert!(st.success());
    let plain = Model::open(&sample(), Options::default()).unwrap();
    let z = Model::open(&out, Options::default()).unwrap();
    let mut compressed = 0;
    for t in z.tensors() {
        let p = plain.tensor(t.name()).unwrap();
        assert_eq!((t.dtype(), t.shape()), (p.dtype(), p.shape()));
        assert_eq!(whole(&z, t), whole(&plain, p), "{}", t.name());
        compressed += usize::from(z.mapped(t).is_none());
    }
    assert!(compressed > 0);
}

#[test]
fn bfloat16_has_its_ml_dtypes_name_and_metadata_its_text() {
    let m = Model::open(&sample(), Options::default()).unwrap();
    let dtypes: Vec<&str> = m.tensors().iter().map(|t| t.dtype().unwrap()).collect();
    assert!(dtypes.contains(&"bfloat16"), "{dtypes:?}");
    assert!(m.manifest_json().unwrap().starts_with(b"{"));
}
