//! The Hugging Face Hub, as `huggingface_hub` reaches it: an `hf://` URL
//! (the form of its `HfFileSystem`), the endpoint and token from the same
//! places it takes them, a revision resolved to its commit, and the
//! repository's files listed at that commit (docs/hub.md).
//!
//! Two requests: `GET /api/{type}/{repo}/revision/{rev}` gives the commit
//! (`sha`); `GET /api/{type}/{repo}/tree/{sha}?recursive=true` (following
//! its `Link: rel="next"` pages) gives every file's path, size and ETag
//! (the LFS sha256, else the git blob id). Every file is then read by
//! range at `{endpoint}/{prefix}{repo}/resolve/{sha}/{path}`, so a push
//! during a mount never mixes two commits' bytes; the token goes with the
//! requests to the endpoint only (reqwest drops it on a redirect to
//! another host, the LFS storage), and is never shown.

use std::sync::Mutex;
use std::time::Duration;

use crate::error::{Error, Result};

/// Most files listed: past it the listing stops (a repository that large
/// is a dataset, not a model; [`crate::model::folder::MAX_ENTRIES`]).
const MAX_FILES: usize = 10_000;
/// Most bytes of one API answer.
const MAX_ANSWER: usize = 32 << 20;
/// Most pages of a listing.
const MAX_PAGES: usize = 100;
const TIMEOUT: Duration = Duration::from_secs(30);
/// Tries of an API request that failed on the way or with a 5xx or 429.
const TRIES: u32 = 4;
/// The longest pause between two tries.
const MAX_PAUSE: Duration = Duration::from_secs(5);
/// The public Hub.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// A repository's kind, as the URL and the API name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Model,
    Dataset,
    Space,
}

impl Kind {
    /// The API's collection: `models`, `datasets`, `spaces`.
    fn api(self) -> &'static str {
        match self {
            Kind::Model => "models",
            Kind::Dataset => "datasets",
            Kind::Space => "spaces",
        }
    }

    /// The prefix of its file URLs: none for a model.
    fn prefix(self) -> &'static str {
        match self {
            Kind::Model => "",
            Kind::Dataset => "datasets/",
            Kind::Space => "spaces/",
        }
    }
}

/// What an `hf://` URL names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubUrl {
    pub kind: Kind,
    /// `ORG/NAME` (or a legacy `NAME`).
    pub repo: String,
    /// A branch, tag or commit; `main` when the URL names none.
    pub revision: String,
    /// A path in the repository (a file or a folder), `/`-separated; empty
    /// for the whole repository.
    pub path: String,
}

/// True when `text` is an `hf://` URL.
pub fn is_hub(text: &str) -> bool {
    text.starts_with("hf://")
}

/// Parses `hf://[datasets/|spaces/]ORG/NAME[@REVISION][/PATH]`. The
/// revision is percent-decoded (`refs%2Fpr%2F1`); a one-component repo
/// (`hf://gpt2`) is a legacy name without an organisation, and then takes
/// no path (it could not be told from one).
pub fn parse(text: &str) -> Result<HubUrl> {
    let usage = |why: &str| Error::at(text, Error::Usage(why.to_string()));
    let rest = text
        .strip_prefix("hf://")
        .ok_or_else(|| usage("not an hf:// URL"))?;
    if rest.contains(['?', '#']) {
        return Err(usage("an hf:// URL takes no query or fragment"));
    }
    let (kind, rest) = match rest.split_once('/') {
        Some(("datasets", r)) => (Kind::Dataset, r),
        Some(("spaces", r)) => (Kind::Space, r),
        Some(("models", r)) => (Kind::Model, r),
        _ => (Kind::Model, rest),
    };
    let parts: Vec<&str> = rest.split('/').collect();
    // The revision is on the repository's last component: `NAME@REV`,
    // or a legacy `NAME@REV` alone; past them, '@' is in the path.
    let legacy = parts.len() == 1 || parts[0].contains('@');
    let (repo_parts, path_parts) = parts.split_at(if legacy { 1 } else { 2 });
    let mut repo = repo_parts.join("/");
    let mut revision = "main".to_string();
    if let Some((r, rev)) = repo.clone().split_once('@') {
        let rev = percent_encoding::percent_decode_str(rev)
            .decode_utf8()
            .map_err(|_| usage("the revision is not UTF-8"))?;
        if rev.is_empty() {
            return Err(usage("an empty revision after @"));
        }
        revision = rev.into_owned();
        repo = r.to_string();
    }
    let name_ok = |s: &str| {
        !s.is_empty()
            && s != "."
            && s != ".."
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    };
    if !repo.split('/').all(name_ok) {
        return Err(usage(
            "the repository is ORG/NAME, each of letters, digits, '-', '_' and '.'",
        ));
    }
    let path = path_parts.join("/");
    let path = path.trim_end_matches('/');
    if path.split('/').any(|c| c == "." || c == "..") || path.contains("//") {
        return Err(usage(
            "the path in the repository has an empty, '.' or '..' component",
        ));
    }
    Ok(HubUrl {
        kind,
        repo,
        revision,
        path: path.to_string(),
    })
}

/// A file of the repository at the commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its path, `/`-separated.
    pub path: String,
    pub size: u64,
    /// What the Hub's cache names its blob by: the LFS sha256, else the
    /// git blob id.
    pub etag: String,
}

/// A repository at one commit: its files and where to read them.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub url: HubUrl,
    /// The endpoint, without a trailing `/`.
    pub endpoint: String,
    /// The commit the revision named at open.
    pub sha: String,
    /// Its files, sorted by path bytes.
    pub files: Vec<Entry>,
    /// True when the listing stopped at its limit (10,000 files).
    pub truncated: bool,
}

impl Snapshot {
    /// The URL reading `path` at the commit.
    pub fn file_url(&self, path: &str) -> String {
        let segments: Vec<String> = path.split('/').map(crate::store::path_segment).collect();
        format!(
            "{}/{}{}/resolve/{}/{}",
            self.endpoint,
            self.url.kind.prefix(),
            self.url.repo,
            self.sha,
            segments.join("/")
        )
    }

    /// The repository's folder in the local Hugging Face cache
    /// (`$HF_HOME/hub/models--ORG--NAME`), where it would be.
    pub fn cache_dir(&self) -> Option<std::path::PathBuf> {
        // The cache names a repository by the API's collection: models--ORG--NAME.
        let name = format!(
            "{}--{}",
            self.url.kind.api(),
            self.url.repo.replace('/', "--")
        );
        Some(hf_home()?.join("hub").join(name))
    }

    /// The file `path` held by the local cache for this commit: its blob,
    /// when the cache has one of the listing's ETag and size.
    pub fn cached(&self, path: &str) -> Option<std::path::PathBuf> {
        let entry = self.files.iter().find(|e| e.path == path)?;
        let blob = self.cache_dir()?.join("blobs").join(&entry.etag);
        let meta = std::fs::symlink_metadata(&blob).ok()?;
        (meta.is_file() && meta.len() == entry.size).then_some(blob)
    }
}

/// `HF_HOME`, else `$XDG_CACHE_HOME/huggingface`, else
/// `~/.cache/huggingface`, as `huggingface_hub` finds it.
pub fn hf_home() -> Option<std::path::PathBuf> {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(h) = env("HF_HOME") {
        return Some(h.into());
    }
    if let Some(x) = env("XDG_CACHE_HOME") {
        return Some(std::path::PathBuf::from(x).join("huggingface"));
    }
    Some(std::path::PathBuf::from(env("HOME")?).join(".cache/huggingface"))
}

/// The endpoint: `HF_ENDPOINT`, else the public Hub; no trailing `/`.
pub fn endpoint() -> String {
    let e = std::env::var("HF_ENDPOINT").unwrap_or_default();
    let e = e.trim().trim_end_matches('/');
    match e.is_empty() {
        true => DEFAULT_ENDPOINT.to_string(),
        false => e.to_string(),
    }
}

/// The token, as `huggingface_hub` finds it: `HF_TOKEN`, else the file
/// `HF_TOKEN_PATH`, else `$HF_HOME/token`. Never shown.
pub fn token() -> Option<String> {
    if let Ok(t) = std::env::var("HF_TOKEN") {
        let t = t.trim();
        if !t.is_empty() {
            return Some(t.to_string());
        }
    }
    let path = match std::env::var_os("HF_TOKEN_PATH").filter(|p| !p.is_empty()) {
        Some(p) => std::path::PathBuf::from(p),
        None => hf_home()?.join("token"),
    };
    // A token file is a line; anything large is not one.
    let text = std::fs::read(&path).ok().filter(|t| t.len() < 4096)?;
    let t = String::from_utf8(text).ok()?;
    let t = t.trim();
    (!t.is_empty()).then(|| t.to_string())
}

/// Servers (scheme, host and port) whose requests carry the token.
static TOKENS: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

/// The token registered for `server` (`scheme://host[:port]`), if any.
pub(super) fn token_for(server: &str) -> Option<String> {
    let tokens = TOKENS.lock().unwrap_or_else(|e| e.into_inner());
    tokens
        .iter()
        .find(|(s, _)| s == server)
        .map(|(_, t)| t.clone())
}

/// The `Authorization` value for `token`, marked sensitive (kept out of
/// the client's debug output).
pub(super) fn bearer(token: &str) -> std::result::Result<reqwest::header::HeaderValue, String> {
    let mut value = reqwest::header::HeaderValue::from_str(&format!("Bearer {token}"))
        .map_err(|_| "the token is not a valid header value".to_string())?;
    value.set_sensitive(true);
    Ok(value)
}

/// The server part of `url`: `scheme://host[:port]`.
fn server_of(url: &str) -> Result<String> {
    let u = url::Url::parse(url)
        .map_err(|e| Error::Usage(format!("HF_ENDPOINT {url:?} is not a URL ({e})")))?;
    Ok(u[..url::Position::BeforePath].to_string())
}

/// Opens `text`: the revision resolved to its commit, the files listed.
pub fn open(text: &str) -> Result<Snapshot> {
    let url = parse(text)?;
    let endpoint = endpoint();
    let token = token();
    if let Some(t) = &token {
        let server = server_of(&endpoint)?;
        let mut tokens = TOKENS.lock().unwrap_or_else(|e| e.into_inner());
        tokens.retain(|(s, _)| *s != server);
        tokens.push((server, t.clone()));
    }
    let api = Api {
        client: client()?,
        token,
        shown: text.to_string(),
    };
    let base = format!("{endpoint}/api/{}/{}", url.kind.api(), url.repo);
    let rev = crate::store::path_segment(&url.revision);
    let info = api.get_json(&format!("{base}/revision/{rev}"), &url)?.0;
    let sha = info
        .get("sha")
        .and_then(|s| s.as_str())
        .filter(|s| s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or_else(|| api.bad("the revision's answer has no commit (sha)"))?
        .to_string();
    let (files, truncated) = api.list(&format!("{base}/tree/{sha}?recursive=true"), &url)?;
    log::debug!(
        "{text}: revision {:?} is commit {sha}: {} files",
        url.revision,
        files.len()
    );
    Ok(Snapshot {
        url,
        endpoint,
        sha,
        files,
        truncated,
    })
}

/// The client of the API requests, on the remote runtime.
fn client() -> Result<reqwest::Client> {
    reqwest::Client::builder()
        .timeout(TIMEOUT)
        .connect_timeout(super::client::CONNECT_TIMEOUT)
        .user_agent(concat!("ztfs/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| Error::Usage(format!("the Hub's client: {e}")))
}

/// An API answer.
struct Answer {
    status: reqwest::StatusCode,
    /// `X-Error-Code`.
    code: Option<String>,
    link: Option<String>,
    /// `Retry-After`, in seconds.
    retry_after: Option<u64>,
    body: Vec<u8>,
}

/// What a failed try was, for the log.
fn describe(answer: &Result<Answer>) -> String {
    match answer {
        Ok(a) => a.status.to_string(),
        Err(e) => e.to_string(),
    }
}

struct Api {
    client: reqwest::Client,
    token: Option<String>,
    /// The URL as given, for messages.
    shown: String,
}

impl Api {
    fn bad(&self, why: &str) -> Error {
        Error::at(self.shown.clone(), Error::Unsupported(why.to_string()))
    }

    /// GETs `url` and parses its JSON; also the next page's URL. A
    /// connection error, a 5xx or a 429 is tried again, [`TRIES`] times in
    /// all, after a pause that doubles (or the `Retry-After` the server
    /// asks, up to [`MAX_PAUSE`]).
    fn get_json(&self, url: &str, hub: &HubUrl) -> Result<(serde_json::Value, Option<String>)> {
        let mut pause = Duration::from_millis(250);
        let mut tries = 0;
        let answer = loop {
            tries += 1;
            let answer = self.get_once(url);
            let again = match &answer {
                Ok(a) => a.status.is_server_error() || a.status.as_u16() == 429,
                Err(e) => matches!(e.kind(), Error::Io { .. }),
            };
            if !again || tries == TRIES {
                break answer?;
            }
            let asked = answer.as_ref().ok().and_then(|a| a.retry_after);
            let wait = asked.map_or(pause, Duration::from_secs).min(MAX_PAUSE);
            log::debug!(
                "{}: the Hub's API failed ({}), again in {wait:?}",
                self.shown,
                describe(&answer)
            );
            std::thread::sleep(wait);
            pause *= 2;
        };
        if !answer.status.is_success() {
            let (status, code) = (answer.status.as_u16(), answer.code.as_deref());
            return Err(self.refused(status, code, &answer.body, hub));
        }
        let value = serde_json::from_slice(&answer.body)
            .map_err(|e| self.bad(&format!("the Hub's answer is not JSON ({e})")))?;
        Ok((value, answer.link.and_then(|l| next_link(&l))))
    }

    /// One GET: its status, `X-Error-Code`, `Link` and body (bounded).
    /// A Hub not reached, or an answer broken off, is an I/O error
    /// ([`Api::unreached`]).
    fn get_once(&self, url: &str) -> Result<Answer> {
        let rt = super::client::runtime()?;
        let unreached = |e: reqwest::Error| self.unreached(url, &e);
        rt.block_on(async {
            let mut req = self.client.get(url).header("accept", "application/json");
            if let Some(t) = &self.token {
                req = req.header(
                    reqwest::header::AUTHORIZATION,
                    bearer(t).map_err(|why| self.bad(&why))?,
                );
            }
            let mut r = req.send().await.map_err(unreached)?;
            let header = |k: &str| {
                (r.headers().get(k))
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string)
            };
            let (code, link) = (header("x-error-code"), header("link"));
            let retry_after = header("retry-after").and_then(|s| s.trim().parse().ok());
            let status = r.status();
            let limit = if status.is_success() {
                MAX_ANSWER
            } else {
                4096
            };
            let mut body = Vec::new();
            while let Some(chunk) = r.chunk().await.map_err(unreached)? {
                if body.len() + chunk.len() > limit {
                    if status.is_success() {
                        let why = format!("the Hub's answer is longer than {MAX_ANSWER} bytes");
                        return Err(self.bad(&why));
                    }
                    break;
                }
                body.extend_from_slice(&chunk);
            }
            Ok(Answer {
                status,
                code,
                link,
                retry_after,
                body,
            })
        })
    }

    /// A request to the Hub that got no answer, or one broken off: an I/O
    /// error saying what failed in plain words (`transport`), never
    /// reqwest's "error sending request"; the client's text, without the
    /// request's URL, when nothing else says it.
    fn unreached(&self, url: &str, e: &reqwest::Error) -> Error {
        let (kind, words) = super::client::transport(e, TIMEOUT)
            .unwrap_or_else(|| (std::io::ErrorKind::Other, without_url(e)));
        let hub = url::Url::parse(url).map_or_else(
            |_| "the Hub".to_string(),
            |u| match (u.host_str(), u.port()) {
                (Some(h), Some(p)) => format!("the Hub at {}://{h}:{p}", u.scheme()),
                (Some(h), None) => format!("the Hub at {}://{h}", u.scheme()),
                (None, _) => "the Hub".to_string(),
            },
        );
        let io = std::io::Error::new(kind, words);
        Error::at(self.shown.clone(), Error::io(hub, io))
    }

    /// The error for an answer of `status` (the Hub's `X-Error-Code`).
    fn refused(&self, status: u16, code: Option<&str>, body: &[u8], hub: &HubUrl) -> Error {
        let repo = &hub.repo;
        let token = self.token.is_some();
        let why = match (status, code) {
            (_, Some("RevisionNotFound")) => {
                format!("revision {:?} not found in {repo}", hub.revision)
            }
            (_, Some("GatedRepo")) if token => format!(
                "{repo} is gated and this token has no access: ask for it on the repository's page"
            ),
            (_, Some("GatedRepo")) => format!(
                "{repo} is gated: set HF_TOKEN (or log in with `hf auth login`) with a token that has access"
            ),
            (401 | 404, _) if token => format!(
                "repository {repo} not found, or the token (HF_TOKEN or the token file) has no access to it"
            ),
            (401 | 404, _) => format!(
                "repository {repo} not found (a private one needs HF_TOKEN or `hf auth login`)"
            ),
            (403, _) => format!("the Hub refused access to {repo} (403): the token lacks the rights"),
            _ => {
                let said = crate::store::bounded::summary(body, false);
                format!("the Hub answered {status}: {said}")
            }
        };
        Error::at(self.shown.clone(), Error::Usage(why))
    }

    /// Every file under a tree URL, following its pages; sorted by path
    /// bytes; true when it stopped at [`MAX_FILES`].
    fn list(&self, first: &str, hub: &HubUrl) -> Result<(Vec<Entry>, bool)> {
        let mut files = Vec::new();
        let mut next = Some(first.to_string());
        let mut pages = 0;
        while let Some(url) = next.take() {
            pages += 1;
            if pages > MAX_PAGES {
                return Err(self.bad(&format!("the listing has more than {MAX_PAGES} pages")));
            }
            let (value, link) = self.get_json(&url, hub)?;
            let entries = value
                .as_array()
                .ok_or_else(|| self.bad("the listing is not a list"))?;
            for e in entries {
                if e.get("type").and_then(|t| t.as_str()) != Some("file") {
                    continue;
                }
                if files.len() == MAX_FILES {
                    return Ok((sorted(files), true));
                }
                files.push(self.entry(e)?);
            }
            // The next page must be on the same endpoint: a listing does
            // not send the token elsewhere.
            next = link.filter(|l| server_of(l).ok() == server_of(first).ok());
        }
        Ok((sorted(files), false))
    }

    fn entry(&self, e: &serde_json::Value) -> Result<Entry> {
        let path = e.get("path").and_then(|p| p.as_str());
        let size = e.get("size").and_then(|s| s.as_u64());
        let lfs = e
            .get("lfs")
            .and_then(|l| l.get("oid"))
            .and_then(|o| o.as_str());
        let oid = e.get("oid").and_then(|o| o.as_str());
        let (Some(path), Some(size), Some(etag)) = (path, size, lfs.or(oid)) else {
            return Err(self.bad("a file of the listing lacks its path, size or oid"));
        };
        let plain = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit());
        if !plain(etag) {
            return Err(self.bad(&format!("{path:?}: its oid is not hexadecimal")));
        }
        Ok(Entry {
            path: path.to_string(),
            size,
            etag: etag.to_string(),
        })
    }
}

fn sorted(mut files: Vec<Entry>) -> Vec<Entry> {
    files.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    files.dedup_by(|a, b| a.path == b.path);
    files
}

/// A request's failure without its URL (which the message gives).
fn without_url(e: &reqwest::Error) -> String {
    let mut e = e.to_string();
    if let Some(at) = e.find(" for url (") {
        e.truncate(at);
    }
    e
}

/// The `rel="next"` URL of a `Link` header.
fn next_link(link: &str) -> Option<String> {
    link.split(',').find_map(|part| {
        let (url, params) = part.split_once(';')?;
        let url = url.trim().strip_prefix('<')?.strip_suffix('>')?;
        params
            .split(';')
            .any(|p| p.trim().replace(' ', "") == "rel=\"next\"")
            .then(|| url.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hub_urls_as_hffilesystem_spells_them() {
        let u = parse("hf://org/name").unwrap();
        assert_eq!(
            (u.kind, &*u.repo, &*u.revision, &*u.path),
            (Kind::Model, "org/name", "main", "")
        );
        let u = parse("hf://datasets/org/name@v1.0/data/x.zt").unwrap();
        assert_eq!(
            (u.kind, &*u.repo, &*u.revision, &*u.path),
            (Kind::Dataset, "org/name", "v1.0", "data/x.zt")
        );
        let u = parse("hf://org/name@refs%2Fpr%2F1/model.gguf").unwrap();
        assert_eq!((&*u.revision, &*u.path), ("refs/pr/1", "model.gguf"));
        let u = parse("hf://gpt2").unwrap();
        assert_eq!((&*u.repo, &*u.path), ("gpt2", ""));
        let u = parse("hf://gpt2@abc").unwrap();
        assert_eq!((&*u.repo, &*u.revision), ("gpt2", "abc"));
        let u = parse("hf://o/n/a@b/c").unwrap();
        assert_eq!((&*u.revision, &*u.path), ("main", "a@b/c"));
        let u = parse("hf://spaces/o/n/sub/").unwrap();
        assert_eq!((u.kind, &*u.path), (Kind::Space, "sub"));
        for bad in [
            "hf://",
            "hf://org/na me",
            "hf://org/name@",
            "hf://org/name/../x",
            "hf://org/name/a//b",
            "hf://org/name?x=1",
            "hf://../x",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_link_header_gives_the_next_page() {
        let l = r#"<https://h/api/models/a/b/tree/x?cursor=abc>; rel="next""#;
        assert_eq!(
            next_link(l).as_deref(),
            Some("https://h/api/models/a/b/tree/x?cursor=abc")
        );
        assert_eq!(next_link(r#"<https://h/p>; rel="prev""#), None);
        assert_eq!(next_link("garbage"), None);
    }
}
