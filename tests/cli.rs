//! The command line as a user meets it: help, exit codes, messages for
//! foreign files, refusals, broken pipes, and the JSON outputs.

#[allow(dead_code)]
#[path = "corpus/builder.rs"]
mod builder;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn ztfs(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ztfs"))
        .args(args)
        .output()
        .unwrap()
}

fn corpus(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(rel)
        .display()
        .to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn temp_file(name: &str, bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    (dir, path)
}

#[test]
fn help_covers_every_subcommand() {
    let o = ztfs(&["--help"]);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    for sub in [
        "check", "ls", "cat", "digest", "manifest", "mount", "unmount",
    ] {
        assert!(text.contains(sub), "--help lacks {sub}");
        let h = ztfs(&[sub, "--help"]);
        assert!(h.status.success(), "{sub} --help");
        assert!(
            String::from_utf8_lossy(&h.stdout).contains("Usage"),
            "{sub} --help"
        );
    }
    assert!(text.contains("Exit codes"));
}

#[test]
fn exit_codes() {
    assert_eq!(
        ztfs(&["check", &corpus("samples/tiny-llama.zt")])
            .status
            .code(),
        Some(0)
    );
    let r = ztfs(&["check", &corpus("reject/manifest-hash-mismatch.zt")]);
    assert_eq!(r.status.code(), Some(1));
    let line = stderr(&r);
    assert!(
        line.starts_with("ztfs: ") && line.contains(": rejected (ManifestHash): "),
        "{line}"
    );
    assert_eq!(line.lines().count(), 1, "one line: {line}");
    assert_eq!(ztfs(&["check", "/nonexistent/x.zt"]).status.code(), Some(2));
    assert_eq!(ztfs(&["check"]).status.code(), Some(2));
    assert_eq!(ztfs(&["bogus"]).status.code(), Some(2));
    let missing = ztfs(&["cat", &corpus("samples/tiny-llama.zt"), "no.such.object"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("not found"));
}

#[test]
fn foreign_files_are_named() {
    // safetensors and GGUF files are read (tests/safetensors_input.rs,
    // tests/gguf_input.rs).
    let cases: [(&str, Vec<u8>, &str); 9] = [
        (
            "m.hrrys",
            [b"HRRY".as_slice(), &[1, 0, 20, 0, 0, 0], &[0; 64]].concat(),
            "Hurray stream",
        ),
        // A name or shape of a format ztfs reads does not win over a
        // foreign magic (a .npy header length of 0x0a20 is whitespace
        // before its '{').
        (
            "m.hrry",
            [b"HRRY".as_slice(), &[1, 0, 20, 0, 0, 0], &[0; 64]].concat(),
            "Hurray stream",
        ),
        (
            "m.safetensors",
            b"\x93NUMPY\x01\x00\x20\x0a{'descr': '<f4'}".to_vec(),
            ".npy",
        ),
        (
            "m.bin",
            [b"PK\x05\x06".as_slice(), &[0; 18]].concat(),
            "empty zip",
        ),
        (
            "m.zt",
            [b"ZTEN0001".as_slice(), &[0; 64]].concat(),
            "older zTensor",
        ),
        // Named by what they look like (issue 25), never as a broken
        // zTensor file with hex.
        (
            "m.zt.gz",
            [b"\x1f\x8b\x08\x00".as_slice(), &[7; 100]].concat(),
            "gzip",
        ),
        (
            "notes.zt",
            b"just some words, not a model\n".repeat(30),
            "text file",
        ),
        (
            "model.zt",
            b"<!DOCTYPE html><html><body>Sign in</body></html>\n".to_vec(),
            "HTML page",
        ),
        (
            "weights.npy",
            b"\x93NUMPY\x01\x00\x76\x00{'descr': '<f4'}".to_vec(),
            "ztfs pack",
        ),
    ];
    for (name, bytes, what) in cases {
        let (_d, p) = temp_file(name, &bytes);
        let o = ztfs(&["check", p.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(1), "{name}");
        let e = stderr(&o);
        assert!(e.contains(what) && e.contains("zTensor v2"), "{name}: {e}");
        assert!(!e.contains("rejected"), "{name}: {e}");
    }
}

#[test]
fn cat_refuses_what_it_cannot_decode() {
    let f = corpus("valid/view-unknown-encoding-refused.zt");
    let ls = ztfs(&["ls", "--json", &f]);
    let text = String::from_utf8_lossy(&ls.stdout);
    let name = text
        .split("\"name\":\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string();
    let o = ztfs(&["cat", &f, &name]);
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty(), "a refused part yields no bytes");
    assert!(stderr(&o).contains("refused"), "{}", stderr(&o));
    let raw = ztfs(&["cat", "--raw", &f, &name]);
    assert_eq!(raw.status.code(), Some(0));
    assert!(!raw.stdout.is_empty());

    let bad = corpus("valid/bool-invalid-byte.zt");
    let o = ztfs(&["cat", &bad, "w"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        o.stdout.is_empty(),
        "content rules are checked before the first byte"
    );
    assert!(stderr(&o).contains("rejected (LayoutData)"));
}

/// A model with one 4 MiB u8 tensor `big`, larger than any pipe buffer.
fn big_model() -> (tempfile::TempDir, PathBuf) {
    let mut fb = builder::FileBuilder::new();
    let data = vec![7u8; 4 << 20];
    let blob = fb.blob(&data);
    let part = builder::part("u8", blob);
    let objects = builder::Fields::new().set("big", builder::dense(&[4 << 20], part));
    let manifest = builder::CborItem::from(builder::root(objects)).encode();
    temp_file("big.zt", &fb.finish(&manifest))
}

#[test]
fn broken_pipe_exits_zero() {
    let (_d, big) = big_model();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ztfs"))
        .args(["cat", big.to_str().unwrap(), "big"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut one = [0u8; 1];
    out.read_exact(&mut one).unwrap();
    drop(out);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(o.stderr.is_empty(), "quiet: {}", stderr(&o));
}

#[test]
fn digest_names_parts_without_digest() {
    let o = ztfs(&["digest", &corpus("valid/dtypes-all.zt")]);
    if o.status.success() {
        let d = String::from_utf8_lossy(&o.stdout);
        assert!(d.starts_with("sha256:") && d.len() == 7 + 64 + 1, "{d}");
    } else {
        assert_eq!(o.status.code(), Some(1));
        assert!(stderr(&o).contains("no digest"));
    }
    let x = ztfs(&["digest", "--algo", "xxh3", &corpus("samples/tiny-llama.zt")]);
    assert!(x.status.success());
    assert_eq!(String::from_utf8_lossy(&x.stdout).trim().len(), 5 + 16);
    let shard = ztfs(&["digest", &corpus("valid/data-shard.zt")]);
    assert_eq!(shard.status.code(), Some(1));
}

#[test]
fn verify_reports_parts_without_digest() {
    let o = ztfs(&["check", "--verify", &corpus("valid/shape-scalar.zt")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let all = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    assert!(
        all.contains("no digest") || all.contains("digests match"),
        "{all}"
    );
}

#[test]
fn ls_long_shows_attributes_and_shards() {
    let o = ztfs(&["ls", "-l", &corpus("samples/sharded/model.zt")]);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("shard "), "{text}");
    let data = ztfs(&["ls", &corpus("valid/data-shard.zt")]);
    assert!(data.status.success());
    assert!(String::from_utf8_lossy(&data.stdout).contains("data shard"));
}

/// A model with one `n`-byte u8 tensor of zeros (no digest, so verifying
/// it is a fast pass over the bytes even in a debug build).
fn zeros_model(n: usize) -> (tempfile::TempDir, PathBuf) {
    let mut fb = builder::FileBuilder::new();
    let data = vec![0u8; n];
    let blob = fb.blob(&data);
    let part = builder::part("u8", blob);
    let objects = builder::Fields::new().set("z", builder::dense(&[n as u64], part));
    let manifest = builder::CborItem::from(builder::root(objects)).encode();
    temp_file("zeros.zt", &fb.finish(&manifest))
}

/// `check --verify` shows progress (bytes verified of bytes total) on a
/// terminal, and nothing of the kind when not on one. (It shows after 2
/// seconds of work; ZTFS_PROGRESS_AFTER_MS makes that 0 here.)
#[test]
fn verify_progress_only_on_a_terminal() {
    let (_d, f) = zeros_model(32 << 20);
    let cmd = format!(
        "{} check --verify {}",
        env!("CARGO_BIN_EXE_ztfs"),
        f.display()
    );
    let tty = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .env("ZTFS_PROGRESS_AFTER_MS", "0")
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&tty.stdout);
    assert!(tty.status.success(), "{shown}");
    assert!(
        shown.contains("verifying: ") && shown.contains(" of 32.0 MiB"),
        "{shown}"
    );
    assert!(shown.contains("valid and verified"), "{shown}");
    let plain = Command::new(env!("CARGO_BIN_EXE_ztfs"))
        .args(["check", "--verify", f.to_str().unwrap()])
        .env("ZTFS_PROGRESS_AFTER_MS", "0")
        .output()
        .unwrap();
    assert!(plain.status.success());
    assert!(
        !stderr(&plain).contains("verifying"),
        "no progress off a terminal"
    );
}

/// `check --verify` of a file of many parts without digests prints one
/// note with the count and the first few names, not a line per part.
#[test]
fn verify_summarises_parts_without_digest_in_one_line() {
    let mut fb = builder::FileBuilder::new();
    let blob = fb.blob(&[7u8; 4]);
    let mut objects = builder::Fields::new();
    for i in 0..1000 {
        let part = builder::part("u8", blob);
        objects = objects.set(format!("t{i:04}").as_str(), builder::dense(&[4], part));
    }
    let manifest = builder::root(objects).sorted().encode();
    let (_d, f) = temp_file("many.zt", &fb.finish(&manifest));
    let o = ztfs(&["check", "--verify", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    let notes: Vec<&str> = err.lines().filter(|l| l.contains("no digest")).collect();
    assert_eq!(notes.len(), 1, "{err}");
    assert!(notes[0].contains("1000 parts have no digest"), "{err}");
    assert!(notes[0].contains("and 997 more"), "{err}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("1000 parts have no digest"), "{out}");
}

/// A shard of the declared size whose whole-file digest differs is not the
/// declared file: no byte of it is served, whether it was found beside the
/// root or named with --shard, unless the user vouches for it.
#[test]
fn cat_refuses_a_shard_of_the_wrong_content() {
    let root = corpus("families/wrong-digest/model.zt");
    let shard = corpus("families/wrong-digest/model-00001.zt");
    let positional = ztfs(&["cat", &root, "layers.0.weight"]);
    assert_eq!(positional.status.code(), Some(1), "{}", stderr(&positional));
    assert!(
        stderr(&positional).contains("ShardIdentity"),
        "{}",
        stderr(&positional)
    );
    assert!(positional.stdout.is_empty());
    let named = format!("00001={shard}");
    let over = ztfs(&["cat", &root, "layers.0.weight", "--shard", &named]);
    assert_eq!(over.status.code(), Some(1), "{}", stderr(&over));
    assert!(over.stdout.is_empty());
    let trusted = ztfs(&["cat", &root, "layers.0.weight", "--trust-shards"]);
    assert!(trusted.status.success(), "{}", stderr(&trusted));
    assert_eq!(trusted.stdout.len(), 256);
    let local = ztfs(&["cat", &root, "norm"]);
    assert!(local.status.success(), "{}", stderr(&local));
}

#[test]
fn ls_safetensors_says_where_each_object_goes() {
    let out = ztfs(&["ls", "--safetensors", &corpus("valid/csr-u32.zt")]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.lines()
            .any(|l| l.contains("\t-\tleft out: layout \"zt.sparse_csr/1\" is not dense")),
        "{text}"
    );
    let out = ztfs(&["ls", "--safetensors", &corpus("samples/tiny-llama.zt")]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("model.norm.weight\tF32\tmodel.safetensors\n"),
        "{text}"
    );
    assert!(
        text.contains("lm_head.weight\tBF16\tmodel.safetensors\n"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 12, "{text}");
}

#[test]
fn mode_takes_read_bits_only() {
    let out = ztfs(&[
        "mount",
        &corpus("samples/tiny-llama.zt"),
        "/nonexistent",
        "--mode",
        "755",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("only read bits"), "{}", stderr(&out));
}

#[test]
fn completions_and_man_page() {
    for shell in ["bash", "zsh", "fish"] {
        let out = ztfs(&["completions", shell]);
        assert!(out.status.success(), "{shell}: {}", stderr(&out));
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            text.contains("unmount") && text.contains("--passthrough"),
            "{shell}"
        );
    }
    let (_dir, script) = temp_file("ztfs.bash", &ztfs(&["completions", "bash"]).stdout);
    let check = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .status()
        .unwrap();
    assert!(check.success(), "bash -n rejects the completion script");
    let man = ztfs(&["man"]);
    let page = String::from_utf8(man.stdout).unwrap();
    assert!(
        page.contains(".TH ztfs 1") && page.contains("mount"),
        "{page}"
    );
}

#[test]
fn counts_are_plural_only_when_they_should_be() {
    let one = ztfs(&["check", &corpus("valid/shape-scalar.zt")]);
    assert!(String::from_utf8_lossy(&one.stdout).contains(": 1 object, 1 part, "));
    let many = ztfs(&["check", &corpus("samples/tiny-llama.zt")]);
    assert!(String::from_utf8_lossy(&many.stdout).contains(": 12 objects, 12 parts, "));
}

/// `--cache-dir` refuses, with exit 2 before any work, a directory that is
/// not ztfs's alone, and touches nothing in it.
#[test]
fn a_cache_directory_not_ztfs_s_alone_is_refused_with_exit_2() {
    use std::os::unix::fs::PermissionsExt;
    let model = corpus("samples/tiny-llama.zt");
    let check_with = |dir: &Path| ztfs(&["check", "--cache-dir", dir.to_str().unwrap(), &model]);
    let chmod = |p: &Path, mode: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    // A new directory (made with its parents) becomes a cache.
    let top = tempfile::tempdir().unwrap();
    let fresh = top.path().join("x/cache");
    let o = check_with(&fresh);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(fresh.join("ztfs-cache.key").is_file());
    // Open to others, or its key open to others.
    for mode in [0o777, 0o775] {
        chmod(&fresh, mode);
        assert_eq!(check_with(&fresh).status.code(), Some(2), "mode {mode:o}");
    }
    chmod(&fresh, 0o700);
    chmod(&fresh.join("ztfs-cache.key"), 0o644);
    assert_eq!(check_with(&fresh).status.code(), Some(2), "key 0644");
    // A directory of someone else's files (a Hugging Face cache's blobs, a
    // mktemp file), refused and untouched.
    let foreign = tempfile::tempdir().unwrap();
    let blob = foreign.path().join("0a".repeat(32));
    let tmp = foreign.path().join("tmp.AbC123");
    for p in [&blob, &tmp] {
        std::fs::write(p, b"not ztfs's").unwrap();
        let f = std::fs::File::options().write(true).open(p).unwrap();
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
        f.set_modified(old).unwrap();
    }
    let o = ztfs(&[
        "check",
        "--cache-size",
        "0",
        "--cache-dir",
        foreign.path().to_str().unwrap(),
        &model,
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(blob.exists() && tmp.exists());
    let names = std::fs::read_dir(foreign.path()).unwrap().count();
    assert_eq!(names, 2, "nothing was added");
    // A file named as the directory.
    let (_d, file) = temp_file("cache", b"");
    let o = check_with(&file);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("is not a directory"), "{}", stderr(&o));
    assert!(
        !stderr(&o).contains("tiny-llama"),
        "the model is not at fault"
    );
}

/// A fuzz finding: a valid Hurray file whose strided float4 tensor has
/// 1.7e19 elements (8.4e18 bytes of view): its offsets times 8 wrapped, so
/// a read gave other elements' bits. The view is refused, not served.
#[test]
fn a_view_past_2_60_bytes_is_refused_not_wrapped() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus/hurray/strided-float4-view-past-2-60-bytes");
    let f = f.to_str().unwrap();
    let name = String::from_utf8(ztfs(&["ls", f]).stdout).unwrap();
    let o = ztfs(&["cat", f, name.trim()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("2^60 bytes"), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
}

/// Every error names the file it is about once: the command's file before
/// an error about something else, not again before one that names it (a
/// file that is no regular file, a URL that is no object's), and the
/// other file an error is about after the command's.
#[test]
fn an_error_names_its_file_once() {
    let stderr = |args: &[&str]| String::from_utf8(ztfs(args).stderr).unwrap();
    assert_eq!(
        stderr(&["check", "/dev/null"]),
        "ztfs: /dev/null: not a regular file (a character device)\n"
    );
    let e = stderr(&["ls", "http://127.0.0.1:9/"]);
    assert_eq!(
        e,
        "ztfs: http://127.0.0.1:9/: no object named after the host\n"
    );
    let e = stderr(&["check", "/nonexistent.zt"]);
    assert!(e.starts_with("ztfs: /nonexistent.zt: No such file"), "{e}");
    assert_eq!(e.matches("nonexistent").count(), 1, "{e}");
    let sample = "corpus/samples/tiny-llama.zt";
    let e = stderr(&["cat", sample, "nothing", "data"]);
    assert!(
        e.starts_with(&format!("ztfs: {sample}: not found: object")),
        "{e}"
    );
}

/// `--log-level` and `ZTFS_LOG` take levels and MODULE=LEVEL pairs and
/// refuse anything else in one line (env_logger would take `loud` as a
/// module name and say nothing); `-v` stands for a level; `umount` is
/// `unmount`.
#[test]
fn log_levels_are_checked_and_umount_is_unmount() {
    let model = corpus("samples/tiny-llama.zt");
    let mnt = tempfile::tempdir().unwrap();
    let mnt = mnt.path().to_str().unwrap();
    let o = ztfs(&["mount", "--log-level", "loud", &model, mnt]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("\"loud\" is not a log level"));
    let o = ztfs(&["mount", "-v", "--log-level", "info", &model, mnt]);
    assert_eq!(o.status.code(), Some(2), "-v and --log-level together");
    for (spec, ok) in [
        ("loud", false),
        ("info,", false),
        ("=debug", false),
        ("ztfs=verbose", false),
        ("DEBUG", true),
        ("ztfs=debug,fuser=warn", true),
        ("off", true),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_ztfs"))
            .args(["ls", &model])
            .env("ZTFS_LOG", spec)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.success(), ok, "ZTFS_LOG={spec}: {err}");
        if !ok {
            assert_eq!(o.status.code(), Some(2), "ZTFS_LOG={spec}");
            assert!(err.starts_with("ztfs: ZTFS_LOG="), "ZTFS_LOG={spec}: {err}");
            assert_eq!(err.lines().count(), 1, "ZTFS_LOG={spec}: {err}");
        }
    }
    let o = ztfs(&["umount", mnt]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(!err.contains("unrecognized subcommand"), "{err}");
    let o = ztfs(&["umount", "--help"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("Unmount a ztfs mount"));
}

/// Every page `ztfs man` lists (`ztfs-mount(1)`, ...) is one `ztfs man
/// COMMAND` prints, under that name; an unknown command is a usage error
/// naming the known ones. The help texts fixed in issue 25 say what is.
#[test]
fn every_listed_man_page_can_be_printed() {
    let o = ztfs(&["man"]);
    assert!(o.status.success());
    let main = String::from_utf8_lossy(&o.stdout).into_owned();
    let listed: Vec<&str> = main
        .lines()
        .filter_map(|l| l.strip_prefix("ztfs\\-")?.strip_suffix("(1)"))
        .collect();
    assert!(
        listed.contains(&"mount") && listed.contains(&"pack"),
        "{listed:?}"
    );
    for name in listed {
        let o = ztfs(&["man", name]);
        assert!(o.status.success(), "ztfs man {name}: {}", stderr(&o));
        let page = String::from_utf8_lossy(&o.stdout);
        assert!(
            page.contains(&format!(".TH ztfs-{name} 1")),
            "ztfs man {name}"
        );
    }
    let o = ztfs(&["man", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no command \"nope\""), "{}", stderr(&o));
    let help = String::from_utf8_lossy(&ztfs(&["mount", "--help"]).stdout).into_owned();
    assert!(!help.contains("otherwise discarded"), "--log-file's help");
    assert!(
        !help.contains("memory clones elsewhere and for decoded files"),
        "--passthrough's help"
    );
}

/// Progress (issue 25): on a terminal after 2 seconds of work, whatever
/// its size, with the rate and the time left; `--progress` shows it on a
/// pipe too, `--quiet` never; by default never on a pipe. The 2 seconds
/// are made 0 here (ZTFS_PROGRESS_AFTER_MS) so a small file shows it.
#[test]
fn progress_shows_rate_and_time_left_when_asked_and_never_on_a_pipe_by_default() {
    let model = corpus("samples/tiny-llama.zt");
    let out = tempfile::tempdir().unwrap();
    let packed = out.path().join("p.zt");
    let packed = packed.to_str().unwrap();
    for (args, shown) in [
        (&["check", "--verify", "--progress", &model][..], true),
        (&["check", "--verify", &model][..], false),
        (&["check", "--verify", "--quiet", &model][..], false),
        (&["pack", &model, "-o", packed, "--progress"][..], true),
        (&["pack", &model, "-o", packed, "-q"][..], false),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_ztfs"))
            .args(args)
            .env("ZTFS_PROGRESS_AFTER_MS", "0")
            .output()
            .unwrap();
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        let line = err.contains("/s, ") && err.contains(" left");
        assert_eq!(line, shown, "{args:?}: {err:?}");
    }
    let o = ztfs(&["check", "--progress", "--quiet", &model]);
    assert_eq!(o.status.code(), Some(2), "--progress and --quiet together");
}

/// A file truncated in place under `ztfs cat` while it decodes (reads of
/// the map past the new end fault): an error naming it, not a SIGBUS that
/// kills the process without a word, and no byte written that is not the
/// tensor's.
#[test]
fn a_file_truncated_under_cat_is_an_error_and_no_wrong_byte() {
    let data: Vec<u8> = (0..8u32 << 20)
        .map(|i| (i % 251) as u8 ^ (i >> 16) as u8)
        .collect();
    let mut header = format!(
        "{{'descr': '|u1', 'fortran_order': False, 'shape': ({},), }}",
        data.len()
    )
    .into_bytes();
    header.resize(128 - 10 - 1, b' ');
    header.push(b'\n');
    let mut npy = b"\x93NUMPY\x01\x00".to_vec();
    npy.extend((header.len() as u16).to_le_bytes());
    npy.extend(header);
    npy.extend(&data);
    let (d, src) = temp_file("t.npy", &npy);
    let zt = d.path().join("t.zt");
    let zt_s = zt.to_str().unwrap();
    let o = ztfs(&["pack", src.to_str().unwrap(), "-o", zt_s, "--zstd"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut child = Command::new(env!("CARGO_BIN_EXE_ztfs"))
        .args(["cat", zt_s, "t"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    // cat is now blocked writing its first frame into the pipe.
    let mut got = vec![0u8; 64 << 10];
    out.read_exact(&mut got).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&zt)
        .unwrap()
        .set_len(4096)
        .unwrap();
    out.read_to_end(&mut got).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("truncated under a read"),
        "{}",
        stderr(&o)
    );
    assert!(got.len() < data.len(), "all {} bytes came", got.len());
    assert!(
        got == data[..got.len()],
        "a byte written is not the tensor's"
    );
}

/// `pack`'s usage line names its two outputs as alternatives, not
/// `--output` as required.
#[test]
fn pack_usage_names_both_outputs() {
    let out = ztfs(&["pack", "model.zt"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("<--output <FILE>|--to-folder <DIR>>"), "{err}");
}
