//! The Python extension module `ztfs._native`: [`crate::library`] for
//! Python, converting and calling, nothing more. The package's Python
//! code (`python/ztfs/_library.py`) makes arrays of what it returns.
//!
//! Reads release the GIL. A tensor's bytes are written straight into the
//! `bytearray` that becomes the array's buffer; a tensor stored as it is
//! in a mapped local file is handed over as that file (a duplicate of the
//! descriptor ztfs holds, the one it validated) and its offset, for the
//! package to map: `unsafe` stays in one place ([`crate::store`]).

#![allow(unsafe_code)] // PyO3's macros expand to it; none is written here.

use std::os::fd::{IntoRawFd, OwnedFd};
use std::path::PathBuf;

use pyo3::exceptions::{PyFileNotFoundError, PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes};

use crate::decode::dequant::narrow::Float;
use crate::error::Error;
use crate::library::{self, Options};

/// An opened model (`ztfs.Model` wraps it).
#[pyclass(module = "ztfs._native", frozen)]
struct Model {
    inner: library::Model,
}

/// The package's exception for `e`: `Rejected` (with its rule),
/// `Refused`, `FileNotFoundError` for a file that is not there, else
/// `Error` — the classes of `ztfs._run`, as the command-line API raises.
fn to_py(py: Python<'_>, e: Error) -> PyErr {
    if let Error::Io { source, .. } = e.kind() {
        if source.kind() == std::io::ErrorKind::NotFound {
            return PyFileNotFoundError::new_err(e.to_string());
        }
    }
    let made = (|| {
        let run = py.import("ztfs._run")?;
        let class = match e.kind_name() {
            "rejected" => "Rejected",
            "refused" | "foreign" => "Refused",
            _ => "Error",
        };
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item("kind", e.kind_name())?;
        kwargs.set_item("exit_code", e.exit_code())?;
        kwargs.set_item("rule", e.rule().map(|r| r.name()))?;
        kwargs.set_item("file", e.about())?;
        let exc = run.getattr(class)?.call((e.to_string(),), Some(&kwargs))?;
        Ok::<_, PyErr>(PyErr::from_value(exc))
    })();
    made.unwrap_or_else(|err| err)
}

fn tensor<'a>(m: &'a library::Model, name: &str) -> PyResult<&'a library::Tensor> {
    m.tensor(name)
        .ok_or_else(|| PyKeyError::new_err(name.to_string()))
}

#[pymethods]
impl Model {
    /// Opens and validates `source` (the GIL released while it does).
    #[new]
    #[allow(clippy::too_many_arguments)] // Python's keyword arguments
    #[pyo3(signature = (source, cache_mib=64, files=true, dequantize=Some("f32".to_string()), shards=Vec::new(), trust_shards=false, verify=false))]
    fn new(
        py: Python<'_>,
        source: PathBuf,
        cache_mib: u64,
        files: bool,
        dequantize: Option<String>,
        shards: Vec<(String, PathBuf)>,
        trust_shards: bool,
        verify: bool,
    ) -> PyResult<Model> {
        let dequantize = match dequantize.as_deref() {
            None => None,
            Some(s) => Some(Float::parse(s).ok_or_else(|| {
                PyValueError::new_err(format!("dequantize={s:?}: say f32, f16, bf16 or None"))
            })?),
        };
        let opts = Options {
            cache_mib,
            files,
            dequantize,
            shards,
            trust_shards,
            verify,
        };
        let inner = py
            .detach(|| library::Model::open(&source, opts))
            .map_err(|e| to_py(py, e))?;
        Ok(Model { inner })
    }

    /// The tensors numpy has a dtype for: (name, dtype, shape), in the
    /// file's order.
    fn tensors(&self) -> Vec<(String, &'static str, Vec<u64>)> {
        (self.inner.tensors().iter())
            .filter_map(|t| Some((t.name().to_string(), t.dtype().ok()?, t.shape().to_vec())))
            .collect()
    }

    /// The objects that are not arrays here: (name, why).
    fn left_out(&self) -> Vec<(String, String)> {
        let untyped = (self.inner.tensors().iter())
            .filter_map(|t| Some((t.name().to_string(), t.dtype().err()?.to_string())));
        (self.inner.left_out().iter().cloned())
            .chain(untyped)
            .collect()
    }

    /// The format's name.
    fn format_name(&self) -> &'static str {
        self.inner.format_name()
    }

    /// `length` bytes of tensor `name` from `offset`, in a new bytearray;
    /// `exact`: those bytes and no read-ahead (a slice).
    #[pyo3(signature = (name, offset, length, exact=false))]
    fn read<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        offset: u64,
        length: usize,
        exact: bool,
    ) -> PyResult<Bound<'py, PyByteArray>> {
        let t = tensor(&self.inner, name)?;
        let mut failed = None;
        let out = PyByteArray::new_with(py, length, |buf| {
            let read = || match exact {
                true => self.inner.read_exact(t, offset, buf),
                false => self.inner.read(t, offset, buf),
            };
            failed = py.detach(read).err();
            Ok(())
        })?;
        match failed {
            Some(e) => Err(to_py(py, e)),
            None => Ok(out),
        }
    }

    /// Tensor `name`'s file and offset when it is stored as it is in a
    /// mapped local file: a new descriptor of the file, the caller's to
    /// close, and the offset; else None.
    fn mapped(&self, name: &str) -> PyResult<Option<(i32, u64)>> {
        let t = tensor(&self.inner, name)?;
        let Some((file, offset)) = self.inner.mapped(t) else {
            return Ok(None);
        };
        let fd = OwnedFd::from(file.try_clone()?);
        Ok(Some((fd.into_raw_fd(), offset)))
    }

    /// The format's metadata as text pairs, or None.
    fn metadata(
        &self,
        py: Python<'_>,
    ) -> PyResult<Option<std::collections::BTreeMap<String, String>>> {
        self.inner.metadata().map_err(|e| to_py(py, e))
    }

    /// manifest.json's bytes.
    fn manifest_json<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let b = py
            .detach(|| self.inner.manifest_json())
            .map_err(|e| to_py(py, e))?;
        Ok(PyBytes::new(py, &b))
    }

    /// The paths of the folder's other files.
    fn files(&self) -> Vec<String> {
        self.inner.files()
    }

    /// A file of the folder, whole.
    fn read_file<'py>(&self, py: Python<'py>, path: &str) -> PyResult<Bound<'py, PyBytes>> {
        let b = py
            .detach(|| self.inner.read_file(path))
            .map_err(|e| to_py(py, e))?;
        Ok(PyBytes::new(py, &b))
    }
}

/// `--cache-dir DIR --cache-size SIZE` for the rest of the process.
#[pyfunction]
fn use_disk_cache(py: Python<'_>, dir: PathBuf, size: u64) -> PyResult<()> {
    library::use_disk_cache(&dir, size).map_err(|e| to_py(py, e))
}

/// `--shared-cache URL` for the rest of the process.
#[pyfunction]
fn use_shared_cache(py: Python<'_>, url: &str) -> PyResult<()> {
    library::use_shared_cache(url).map_err(|e| to_py(py, e))
}

/// Waits, at most `seconds`, for the blocks queued for the shared cache
/// tier to be written (at the interpreter's exit), without the GIL.
#[pyfunction]
fn flush_shared_cache(py: Python<'_>, seconds: f64) {
    let wait = std::time::Duration::from_secs_f64(seconds.clamp(0.0, 3600.0));
    py.detach(|| library::flush_shared_cache(wait));
}

/// `--trust-unversioned` for the rest of the process.
#[pyfunction]
fn trust_unversioned(yes: bool) {
    library::trust_unversioned(yes);
}

/// A size as the command line takes it (`10G`, `512M`).
#[pyfunction]
fn parse_size(s: &str) -> PyResult<u64> {
    crate::cli::args::parse_size(s).map_err(PyValueError::new_err)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // A read's failure is logged where it happens (as a mount's is): on
    // stderr, warnings and worse unless ZTFS_LOG says otherwise.
    let spec = std::env::var("ZTFS_LOG").unwrap_or_else(|_| "warn".into());
    let _ = env_logger::Builder::new()
        .parse_filters(&spec)
        .target(env_logger::Target::Stderr)
        .try_init();
    m.add_class::<Model>()?;
    m.add_function(wrap_pyfunction!(use_disk_cache, m)?)?;
    m.add_function(wrap_pyfunction!(trust_unversioned, m)?)?;
    m.add_function(wrap_pyfunction!(use_shared_cache, m)?)?;
    m.add_function(wrap_pyfunction!(flush_shared_cache, m)?)?;
    m.add_function(wrap_pyfunction!(parse_size, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
