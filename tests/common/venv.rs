//! The project's Python environment (`scripts/venv.sh`): the real peer
//! packages and the servers' binaries the tests run. Made once per test
//! process; a test that needs it fails when it cannot be had.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The venv's directory, made (or found up to date) by `scripts/venv.sh`.
pub fn venv() -> &'static Path {
    static VENV: OnceLock<PathBuf> = OnceLock::new();
    VENV.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let out = Command::new("bash")
            .arg("scripts/venv.sh")
            .current_dir(root)
            .output()
            .unwrap_or_else(|e| panic!("cannot run bash scripts/venv.sh: {e}"));
        assert!(
            out.status.success(),
            "scripts/venv.sh ({}) could not make the project's Python environment: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
    })
}

/// The venv's Python.
pub fn python() -> PathBuf {
    venv().join("bin/python")
}
