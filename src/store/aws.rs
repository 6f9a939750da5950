//! The AWS shared configuration files, for `s3://` URLs: the profile named
//! by `AWS_PROFILE` (else `default`) in `~/.aws/credentials` (access key,
//! secret, session token) and `~/.aws/config` (region, `endpoint_url`,
//! and keys too), or the files `AWS_SHARED_CREDENTIALS_FILE` and
//! `AWS_CONFIG_FILE` name. The environment's `AWS_*` variables win over
//! the files, key by key, as in the AWS CLI; credentials are taken from a
//! file only when the environment has no access key. Single sign-on,
//! `credential_process` and role assumption are not read.

use std::path::{Path, PathBuf};

use ini::Ini;

use crate::error::{Error, Result};

/// Larger configuration files are refused rather than read.
const MAX_FILE: u64 = 1 << 20;

/// What a profile sets.
#[derive(Debug, Default, PartialEq)]
pub struct Profile {
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub session_token: Option<String>,
    pub region: Option<String>,
    pub endpoint_url: Option<String>,
}

/// The profile the environment names, from the files it names (or the
/// user's), with the environment's own settings left to win: a key the
/// environment sets is not taken from the files.
pub fn profile() -> Result<Profile> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let home = || env("HOME").map(|h| Path::new(&h).join(".aws"));
    let config = env("AWS_CONFIG_FILE")
        .map(PathBuf::from)
        .or_else(|| Some(home()?.join("config")));
    let credentials = env("AWS_SHARED_CREDENTIALS_FILE")
        .map(PathBuf::from)
        .or_else(|| Some(home()?.join("credentials")));
    let name = env("AWS_PROFILE").unwrap_or_else(|| "default".into());
    let mut p = read(
        config.as_deref(),
        credentials.as_deref(),
        &name,
        env("AWS_PROFILE").is_some(),
    )?;
    if env("AWS_ACCESS_KEY_ID").is_some() {
        p.access_key_id = None;
        p.secret_access_key = None;
        p.session_token = None;
    }
    if env("AWS_REGION")
        .or_else(|| env("AWS_DEFAULT_REGION"))
        .is_some()
    {
        p.region = None;
    }
    if env("AWS_ENDPOINT_URL")
        .or_else(|| env("AWS_ENDPOINT"))
        .is_some()
    {
        p.endpoint_url = None;
    }
    Ok(p)
}

/// Profile `name` from the two files (either may be missing); `named`
/// when the user named it, so that its absence is an error.
fn read(
    config: Option<&Path>,
    credentials: Option<&Path>,
    name: &str,
    named: bool,
) -> Result<Profile> {
    let mut p = Profile::default();
    let mut found = false;
    // The config file names a profile `[profile NAME]`, and the default
    // one `[default]`; the credentials file names both `[NAME]`.
    if let Some(ini) = load(config)? {
        let sections = [format!("profile {name}"), name.to_string()];
        let section = sections.iter().find_map(|s| {
            let usable = s.starts_with("profile ") || name == "default";
            usable.then(|| ini.section(Some(s.as_str()))).flatten()
        });
        if let Some(s) = section {
            found = true;
            let get = |k: &str| s.get(k).map(str::to_string);
            p.region = get("region");
            p.endpoint_url = get("endpoint_url");
            p.access_key_id = get("aws_access_key_id");
            p.secret_access_key = get("aws_secret_access_key");
            p.session_token = get("aws_session_token");
        }
    }
    if let Some(ini) = load(credentials)? {
        if let Some(s) = ini.section(Some(name)) {
            found = true;
            // The credentials file's keys win over the config file's.
            if let Some(id) = s.get("aws_access_key_id") {
                p.access_key_id = Some(id.to_string());
                p.secret_access_key = s.get("aws_secret_access_key").map(str::to_string);
                p.session_token = s.get("aws_session_token").map(str::to_string);
            }
        }
    }
    if named && !found {
        let files: Vec<String> = [config, credentials]
            .into_iter()
            .flatten()
            .map(|f| f.display().to_string())
            .collect();
        return Err(Error::Usage(format!(
            "AWS_PROFILE={name}: no such profile in {}",
            files.join(" or ")
        )));
    }
    Ok(p)
}

/// The INI file at `path`, or `None` when there is none.
fn load(path: Option<&Path>) -> Result<Option<Ini>> {
    let Some(path) = path else {
        return Ok(None);
    };
    let ctx = || format!("AWS configuration {}", path.display());
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(ctx(), e)),
    };
    let mut text = String::new();
    use std::io::Read;
    (file.take(MAX_FILE + 1).read_to_string(&mut text)).map_err(|e| Error::io(ctx(), e))?;
    if text.len() as u64 > MAX_FILE {
        return Err(Error::Usage(format!("{}: larger than 1 MiB", ctx())));
    }
    let opts = ini::ParseOption {
        enabled_quote: false,
        enabled_escape: false,
        ..Default::default()
    };
    Ini::load_from_str_opt(&text, opts)
        .map(Some)
        .map_err(|e| Error::Usage(format!("{}: {e}", ctx())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(config: &str, credentials: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let (c, k) = (dir.path().join("config"), dir.path().join("credentials"));
        std::fs::write(&c, config).unwrap();
        std::fs::write(&k, credentials).unwrap();
        (dir, c, k)
    }

    const CONFIG: &str = "# comment\n[default]\nregion = eu-west-3\n\n\
        [profile lab]\nregion=us-east-2\nendpoint_url = http://127.0.0.1:9000\n\
        s3 =\n  addressing_style = path\n\n[profile keys]\naws_access_key_id = CFG\naws_secret_access_key = cfgsecret\n";
    const CREDENTIALS: &str =
        "[default]\naws_access_key_id = AKDEFAULT\naws_secret_access_key = s/e+c\n\n\
        [lab]\naws_access_key_id=AKLAB\naws_secret_access_key=labsecret\naws_session_token=tok\n";

    #[test]
    fn a_profile_is_read_from_both_files() {
        let (_d, c, k) = files(CONFIG, CREDENTIALS);
        let p = read(Some(&c), Some(&k), "default", false).unwrap();
        assert_eq!(p.region.as_deref(), Some("eu-west-3"));
        assert_eq!(p.access_key_id.as_deref(), Some("AKDEFAULT"));
        assert_eq!(p.secret_access_key.as_deref(), Some("s/e+c"));
        let p = read(Some(&c), Some(&k), "lab", true).unwrap();
        assert_eq!(
            p,
            Profile {
                access_key_id: Some("AKLAB".into()),
                secret_access_key: Some("labsecret".into()),
                session_token: Some("tok".into()),
                region: Some("us-east-2".into()),
                endpoint_url: Some("http://127.0.0.1:9000".into()),
            }
        );
        // Keys in the config file alone serve too.
        let p = read(Some(&c), Some(&k), "keys", true).unwrap();
        assert_eq!(p.access_key_id.as_deref(), Some("CFG"));
    }

    #[test]
    fn missing_files_are_no_profile_and_a_named_missing_profile_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let none = dir.path().join("none");
        assert_eq!(
            read(Some(&none), None, "default", false).unwrap(),
            Profile::default()
        );
        let (_d, c, k) = files(CONFIG, CREDENTIALS);
        let e = read(Some(&c), Some(&k), "nope", true)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("AWS_PROFILE=nope") && e.contains("credentials"),
            "{e}"
        );
        // `[lab]` in the config file is not profile lab: it needs `profile `.
        let (_d, c, _) = files("[lab]\nregion = x\n", "");
        assert_eq!(read(Some(&c), None, "lab", false).unwrap().region, None);
    }

    #[test]
    fn a_malformed_or_huge_file_is_refused_by_name() {
        let (_d, c, _) = files("[unclosed\nregion = x\n", "");
        let e = read(Some(&c), None, "default", false)
            .unwrap_err()
            .to_string();
        assert!(e.contains(&c.display().to_string()), "{e}");
        let (_d, c, _) = files(&"#".repeat(2 << 20), "");
        let e = read(Some(&c), None, "default", false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("larger than 1 MiB"), "{e}");
    }
}
