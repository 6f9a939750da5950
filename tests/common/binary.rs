//! The binary under test, run as the tests' oracle: `ztfs` subcommands and
//! what they printed.

use super::*;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_ztfs");

/// Runs `ztfs args...`.
pub fn ztfs<S: AsRef<OsStr>>(args: &[S]) -> Output {
    ztfs_env(args, &[])
}

/// Runs `ztfs args...` with environment `env` added.
pub fn ztfs_env<S: AsRef<OsStr>>(args: &[S], env: &[(&str, String)]) -> Output {
    Command::new(BIN)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("run the ztfs binary")
}

/// Runs `ztfs args...`, asserts exit 0 and returns stdout.
pub fn ztfs_ok<S: AsRef<OsStr>>(args: &[S]) -> Vec<u8> {
    ztfs_env_ok(args, &[])
}

/// [`ztfs_ok`] with environment `env` added.
pub fn ztfs_env_ok<S: AsRef<OsStr>>(args: &[S], env: &[(&str, String)]) -> Vec<u8> {
    let out = ztfs_env(args, env);
    assert!(out.status.success(), "{}", describe(args, &out));
    out.stdout
}

/// The command line and what it printed, for assertion messages.
pub fn describe<S: AsRef<OsStr>>(args: &[S], out: &Output) -> String {
    let line: Vec<_> = args.iter().map(|a| a.as_ref().to_string_lossy()).collect();
    format!(
        "ztfs {}: {}\nstdout: {}\nstderr: {}",
        line.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Asserts that `ztfs check FILE` rejects `f` (exit 1) naming `rule`,
/// with `why` in its words.
pub fn check_refuses(f: &Path, rule: &str, why: &str) {
    let o = ztfs(&[Path::new("check"), f]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{f:?}: {err}");
    let said = format!("rejected ({rule})");
    assert!(err.contains(&said) && err.contains(why), "{f:?}: {err}");
}

/// `ztfs cat [--raw] FILE OBJECT PART`: the bytes, or stderr on failure.
pub fn cat(file: &Path, object: &str, part: &str, raw: bool) -> Result<Vec<u8>, String> {
    let mut args: Vec<&OsStr> = vec!["cat".as_ref()];
    if raw {
        args.push("--raw".as_ref());
    }
    // After `--`, names that look like flags stay positionals.
    args.extend([
        "--".as_ref(),
        file.as_os_str(),
        object.as_ref(),
        part.as_ref(),
    ]);
    let out = ztfs(&args);
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}
