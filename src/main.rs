use std::process::ExitCode;

use clap::Parser;
use ztfs::cli::{self, Cli};
use ztfs::error::Error;

fn main() -> ExitCode {
    ztfs::sys::raise_open_file_limit();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // mount(8) and /etc/fstab, through mount.fuse3: `ztfs SOURCE MNT -o OPTS`.
    // Each command by its name and its aliases (`umount`, `mounts`).
    let subcommands: Vec<String> = (<Cli as clap::CommandFactory>::command().get_subcommands())
        .flat_map(|c| std::iter::once(c.get_name()).chain(c.get_all_aliases()))
        .map(str::to_string)
        .collect();
    let args = if ztfs::fstab::is_helper_call(&args, &subcommands) {
        match ztfs::fstab::to_mount_args(&args) {
            Ok(a) => a,
            Err(e) => {
                eprintln!("ztfs: {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        args
    };
    let cli = Cli::parse_from(args);
    let file = cli.command.file().map(ztfs::store::shown);
    // For programs that drive ztfs (the Python package): the error as one
    // JSON line on stderr instead of the sentence.
    let json_errors = std::env::var_os("ZTFS_ERROR_FORMAT").is_some_and(|v| v == "json");
    match cli::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Error::Io { ref source, .. }) if source.kind() == std::io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        Err(e) => {
            if json_errors {
                // Also for an error already said in words: a program reads
                // the last line.
                eprintln!("{}", e.to_json(file.as_deref()));
            } else if !matches!(e, Error::Reported(_)) {
                // The command's file first, unless the error is about it
                // and names it already.
                match file.as_deref().filter(|&f| e.about() != Some(f)) {
                    Some(f) => eprintln!("ztfs: {f}: {e}"),
                    None => eprintln!("ztfs: {e}"),
                }
            }
            ExitCode::from(e.exit_code() as u8)
        }
    }
}
