//! The packet writer's unit tests: packed sizes, GUID steps and the one-write lead against their
//! bit-by-bit twins, `*_fits` answers exact at the MTU, and runs of calls written in one copy
//! against the calls one by one.

use super::*;

#[test]
fn packed_bits_match_the_writer() {
    for v in [0u64, 1, 127, 128, 16383, 16384, u32::MAX as u64, u64::MAX] {
        let mut w = BitWriter::new();
        w.write_packed(v);
        assert_eq!(packed_bits(v), w.len_bits(), "{v}");
    }
}

#[test]
fn a_run_of_calls_writes_what_the_calls_one_by_one_would() {
    use super::super::rpc::{CallRun, EncodedCall};
    // Calls of 1 to 90 bits on actors of short and long GUIDs, and a run of all of them.
    let calls: Vec<EncodedCall> = (0..60u64)
        .map(|i| {
            let mut bits = BitWriter::new();
            bits.write_bits((i * 0x9e37_79b9) ^ 0x5555, (1 + i * 3 % 90) as u32);
            EncodedCall::new(NetGuid(2 + i * i * 977), false, &bits)
        })
        .collect();
    let mut run = CallRun::default();
    calls.iter().for_each(|c| run.push(c));
    assert_eq!(run.len(), calls.len());
    // Asked past its end, a run gives what it has.
    let (n, bits) = run.fitting(58, 10, usize::MAX);
    assert_eq!(
        (n, bits),
        (
            2,
            2 * 12
                + [58, 59]
                    .iter()
                    .map(|&i| packed_bits(calls[i].body_bits() as u64) + calls[i].body_bits())
                    .sum::<usize>()
        )
    );
    assert_eq!((run.fitting(60, 3, usize::MAX), run.fitting(99, 1, usize::MAX)), ((0, 0), (0, 0)));
    for mtu in [MIN_MTU, 300, 1400] {
        for first in [0, 1, 7] {
            let (mut one, mut p1) = (BitWriter::new(), PacketWriter::new(mtu));
            let (mut all, mut p2) = (BitWriter::new(), PacketWriter::new(mtu));
            p1.begin_packet(&mut one, Seq(9));
            p2.begin_packet(&mut all, Seq(9));
            // A plain bunch first: the run waits for a call bunch to follow.
            p1.write_plain(&mut one, NetGuid(40), &[0xff], 0, 5);
            p2.write_plain(&mut all, NetGuid(40), &[0xff], 0, 5);
            assert_eq!(p2.write_call_run(&mut all, &run, first, 3), 0, "not after a plain bunch");
            p1.write_call(&mut one, &calls[first], None);
            p2.write_call(&mut all, &calls[first], None);
            let mut n1 = 0;
            while first + 1 + n1 < calls.len() && p1.call_fits(&one, &calls[first + 1 + n1]) {
                p1.write_call(&mut one, &calls[first + 1 + n1], None);
                n1 += 1;
            }
            let n2 = p2.write_call_run(&mut all, &run, first + 1, calls.len() - first - 1);
            assert_eq!((n2, p2.bunches()), (n1, p1.bunches()), "mtu {mtu}, from {first}");
            assert_eq!(p1.finish_packet(&mut one), p2.finish_packet(&mut all));
            assert_eq!(one.bytes(), all.bytes(), "mtu {mtu}, from {first}");
            assert!(one.len_bits() <= mtu.max(MIN_MTU) * 8, "{} bits, mtu {mtu}", one.len_bits());
        }
    }
}

#[test]
fn a_packet_filled_to_the_brim_stays_within_the_mtu() {
    for mtu in [MIN_MTU, 1024, 1400] {
        let mut out = BitWriter::new();
        let mut p = PacketWriter::new(mtu);
        p.begin_packet(&mut out, Seq(70_000));
        let mut guid = NetGuid(2);
        loop {
            let open = OpenHeader::spawn(3).encode();
            if !p.bunch_fits(&out, guid, Some(&open), 13) {
                break;
            }
            p.begin_bunch(guid, Some(&open), false);
            p.body().write_bits(0x1fff, 13);
            while p.body_fits(&out, 13) {
                p.body().write_bits(0x1fff, 13);
            }
            p.end_bunch(&mut out, 0);
            guid = guid.next_dynamic();
        }
        let end = p.finish_packet(&mut out);
        assert!(end <= mtu, "{end} bytes in a {mtu}-byte packet");
        assert!(end * 8 + 13 + 64 > mtu * 8, "the packet is nearly full: {end} of {mtu}");
    }
}

#[test]
fn fits_answers_are_exact_at_the_mtu() {
    for mtu in [0, MIN_MTU, 1400, MAX_MTU, 100_000] {
        let mtu_bits = mtu.clamp(MIN_MTU, MAX_MTU) * 8;
        let mut out = BitWriter::new();
        let mut p = PacketWriter::new(mtu);
        p.begin_packet(&mut out, Seq(300));
        // The header (2 bytes), the packet terminator and its continuation bit are counted.
        let room = mtu_bits - 16 - 2;
        let lead = bunch_lead_bits(NetGuid(0), NetGuid(2));
        assert!(p.plain_fits(&out, NetGuid(2), room - lead), "mtu {mtu}");
        assert!(!p.plain_fits(&out, NetGuid(2), room - lead + 1), "mtu {mtu}");
        // In a bunch: its header and the body-length field count too.
        p.begin_bunch(NetGuid(2), None, false);
        let header = bunch_header_bits(NetGuid(0), NetGuid(2), None);
        let fits = (0..room).rev().find(|&b| header + packed_bits(b as u64) + b <= room).unwrap();
        assert!(p.body_fits(&out, fits), "mtu {mtu}");
        assert!(!p.body_fits(&out, fits + 1), "mtu {mtu}");
        assert_eq!(p.body_room(&out), room - header - packed_bits(mtu_bits as u64), "mtu {mtu}");
        // A plain bunch: no length; its lead (presence, GUID, form) and record count.
        p.abandon_bunch();
        p.begin_plain(NetGuid(2), 3);
        let lead = lead + 3;
        assert!(p.body_fits(&out, room - lead), "mtu {mtu}");
        assert!(!p.body_fits(&out, room - lead + 1), "mtu {mtu}");
        assert_eq!(p.body_room(&out), room - lead, "mtu {mtu}");
        p.abandon_bunch();
        assert!(p.plain_fits(&out, NetGuid(2), room - lead + 3));
        assert!(!p.plain_fits(&out, NetGuid(2), room - lead + 4));
    }
}

#[test]
fn guid_steps_round_trip_both_ways_and_at_the_ends_of_the_range() {
    let guids = [0u64, 1, 2, 4, 3, 1 << 40, 2, u64::MAX, 0, u64::MAX - 1, 1 << 63, 7];
    for w in guids.windows(2) {
        let (prev, guid) = (NetGuid(w[0]), NetGuid(w[1]));
        assert_eq!(guid_from_delta(prev, guid_delta(prev, guid)), guid, "{w:?}");
    }
    // A step of ±1 costs a byte whatever the GUIDs; an ascending run of dynamic GUIDs two
    // apart costs one byte each.
    assert_eq!(guid_delta(NetGuid(1 << 40), NetGuid((1 << 40) + 2)), 4);
    assert_eq!(guid_delta(NetGuid(10), NetGuid(9)), 1);
    assert_eq!(packed_bits(guid_delta(NetGuid(0), NetGuid(u64::MAX))), 8);
    // Every packed value names some GUID: a decoder has nothing to refuse.
    for v in [0u64, 1, u64::MAX, u64::MAX - 1, 1 << 63] {
        let g = guid_from_delta(NetGuid(5), v);
        assert_eq!(guid_delta(NetGuid(5), g), v);
    }
}

#[test]
fn the_one_write_lead_equals_its_bit_by_bit_twin() {
    for delta in (0..300u64).chain([16383, 16384, (1 << 21) - 1, 1 << 21, u64::MAX]) {
        for plain in [false, true] {
            let mut fast = BitWriter::new();
            write_lead(&mut fast, delta, plain);
            let mut slow = BitWriter::new();
            slow.write_bool(true);
            slow.write_packed(delta);
            slow.write_bool(plain);
            assert_eq!((fast.len_bits(), fast.bytes()), (slow.len_bits(), slow.bytes()), "{delta} {plain}");
        }
    }
}

#[test]
fn bunches_step_from_the_one_before_them_and_each_packet_starts_from_zero() {
    let mut out = BitWriter::new();
    let mut p = PacketWriter::new(MIN_MTU);
    p.begin_packet(&mut out, Seq(1));
    let body = [0b1010_1010u8];
    p.write_plain(&mut out, NetGuid(1000), &body, 0, 8);
    let first = out.len_bits();
    p.write_plain(&mut out, NetGuid(1002), &body, 0, 8);
    // Presence, one byte for +2, form, body.
    assert_eq!(out.len_bits() - first, 1 + 8 + 1 + 8);
    assert_eq!(first - 8, 1 + packed_bits(2000) + 1 + 8);
    p.finish_packet(&mut out);
    let at = out.len_bits();
    p.begin_packet(&mut out, Seq(2));
    p.write_plain(&mut out, NetGuid(1002), &body, 0, 8);
    assert_eq!(out.len_bits() - at - 8, 1 + packed_bits(2004) + 1 + 8, "from 0 again");
}

/// A run after a calls acknowledgement or an export (the step from GUID 1 as after a call
/// bunch), and every room left near the packet's end, against the calls one by one.
#[test]
fn a_run_of_calls_fits_as_the_calls_one_by_one_at_every_room() {
    use super::super::rpc::{CallRun, EncodedCall};
    let calls: Vec<EncodedCall> = (0..40u64)
        .map(|i| {
            let mut bits = BitWriter::new();
            bits.write_bits(i.wrapping_mul(0x9e37_79b9_7f4a), (1 + (i * 7) % 61) as u32);
            EncodedCall::new(NetGuid(2 + i * i * 131), false, &bits)
        })
        .collect();
    let mut run = CallRun::default();
    calls.iter().for_each(|c| run.push(c));
    let mut cases = 0;
    for mtu in [MIN_MTU, 513, 777] {
        for lead in 0..3 {
            for fill in 0..(mtu * 8) {
                if fill % 7 != 0 && fill < mtu * 8 - 1200 {
                    continue;
                }
                for &(first, max) in &[(0usize, 0usize), (0, 1), (3, 5), (10, 29), (39, 1), (39, 0), (40, 0)] {
                    let (mut one, mut p1) = (BitWriter::new(), PacketWriter::new(mtu));
                    let (mut all, mut p2) = (BitWriter::new(), PacketWriter::new(mtu));
                    for (p, w) in [(&mut p1, &mut one), (&mut p2, &mut all)] {
                        p.begin_packet(w, Seq(70_000));
                        let body = [0x5au8; 1024];
                        let bits = fill.min(mtu * 8 - 200);
                        if !p.plain_fits(w, NetGuid(9), bits) {
                            continue;
                        }
                        p.write_plain(w, NetGuid(9), &body, 0, bits);
                        match lead {
                            0 if p.calls_ack_fits(w) => p.write_calls_ack(w, 77),
                            1 if p.export_fits(w, NetGuid(6), "/Game/X") => p.write_export(w, NetGuid(6), "/Game/X"),
                            2 if p.call_fits(w, &calls[0]) => p.write_call(w, &calls[0], None),
                            _ => {}
                        }
                    }
                    let mut n1 = 0;
                    if p1.prev == super::super::open::EXPORT_GUID {
                        while n1 < max && p1.call_fits(&one, &calls[first + n1]) {
                            p1.write_call(&mut one, &calls[first + n1], None);
                            n1 += 1;
                        }
                    }
                    let n2 = p2.write_call_run(&mut all, &run, first, max);
                    assert_eq!(
                        (n1, p1.bunches()),
                        (n2, p2.bunches()),
                        "mtu {mtu} lead {lead} fill {fill} first {first}"
                    );
                    assert_eq!(p1.finish_packet(&mut one), p2.finish_packet(&mut all));
                    assert_eq!(one.bytes(), all.bytes(), "mtu {mtu} lead {lead} fill {fill}");
                    cases += 1;
                }
            }
        }
    }
    assert!(cases > 1000);
}

/// Catches a whole open written straight into the packet that differs from the one built
/// through the writer's staging (`begin_bunch`, body, `end_bunch`): a role bit from the shared
/// encoding instead of the connection's, a wrong length, a GUID step from the wrong bunch, or a
/// count that leaves the next bunch stepping from the wrong GUID.
#[test]
fn a_whole_open_written_straight_equals_the_one_built() {
    use super::super::open::{OpenHeader, OpenKind};
    let opens = [
        OpenHeader::spawn(3),
        OpenHeader { class: 5, kind: OpenKind::Static("/Game/Map.Door_7".into()), autonomous: true },
        OpenHeader { class: 9, kind: OpenKind::SubObject { owner: NetGuid(70) }, autonomous: false },
    ];
    let mut records = BitWriter::new();
    for i in 0..37u64 {
        records.write_bits(i * 0x9e37 % 1021, 10);
    }
    for header in &opens {
        let encoded = header.encode();
        for autonomous in [false, true] {
            for bits in [0, 1, 63, 64, 65, records.len_bits()] {
                let (mut built, mut p1) = (BitWriter::new(), PacketWriter::new(1400));
                let (mut straight, mut p2) = (BitWriter::new(), PacketWriter::new(1400));
                for (out, p) in [(&mut built, &mut p1), (&mut straight, &mut p2)] {
                    p.begin_packet(out, Seq(4));
                    p.write_plain(out, NetGuid(40), &[0xa5], 0, 7);
                }
                p1.begin_bunch(NetGuid(44), Some(&encoded), autonomous);
                p1.body().write_from(records.bytes(), 0, bits);
                p1.end_bunch(&mut built, 0);
                p2.write_open_bunch(&mut straight, NetGuid(44), (&encoded, autonomous), records.bytes(), bits);
                // The next bunch steps from the open's GUID in both.
                for (out, p) in [(&mut built, &mut p1), (&mut straight, &mut p2)] {
                    assert_eq!(p.bunches(), 2);
                    p.write_plain(out, NetGuid(45), &[0x3c], 0, 6);
                    p.finish_packet(out);
                }
                assert_eq!(straight.bytes(), built.bytes(), "{header:?} autonomous {autonomous} bits {bits}");
            }
        }
    }
}
