//! A checkpoint folder mounted whole: its other files through the kernel,
//! byte for byte, listed by `ls` and noted by `check`; a FIFO and hidden
//! files in the folder are left out (the FIFO without blocking the scan).
//! A model file given alone mounts alone.

use std::fs;
use std::path::Path;

use super::common::*;

/// A folder with a safetensors checkpoint, its config and tokenizer
/// files, a subfolder, a FIFO and a hidden file.
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
    std::fs::write(dir.join(".env"), "API_KEY=secret\n").unwrap();
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
    assert!(!m.join(".env").exists(), "a hidden file is left out");
    assert!(
        m.log().contains("\".env\" left out: a hidden file"),
        "{}",
        m.log()
    );
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

/// A model file given alone is that file: the mount serves its tree and
/// nothing of the folder it lies in (config, tokenizer, a hidden file, a
/// big file), and `ls` and `check` say no folder.
#[test]
fn a_lone_file_mounts_alone() {
    let t = tempfile::tempdir().unwrap();
    repo(t.path());
    fs::write(t.path().join("big.bin"), vec![7u8; 3 << 20]).unwrap();
    let lone = t.path().join("model.safetensors");
    let m = Mount::new(&lone, &[]);
    let mut names: Vec<String> = fs::read_dir(m.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["manifest.json", "model.safetensors", "w"]);
    assert_eq!(fs::read(m.join("w/data")).unwrap(), b"abcd");
    assert!(
        !m.log().contains("left out"),
        "no folder scanned: {}",
        m.log()
    );

    let ls = String::from_utf8(ztfs_ok(&["ls".as_ref(), lone.as_os_str()])).unwrap();
    assert_eq!(ls, "w\n");
    let out = ztfs(&["check".as_ref(), lone.as_os_str()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("files of the folder"), "{err}");
}
