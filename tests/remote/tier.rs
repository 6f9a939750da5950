//! The shared cache tier (`--shared-cache`) on a real SeaweedFS, with
//! the origin an nginx behind the counting proxy: what one node fetched
//! and wrote there, a second reads with no block request to the origin; a
//! block corrupted or planted there is caught and fetched again; the tier
//! down, slow or denying leaves every read right.

use std::fs;
use std::path::Path;
use std::time::Duration;

use crate::common::http::Nginx;
use crate::common::proxy::{Fault, Proxy};
use crate::common::s3::Seaweed;

/// A safetensors file of one f32 tensor `t` of `n` values (i as f32).
fn model(n: usize) -> (Vec<u8>, Vec<u8>) {
    let data: Vec<u8> = (0..n).flat_map(|i| (i as f32).to_le_bytes()).collect();
    let mut header = format!(
        r#"{{"t":{{"dtype":"F32","shape":[{n}],"data_offsets":[0,{}]}}}}"#,
        data.len()
    )
    .into_bytes();
    while header.len() % 8 != 0 {
        header.push(b' ');
    }
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend(&header);
    file.extend(&data);
    (file, data)
}

/// `ztfs cat MODEL t` with the tier at `tier` and `env` added.
fn cat(url: &str, tier: &str, env: &[(String, String)]) -> std::process::Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_ztfs"));
    cmd.args(["cat", "--shared-cache", tier, url, "t"]);
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    cmd.env("ZTFS_LOG", "warn");
    cmd.output().unwrap()
}

/// An origin of one model of `n` values behind a counting proxy: the
/// server, the proxy, the model's URL and its tensor's bytes.
fn origin(dir: &Path, n: usize) -> (Nginx, Proxy, String, Vec<u8>) {
    let (file, data) = model(n);
    fs::write(dir.join("m.safetensors"), file).unwrap();
    let server = Nginx::serve(dir);
    let proxy = Proxy::new(server.port());
    let url = proxy.url("m.safetensors");
    (server, proxy, url, data)
}

/// A proxy in front of the tier that holds each answer `delay`, and the
/// endpoint to give the nodes for it.
fn slowed(s3: &Seaweed, delay: Duration) -> (Proxy, String) {
    let port: u16 = s3.endpoint().rsplit(':').next().unwrap().parse().unwrap();
    let slow = Proxy::new(port);
    slow.set(Fault::Delay(delay));
    let endpoint = format!("http://127.0.0.1:{}", slow.port());
    (slow, endpoint)
}

/// A second node's read of the model (by `cat`, with `env`): its bytes
/// checked, and the requests the origin got for it.
fn node_2(
    proxy: &Proxy,
    (url, tier): (&str, &str),
    env: &[(String, String)],
    want: &[u8],
) -> usize {
    let before = proxy.requests();
    read_right(&cat(url, tier, env), want, "node 2");
    proxy.requests() - before
}

fn read_right(out: &std::process::Output, want: &[u8], what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{what}: {err}");
    assert!(out.stdout == want, "{what}: the bytes differ");
}

#[test]
fn a_second_node_reads_the_blocks_the_first_wrote() {
    let s3 = Seaweed::shared();
    let d = tempfile::tempdir().unwrap();
    let (_server, proxy, url, want) = origin(d.path(), 3 << 20); // 12 MiB
    let tier = s3.url("tier-second");
    let env = s3.env();
    read_right(&cat(&url, &tier, &env), &want, "node 1");
    let first = proxy.requests();
    assert!(
        first >= 3,
        "node 1 fetched its blocks from the origin: {first}"
    );
    let blocks = s3.list("tier-second");
    assert!(blocks.len() >= 11, "blocks in the tier: {blocks:?}");
    let second = node_2(&proxy, (&url, &tier), &env, &want);
    // Its open (the object's size and version, and its last MiB) only.
    assert!(second <= 1, "node 2 asked the origin {second} times");
}

/// A mount whose reader is done before its writes to the tier (each
/// answer of the tier held 300 ms, so blocks are still queued when it is
/// unmounted): the daemon writes them, and releases its claims, before it
/// exits; a second node then reads every block from the tier.
#[test]
fn a_mount_writes_its_last_blocks_before_it_exits() {
    let s3 = Seaweed::shared();
    let d = tempfile::tempdir().unwrap();
    let (_server, proxy, url, want) = origin(d.path(), 3 << 20); // 12 MiB
    let tier = s3.url("tier-unmount");
    let (_slow, endpoint) = slowed(&s3, Duration::from_millis(300));
    let s3_env = s3.env();
    let mut env: Vec<(&str, String)> = s3_env
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect();
    env.push(("ZTFS_SHARED_CACHE_ENDPOINT", endpoint));
    let mount = crate::common::Mount::with_env(Path::new(&url), &["--shared-cache", &tier], &env);
    let got = fs::read(mount.join("t/data")).unwrap();
    assert!(got == want, "t/data differs");
    let pid = mount.daemon();
    crate::common::cleanup(mount.path());
    let gone = crate::common::wait_until(Duration::from_secs(60), || !crate::common::is_alive(pid));
    assert!(gone, "the daemon is still there");
    let second = node_2(&proxy, (&url, &tier), &s3.env(), &want);
    // Its open (the object's size and version, and its last MiB) only.
    assert!(
        second <= 1,
        "node 2 asked the origin {second} times; node 1's log:\n{}",
        mount.log()
    );
}

#[test]
fn a_corrupted_or_planted_block_is_fetched_again() {
    let s3 = Seaweed::shared();
    let d = tempfile::tempdir().unwrap();
    let (_server, proxy, url, want) = origin(d.path(), 3 << 20);
    let tier = s3.url("tier-bad");
    let env = s3.env();
    read_right(&cat(&url, &tier, &env), &want, "node 1");
    let blocks = s3.list("tier-bad");
    // One block's bytes altered: caught by its tag.
    let mut bad = s3.get(&blocks[0]);
    let last = bad.len() - 1;
    bad[last] ^= 0xff;
    s3.put(&blocks[0], &bad);
    let before = proxy.requests();
    let out = cat(&url, &tier, &env);
    read_right(&out, &want, "a corrupted block");
    assert!(
        proxy.requests() - before >= 2,
        "the corrupted block refetched"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("failed its check"), "{err}");

    // A keyed fleet: the blocks the unkeyed node wrote fail their tag
    // (anyone could have written them), and are fetched again.
    let mut keyed = env.clone();
    keyed.push(("ZTFS_SHARED_CACHE_SECRET".into(), "fleet secret".into()));
    let tier = s3.url("tier-keyed");
    read_right(&cat(&url, &tier, &keyed), &want, "keyed node 1");
    let blocks = s3.list("tier-keyed");
    // A block of zeros sealed with a SHA-256 of its own, as a writer
    // without the fleet's secret can: its header (magic, name, length)
    // kept, its tag recomputed as an unkeyed tier computes it.
    let planted = s3.get(&blocks[1]);
    let mut forged = planted[..48].to_vec();
    let zeros = vec![0u8; planted.len() - 80];
    let mut h = <sha2::Sha256 as sha2::Digest>::new();
    for part in [&forged[..8], &forged[8..40], &forged[40..48], &zeros[..]] {
        sha2::Digest::update(&mut h, part);
    }
    forged.extend(sha2::Digest::finalize(h));
    forged.extend(&zeros);
    s3.put(&blocks[1], &forged);
    let before = proxy.requests();
    read_right(&cat(&url, &tier, &keyed), &want, "a planted block");
    assert!(
        proxy.requests() - before >= 2,
        "the planted block refetched"
    );
}

#[test]
fn a_tier_down_slow_or_denying_leaves_reads_right() {
    let s3 = Seaweed::shared();
    let d = tempfile::tempdir().unwrap();
    let (_server, _proxy, url, want) = origin(d.path(), 1 << 20);
    let tier = s3.url("tier-faults");
    // Down: nothing listens at its endpoint.
    let mut down = s3.env();
    down.push((
        "ZTFS_SHARED_CACHE_ENDPOINT".into(),
        "http://127.0.0.1:9".into(),
    ));
    let out = cat(&url, &tier, &down);
    read_right(&out, &want, "tier down");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.matches("shared cache is unavailable").count(),
        1,
        "said once: {err}"
    );
    // Denying: a wrong secret key (403).
    let mut denied = s3.env();
    for (k, v) in &mut denied {
        if k == "AWS_SECRET_ACCESS_KEY" {
            *v = "wrong".into();
        }
    }
    denied.push(("ZTFS_SHARED_CACHE_ENDPOINT".into(), s3.endpoint()));
    read_right(&cat(&url, &tier, &denied), &want, "tier denying");
    // Slow: every answer of the tier held past the deadline.
    let (_slow, endpoint) = slowed(&s3, Duration::from_secs(5));
    let mut slow = s3.env();
    slow.push(("ZTFS_SHARED_CACHE_ENDPOINT".into(), endpoint));
    let start = std::time::Instant::now();
    read_right(&cat(&url, &tier, &slow), &want, "tier slow");
    // Not a timing of the read: a bound on a hang (each ask of the tier
    // waits its deadline once, then the tier is left aside).
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "{:?}",
        start.elapsed()
    );
}

/// A mount reading a model four times its block cache whole, every block
/// written behind to the tier: the daemon's peak stays within 1.5x
/// `--cache-mib` plus 64 MiB, the write-behind queue included.
#[test]
fn writing_behind_stays_within_the_memory_bound() {
    let s3 = Seaweed::shared();
    let d = tempfile::tempdir().unwrap();
    let (_server, _proxy, url, want) = origin(d.path(), 32 << 20); // 128 MiB
    let mut flags = vec!["--cache-mib", "32", "--shared-cache"];
    let tier = s3.url("tier-memory");
    flags.push(&tier);
    let env = s3.env();
    let env: Vec<(&str, String)> = env.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    let mount = crate::common::Mount::with_env(Path::new(&url), &flags, &env);
    let got = fs::read(mount.join("t/data")).unwrap();
    assert!(got == want, "t/data differs");
    let peak = crate::common::status_kib(mount.daemon(), "VmHWM");
    let bound = (32 * 3 / 2 + 64) << 10;
    println!("the daemon peaked at {peak} KiB, bound {bound} KiB");
    assert!(
        peak < bound,
        "the daemon peaked at {peak} KiB (bound {bound} KiB)"
    );
    // `ztfs status` shows the tier and what it did (said every 5 s).
    let said = format!("shared cache {tier}: ");
    let mut status = String::new();
    for _ in 0..100 {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ztfs"))
            .arg("status")
            .output()
            .unwrap();
        status = String::from_utf8_lossy(&out.stdout).into_owned();
        if status
            .lines()
            .any(|l| l.contains(&said) && !l.contains(" 0 written"))
        {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("no shared cache with blocks written in: {status}");
}

/// Nodes started together: a node that misses a block another node
/// claimed waits for it in the tier instead of fetching it too, so the
/// origin sends the model about once, not once a node. Counted in bytes
/// at the origin; the bound is loose (a claim can be missed in a race,
/// and each node opens the object itself), the count without claims
/// about 3x.
#[test]
fn nodes_started_together_fetch_each_block_about_once() {
    let s3 = Seaweed::shared();
    let d = tempfile::tempdir().unwrap();
    let (_server, proxy, url, want) = origin(d.path(), 4 << 20); // 16 MiB
    let tier = s3.url("tier-together");
    let env = s3.env();
    let nodes: Vec<_> = (0..3)
        .map(|_| {
            let (url, tier, env) = (url.clone(), tier.clone(), env.clone());
            std::thread::spawn(move || cat(&url, &tier, &env))
        })
        .collect();
    for n in nodes {
        read_right(&n.join().unwrap(), &want, "a node");
    }
    let model = want.len() as u64;
    let sent = proxy.bytes();
    println!(
        "3 nodes together: the origin sent {sent} bytes, {:.2}x the model",
        sent as f64 / model as f64
    );
    assert!(
        sent < 2 * model,
        "the origin sent {sent} bytes of a {model}-byte model to 3 nodes"
    );
}
