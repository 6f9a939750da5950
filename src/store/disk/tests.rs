use super::*;

fn block(i: u8, len: usize) -> Vec<u8> {
    (0..len).map(|j| i.wrapping_add(j as u8)).collect()
}

fn id() -> [u8; 32] {
    object_id("http://h/m.zt", Some("\"e\""), 10, 0)
}

/// Sets `path`'s modification time two stale periods back.
fn age(path: &Path) {
    let old = std::time::SystemTime::now() - 2 * STALE_TMP;
    let f = File::options().write(true).open(path).unwrap();
    f.set_modified(old).unwrap();
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn refused(opened: Result<Disk>) -> String {
    match opened {
        Err(Error::Usage(why)) => why,
        Err(e) => panic!("not a usage error: {e:?}"),
        Ok(_) => panic!("opened"),
    }
}

#[test]
fn a_block_put_is_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let disk = Disk::open(dir.path(), 1 << 20).unwrap();
    let k = key(&id(), 3);
    assert_eq!(disk.get(&k, 100, Vec::new()), None);
    disk.put(&k, &block(3, 100));
    assert_eq!(disk.get(&k, 100, Vec::new()), Some(block(3, 100)));
    assert_eq!(disk.held(), (HEADER + 100) as u64);
    // Another object's block of the same index is another file.
    let other = key(&object_id("http://h/m.zt", Some("\"f\""), 10, 0), 3);
    assert_eq!(disk.get(&other, 100, Vec::new()), None);
}

#[test]
fn an_altered_truncated_or_misnamed_file_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let disk = Disk::open(dir.path(), 1 << 20).unwrap();
    let (a, b, c) = (key(&id(), 0), key(&id(), 1), key(&id(), 2));
    for k in [&a, &b, &c] {
        disk.put(k, &block(1, 64));
    }
    // A flipped byte of the data.
    let mut bytes = std::fs::read(disk.path(&a)).unwrap();
    bytes[HEADER + 5] ^= 1;
    std::fs::write(disk.path(&a), bytes).unwrap();
    assert_eq!(disk.get(&a, 64, Vec::new()), None);
    assert!(!disk.path(&a).exists(), "deleted");
    // A torn write.
    let bytes = std::fs::read(disk.path(&b)).unwrap();
    std::fs::write(disk.path(&b), &bytes[..HEADER + 10]).unwrap();
    assert_eq!(disk.get(&b, 64, Vec::new()), None);
    // Block c's file under another block's name.
    std::fs::copy(disk.path(&c), disk.path(&a)).unwrap();
    {
        let mut index = disk.locked();
        index.entries.insert(a, ((HEADER + 64) as u64, 0));
        index.held += (HEADER + 64) as u64;
    }
    assert_eq!(disk.get(&a, 64, Vec::new()), None);
    // The wrong length asked for.
    assert_eq!(disk.get(&c, 63, Vec::new()), None);
}

#[test]
fn the_least_recently_used_go_first_and_the_order_outlives_the_process() {
    let dir = tempfile::tempdir().unwrap();
    let size = (HEADER + 100) as u64;
    let keys: Vec<Key> = (0..4).map(|i| key(&id(), i)).collect();
    {
        let disk = Disk::open(dir.path(), 3 * size).unwrap();
        for k in &keys[..3] {
            disk.put(k, &block(0, 100));
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(disk.get(&keys[0], 100, Vec::new()).is_some()); // 1 is now the oldest
        disk.put(&keys[3], &block(0, 100));
        assert_eq!(disk.held(), 3 * size);
        assert!(!disk.has(&keys[1]) && !disk.path(&keys[1]).exists());
    }
    // Reopened smaller: the least recently used by modification time go.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let disk = Disk::open(dir.path(), 2 * size).unwrap();
    assert!(!disk.has(&keys[2]), "2 was used before 0 and 3");
    assert!(disk.get(&keys[0], 100, Vec::new()).is_some());
    assert!(disk.get(&keys[3], 100, Vec::new()).is_some());
}

#[test]
fn a_stale_temporary_file_is_removed_and_strangers_are_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    Disk::open(dir.path(), 1 << 20).unwrap();
    let stale = dir.path().join("ztfs-tmp.1.1");
    std::fs::write(&stale, b"half").unwrap();
    age(&stale);
    let fresh = dir.path().join("ztfs-tmp.2.1");
    std::fs::write(&fresh, b"being written").unwrap();
    std::fs::write(dir.path().join("notes.txt"), b"mine").unwrap();
    let disk = Disk::open(dir.path(), 1 << 20).unwrap();
    assert!(!stale.exists());
    assert!(fresh.exists(), "another process may be writing it");
    assert!(dir.path().join("notes.txt").exists());
    assert_eq!(disk.held(), 0);
}

#[test]
fn a_fifo_in_a_block_s_place_is_dropped_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let disk = Disk::open(dir.path(), 1 << 20).unwrap();
    let k = key(&id(), 9);
    disk.put(&k, &block(9, 64));
    let path = disk.path(&k);
    std::fs::remove_file(&path).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo");
    assert_eq!(disk.get(&k, 64, Vec::new()), None);
    assert!(!path.exists(), "the FIFO was removed");
}

/// The file an attacker without the cache's secret can write for block
/// `k`: the right name and header fields, `check` in the MAC's place.
fn forge(disk: &Disk, k: &Key, bytes: &[u8], check: &[u8]) {
    let mut file = Vec::new();
    file.extend_from_slice(MAGIC);
    file.extend_from_slice(k);
    file.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    file.extend_from_slice(check);
    file.extend_from_slice(bytes);
    std::fs::write(disk.path(k), file).unwrap();
}

#[test]
fn a_block_not_checked_with_the_cache_s_secret_is_not_served() {
    let dir = tempfile::tempdir().unwrap();
    let disk = Disk::open(dir.path(), 1 << 20).unwrap();
    let planted = block(7, 64);
    let other: Secret = [0x5a; 32];
    let checks: [(&str, Vec<u8>); 3] = [
        (
            "no key",
            mac(&[0; 32], &key(&id(), 0), &planted)
                .finalize()
                .into_bytes()
                .to_vec(),
        ),
        (
            "another cache's key",
            mac(&other, &key(&id(), 1), &planted)
                .finalize()
                .into_bytes()
                .to_vec(),
        ),
        ("an unkeyed hash", Sha256::digest(&planted).to_vec()),
    ];
    for (i, (what, check)) in checks.iter().enumerate() {
        let k = key(&id(), i as u64);
        disk.put(&k, &block(1, 64));
        forge(&disk, &k, &planted, check);
        assert_eq!(disk.get(&k, 64, Vec::new()), None, "{what}");
        assert!(!disk.path(&k).exists(), "{what}: deleted");
    }
    // What ztfs writes is served, with the secret it keeps.
    let k = key(&id(), 9);
    disk.put(&k, &planted);
    assert_eq!(disk.get(&k, 64, Vec::new()), Some(planted));
}

#[test]
fn a_new_directory_gets_a_private_key_file_that_later_opens_share() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let top = tempfile::tempdir().unwrap();
    let dir = top.path().join("a/cache");
    let first = Disk::open(&dir, 1 << 20).unwrap();
    let key_file = dir.join(secret::KEY_FILE);
    let meta = std::fs::metadata(&key_file).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(meta.uid(), crate::sys::euid());
    assert_eq!(meta.len(), 40);
    assert_eq!(&std::fs::read(&key_file).unwrap()[..8], b"ZTFSKEY2");
    let k = key(&id(), 0);
    first.put(&k, &block(0, 64));
    let later = Disk::open(&dir, 1 << 20).unwrap();
    assert_eq!(later.secret, first.secret);
    assert_eq!(later.get(&k, 64, Vec::new()), Some(block(0, 64)));
    // Another cache has another secret.
    let elsewhere = tempfile::tempdir().unwrap();
    assert_ne!(
        Disk::open(elsewhere.path(), 1).unwrap().secret,
        first.secret
    );
}

#[test]
fn processes_making_a_key_at_once_agree_on_one() {
    // 50 rounds: one opener could see the key another had just linked in
    // while it checked the directory was empty (CI, a loaded machine).
    for _ in 0..50 {
        let dir = tempfile::tempdir().unwrap();
        let secrets: Vec<Secret> = std::thread::scope(|s| {
            let opening: Vec<_> = (0..6)
                .map(|_| s.spawn(|| Disk::open(dir.path(), 1 << 20).unwrap().secret))
                .collect();
            opening.into_iter().map(|t| t.join().unwrap()).collect()
        });
        assert!(secrets.iter().all(|s| *s == secrets[0]), "one key");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "only the key file is left: {names:?}");
    }
}

#[test]
fn a_directory_others_may_write_or_own_is_refused() {
    for mode in [0o777, 0o775, 0o757, 0o1777] {
        let dir = tempfile::tempdir().unwrap();
        chmod(dir.path(), mode);
        refused(Disk::open(dir.path(), 1 << 20));
        // Nor once it is a cache.
        chmod(dir.path(), 0o700);
        Disk::open(dir.path(), 1 << 20).unwrap();
        chmod(dir.path(), mode);
        refused(Disk::open(dir.path(), 1 << 20));
    }
    let dir = tempfile::tempdir().unwrap();
    chmod(dir.path(), 0o755);
    Disk::open(dir.path(), 1 << 20).unwrap();
    if crate::sys::is_root() {
        std::os::unix::fs::chown(dir.path(), Some(crate::sys::euid() + 1), None).unwrap();
        refused(Disk::open(dir.path(), 1 << 20));
    }
}

#[test]
fn a_key_file_open_to_others_not_the_user_s_or_malformed_is_refused() {
    let opened = || {
        let dir = tempfile::tempdir().unwrap();
        Disk::open(dir.path(), 1 << 20).unwrap();
        let key_file = dir.path().join(secret::KEY_FILE);
        (dir, key_file)
    };
    for mode in [0o644, 0o640, 0o604, 0o660, 0o400] {
        let (dir, key_file) = opened();
        chmod(&key_file, mode);
        if mode & 0o077 != 0 {
            refused(Disk::open(dir.path(), 1 << 20));
        } else {
            Disk::open(dir.path(), 1 << 20).unwrap();
        }
    }
    let malformed: [&[u8]; 4] = [
        b"",
        b"ZTFSKEY2short",
        b"ZTFSKEY1........................................",
        &[0; 40],
    ];
    for bytes in malformed {
        let (dir, key_file) = opened();
        std::fs::write(&key_file, bytes).unwrap();
        refused(Disk::open(dir.path(), 1 << 20));
    }
    // A symbolic link to a good key, a directory in its place.
    let (dir, key_file) = opened();
    let (_, good) = opened();
    std::fs::remove_file(&key_file).unwrap();
    std::os::unix::fs::symlink(&good, &key_file).unwrap();
    refused(Disk::open(dir.path(), 1 << 20));
    std::fs::remove_file(&key_file).unwrap();
    std::fs::create_dir(&key_file).unwrap();
    refused(Disk::open(dir.path(), 1 << 20));
    if crate::sys::is_root() {
        let (dir, key_file) = opened();
        std::os::unix::fs::chown(&key_file, Some(crate::sys::euid() + 1), None).unwrap();
        refused(Disk::open(dir.path(), 1 << 20));
    }
}

#[test]
fn a_directory_of_other_files_is_refused_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let hex_name = dir.path().join("ab".repeat(32));
    let tmp = dir.path().join("tmp.x");
    for path in [&hex_name, &tmp] {
        std::fs::write(path, b"a Hugging Face blob, a mktemp file").unwrap();
        age(path);
    }
    refused(Disk::open(dir.path(), 0));
    assert!(hex_name.exists() && tmp.exists());
    assert!(!dir.path().join(secret::KEY_FILE).exists());
    // An older ztfs's cache (ZTFSBLK1 blocks named by 64 hex) is such a
    // directory.
    let old = tempfile::tempdir().unwrap();
    let block = old.path().join("cd".repeat(32));
    std::fs::write(&block, [b"ZTFSBLK1".as_slice(), &[0; 100]].concat()).unwrap();
    refused(Disk::open(old.path(), 0));
    assert!(block.exists());
    // A directory of only ztfs's temporaries (a racing opener's key) is
    // empty to it.
    let racing = tempfile::tempdir().unwrap();
    std::fs::write(racing.path().join("ztfs-tmp.1.0"), b"").unwrap();
    Disk::open(racing.path(), 0).unwrap();
}

#[test]
fn a_file_as_the_directory_is_named_not_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cache");
    std::fs::write(&file, b"").unwrap();
    let why = refused(Disk::open(&file, 1 << 20));
    assert!(why.contains("not a directory"), "{why}");
}

#[test]
fn past_the_budget_only_ztfs_s_own_block_files_are_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let size = (HEADER + 100) as u64;
    let disk = Disk::open(dir.path(), 2 * size).unwrap();
    // Strangers put in the cache once it is ztfs's: an old mktemp file, a
    // 64-hex name, and a file under a block's name that is not a block.
    let hex_name = dir.path().join("ef".repeat(32));
    let tmp = dir.path().join("tmp.x");
    let squatter = disk.path(&key(&id(), 100));
    for path in [&hex_name, &tmp, &squatter] {
        std::fs::write(path, vec![1u8; size as usize]).unwrap();
        age(path);
    }
    drop(disk);
    // Reopened: the squatter is listed by its name, the oldest.
    let disk = Disk::open(dir.path(), 2 * size).unwrap();
    for i in 0..4 {
        disk.put(&key(&id(), i), &block(0, 100));
    }
    assert!(!disk.has(&key(&id(), 100)) && !disk.has(&key(&id(), 0)));
    assert!(disk.has(&key(&id(), 3)) && !disk.path(&key(&id(), 0)).exists());
    for path in [&hex_name, &tmp, &squatter] {
        assert!(path.exists(), "{} was deleted", path.display());
    }
    let disk = Disk::open(dir.path(), 0).unwrap();
    assert_eq!(disk.held(), 0);
    assert!(hex_name.exists() && tmp.exists() && squatter.exists());
}
