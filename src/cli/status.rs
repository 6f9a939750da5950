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
    if let Some(c) = &m.caches {
        out.push_str(&caches(c));
    }
    out
}

/// The caches' line of a mount: each tier, its hits of the blocks asked.
fn caches(c: &serde_json::Value) -> String {
    let n = |v: &serde_json::Value, k: &str| v.get(k).and_then(|x| x.as_u64()).unwrap_or(0);
    let rate = |hits: u64, asked: u64| match asked {
        0 => "none asked yet".to_string(),
        _ => format!("{hits} of {asked} blocks ({}%)", hits * 100 / asked),
    };
    let mut out = String::new();
    if let Some(d) = c.get("disk").filter(|d| !d.is_null()) {
        let dir = d.get("dir").and_then(|x| x.as_str()).unwrap_or("?");
        let (hits, misses) = (n(d, "hits"), n(d, "misses"));
        out.push_str(&format!(
            "\n  disk cache {dir}: {}",
            rate(hits, hits + misses)
        ));
    }
    if let Some(s) = c.get("shared").filter(|s| !s.is_null()) {
        let url = s.get("url").and_then(|x| x.as_str()).unwrap_or("?");
        let k = s.get("counts").cloned().unwrap_or_default();
        let (hits, misses, rejected) = (n(&k, "hits"), n(&k, "misses"), n(&k, "rejected"));
        out.push_str(&format!(
            "\n  shared cache {url}: {}, {rejected} failed their check, {} faults; {} written, {} not; {} claimed, {} waited for",
            rate(hits, hits + misses + rejected),
            n(&k, "faults"),
            n(&k, "written"),
            n(&k, "dropped"),
            n(&k, "claimed"),
            n(&k, "waited")
        ));
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
