use super::*;

fn st(len: u64, rest: &[u8]) -> Vec<u8> {
    [&len.to_le_bytes()[..], rest].concat()
}

#[test]
fn exact_magics_win() {
    let zt = [&crate::format::MAGIC[..], b"{\"a\":1}"].concat();
    assert_eq!(sniff(&zt, "x.safetensors"), Format::Zt);
    assert_eq!(sniff(b"HRRYFILE\x01\x00", "x.gguf"), Format::Hurray);
    assert_eq!(sniff(b"GGUF\x03\0\0\0", "x"), Format::Gguf);
}

#[test]
fn a_magic_one_byte_off_is_that_format() {
    assert_eq!(sniff(b"HRRYFILX\0\0\0\0", "x"), Format::Hurray);
    assert_eq!(sniff(b"XRRYFILE", "x"), Format::Hurray);
    assert_eq!(sniff(b"GGUG\x03\0\0\0", "x"), Format::Gguf);
    assert_eq!(sniff(b"\x89ZT3\r\n\x1a\n", "x.gguf"), Format::Zt);
    // Two bytes off is not a near miss.
    assert_eq!(sniff(b"GGXX\x03\0\0\0", "x"), Format::Zt);
    assert_eq!(sniff(b"HRRYFIXX\0\0", "x"), Format::Zt);
}

#[test]
fn foreign_magics_go_to_ztensor_which_names_them() {
    let stream = [b"HRRY".as_slice(), &[1, 0, 20, 0, 0, 0], b"{"].concat();
    assert_eq!(sniff(&stream, "m.hrrys"), Format::Zt);
    assert!(foreign(&stream).unwrap().contains("Hurray stream"));
    // A .npy header length of 0x0a20 is whitespace before its '{'.
    let npy = b"\x93NUMPY\x01\x00\x20\x0a{'descr': '<f4'}";
    assert_eq!(sniff(npy, "x.safetensors"), Format::Zt);
    assert!(foreign(npy).unwrap().contains(".npy"));
    assert_eq!(sniff(b"ZTEN0001", "x"), Format::Zt);
    assert_eq!(sniff(b"PK\x03\x04", "x.zt"), Format::Zip);
    assert_eq!(foreign(b"\x00hello"), None);
}

#[test]
fn a_safetensors_shape_is_safetensors_whatever_its_length() {
    assert_eq!(sniff(&st(2, b"{}"), "x"), Format::Safetensors);
    assert_eq!(sniff(&st(1 << 32, b"{}"), "x"), Format::Safetensors);
    assert_eq!(sniff(&st(u64::MAX >> 8, b" \n{"), "x"), Format::Safetensors);
    assert_eq!(sniff(&st(5, b"\xef\xbb\xbf{}"), "x"), Format::Safetensors);
    assert_eq!(sniff(&st(2, b"[]"), "x"), Format::Zt);
    // A length whose first byte is '{': the zero bytes say it is no index.
    assert_eq!(sniff(b"{\0\0\0\x01\0\0\0{}", "x"), Format::Safetensors);
}

#[test]
fn an_index_shape_is_an_index() {
    assert_eq!(
        sniff(b"{\"weight_map\": {}}", "x"),
        Format::SafetensorsIndex
    );
    assert_eq!(sniff(b" \n{\"m\":  {\"a\"", "x"), Format::SafetensorsIndex);
    assert_eq!(
        sniff(b"\xef\xbb\xbf{\"metadata\"", "x"),
        Format::SafetensorsIndex
    );
    assert_eq!(sniff(b"{\"a\"\x01", "x"), Format::Zt);
}

#[test]
fn a_name_tells_what_no_shape_shows() {
    let len_only = 2u64.to_le_bytes();
    assert_eq!(sniff(&len_only, "m.safetensors"), Format::Safetensors);
    assert_eq!(
        sniff(b"", "m.safetensors.index.json"),
        Format::SafetensorsIndex
    );
    assert_eq!(sniff(b"GG", "m.gguf"), Format::Gguf);
    assert_eq!(sniff(b"\0\0", "m.hrry"), Format::Hurray);
    assert_eq!(sniff(&len_only, "m.bin"), Format::Zt);
}

#[test]
fn what_a_foreign_file_looks_like_is_named() {
    let tar = [vec![b'x'; 257], b"ustar\x0000".to_vec(), vec![0; 100]].concat();
    for (head, what) in [
        (b"\x1f\x8b\x08\x00".to_vec(), "gzip"),
        (b"\x28\xb5\x2f\xfd\x00".to_vec(), "zstd"),
        (b"\x7fELF\x02\x01".to_vec(), "ELF"),
        (tar, "tar archive"),
        (b"BZh91AY".to_vec(), "bzip2"),
        (b"\x08\x07\x12\x07pytorch".to_vec(), "ONNX"),
        (b"  <!DOCTYPE html><html>".to_vec(), "HTML page"),
        (b"[1, 2]".to_vec(), "JSON"),
        ("hello, w\u{f6}rld\n".as_bytes().to_vec(), "text file"),
        // A character cut by the head's end is still text.
        ("ab\u{f6}".as_bytes()[..3].to_vec(), "text file"),
    ] {
        let said = foreign(&head).unwrap_or_default();
        assert!(said.contains(what), "{head:?}: {said:?}");
    }
    assert_eq!(foreign(b"\x00\x01\x02binary"), None);
    assert_eq!(foreign(b"   "), None);
}

#[test]
fn a_short_foreign_magic_gives_way_to_a_safetensors_shape() {
    // A header length of 0x8b1f begins with gzip's magic.
    let st = st(0x8b1f, b"{\"a\":{}}");
    assert_eq!(&st[..2], b"\x1f\x8b");
    assert_eq!(sniff(&st, "x"), Format::Safetensors);
    assert_eq!(
        sniff(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", "x.safetensors"),
        Format::Zt
    );
}
