use std::process::ExitCode;

use clap::Parser;
use ztfs::cli::{self, Cli};
use ztfs::error::Error;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let file = cli
        .command
        .file()
        .map(|f| format!("{}: ", f.display()))
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
