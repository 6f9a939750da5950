//! Hugging Face sharded safetensors checkpoints (an index and the files it
//! names) as one model, through the real binary and a real mount: `check`,
//! `ls`, `cat`, `manifest` on the index and on its folder; every tensor's
//! `data`, `data.npy` and the `model.safetensors` view equal to the source
//! bytes; the same by URL; and one refused checkpoint per index rule, plus
//! a missing file and a file breaking a safetensors rule; every valid
//! checkpoint of the corpus (`corpus/safetensors/sharded/`) mounted.
//!
//! The cases are generated here, into temporary folders, by
//! [`Checkpoint`]: valid files written by the `safetensors` crate, an index
//! written as transformers writes it, then broken one way per case.

mod common;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};

use common::http::Nginx;
use common::*;
use safetensors::tensor::TensorView;
use safetensors::Dtype;

const INDEX: &str = "model.safetensors.index.json";

/// One tensor: name, dtype, shape, bytes.
type Tensor = (&'static str, Dtype, Vec<usize>, Vec<u8>);

/// A checkpoint in a folder of its own: its files' tensors and its index.
struct Checkpoint {
    dir: tempfile::TempDir,
    files: Vec<(String, Vec<Tensor>)>,
}

fn bytes(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

impl Checkpoint {
    /// Three files, a metadata entry in the first, dotted names.
    fn new() -> Checkpoint {
        Checkpoint::named(
            &[
                "model-00001-of-00003.safetensors",
                "model-00002-of-00003.safetensors",
                "model-00003-of-00003.safetensors",
            ],
            "",
        )
    }

    /// [`Checkpoint::new`]'s tensors in files of these three names, in
    /// folder `sub` of its directory (none for "").
    fn named(names: &[&str; 3], sub: &str) -> Checkpoint {
        let files: Vec<Vec<Tensor>> = vec![
            vec![
                (
                    "model.embed_tokens.weight",
                    Dtype::F32,
                    vec![4, 3],
                    bytes(48, 1),
                ),
                ("model.norm.weight", Dtype::BF16, vec![3], bytes(6, 2)),
            ],
            vec![
                (
                    "model.layers.0.mlp.up_proj.weight",
                    Dtype::F16,
                    vec![2, 5],
                    bytes(20, 3),
                ),
                ("model.layers.0.bias", Dtype::I64, vec![2], bytes(16, 4)),
            ],
            vec![("lm_head.weight", Dtype::U8, vec![7], bytes(7, 5))],
        ];
        let c = Checkpoint {
            dir: tempdir_in(sub),
            files: names.iter().map(|n| n.to_string()).zip(files).collect(),
        };
        for i in 0..c.files.len() {
            c.write_file(i);
        }
        c.write_index(&c.index());
        c
    }

    /// Writes file `i` with the `safetensors` crate (the first with
    /// metadata, as transformers writes `{"format": "pt"}`).
    fn write_file(&self, i: usize) {
        let (name, tensors) = &self.files[i];
        let views = tensors
            .iter()
            .map(|(n, d, s, b)| (*n, TensorView::new(*d, s.clone(), b).unwrap()));
        let meta = (i == 0).then(|| [("format".to_string(), "pt".to_string())].into());
        let out = safetensors::tensor::serialize(views, meta).unwrap();
        fs::write(self.path(name), out).unwrap();
    }

    /// The index as transformers writes it: `total_size` and a sorted
    /// `weight_map`.
    fn index(&self) -> serde_json::Value {
        let mut map = BTreeMap::new();
        let mut total = 0;
        for (file, tensors) in &self.files {
            for (n, _, _, b) in tensors {
                map.insert(n.to_string(), file.clone());
                total += b.len();
            }
        }
        serde_json::json!({"metadata": {"total_size": total}, "weight_map": map})
    }

    fn write_index(&self, index: &serde_json::Value) {
        self.write_index_text(&serde_json::to_string_pretty(index).unwrap());
    }

    fn write_index_text(&self, text: &str) {
        fs::write(self.path(INDEX), text).unwrap();
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn index_path(&self) -> PathBuf {
        self.path(INDEX)
    }

    /// Every tensor, with the name of its file.
    fn tensors(&self) -> Vec<(&str, &Tensor)> {
        (self.files.iter())
            .flat_map(|(f, ts)| ts.iter().map(move |t| (f.as_str(), t)))
            .collect()
    }
}

/// A temporary directory, or one whose name begins with `sub` inside a new
/// one (the parent, left for the system's cleaning, is then the caller's
/// to serve).
fn tempdir_in(sub: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    if sub.is_empty() {
        return dir;
    }
    let inner = tempfile::Builder::new()
        .prefix(sub)
        .tempdir_in(dir.path())
        .unwrap();
    std::mem::forget(dir);
    inner
}

fn check(file: &Path) -> std::process::Output {
    ztfs(&[OsStr::new("check"), file.as_os_str()])
}

#[test]
fn check_ls_cat_and_manifest_read_the_index_and_its_folder() {
    let c = Checkpoint::new();
    for file in [c.index_path(), c.dir.path().to_path_buf()] {
        let out = String::from_utf8(ztfs_ok(&[Path::new("check"), &file])).unwrap();
        assert!(
            out.contains("sharded safetensors checkpoint of 3 files, 5 tensors"),
            "{out}"
        );
        let out = ztfs_ok(&[Path::new("check"), Path::new("--verify"), &file]);
        assert!(String::from_utf8(out)
            .unwrap()
            .contains("valid and verified"));
        // ls: weight_map order (transformers sorts it).
        let names: Vec<String> = ls(&file).objects.into_iter().map(|o| o.name).collect();
        let index = c.index();
        let want: Vec<&String> = index["weight_map"].as_object().unwrap().keys().collect();
        assert_eq!(names.iter().collect::<Vec<_>>(), want);
        // A tensor of the second file, and of the third.
        let (_, _, _, want) = &c.files[1].1[0];
        assert_eq!(
            &cat(&file, "model.layers.0.mlp.up_proj.weight", "data", false).unwrap(),
            want
        );
        assert_eq!(
            cat(&file, "lm_head.weight", "data", false).unwrap(),
            bytes(7, 5)
        );
        let manifest = ztfs_ok(&[Path::new("manifest"), &file]);
        let parsed: serde_json::Value = serde_json::from_slice(&manifest).unwrap();
        assert_eq!(parsed, index, "manifest is the index");
    }
}

/// An index names files of its folder, so its folder's other files come
/// with it (a config, not a hidden file); one file of the checkpoint given
/// alone is that file, with none.
#[test]
fn an_index_brings_its_folder_and_one_of_its_files_comes_alone() {
    let c = Checkpoint::new();
    fs::write(c.path("config.json"), r#"{"model_type": "llama"}"#).unwrap();
    fs::write(c.path(".env"), "API_KEY=secret\n").unwrap();
    let by_index = String::from_utf8(ztfs_ok(&[Path::new("ls"), &c.index_path()])).unwrap();
    assert!(
        by_index.ends_with("files of the folder (1):\nconfig.json\n"),
        "{by_index}"
    );
    let one = c.path(&c.files[0].0);
    let alone = String::from_utf8(ztfs_ok(&[Path::new("ls"), &one])).unwrap();
    assert_eq!(alone, "model.embed_tokens.weight\nmodel.norm.weight\n");
}

#[test]
fn ls_names_each_tensor_s_file() {
    let c = Checkpoint::new();
    let out = ztfs_ok(&[Path::new("ls"), Path::new("-l"), &c.index_path()]);
    let out = String::from_utf8(out).unwrap();
    let line = out.lines().find(|l| l.contains("lm_head.weight")).unwrap();
    assert!(
        line.contains("[shard model-00003-of-00003.safetensors]"),
        "{out}"
    );
    for o in ls(&c.index_path()).objects {
        assert_eq!(o.parts.len(), 1);
    }
}

/// The tensors of the mount's `model.safetensors` view (one file, or an
/// index and its files), as the `safetensors` crate reads them.
fn view_tensors(m: &Mount) -> BTreeMap<String, (Dtype, Vec<usize>, Vec<u8>)> {
    let files: Vec<PathBuf> = match fs::read(m.join(INDEX)) {
        Ok(index) => {
            let index: serde_json::Value = serde_json::from_slice(&index).unwrap();
            let mut names: Vec<String> = (index["weight_map"].as_object().unwrap().values())
                .map(|v| v.as_str().unwrap().to_string())
                .collect();
            names.sort();
            names.dedup();
            names.iter().map(|n| m.join(n)).collect()
        }
        Err(_) => vec![m.join("model.safetensors")],
    };
    let mut out = BTreeMap::new();
    for f in files {
        let b = fs::read(&f).unwrap();
        let st = safetensors::SafeTensors::deserialize(&b).unwrap();
        for (n, v) in st.tensors() {
            out.insert(n, (v.dtype(), v.shape().to_vec(), v.data().to_vec()));
        }
    }
    out
}

fn check_mount(c: &Checkpoint, source: &Path) {
    let m = Mount::new(source, &[]);
    let manifest = fs::read(m.join("manifest.json")).unwrap();
    let parsed: serde_json::Value = serde_json::from_slice(&manifest).unwrap();
    assert_eq!(parsed, c.index(), "manifest.json is the index");
    assert!(!m.join("digest").exists());
    let dirs = object_dirs(&m);
    assert_eq!(dirs.len(), c.tensors().len());
    let view = view_tensors(&m);
    for (_, (name, dtype, shape, want)) in c.tensors() {
        let dir = m.join(&dirs[*name]);
        assert_eq!(&fs::read(dir.join("data")).unwrap(), want, "{name}: data");
        let npy = fs::read(dir.join("data.npy")).unwrap();
        assert!(npy.starts_with(b"\x93NUMPY"), "{name}: data.npy");
        assert_eq!(
            &npy[npy.len() - want.len()..],
            &want[..],
            "{name}: data.npy"
        );
        assert_eq!(
            view[*name],
            (*dtype, shape.clone(), want.clone()),
            "{name}: the view"
        );
    }
    assert_eq!(view.len(), c.tensors().len());
}

#[test]
fn a_mount_serves_every_tensor_of_every_file() {
    let c = Checkpoint::new();
    check_mount(&c, &c.index_path());
}

#[test]
fn a_folder_mounts_as_its_index() {
    let c = Checkpoint::new();
    check_mount(&c, c.dir.path());
}

#[test]
fn an_index_by_url_reads_its_files_beside_it() {
    let c = Checkpoint::new();
    let server = Nginx::serve(c.dir.path());
    let url = PathBuf::from(server.url(INDEX));
    let out = String::from_utf8(ztfs_ok(&[Path::new("check"), &url])).unwrap();
    assert!(
        out.contains("sharded safetensors checkpoint of 3 files"),
        "{out}"
    );
    for (_, (name, _, _, want)) in c.tensors() {
        assert_eq!(
            &cat(&url, name, "data", false).unwrap(),
            want,
            "{name} by URL"
        );
    }
    check_mount(&c, &url);
}

/// Asserts `check` and `mount` refuse `file` under `rule`.
fn assert_rejected(file: &Path, rule: &str) {
    let out = check(file);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{rule}: {stderr}");
    assert!(
        stderr.contains(&format!("rejected ({rule})")),
        "{rule}: {stderr}"
    );
    let m = Mount::unmounted();
    assert_eq!(m.mount(file, &[]).status.code(), Some(1), "{rule}: mount");
    assert!(!is_mounted(m.path()));
}

/// The valid checkpoint's index with `edit` applied to its JSON.
fn with_index(edit: impl FnOnce(&mut serde_json::Value)) -> Checkpoint {
    let c = Checkpoint::new();
    let mut index = c.index();
    edit(&mut index);
    c.write_index(&index);
    c
}

fn weight_map(index: &mut serde_json::Value) -> &mut serde_json::Map<String, serde_json::Value> {
    index["weight_map"].as_object_mut().unwrap()
}

#[test]
fn each_index_rule_refuses_its_case() {
    let text = |t: &str| {
        let c = Checkpoint::new();
        c.write_index_text(t);
        c
    };
    let cases: Vec<(&str, Checkpoint)> = vec![
        ("SafetensorsIndexJson", text(r#"{"weight_map": {"a": "b"}"#)),
        ("SafetensorsIndexJson", text("{\"weight_map\": {}} x")),
        (
            "SafetensorsIndexDuplicateKey",
            text(
                r#"{"weight_map": {"lm_head.weight": "model-00003-of-00003.safetensors", "lm_head.weight": "model-00001-of-00003.safetensors"}}"#,
            ),
        ),
        (
            "SafetensorsIndexWeightMap",
            with_index(|i| {
                i.as_object_mut()
                    .unwrap()
                    .remove("weight_map")
                    .map(drop)
                    .unwrap()
            }),
        ),
        (
            "SafetensorsIndexWeightMap",
            with_index(|i| i["weight_map"]["lm_head.weight"] = 3.into()),
        ),
        (
            "SafetensorsIndexMetadata",
            with_index(|i| i["metadata"] = serde_json::json!([1])),
        ),
        (
            "SafetensorsIndexFileName",
            with_index(|i| i["weight_map"]["lm_head.weight"] = "../x.safetensors".into()),
        ),
        (
            "SafetensorsIndexMissingTensor",
            with_index(|i| {
                drop(
                    weight_map(i).insert("extra".into(), "model-00002-of-00003.safetensors".into()),
                )
            }),
        ),
        (
            "SafetensorsIndexUnlisted",
            with_index(|i| drop(weight_map(i).remove("model.norm.weight"))),
        ),
    ];
    for (rule, c) in cases {
        assert_rejected(&c.index_path(), rule);
    }
}

#[test]
fn a_tensor_in_two_files_is_refused() {
    let mut c = Checkpoint::new();
    let copy = c.files[0].1[1].clone();
    c.files[2].1.push(copy);
    c.write_file(2);
    assert_rejected(&c.index_path(), "SafetensorsIndexUnlisted");
}

#[test]
fn an_index_too_large_or_naming_too_many_files_is_refused_unread() {
    let c = Checkpoint::new();
    let f = fs::File::create(c.index_path()).unwrap();
    // The first bytes look like an index; the rest is a hole of zeros.
    fs::write(
        c.index_path(),
        format!("{{\"weight_map\": {{{}", " ".repeat(64)),
    )
    .unwrap();
    f.set_len((64 << 20) + 1).unwrap();
    assert_rejected(&c.index_path(), "SafetensorsIndexTooLarge");
    let entries: Vec<String> = (0..=100_000)
        .map(|i| format!(r#""t{i}":"f{i}.safetensors""#))
        .collect();
    c.write_index_text(&format!(r#"{{"weight_map": {{{}}}}}"#, entries.join(",")));
    assert_rejected(&c.index_path(), "SafetensorsIndexTooManyFiles");
}

#[test]
fn a_file_breaking_a_safetensors_rule_is_named() {
    let c = Checkpoint::new();
    let name = &c.files[1].0;
    let mut b = fs::read(c.path(name)).unwrap();
    b.push(0);
    fs::write(c.path(name), b).unwrap();
    assert_rejected(&c.index_path(), "SafetensorsCoverage");
    let stderr = String::from_utf8(check(&c.index_path()).stderr).unwrap();
    assert!(stderr.contains(name.as_str()), "{stderr}");
}

#[test]
fn a_missing_file_is_an_error_naming_it() {
    let c = Checkpoint::new();
    let name = &c.files[2].0;
    fs::remove_file(c.path(name)).unwrap();
    let out = check(&c.index_path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(name.as_str()), "{stderr}");
}

/// Decision: an index of no tensors is a valid model of no tensors; the
/// files beside it are not read.
#[test]
fn an_index_of_no_tensors_is_an_empty_model() {
    let c = Checkpoint::new();
    c.write_index_text(r#"{"metadata": {"total_size": 0}, "weight_map": {}}"#);
    let out = String::from_utf8(ztfs_ok(&[Path::new("check"), &c.index_path()])).unwrap();
    assert!(out.contains("checkpoint of 0 files, 0 tensors"), "{out}");
    assert!(ls(&c.index_path()).objects.is_empty());
}

#[test]
fn a_folder_must_hold_one_model() {
    let empty = tempfile::tempdir().unwrap();
    let out = check(empty.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("holds no"));
    // No index and one safetensors file: that file.
    let c = Checkpoint::new();
    fs::remove_file(c.index_path()).unwrap();
    fs::remove_file(c.path(&c.files[1].0)).unwrap();
    fs::remove_file(c.path(&c.files[2].0)).unwrap();
    let out = String::from_utf8(ztfs_ok(&[Path::new("check"), c.dir.path()])).unwrap();
    assert!(out.contains("safetensors file, 2 tensors"), "{out}");
    // No index and several files; two indexes.
    let c = Checkpoint::new();
    fs::remove_file(c.index_path()).unwrap();
    let out = check(c.dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("3 *.safetensors files"));
    let c = Checkpoint::new();
    fs::copy(c.index_path(), c.path("other.safetensors.index.json")).unwrap();
    let out = check(c.dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("2 *.safetensors.index.json files"),
        "{stderr}"
    );
}

#[test]
fn digest_and_shards_are_refused() {
    let c = Checkpoint::new();
    let file = c.index_path();
    assert_eq!(ztfs(&[Path::new("digest"), &file]).status.code(), Some(1));
    let args: [&OsStr; 4] = [
        "check".as_ref(),
        "--shard".as_ref(),
        "x=y".as_ref(),
        file.as_os_str(),
    ];
    let out = ztfs(&args);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&args, &out));
}

/// Every valid checkpoint of the corpus (`safetensors/sharded/`) mounted:
/// `manifest.json` is its index; each tensor's `data` and its entry in the
/// `model.safetensors` view equal what the `safetensors` crate reads from
/// the file the index names.
#[test]
fn every_valid_corpus_checkpoint_mounts_and_serves_its_tensors() {
    let indexes: Vec<PathBuf> = (rows().iter())
        .filter(|r| r.dir == "safetensors/sharded" && r.open == "valid" && r.name.ends_with(INDEX))
        .map(Row::path)
        .collect();
    assert!(indexes.len() >= 3, "{indexes:?}");
    for index in indexes {
        let parsed: serde_json::Value = serde_json::from_slice(&fs::read(&index).unwrap()).unwrap();
        let m = Mount::new(&index, &[]);
        let manifest = fs::read(m.join("manifest.json")).unwrap();
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(&manifest).unwrap(),
            parsed
        );
        let map = parsed["weight_map"].as_object().unwrap();
        let dirs = object_dirs(&m);
        assert_eq!(dirs.len(), map.len(), "{}", index.display());
        let view = if map.is_empty() {
            BTreeMap::new()
        } else {
            view_tensors(&m)
        };
        for (name, file) in map {
            let b = fs::read(index.with_file_name(file.as_str().unwrap())).unwrap();
            let st = safetensors::SafeTensors::deserialize(&b).unwrap();
            let t = st.tensor(name).unwrap();
            let data = fs::read(m.join(&dirs[name]).join("data")).unwrap();
            assert_eq!(data, t.data(), "{}: {name}", index.display());
            let want = (t.dtype(), t.shape().to_vec(), t.data().to_vec());
            assert_eq!(view[name], want, "{}: {name} in the view", index.display());
        }
    }
}

/// A checkpoint whose file names hold what a URL reads otherwise (`?`,
/// `#`, `%`, a space) reads by URL the bytes it reads locally: each name
/// is one percent-encoded path component, so decoys at the names a pasted
/// name would reach (`m` for `m?1…`, `n` for `n#2…`) are never read, and
/// `%2e%2e` is the file of that name, not the folder above.
#[test]
fn file_names_are_read_by_url_as_the_local_names() {
    let names = ["m?1.safetensors", "n#2 %41.safetensors", "%2e%2e"];
    let c = Checkpoint::named(&names, "sub");
    for (i, decoy) in [(0, "m"), (1, "n")] {
        write_decoy(&c, i, decoy);
    }
    let server = Nginx::serve(c.dir.path().parent().unwrap());
    let sub = c.dir.path().file_name().unwrap().to_str().unwrap();
    let url = PathBuf::from(server.url(&format!("{sub}/{INDEX}")));
    let out = check(&url);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (_, (name, _, _, want)) in c.tensors() {
        assert_eq!(
            &cat(&c.index_path(), name, "data", false).unwrap(),
            want,
            "{name} locally"
        );
        assert_eq!(
            &cat(&url, name, "data", false).unwrap(),
            want,
            "{name} by URL"
        );
    }
}

/// Writes at `decoy` beside `c` a file of file `i`'s tensors with other
/// bytes (seed 99): one a wrong URL would reach.
fn write_decoy(c: &Checkpoint, i: usize, decoy: &str) {
    let (_, tensors) = &c.files[i];
    let data: Vec<Vec<u8>> = (tensors.iter()).map(|t| bytes(t.3.len(), 99)).collect();
    let views = (tensors.iter().zip(&data))
        .map(|((n, d, s, _), b)| (*n, TensorView::new(*d, s.clone(), b).unwrap()));
    let out = safetensors::tensor::serialize(views, None).unwrap();
    fs::write(c.path(decoy), out).unwrap();
}

/// A name holding a tab, a newline or a carriage return, beside a file of
/// the name without it (`m-2.safetensors`): a URL parser drops those
/// characters from what it is given, so by URL a name not encoded would
/// read the other file. By URL the index's name is the file of that exact
/// name or a failure (the client takes no control character in a key),
/// never the other file's bytes; locally it is the file named.
#[test]
fn control_characters_in_a_name_never_reach_another_file_by_url() {
    for odd in [
        "m-2\t.safetensors",
        "m-2.safetensors\n",
        "m-2\r.safetensors",
    ] {
        let c = Checkpoint::named(&["m-1.safetensors", odd, "m-3.safetensors"], "sub");
        write_decoy(&c, 1, "m-2.safetensors");
        let server = Nginx::serve(c.dir.path().parent().unwrap());
        let sub = c.dir.path().file_name().unwrap().to_str().unwrap();
        let url = PathBuf::from(server.url(&format!("{sub}/{INDEX}")));
        for (name, _, _, want) in &c.files[1].1 {
            let local = cat(&c.index_path(), name, "data", false);
            assert_eq!(local.as_ref(), Ok(want), "{odd:?}: {name} locally");
            match cat(&url, name, "data", false) {
                Ok(got) => assert_eq!(&got, want, "{odd:?}: {name} by URL, another file's"),
                Err(e) => assert!(e.contains("holds the control character"), "{odd:?}: {e}"),
            }
        }
    }
}

/// A checkpoint of `n` one-tensor files, `w{i}` in `f{i}.safetensors`.
fn tiny_checkpoint(n: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut map = BTreeMap::new();
    for i in 0..n {
        let (name, file) = (format!("w{i}"), format!("f{i:05}.safetensors"));
        let data = bytes(4, i as u8);
        let view = TensorView::new(Dtype::U8, vec![4], &data).unwrap();
        let out = safetensors::tensor::serialize([(name.as_str(), view)], None).unwrap();
        fs::write(dir.path().join(&file), out).unwrap();
        map.insert(name, file);
    }
    let index = serde_json::json!({"metadata": {"total_size": 4 * n}, "weight_map": map});
    fs::write(dir.path().join(INDEX), index.to_string()).unwrap();
    dir
}

/// The daemon's resident memory after mounting a checkpoint of `n` tiny
/// files by URL, in KiB.
fn rss_after_mount_by_url(n: usize) -> u64 {
    let dir = tiny_checkpoint(n);
    let server = Nginx::serve(dir.path());
    let m = Mount::new(Path::new(&server.url(INDEX)), &[]);
    let pid = daemon_pid(m.path()).expect("the mount's daemon");
    status_kib(pid, "VmRSS")
}

/// The files of a checkpoint by URL cost a few KiB each until read (one
/// client for all, no per-file buffers): the daemon of a 300-file mount
/// is within 64 KiB a file of a 1-file one's.
#[test]
fn a_checkpoint_by_url_costs_little_per_file_at_mount() {
    let one = rss_after_mount_by_url(1);
    let many = rss_after_mount_by_url(300);
    let per_file = many.saturating_sub(one) / 299;
    eprintln!("daemon RSS: {one} KiB for 1 file, {many} KiB for 300");
    assert!(
        per_file < 64,
        "{per_file} KiB a file ({one} KiB for 1 file, {many} KiB for 300)"
    );
}
