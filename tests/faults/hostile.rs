//! FIFOs and devices where a model or a shard is expected: the placements,
//! and what each command must do with them.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

use crate::common::{is_mounted, Mount};
use crate::models::{FOREIGN, LOCAL, SHARD};
use crate::procs::{self, write_file};
use crate::ANSWER_S;

/// One hostile placement: a root to open and extra arguments.
pub struct Hostile {
    pub what: &'static str,
    pub root: PathBuf,
    pub args: Vec<OsString>,
    /// The hostile file is the root itself (else a shard).
    pub at_root: bool,
}

/// The placements, each in its own folder below `dir`, and every FIFO
/// made for them (`fifo`, shared, is made by the caller).
pub fn hostile_cases(dir: &Path, root: &[u8], fifo: &Path) -> (Vec<Hostile>, Vec<PathBuf>) {
    let folder = |name: &str| {
        let d = dir.join(name);
        fs::create_dir(&d).unwrap();
        d
    };
    let family = |name: &str| write_file(&folder(name), "model.zt", root);
    let shard_of = |root: &Path| root.with_file_name(format!("model-{SHARD}.zt"));
    let link = |target: &Path, at: PathBuf| {
        std::os::unix::fs::symlink(target, &at).unwrap();
        at
    };
    let mut fifos = vec![fifo.to_path_buf()];
    let mut new_fifo = |at: PathBuf| {
        procs::mkfifo(&at);
        fifos.push(at.clone());
        at
    };
    let shard = |what, root: PathBuf, args: Vec<OsString>| Hostile {
        what,
        root,
        args,
        at_root: false,
    };
    let at_root = |what, root: PathBuf| Hostile {
        what,
        root,
        args: Vec::new(),
        at_root: true,
    };
    let mut arg = OsString::from(format!("{SHARD}="));
    arg.push(fifo);
    let (zero, null) = (Path::new("/dev/zero"), Path::new("/dev/null"));
    let positional = family("positional-fifo");
    new_fifo(shard_of(&positional));
    let to_fifo = family("symlink-fifo");
    let to_zero = family("shard-zero");
    let to_null = family("shard-null");
    let cases = vec![
        shard("positional shard is a FIFO", positional, vec![]),
        shard(
            "--shard names a FIFO",
            family("override-fifo"),
            vec!["--shard".into(), arg],
        ),
        shard(
            "positional shard is a symlink to a FIFO",
            {
                link(fifo, shard_of(&to_fifo));
                to_fifo
            },
            vec![],
        ),
        shard(
            "shard is a symlink to /dev/zero",
            {
                link(zero, shard_of(&to_zero));
                to_zero
            },
            vec![],
        ),
        shard(
            "shard is a symlink to /dev/null",
            {
                link(null, shard_of(&to_null));
                to_null
            },
            vec![],
        ),
        at_root(
            "root is a FIFO",
            new_fifo(folder("root-fifo").join("model.zt")),
        ),
        at_root(
            "root is a symlink to a FIFO",
            link(fifo, folder("root-symlink-fifo").join("model.zt")),
        ),
        at_root(
            "root is a symlink to /dev/zero",
            link(zero, folder("root-zero").join("model.zt")),
        ),
        at_root(
            "root is a symlink to /dev/null",
            link(null, folder("root-null").join("model.zt")),
        ),
    ];
    (cases, fifos)
}

/// Which command of a hostile placement ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmd {
    Check,
    Verify,
    Mount,
}

/// What a hostile placement's command must have done.
pub fn judge_hostile(c: &Hostile, cmd: Cmd, ran: &procs::Ran, m: &Mount) -> Result<(), String> {
    if !matches!(ran.code(), 0..=2) {
        return Err(format!("ended by {ran:?}"));
    }
    let mounted = cmd == Cmd::Mount && is_mounted(m.path());
    let root = c.root.to_string_lossy();
    if c.at_root {
        let clear = ran.stderr.starts_with("ztfs: ") && ran.stderr.contains(&*root);
        return match (ran.code(), mounted) {
            (0, _) | (_, true) => Err(format!("accepted a hostile root: {ran:?}")),
            _ if !clear => Err(format!("no clear error naming the file: {ran:?}")),
            _ => Ok(()),
        };
    }
    let names_shard = ran.stderr.contains(SHARD);
    match cmd {
        Cmd::Check | Cmd::Verify if !names_shard => {
            Err(format!("does not say which shard is unavailable: {ran:?}"))
        }
        Cmd::Verify if ran.code() != 1 => Err(format!("verified without the shard: {ran:?}")),
        Cmd::Check | Cmd::Verify => Ok(()),
        Cmd::Mount if mounted => serves_root_not_shard(m),
        Cmd::Mount if ran.code() == 0 => Err(format!("exit 0 but not mounted: {ran:?}")),
        Cmd::Mount if !names_shard => Err(format!("refused without naming the shard: {ran:?}")),
        Cmd::Mount => Ok(()),
    }
}

/// In a mount of the family's root whose shard is unavailable: the root's
/// own part is served, the shard's part fails with EIO, each in time.
fn serves_root_not_shard(m: &Mount) -> Result<(), String> {
    let local = m.join(LOCAL).join("data");
    let foreign = m.join(FOREIGN).join("data");
    let r = procs::bounded(ANSWER_S, move || fs::read(local).map(|b| b.len()));
    match r {
        Some(Ok(_)) => {}
        other => return Err(format!("the root's own part: {other:?}")),
    }
    let r = procs::bounded(ANSWER_S, move || fs::read(foreign).map(|b| b.len()));
    match r {
        Some(Err(e)) if e.raw_os_error() == Some(libc::EIO) => Ok(()),
        None => Err(format!(
            "the unavailable shard's part: no answer in {ANSWER_S} s"
        )),
        Some(other) => Err(format!(
            "the unavailable shard's part: {other:?}, expected EIO"
        )),
    }
}

/// Mount points whose daemons, whatever state they are in, are ended on
/// drop.
pub struct MountPoints(pub Vec<Mount>);

impl Drop for MountPoints {
    fn drop(&mut self) {
        for m in &self.0 {
            procs::end_daemons_of(m.path());
        }
    }
}

/// On drop, wakes anything still blocked opening these FIFOs.
pub struct Reaper(pub Vec<PathBuf>);

impl Drop for Reaper {
    fn drop(&mut self) {
        for f in &self.0 {
            procs::release_fifo(f);
        }
    }
}
