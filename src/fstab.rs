//! The calling convention of `mount.fuse3`, so that `mount -t fuse.ztfs
//! SOURCE MNT -o OPTIONS` and `/etc/fstab` lines work: mount(8) runs the
//! helper, which runs `ztfs SOURCE MNT -o OPTIONS` (ztfs found in the
//! standard PATH, or named in a `ztfs#SOURCE` source). That command line is
//! turned into `ztfs mount SOURCE MNT FLAGS...`: each option maps to the
//! flag of the same name, generic mount options the mount does not need
//! are accepted, and anything else is refused by name.

use std::ffi::{OsStr, OsString};

/// Options mount(8) and the helper pass that change nothing here (the
/// mount is read-only, without devices or setuid files, whatever they say).
const IGNORED: &[&str] = &[
    "rw",
    "ro",
    "dev",
    "nodev",
    "suid",
    "nosuid",
    "exec",
    "noexec",
    "auto",
    "noauto",
    "user",
    "nouser",
    "users",
    "owner",
    "group",
    "defaults",
    "async",
    "sync",
    "atime",
    "noatime",
    "relatime",
    "norelatime",
    "strictatime",
    "diratime",
    "nodiratime",
    "lazytime",
    "nofail",
    "_netdev",
    "default_permissions",
];

/// Options that are flags of `ztfs mount`, with no value.
const SWITCHES: &[&str] = &[
    "allow_other",
    "verify",
    "direct_io",
    "xattrs",
    "tree",
    "nonempty",
    "trust_shards",
    "trust_unversioned",
    "auto_unmount",
];

/// Options that are flags of `ztfs mount` with a value (`name=value`).
const VALUED: &[&str] = &[
    "separator",
    "mode",
    "file_mode",
    "dir_mode",
    "uid",
    "gid",
    "cache_mib",
    "log_file",
    "log_level",
    "shard",
    "passthrough",
    "clone_cache",
    "clone_dir",
    "passthrough_min",
    "npy_dtypes",
    "cache_dir",
    "cache_size",
];

/// True when `args` (the whole command line) is the helper's convention:
/// no subcommand (none of `subcommands`, the command line's own list), a
/// source and a mount point first.
pub fn is_helper_call(args: &[OsString], subcommands: &[String]) -> bool {
    let Some(first) = args.get(1).and_then(|a| a.to_str()) else {
        return false;
    };
    // The helper passes an existing mount point: a mistyped subcommand
    // (`ztfs chek model.zt`) is left to the parser to name.
    let mnt_is_dir = args
        .get(2)
        .is_some_and(|m| std::path::Path::new(m).is_dir());
    let subcommand = first == "help" || subcommands.iter().any(|s| s == first);
    args.len() >= 3 && !first.starts_with('-') && !subcommand && mnt_is_dir
}

/// `ztfs SOURCE MNT [-o OPTS]...` as `ztfs mount SOURCE MNT FLAGS...`.
pub fn to_mount_args(args: &[OsString]) -> Result<Vec<OsString>, String> {
    let mut out: Vec<OsString> = vec![args[0].clone(), "mount".into()];
    let mut positional = Vec::new();
    let mut flags = Vec::new();
    let mut rest = args[1..].iter();
    while let Some(a) = rest.next() {
        if a == OsStr::new("-o") {
            let opts = rest.next().ok_or("-o needs a list of options")?;
            let opts = opts.to_str().ok_or("mount options must be UTF-8")?;
            for o in opts.split(',').filter(|o| !o.is_empty()) {
                flags.extend(option(o)?);
            }
        } else if let Some(opts) = a.to_str().and_then(|a| a.strip_prefix("-o")) {
            for o in opts.split(',').filter(|o| !o.is_empty()) {
                flags.extend(option(o)?);
            }
        } else if a.to_str().is_some_and(|a| a.starts_with('-')) {
            return Err(format!(
                "{}: only -o OPTIONS may follow the source and mount point here",
                a.to_string_lossy()
            ));
        } else {
            positional.push(a.clone());
        }
    }
    if positional.len() != 2 {
        return Err(format!(
            "expected SOURCE MOUNTPOINT [-o OPTIONS], as mount.fuse3 calls it; got {} arguments",
            positional.len()
        ));
    }
    out.extend(positional);
    out.extend(flags.into_iter().map(OsString::from));
    Ok(out)
}

/// The `ztfs mount` flags of one mount option.
fn option(o: &str) -> Result<Vec<String>, String> {
    let (name, value) = match o.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (o, None),
    };
    let flag = format!("--{}", name.replace('_', "-"));
    if value.is_none() && (IGNORED.contains(&name) || name.starts_with("x-")) {
        return Ok(Vec::new());
    }
    if name == "comment" || name.starts_with("x-") {
        return Ok(Vec::new());
    }
    match value {
        None if SWITCHES.contains(&name) => Ok(vec![flag]),
        Some(v) if VALUED.contains(&name) => Ok(vec![flag, v.to_string()]),
        _ => Err(format!(
            "mount option {o:?} is not one ztfs takes (it takes {}, {}, and ignores {})",
            SWITCHES.join(", "),
            VALUED
                .iter()
                .map(|v| format!("{v}=..."))
                .collect::<Vec<_>>()
                .join(", "),
            IGNORED.join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<OsString> {
        a.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_helper_call_becomes_a_mount() {
        let call = args(&[
            "ztfs",
            "/m.zt",
            "/mnt",
            "-o",
            "ro,allow_other,cache_mib=64,dev,suid,x-systemd.automount",
        ]);
        let subs: Vec<String> = ["ls", "pack"].map(String::from).to_vec();
        assert!(is_helper_call(&call, &subs));
        let got = to_mount_args(&call).unwrap();
        let want = args(&[
            "ztfs",
            "mount",
            "/m.zt",
            "/mnt",
            "--allow-other",
            "--cache-mib",
            "64",
        ]);
        assert_eq!(got, want);
        assert!(!is_helper_call(&args(&["ztfs", "ls", "x"]), &subs));
        assert!(!is_helper_call(
            &args(&["ztfs", "pack", "/", "-o", "x.zt"]),
            &subs
        ));
        assert!(!is_helper_call(
            &args(&["ztfs", "chek", "/nonexistent.zt"]),
            &subs
        ));
        assert!(!is_helper_call(&args(&["ztfs", "--help"]), &subs));
        let e = to_mount_args(&args(&["ztfs", "/m.zt", "/mnt", "-o", "rw,bogus"])).unwrap_err();
        assert!(e.contains("\"bogus\""), "{e}");
        assert!(to_mount_args(&args(&["ztfs", "/m.zt", "-o", "ro"])).is_err());
    }
}
