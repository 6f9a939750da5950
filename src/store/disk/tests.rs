use super::*;

fn block(i: u8, len: usize) -> Vec<u8> {
    (0..len).map(|j| i.wrapping_add(j as u8)).collect()
}

fn id() -> [u8; 32] {
    object_id("http://h/m.zt", Some("\"e\""), 10, 0)
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
    let stale = dir.path().join("tmp.1.1");
    std::fs::write(&stale, b"half").unwrap();
    let old = std::time::SystemTime::now() - 2 * STALE_TMP;
    File::options()
        .write(true)
        .open(&stale)
        .unwrap()
        .set_modified(old)
        .unwrap();
    let fresh = dir.path().join("tmp.2.1");
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
