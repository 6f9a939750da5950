//! A checkpoint folder's other files in the tree, without a kernel: byte
//! for byte at their paths, names that meet the tree's own resolved by the
//! documented rule, what the scan leaves out, and `--no-files`.

use std::path::Path;
use std::sync::Arc;

use ztfs::model::Model;
use ztfs::tree::{Options, Tree};

use crate::{read_all, walk};

/// A safetensors file of `u8` tensors, with `metadata` (a JSON object's
/// text) as its `__metadata__`.
pub fn safetensors_bytes(tensors: &[(&str, &[u8])], metadata: &str) -> Vec<u8> {
    let mut header = format!("{{\"__metadata__\":{metadata}");
    let mut at = 0;
    for (name, bytes) in tensors {
        let end = at + bytes.len();
        header.push_str(&format!(
            ",\"{name}\":{{\"dtype\":\"U8\",\"shape\":[{}],\"data_offsets\":[{at},{end}]}}",
            bytes.len()
        ));
        at = end;
    }
    header.push('}');
    while header.len() % 8 != 0 {
        header.push(' ');
    }
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    for (_, bytes) in tensors {
        out.extend_from_slice(bytes);
    }
    out
}

/// A Hugging Face style folder: the checkpoint, its config and tokenizer,
/// a subfolder, a file named as the tree's own `manifest.json`, a tensor
/// named as a file of the folder, and what the scan must leave out
/// (hidden files and folders, a symlink outside, a FIFO).
pub fn sample_repo(dir: &Path) {
    let st = safetensors_bytes(
        &[("w", b"abcd"), ("README.md", b"xy")],
        r#"{"format":"pt"}"#,
    );
    std::fs::write(dir.join("model.safetensors"), st).unwrap();
    std::fs::write(dir.join("config.json"), r#"{"model_type": "llama"}"#).unwrap();
    std::fs::write(dir.join("tokenizer.json"), "{\"version\": \"1.0\"}\n").unwrap();
    std::fs::write(dir.join("README.md"), "# a model\n").unwrap();
    std::fs::write(dir.join("manifest.json"), "the folder's own\n").unwrap();
    std::fs::create_dir_all(dir.join("original/deep")).unwrap();
    std::fs::write(dir.join("original/params.json"), "{}").unwrap();
    std::fs::write(dir.join("original/deep/x.bin"), [0u8, 1, 2]).unwrap();
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    std::fs::write(dir.join(".git/HEAD"), "ref").unwrap();
    std::fs::write(dir.join(".gitattributes"), "*.bin lfs\n").unwrap();
    std::fs::write(dir.join(".env"), "API_KEY=secret\n").unwrap();
    std::fs::write(dir.join("original/.netrc"), "machine x password y\n").unwrap();
    let outside = dir.parent().unwrap().join("outside-secret");
    std::fs::write(&outside, "secret").unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("leak.txt")).unwrap();
    std::os::unix::fs::symlink("config.json", dir.join("config-link.json")).unwrap();
    let fifo = std::ffi::CString::new(dir.join("pipe").to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
}

/// [`sample_repo`] in a new folder `repo` of `parent`.
fn repo_in(parent: &Path) -> std::path::PathBuf {
    let repo = parent.join("repo");
    std::fs::create_dir(&repo).unwrap();
    sample_repo(&repo);
    repo
}

fn tree_of(path: &Path, files: bool) -> Arc<Tree> {
    let opts = Options {
        files,
        ..Options::default()
    };
    Arc::new(Tree::build(Model::open(path).unwrap(), opts).unwrap())
}

#[test]
fn a_folders_files_are_served_at_their_paths() {
    let t = tempfile::tempdir().unwrap();
    let repo = repo_in(t.path());
    let tree = tree_of(&repo, true);
    let files = walk(&tree);
    for (path, want) in [
        ("/config.json", "config.json"),
        ("/config-link.json", "config.json"),
        ("/tokenizer.json", "tokenizer.json"),
        ("/README.md", "README.md"),
        ("/original/params.json", "original/params.json"),
        ("/original/deep/x.bin", "original/deep/x.bin"),
        // The tree's own manifest.json keeps its name.
        ("/%6Danifest.json", "manifest.json"),
    ] {
        let ino = *files
            .get(path)
            .unwrap_or_else(|| panic!("{path} in {files:?}"));
        let got = read_all(&tree, ino, 3);
        assert_eq!(got, std::fs::read(repo.join(want)).unwrap(), "{path}");
    }
    let own = read_all(&tree, files["/manifest.json"], 1 << 20);
    assert!(String::from_utf8(own).unwrap().contains("\"w\""));
    // The tensor named README.md gives way to the folder's file.
    assert!(files.contains_key("/%52EADME.md/data"), "{files:?}");
    assert_eq!(read_all(&tree, files["/w/data"], 7), b"abcd");
    for absent in [
        "/model.safetensors.raw",
        "/.git/HEAD",
        "/.gitattributes",
        "/.env",
        "/original/.netrc",
        "/leak.txt",
        "/pipe",
    ] {
        assert!(!files.contains_key(absent), "{absent} served");
    }
    // model.safetensors is the tree's own, not the folder's file.
    assert!(files.contains_key("/model.safetensors"));
    let notes = tree.model().folder().unwrap().unwrap().notes.join("\n");
    for why in [
        "\".git\" left out: a hidden folder",
        "\".env\" left out: a hidden file",
        "\"original/.netrc\" left out: a hidden file",
        "\"leak.txt\" left out: a symlink to outside",
        "\"pipe\" left out: a FIFO",
    ] {
        assert!(notes.contains(why), "{why} in {notes}");
    }
}

/// `--no-files`, and a model file given alone (`model.safetensors` too,
/// whose folder came with it before): the tree alone, no file of the
/// folder it lies in, and no folder to scan at all.
#[test]
fn no_files_and_a_lone_model_file_have_none() {
    let t = tempfile::tempdir().unwrap();
    sample_repo(t.path());
    let only_tree = |files: &std::collections::BTreeMap<String, u64>| {
        files.keys().all(|p| {
            p == "/manifest.json"
                || p == "/model.safetensors"
                || p.starts_with("/w/")
                || p.starts_with("/README.md/")
        })
    };
    let tree = tree_of(t.path(), false);
    assert!(only_tree(&walk(&tree)), "{:?}", walk(&tree));
    for name in ["model.safetensors", "other.safetensors"] {
        let lone = t.path().join(name);
        if !lone.exists() {
            std::fs::rename(t.path().join("model.safetensors"), &lone).unwrap();
        }
        let tree = tree_of(&lone, true);
        assert!(only_tree(&walk(&tree)), "{name}: {:?}", walk(&tree));
        assert!(tree.model().folder().unwrap().is_none(), "{name}");
    }
}

/// Packs `source` (with its folder's files unless `files` is false) to
/// `out`, as `ztfs pack` does, returning the file's bytes.
fn pack(source: &Path, out: &Path, files: bool) -> Vec<u8> {
    let model = Model::open(source).unwrap();
    let mut src = ztfs::pack::Source::of_model(model, files, None).unwrap();
    src.leave_out_output(out);
    ztfs::pack::pack(&src, out, &ztfs::pack::Options::default(), &mut |_| Ok(())).unwrap();
    std::fs::read(out).unwrap()
}

/// `ztfs pack` of a folder carries its files: a mount of the `.zt` serves
/// them at the same paths byte for byte, `check --verify` checks their
/// digests, the same folder packs to the same bytes, and the `.zt` packs
/// again with them; `--no-files` leaves them out.
#[test]
fn a_packed_folder_carries_its_files() {
    let t = tempfile::tempdir().unwrap();
    let repo = repo_in(t.path());
    let zt = t.path().join("m.zt");
    // A file named as a tensor cannot be an object beside it.
    let model = Model::open(&repo).unwrap();
    let e = ztfs::pack::Source::of_model(model, true, None)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("\"README.md\" has the name of an object"), "{e}");
    std::fs::remove_file(repo.join("README.md")).unwrap();
    let bytes = pack(&repo, &zt, true);
    assert_eq!(
        pack(&repo, &t.path().join("again.zt"), true),
        bytes,
        "deterministic"
    );
    // Packed into itself, twice: the output is not taken in.
    for _ in 0..2 {
        assert_eq!(
            pack(&repo, &repo.join("self.zt"), true),
            bytes,
            "into itself"
        );
    }
    std::fs::remove_file(repo.join("self.zt")).unwrap();
    let from_disk = walk(&tree_of(&repo, true));
    let tree = tree_of(&zt, true);
    let packed = walk(&tree);
    // The same paths, but the digest a .zt has.
    let paths = |files: &std::collections::BTreeMap<String, u64>| -> Vec<String> {
        files.keys().filter(|p| *p != "/digest").cloned().collect()
    };
    assert!(packed.contains_key("/digest"));
    assert_eq!(paths(&packed), paths(&from_disk));
    for (path, want) in [
        ("/config.json", "config.json"),
        ("/config-link.json", "config.json"),
        ("/%6Danifest.json", "manifest.json"),
        ("/original/deep/x.bin", "original/deep/x.bin"),
    ] {
        let got = read_all(&tree, packed[path], 5);
        assert_eq!(got, std::fs::read(repo.join(want)).unwrap(), "{path}");
    }
    let model = tree.model();
    let mut quiet = Quiet;
    let report = ztfs::read::verify_model(model, &[], &mut quiet).unwrap();
    assert_eq!(
        report.verified,
        2 + 6,
        "two tensors and six files, each digest checked"
    );
    // Packed again, the files stay; without them, the tensors alone.
    assert_eq!(pack(&zt, &t.path().join("re.zt"), true), bytes);
    let bare = pack(&repo, &t.path().join("bare.zt"), false);
    assert_eq!(pack(&zt, &t.path().join("bare2.zt"), false), bare);
    let mut names: Vec<String> = (Model::open(&t.path().join("bare.zt"))
        .unwrap()
        .manifest()
        .unwrap()
        .objects
        .iter())
    .map(|o| o.name.to_string())
    .collect();
    names.sort();
    assert_eq!(names, ["README.md", "w"]);
}

/// A verification that says nothing.
struct Quiet;

impl ztfs::read::Watch for Quiet {
    fn read(&mut self, _: u64) -> ztfs::error::Result<()> {
        Ok(())
    }
    fn failed(&mut self, at: ztfs::read::Place, e: &ztfs::error::Error) {
        panic!("{at:?}: {e}");
    }
}
