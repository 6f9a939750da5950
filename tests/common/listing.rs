//! What ztfs says of a model: `ztfs ls --json`, a mount's `meta.json`, and
//! the files serving each part.

use super::*;

/// One part as listed.
#[derive(Debug, Clone, PartialEq)]
pub struct PartInfo {
    pub name: String,
    pub dtype: String,
    pub ty: Option<String>,
    pub encoding: Option<String>,
    pub offset: u64,
    pub stored_length: u64,
    pub decoded_length: u64,
    pub shard: Option<String>,
    pub digest: Option<String>,
}

/// One object as listed.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectInfo {
    pub name: String,
    pub layout: String,
    pub shape: Vec<u64>,
    pub parts: Vec<PartInfo>,
}

/// What `ztfs ls --json FILE` says.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing {
    /// A data shard: no manifest, no objects.
    pub data_shard: bool,
    pub objects: Vec<ObjectInfo>,
}

/// `ztfs ls --json FILE`.
pub fn ls(file: &Path) -> Listing {
    let out = ztfs_ok(&[OsStr::new("ls"), "--json".as_ref(), file.as_os_str()]);
    let doc = Json::parse(std::str::from_utf8(&out).expect("ls --json is UTF-8"));
    Listing {
        data_shard: doc["data_shard"] == Json::Bool(true),
        objects: doc["objects"].items().iter().map(object_info).collect(),
    }
}

fn object_info(o: &Json) -> ObjectInfo {
    ObjectInfo {
        name: o["name"].text().into(),
        layout: o["layout"].text().into(),
        shape: o["shape"].items().iter().map(Json::uint).collect(),
        parts: o["parts"].items().iter().map(part_info).collect(),
    }
}

fn part_info(p: &Json) -> PartInfo {
    PartInfo {
        name: p["name"].text().into(),
        dtype: p["dtype"].text().into(),
        ty: p["type"].opt_text(),
        encoding: p["encoding"].opt_text(),
        offset: p["offset"].uint(),
        stored_length: p["stored_length"].uint(),
        decoded_length: p["decoded_length"].uint(),
        shard: p["shard"].opt_text(),
        digest: p["digest"].opt_text(),
    }
}

/// The `.npy` files a `meta.json` announces (of parts, of the view, of a
/// Hurray tensor's data).
pub fn npy_files(meta: &Json) -> Vec<String> {
    let mut out = Vec::new();
    let mut add = |npy: &Json| {
        if !npy.is_null() {
            out.push(npy["file"].text().to_string());
        }
    };
    add(&meta["npy"]);
    add(&meta["view_npy"]);
    if !meta["parts"].is_null() {
        for p in meta["parts"].items() {
            add(&p["npy"]);
        }
    }
    out
}

/// The files a `meta.json` announces besides its parts': the `.npy`
/// files ([`npy_files`]) and `stats.json`.
pub fn announced_files(meta: &Json) -> Vec<String> {
    let mut out = npy_files(meta);
    if !meta["stats"].is_null() {
        out.push(meta["stats"].text().to_string());
    }
    out
}

/// True for a safetensors file at the root of a mount: `model.safetensors`,
/// a shard of it or its index.
pub fn is_safetensors_file(rel: &Path) -> bool {
    let name = rel.to_string_lossy();
    rel.parent() == Some(Path::new(""))
        && name.starts_with("model")
        && (name.ends_with(".safetensors") || name == "model.safetensors.index.json")
}

/// Reads and parses a `meta.json`.
pub fn meta(dir: &Path) -> Json {
    let path = dir.join("meta.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Json::parse(&text)
}

/// The files serving one part, from its entry in `meta.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    /// The decoded bytes; absent for a refused part.
    pub decoded: Option<String>,
    /// The stored bytes; present for an encoded or refused part.
    pub raw: Option<String>,
}

/// Which of a part's `files` is which: a refused part has only its raw
/// file; otherwise the raw file, if any, is the decoded one plus `.raw`.
pub fn served(part: &Json) -> Served {
    let files: Vec<String> = part["files"]
        .items()
        .iter()
        .map(|f| f.text().into())
        .collect();
    let refused = !part["refused"].is_null();
    match files.as_slice() {
        [raw] if refused => Served {
            decoded: None,
            raw: Some(raw.clone()),
        },
        [decoded] if !refused => Served {
            decoded: Some(decoded.clone()),
            raw: None,
        },
        [a, b] if !refused && *b == format!("{a}.raw") => Served {
            decoded: Some(a.clone()),
            raw: Some(b.clone()),
        },
        [a, b] if !refused && *a == format!("{b}.raw") => Served {
            decoded: Some(b.clone()),
            raw: Some(a.clone()),
        },
        _ => panic!(
            "part {:?}: files {files:?} with refused {:?}",
            part["name"], part["refused"]
        ),
    }
}

/// The directory of each object in a flat mount, by true name (from its
/// `meta.json`), as a path below the mount point. Every directory at the
/// root must be an object's, and no two may claim the same object.
pub fn object_dirs(m: &Mount) -> BTreeMap<String, PathBuf> {
    let mut dirs = BTreeMap::new();
    // By the listing's d_type, not stat: a test may need manifest.json
    // untouched (the truncation tests).
    for (name, _) in dir_entries(m.path())
        .into_iter()
        .filter(|e| e.1 == Kind::Dir)
    {
        let true_name = meta(&m.join(&name))["name"].text().to_string();
        if let Some(other) = dirs.insert(true_name.clone(), PathBuf::from(&name)) {
            panic!("{true_name:?} is served by both {other:?} and {name:?}");
        }
    }
    dirs
}

/// The file serving part `part` of the object in `dir` (decoded or raw),
/// found through `meta.json`.
pub fn part_file(dir: &Path, part: &str, raw: bool) -> PathBuf {
    let meta = meta(dir);
    let entry = meta["parts"]
        .items()
        .iter()
        .find(|p| p["name"].text() == part)
        .unwrap_or_else(|| panic!("{}: no part {part:?} in meta.json", dir.display()));
    let s = served(entry);
    let name = if raw { s.raw } else { s.decoded };
    dir.join(name.unwrap_or_else(|| panic!("{}: part {part:?} has no such file", dir.display())))
}
