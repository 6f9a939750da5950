//! A small HTTP/1.1 proxy on 127.0.0.1 in front of a test server, for the
//! tests of remote models under faults: it passes requests on one at a time
//! and, told so while it runs, delays answers, answers with an error
//! status, cuts an answer's body short, or hangs without answering.
//!
//! std only: one thread accepts, one thread serves each client connection
//! (keep-alive, as a range-reading client uses it), and each request goes
//! to the server on a fresh connection, so a server that was killed and
//! started again is reached again. It understands what such a client and
//! nginx exchange: requests without a body, answers whose body has a
//! `Content-Length` (or none: HEAD, 204, 304), else runs to the close.

use std::collections::{HashMap, VecDeque};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

/// Longest request or answer head read.
const MAX_HEAD: u64 = 64 << 10;
/// How often a hung connection looks whether it may go.
const HANG_POLL: Duration = Duration::from_millis(20);

/// What the proxy does to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Pass the request on and its answer back.
    Pass,
    /// Wait this long, then pass on.
    Delay(Duration),
    /// Answer with this status and a short body (with its length) without
    /// asking the server; the connection stays open.
    Status(u16),
    /// Pass on the answer's head and at most `after` bytes of its body,
    /// then close the connection: with a reset (RST) when `reset`, else
    /// in order (FIN), which leaves the client a short body.
    Cut { after: u64, reset: bool },
    /// Answer with this status and a body of [`NOISE_LEN`] bytes of lines
    /// full of terminal escapes (ANSI clear, OSC title), as a hostile
    /// server might; the connection stays open.
    Noisy(u16),
    /// Pass on, with the answer's `ETag` and `Last-Modified` left out: a
    /// server that gives no validator of an object's version.
    Unversioned,
    /// Read the request and never answer it; the connection is closed at
    /// the next [`Proxy::set`] or when the proxy stops.
    Hang,
}

/// A proxy to `127.0.0.1:upstream`, stopped on drop.
pub struct Proxy {
    port: u16,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

struct Shared {
    upstream: u16,
    plan: Mutex<Plan>,
    requests: AtomicUsize,
    /// Bytes of answers' bodies passed on (what the server sent).
    bytes: AtomicU64,
    /// Bumped by every [`Proxy::set`]: hung connections then close.
    epoch: AtomicU64,
    stop: AtomicBool,
    /// The open client connections by number, shut down when the proxy
    /// stops. Each leaves when it ends: its socket closes with its last
    /// descriptor.
    clients: Mutex<HashMap<u64, TcpStream>>,
}

/// Faults for the next requests, in order, then the standing one.
struct Plan {
    next: VecDeque<Fault>,
    then: Fault,
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Proxy {
    /// Starts a proxy to the server on `127.0.0.1:upstream`, passing
    /// everything on.
    pub fn new(upstream: u16) -> Proxy {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local address").port();
        let shared = Arc::new(Shared {
            upstream,
            plan: Mutex::new(Plan {
                next: VecDeque::new(),
                then: Fault::Pass,
            }),
            requests: AtomicUsize::new(0),
            bytes: AtomicU64::new(0),
            epoch: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            clients: Mutex::new(HashMap::new()),
        });
        let s = shared.clone();
        let accept = std::thread::spawn(move || accept(&s, listener));
        Proxy {
            port,
            shared,
            accept: Some(accept),
        }
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of `rel` on the server, through the proxy.
    pub fn url(&self, rel: &str) -> String {
        let rel = rel.trim_start_matches('/');
        format!("http://127.0.0.1:{}/{rel}", self.port)
    }

    /// Does `fault` to every request from now on (after those given to
    /// [`Proxy::next`]); forgets those and closes hung connections.
    pub fn set(&self, fault: Fault) {
        let mut plan = locked(&self.shared.plan);
        plan.next.clear();
        plan.then = fault;
        self.shared.epoch.fetch_add(1, Ordering::SeqCst);
    }

    /// Does `fault` to the next `n` requests, then the standing fault.
    pub fn next(&self, n: usize, fault: Fault) {
        locked(&self.shared.plan).next.extend((0..n).map(|_| fault));
    }

    /// Requests received so far.
    pub fn requests(&self) -> usize {
        self.shared.requests.load(Ordering::SeqCst)
    }

    /// Bytes of answers' bodies passed on whole so far.
    pub fn bytes(&self) -> u64 {
        self.shared.bytes.load(Ordering::SeqCst)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        for (_, c) in locked(&self.shared.clients).drain() {
            let _ = c.shutdown(Shutdown::Both);
        }
        // Wakes the accepting thread, which then sees `stop`.
        let _ = TcpStream::connect((Ipv4Addr::LOCALHOST, self.port));
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

fn accept(shared: &Arc<Shared>, listener: TcpListener) {
    for (id, client) in (0..).zip(listener.incoming()) {
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(client) = client else { continue };
        if let Ok(c) = client.try_clone() {
            locked(&shared.clients).insert(id, c);
        }
        let s = shared.clone();
        std::thread::spawn(move || {
            // A client or server that goes away ends its connection.
            let _ = serve(&s, client);
            locked(&s.clients).remove(&id);
        });
    }
}

impl Shared {
    /// The fault for the request just received.
    fn take(&self) -> Fault {
        self.requests.fetch_add(1, Ordering::SeqCst);
        let mut plan = locked(&self.plan);
        plan.next.pop_front().unwrap_or(plan.then)
    }
}

/// Serves one client connection, request by request, until it closes.
fn serve(shared: &Shared, client: TcpStream) -> io::Result<()> {
    let mut from_client = BufReader::new(client.try_clone()?);
    let mut to_client = client;
    while let Some(request) = read_head(&mut from_client)? {
        let fault = shared.take();
        // A request's body (a PUT's) goes to the server with its head, or
        // is read and left when the proxy answers by itself.
        let sent = request_len(&request);
        if let Fault::Status(_) | Fault::Noisy(_) = fault {
            copy(&mut from_client, &mut io::sink(), sent)?;
        }
        match fault {
            Fault::Pass | Fault::Cut { .. } | Fault::Unversioned => {}
            Fault::Delay(d) => std::thread::sleep(d),
            Fault::Status(code) => {
                to_client.write_all(&status_answer(code))?;
                if closes(&request) {
                    return Ok(());
                }
                continue;
            }
            Fault::Noisy(code) => {
                to_client.write_all(&noisy_answer(code))?;
                if closes(&request) {
                    return Ok(());
                }
                continue;
            }
            Fault::Hang => {
                let epoch = shared.epoch.load(Ordering::SeqCst);
                while shared.epoch.load(Ordering::SeqCst) == epoch
                    && !shared.stop.load(Ordering::SeqCst)
                {
                    std::thread::sleep(HANG_POLL);
                }
                return Ok(());
            }
        }
        let mut server = TcpStream::connect((Ipv4Addr::LOCALHOST, shared.upstream))?;
        server.write_all(&request)?;
        copy(&mut from_client, &mut server, sent)?;
        let mut from_server = BufReader::new(server);
        let head = read_head(&mut from_server)?
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "no answer"))?;
        let len = body_len(&request, &head);
        let head = match fault {
            Fault::Unversioned => without_validators(&head),
            _ => head,
        };
        to_client.write_all(&head)?;
        let Fault::Cut { after, reset } = fault else {
            copy(&mut from_server, &mut to_client, len)?;
            shared.bytes.fetch_add(len, Ordering::SeqCst);
            if closes(&request) || closes(&head) {
                return Ok(());
            }
            continue;
        };
        copy(&mut from_server, &mut to_client, len.min(after))?;
        if reset {
            reset_on_close(&to_client)?;
        }
        return Ok(());
    }
    Ok(())
}

/// An answer head without its `ETag` and `Last-Modified` lines.
fn without_validators(head: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(head);
    let keep = |l: &&str| {
        let l = l.to_ascii_lowercase();
        !l.starts_with("etag:") && !l.starts_with("last-modified:")
    };
    text.split_inclusive('\n')
        .filter(keep)
        .collect::<String>()
        .into_bytes()
}

/// A request or answer head, through its blank line; `None` at EOF before
/// its first byte.
fn read_head(r: &mut impl BufRead) -> io::Result<Option<Vec<u8>>> {
    let mut head = Vec::new();
    loop {
        let start = head.len();
        let n = r.by_ref().take(MAX_HEAD).read_until(b'\n', &mut head)?;
        if n == 0 && head.is_empty() {
            return Ok(None);
        }
        if n == 0 || head.len() as u64 > MAX_HEAD {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "bad head"));
        }
        if head[start..] == *b"\r\n" {
            return Ok(Some(head));
        }
    }
}

/// The length of the body after answer `head` to `request`: none for HEAD,
/// 1xx, 204 and 304, else its `Content-Length`, else up to the close.
fn body_len(request: &[u8], head: &[u8]) -> u64 {
    let text = String::from_utf8_lossy(head);
    let status: u16 = (text.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    if request.starts_with(b"HEAD ") || status < 200 || status == 204 || status == 304 {
        return 0;
    }
    content_length(head).unwrap_or(u64::MAX)
}

/// The length of a request's body: its `Content-Length`, else none (the
/// clients here send no chunked bodies).
fn request_len(head: &[u8]) -> u64 {
    content_length(head).unwrap_or(0)
}

/// A head's `Content-Length`, if it says one.
fn content_length(head: &[u8]) -> Option<u64> {
    String::from_utf8_lossy(head)
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse().ok())
}

/// True when a head says `Connection: close`: the connection ends after
/// this answer.
fn closes(head: &[u8]) -> bool {
    String::from_utf8_lossy(head)
        .lines()
        .filter_map(|l| l.split_once(':'))
        .any(|(k, v)| {
            k.trim().eq_ignore_ascii_case("connection") && v.trim().eq_ignore_ascii_case("close")
        })
}

/// Copies `len` bytes (or up to EOF when `len` is `u64::MAX`).
fn copy(from: &mut impl Read, to: &mut impl Write, len: u64) -> io::Result<()> {
    let n = io::copy(&mut from.take(len), to)?;
    if len != u64::MAX && n != len {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "short body"));
    }
    Ok(())
}

/// An error answer of status `code` with a body and its length.
fn status_answer(code: u16) -> Vec<u8> {
    let reason = match code {
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Error",
    };
    let body = format!("{code} {reason} (test proxy)\n");
    format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Bytes of a [`Fault::Noisy`] answer's body.
pub const NOISE_LEN: usize = 8 << 20;

/// A `code` answer whose body is [`NOISE_LEN`] bytes of escape-laden lines.
fn noisy_answer(code: u16) -> Vec<u8> {
    let line = b"\x1b[2J\x1b]0;pwned\x07ztfs: all good\r\n";
    let body: Vec<u8> = line.iter().copied().cycle().take(NOISE_LEN).collect();
    let mut out = format!(
        "HTTP/1.1 {code} Error\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend(body);
    out
}

/// Makes closing `s` send a reset (RST) rather than an orderly FIN.
fn reset_on_close(s: &TcpStream) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid socket and a `linger` of the size given.
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
