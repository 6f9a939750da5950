//! Zip archives written by hand, as Python's zipfile writes them (local
//! headers, central directory, end record; no zip64), for the tests of
//! the zip-based inputs: sharing no code with the reader.

/// An archive of `(name, bytes)` members, each stored.
pub fn stored(members: &[(&str, &[u8])]) -> Vec<u8> {
    let all: Vec<(&str, &[u8], bool)> = members.iter().map(|&(n, b)| (n, b, false)).collect();
    archive(&all)
}

/// An archive of `(name, bytes, deflated)` members.
pub fn archive(members: &[(&str, &[u8], bool)]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut entries = Vec::new();
    for &(name, data, deflate) in members {
        let at = out.len() as u32;
        let (bytes, fixed) = local(name, data, deflate);
        out.extend(bytes);
        entries.push((name, at, fixed));
    }
    finish(out, &entries)
}

/// A member's local header and stored bytes, and the header's fixed part
/// (from "version needed" to the extra field's length) for its directory
/// entry.
pub fn local(name: &str, data: &[u8], deflate: bool) -> (Vec<u8>, Vec<u8>) {
    use std::io::Write;
    let crc = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);
    let body = match deflate {
        true => {
            let mut e =
                flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        false => data.to_vec(),
    };
    let method: u8 = if deflate { 8 } else { 0 };
    // version needed, flags, method, time, date, CRC, sizes, name, extra
    let mut fixed = vec![20, 0, 0, 0, method, 0, 0, 0, 0x21, 0];
    fixed.extend(crc.checksum(data).to_le_bytes());
    fixed.extend((body.len() as u32).to_le_bytes());
    fixed.extend((data.len() as u32).to_le_bytes());
    fixed.extend((name.len() as u16).to_le_bytes());
    fixed.extend([0, 0]);
    let mut out = 0x04034b50u32.to_le_bytes().to_vec();
    out.extend(&fixed);
    out.extend(name.as_bytes());
    out.extend(&body);
    (out, fixed)
}

/// `out` (the members' bytes) with a directory of `(name, local header
/// offset, fixed part)` entries and the end record after it.
pub fn finish(mut out: Vec<u8>, entries: &[(&str, u32, Vec<u8>)]) -> Vec<u8> {
    let mut dir = Vec::new();
    for (name, at, fixed) in entries {
        dir.extend(0x02014b50u32.to_le_bytes());
        dir.extend([20, 0]); // made by
        dir.extend(fixed);
        dir.extend([0; 10]); // comment length, disk, internal and external attributes
        dir.extend(at.to_le_bytes());
        dir.extend(name.as_bytes());
    }
    let start = out.len() as u32;
    out.extend(&dir);
    out.extend(0x06054b50u32.to_le_bytes());
    out.extend([0; 4]);
    let n = (entries.len() as u16).to_le_bytes();
    out.extend(n);
    out.extend(n);
    out.extend((dir.len() as u32).to_le_bytes());
    out.extend(start.to_le_bytes());
    out.extend([0, 0]);
    out
}
