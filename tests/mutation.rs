//! Seeded mutation test: no mutant of a valid file makes the reader panic or
//! allocate out of proportion to its size.
//!
//! Inputs are every `.zt` under `corpus/valid` and `corpus/samples`, plus a
//! few files built here (dense types, aliasing, attributes, zstd-seekable,
//! unknown layout, a shard pair, a data shard). Each round mutates one input
//! and runs [`ztfs::format::read_container`]; a mutant that is accepted is
//! then decoded and verified part by part, from the bytes and through
//! [`ztfs::model::Model`]. More than half of the rounds mutate the manifest
//! and then fix the footer's length and hash, since otherwise `ManifestHash`
//! rejects almost every mutant before the parser sees it.
//!
//! Oracles: no panic; the largest single allocation and the peak growth of
//! live bytes stay within [`alloc_bound`]; a manifest `cbor::parse` accepts
//! re-encodes to the same bytes; a container `read_container` accepts opens
//! as a `Model`; every validated local blob lies in the file; a part that
//! decodes yields exactly its decoded size.
//!
//! Environment: `ZTFS_MUTATION_SEED` (decimal or `0x` hex) replaces the
//! seed, `ZTFS_MUTATION_ROUNDS` the rounds per input, and
//! `ZTFS_MUTATION_REPLAY=FILE` checks one saved mutant instead. A failing
//! mutant is written under the temp dir and its path printed. Run with
//! `--nocapture` to see what the mutants met, rule by rule.
//!
//! The helpers live in `tests/mutation/`: the counting allocator and panic
//! guard, an owned CBOR tree and encoder, the file builder, the inputs, and
//! the mutators.

#[path = "mutation/build.rs"]
mod build;
#[path = "mutation/cbor.rs"]
mod cbor_tree;
#[path = "mutation/guard.rs"]
mod guard;
#[path = "mutation/inputs.rs"]
mod inputs;
#[path = "mutation/mutate.rs"]
mod mutate;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ztfs::decode::{check_interpretable, ContentCheck, Encoding};
use ztfs::digest::{self, Algo, Hasher};
use ztfs::format::cbor;
use ztfs::format::{read_container, Container, Manifest, Object, Part};
use ztfs::model::Model;

use build::built_inputs;
use cbor_tree::{map, t, Cv};
use guard::{guarded, install_panic_hook, measured, stage};
use inputs::{companions_of, corpus_inputs, Input};
use mutate::{mutate, Rng};

const DEFAULT_SEED: u64 = 0x5EED_2A54_0000_0001;
/// Mutants per run when `ZTFS_MUTATION_ROUNDS` is unset, spread evenly over
/// the inputs (at least [`MIN_ROUNDS`] each): some 15 s in a debug build on
/// two cores.
const DEFAULT_BUDGET: u64 = 150_000;
const MIN_ROUNDS: u64 = 500;
const MAGIC: [u8; 8] = [0x89, b'Z', b'T', b'2', 0x0d, 0x0a, 0x1a, 0x0a];
/// A corpus with an `expected.tsv` must give at least this many inputs.
const MIN_CORPUS_FILES: usize = 20;
/// One decoded zstd frame may take this much, in bytes (`MAX_FRAME_LEN`).
const FRAME_ALLOWANCE: usize = 16 << 20;

/// What a mutant of `len` bytes may allocate, in bytes.
fn alloc_bound(len: usize) -> usize {
    64 * len + FRAME_ALLOWANCE
}

// ---------------------------------------------------------------------------
// Checking one mutant.

/// A rejection's label for the statistics: the rule, or the error kind.
fn label(e: &ztfs::error::Error) -> String {
    match e.rule() {
        Some(rule) => rule.name().to_string(),
        None => format!("{:?}", e)
            .split([' ', '(', '{'])
            .next()
            .unwrap_or("?")
            .to_string(),
    }
}

/// Everything the public API offers on a validated manifest, without files.
fn use_manifest(m: &Manifest) {
    stage("report::summary");
    let _ = ztfs::report::summary(m);
    stage("report::refusals");
    let _ = ztfs::report::refusals(m);
    stage("digest::content_digest");
    let _ = digest::content_digest(m, Algo::Xxh3);
    let _ = digest::content_digest(m, Algo::Sha256);
}

/// Decodes a local part from the file bytes, checking content rules and
/// digest as `verify` does.
fn decode_from_bytes(file: &[u8], o: &Object, p: &Part) -> Result<(), String> {
    let (off, len) = (p.blob.offset, p.blob.length);
    let stored = off
        .checked_add(len)
        .and_then(|end| file.get(off as usize..end as usize))
        .ok_or_else(|| {
            format!(
                "validated blob [{off}, +{len}) of {:?} is outside the file",
                o.name
            )
        })?;
    let _ = check_interpretable(o, p);
    let Ok(enc) = Encoding::of(p, stored) else {
        return Ok(());
    };
    let stored_digest = p.digest.as_ref().map(ToString::to_string);
    let mut hasher = stored_digest
        .as_deref()
        .and_then(|d| Algo::of(d).ok())
        .map(Hasher::new);
    let mut rules = ContentCheck::new(o, p);
    let mut n = 0u64;
    let streamed = enc.stream(stored, &mut |c| {
        n += c.len() as u64;
        if let Some(h) = hasher.as_mut() {
            h.update(c);
        }
        rules.update(c)
    });
    if streamed.is_ok() {
        let _ = rules.finish();
        if n != p.decoded_size() {
            return Err(format!(
                "{:?}/{:?} streamed {n} bytes, decoded size is {}",
                o.name,
                p.name,
                p.decoded_size()
            ));
        }
        if let (Some(h), Some(d)) = (hasher, &stored_digest) {
            let _ = digest::check(d, &h.finish(), "part");
        }
    }
    Ok(())
}

/// `read_container`, then everything that works from bytes alone. Returns
/// the verdict, or an oracle failure.
fn from_bytes(file: &[u8]) -> Result<(String, bool), String> {
    check_round_trip(file)?;
    stage("read_container");
    match read_container(file) {
        Err(e) => Ok((label(&e), false)),
        Ok(Container::DataShard) => Ok(("ok (data shard)".into(), true)),
        Ok(Container::Model(m)) => {
            use_manifest(&m);
            stage("decode from bytes");
            for o in &m.objects {
                for p in o.parts.iter().filter(|p| p.blob.shard.is_none()) {
                    decode_from_bytes(file, o, p)?;
                }
            }
            Ok(("ok".into(), true))
        }
    }
}

/// The accepted file through `Model`: open, verify, decode and read every part.
fn through_model(path: &Path) -> Result<(), String> {
    stage("Model::open");
    let model = Model::open(path)
        .map_err(|e| format!("read_container accepts the file, Model::open rejects it: {e}"))?;
    stage("report::write_manifest_json");
    let _ = ztfs::report::write_manifest_json(&model, &mut String::new());
    stage("report::ls_long");
    let _ = ztfs::report::ls_long(&model);
    stage("report::ls_json");
    let _ = ztfs::report::ls_json(&model, false);
    let Some(m) = model.manifest() else {
        return Ok(());
    };
    for o in &m.objects {
        stage("read::verify_object");
        let _ = ztfs::read::verify_object(&model, o);
        for p in &o.parts {
            stage("read::verify");
            let _ = ztfs::read::verify(&model, o, p, &mut |_| Ok(()));
            stage("read::decoded");
            let mut n = 0u64;
            let decoded = ztfs::read::decoded(&model, o, p, &mut |c| {
                n += c.len() as u64;
                Ok(())
            });
            if decoded.is_ok() && n != p.decoded_size() {
                return Err(format!(
                    "read::decoded gave {n} bytes of {:?}/{:?}, decoded size is {}",
                    o.name,
                    p.name,
                    p.decoded_size()
                ));
            }
            stage("read::stored");
            let _ = ztfs::read::stored(&model, p, &mut |_| Ok(()));
        }
    }
    Ok(())
}

/// Runs `f` guarded and measured; a panic, an oracle failure or an
/// allocation past the bound becomes `Err`.
fn checked<T>(
    what: &str,
    mutant: &[u8],
    extra_len: usize,
    f: impl FnOnce() -> Result<T, String>,
) -> Result<(T, usize), String> {
    let (r, usage) = measured(mutant, || guarded(f));
    let bound = alloc_bound(mutant.len() + extra_len);
    let r = match r {
        Err(panic) => Err(format!("panic {panic}")),
        Ok(r) => r.map_err(|e| format!("{what}: {e}")),
    }?;
    if usage.largest > bound || usage.peak_growth > bound {
        return Err(format!(
            "{what}: largest allocation {} bytes, peak growth {} bytes, bound {bound} for {} input bytes",
            usage.largest,
            usage.peak_growth,
            mutant.len() + extra_len
        ));
    }
    Ok((r, usage.peak_growth))
}

/// Checks one mutant; `dir` holds its companions as `m-<name>.zt`. Returns
/// the verdict and the peak growth of live bytes.
fn check_mutant(mutant: &[u8], dir: &Path, companions: usize) -> Result<(String, usize), String> {
    let ((verdict, accepted), peak) = checked("read_container", mutant, 0, || from_bytes(mutant))?;
    if !accepted {
        return Ok((verdict, peak));
    }
    let path = dir.join("m.zt");
    std::fs::write(&path, mutant).map_err(|e| format!("writing {}: {e}", path.display()))?;
    let ((), model_peak) = checked("Model", mutant, companions, || through_model(&path))?;
    Ok((verdict, peak.max(model_peak)))
}

/// Oracle: a manifest the strict decoder accepts is the deterministic
/// encoding of its value, so encoding the value gives the same bytes.
fn check_round_trip(file: &[u8]) -> Result<(), String> {
    let Some((off, len)) = inputs::manifest_range(file) else {
        return Ok(());
    };
    let bytes = &file[off..off + len];
    stage("cbor::parse");
    let Ok(value) = cbor::parse(bytes) else {
        return Ok(());
    };
    stage("cbor::encode");
    let mut again = Vec::new();
    cbor::encode(&value, &mut again);
    if again != bytes {
        let at = again.iter().zip(bytes).position(|(a, b)| a != b);
        return Err(format!(
            "cbor::parse accepts a manifest of {len} bytes that cbor::encode writes back as {} bytes, first difference at {at:?}",
            again.len()
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// The run.

struct Failure {
    input: String,
    round: u64,
    what: String,
    saved: PathBuf,
}

/// Verdict counts per strategy, and the largest allocation growth seen.
#[derive(Default)]
struct Tally {
    verdicts: BTreeMap<(&'static str, String), u64>,
    /// The peak growth nearest its bound: the fraction of the bound, the
    /// peak in bytes, and the mutant's length.
    worst: (f64, usize, usize),
}

impl Tally {
    fn merge(&mut self, other: Tally) {
        for (k, n) in other.verdicts {
            *self.verdicts.entry(k).or_default() += n;
        }
        if other.worst.0 > self.worst.0 {
            self.worst = other.worst;
        }
    }
}

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    let v = v.trim();
    let parsed = match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => v.parse(),
    };
    Some(parsed.unwrap_or_else(|_| panic!("{name}={v:?} is not a number")))
}

/// The generator for one round: a function of seed, input and round alone,
/// so a failure reproduces whatever ran before it.
fn round_rng(seed: u64, input: usize, round: u64) -> Rng {
    let mut r = Rng(seed ^ (input as u64).wrapping_mul(0xA24B_AED4_963E_E407));
    r.0 ^= round.wrapping_mul(0x9FB2_1C65_1E98_DF25);
    r.next();
    r
}

/// Saves a failing mutant and its companions so `ZTFS_MUTATION_REPLAY` can
/// run it again; returns its path.
fn save(seed: u64, name: &str, mutant: &[u8], companions: &[(String, Vec<u8>)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ztfs-mutation-{seed:016x}"));
    std::fs::create_dir_all(&dir).unwrap();
    for (suffix, bytes) in companions {
        std::fs::write(dir.join(format!("{name}-{suffix}.zt")), bytes).unwrap();
    }
    let path = dir.join(format!("{name}.zt"));
    std::fs::write(&path, mutant).unwrap();
    path
}

/// Leaves exactly `companions` in `dir`, as the shards of `m.zt`; returns
/// their total length.
fn write_companions(dir: &Path, companions: &[(String, Vec<u8>)]) -> usize {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        std::fs::remove_file(e.path()).unwrap();
    }
    for (suffix, bytes) in companions {
        std::fs::write(dir.join(format!("m-{suffix}.zt")), bytes).unwrap();
    }
    companions.iter().map(|(_, b)| b.len()).sum()
}

/// Mutates the inputs `mine` (indices into `all`) for `rounds` rounds each.
fn worker(seed: u64, rounds: u64, all: &[Input], mine: &[usize]) -> (Tally, Vec<Failure>) {
    let dir = tempfile::tempdir().unwrap();
    let (mut tally, mut failures) = (Tally::default(), Vec::new());
    for &i in mine {
        let input = &all[i];
        let extra = write_companions(dir.path(), &input.companions);
        let mut fail = |round, mutant: &[u8], what| {
            let name = format!("{}-r{round}", input.name);
            let saved = save(seed, &name, mutant, &input.companions);
            let input = input.name.clone();
            failures.push(Failure {
                input,
                round,
                what,
                saved,
            });
        };
        if let Err(what) = check_mutant(&input.bytes, dir.path(), extra) {
            fail(u64::MAX, &input.bytes, what);
        }
        for round in 0..rounds {
            let mut rng = round_rng(seed, i, round);
            let other = &all[rng.below(all.len())];
            let (mutant, strategy) = mutate(input, other, &mut rng);
            let verdict = match check_mutant(&mutant, dir.path(), extra) {
                Ok((verdict, peak)) => {
                    let ratio = peak as f64 / alloc_bound(mutant.len() + extra) as f64;
                    if ratio > tally.worst.0 {
                        tally.worst = (ratio, peak, mutant.len());
                    }
                    verdict
                }
                Err(what) => {
                    fail(round, &mutant, what);
                    "FAILED".into()
                }
            };
            *tally.verdicts.entry((strategy, verdict)).or_default() += 1;
        }
    }
    (tally, failures)
}

fn print_tally(t: &Tally, seed: u64, rounds: u64, inputs: usize, secs: f64) {
    let total: u64 = t.verdicts.values().sum();
    eprintln!(
        "mutation: seed {seed:#018x}, {rounds} rounds x {inputs} inputs = {total} mutants in {secs:.1} s"
    );
    let mut by_strategy: BTreeMap<&str, Vec<(&str, u64)>> = BTreeMap::new();
    for ((s, v), n) in &t.verdicts {
        by_strategy.entry(s).or_default().push((v, *n));
    }
    for (s, mut vs) in by_strategy {
        vs.sort_by_key(|v| std::cmp::Reverse(v.1));
        let line: Vec<String> = vs.iter().map(|(v, n)| format!("{v} {n}")).collect();
        eprintln!("  {s:<15} {}", line.join(", "));
    }
    let (ratio, peak, len) = t.worst;
    eprintln!(
        "mutation: peak growth nearest its bound: {peak} bytes for a {len}-byte mutant, {:.2}% of the bound",
        100.0 * ratio
    );
}

/// Prints one example of each kind of failure (same stage, message and
/// library frames, numbers aside), the smallest mutant, with a count.
fn report_failures(failures: &[Failure]) {
    let mut kinds: BTreeMap<String, (usize, &Failure)> = BTreeMap::new();
    let size = |f: &Failure| std::fs::metadata(&f.saved).map_or(0, |m| m.len());
    for f in failures {
        let key: String = f.what.chars().filter(|c| !c.is_ascii_digit()).collect();
        let e = kinds.entry(key).or_insert((0, f));
        e.0 += 1;
        if size(f) < size(e.1) {
            e.1 = f;
        }
    }
    for (n, f) in kinds.values() {
        let round = match f.round {
            u64::MAX => "unmutated".to_string(),
            r => format!("round {r}"),
        };
        eprintln!(
            "FAILURE x{n}, e.g. {} {round}: {}\n  saved: {}",
            f.input,
            f.what,
            f.saved.display()
        );
    }
}

/// The run reached the parser and validator, not just the footer and hash.
fn check_coverage(t: &Tally) {
    let count = |f: &dyn Fn(&str, &str) -> bool| -> u64 {
        t.verdicts
            .iter()
            .filter(|((s, v), _)| f(s, v))
            .map(|(_, n)| n)
            .sum()
    };
    let total = count(&|_, _| true);
    let manifest = count(&|s, _| s.starts_with("manifest"));
    assert!(
        2 * manifest >= total,
        "only {manifest} of {total} mutants were manifest-aware"
    );
    let hash = count(&|s, v| s.starts_with("manifest") && v == "ManifestHash");
    assert_eq!(hash, 0, "a manifest-aware mutant failed the manifest hash");
    let verdicts: BTreeSet<&str> = t.verdicts.keys().map(|(_, v)| v.as_str()).collect();
    assert!(verdicts.len() >= 12, "mutants reached only {verdicts:?}");
    assert!(
        verdicts.contains("ok"),
        "no mutant was accepted, so none was decoded"
    );
}

fn all_inputs() -> (Vec<Input>, usize) {
    let (mut inputs, corpus_exists) = corpus_inputs();
    let from_corpus = inputs.len();
    if corpus_exists {
        assert!(
            from_corpus >= MIN_CORPUS_FILES,
            "corpus/expected.tsv exists, but corpus/valid and corpus/samples hold {from_corpus} .zt files, fewer than {MIN_CORPUS_FILES}"
        );
    }
    for (name, bytes, companions) in built_inputs() {
        let r = read_container(&bytes);
        assert!(r.is_ok(), "built input {name:?} is invalid: {:?}", r.err());
        inputs.push(Input::new(format!("built_{name}"), bytes, companions));
    }
    (inputs, from_corpus)
}

#[test]
fn mutants_never_panic_or_overallocate() {
    install_panic_hook();
    if let Ok(path) = std::env::var("ZTFS_MUTATION_REPLAY") {
        return replay(Path::new(&path));
    }
    let seed = env_u64("ZTFS_MUTATION_SEED").unwrap_or(DEFAULT_SEED);
    let (inputs, from_corpus) = all_inputs();
    let rounds = env_u64("ZTFS_MUTATION_ROUNDS")
        .unwrap_or((DEFAULT_BUDGET / inputs.len() as u64).max(MIN_ROUNDS));
    let started = std::time::Instant::now();
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    let results = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for w in 0..workers {
            let mine: Vec<usize> = (w..inputs.len()).step_by(workers).collect();
            let (inputs, results) = (&inputs, &results);
            s.spawn(move || {
                let r = worker(seed, rounds, inputs, &mine);
                results.lock().unwrap().push(r);
            });
        }
    });
    let (mut tally, mut failures) = (Tally::default(), Vec::new());
    for (t, f) in results.into_inner().unwrap() {
        tally.merge(t);
        failures.extend(f);
    }
    let secs = started.elapsed().as_secs_f64();
    print_tally(&tally, seed, rounds, inputs.len(), secs);
    let built = inputs.len() - from_corpus;
    eprintln!("mutation: {from_corpus} corpus inputs, {built} built");
    report_failures(&failures);
    assert!(
        failures.is_empty(),
        "{} mutants failed (seed {seed:#018x}); replay one with ZTFS_MUTATION_REPLAY=<saved path>",
        failures.len()
    );
    check_coverage(&tally);
}

fn replay(path: &Path) {
    let mutant = std::fs::read(path).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let extra = write_companions(dir.path(), &companions_of(path));
    match check_mutant(&mutant, dir.path(), extra) {
        Ok((verdict, peak)) => eprintln!(
            "replay {}: {verdict}, peak growth {peak} bytes",
            path.display()
        ),
        Err(what) => panic!("replay {}: {what}", path.display()),
    }
}

/// Found by this test: a part's `decoded_length` is any u64 when the part
/// has an encoding, so totals over parts must not overflow. Two shapes of
/// it: an unknown layout (no size equation), and dense u8 parts whose shape
/// makes the equation hold at u64::MAX.
#[test]
fn huge_decoded_lengths_do_not_overflow_totals() {
    let big = |blob: (u64, u64)| {
        build::part(
            "u8",
            blob,
            vec![
                ("encoding", t("zt.zstd-seekable/1")),
                ("decoded_length", Cv::U(u64::MAX)),
            ],
        )
    };
    let unknown = build::assemble(&[vec![7]], |r| {
        let parts = vec![("a", big(r[0])), ("b", build::part("u8", r[0], vec![]))];
        let o = build::object(&[1], "acme.x/1", parts, vec![]);
        Some(map(vec![("objects", map(vec![("x", o)]))]))
    });
    let dense = build::assemble(&[vec![7]], |r| {
        let huge = build::object(&[u64::MAX], "dense", vec![("data", big(r[0]))], vec![]);
        let one = build::object(
            &[1],
            "dense",
            vec![("data", build::part("u8", r[0], vec![]))],
            vec![],
        );
        Some(map(vec![(
            "objects",
            map(vec![("huge", huge), ("one", one)]),
        )]))
    });
    let dir = tempfile::tempdir().unwrap();
    for (name, file) in [("unknown", unknown), ("dense", dense)] {
        let r = read_container(&file);
        assert!(
            r.is_ok(),
            "reproducer {name:?} should be valid: {:?}",
            r.err()
        );
        let path = dir.path().join(format!("{name}.zt"));
        std::fs::write(&path, &file).unwrap();
        let model = Model::open(&path).unwrap();
        let _ = ztfs::report::summary(model.manifest().unwrap());
        let _ = ztfs::report::ls_long(&model);
        let _ = ztfs::report::ls_json(&model, false);
    }
}

/// Found by reading `cli::check` after the test above: shard sizes are any
/// u64 of at least 48, so their total must not overflow either. `ztfs check`
/// sums them even without `--verify`.
#[test]
fn huge_shard_sizes_do_not_overflow_check() {
    use clap::Parser;
    let huge = || map(vec![("size", Cv::U(1 << 63)), ("digest", t("xxh3:00"))]);
    let file = build::assemble(&[], |_| {
        let shards = map(vec![("a", huge()), ("b", huge())]);
        Some(map(vec![("objects", Cv::M(vec![])), ("shards", shards)]))
    });
    let r = read_container(&file);
    assert!(r.is_ok(), "the reproducer should be valid: {:?}", r.err());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shards.zt");
    std::fs::write(&path, &file).unwrap();
    let cli = ztfs::cli::Cli::try_parse_from(["ztfs".as_ref(), "check".as_ref(), path.as_os_str()]);
    // Missing shards may be an error; overflowing the total must not panic.
    let _ = ztfs::cli::run(cli.unwrap());
}

/// A sparse object whose parts are tiny zstd streams of zeros that decode
/// to 16 MiB each (about 1 KiB stored). Verifying it must hold each part
/// once, at its decoded size (no doubling slack, no second copy), plus the
/// 16 bytes per element of the COO duplicate-cell check: a bound set by the
/// decoded sizes, which the seek table declares and the decoder enforces.
fn sparse_zstd_bomb(frames_per_part: usize) -> (Vec<u8>, u64) {
    let zeros = vec![0u8; 16 << 20];
    let mut z = Vec::new();
    for _ in 0..frames_per_part {
        z.extend_from_slice(&zeros);
    }
    let n = z.len() as u64;
    let stored = build::seekable(&z, 16 << 20, true);
    let file = build::assemble(&[stored.clone(), stored], |r| {
        let enc = |blob, dtype| {
            let extra = vec![
                ("encoding", t("zt.zstd-seekable/1")),
                ("decoded_length", Cv::U(n)),
            ];
            build::part(dtype, blob, extra)
        };
        let parts = vec![("values", enc(r[0], "f32")), ("coords", enc(r[1], "u32"))];
        let o = build::object(&[1 << 40], "zt.sparse_coo/1", parts, vec![]);
        Some(map(vec![("objects", map(vec![("s", o)]))]))
    });
    (file, n)
}

#[test]
fn verifying_compressed_sparse_parts_allocates_by_decoded_size() {
    install_panic_hook();
    let (file, n) = sparse_zstd_bomb(1);
    assert!(read_container(&file).is_ok(), "the case should be valid");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bomb.zt");
    std::fs::write(&path, &file).unwrap();
    let model = Model::open(&path).unwrap();
    let o = &model.manifest().unwrap().objects[0];
    let (r, usage) = measured(&file, || ztfs::read::verify_object(&model, o));
    // All coordinates are 0, so the data rules fail on a duplicate cell, after
    // the whole check has been paid for: what is measured is that cost.
    let e = r.expect_err("element 0 and 1 name the same cell");
    assert_eq!(e.rule(), Some(ztfs::error::Rule::LayoutData), "{e}");
    let elements = n as usize / 4;
    let bound = 2 * n as usize + 16 * elements + (1 << 20);
    assert!(
        usage.peak_growth <= bound,
        "peak {} > bound {bound}",
        usage.peak_growth
    );
}

/// Past the in-memory cap (1 GiB per part: 65 frames of 16 MiB here) the
/// data rules are refused before anything is decoded.
#[test]
fn a_part_too_large_to_hold_is_refused_before_decoding() {
    install_panic_hook();
    let (file, _) = sparse_zstd_bomb(65);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bomb.zt");
    std::fs::write(&path, &file).unwrap();
    let model = Model::open(&path).unwrap();
    let o = &model.manifest().unwrap().objects[0];
    let (r, usage) = measured(&file, || ztfs::read::verify_object(&model, o));
    let e = r.expect_err("refused");
    assert!(matches!(e, ztfs::error::Error::Unsupported(_)), "{e}");
    assert!(
        usage.peak_growth < 1 << 20,
        "allocated {} before refusing",
        usage.peak_growth
    );
}
