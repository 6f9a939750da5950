//! `ztfs status` and `ztfs unmount --all`: the mounts of this user
//! ([`crate::mounts`]).

use crate::error::{Error, Result};
use crate::mounts::{self, Status};

/// Prints the mounts: a table, or JSON.
pub fn run(json: bool) -> Result<()> {
    let all = mounts::list()?;
    if json {
        let text = serde_json::to_string_pretty(&all).map_err(|e| Error::Usage(e.to_string()))?;
        println!("{text}");
        return Ok(());
    }
    if all.is_empty() {
        println!("no ztfs mounts");
        return Ok(());
    }
    for m in &all {
        println!("{}", line(m));
    }
    Ok(())
}

/// One mount in words: where, what, its state, daemon, start, log.
fn line(m: &Status) -> String {
    let mut out = format!("{}: {} ({}", m.mountpoint.display(), m.source, m.state);
    if let Some(pid) = m.pid {
        out.push_str(&format!(", daemon {pid}"));
    }
    if let Some(t) = m.started {
        let age = mounts::now().saturating_sub(t);
        out.push_str(&format!(", up {}", human_age(age)));
    }
    if let Some(log) = &m.log {
        out.push_str(&format!(", log {}", log.display()));
    }
    out.push(')');
    if !m.options.is_empty() {
        out.push_str(&format!(" {}", m.options.join(" ")));
    }
    if let Some(fix) = &m.fix {
        out.push_str(&format!("\n  {fix}"));
    }
    out
}

fn human_age(secs: u64) -> String {
    match secs {
        s if s < 120 => format!("{s} s"),
        s if s < 7200 => format!("{} min", s / 60),
        s if s < 172_800 => format!("{} h", s / 3600),
        s => format!("{} days", s / 86_400),
    }
}

/// Unmounts every mount `status` lists; says each, and fails if one did.
pub fn unmount_all() -> Result<()> {
    let mut failed = 0;
    for m in mounts::list()? {
        match crate::mount::unmount(&m.mountpoint) {
            Ok(()) => println!("ztfs: unmounted {}", m.mountpoint.display()),
            Err(e) => {
                eprintln!("ztfs: {}: {e}", m.mountpoint.display());
                failed += 1;
            }
        }
    }
    match failed {
        0 => Ok(()),
        n => Err(Error::Usage(format!("{n} mount(s) could not be unmounted"))),
    }
}
