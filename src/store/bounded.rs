//! The HTTP service under every remote client: reqwest's, with the body
//! of an error answer cut down before the client reads it.
//!
//! `object_store` reads an error answer's whole body into its error's
//! text, which ztfs prints and logs: a server could make it hold hundreds
//! of megabytes, or write terminal escapes to the user's screen. Here such
//! a body is read to at most [`ERROR_BODY`] bytes (the rest is dropped
//! with the connection) and replaced by one line of at most [`SHOWN`]
//! characters, control characters escaped; an HTML page is left out
//! whole. A whole object (200) answered to a range request is an error
//! of its own type ([`WholeAnswer`]), its body never read, so that a
//! message can say that the server does not answer ranges. Other
//! successful and redirect answers pass untouched.

use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpResponse, HttpService,
    ReqwestConnector,
};
use object_store::ClientOptions;

use futures::StreamExt;

/// Most bytes of an error answer's body read.
pub const ERROR_BODY: usize = 4 << 10;
/// Most characters of it shown.
pub const SHOWN: usize = 200;

/// Connects as reqwest does, then bounds error bodies.
#[derive(Debug, Default)]
pub struct Connector;

impl HttpConnector for Connector {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        Ok(HttpClient::new(Bounded(
            ReqwestConnector::default().connect(options)?,
        )))
    }
}

#[derive(Debug)]
struct Bounded(HttpClient);

/// A server's answer of the whole object (200) to a range request: a
/// server that does not answer ranges (some static servers, a proxy),
/// with which ztfs, reading by range, cannot read a model.
#[derive(Debug)]
pub struct WholeAnswer;

impl std::fmt::Display for WholeAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the server answered the whole object (200) to a range request")
    }
}

impl std::error::Error for WholeAnswer {}

#[async_trait::async_trait]
impl HttpService for Bounded {
    async fn call(&self, req: HttpRequest) -> Result<HttpResponse, HttpError> {
        let ranged = req.headers().contains_key("range");
        let r = self.0.execute(req).await?;
        let status = r.status();
        if ranged && status == 200 {
            // Not retried (Unknown): it would answer so again.
            return Err(HttpError::new(HttpErrorKind::Unknown, WholeAnswer));
        }
        if status.is_success() || status.is_redirection() {
            return Ok(r);
        }
        let html = (r.headers().get("content-type"))
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("text/html"));
        let (parts, body) = r.into_parts();
        let mut stream = body.bytes_stream();
        let mut head = Vec::new();
        while head.len() < ERROR_BODY {
            match stream.next().await {
                Some(Ok(b)) => head.extend_from_slice(&b[..b.len().min(ERROR_BODY - head.len())]),
                // A body cut short still says what it said.
                Some(Err(_)) | None => break,
            }
        }
        Ok(HttpResponse::from_parts(parts, summary(&head, html).into()))
    }
}

/// The first line of `body`, at most [`SHOWN`] characters, control
/// characters escaped (`\u{1b}`); an HTML page (by its content type or
/// a first byte `<`) is left out.
pub fn summary(body: &[u8], html: bool) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim_start();
    if html || text.starts_with('<') {
        return "(html page left out)".to_string();
    }
    let line = text.lines().next().unwrap_or("").trim_end();
    let mut out = String::new();
    for (i, c) in line.chars().enumerate() {
        if i == SHOWN {
            out.push('…');
            break;
        }
        match c.is_control() {
            true => out.extend(c.escape_default()),
            false => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One line, escaped and cut; an HTML page never.
    #[test]
    fn a_body_is_shown_as_one_escaped_line_and_html_never() {
        assert_eq!(
            summary(b"\x1b[2Jno\x07 such\r\nsecond", false),
            "\\u{1b}[2Jno\\u{7} such"
        );
        let long = summary(&[b'x'; 1000], false);
        assert_eq!(long.chars().count(), SHOWN + 1);
        assert_eq!(
            summary(b"  <html><body>x</body>", false),
            "(html page left out)"
        );
        assert_eq!(summary(b"text", true), "(html page left out)");
        assert_eq!(summary(b"", false), "");
    }
}
