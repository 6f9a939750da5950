//! Models read by `s3://` URL from a real S3 server, SeaweedFS on
//! 127.0.0.1 (tests/common/s3.rs; `scripts/venv.sh` installs it): every
//! command prints what it prints for the local file (a shard family found
//! by its root's key included), a mount by URL serves the bytes of a local
//! mount, a wrong secret is refused, and an object overwritten under a
//! mount fails the reads of what was not yet read; a sharded safetensors
//! checkpoint's files are found beside its index's key.
//! reads.rs tests the same reader over plain HTTP against nginx.
//!
//! The tests that run at the same time share one server, each with keys
//! below a folder of its own.

use crate::builder;
use crate::common;

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use builder::{dense, part, root, xxh3_digest, zstd_seekable, Fields, FileBuilder, Lcg};
use common::s3::Seaweed;
use common::Mount;

const MIB: usize = 1 << 20;

/// A model larger than the tail read at open: raw parts of 3 MiB and
/// 2 MiB + 1234 bytes drawn from `seed`, and a compressed part of 2 MiB in
/// frames of 512 KiB, each with its digest (`ztfs digest` needs them).
/// Every seed gives the same length.
fn model(seed: u64) -> Vec<u8> {
    let mut rng = Lcg::new(seed);
    let a = rng.bytes(3 * MIB);
    let b = rng.bytes(2 * MIB + 1234);
    let z: Vec<u8> = (0..2 * MIB).map(|i| (i / 4096) as u8).collect();
    let mut f = FileBuilder::new();
    let (ba, bb, bz) = (f.blob(&a), f.blob(&b), f.blob(&zstd_seekable(&z, MIB / 2)));
    let raw = |blob, data: &[u8]| part("u8", blob).set("digest", xxh3_digest(data));
    let zpart = raw(bz, &z)
        .set("encoding", "zt.zstd-seekable/1")
        .set("decoded_length", z.len() as u64);
    let objects = Fields::new()
        .set("a", dense(&[a.len() as u64], raw(ba, &a)))
        .set("b", dense(&[b.len() as u64], raw(bb, &b)))
        .set("z", dense(&[z.len() as u64], zpart));
    f.finish(&root(objects).sorted().encode())
}

/// Uploads below `folder` two samples, a sample's shard family and a
/// built model; each model's local file (a family's root) with its URL.
fn upload(s3: &Seaweed, folder: &str, built: &Path) -> Vec<(PathBuf, String)> {
    let sharded = common::sample("sharded");
    for shard in ["model-00001.zt", "model-00002.zt"] {
        let key = format!("{folder}/sharded/{shard}");
        s3.put(&key, &fs::read(sharded.join(shard)).unwrap());
    }
    let models = [
        ("samples/tiny-llama.zt", common::sample("tiny-llama.zt")),
        ("samples/mixed-dtypes.zt", common::sample("mixed-dtypes.zt")),
        ("sharded/model.zt", sharded.join("model.zt")),
        ("built/model.zt", built.to_path_buf()),
    ];
    models
        .into_iter()
        .map(|(name, path)| {
            let key = format!("{folder}/{name}");
            s3.put(&key, &fs::read(&path).unwrap());
            (path, s3.url(&key))
        })
        .collect()
}

/// The built model in a new temporary directory.
fn built() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.zt");
    fs::write(&path, model(0x53_33)).unwrap();
    (dir, path)
}

/// Runs `ztfs args...` with `env` as its only `AWS_*` variables.
fn ztfs<S: AsRef<OsStr>>(env: &[(String, String)], args: &[S]) -> Output {
    let mut cmd = Command::new(common::BIN);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("AWS_") {
            cmd.env_remove(k);
        }
    }
    cmd.envs(env.iter().map(|(k, v)| (k, v)))
        .args(args)
        .output()
        .expect("run the ztfs binary")
}

/// Exit code, stdout and stderr of `ztfs cmd... -- FILE rest...`, with
/// FILE's folder (where its shards are too) spelled `DIR/` in what it
/// printed (but the bytes of a part).
fn outcome(
    env: &[(String, String)],
    cmd: &[&str],
    file: &str,
    rest: &[&str],
) -> (Option<i32>, Vec<u8>, String) {
    let args: Vec<&str> = cmd
        .iter()
        .chain(&["--", file])
        .chain(rest)
        .copied()
        .collect();
    let out = ztfs(env, &args);
    let dir = &file[..=file.rfind('/').expect("a path with a folder")];
    let spell = |b: &[u8]| String::from_utf8_lossy(b).replace(dir, "DIR/");
    let stdout = match cmd[0] {
        "cat" => out.stdout,
        _ => spell(&out.stdout).into_bytes(),
    };
    (out.status.code(), stdout, spell(&out.stderr))
}

#[test]
fn commands_by_s3_url_print_what_they_print_for_the_local_file() {
    let s3 = Seaweed::shared();
    let (_dir, built) = built();
    for (path, url) in upload(&s3, "commands", &built) {
        let local = path.to_str().unwrap();
        let mut runs = vec![
            (vec!["check", "--verify"], vec![]),
            (vec!["digest"], vec![]),
            (vec!["ls"], vec![]),
            (vec!["ls", "--json"], vec![]),
        ];
        for o in common::ls(&path).objects {
            for p in o.parts {
                let names = vec![o.name.clone(), p.name.clone()];
                runs.push((vec!["cat"], names.clone()));
                runs.push((vec!["cat", "--raw"], names));
            }
        }
        same_by_url(&s3, local, &url, &runs);
    }
}

/// Asserts that each `(command, arguments after the file)` of `runs`
/// succeeds on the local file and gives the same outcome by `url`.
fn same_by_url(s3: &Seaweed, local: &str, url: &str, runs: &[(Vec<&str>, Vec<String>)]) {
    for (cmd, rest) in runs {
        let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
        let what = format!("{cmd:?} {url} {rest:?}");
        let here = outcome(&[], cmd, local, &rest);
        assert_eq!(here.0, Some(0), "{cmd:?} {local} {rest:?}: {}", here.2);
        let there = outcome(&s3.env(), cmd, url, &rest);
        assert_eq!((there.0, &there.2), (here.0, &here.2), "{what}");
        common::assert_same(&there.1, &here.1, &what);
    }
}

#[test]
fn a_hurray_file_by_s3_url_verifies_and_cats_as_the_local_file() {
    let s3 = Seaweed::shared();
    let files = [
        common::sample("tiny-llama.hrry"),
        common::corpus().join("hurray/valid/composite-partition.hrry"),
    ];
    for path in files {
        let name = path.file_name().unwrap().to_str().unwrap();
        let key = format!("hurray/{name}");
        s3.put(&key, &fs::read(&path).unwrap());
        let (url, local) = (s3.url(&key), path.to_str().unwrap());
        let mut runs = vec![(vec!["check", "--verify"], vec![])];
        for o in common::ls(&path).objects {
            for p in o.parts {
                runs.push((vec!["cat"], vec![o.name.clone(), p.name.clone()]));
            }
        }
        assert!(runs.len() > 2, "{local}: nothing to cat");
        same_by_url(&s3, local, &url, &runs);
    }
}

#[test]
fn a_sharded_safetensors_checkpoint_by_s3_url_reads_its_files_beside_its_index() {
    let s3 = Seaweed::shared();
    let folder = common::corpus().join("safetensors/sharded/two-files");
    for entry in fs::read_dir(&folder).unwrap() {
        let path = entry.unwrap().path();
        let key = format!("hf/{}", path.file_name().unwrap().to_str().unwrap());
        s3.put(&key, &fs::read(&path).unwrap());
    }
    let path = folder.join("model.safetensors.index.json");
    let (url, local) = (
        s3.url("hf/model.safetensors.index.json"),
        path.to_str().unwrap(),
    );
    let mut runs = vec![
        (vec!["check", "--verify"], vec![]),
        (vec!["ls", "-l"], vec![]),
        (vec!["manifest"], vec![]),
    ];
    for o in common::ls(&path).objects {
        runs.push((vec!["cat"], vec![o.name.clone(), "data".to_string()]));
    }
    assert!(runs.len() > 4, "{local}: nothing to cat");
    same_by_url(&s3, local, &url, &runs);
}

/// A mount by URL with the server's variables, unmounted on drop.
struct S3Mount {
    mnt: PathBuf,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl S3Mount {
    /// Runs `ztfs mount URL MNT --log-level debug`, asserting success.
    fn new(s3: &Seaweed, url: &str) -> S3Mount {
        let dir = tempfile::Builder::new()
            .prefix("ztfs-s3-mount-test-")
            .tempdir()
            .unwrap();
        let m = S3Mount {
            mnt: dir.path().join("mnt"),
            log: dir.path().join("daemon.log"),
            _dir: dir,
        };
        fs::create_dir(&m.mnt).unwrap();
        let mut args: Vec<&OsStr> = vec!["mount".as_ref(), url.as_ref(), m.mnt.as_os_str()];
        args.extend(["--log-level", "debug", "--log-file"].map(OsStr::new));
        args.push(m.log.as_os_str());
        let out = ztfs(&s3.env(), &args);
        assert!(
            out.status.success(),
            "{}\ndaemon log:\n{}",
            common::describe(&args, &out),
            m.log()
        );
        assert!(
            common::is_mounted(&m.mnt),
            "{} is not in mountinfo",
            m.mnt.display()
        );
        m
    }

    fn path(&self) -> &Path {
        &self.mnt
    }

    fn join(&self, rel: &str) -> PathBuf {
        self.mnt.join(rel)
    }

    fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for S3Mount {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("daemon log of {}:\n{}", self.mnt.display(), self.log());
        }
        common::cleanup(&self.mnt);
    }
}

#[test]
fn a_mount_by_s3_url_serves_what_a_local_mount_serves() {
    let s3 = Seaweed::shared();
    let (_dir, built) = built();
    for (path, url) in upload(&s3, "mount", &built) {
        let local = Mount::new(&path, &[]);
        let remote = S3Mount::new(&s3, &url);
        let (a, b) = (
            common::read_tree(local.path()),
            common::read_tree(remote.path()),
        );
        assert!(a.len() > 3, "{}: {} files", path.display(), a.len());
        let names = |t: &[(PathBuf, _)]| t.iter().map(|f| f.0.clone()).collect::<Vec<_>>();
        assert_eq!(names(&b), names(&a), "{url}");
        for ((name, here), (_, there)) in a.iter().zip(&b) {
            assert!(here.is_ok(), "{}: {here:?}", name.display());
            // The mount's time differs; everything else is the same.
            assert!(there == here, "{url}: {} differs", name.display());
        }
    }
}

#[test]
fn a_wrong_secret_is_refused_and_the_error_names_the_url() {
    let s3 = Seaweed::shared();
    let key = "wrong-secret/tiny-llama.zt";
    s3.put(key, &fs::read(common::sample("tiny-llama.zt")).unwrap());
    let url = s3.url(key);
    let right = ztfs(&s3.env(), &["ls", url.as_str()]);
    assert!(
        right.status.success(),
        "{}",
        common::describe(&["ls", &url], &right)
    );
    let mut env = s3.env();
    for (k, v) in &mut env {
        if k == "AWS_SECRET_ACCESS_KEY" {
            *v = "not-the-secret".into();
        }
    }
    let wrong = ztfs(&env, &["ls", url.as_str()]);
    let err = String::from_utf8_lossy(&wrong.stderr);
    let what = common::describe(&["ls", &url], &wrong);
    // 2: an I/O error, as the table of exit codes (docs/commands.md) says.
    assert_eq!(wrong.status.code(), Some(2), "{what}");
    assert!(wrong.stdout.is_empty(), "{what}");
    assert!(err.contains(&url) && !err.contains("panicked"), "{what}");
    // The server's refusal, not a failure to reach it.
    assert!(err.contains("403"), "{what}");
}

#[test]
fn an_object_overwritten_under_a_mount_fails_reads_of_what_was_not_read() {
    let s3 = Seaweed::shared();
    let (first, next) = (model(1), model(2));
    assert_eq!(first.len(), next.len());
    assert_ne!(first, next);
    let key = "overwritten/model.zt";
    s3.put(key, &first);
    let m = S3Mount::new(&s3, &s3.url(key));
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("model.zt");
    fs::write(&local, &first).unwrap();
    let want = common::cat(&local, "b", "data", false).unwrap();
    common::assert_same(&fs::read(m.join("b/data")).unwrap(), &want, "b/data");
    // Same name, same length, other bytes: another ETag.
    s3.put(key, &next);
    // Part a's middle is in no block read so far (the tail read at open,
    // maybe the first block, and b's).
    common::assert_fails_as_changed(&m.join("a/data"), || m.log());
}

#[test]
fn endpoint_region_and_keys_come_from_the_aws_files_and_the_environment_wins() {
    let s3 = Seaweed::shared();
    let key = "aws-files/tiny-llama.zt";
    s3.put(key, &fs::read(common::sample("tiny-llama.zt")).unwrap());
    let url = s3.url(key);
    let home = tempfile::tempdir().unwrap();
    let aws = home.path().join(".aws");
    fs::create_dir(&aws).unwrap();
    let endpoint = s3.endpoint();
    fs::write(
        aws.join("config"),
        format!("[default]\nregion = eu-west-3\n\n[profile lab]\nregion = us-east-1\nendpoint_url = {endpoint}\n"),
    )
    .unwrap();
    fs::write(
        aws.join("credentials"),
        format!(
            "[default]\naws_access_key_id = nobody\naws_secret_access_key = nothing\n\n\
             [lab]\naws_access_key_id = {}\naws_secret_access_key = {}\n",
            common::s3::ACCESS_KEY,
            common::s3::SECRET_KEY
        ),
    )
    .unwrap();
    let home_env = ("HOME".to_string(), home.path().display().to_string());
    let profile = |name: &str| ("AWS_PROFILE".to_string(), name.to_string());
    let want = ztfs(&s3.env(), &["ls", url.as_str()]);
    assert!(
        want.status.success(),
        "{}",
        common::describe(&["ls", &url], &want)
    );

    // Everything from the files.
    let out = ztfs(&[home_env.clone(), profile("lab")], &["ls", url.as_str()]);
    assert_eq!(
        out.stdout,
        want.stdout,
        "{}",
        common::describe(&["ls", &url], &out)
    );
    // Or from files the environment names.
    let named = [
        (
            "AWS_CONFIG_FILE".to_string(),
            aws.join("config").display().to_string(),
        ),
        (
            "AWS_SHARED_CREDENTIALS_FILE".to_string(),
            aws.join("credentials").display().to_string(),
        ),
        ("HOME".to_string(), "/nonexistent".to_string()),
        profile("lab"),
    ];
    let out = ztfs(&named, &["ls", url.as_str()]);
    assert_eq!(
        out.stdout,
        want.stdout,
        "{}",
        common::describe(&["ls", &url], &out)
    );
    // A key in the environment wins over the file's: a wrong secret there
    // is refused by the server.
    let wrong = [
        home_env.clone(),
        profile("lab"),
        ("AWS_ACCESS_KEY_ID".into(), common::s3::ACCESS_KEY.into()),
        ("AWS_SECRET_ACCESS_KEY".into(), "not-the-secret".into()),
    ];
    let out = ztfs(&wrong, &["ls", url.as_str()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code() == Some(2) && err.contains("403"), "{err}");
    // The default profile's keys are not the server's.
    let out = ztfs(std::slice::from_ref(&home_env), &["ls", url.as_str()]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        common::describe(&["ls", &url], &out)
    );
    // A profile that is in neither file is named.
    let out = ztfs(&[home_env, profile("nope")], &["ls", url.as_str()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() == Some(2) && err.contains("AWS_PROFILE=nope"),
        "{err}"
    );
}
