//! The fuser adapter: convert, one call into [`Tree`], reply. No offsets,
//! parsing or caching here. Errors become errno in one table, [`errno`].

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use fuser::{
    BsdFileFlags, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation,
    INodeNo, InitFlags, IoctlFlags, KernelConfig, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate,
    ReplyData, ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry, ReplyIoctl, ReplyOpen,
    ReplyStatfs, ReplyWrite, ReplyXattr, Request, TimeOrNow, WriteFlags,
};

use fuser::BackingId;

use crate::tree::clones::Backing;
use crate::tree::registry::Registry;
use crate::tree::{Attr, Data, FileKind, FsError, OpenMode, Tree};

/// Entry and attribute timeout: the tree never changes while mounted.
const TTL: Duration = Duration::from_secs(24 * 3600);

/// The one errno table. No wildcard: a new error forces a decision here.
pub fn errno(e: FsError) -> Errno {
    match e {
        FsError::NotFound => Errno::ENOENT,
        FsError::NotDir => Errno::ENOTDIR,
        FsError::IsDir => Errno::EISDIR,
        FsError::ReadOnly => Errno::EROFS,
        FsError::NoAttr => Errno::NO_XATTR,
        FsError::Range => Errno::ERANGE,
        FsError::Io => Errno::EIO,
        // Only ever sent to a requester that is gone or dying.
        FsError::Interrupted => Errno::EINTR,
    }
}

fn file_type(k: FileKind) -> FileType {
    match k {
        FileKind::Dir => FileType::Directory,
        FileKind::File => FileType::RegularFile,
    }
}

fn file_attr(a: &Attr) -> FileAttr {
    FileAttr {
        ino: INodeNo(a.ino),
        size: a.size,
        blocks: a.size.div_ceil(512),
        atime: a.atime,
        mtime: a.mtime,
        ctime: a.ctime,
        crtime: SystemTime::UNIX_EPOCH,
        kind: file_type(a.kind),
        perm: a.perm,
        nlink: a.nlink,
        uid: a.uid,
        gid: a.gid,
        rdev: 0,
        blksize: 1 << 20,
        flags: 0,
    }
}

/// The file handle of an open served by passthrough. Every other open
/// gets a handle of its own, from 2 on: a remote model's read-ahead
/// follows each open file on its own (two readers of one file, one
/// reading in order and one jumping, do not spoil each other's).
const PASSTHROUGH_FH: u64 = 1;

/// The kernel's ids of the backing files in use (see [`Registry`]).
type BackingIds = Arc<Registry<BackingId>>;

/// The filesystem handed to fuser.
pub struct ZtFs {
    tree: Arc<Tree>,
    xattrs: bool,
    backing_ids: BackingIds,
    /// The handle the next open gets.
    next_handle: std::sync::atomic::AtomicU64,
}

impl ZtFs {
    /// Serves `tree`; with `xattrs`, answers extended-attribute requests.
    ///
    /// Without it, getxattr and listxattr reply ENOSYS, after which the
    /// kernel stops asking: `ls -l` otherwise makes three getxattr round
    /// trips per entry (security.selinux and two ACL names), which FUSE
    /// never caches (10 s for 100,000 entries instead of under one).
    pub fn new(tree: Arc<Tree>, xattrs: bool) -> ZtFs {
        ZtFs {
            tree,
            xattrs,
            backing_ids: Arc::default(),
            next_handle: std::sync::atomic::AtomicU64::new(PASSTHROUGH_FH + 1),
        }
    }
}

/// The backing id of `ino`'s clone `b` for one more open handle,
/// registering it with the kernel on first use; `None` when the kernel
/// refuses (passthrough is then off for the mount, and says why once).
fn backing_id(
    ids: &BackingIds,
    tree: &Tree,
    ino: u64,
    b: &Backing,
    reply: &ReplyOpen,
) -> Option<Arc<BackingId>> {
    match ids.acquire(ino, || reply.open_backing(&b.file)) {
        Ok(id) => Some(id),
        Err(e) => {
            tree.disable_passthrough(&format!(
                "the kernel refused a backing file ({e}): passthrough needs CAP_SYS_ADMIN in the initial user namespace"
            ));
            None
        }
    }
}

fn xattr_reply(reply: ReplyXattr, size: u32, bytes: &[u8]) {
    if size == 0 {
        reply.size(bytes.len() as u32);
    } else if (size as usize) < bytes.len() {
        reply.error(errno(FsError::Range));
    } else {
        reply.data(bytes);
    }
}

impl Filesystem for ZtFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> io::Result<()> {
        // The kernel clamps to fs.fuse.max_pages_limit (1 MiB requests here).
        let _ = config.set_max_write(16 << 20);
        let _ = config.set_max_background(64);
        let _ = config.add_capabilities(InitFlags::FUSE_DIRECT_IO_ALLOW_MMAP);
        // Listings carry attributes, so `ls -l` needs no lookup per entry.
        let _ = config
            .add_capabilities(InitFlags::FUSE_DO_READDIRPLUS | InitFlags::FUSE_READDIRPLUS_AUTO);
        if self.tree.passthrough_wanted() {
            if let Some(why) = crate::sys::lacks_sys_admin() {
                self.tree.disable_passthrough(&why);
            } else if config
                .add_capabilities(InitFlags::FUSE_PASSTHROUGH)
                .is_err()
            {
                self.tree.disable_passthrough(
                    "the kernel does not offer FUSE passthrough (it needs Linux 6.9+ built with CONFIG_FUSE_PASSTHROUGH)",
                );
            } else if config.set_max_stack_depth(1).is_err() {
                self.tree
                    .disable_passthrough("the kernel refused a filesystem stack depth of 1");
            } else {
                self.tree.passthrough_ready();
            }
        }
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match self.tree.lookup(parent.0, name.as_bytes()) {
            Ok(a) => reply.entry(&TTL, &file_attr(&a), Generation(0)),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.tree.getattr(ino.0) {
            Ok(a) => reply.attr(&TTL, &file_attr(&a)),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn open(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        if flags.0 & libc::O_ACCMODE != libc::O_RDONLY || flags.0 & libc::O_TRUNC != 0 {
            return reply.error(errno(FsError::ReadOnly));
        }
        // The answer may come later, from a job thread (see tree::jobs).
        let (ids, tree) = (self.backing_ids.clone(), self.tree.clone());
        let handle = (self.next_handle).fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let done = Box::new(move |r: Result<OpenMode, FsError>| match r {
            Ok(m) => {
                if let Some(b) = &m.backing {
                    // No page-cache flags: with them the kernel fails a
                    // passthrough open (measured: EIO).
                    match backing_id(&ids, &tree, ino.0, b, &reply) {
                        Some(id) => {
                            let fh = FileHandle(PASSTHROUGH_FH);
                            return reply.opened_passthrough(fh, FopenFlags::empty(), &id);
                        }
                        None => tree.release_backing(ino.0),
                    }
                }
                let mut f = FopenFlags::empty();
                if m.keep_cache {
                    f |= FopenFlags::FOPEN_KEEP_CACHE;
                }
                if m.direct_io {
                    f |= FopenFlags::FOPEN_DIRECT_IO;
                }
                reply.opened(FileHandle(handle), f)
            }
            Err(e) => reply.error(errno(e)),
        });
        self.tree.open(ino.0, req.pid(), done);
    }

    fn read(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock: Option<fuser::LockOwner>,
        reply: ReplyData,
    ) {
        // Counted by the tests: a passed-through file's reads never come.
        log::debug!("read: inode {}, {size} bytes at {offset}", ino.0);
        let done = Box::new(move |r: Result<Data<'_>, FsError>| match r {
            Ok(data) => reply.data(&data),
            Err(e) => reply.error(errno(e)),
        });
        let caller = crate::store::Reader {
            pid: req.pid(),
            handle: fh.0,
            exact: false,
        };
        self.tree.read(ino.0, offset, size, caller, done);
    }

    fn release(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<fuser::LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        if fh.0 == PASSTHROUGH_FH {
            // The last handle's release drops the id: the kernel closes it.
            self.backing_ids.release(ino.0);
            self.tree.release_backing(ino.0);
        }
        reply.ok();
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock: fuser::LockOwner,
        reply: ReplyEmpty,
    ) {
        // Nothing is ever written, so there is nothing to flush.
        reply.ok();
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let r = self.tree.readdir(ino.0, offset, &mut |e| {
            let kind = file_type(e.kind);
            reply.add(INodeNo(e.ino), e.next, kind, e.name)
        });
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn readdirplus(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectoryPlus,
    ) {
        let tree = &self.tree;
        let r = tree.readdir(ino.0, offset, &mut |e| match tree.getattr(e.ino) {
            Ok(a) => reply.add(
                INodeNo(e.ino),
                e.next,
                e.name,
                &TTL,
                &file_attr(&a),
                Generation(0),
            ),
            Err(_) => true,
        });
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        // No blocks, as pseudo filesystems report: `df` lists the mount
        // only when asked (`df -a`, `df MNT`), and disk-full alerts, which
        // divide by the size, stay quiet (a model's size as total with
        // nothing free would read as 100% used). No inodes either, for the
        // same reason: `df -i` shows '-', as for /proc, where a count with
        // none free read as 100% of inodes used.
        let (_, _, namelen) = self.tree.statfs();
        reply.statfs(0, 0, 0, 0, 0, 4096, namelen, 4096);
    }

    /// No file here is a terminal or a device: ENOTTY, what a regular file
    /// answers, and quietly (fuser's default logs every call, and every
    /// Python `open()` asks TCGETS to learn whether it is a terminal).
    fn ioctl(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _flags: IoctlFlags,
        _cmd: u32,
        _in_data: &[u8],
        _out_size: u32,
        reply: ReplyIoctl,
    ) {
        reply.error(Errno::ENOTTY);
    }

    fn getxattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        if !self.xattrs {
            return reply.error(Errno::ENOSYS);
        }
        match self.tree.xattrs(ino.0) {
            Ok(list) => match list.iter().find(|(k, _)| k.as_bytes() == name.as_bytes()) {
                Some((_, v)) => xattr_reply(reply, size, v.as_bytes()),
                None => reply.error(errno(FsError::NoAttr)),
            },
            Err(e) => reply.error(errno(e)),
        }
    }

    fn listxattr(&self, _req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        if !self.xattrs {
            return reply.error(Errno::ENOSYS);
        }
        match self.tree.xattrs(ino.0) {
            Ok(list) => {
                let names: Vec<u8> = list
                    .iter()
                    .flat_map(|(k, _)| k.bytes().chain([0]))
                    .collect();
                xattr_reply(reply, size, &names)
            }
            Err(e) => reply.error(errno(e)),
        }
    }

    // Everything that would change the tree is refused.

    fn setattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        _size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        reply.error(errno(FsError::ReadOnly));
    }

    fn mknod(
        &self,
        _req: &Request,
        _p: INodeNo,
        _n: &OsStr,
        _m: u32,
        _u: u32,
        _r: u32,
        reply: ReplyEntry,
    ) {
        reply.error(errno(FsError::ReadOnly));
    }

    fn mkdir(&self, _req: &Request, _p: INodeNo, _n: &OsStr, _m: u32, _u: u32, reply: ReplyEntry) {
        reply.error(errno(FsError::ReadOnly));
    }

    fn unlink(&self, _req: &Request, _p: INodeNo, _n: &OsStr, reply: ReplyEmpty) {
        reply.error(errno(FsError::ReadOnly));
    }

    fn rmdir(&self, _req: &Request, _p: INodeNo, _n: &OsStr, reply: ReplyEmpty) {
        reply.error(errno(FsError::ReadOnly));
    }

    fn symlink(&self, _req: &Request, _p: INodeNo, _n: &OsStr, _t: &Path, reply: ReplyEntry) {
        reply.error(errno(FsError::ReadOnly));
    }

    fn rename(
        &self,
        _req: &Request,
        _p: INodeNo,
        _n: &OsStr,
        _np: INodeNo,
        _nn: &OsStr,
        _f: RenameFlags,
        reply: ReplyEmpty,
    ) {
        reply.error(errno(FsError::ReadOnly));
    }

    fn link(&self, _req: &Request, _i: INodeNo, _np: INodeNo, _nn: &OsStr, reply: ReplyEntry) {
        reply.error(errno(FsError::ReadOnly));
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _offset: u64,
        _data: &[u8],
        _wf: WriteFlags,
        _flags: OpenFlags,
        _lock: Option<fuser::LockOwner>,
        reply: ReplyWrite,
    ) {
        reply.error(errno(FsError::ReadOnly));
    }

    fn create(
        &self,
        _req: &Request,
        _p: INodeNo,
        _n: &OsStr,
        _m: u32,
        _u: u32,
        _f: i32,
        reply: ReplyCreate,
    ) {
        reply.error(errno(FsError::ReadOnly));
    }

    fn setxattr(
        &self,
        _req: &Request,
        _i: INodeNo,
        _n: &OsStr,
        _v: &[u8],
        _f: i32,
        _p: u32,
        reply: ReplyEmpty,
    ) {
        reply.error(errno(FsError::ReadOnly));
    }

    fn removexattr(&self, _req: &Request, _i: INodeNo, _n: &OsStr, reply: ReplyEmpty) {
        reply.error(errno(FsError::ReadOnly));
    }

    fn fallocate(
        &self,
        _req: &Request,
        _i: INodeNo,
        _fh: FileHandle,
        _o: u64,
        _l: u64,
        _m: i32,
        reply: ReplyEmpty,
    ) {
        reply.error(errno(FsError::ReadOnly));
    }
}
