//! `ztfs pack` refusing what it must not write, and leaving everything as
//! it was when it refuses: a source that changes while it is read, an
//! output that `ztfs check` would reject, a sharded family that cannot be
//! published whole, an alignment past its bound; and the mode of what it
//! replaces. The CLI tests run the real binary; the change of a source
//! mid-pack is driven through the library, whose progress callback runs
//! between the hashing of a part and its copy.

#[allow(dead_code)]
#[path = "corpus/builder.rs"]
mod builder;
mod common;

use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::{describe, safetensors_file as safetensors, ztfs};
use ztfs::error::{Error, Rule};

/// Runs `ztfs pack SRC -o OUT FLAGS...`.
fn pack(src: &Path, out: &Path, flags: &[&str]) -> std::process::Output {
    let mut args: Vec<&OsStr> = vec!["pack".as_ref(), src.as_os_str(), "-o".as_ref()];
    args.push(out.as_os_str());
    args.extend(flags.iter().map(OsStr::new));
    ztfs(&args)
}

/// Bytes that do not compress.
fn noise(n: usize, seed: u64) -> Vec<u8> {
    builder::Lcg::new(seed).bytes(n)
}

/// Four tensors of 300 KB each: four data shards at `--shard-size 300K`.
fn four_tensors(dir: &Path) -> PathBuf {
    let t: Vec<(String, Vec<u8>)> = (0..4)
        .map(|i| (format!("t{i}"), noise(300_000, i)))
        .collect();
    let tensors: Vec<(&str, &str, &[u64], Vec<u8>)> = (t.iter())
        .map(|(n, b)| (n.as_str(), "U8", &[300_000u64][..], b.clone()))
        .collect();
    let path = dir.join("model.safetensors");
    fs::write(&path, safetensors(&tensors, None)).unwrap();
    path
}

/// The names in `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut n: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    n.sort();
    n
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `--align` above 1 GiB is a usage error that names the bound; 1 GiB
/// itself packs.
#[test]
fn an_alignment_above_one_gib_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("m.safetensors");
    fs::write(
        &src,
        safetensors(&[("w", "U8", &[4], vec![1, 2, 3, 4])], None),
    )
    .unwrap();
    let out = dir.path().join("out.zt");
    for align in ["1073745920", "2G", "4G", "1T"] {
        let o = pack(&src, &out, &["--align", align]);
        assert_eq!(o.status.code(), Some(2), "{}", describe(&[align], &o));
        assert!(stderr(&o).contains("1073741824"), "{}", stderr(&o));
        assert!(!out.exists());
    }
    let o = pack(&src, &out, &["--align", "1G"]);
    assert!(o.status.success(), "{}", describe(&["1G"], &o));
}

/// An output under a folder that does not exist, by `-o` or
/// `--to-folder`, is refused saying so, and one under a file saying that
/// (before, a missing folder "is not a directory", or for `--to-folder`
/// the error of a temporary folder's name it never made).
#[test]
fn an_output_in_a_missing_folder_says_it_does_not_exist() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("m.safetensors");
    fs::write(&src, safetensors(&[("w", "U8", &[1], vec![7])], None)).unwrap();
    let missing = dir.path().join("no/such");
    let file = dir.path().join("a-file");
    fs::write(&file, b"").unwrap();
    for (parent, words) in [
        (
            &missing,
            format!(
                "the folder {} does not exist; create it first",
                missing.display()
            ),
        ),
        (&file, format!("{} is not a directory", file.display())),
    ] {
        let out = parent.join("out.zt");
        let o = pack(&src, &out, &[]);
        assert_eq!(o.status.code(), Some(2), "{}", describe(&["-o"], &o));
        assert!(
            stderr(&o).contains(&format!("{}: {words}", out.display())),
            "{}",
            stderr(&o)
        );
        let folder = parent.join("out");
        let args = [
            "pack".as_ref(),
            src.as_os_str(),
            "--to-folder".as_ref(),
            folder.as_os_str(),
        ];
        let o = ztfs(&args);
        assert_eq!(o.status.code(), Some(2), "{}", describe(&args, &o));
        let e = stderr(&o);
        assert!(e.contains(&format!("{}: {words}", folder.display())), "{e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
    assert!(!missing.exists());
}

/// What the source's reader accepts and `ztfs check` rejects (rank above
/// 64; a file attribute name that is empty, holds U+0000 or is longer than
/// 1024 bytes) is refused with check's rule and exit code, naming the
/// source, and nothing is written.
#[test]
fn an_output_that_check_would_reject_is_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.zt");
    fs::write(&out, b"before").unwrap();
    let long = format!("{{\"{}\":\"v\"}}", "k".repeat(1025));
    let rank65 = [1u64; 65];
    let one = |meta: Option<&str>| safetensors(&[("w", "U8", &[1], vec![7])], meta);
    let cases: Vec<(&str, Vec<u8>, Rule)> = vec![
        (
            "rank65",
            safetensors(&[("w", "U8", &rank65, vec![7])], None),
            Rule::Shape,
        ),
        ("empty_key", one(Some("{\"\":\"v\"}")), Rule::Name),
        ("nul_key", one(Some("{\"a\\u0000b\":\"v\"}")), Rule::Name),
        ("long_key", one(Some(&long)), Rule::Name),
    ];
    for (name, bytes, rule) in cases {
        let src = dir.path().join(format!("{name}.safetensors"));
        fs::write(&src, bytes).unwrap();
        let o = pack(&src, &out, &[]);
        assert_eq!(o.status.code(), Some(1), "{}", describe(&[name], &o));
        let e = stderr(&o);
        assert!(e.contains(&format!("rejected ({rule})")), "{name}: {e}");
        assert!(e.contains(&format!("{name}.safetensors")), "{name}: {e}");
        assert_eq!(fs::read(&out).unwrap(), b"before", "{name}");
        let left: Vec<String> = (names_in(dir.path()).into_iter())
            .filter(|n| n.starts_with('.'))
            .collect();
        assert!(left.is_empty(), "{name}: {left:?}");
        fs::remove_file(&src).unwrap();
    }
    // Refused before the first byte of the source is read.
    let src = dir.path().join("rank65.safetensors");
    let rank65 = safetensors(&[("w", "U8", &rank65, vec![7])], None);
    fs::write(&src, rank65).unwrap();
    let source =
        ztfs::pack::Source::of_model(ztfs::model::Model::open(&src).unwrap(), true, None).unwrap();
    let mut read = 0;
    let e = ztfs::pack::pack(&source, &out, &Default::default(), &mut |n| {
        read += n;
        Ok(())
    })
    .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Reject {
                rule: Rule::Shape,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(read, 0);
}

/// A sharded pack whose last shard cannot be put in place (a folder holds
/// its name) publishes nothing: the earlier root and shard files of the
/// same names are byte for byte and inode for inode as they were, and no
/// temporary or kept-aside file is left.
#[test]
fn a_failed_sharded_pack_leaves_the_earlier_family_untouched() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let src = four_tensors(dir.path());
    let out_dir = dir.path().join("out");
    fs::create_dir(&out_dir).unwrap();
    let root = out_dir.join("model.zt");
    let shard = |i: usize| out_dir.join(format!("model-{i:05}-of-00004.zt"));
    let before = [
        (root.clone(), "old root"),
        (shard(1), "old 1"),
        (shard(3), "old 3"),
    ];
    for (p, b) in &before {
        fs::write(p, b).unwrap();
    }
    fs::create_dir(shard(4)).unwrap();
    let inodes: Vec<u64> = before
        .iter()
        .map(|(p, _)| fs::metadata(p).unwrap().ino())
        .collect();
    let o = pack(&src, &root, &["--shard-size", "300K"]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&["pack"], &o));
    for ((p, b), ino) in before.iter().zip(inodes) {
        assert!(
            fs::read(p).unwrap() == b.as_bytes(),
            "{} changed",
            p.display()
        );
        assert_eq!(fs::metadata(p).unwrap().ino(), ino, "{}", p.display());
    }
    assert!(shard(4).is_dir());
    assert_eq!(
        names_in(&out_dir),
        [
            "model-00001-of-00004.zt",
            "model-00003-of-00004.zt",
            "model-00004-of-00004.zt",
            "model.zt"
        ]
    );
    // With the folder gone, the same pack publishes the whole family.
    fs::remove_dir(shard(4)).unwrap();
    let o = pack(&src, &root, &["--shard-size", "300K"]);
    assert!(o.status.success(), "{}", describe(&["pack"], &o));
    assert_eq!(names_in(&out_dir).len(), 5);
    common::ztfs_ok(&[OsStr::new("check"), "--verify".as_ref(), root.as_os_str()]);
}

/// A replaced output, root or shard, keeps its permission bits (0600 stays
/// 0600); a new file gets 0666 less the umask.
#[test]
fn a_replaced_output_keeps_its_mode() {
    let dir = tempfile::tempdir().unwrap();
    let src = four_tensors(dir.path());
    let root = dir.path().join("m.zt");
    let shard1 = dir.path().join("m-00001-of-00004.zt");
    for p in [&root, &shard1] {
        fs::write(p, b"old").unwrap();
        fs::set_permissions(p, fs::Permissions::from_mode(0o600)).unwrap();
    }
    let line = "umask 027 && exec \"$0\" pack \"$1\" -o \"$2\" --shard-size 300K";
    let o = std::process::Command::new("sh")
        .args(["-c", line, common::BIN])
        .arg(&src)
        .arg(&root)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", describe(&["pack"], &o));
    assert_eq!(mode(&root), 0o600);
    assert_eq!(mode(&shard1), 0o600);
    assert_eq!(mode(&dir.path().join("m-00002-of-00004.zt")), 0o640);
    let fresh = dir.path().join("fresh.zt");
    let o = std::process::Command::new("sh")
        .args([
            "-c",
            "umask 077 && exec \"$0\" pack \"$1\" -o \"$2\"",
            common::BIN,
        ])
        .arg(&src)
        .arg(&fresh)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", describe(&["pack"], &o));
    assert_eq!(mode(&fresh), 0o600);
    // While written, a file is no more open than the one it replaces.
    let source =
        ztfs::pack::Source::of_model(ztfs::model::Model::open(&src).unwrap(), true, None).unwrap();
    let mut seen = Vec::new();
    let opts = ztfs::pack::Options {
        shard_size: Some(300_000),
        ..Default::default()
    };
    ztfs::pack::pack(&source, &root, &opts, &mut |_| {
        for n in names_in(dir.path()).iter().filter(|n| n.ends_with(".part")) {
            seen.push(mode(&dir.path().join(n)));
        }
        Ok(())
    })
    .unwrap();
    assert!(
        !seen.is_empty() && seen.iter().all(|&m| m == 0o600),
        "{seen:?}"
    );
    assert_eq!(mode(&root), 0o600);
}

/// The library's pack over a safetensors file whose first tensor is
/// rewritten (other bytes, the same length) right after it was hashed,
/// before it is copied (or, with zstd, read again): the pack fails naming
/// the source as changed, and leaves nothing. Untouched, it packs.
#[test]
fn a_source_changed_while_packed_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let src = four_tensors(dir.path());
    let out = dir.path().join("out.zt");
    let zstd = ztfs::pack::Options {
        zstd: Some(3),
        ..Default::default()
    };
    let run = |rewrite: bool, opts: &ztfs::pack::Options| {
        // A time long past: any write moves it.
        let old = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
        (fs::File::options().write(true).open(&src))
            .and_then(|f| f.set_modified(old))
            .unwrap();
        let model = ztfs::model::Model::open(&src).unwrap();
        let source = ztfs::pack::Source::of_model(model, true, None).unwrap();
        let mut done = false;
        // Called after each chunk is hashed; t0 is one chunk.
        ztfs::pack::pack(&source, &out, opts, &mut |_| {
            if rewrite && !done {
                done = true;
                flip_first_bytes_of_data(&src, 1000);
            }
            Ok(())
        })
    };
    // Copied file to file, or (zstd) streamed through the encoder.
    for opts in [Default::default(), zstd] {
        let e = run(true, &opts).expect_err("a changed source is refused");
        match &e {
            Error::Io { source, .. } => {
                assert_eq!(source.kind(), std::io::ErrorKind::InvalidData, "{e}")
            }
            e => panic!("not an I/O error: {e}"),
        }
        assert!(e.to_string().contains("changed while it was packed"), "{e}");
        assert!(e.to_string().contains("model.safetensors"), "{e}");
        assert_eq!(names_in(dir.path()), ["model.safetensors"]);
    }
    run(false, &Default::default()).expect("an untouched source packs");
    common::ztfs_ok(&[OsStr::new("check"), "--verify".as_ref(), out.as_os_str()]);
}

/// Inverts the first `n` bytes after a safetensors file's header, in place.
fn flip_first_bytes_of_data(path: &Path, n: usize) {
    use std::os::unix::fs::FileExt;
    let bytes = fs::read(path).unwrap();
    let start = 8 + u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let flipped: Vec<u8> = bytes[start..start + n].iter().map(|b| !b).collect();
    let f = fs::File::options().write(true).open(path).unwrap();
    f.write_all_at(&flipped, start as u64).unwrap();
}
