//! `ztfs view`: a local web page of a model, served by ztfs itself (axum;
//! every byte of the pages made here, nothing fetched from the network).
//!
//! Safe by default: bound to 127.0.0.1 unless told otherwise, a random
//! token in the URL that every request must carry (403 without it), every
//! string from the model escaped (`html.rs`) and no script on any page
//! (the Content-Security-Policy forbids one), no path from a request ever
//! opened (three routes, a tensor named by a query value looked up among
//! the model's), a request line of at most [`MAX_URI`] bytes. The work of
//! a request runs off the server's threads: a tensor's statistics are one
//! job shared by the requests that want them and stopped when none is left
//! (`jobs.rs`); a heatmap is read once a request and stopped when its
//! request goes.

mod heatmap;
mod html;
mod jobs;
mod pages;

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{header, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::error::{Error, Result};
use crate::library::Model;
use crate::stats::Kind;

/// Longest request URI taken.
pub const MAX_URI: usize = 4096;
/// Values shown under "First values".
const FIRST_VALUES: usize = 16;
/// How long requests in flight may take to finish after Ctrl-C.
const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(2);
/// Most bytes of `config.json` shown.
const MAX_CONFIG: usize = 64 << 10;

/// How the page is served.
pub struct Options {
    pub bind: IpAddr,
    /// 0: any free port.
    pub port: u16,
    /// Open the page in a browser (`xdg-open`).
    pub open: bool,
    /// A tensor of at most this many bytes is read once for its
    /// statistics (see [`crate::stats::Job::keep`]).
    pub keep: u64,
}

struct App {
    model: Model,
    source: String,
    token: String,
    rows: Vec<pages::Row>,
    stats: jobs::StatsJobs,
    keep: u64,
}

type Shared = Arc<App>;

/// Serves `model` (shown as `source`) until Ctrl-C or SIGTERM, printing
/// the page's URL first.
pub fn serve(model: Model, source: String, opts: Options) -> Result<()> {
    crate::sys::install_bus_guard();
    let token = token()?;
    let rows = rows(&model);
    let app = Arc::new(App {
        model,
        source,
        token,
        rows,
        stats: jobs::StatsJobs::default(),
        keep: opts.keep,
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::io("the web server's runtime", e))?;
    let served = rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind((opts.bind, opts.port))
            .await
            .map_err(|e| Error::io(format!("{}:{}", opts.bind, opts.port), e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::io("the listening socket", e))?;
        let host = match addr.ip() {
            IpAddr::V6(ip) => format!("[{ip}]"),
            IpAddr::V4(ip) => ip.to_string(),
        };
        let url = format!("http://{host}:{}/?token={}", addr.port(), app.token);
        // Said on stdout, which may be closed: no panic for that.
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "ztfs view: serving {} at {url}", app.source);
        let _ = writeln!(out, "ztfs view: Ctrl-C stops it");
        let _ = out.flush();
        drop(out);
        if opts.open {
            let _ = std::process::Command::new("xdg-open")
                .arg(&url)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn();
        }
        let router = Router::new()
            .route("/", get(index))
            .route("/tensor", get(tensor))
            .route("/heatmap.png", get(heatmap_png))
            .fallback(not_found)
            .with_state(app);
        // On Ctrl-C, requests in flight get a moment to finish, then the
        // server ends whatever runs (a statistics job of a large tensor
        // stops with its last request).
        let (tx, rx) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            stopped().await;
            let _ = tx.send(true);
        });
        let mut ended = rx.clone();
        let server = axum::serve(listener, router).with_graceful_shutdown(async move {
            let _ = ended.wait_for(|s| *s).await;
        });
        let mut ended = rx;
        tokio::select! {
            r = server => r.map_err(|e| Error::io("the web server", e)),
            _ = async move {
                let _ = ended.wait_for(|s| *s).await;
                tokio::time::sleep(STOP_GRACE).await;
            } => Ok(()),
        }
    });
    // Blocking work still running (a large tensor's statistics) is not
    // waited for: it stops with the process.
    rt.shutdown_background();
    served
}

/// Ends on SIGINT or SIGTERM.
async fn stopped() {
    use tokio::signal::unix::{signal, SignalKind};
    let Ok(mut term) = signal(SignalKind::terminate()) else {
        let _ = tokio::signal::ctrl_c().await;
        return;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

/// A token of 128 random bits, as hex.
fn token() -> Result<String> {
    let mut b = [0u8; 16];
    use std::io::Read;
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(|e| Error::io("/dev/urandom", e))?;
    Ok(crate::digest::hex(&b))
}

/// The model's tensors as the page lists them.
fn rows(m: &Model) -> Vec<pages::Row> {
    m.tensors()
        .iter()
        .map(|t| {
            let (layout, encodings) = m.layout(t);
            pages::Row {
                name: t.name().to_string(),
                dtype: t.dtype().unwrap_or("?").to_string(),
                shape: t.shape().to_vec(),
                bytes: t.len(),
                layout,
                encoding: encodings.join(","),
            }
        })
        .collect()
}

/// A refusal: `code` with a line of text.
fn refuse(code: StatusCode, why: &str) -> Response {
    (
        code,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("{why}\n"),
    )
        .into_response()
}

/// A request refused: its status and a line of why.
struct Refusal(StatusCode, &'static str);

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        refuse(self.0, self.1)
    }
}

/// The request's token and URI checked.
fn admit(app: &App, uri: &Uri, q: &HashMap<String, String>) -> std::result::Result<(), Refusal> {
    if uri.to_string().len() > MAX_URI {
        return Err(Refusal(StatusCode::URI_TOO_LONG, "request too long"));
    }
    let given = q.get("token").map_or(&[][..], |t| t.as_bytes());
    let want = app.token.as_bytes();
    // Compared in time independent of where they differ.
    let same =
        given.len() == want.len() && given.iter().zip(want).fold(0u8, |d, (a, b)| d | (a ^ b)) == 0;
    match same {
        true => Ok(()),
        false => Err(Refusal(
            StatusCode::FORBIDDEN,
            "a token is needed: use the URL ztfs view printed",
        )),
    }
}

/// An HTML page, with headers that allow no script, no frame, no referrer.
fn html(body: String) -> Response {
    let mut r = ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response();
    secure(&mut r);
    r
}

fn secure(r: &mut Response) {
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; frame-ancestors 'none'",
        ),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

async fn not_found() -> Response {
    refuse(StatusCode::NOT_FOUND, "no such page")
}

async fn index(
    State(app): State<Shared>,
    uri: Uri,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if let Err(r) = admit(&app, &uri, &q) {
        return r.into_response();
    }
    let work = app.clone();
    let page = tokio::task::spawn_blocking(move || {
        let metadata: Vec<(String, String)> = (work.model.metadata().ok().flatten())
            .map(|m| m.into_iter().collect())
            .unwrap_or_default();
        let config = (work.model.files().iter().any(|f| f == "config.json"))
            .then(|| work.model.read_file("config.json").ok())
            .flatten()
            .map(|b| String::from_utf8_lossy(&b[..b.len().min(MAX_CONFIG)]).into_owned());
        let format = work.model.format_name();
        pages::index(
            &work.source,
            format,
            &work.rows,
            &metadata,
            config.as_deref(),
            &work.token,
        )
    })
    .await;
    match page {
        Ok(p) => html(p),
        Err(_) => refuse(StatusCode::INTERNAL_SERVER_ERROR, "the page failed"),
    }
}

/// The tensor a request admitted ([`admit`]) names, with how its bytes
/// are numbers.
fn named(
    app: &App,
    uri: &Uri,
    q: &HashMap<String, String>,
) -> std::result::Result<(usize, Option<Kind>), Refusal> {
    admit(app, uri, q)?;
    let name = q
        .get("name")
        .ok_or(Refusal(StatusCode::BAD_REQUEST, "which tensor? (name=)"))?;
    let i = (app.rows.iter())
        .position(|r| &r.name == name)
        .ok_or(Refusal(StatusCode::NOT_FOUND, "no such tensor"))?;
    let kind = app.model.tensors()[i].dtype().ok().and_then(Kind::of);
    Ok((i, kind))
}

async fn tensor(
    State(app): State<Shared>,
    uri: Uri,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let (i, kind) = match named(&app, &uri, &q) {
        Ok(t) => t,
        Err(r) => return r.into_response(),
    };
    let stats = match kind {
        Some(kind) => app.stats.get(app.clone(), i, kind).await,
        None => Err("its values are not numbers ztfs reads".to_string()),
    };
    let work = app.clone();
    let first = tokio::task::spawn_blocking(move || first_values(&work.model, i, kind))
        .await
        .unwrap_or_default();
    let row = &app.rows[i];
    let t = pages::Tensor {
        row,
        stats: stats.as_ref().map_err(Clone::clone),
        first,
        heatmap: kind.and(heatmap::size(&row.shape)),
    };
    html(pages::tensor(&t, &app.token))
}

/// The first values of tensor `i`, as numbers.
fn first_values(m: &Model, i: usize, kind: Option<Kind>) -> Vec<f64> {
    let (t, Some(kind)) = (&m.tensors()[i], kind) else {
        return Vec::new();
    };
    let n = (FIRST_VALUES * kind.width()) as u64;
    let mut buf = vec![0u8; t.len().min(n) as usize];
    let read = crate::sys::map_read(|| m.read_exact(t, 0, &mut buf));
    let mut out = Vec::new();
    if read.is_ok() {
        crate::stats::values::blocks(kind, &buf, |v| out.extend_from_slice(v));
    }
    out
}

async fn heatmap_png(
    State(app): State<Shared>,
    uri: Uri,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let (i, kind) = match named(&app, &uri, &q) {
        Ok(t) => t,
        Err(r) => return r.into_response(),
    };
    let Some(kind) = kind.filter(|_| heatmap::size(&app.rows[i].shape).is_some()) else {
        return refuse(
            StatusCode::NOT_FOUND,
            "no heatmap: not a 2-D tensor of numbers",
        );
    };
    // Stopped when this request goes (its future dropped).
    let stop = Arc::new(AtomicBool::new(false));
    let _guard = jobs::StopOnDrop(stop.clone());
    let work = app.clone();
    let png = tokio::task::spawn_blocking(move || {
        let t = &work.model.tensors()[i];
        crate::sys::map_read(|| heatmap::png(&work.model, t, kind, &stop))
    })
    .await;
    match png {
        Ok(Ok(png)) => {
            let mut r = ([(header::CONTENT_TYPE, "image/png")], png).into_response();
            secure(&mut r);
            r
        }
        Ok(Err(e)) => refuse(StatusCode::INTERNAL_SERVER_ERROR, &format!("ztfs: {e}")),
        Err(_) => refuse(StatusCode::INTERNAL_SERVER_ERROR, "the heatmap failed"),
    }
}
