//! Digests (§3.4, §6.4): the registered algorithms, verification of part
//! digests over decoded bytes, and the content digest `zt.content/1`.

use sha2::{Digest as _, Sha256};
use xxhash_rust::xxh3::Xxh3;

use crate::error::{Error, Result, Rule};
use crate::format::cbor::{self, text_key_cmp, Value};
use crate::format::Manifest;

/// A registered digest algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algo {
    /// XXH3-64, seed 0: `xxh3:` and 16 hex digits.
    Xxh3,
    /// SHA-256: `sha256:` and 64 hex digits.
    Sha256,
}

impl Algo {
    /// The name used in digest strings.
    pub fn name(self) -> &'static str {
        match self {
            Algo::Xxh3 => "xxh3",
            Algo::Sha256 => "sha256",
        }
    }

    /// The algorithm of a digest string; `Unsupported` for one this reader
    /// does not know, which is a refusal and not a rejection (notes §1).
    pub fn of(digest: &str) -> Result<Algo> {
        match digest.split_once(':').map(|(a, _)| a) {
            Some("xxh3") => Ok(Algo::Xxh3),
            Some("sha256") => Ok(Algo::Sha256),
            _ => Err(Error::Unsupported(format!(
                "digest algorithm of {digest:?} is not one this reader knows (xxh3, sha256)"
            ))),
        }
    }

    /// Digest string of `bytes`.
    pub fn digest(self, bytes: &[u8]) -> String {
        let mut h = Hasher::new(self);
        h.update(bytes);
        h.finish()
    }
}

/// An incremental hasher for either algorithm.
pub enum Hasher {
    /// XXH3-64 state.
    Xxh3(Box<Xxh3>),
    /// SHA-256 state.
    Sha256(Sha256),
}

impl Hasher {
    /// A fresh hasher.
    pub fn new(algo: Algo) -> Hasher {
        match algo {
            Algo::Xxh3 => Hasher::Xxh3(Box::new(Xxh3::new())),
            Algo::Sha256 => Hasher::Sha256(Sha256::new()),
        }
    }

    /// Feeds bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        match self {
            Hasher::Xxh3(h) => h.update(bytes),
            Hasher::Sha256(h) => h.update(bytes),
        }
    }

    /// The digest string, `algo:hex`.
    pub fn finish(self) -> String {
        match self {
            Hasher::Xxh3(h) => format!("xxh3:{:016x}", h.digest()),
            Hasher::Sha256(h) => format!("sha256:{}", hex(&h.finalize())),
        }
    }
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// Compares a computed digest with the stored one; `what` names the part.
pub fn check(stored: &str, computed: &str, what: &str) -> Result<()> {
    if stored == computed {
        Ok(())
    } else {
        Err(Error::reject(
            Rule::Digest,
            format!("{what} hashes to {computed}, the manifest says {stored}"),
        ))
    }
}

/// The content digest of §6.4, or the names of the parts that have no
/// digest (for which it is undefined).
pub fn content_digest(m: &Manifest, algo: Algo) -> std::result::Result<String, Vec<String>> {
    let missing: Vec<String> = m
        .objects
        .iter()
        .flat_map(|o| {
            o.parts
                .iter()
                .filter(|p| p.digest.is_none())
                .map(move |p| format!("{:?}/{:?}", o.name, p.name))
        })
        .collect();
    if !missing.is_empty() {
        return Err(missing);
    }
    let mut bytes = Vec::new();
    encode_content(m, &mut bytes);
    Ok(algo.digest(&bytes))
}

/// Encodes the `zt.content/1` value. Attributes are spliced in as their
/// deterministic CBOR, which is how the manifest stored them.
fn encode_content(m: &Manifest, out: &mut Vec<u8>) {
    let text = |s: &str, out: &mut Vec<u8>| cbor::encode(&Value::Text(s), out);
    cbor::encode_head(4, 2, out);
    text("zt.content/1", out);
    let mut objects: Vec<_> = m.objects.iter().collect();
    objects.sort_by(|a, b| text_key_cmp(&a.name, &b.name));
    cbor::encode_head(5, objects.len() as u64, out);
    for o in objects {
        text(&o.name, out);
        // Keys in deterministic order: "parts" < "shape" < "layout" < "attributes".
        cbor::encode_head(5, 3 + u64::from(o.attributes.is_some()), out);
        text("parts", out);
        let mut parts: Vec<_> = o.parts.iter().collect();
        parts.sort_by(|a, b| text_key_cmp(&a.name, &b.name));
        cbor::encode_head(5, parts.len() as u64, out);
        for p in parts {
            text(&p.name, out);
            // "type" < "dtype" < "digest".
            cbor::encode_head(5, 2 + u64::from(p.ty.logical.is_some()), out);
            if let Some(t) = &p.ty.logical {
                text("type", out);
                text(t, out);
            }
            text("dtype", out);
            text(p.ty.dtype.name(), out);
            text("digest", out);
            let digest = p.digest.as_ref().map(ToString::to_string);
            text(digest.as_deref().unwrap_or_default(), out);
        }
        text("shape", out);
        cbor::encode_head(4, o.shape.len() as u64, out);
        for &d in o.shape.iter() {
            cbor::encode_head(0, d, out);
        }
        text("layout", out);
        text(&o.layout, out);
        if let Some(a) = &o.attributes {
            text("attributes", out);
            out.extend_from_slice(a);
        }
    }
}
