//! A zTensor manifest as `manifest.json` (what `ztfs manifest` prints and
//! a mount serves): its CBOR as pretty JSON, streamed object by object.

use crate::error::Result;
use crate::format::cbor::{self, Value};
use crate::format::json::{self, Sink};

/// A zTensor manifest's `manifest.json`, from its bytes (`None` for a
/// data shard): see `report::write_manifest_json`. The
/// objects are written one at a time as they are decoded, in a second pass
/// over the bytes: the manifest is never held as one CBOR tree (about
/// seven times its bytes), nor its text as one string.
pub fn write(manifest: Option<&[u8]>, out: &mut dyn Sink) -> Result<()> {
    let Some(bytes) = manifest else {
        out.push_str("null\n");
        return Ok(());
    };
    // First pass: the root without its objects, and whether they are an
    // object (text keys) in JSON.
    let (mut keys_text, mut first_dollar, mut count) = (true, false, 0);
    let (root, streamed) = cbor::parse_streaming(bytes, "objects", &mut |n, k, _| {
        first_dollar |= count == 0 && k.as_text().is_some_and(|k| k.starts_with('$'));
        keys_text &= k.as_text().is_some();
        count = n;
        Ok(())
    })?;
    let objects_are_object = keys_text && !(count == 1 && first_dollar);
    if !streamed || !objects_are_object || !is_object_map(&root) {
        // Unusual: rendered whole.
        json::to_json_pretty(&cbor::parse(bytes)?, out);
        out.push('\n');
        return Ok(());
    }
    let mut again = Ok(());
    json::Writer::new(out, true).object_with(&root, 0, |w, key, l| {
        if key != "objects" {
            return false;
        }
        let mut w = w.at(l);
        let mut n = 0;
        w.open('{');
        again = cbor::parse_streaming(bytes, "objects", &mut |_, k, v| {
            w.item(n, l);
            w.key(k.as_text().unwrap_or_default());
            w.value(v, l + 1);
            n += 1;
            Ok(())
        })
        .map(drop);
        w.close('}', n, l);
        true
    });
    again?;
    out.push('\n');
    Ok(())
}

/// True when `v` is a map written as a JSON object.
fn is_object_map(v: &Value<'_>) -> bool {
    matches!(v, Value::Map(e) if json::is_object(e.len(), e.iter().map(|(k, _)| k.as_text())))
}
