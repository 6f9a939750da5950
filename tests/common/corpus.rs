//! The corpus and its table (`corpus/expected.tsv`), and model files made
//! for a test.

use super::*;

/// `corpus/` at the crate root.
pub fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus")
}

/// One row of `corpus/expected.tsv`.
#[derive(Debug, Clone)]
pub struct Row {
    pub name: String,
    pub dir: String,
    pub open: String,
    pub verify: String,
}

impl Row {
    /// The file's path.
    pub fn path(&self) -> PathBuf {
        // As the generator names files: `.zt` unless the name has an extension.
        let last = self.name.rsplit('/').next().unwrap_or(&self.name);
        let file = if last.contains('.') {
            self.name.clone()
        } else {
            format!("{}.zt", self.name)
        };
        corpus().join(&self.dir).join(file)
    }
}

/// The corpus rows that open but fail `--verify` on a part's digest (at
/// least one, or the tests built on them would test nothing).
pub fn rows_failing_on_a_digest() -> Vec<Row> {
    let rows: Vec<Row> = (rows().into_iter())
        .filter(|r| r.verify == "reject:Digest")
        .collect();
    assert!(
        !rows.is_empty(),
        "no corpus file fails --verify on a digest"
    );
    rows
}

/// Every row of `corpus/expected.tsv`.
pub fn rows() -> Vec<Row> {
    let path = corpus().join("expected.tsv");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (generate the corpus first)", path.display()));
    text.lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 4, "expected.tsv line {l:?}");
            Row {
                name: f[0].into(),
                dir: f[1].into(),
                open: f[2].into(),
                verify: f[3].into(),
            }
        })
        .collect()
}

/// Every zTensor file that opens: valid and sample rows of the table,
/// plus any `.zt` file below `corpus/samples` (so a sample missing from
/// the table is still mounted). Hurray files are [`hurray_files`].
pub fn mountable_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = rows()
        .iter()
        .filter(|r| r.open == "valid" && (r.dir == "valid" || r.dir == "samples"))
        .map(Row::path)
        .filter(|p| p.extension() == Some(OsStr::new("zt")))
        .collect();
    files.extend(files_below(&corpus().join("samples")));
    files.sort();
    files.dedup();
    files
}

/// Every Hurray file of the corpus that opens (`.hrry` rows whose `open`
/// is `valid`), and every `.hrry` sample.
pub fn hurray_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = rows()
        .iter()
        .filter(|r| r.open == "valid")
        .map(Row::path)
        .filter(|p| p.extension() == Some(OsStr::new("hrry")))
        .collect();
    files.sort();
    files.dedup();
    files
}

/// Every `.zt` file below `dir`, recursively.
pub fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = e.expect("read corpus directory").path();
        if path.is_dir() {
            out.extend(files_below(&path));
        } else if path.extension() == Some(OsStr::new("zt")) {
            out.push(path);
        }
    }
    out
}

/// A sample by its path below `corpus/samples`, e.g. `tiny-llama.zt`.
pub fn sample(name: &str) -> PathBuf {
    corpus().join("samples").join(name)
}

/// A file of `corpus/valid` by its stem.
pub fn valid(name: &str) -> PathBuf {
    corpus().join("valid").join(format!("{name}.zt"))
}

/// A copy of `file` as `model.zt` in a new temporary directory.
pub fn temp_copy(file: &Path) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let copy = dir.path().join("model.zt");
    std::fs::copy(file, &copy).expect("copy the model");
    (dir, copy)
}

/// A safetensors file of `(name, dtype, shape, bytes)` and an optional
/// `__metadata__` object (JSON text), in this order, written by hand (the
/// tests' oracle, not the reader's code).
pub fn safetensors_file(
    tensors: &[(&str, &str, &[u64], Vec<u8>)],
    metadata: Option<&str>,
) -> Vec<u8> {
    let mut entries: Vec<String> = metadata
        .map(|m| format!("\"__metadata__\":{m}"))
        .into_iter()
        .collect();
    let mut at = 0;
    for (name, dtype, shape, bytes) in tensors {
        let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
        // The name as a JSON string: quotes, backslashes and controls
        // escaped (a name in a test may hold any of them).
        let name = serde_json::to_string(name).expect("a string");
        entries.push(format!(
            "{name}:{{\"dtype\":\"{dtype}\",\"shape\":[{}],\"data_offsets\":[{at},{}]}}",
            dims.join(","),
            at + bytes.len()
        ));
        at += bytes.len();
    }
    let header = format!("{{{}}}", entries.join(","));
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(header.as_bytes());
    tensors.iter().for_each(|t| file.extend_from_slice(&t.3));
    file
}
