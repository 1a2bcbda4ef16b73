//! The packet decoder's unit tests: leaf bytes inline and on the heap, round trips, skipped
//! bunches, truncations, bad handles, counts and lengths, one-leaf classes, and plain bunches.

use super::*;
use crate::schema::{ClassBuilder, PropType, PropertyDecl};
use crate::wire::packet::{
    begin_packet, end_packet, guid_delta, write_bunch, write_bunch_after, write_close_after, write_plain,
};

#[test]
fn leaf_bytes_read_as_their_slice_inline_or_not() {
    for len in [0, 1, 12, LeafBytes::INLINE, LeafBytes::INLINE + 1, 300] {
        let bytes: Vec<u8> = (0..len).map(|i| i as u8 ^ 0x5a).collect();
        let mut b = LeafBytes::from(&bytes[..]);
        assert_eq!(&b[..], &bytes[..]);
        assert_eq!(b, LeafBytes::from(bytes.clone()));
        assert_eq!(format!("{b:?}"), format!("{bytes:?}"));
        if len > 0 {
            b[0] ^= 1;
            assert_ne!(b, LeafBytes::from(bytes.clone()));
        }
        assert_eq!(LeafBytes::zeroed(len).len(), len);
    }
}

fn layout() -> ClassLayout {
    ClassBuilder::new("B")
        .property(PropertyDecl::new("A", PropType::U16))
        .property(PropertyDecl::new("Arr", PropType::Array { element: Box::new(PropType::U8), max_len: 4 }))
        .property(PropertyDecl::new("C", PropType::U8))
        .build()
        .unwrap()
}

fn sample() -> Vec<u8> {
    let l = layout();
    let mut w = BitWriter::new();
    begin_packet(&mut w, Seq(7));
    let mut body = BitWriter::new();
    write_leaf_record(&mut body, handle_bits(&l), 1, LeafKind::U16, &[0x34, 0x12]);
    write_array_record(&mut body, &l, 1, &[9, 8]);
    write_bunch(&mut w, NetGuid(4), Some(&OpenHeader::spawn(2)), &body);
    write_close_after(&mut w, NetGuid(4), NetGuid(6), CloseReason::Destroyed, None);
    write_bunch_after(&mut w, NetGuid(6), NetGuid(8), None, &body);
    end_packet(&mut w);
    w.into_bytes()
}

#[test]
fn packets_round_trip() {
    let l = layout();
    let p = decode_packet(&sample(), |_, _| Ok(Resolve::Layout(&l))).unwrap();
    assert_eq!(p.seq, Seq(7));
    assert_eq!(p.bunches.len(), 3);
    assert_eq!(p.bunches[0].open, Some(OpenHeader::spawn(2)));
    assert_eq!(p.bunches[0].records[0], Record { handle: 1, value: RecordValue::Leaf(vec![0x34, 0x12].into()) });
    assert_eq!(
        p.bunches[0].records[1],
        Record {
            handle: 2,
            value: RecordValue::Array { count: 2, elements: vec![(1, vec![9].into()), (2, vec![8].into())] }
        }
    );
    assert_eq!(p.bunches[1].close, Some(Close { reason: CloseReason::Destroyed, path: None }));
    assert_eq!(p.bunches[2].records, p.bunches[0].records);
}

#[test]
fn a_skipped_bunch_is_stepped_over_and_the_rest_decodes() {
    let l = layout();
    let p =
        decode_packet(&sample(), |g, _| Ok(if g == NetGuid(4) { Resolve::Skip } else { Resolve::Layout(&l) })).unwrap();
    assert_eq!(p.skipped, vec![NetGuid(4)]);
    assert_eq!(p.bunches.len(), 2);
    assert_eq!(p.bunches[1].guid, NetGuid(8));
    assert_eq!(p.bunches[1].records.len(), 2);
}

#[test]
fn every_truncation_is_an_error() {
    let l = layout();
    let bytes = sample();
    for cut in 0..bytes.len() {
        assert!(decode_packet(&bytes[..cut], |_, _| Ok(Resolve::Layout(&l))).is_err(), "cut at {cut}");
        assert!(decode_packet(&bytes[..cut], |_, _| Ok(Resolve::Skip)).is_err(), "cut at {cut}, skipping");
    }
}

fn one_bunch(len_adjust: i64, body: impl FnOnce(&mut BitWriter)) -> Vec<u8> {
    let mut b = BitWriter::new();
    body(&mut b);
    let mut w = BitWriter::new();
    begin_packet(&mut w, Seq(1));
    w.write_bool(true);
    w.write_packed(guid_delta(NetGuid(0), NetGuid(2)));
    w.write_bool(false); // sized
    w.write_bool(false);
    w.write_bool(false);
    w.write_packed((b.len_bits() as i64 + len_adjust) as u64);
    w.write_from(b.bytes(), 0, b.len_bits());
    end_packet(&mut w);
    w.into_bytes()
}

#[test]
fn bad_handles_counts_and_lengths_are_errors() {
    let l = layout();
    let decode = |bytes: &[u8]| decode_packet(bytes, |_, _| Ok(Resolve::Layout(&l)));
    // Three leaves: handles in two bits, 1..=3 written as 0..=2.
    assert_eq!(handle_bits(&l), 2);
    let bad = one_bunch(0, |w| {
        w.write_bits(3, 2); // handle 4: no such leaf
        w.write_bits(0, 8);
    });
    assert_eq!(decode(&bad), Err(WireError::Invalid("handle")));
    let bad = one_bunch(0, |w| {
        w.write_bits(1, 2);
        w.write_packed(5); // count over the cap of 4
        w.write_packed(0);
    });
    assert!(matches!(decode(&bad), Err(WireError::OutOfRange { .. })));
    let good = |w: &mut BitWriter| {
        write_leaf_record(w, handle_bits(&l), 1, LeafKind::U16, &[1, 0]);
    };
    assert!(decode(&one_bunch(0, good)).is_ok());
    assert!(decode(&one_bunch(1, good)).is_err(), "a body shorter than its length");
    assert!(decode(&one_bunch(-8, good)).is_err());
    assert_eq!(decode(&one_bunch(1 << 20, good)), Err(WireError::Truncated));
}

#[test]
fn a_one_leaf_class_spends_no_handle_bits_and_still_refuses_a_repeated_record() {
    let l = ClassBuilder::new("Count").property(PropertyDecl::new("N", PropType::U16)).build().unwrap();
    assert_eq!(handle_bits(&l), 0);
    let decode = |bytes: &[u8]| decode_packet(bytes, |_, _| Ok(Resolve::Layout(&l)));
    let record = |w: &mut BitWriter| write_leaf_record(w, 0, 1, LeafKind::U16, &[7, 0]);
    let mut body = BitWriter::new();
    record(&mut body);
    assert_eq!(body.len_bits(), 16, "the value alone");
    let p = decode(&one_bunch(0, record)).unwrap();
    assert_eq!(p.bunches[0].records, [Record { handle: 1, value: RecordValue::Leaf(vec![7, 0].into()) }]);
    let twice = |w: &mut BitWriter| {
        record(w);
        record(w);
    };
    assert_eq!(decode(&one_bunch(0, twice)), Err(WireError::Invalid("handle order")));
}

#[test]
fn a_close_that_opens_and_a_repeated_nested_handle_are_errors() {
    let l = layout();
    let decode = |bytes: &[u8]| decode_packet(bytes, |_, _| Ok(Resolve::Layout(&l)));
    let mut w = BitWriter::new();
    begin_packet(&mut w, Seq(1));
    w.write_bool(true);
    w.write_packed(guid_delta(NetGuid(0), NetGuid(2)));
    w.write_bool(false); // sized
    w.write_bool(true); // opens with class 0
    crate::wire::open::write_open(&mut w, &OpenHeader::spawn(0));
    w.write_bool(true); // and closes
    end_packet(&mut w);
    assert_eq!(decode(&w.into_bytes()), Err(WireError::Invalid("a close that opens")));
    // Two one-leaf elements: nested handles 1 and 2, each at most once, ascending.
    let array = |nested: [u64; 2]| {
        one_bunch(0, move |w| {
            w.write_bits(1, 2); // handle 2
            w.write_packed(2);
            for n in nested {
                w.write_packed(n);
                w.write_bits(5, 8);
            }
            w.write_packed(0);
        })
    };
    assert!(decode(&array([1, 2])).is_ok());
    assert_eq!(decode(&array([1, 1])), Err(WireError::Invalid("nested handle")));
    assert_eq!(decode(&array([2, 1])), Err(WireError::Invalid("nested handle")));
}

/// A packet of plain bunches (record count, records) for `guids`, each with `records`.
fn plain_packet(guids: &[u64], records: impl Fn(&mut BitWriter)) -> Vec<u8> {
    let mut w = BitWriter::new();
    begin_packet(&mut w, Seq(9));
    let mut prev = NetGuid(0);
    for &g in guids {
        let mut body = BitWriter::new();
        records(&mut body);
        write_plain(&mut w, prev, NetGuid(g), body.bytes(), 0, body.len_bits());
        prev = NetGuid(g);
    }
    end_packet(&mut w);
    w.into_bytes()
}

#[test]
fn plain_bunches_count_their_records_in_any_guid_order() {
    let l = layout();
    let two = |w: &mut BitWriter| {
        write_record_count(w, handle_bits(&l), 2);
        write_leaf_record(w, handle_bits(&l), 1, LeafKind::U16, &[0x34, 0x12]);
        write_leaf_record(w, handle_bits(&l), 3, LeafKind::U8, &[5]);
    };
    let bytes = plain_packet(&[40, 2, 1 << 40, 42], two);
    let p = decode_packet(&bytes, |_, open| {
        assert!(open.is_none());
        Ok(Resolve::Layout(&l))
    })
    .unwrap();
    assert_eq!(p.bunches.iter().map(|b| b.guid.0).collect::<Vec<_>>(), [40, 2, 1 << 40, 42]);
    for b in &p.bunches {
        assert_eq!(b.records.len(), 2);
        assert_eq!(b.records[1], Record { handle: 3, value: RecordValue::Leaf(vec![5].into()) });
    }
    // Discarded: read and dropped, the rest still decodes.
    let p =
        decode_packet(&bytes, |g, _| Ok(if g.0 == 2 { Resolve::Discard(&l) } else { Resolve::Layout(&l) })).unwrap();
    assert_eq!(p.skipped, [NetGuid(2)]);
    assert_eq!(p.bunches.len(), 3);
    // Skipped: a plain bunch has no length to step over.
    assert_eq!(
        decode_packet(&bytes, |g, _| Ok(if g.0 == 2 { Resolve::Skip } else { Resolve::Layout(&l) })),
        Err(WireError::Invalid(PLAIN_FOR_MISSING))
    );
    // More records than the count says: the next "bunch" is garbage; fewer: a record is
    // read as the next bunch's header. Either way an error or a different packet, never a panic.
    for n in [1u32, 3, 4] {
        let bytes = plain_packet(&[2, 4], |w| {
            write_record_count(w, handle_bits(&l), n);
            write_leaf_record(w, handle_bits(&l), 1, LeafKind::U16, &[0x34, 0x12]);
            write_leaf_record(w, handle_bits(&l), 3, LeafKind::U8, &[5]);
        });
        let p = decode_packet(&bytes, |_, _| Ok(Resolve::Layout(&l)));
        assert!(p.map_or(true, |p| p.bunches.iter().all(|b| b.records.len() != 2)), "count {n}");
    }
    for cut in 0..bytes.len() {
        assert!(decode_packet(&bytes[..cut], |_, _| Ok(Resolve::Layout(&l))).is_err(), "cut at {cut}");
    }
}

#[test]
fn a_plain_bunch_for_a_fast_array_is_an_error() {
    let l = layout();
    let item = l.arrays[0].clone();
    let bytes = plain_packet(&[2], |w| {
        write_record_count(w, handle_bits(&l), 1);
        write_leaf_record(w, handle_bits(&l), 3, LeafKind::U8, &[5]);
    });
    assert_eq!(
        decode_packet(&bytes, |_, _| Ok(Resolve::Delta(&item, ArrayKey(0)))),
        Err(WireError::Invalid("a plain bunch for a fast array"))
    );
}
