use std::process::ExitCode;

use clap::Parser;
use ztfs::cli::{self, Cli};
use ztfs::error::Error;

fn main() -> ExitCode {
    ztfs::sys::raise_open_file_limit();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // mount(8) and /etc/fstab, through mount.fuse3: `ztfs SOURCE MNT -o OPTS`.
    let subcommands: Vec<String> = (<Cli as clap::CommandFactory>::command().get_subcommands())
        .map(|c| c.get_name().to_string())
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
    let file = cli
        .command
        .file()
        .map(|f| format!("{}: ", ztfs::store::shown(f)))
        .unwrap_or_default();
    match cli::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Error::Io { ref source, .. }) if source.kind() == std::io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        Err(e) => {
            if !matches!(e, Error::Reported(_)) {
                // An error about the file itself names it already.
                let text = e.to_string();
                let file = if text.starts_with(&file) { "" } else { &file };
                eprintln!("ztfs: {file}{text}");
            }
            ExitCode::from(e.exit_code() as u8)
        }
    }
}
