//! NumPy `.npz` archives through the real binary and the real mount,
//! written by hand (the interop suite holds numpy's own against
//! `np.load`): a stored member served in place, a deflated one inflated,
//! the two equal; a member whose CRC-32 is wrong; a deflated member
//! bigger than the mount's `--cache-mib` served exactly; archives whose
//! local headers and directory disagree.

mod common;

use std::fs;
use std::path::Path;

use common::*;

/// A `.npy` file of a little-endian f32 vector.
fn npy(values: &[f32]) -> Vec<u8> {
    let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    npy_of("<f4", values.len(), &data)
}

/// A `.npy` file of `data` as a u8 vector.
fn npy_u8(data: &[u8]) -> Vec<u8> {
    npy_of("|u1", data.len(), data)
}

/// A `.npy` file (version 1.0) of a vector of `n` elements of `descr`.
fn npy_of(descr: &str, n: usize, data: &[u8]) -> Vec<u8> {
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({n},), }}");
    let mut header = dict.into_bytes();
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(b' ');
    }
    header.push(b'\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((header.len() as u16).to_le_bytes());
    out.extend(header);
    out.extend(data);
    out
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = dir.join(name);
    fs::write(&p, bytes).unwrap();
    p
}

fn values(n: usize) -> Vec<f32> {
    (0..n).map(|i| i as f32 * 0.5).collect()
}

#[test]
fn stored_and_deflated_members_read_the_same() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (npy(&values(10)), npy(&values(3000)));
    let stored = write(
        d.path(),
        "s.npz",
        &zip::archive(&[("a.npy", &a, false), ("b.npy", &b, false)]),
    );
    let deflated = write(
        d.path(),
        "d.npz",
        &zip::archive(&[("a.npy", &a, true), ("b.npy", &b, true)]),
    );
    for f in [&stored, &deflated] {
        ztfs_ok(&[Path::new("check"), f]);
        assert!(
            cat(f, "a", "data", false).unwrap() == a[a.len() - 40..],
            "{f:?}"
        );
        assert!(
            cat(f, "b", "data", false).unwrap() == b[b.len() - 12000..],
            "{f:?}"
        );
    }
    // `ls -l` says which arrays were inflated.
    for (f, deflated) in [(&stored, false), (&deflated, true)] {
        let listing = String::from_utf8(ztfs_ok(&[Path::new("ls"), "-l".as_ref(), f])).unwrap();
        let marked = listing.lines().filter(|l| l.ends_with(" (deflated)"));
        assert_eq!(marked.count(), if deflated { 2 } else { 0 }, "{listing}");
    }
    let m = Mount::new(&deflated, &[]);
    assert!(fs::read(m.join("b/data")).unwrap() == b[b.len() - 12000..]);
    let served = fs::read(m.join("b/data.npy")).unwrap();
    assert!(
        served.ends_with(&b[b.len() - 12000..]),
        "data.npy ends with the data"
    );
}

/// Flips the CRC-32 of the last member's directory entry.
fn flip_crc(bytes: &mut [u8]) {
    let dir = (0..bytes.len() - 4)
        .rev()
        .find(|&i| bytes[i..i + 4] == 0x02014b50u32.to_le_bytes())
        .unwrap();
    bytes[dir + 16] ^= 0xff;
}

#[test]
fn a_wrong_crc_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let mut bytes = zip::archive(&[("a.npy", &npy(&values(10)), true)]);
    flip_crc(&mut bytes);
    let f = write(d.path(), "crc.npz", &bytes);
    let o = ztfs(&[Path::new("check"), &f]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("rejected (Zip)") && err.contains("CRC-32"),
        "{err}"
    );
}

fn refused_as_zip(f: &Path, why: &str) {
    let o = ztfs(&[Path::new("check"), f]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{f:?}: {err}");
    assert!(err.contains("rejected (Zip)") && err.contains(why), "{err}");
}

/// Readers that trust the local headers and readers that trust the
/// directory must see one archive: a local header naming another member
/// (Python's zipfile refuses it, so numpy does) and a member whose bytes
/// hold another member (the overlapping zip bomb's trick, refused by
/// Python's zipfile since 3.12; each array alone is valid here) are
/// refused.
#[test]
fn an_archive_read_two_ways_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let mut bytes = zip::stored(&[("a.npy", &npy(&values(4))), ("b.npy", &npy(&values(2)))]);
    assert_eq!(&bytes[30..35], b"a.npy");
    bytes[30] = b'z';
    refused_as_zip(
        &write(d.path(), "renamed.npz", &bytes),
        "its local header names it \"z.npy\"",
    );

    let (inner, inner_fixed) = zip::local("b.npy", &npy(&values(2)), false);
    let outer = npy_u8(&inner);
    let (a, a_fixed) = zip::local("a.npy", &outer, false);
    let inner_at = (a.len() - inner.len()) as u32;
    let nested = zip::finish(
        a,
        &[("a.npy", 0, a_fixed), ("b.npy", inner_at, inner_fixed)],
    );
    refused_as_zip(
        &write(d.path(), "nested.npz", &nested),
        "overlaps member \"b.npy\"",
    );
}

/// A deflated member bigger than the mount's memory budget is served
/// exactly: inflated on its first read into the archive's temporary file
/// (the daemon's own memory does not grow by the member), after a small
/// deflated and a stored member, so that it lies at its place in that
/// file. It was refused, naming the budget, when deflated members were
/// kept in memory.
#[test]
fn a_deflated_member_over_the_memory_budget_is_served_whole() {
    let d = tempfile::tempdir().unwrap();
    let (f, data) = big_archive(d.path());
    let (n, small) = (data.len() / 4, npy(&values(100)));
    let m = Mount::new(&f, &["--cache-mib", "8"]);
    let pid = m.daemon();
    let held = |pid| status_kib(pid, "RssAnon") + status_kib(pid, "RssShmem");
    let before = held(pid);
    let served = fs::read(m.join("big/data")).unwrap();
    assert_eq!(served.len(), data.len());
    assert!(served == data, "big/data is the array's bytes");
    let npy = fs::read(m.join("big/data.npy")).unwrap();
    assert!(
        npy.starts_with(b"\x93NUMPY") && npy.ends_with(&data),
        "big/data.npy"
    );
    let head = String::from_utf8_lossy(&npy[..npy.len() - data.len()]);
    assert!(
        head.contains(&format!("'shape': ({n},)")) && head.contains("<f4"),
        "{head}"
    );
    assert!(fs::read(m.join("a/data")).unwrap() == small[small.len() - 400..]);
    // What the daemon holds of its own (not the file's page cache) grows
    // by far less than the member: a fraction of its threads' arenas.
    let grew = held(pid).saturating_sub(before) << 10;
    assert!(
        grew < (data.len() / 2) as u64,
        "the daemon grew by {grew} bytes"
    );
}

/// An archive of a small deflated member, a stored one (both
/// `npy(&values(100))`) and a deflated `big` of 20 MB of distinct f32
/// values (a misplaced or short byte shows); the archive and `big`'s data.
fn big_archive(dir: &Path) -> (std::path::PathBuf, Vec<u8>) {
    let n = 5 << 20;
    let data: Vec<u8> = (0..n as u32)
        .flat_map(|i| (i as f32).to_le_bytes())
        .collect();
    let big = npy_of("<f4", n, &data);
    let small = npy(&values(100));
    let members = [
        ("a.npy", small.as_slice(), true),
        ("s.npy", small.as_slice(), false),
        ("big.npy", big.as_slice(), true),
    ];
    (write(dir, "big.npz", &zip::archive(&members)), data)
}

/// `ztfs ARGS...` run within 12 MiB of data segment (`ulimit -d`: the
/// heap and private mappings, not a file's shared map): its stdout.
fn ztfs_in_12_mib(args: &[&std::ffi::OsStr]) -> Vec<u8> {
    let o = std::process::Command::new("sh")
        .args(["-c", "ulimit -d 12288 && exec \"$@\"", "sh", BIN])
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{args:?}: {:?}: {err}", o.status);
    o.stdout
}

/// `check`, `check --verify`, `ls -l` and `cat` of a 20 MB deflated
/// member run in bounded memory: opening checks a member by inflating it
/// as a stream, and `cat` reads it from the file it is inflated into.
/// Inflating it into memory, as before, aborted.
#[test]
fn commands_read_a_big_deflated_member_in_bounded_memory() {
    let d = tempfile::tempdir().unwrap();
    let (f, data) = big_archive(d.path());
    let f = f.as_os_str();
    let arg = |s: &'static str| std::ffi::OsStr::new(s);
    ztfs_in_12_mib(&[arg("check"), f]);
    ztfs_in_12_mib(&[arg("check"), arg("--verify"), f]);
    ztfs_in_12_mib(&[arg("ls"), arg("-l"), f]);
    let served = ztfs_in_12_mib(&[arg("cat"), f, arg("big"), arg("data")]);
    assert!(served == data, "cat gives the array's bytes");
}

/// Many deflated members share one file of inflated members: an archive
/// of 5,000 opens and reads (a file each would run into the descriptor
/// limit).
#[test]
fn many_deflated_members_share_one_file() {
    let d = tempfile::tempdir().unwrap();
    let arrays: Vec<(String, Vec<u8>)> = (0..5000)
        .map(|i| (format!("a{i}.npy"), npy(&[i as f32, 1.0])))
        .collect();
    let members: Vec<(&str, &[u8], bool)> = (arrays.iter())
        .map(|(n, b)| (n.as_str(), b.as_slice(), true))
        .collect();
    let f = write(d.path(), "many.npz", &zip::archive(&members));
    // Under a descriptor limit well below the member count.
    let o = std::process::Command::new("sh")
        .args(["-c", "ulimit -n 1024 && exec \"$0\" ls \"$1\""])
        .arg(BIN)
        .arg(&f)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 5000);
    let last = cat(&f, "a4999", "data", false).unwrap();
    assert!(last == [4999f32.to_le_bytes(), 1f32.to_le_bytes()].concat());
}

/// np.savez(f, **{"": a}) writes a member `.npy`: numpy loads it as the
/// array named "". Its directory is the hashed form of the empty name
/// (an empty component failed the listing of the whole root with EIO);
/// its meta.json names it.
#[test]
fn an_array_named_empty_is_listed_and_served() {
    let d = tempfile::tempdir().unwrap();
    let a = npy(&values(5));
    let f = write(
        d.path(),
        "e.npz",
        &zip::stored(&[(".npy", &a), ("b.npy", &a)]),
    );
    let m = Mount::new(&f, &[]);
    let mut listed: Vec<String> = (fs::read_dir(m.path()).unwrap())
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    listed.sort();
    let hashed = "%~99aa06d3014798d86001c324468d497f";
    assert_eq!(
        listed,
        [hashed, "b", "manifest.json", "model.safetensors"],
        "the root lists"
    );
    let meta = fs::read_to_string(m.join(hashed).join("meta.json")).unwrap();
    assert!(meta.contains("\"name\": \"\","), "{meta}");
    assert_eq!(
        fs::read(m.join(hashed).join("data")).unwrap(),
        a[a.len() - 20..]
    );
}

/// Member names as numpy gives them (through Python's zipfile): code
/// page 437 without the directory's UTF-8 flag (`é.npy` written as UTF-8
/// bytes, unflagged, is `├⌐` to numpy), UTF-8 with it; a flagged name that
/// is not UTF-8 is refused, as zipfile refuses it.
#[test]
fn member_names_are_numpys() {
    let d = tempfile::tempdir().unwrap();
    let a = npy(&values(3));
    let archive = |flag: bool, name: &[u8]| {
        let text = String::from_utf8_lossy(name).into_owned();
        let (mut bytes, mut fixed) = zip::local(&text, &a, false);
        // The name's own bytes, then bit 11 of the flags where asked.
        let at = 30;
        bytes.splice(at..at + text.len(), name.iter().copied());
        bytes[26..28].copy_from_slice(&(name.len() as u16).to_le_bytes());
        fixed[22..24].copy_from_slice(&(name.len() as u16).to_le_bytes());
        if flag {
            bytes[7] |= 0x08;
            fixed[3] |= 0x08;
        }
        let mut out = zip::finish(bytes, &[(&text, 0, fixed)]);
        // The directory's name too (finish wrote the lossy text).
        let dir_name = out.len() - 22 - text.len();
        out.splice(dir_name..dir_name + text.len(), name.iter().copied());
        out
    };
    let names = |bytes: Vec<u8>| {
        let f = write(d.path(), "n.npz", &bytes);
        let out = ztfs(&[Path::new("ls"), &f]);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, err) = names(archive(false, "é.npy".as_bytes()));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.trim(), "\u{251c}\u{2310}");
    let (code, out, err) = names(archive(true, "é.npy".as_bytes()));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.trim(), "é");
    let (code, _, err) = names(archive(false, b"\x82t.npy"));
    assert_eq!(code, Some(0), "{err}");
    let (code, _, err) = names(archive(true, b"\x82t.npy"));
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("flagged UTF-8"), "{err}");
}

/// A stored member's CRC-32 is checked by `check --verify` (Python's
/// zipfile checks it as numpy reads the member), not at open: `check`
/// reads no array's bytes.
#[test]
fn a_stored_members_crc_is_checked_by_verify() {
    let d = tempfile::tempdir().unwrap();
    let mut bytes = zip::stored(&[("a.npy", &npy(&values(10)))]);
    flip_crc(&mut bytes);
    let f = write(d.path(), "crc.npz", &bytes);
    let o = ztfs(&[Path::new("check"), &f]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = ztfs(&[Path::new("check"), Path::new("--verify"), &f]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("rejected (Zip)") && err.contains("CRC-32"),
        "{err}"
    );
    // A good one verifies, and says what it checked.
    let good = write(
        d.path(),
        "good.npz",
        &zip::stored(&[("a.npy", &npy(&values(10)))]),
    );
    let out =
        String::from_utf8(ztfs_ok(&[Path::new("check"), Path::new("--verify"), &good])).unwrap();
    assert!(out.contains("every member's CRC-32 matches"), "{out}");
}
