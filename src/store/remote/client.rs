//! What a URL names (a server and an object's key), the process's
//! client for each server and its runtime, and the reading of an answer's
//! body, none of it trusting a length the server claims.

use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use object_store::path::Path as Key;
use object_store::{BackoffConfig, ClientOptions, GetOptions, ObjectStore, RetryConfig};

use super::BLOCK;
use crate::error::{Error, Result};

/// How long one request may take, connecting included.
const TIMEOUT: Duration = Duration::from_secs(20);
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Retries of a failed request (connection refused or reset, 5xx,
/// timeout), with exponential backoff, all within [`RETRY_TIME`].
const RETRIES: usize = 3;
const RETRY_TIME: Duration = Duration::from_secs(30);

/// Where the object lives.
#[derive(Clone)]
pub(super) enum Server {
    /// An HTTP(S) server: scheme, host and port.
    Http(String),
    /// An S3 bucket; endpoint, region and credentials from the `AWS_*`
    /// environment.
    S3(String),
}

/// One GET: the object as the answer describes it, the range it says it
/// holds, and that range's bytes, refused past `limit` (what was asked).
pub(super) async fn get(
    client: &dyn ObjectStore,
    key: &Key,
    opts: GetOptions,
    limit: u64,
) -> object_store::Result<(object_store::ObjectMeta, Range<u64>, Vec<u8>)> {
    let r = client.get_opts(key, opts).await?;
    let (meta, range) = (r.meta.clone(), r.range.clone());
    let len = range.end.saturating_sub(range.start);
    if len > limit {
        return Err(object_store::Error::Generic {
            store: "ztfs",
            source: format!("the server answered {len} bytes for at most {limit} asked").into(),
        });
    }
    let mut bytes = Vec::new();
    pieces(r.into_stream(), len, len, &mut Vec::new, &mut |all| {
        bytes = all
    })
    .await?;
    Ok((meta, range, bytes))
}

/// Reads a response body of exactly `want` bytes, refusing more, and hands
/// it to `put` in pieces of `piece` bytes as they arrive (the last may be
/// shorter; nothing for an empty body), each in a buffer from `buffer`.
/// Buffers grow as bytes arrive, at most a block ahead: `want` may come
/// from the server's own size claim (the open's suffix range), so it never
/// sizes an allocation by itself.
pub(super) async fn pieces(
    mut stream: futures::stream::BoxStream<'static, object_store::Result<bytes::Bytes>>,
    want: u64,
    piece: u64,
    buffer: &mut dyn FnMut() -> Vec<u8>,
    put: &mut dyn FnMut(Vec<u8>),
) -> object_store::Result<()> {
    let mut fresh = |left: u64| {
        let mut out = buffer();
        out.clear();
        out.reserve(left.min(piece).min(BLOCK) as usize);
        out
    };
    // A buffer taken when bytes come for it: none is taken after the last
    // piece (a spare block buffer taken and dropped for nothing).
    let (mut got, mut out) = (0u64, Vec::new());
    while let Some(bytes) = stream.next().await {
        let bytes = bytes?;
        if got + bytes.len() as u64 > want {
            return Err(object_store::Error::Generic {
                store: "ztfs",
                source: format!("the server sent more than the {want} bytes asked for").into(),
            });
        }
        let mut rest = &bytes[..];
        while !rest.is_empty() {
            if out.capacity() == 0 {
                out = fresh(want - got);
            }
            let n = (piece as usize - out.len()).min(rest.len());
            out.extend_from_slice(&rest[..n]);
            (got, rest) = (got + n as u64, &rest[n..]);
            if out.len() as u64 == piece {
                put(std::mem::take(&mut out));
            }
        }
    }
    if got != want {
        return Err(object_store::Error::Generic {
            store: "ztfs",
            source: format!("the server sent {got} of {want} bytes").into(),
        });
    }
    if !out.is_empty() {
        put(out);
    }
    Ok(())
}

/// Largest object read: far beyond any model, and small enough that block
/// arithmetic on its offsets (a grid's shift added) cannot overflow.
pub(super) const MAX_OBJECT: u64 = 1 << 62;

/// Refuses an object whose server claims more than [`MAX_OBJECT`] bytes.
pub(super) fn check_size(url: &str, len: u64) -> Result<()> {
    if len > MAX_OBJECT {
        return Err(Error::at(
            url,
            Error::Unsupported(format!(
                "the server says the object is {len} bytes, more than ztfs reads ({MAX_OBJECT})"
            )),
        ));
    }
    Ok(())
}

/// Whether objects with no version validator may be read (the
/// `--trust-unversioned` flag).
static TRUST_UNVERSIONED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Lets this process read objects whose server gives neither an ETag nor
/// a Last-Modified: a change under a reader then goes unseen.
pub fn trust_unversioned(yes: bool) {
    TRUST_UNVERSIONED.store(yes, std::sync::atomic::Ordering::Relaxed);
}

/// Refuses an object that names no version (no ETag, no Last-Modified),
/// as one replaced under a reader would give bytes of two versions,
/// unless [`trust_unversioned`] was asked.
pub(super) fn check_versioned(url: &str, unversioned: bool) -> Result<()> {
    if unversioned && !TRUST_UNVERSIONED.load(std::sync::atomic::Ordering::Relaxed) {
        return Err(Error::at(
            url,
            Error::Usage(
                "the server gives no ETag and no Last-Modified, so a change of the object under a reader would go unseen; pass --trust-unversioned to read it anyway".into(),
            ),
        ));
    }
    if unversioned {
        log::warn!("{url}: no ETag and no Last-Modified: a change of the object would go unseen");
    }
    Ok(())
}

/// Splits a URL into its server and the object's key. An HTTP(S) URL's
/// query (a presigned URL's signature) goes with the server, which sends
/// it with every request.
pub(super) fn parse(text: &str) -> Result<(Server, Key, Option<String>)> {
    let usage = |why: &str| {
        let file = crate::store::shown(Path::new(text));
        Error::at(file, Error::Usage(why.to_string()))
    };
    let url = url::Url::parse(text).map_err(|e| usage(&format!("not a URL ({e})")))?;
    let host = url.host_str().ok_or_else(|| usage("no host"))?;
    if url.fragment().is_some() {
        return Err(usage("a fragment is not part of an object's name"));
    }
    // The client's own refusal would print the character raw.
    let plain = percent_encoding::percent_decode_str(url.path()).decode_utf8_lossy();
    if let Some(c) = plain.chars().find(char::is_ascii_control) {
        return Err(usage(&format!(
            "the object's name {plain:?} holds the control character {c:?}, which no key takes"
        )));
    }
    let key = Key::from_url_path(url.path()).map_err(|e| usage(&e.to_string()))?;
    if key.as_ref().is_empty() {
        return Err(usage("no object named after the host"));
    }
    let server = match (url.scheme(), url.query()) {
        ("s3", None) => Server::S3(host.to_string()),
        ("s3", Some(_)) => return Err(usage("an s3:// URL takes no query (requests are signed)")),
        (_, None) => Server::Http(url[..url::Position::BeforePath].to_string()),
        // The client keeps the base URL's query on each object's URL.
        (_, Some(q)) => Server::Http(format!("{}/?{q}", &url[..url::Position::BeforePath])),
    };
    Ok((server, key, url.query().map(str::to_string)))
}

/// The process's one client for `server`, made on first use: the files
/// of a checkpoint (hundreds, maybe thousands) share it and its pool of
/// connections, so one costs a few KiB until read, not a client's state.
/// Made again in a forked child (see the module's note).
pub(super) fn shared_client(server: &Server) -> object_store::Result<Arc<dyn ObjectStore>> {
    type Clients = Vec<(String, Arc<dyn ObjectStore>)>;
    static CLIENTS: Mutex<Option<(u32, Clients)>> = Mutex::new(None);
    let name = match server {
        Server::Http(base) => format!("http {base}"),
        Server::S3(bucket) => format!("s3 {bucket}"),
    };
    let pid = std::process::id();
    let mut all = CLIENTS.lock().unwrap_or_else(|e| e.into_inner());
    if all.as_ref().is_none_or(|(p, _)| *p != pid) {
        // The parent's clients hold connections of a runtime whose threads
        // are not in this process: leave them be.
        std::mem::forget(all.replace((pid, Vec::new())));
    }
    let (_, clients) = all.as_mut().expect("set above");
    if let Some((_, c)) = clients.iter().find(|(n, _)| *n == name) {
        return Ok(c.clone());
    }
    let c = connect(server)?;
    clients.push((name, c.clone()));
    Ok(c)
}

/// A client for `server`, with ztfs's timeouts and retries.
fn connect(server: &Server) -> object_store::Result<Arc<dyn ObjectStore>> {
    let mut options = ClientOptions::new()
        .with_timeout(TIMEOUT)
        .with_connect_timeout(CONNECT_TIMEOUT)
        .with_allow_http(true);
    // The Hub's token, on the requests to its endpoint only (reqwest
    // drops it on a redirect to another host: the LFS storage's URL is
    // signed).
    let token = match server {
        Server::Http(base) => super::hub::token_for(base),
        Server::S3(_) => None,
    };
    if let Some(token) = token {
        let value = super::hub::bearer(&token).map_err(|why| object_store::Error::Generic {
            store: "hf",
            source: why.into(),
        })?;
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(reqwest::header::AUTHORIZATION, value);
        options = options.with_default_headers(headers);
    }
    let retry = RetryConfig {
        backoff: BackoffConfig::default(),
        max_retries: RETRIES,
        retry_timeout: RETRY_TIME,
    };
    Ok(match server {
        Server::Http(base) => Arc::new(
            object_store::http::HttpBuilder::new()
                .with_url(base)
                .with_client_options(options)
                .with_retry(retry)
                .with_http_connector(crate::store::bounded::Connector)
                .build()?,
        ),
        Server::S3(bucket) => s3_client(bucket, None, options, retry, false)?,
    })
}

/// A client of S3 `bucket`: credentials, region and endpoint from the
/// environment first, then what it leaves to the AWS files; `endpoint`,
/// when given, in place of theirs.
fn s3_client(
    bucket: &str,
    endpoint: Option<&str>,
    options: ClientOptions,
    retry: RetryConfig,
    unsigned: bool,
) -> object_store::Result<Arc<dyn ObjectStore>> {
    let mut b = object_store::aws::AmazonS3Builder::from_env();
    if unsigned {
        b = b.with_unsigned_payload(true);
    }
    let p = crate::store::aws::profile().map_err(|e| object_store::Error::Generic {
        store: "S3",
        source: e.to_string().into(),
    })?;
    if let (Some(id), Some(secret)) = (p.access_key_id, p.secret_access_key) {
        b = b.with_access_key_id(id).with_secret_access_key(secret);
        if let Some(token) = p.session_token {
            b = b.with_token(token);
        }
    }
    if let Some(region) = p.region {
        b = b.with_region(region);
    }
    if let Some(endpoint) = endpoint.map(str::to_string).or(p.endpoint_url) {
        b = b.with_endpoint(endpoint);
    }
    Ok(Arc::new(
        b.with_bucket_name(bucket)
            .with_client_options(options)
            .with_retry(retry)
            .with_http_connector(crate::store::bounded::Connector)
            .build()?,
    ))
}

/// A client for the shared cache tier's `bucket` (`tier.rs`): credentials
/// and region as for an `s3://` model, at `endpoint` when given; no
/// retries and a short timeout, since a slow tier sends the read to the
/// origin.
pub(super) fn tier_client(
    bucket: &str,
    endpoint: Option<&str>,
) -> object_store::Result<Arc<dyn ObjectStore>> {
    let options = ClientOptions::new()
        .with_timeout(super::tier::DEADLINE * 4)
        .with_connect_timeout(super::tier::DEADLINE)
        .with_allow_http(true);
    let retry = RetryConfig {
        backoff: BackoffConfig::default(),
        max_retries: 0,
        retry_timeout: super::tier::DEADLINE,
    };
    // Unsigned bodies: a block object carries its own tag, checked on
    // every read, so a signed body's SHA-256 (made by the node, checked
    // by the store) would only add a pass over each block on both sides.
    s3_client(bucket, endpoint, options, retry, true)
}

/// The process's runtime for requests (see the module's note).
pub(super) fn runtime() -> Result<Arc<tokio::runtime::Runtime>> {
    static RUNTIME: Mutex<Option<(u32, Arc<tokio::runtime::Runtime>)>> = Mutex::new(None);
    let pid = std::process::id();
    let mut rt = RUNTIME.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((p, r)) = &*rt {
        if *p == pid {
            return Ok(r.clone());
        }
    }
    // Made before a fork: its threads are not in this process.
    std::mem::forget(rt.take());
    let r = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("ztfs-remote")
        .enable_all()
        .build()
        .map_err(|e| Error::io("the runtime for remote requests", e))?;
    let r = Arc::new(r);
    *rt = Some((pid, r.clone()));
    Ok(r)
}

/// A failed request, as the error a reader gets: in plain words
/// ([`plain`]), never the client's own text (its retries, its timeouts'
/// settings), which quotes the URL; a query in it (`secret`) would be cut
/// out, but no text of the client's is shown.
pub(super) fn fail(url: &str, secret: Option<&str>, e: object_store::Error) -> Error {
    if let object_store::Error::Precondition { .. } = e {
        return changed(url);
    }
    let kind = match &e {
        object_store::Error::NotFound { .. } => std::io::ErrorKind::NotFound,
        object_store::Error::PermissionDenied { .. }
        | object_store::Error::Unauthenticated { .. } => std::io::ErrorKind::PermissionDenied,
        _ => transport(&e, TIMEOUT).map_or(std::io::ErrorKind::Other, |(kind, _)| kind),
    };
    let secret = secret.filter(|q| !q.is_empty());
    let hide = |t: String| match secret {
        Some(q) => t.replace(q, "…"),
        None => t,
    };
    log::debug!("{url}: {}", hide(e.to_string()));
    let text = hide(plain(url, &e));
    Error::io(url.to_string(), std::io::Error::new(kind, text))
}

/// What went wrong with a request for `url` (as shown), in plain words:
/// "no such object (404)", "access denied (403): ...", a failure to
/// reach the server ([`transport`]), a server that does not answer
/// ranges, "the server answered 503 Service Unavailable"; the client's
/// text (first line, without its retry bookkeeping) only when none of
/// these says it.
pub(super) fn plain(url: &str, e: &object_store::Error) -> String {
    let credentials = "check the credentials or the signature";
    match e {
        object_store::Error::NotFound { .. } => {
            return format!("no such object (404){}", folder_hint(url, ""))
        }
        object_store::Error::PermissionDenied { .. } => {
            return format!("access denied (403){}", folder_hint(url, credentials))
        }
        object_store::Error::Unauthenticated { .. } => {
            return format!("access denied (401){}", folder_hint(url, credentials))
        }
        _ => {}
    }
    if let Some((_, words)) = transport(e, TIMEOUT) {
        return words;
    }
    let mut texts = Vec::new();
    let mut at: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = at {
        if err.is::<crate::store::bounded::WholeAnswer>() {
            return format!(
                "the server at {} answered the whole file (200) to a range request, and ztfs reads a model by ranges: download the file and give its local path, or serve it with a server that answers ranges (206), such as nginx or S3",
                server_name(url)
            );
        }
        texts.push(err.to_string());
        at = err.source();
    }
    let all = texts.join(": ");
    if let Some(at) = all.find("status code: ") {
        let status = &all[at + "status code: ".len()..];
        let status = status.split(':').next().unwrap_or(status).trim();
        return format!("the server answered {status}");
    }
    // The client's first words, without its retry bookkeeping or the URL.
    let first = texts.last().cloned().unwrap_or_default();
    let first = first.lines().next().unwrap_or_default();
    crate::store::bounded::summary(first.as_bytes(), false)
}

/// The server `url` names, for a message: `host[:port]`, or for `s3://`
/// its bucket.
fn server_name(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) if u.scheme() == "s3" => format!("of bucket {:?}", u.host_str().unwrap_or("")),
        Ok(u) => match (u.host_str(), u.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (h, None) => h.unwrap_or("").to_string(),
            (None, Some(_)) => String::new(),
        },
        Err(_) => url.to_string(),
    }
}

/// What to add to a 404 or a 403 for `url` after `why` (the usual
/// advice, or none): a URL that names a folder (its path ends with `/`)
/// is told that a URL must name a model file or an index; one whose name
/// has no extension, that it must if it names a folder.
fn folder_hint(url: &str, why: &str) -> String {
    let path = url::Url::parse(url).map_or_else(|_| String::new(), |u| u.path().to_string());
    let path = percent_encoding::percent_decode_str(&path).decode_utf8_lossy();
    let last = path.rsplit('/').next().unwrap_or_default();
    let must = "a URL must name a model file (model.safetensors, model.zt, model.gguf, ...) or a checkpoint's index (model.safetensors.index.json)";
    match (path.ends_with('/'), last.contains('.'), why.is_empty()) {
        (true, _, _) => format!(": {path:?} is a folder, and {must}"),
        (false, false, true) => format!("; if {last:?} is a folder, {must}"),
        (false, false, false) => format!(": {why}; if {last:?} is a folder, {must}"),
        (false, true, true) => String::new(),
        (false, true, false) => format!(": {why}"),
    }
}

/// A request that never got an answer, in plain words and as an I/O
/// error's kind: the server's name does not resolve (DNS), the
/// connection was refused or reset, the TLS handshake failed, no answer
/// came within `timeout` (or no connection within [`CONNECT_TIMEOUT`]).
/// Found by walking `e`'s causes, the same for the object client's errors
/// and the Hub's (both are reqwest's, over hyper); `None` for an answer
/// the server gave.
pub(super) fn transport(
    e: &(dyn std::error::Error + 'static),
    timeout: Duration,
) -> Option<(std::io::ErrorKind, String)> {
    use object_store::client::{HttpError, HttpErrorKind};
    use std::io::ErrorKind;
    let (mut connecting, mut timed_out) = (false, false);
    let mut at = Some(e);
    while let Some(err) = at {
        if let Some(r) = err.downcast_ref::<reqwest::Error>() {
            connecting |= r.is_connect();
            timed_out |= r.is_timeout();
        }
        if let Some(h) = err.downcast_ref::<HttpError>() {
            connecting |= h.kind() == HttpErrorKind::Connect;
            timed_out |= h.kind() == HttpErrorKind::Timeout;
        }
        if let Some(tls) = err.downcast_ref::<rustls::Error>() {
            let words = format!("the secure connection (TLS) failed: {tls}");
            return Some((ErrorKind::Other, words));
        }
        let io = err.downcast_ref::<std::io::Error>();
        match io.map(std::io::Error::kind) {
            Some(ErrorKind::ConnectionRefused) => {
                return Some((ErrorKind::ConnectionRefused, "connection refused".into()))
            }
            Some(ErrorKind::ConnectionReset) => {
                return Some((
                    ErrorKind::ConnectionReset,
                    "the connection was reset".into(),
                ))
            }
            Some(ErrorKind::TimedOut) => timed_out = true,
            _ => {}
        }
        // hyper's resolver says so only in its text.
        let t = err.to_string();
        if t.contains("dns error") || t.contains("failed to lookup address") {
            let words = "the server's name does not resolve (DNS)".to_string();
            return Some((ErrorKind::Other, words));
        }
        // An I/O error's source() skips the error it wraps (a TLS
        // library's, under hyper's): go through it.
        at = match io {
            Some(io) => io
                .get_ref()
                .map(|inner| inner as &(dyn std::error::Error + 'static)),
            None => err.source(),
        };
    }
    let words = match (connecting, timed_out) {
        (true, true) => format!(
            "cannot connect to the server within {} s (timed out)",
            CONNECT_TIMEOUT.as_secs()
        ),
        (false, true) => format!("no answer within {} s (timed out)", timeout.as_secs()),
        (true, false) => "cannot connect to the server".to_string(),
        (false, false) => return None,
    };
    let kind = match timed_out {
        true => ErrorKind::TimedOut,
        false => ErrorKind::NotConnected,
    };
    Some((kind, words))
}

pub(super) fn changed(url: &str) -> Error {
    Error::io(
        url.to_string(),
        std::io::Error::other(
            "the object changed since it was opened (its ETag differs); remount to read the new one",
        ),
    )
}

pub(super) fn bad_answer(url: &str, got: &Range<u64>, asked: Range<u64>) -> Error {
    Error::io(
        url.to_string(),
        std::io::Error::other(format!(
            "the server answered bytes [{}, {}) for [{}, {})",
            got.start, got.end, asked.start, asked.end
        )),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs [`pieces`] over a body sent in `chunks`: the pieces handed
    /// out, and how many buffers were taken.
    fn split(
        chunks: &[&[u8]],
        want: u64,
        piece: u64,
    ) -> (object_store::Result<()>, Vec<Vec<u8>>, usize) {
        let body: Vec<object_store::Result<bytes::Bytes>> = chunks
            .iter()
            .map(|c| Ok(bytes::Bytes::copy_from_slice(c)))
            .collect();
        let (mut out, mut taken) = (Vec::new(), 0);
        let done = futures::executor::block_on(pieces(
            Box::pin(futures::stream::iter(body)),
            want,
            piece,
            &mut || {
                taken += 1;
                Vec::new()
            },
            &mut |p| out.push(p),
        ));
        (done, out, taken)
    }

    /// Pieces cut across chunks, one buffer a piece (none taken after the
    /// last); a body longer or shorter than asked is an error.
    #[test]
    fn a_body_is_cut_into_pieces_one_buffer_each() {
        let body: Vec<u8> = (0..16).collect();
        let (done, out, taken) = split(&[&body[..3], &body[3..8], &body[8..]], 16, 4);
        assert!(done.is_ok());
        assert_eq!(out, body.chunks(4).map(<[u8]>::to_vec).collect::<Vec<_>>());
        assert_eq!(taken, 4);
        let (done, out, taken) = split(&[&body[..10]], 10, 4);
        assert!(done.is_ok());
        assert_eq!((out.len(), out[2].clone(), taken), (3, vec![8, 9], 3));
        assert!(split(&[&body], 15, 4).0.is_err(), "more than asked");
        assert!(split(&[&body[..9]], 16, 4).0.is_err(), "less than asked");
        let (done, out, taken) = split(&[], 0, 4);
        assert!(
            done.is_ok() && out.is_empty() && taken == 0,
            "an empty body"
        );
    }
}
