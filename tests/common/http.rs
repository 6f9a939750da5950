//! A real nginx on 127.0.0.1 serving a folder as static files, for the tests
//! of reading model files over HTTP by range requests, and a raw HTTP/1.1
//! client (std only) to check what it answers.
//!
//! [`Nginx`] owns its process: it runs in the foreground as a child of the
//! test, with its configuration, logs, pid file and temporary folders in a
//! temporary directory of its own, and dropping it stops it. It never uses
//! a fixed port, nor the system's nginx service or configuration. nginx
//! (package `nginx-light`, which `.ci/run` installs) must be there: a test
//! that needs it fails without it, it does not skip.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

/// What `/signed/` URLs must carry (`?sig=`); `/hub/NAME` redirects to
/// `/signed/NAME` with it.
pub const SIGNATURE: &str = "c2lnbmVk";
/// How long nginx may take to answer after it starts.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// How long nginx may take to exit after SIGTERM before it gets SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);
/// Fresh ports tried when nginx cannot bind the one it was given.
const PORT_TRIES: usize = 5;
/// How long the client waits for an answer.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

/// An nginx serving a folder on `127.0.0.1:PORT`, stopped on drop.
pub struct Nginx {
    root: PathBuf,
    port: u16,
    child: Option<Child>,
    dir: tempfile::TempDir,
}

impl Nginx {
    /// Starts nginx serving `root` on a free port of 127.0.0.1; panics when
    /// nginx is missing or does not answer.
    pub fn serve(root: &Path) -> Nginx {
        let mut nginx = Nginx {
            root: root.to_path_buf(),
            port: 0,
            child: None,
            dir: tempfile::tempdir().expect("create a temporary directory"),
        };
        let mut failures = Vec::new();
        for _ in 0..PORT_TRIES {
            nginx.port = free_port();
            match nginx.start() {
                Ok(()) => return nginx,
                Err(e) => failures.push(format!("port {}: {e}", nginx.port)),
            }
        }
        panic!("nginx did not start:\n{}", failures.join("\n"))
    }

    /// The URL of `rel` below the served folder.
    pub fn url(&self, rel: &str) -> String {
        let rel = rel.trim_start_matches('/');
        format!("http://127.0.0.1:{}/{rel}", self.port)
    }

    /// The port nginx listens on, the same after [`Nginx::start_again`].
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops nginx now, as a server that went away; [`Nginx::start_again`]
    /// brings it back.
    pub fn stop(&mut self) {
        if let Some(child) = self.child.take() {
            terminate(child);
        }
    }

    /// Kills nginx with SIGKILL, as a server that dies in the middle of
    /// its answers; [`Nginx::start_again`] brings it back.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // std sends SIGKILL; an nginx that exited already is reaped.
            let _ = child.kill();
            child.wait().expect("wait for nginx");
        }
    }

    /// Starts nginx again on the same port and folder after
    /// [`Nginx::stop`] or [`Nginx::kill`]; panics when it does not answer.
    pub fn start_again(&mut self) {
        self.stop();
        if let Err(e) = self.start() {
            panic!("nginx did not start again on port {}: {e}", self.port);
        }
    }

    /// Starts nginx and waits until it answers; on failure, nginx is
    /// stopped and the error says why.
    fn start(&mut self) -> Result<(), String> {
        // A pid file left by a killed nginx would pass for the new one's.
        let _ = std::fs::remove_file(self.pid_file());
        let child = self.spawn();
        let pid = child.id();
        self.child = Some(child);
        super::wait_until(START_TIMEOUT, || {
            self.exit_status().is_some() || self.answers(pid)
        });
        let exited = self.exit_status();
        if exited.is_none() && self.answers(pid) {
            return Ok(());
        }
        self.stop();
        let log = std::fs::read_to_string(self.error_log()).unwrap_or_default();
        Err(match exited {
            Some(status) => format!("nginx exited ({status}); error log:\n{log}"),
            None => format!("no answer in {START_TIMEOUT:?}; error log:\n{log}"),
        })
    }

    /// Writes the configuration and runs nginx on it in the foreground.
    fn spawn(&self) -> Child {
        let conf = self.dir.path().join("nginx.conf");
        std::fs::write(&conf, self.config()).expect("write nginx.conf");
        Command::new(binary())
            .arg("-p")
            .arg(self.dir.path())
            .arg("-c")
            .arg(&conf)
            // Errors before the configuration is read go here too, not to
            // the system's /var/log/nginx.
            .arg("-e")
            .arg(self.error_log())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot run nginx ({e}): it is missing; .ci/run installs it (Debian package nginx-light)")
            })
    }

    /// How nginx exited, if it did.
    fn exit_status(&mut self) -> Option<ExitStatus> {
        self.child.as_mut()?.try_wait().ok().flatten()
    }

    /// True once nginx `pid` has bound the port (it writes its pid file only
    /// after binding, so a connection is not taken for ours when another
    /// process holds the port) and accepts a connection.
    fn answers(&self, pid: u32) -> bool {
        let ours = std::fs::read_to_string(self.pid_file())
            .is_ok_and(|s| s.trim().parse::<u32>() == Ok(pid));
        ours && TcpStream::connect((Ipv4Addr::LOCALHOST, self.port)).is_ok()
    }

    fn config(&self) -> String {
        let dir = self.dir.path().display();
        let root = self.root.display();
        let port = self.port;
        // One process, no workers: a single signal stops all of it, and as
        // root it keeps root's rights (workers would switch to user nobody,
        // who cannot read tests' 0700 temporary directories).
        format!(
            r#"daemon off;
master_process off;
pid "{dir}/nginx.pid";
error_log "{dir}/error.log" warn;
events {{
    worker_connections 256;
}}
http {{
    access_log off;
    client_body_temp_path "{dir}/client_body";
    proxy_temp_path "{dir}/proxy";
    fastcgi_temp_path "{dir}/fastcgi";
    uwsgi_temp_path "{dir}/uwsgi";
    scgi_temp_path "{dir}/scgi";
    default_type application/octet-stream;
    sendfile on;
    etag on;
    server {{
        listen 127.0.0.1:{port};
        root "{root}";
        # As the Hugging Face Hub answers /resolve/: a redirect to a
        # signed URL elsewhere, which serves only with its signature.
        location /hub/ {{
            rewrite ^/hub/(.*)$ /signed/$1?sig={SIGNATURE} redirect;
        }}
        location /signed/ {{
            alias "{root}/";
            if ($arg_sig != "{SIGNATURE}") {{
                return 403;
            }}
        }}
    }}
}}
"#
        )
    }

    fn pid_file(&self) -> PathBuf {
        self.dir.path().join("nginx.pid")
    }

    fn error_log(&self) -> PathBuf {
        self.dir.path().join("error.log")
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `nginx` from PATH, else where Debian puts it (/usr/sbin is not on an
/// ordinary user's PATH).
fn binary() -> PathBuf {
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join("nginx").is_file()))
        .unwrap_or(false);
    if on_path {
        PathBuf::from("nginx")
    } else {
        PathBuf::from("/usr/sbin/nginx")
    }
}

/// A port that was free a moment ago: nginx may still lose it to another
/// process, which [`Nginx::serve`] survives by trying another.
fn free_port() -> u16 {
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1:0");
    l.local_addr().expect("local address").port()
}

/// SIGTERM (nginx's fast shutdown), then SIGKILL if it is still there.
fn terminate(mut child: Child) {
    if let Ok(Some(_)) = child.try_wait() {
        // Exited and reaped: its pid may be another process's by now.
        return;
    }
    super::kill(child.id() as i32, libc::SIGTERM);
    let exited = super::wait_until(STOP_TIMEOUT, || matches!(child.try_wait(), Ok(Some(_))));
    if !exited {
        let _ = child.kill();
    }
    child.wait().expect("wait for nginx");
}

/// An HTTP response as read from the socket.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// The first header called `name`, in any case.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// `GET url` with extra `headers`; panics when there is no valid answer.
pub fn get(url: &str, headers: &[(&str, &str)]) -> Response {
    try_get(url, headers).unwrap_or_else(|e| panic!("GET {url}: {e}"))
}

/// `GET url` with extra `headers` on a fresh connection, closed after the
/// answer (`Connection: close`), whose body is everything up to EOF.
pub fn try_get(url: &str, headers: &[(&str, &str)]) -> io::Result<Response> {
    let rest = url.strip_prefix("http://").ok_or_else(|| invalid(url))?;
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    let mut stream = TcpStream::connect(host)?;
    stream.set_read_timeout(Some(CLIENT_TIMEOUT))?;
    stream.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    stream.write_all(request.as_bytes())?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    parse_response(&raw)
}

/// A status line, headers and a body of `Content-Length` bytes (nginx sends
/// static files with a length, never chunked).
fn parse_response(raw: &[u8]) -> io::Result<Response> {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| invalid("no end of headers"))?;
    let head = std::str::from_utf8(&raw[..end]).map_err(|_| invalid("headers not UTF-8"))?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| invalid(status_line))?;
    let headers = lines
        .map(|l| {
            let (k, v) = l.split_once(':').ok_or_else(|| invalid(l))?;
            Ok((k.to_string(), v.trim().to_string()))
        })
        .collect::<io::Result<_>>()?;
    let response = Response {
        status,
        headers,
        body: raw[end + 4..].to_vec(),
    };
    if response.header("Transfer-Encoding").is_some() {
        return Err(invalid("a transfer encoding (not read here)"));
    }
    if let Some(len) = response.header("Content-Length") {
        if len.parse() != Ok(response.body.len()) {
            let got = response.body.len();
            return Err(invalid(&format!("Content-Length {len} but {got} bytes")));
        }
    }
    Ok(response)
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("bad HTTP: {what}"))
}
