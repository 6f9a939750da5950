//! The baseline for `scripts/bench-mount.sh`: the barest read-only fuser
//! server, with ztfs's mount settings, serving one file.
//!
//! ```text
//! bare_server FILE MNT OFFSET LENGTH [--direct-io]
//! ```
//!
//! The root directory holds one file, `blob`, whose bytes are
//! `FILE[OFFSET..OFFSET+LENGTH]`, each read answered with
//! `reply.data(&map[range])` straight from a memory map. Settings as in
//! ztfs: 4 worker threads, read-only, max_write 16 MiB, max_background 64,
//! FOPEN_KEEP_CACHE (or FOPEN_DIRECT_IO with `--direct-io`),
//! FUSE_DIRECT_IO_ALLOW_MMAP, 1024 KiB readahead through sysfs after the
//! mount, long TTLs. It prints `ready` once the mount answers, runs until
//! SIGINT or SIGTERM (then unmounts) or until unmounted from outside.
//! Nothing is validated beyond the range fitting in the file: this measures
//! what FUSE allows, not what a filesystem should do.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use fuser::{
    Config, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo,
    InitFlags, KernelConfig, MountOption, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory,
    ReplyEntry, ReplyOpen, Request,
};
use memmap2::Mmap;

const TTL: Duration = Duration::from_secs(24 * 3600);
const BLOB: INodeNo = INodeNo(2);

struct Bare {
    map: Mmap,
    start: usize,
    len: u64,
    open_flags: FopenFlags,
}

impl Bare {
    fn attr(&self, ino: INodeNo) -> Option<FileAttr> {
        let (kind, size, perm, nlink) = match ino {
            INodeNo::ROOT => (FileType::Directory, 0, 0o555, 2),
            BLOB => (FileType::RegularFile, self.len, 0o444, 1),
            _ => return None,
        };
        Some(FileAttr {
            ino,
            size,
            blocks: size.div_ceil(512),
            atime: UNIX_EPOCH,
            mtime: UNIX_EPOCH,
            ctime: UNIX_EPOCH,
            crtime: UNIX_EPOCH,
            kind,
            perm,
            nlink,
            uid: 0,
            gid: 0,
            rdev: 0,
            blksize: 1 << 20,
            flags: 0,
        })
    }
}

impl Filesystem for Bare {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> io::Result<()> {
        let _ = config.set_max_write(16 << 20);
        let _ = config.set_max_background(64);
        let _ = config.add_capabilities(InitFlags::FUSE_DIRECT_IO_ALLOW_MMAP);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match (parent, name.to_str()) {
            (INodeNo::ROOT, Some("blob")) => {
                reply.entry(&TTL, &self.attr(BLOB).unwrap(), Generation(0))
            }
            _ => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.attr(ino) {
            Some(a) => reply.attr(&TTL, &a),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match ino {
            BLOB => reply.opened(FileHandle(0), self.open_flags),
            _ => reply.error(Errno::EISDIR),
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock: Option<fuser::LockOwner>,
        reply: ReplyData,
    ) {
        let from = offset.min(self.len) as usize;
        let to = offset.saturating_add(u64::from(size)).min(self.len) as usize;
        reply.data(&self.map[self.start + from..self.start + to]);
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        if ino != INodeNo::ROOT {
            return reply.error(Errno::ENOTDIR);
        }
        let entries = [
            (INodeNo::ROOT, FileType::Directory, "."),
            (INodeNo::ROOT, FileType::Directory, ".."),
            (BLOB, FileType::RegularFile, "blob"),
        ];
        for (i, (ino, kind, name)) in entries.iter().enumerate().skip(offset as usize) {
            if reply.add(*ino, i as u64 + 1, *kind, name) {
                break;
            }
        }
        reply.ok();
    }
}

fn signal_set(signals: &[i32]) -> libc::sigset_t {
    // SAFETY: sigset_t is plain data, initialised by sigemptyset; the
    // signal numbers are valid.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &s in signals {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

fn run(args: &[String]) -> Result<(), String> {
    let [file, mnt, offset, length, rest @ ..] = args else {
        return Err("usage: bare_server FILE MNT OFFSET LENGTH [--direct-io]".into());
    };
    let direct_io = match rest {
        [] => false,
        [f] if f == "--direct-io" => true,
        _ => return Err(format!("unexpected arguments {rest:?}")),
    };
    let num = |s: &str| s.parse::<u64>().map_err(|e| format!("{s:?}: {e}"));
    let (start, len) = (num(offset)?, num(length)?);
    let f = File::open(file).map_err(|e| format!("{file}: {e}"))?;
    // SAFETY: read-only private map of a file the benchmark does not change.
    let map = unsafe { Mmap::map(&f) }.map_err(|e| format!("{file}: {e}"))?;
    if start
        .checked_add(len)
        .is_none_or(|end| end > map.len() as u64)
    {
        return Err(format!(
            "[{start}, +{len}) is outside {file} ({} bytes)",
            map.len()
        ));
    }
    let open_flags = if direct_io {
        FopenFlags::FOPEN_DIRECT_IO
    } else {
        FopenFlags::FOPEN_KEEP_CACHE
    };
    let fs = Bare {
        map,
        start: start as usize,
        len,
        open_flags,
    };

    // Block the stop signals before any thread starts, so only sigtimedwait
    // below receives them.
    let stop = signal_set(&[libc::SIGINT, libc::SIGTERM]);
    // SAFETY: valid set; the old mask is not needed.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &stop, std::ptr::null_mut()) };

    let mut cfg = Config::default();
    cfg.mount_options.extend([
        MountOption::RO,
        MountOption::NoDev,
        MountOption::NoSuid,
        MountOption::FSName("bare".into()),
    ]);
    cfg.n_threads = Some(4);
    let session = fuser::Session::new(fs, Path::new(mnt), &cfg)
        .and_then(|s| s.spawn())
        .map_err(|e| format!("mounting on {mnt}: {e}"))?;
    // The stat goes through the running session, so the mount answers.
    let dev = std::fs::metadata(mnt)
        .map_err(|e| format!("{mnt}: {e}"))?
        .dev();
    let ra = format!(
        "/sys/class/bdi/{}:{}/read_ahead_kb",
        libc::major(dev),
        libc::minor(dev)
    );
    if let Err(e) = std::fs::write(&ra, "1024") {
        eprintln!("bare_server: {ra}: {e}");
    }
    println!("ready");
    let _ = io::stdout().flush();

    let tick = libc::timespec {
        tv_sec: 0,
        tv_nsec: 200_000_000,
    };
    loop {
        if session.guard.is_finished() {
            return session.join().map_err(|e| format!("session: {e}"));
        }
        // SAFETY: valid set and timespec; no siginfo wanted.
        if unsafe { libc::sigtimedwait(&stop, std::ptr::null_mut(), &tick) } > 0 {
            return session
                .umount_and_join()
                .map_err(|e| format!("unmount: {e}"));
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = run(&args) {
        eprintln!("bare_server: {e}");
        std::process::exit(2);
    }
}
