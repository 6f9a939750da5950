//! A checkpoint folder mounted whole: its other files through the kernel,
//! byte for byte, listed by `ls` and noted by `check`; a FIFO in the
//! folder is left out without blocking the scan.

use std::fs;
use std::path::Path;

use super::common::*;

/// A folder with a safetensors checkpoint, its config and tokenizer
/// files, a subfolder and a FIFO.
fn repo(dir: &Path) {
    // One U8 tensor "w" of 4 bytes.
    let header =
        br#"{"__metadata__":{"author":"me"},"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}"#;
    let mut st = (header.len() as u64).to_le_bytes().to_vec();
    st.extend_from_slice(header);
    st.extend_from_slice(b"abcd");
    std::fs::write(dir.join("model.safetensors"), st).unwrap();
    std::fs::write(dir.join("config.json"), r#"{"model_type": "llama"}"#).unwrap();
    std::fs::write(dir.join("tokenizer.json"), vec![b'x'; 300_000]).unwrap();
    std::fs::create_dir(dir.join("sub")).unwrap();
    std::fs::write(dir.join("sub/notes.txt"), "hello\n").unwrap();
    let fifo = std::ffi::CString::new(dir.join("pipe").to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
}

#[test]
fn a_folder_mounts_with_its_other_files() {
    let t = tempfile::tempdir().unwrap();
    repo(t.path());
    let m = Mount::new(t.path(), &[]);
    for rel in ["config.json", "tokenizer.json", "sub/notes.txt"] {
        let got = fs::read(m.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
        assert_eq!(got, fs::read(t.path().join(rel)).unwrap(), "{rel}");
        let size = fs::metadata(m.join(rel)).unwrap().len();
        assert_eq!(size, got.len() as u64, "{rel}: st_size");
    }
    assert_eq!(fs::read(m.join("w/data")).unwrap(), b"abcd");
    // The exported model.safetensors keeps the source's __metadata__.
    let st = fs::read(m.join("model.safetensors")).unwrap();
    let n = u64::from_le_bytes(st[..8].try_into().unwrap()) as usize;
    let header = String::from_utf8_lossy(&st[8..8 + n]);
    assert!(header.contains(r#""author":"me""#), "{header}");
    assert!(!m.join("pipe").exists(), "a FIFO is left out");
    assert!(m.log().contains("\"pipe\" left out: a FIFO"), "{}", m.log());
    let e = fs::write(m.join("config.json"), "{}").unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EROFS), "{e}");

    let ls = String::from_utf8(ztfs_ok(&["ls".as_ref(), t.path().as_os_str()])).unwrap();
    let want = "w\n\nfiles of the folder (3):\nconfig.json\ntokenizer.json\nsub/notes.txt\n";
    assert_eq!(ls, want);
    let out = ztfs(&["check".as_ref(), t.path().as_os_str()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("3 other files of the folder"), "{err}");
    let out = ztfs(&["ls".as_ref(), t.path().as_os_str(), "--no-files".as_ref()]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "w\n");
}
