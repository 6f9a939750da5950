use super::encode::{len_field, tag, v};
use super::*;

fn all(buf: &[u8]) -> Result<Vec<Field<'_>>, WireError> {
    fields(buf, 0).collect()
}

#[test]
fn varints_canonical_padded_and_at_their_limits() {
    for n in [0, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
        let b = v(n);
        let mut pos = 0;
        assert_eq!(varint(&b, &mut pos), Ok(n));
        assert_eq!(pos, b.len());
    }
    // Not canonical, still a varint: protobuf's parsers take them.
    let mut pos = 0;
    assert_eq!(varint(&[0x80, 0x80, 0x00], &mut pos), Ok(0));
    assert_eq!(pos, 3);
    let mut pos = 0;
    let eleven = [0x80; 10].iter().chain(&[0]).copied().collect::<Vec<_>>();
    assert!(varint(&eleven, &mut pos).is_err());
    let mut past = vec![0xff; 9];
    past.push(0x02);
    assert_eq!(varint(&past, &mut 0), Err("a varint past 64 bits"));
    assert_eq!(varint(&[0x80], &mut 0), Err("a varint cut short"));
}

#[test]
fn fields_come_in_order_with_their_offsets() {
    let inner = len_field(1, b"abc");
    let msg = [
        tag(1, 0),
        v(150),
        tag(2, 1),
        7u64.to_le_bytes().to_vec(),
        tag(3, 5),
        9u32.to_le_bytes().to_vec(),
        len_field(4, &inner),
        tag(1, 0),
        v(5), // a repeated (or last-wins) field
        tag(536_870_911, 0),
        v(1), // the highest field number
    ]
    .concat();
    let f = all(&msg).unwrap();
    assert_eq!(f.len(), 6);
    assert_eq!(
        f[0],
        Field {
            number: 1,
            value: Value::Varint(150)
        }
    );
    assert_eq!(f[1].value, Value::I64(7));
    assert_eq!(f[2].value, Value::I32(9));
    let Value::Len(body, at) = f[3].value else {
        panic!("{:?}", f[3])
    };
    assert_eq!(body, &inner[..]);
    assert_eq!(&msg[at as usize..at as usize + body.len()], body);
    // Offsets of a nested message's fields count from the outermost bytes.
    let nested: Vec<_> = fields(body, at).collect::<Result<_, _>>().unwrap();
    let Value::Len(abc, at2) = nested[0].value else {
        panic!()
    };
    assert_eq!(
        (abc, &msg[at2 as usize..at2 as usize + 3]),
        (&b"abc"[..], &b"abc"[..])
    );
    assert_eq!(f[5].number, 536_870_911);
    assert!(all(&[]).unwrap().is_empty());
}

#[test]
fn groups_are_skipped_as_unknown_fields() {
    let group = [
        tag(5, 3),
        tag(1, 0),
        v(1),
        tag(6, 3),
        len_field(2, b"x"),
        tag(6, 4),
        tag(5, 4),
    ]
    .concat();
    let msg = [tag(1, 0), v(1), group.clone(), tag(2, 0), v(2)].concat();
    let f = all(&msg).unwrap();
    assert_eq!(f.iter().map(|f| f.number).collect::<Vec<_>>(), [1, 2]);
    // A group as the last field.
    let last = [tag(1, 0), v(1), group].concat();
    assert_eq!(all(&last).unwrap().len(), 1);
}

#[test]
fn what_is_not_protobuf_is_an_error_where_it_is() {
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (tag(0, 0), "field number 0"),
        (v(1 << 32 | 1 << 3), "a field number above 2^29 - 1"),
        (tag(1, 6), "a wire type protobuf does not have (6 or 7)"),
        (tag(1, 7), "a wire type protobuf does not have (6 or 7)"),
        (
            [tag(1, 2), v(4), b"abc".to_vec()].concat(),
            "a length runs past the end of its message",
        ),
        (
            [tag(1, 2), v(u64::MAX)].concat(),
            "a length runs past the end of its message",
        ),
        (
            [tag(1, 1), vec![0; 7]].concat(),
            "a fixed-width value cut short",
        ),
        (
            [tag(1, 5), vec![0; 3]].concat(),
            "a fixed-width value cut short",
        ),
        (tag(1, 4), "an end of group with no group open"),
        ([tag(1, 3), tag(1, 0), v(1)].concat(), "a group with no end"),
        (
            [tag(1, 3), tag(2, 4)].concat(),
            "an end of group that is not the open group's",
        ),
        ([tag(1, 0)].concat(), "a varint cut short"),
    ];
    for (bytes, what) in cases {
        let e = all(&bytes).unwrap_err();
        assert_eq!(e.what, what, "{bytes:?}");
    }
    // Fields before the error are read; the error says where.
    let bad = [tag(1, 0), v(1), tag(2, 6)].concat();
    let mut it = fields(&bad, 100);
    assert!(it.next().unwrap().is_ok());
    assert_eq!(it.next().unwrap().unwrap_err().offset, 102);
    assert!(it.next().is_none());
}

#[test]
fn groups_nest_only_so_deep() {
    let depth = MAX_GROUP_DEPTH as u64;
    let open: Vec<u8> = (1..=depth).flat_map(|n| tag(n, 3)).collect();
    let close: Vec<u8> = (1..=depth).rev().flat_map(|n| tag(n, 4)).collect();
    assert!(all(&[open.clone(), close.clone()].concat())
        .unwrap()
        .is_empty());
    let deeper = [open, tag(99, 3), tag(99, 4), close].concat();
    assert_eq!(all(&deeper).unwrap_err().what, "groups nested too deep");
}

#[test]
fn packed_repeated_values() {
    let p: Vec<u8> = [v(1), v(300), v(u64::MAX)].concat();
    let got: Result<Vec<u64>, _> = packed_varints(&p).collect();
    assert_eq!(got.unwrap(), [1, 300, u64::MAX]);
    let cut: Vec<_> = packed_varints(&[0x80]).collect();
    assert_eq!(cut, [Err("a varint cut short")]);
    let f: Vec<u32> = packed_fixed::<4>(&[1, 0, 0, 0, 2, 0, 0, 0])
        .unwrap()
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(f, [1, 2]);
    assert!(packed_fixed::<8>(&[0; 12]).is_err());
}
