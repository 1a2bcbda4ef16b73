//! Forged server packets at a client: forged and resent reliable numbers never silence the
//! server's own calls, and what a client holds stays bounded.

use crate::common::*;
use shadowrep::ids::{NetGuid, Seq};
use shadowrep::link::LinkConfig;
use shadowrep::value::Value;
use shadowrep::wire::open::EXPORT_GUID;
use shadowrep::wire::packet::{begin_packet, end_packet, write_bunch_after};
use shadowrep::wire::rpc::{encode_call, write_rpc_body, MAX_RELIABLE_RPCS};
use shadowrep::wire::{BitReader, BitWriter};

#[test]
fn hostile_reliable_numbers_neither_lose_the_servers_calls_nor_grow_without_bound() {
    let g = NetGuid(2);
    // In order, out of order, a resend: each delivered once, in number order.
    let mut c = crafted_client(g, &[shouts(2, &[(1, g, 11)]), shouts(3, &[(0, g, 10), (1, g, 11)])]);
    assert_eq!(numbers(&c.take_rpcs(), SHOUT), vec![10, 11]);
    assert_eq!(c.stats().rpcs_stale, 1);
    // A forged call under the number of the server's next: both are delivered, the server's
    // resend of its own is not delivered twice.
    c.receive(&shouts(4, &[(2, g, 666)])).unwrap();
    c.receive(&shouts(5, &[(2, g, 12), (3, g, 13)])).unwrap();
    c.receive(&shouts(6, &[(2, g, 12), (2, g, 666)])).unwrap();
    assert_eq!(numbers(&c.take_rpcs(), SHOUT), vec![666, 12, 13]);
    assert_eq!(c.stats().rpcs_conflicts, 1);
    // Forged ahead of the server's, held: the server's calls under those numbers still arrive.
    c.receive(&shouts(7, &[(10, g, 999)])).unwrap();
    let server: Vec<(u32, NetGuid, u32)> = (4..=10).map(|n| (n, g, 10 + n)).collect();
    c.receive(&shouts(8, &server)).unwrap();
    assert_eq!(numbers(&c.take_rpcs(), SHOUT), vec![14, 15, 16, 17, 18, 19, 999, 20]);
    // A number past the window, and a third call under one number, are delivered at once: a
    // call is dropped only when its very bits came under its number (a resend).
    let (stale, conflicts) = (c.stats().rpcs_stale, c.stats().rpcs_conflicts);
    let far = (11 + MAX_RELIABLE_RPCS, g, 1);
    c.receive(&shouts(9, &[far, (20, g, 2), (20, g, 3), (20, g, 4), (20, g, 2), far])).unwrap();
    assert_eq!(numbers(&c.take_rpcs(), SHOUT), vec![1, 4, 1]);
    assert_eq!((c.stats().rpcs_stale, c.stats().rpcs_conflicts), (stale + 1, conflicts + 4));
    // A flood of forged numbers: at most two calls a number are held, the rest delivered at
    // once; the server's call under the number expected still comes first of the held ones.
    let (mut early, total) = (0, 200 * 20);
    for p in 0..200u32 {
        let calls: Vec<_> = (0..20u32).map(|i| ((p * 20 + i) % (MAX_RELIABLE_RPCS - 1) + 12, g, p)).collect();
        c.receive(&shouts(10 + p, &calls)).unwrap();
        early += c.take_rpcs().len();
    }
    assert!(early >= total - 2 * (MAX_RELIABLE_RPCS as usize - 1), "{early} delivered at once");
    c.receive(&shouts(300, &[(11, g, 42)])).unwrap();
    let flood = c.take_rpcs();
    assert_eq!(numbers(&flood[..1], SHOUT), vec![42], "the server's call came first");
    // Every call delivered: the flood's, the server's, and the two held under 20 before.
    assert_eq!(early + flood.len(), total + 1 + 2, "no call dropped");
    // A call naming an actor the client lacks, or one that does not decode: dropped, counted.
    let dropped = c.stats().rpcs_dropped;
    let mut w = BitWriter::new();
    begin_packet(&mut w, Seq(301));
    let mut body = BitWriter::new();
    let mut bad = BitWriter::new();
    bad.write_bits(3, 2); // call index 3 of 4, then a truncated record
    bad.write_bits(0b1, 1);
    write_rpc_body(&mut body, None, g, &bad);
    write_bunch_after(&mut w, NetGuid(0), EXPORT_GUID, None, &body);
    let mut body = BitWriter::new();
    write_rpc_body(&mut body, None, NetGuid(4000), &encode_call(&pawn(), 0, &[Value::U32(1)]).unwrap());
    write_bunch_after(&mut w, EXPORT_GUID, EXPORT_GUID, None, &body);
    end_packet(&mut w);
    c.receive(&w.into_bytes()).unwrap();
    assert_eq!(c.stats().rpcs_dropped, dropped + 2);
}

/// Two forged calls under the number of the server's next fill the number's two places: the
/// server's own call is delivered at once (a review found it dropped for good).
#[test]
fn two_forged_calls_under_the_servers_next_number_do_not_drop_its_call() {
    let g = NetGuid(2);
    let mut c = crafted_client(g, &[]);
    c.receive(&shouts(2, &[(0, g, 666), (0, g, 667)])).unwrap(); // forged
    c.receive(&shouts(3, &[(0, g, 10), (1, g, 11)])).unwrap(); // the server's
    let got = numbers(&c.take_rpcs(), SHOUT);
    assert!(got.contains(&10), "the server's call 0 was dropped: {got:?}");
}

/// Forged calls numbered in order are delivered and move the reliable window on: past
/// MAX_RELIABLE_RPCS the server's own calls are further than an honest server goes, and are
/// delivered at once (a review found them read as old resends and dropped for good).
#[test]
fn forged_calls_that_move_the_window_on_do_not_silence_the_servers() {
    let g = NetGuid(2);
    let mut c = crafted_client(g, &[]);
    let forged: Vec<u32> = (0..1100).collect();
    let mut seq = 2;
    for chunk in forged.chunks(50) {
        let calls: Vec<_> = chunk.iter().map(|&n| (n, g, 5000 + n)).collect();
        c.receive(&shouts(seq, &calls)).unwrap();
        seq += 1;
    }
    c.take_rpcs();
    c.receive(&shouts(seq, &[(0, g, 10), (1, g, 11), (2, g, 12)])).unwrap(); // the server's
    assert_eq!(numbers(&c.take_rpcs(), SHOUT), vec![10, 11, 12], "the server's calls were dropped");
}

/// A forger numbers two empty packets as the server's next two: the server's packet with that
/// number is dropped as late (its actors are asked for again: `ask_for_named`) and the client's
/// feedback acknowledges the number, so the server never sends its calls again — its reliable
/// calls go to the window all the same (a review found them lost for good).
#[test]
fn a_reliable_call_in_a_packet_whose_number_a_forger_took_is_not_lost() {
    let (mut w, ids) = world(1, 1, LinkConfig::perfect(0));
    for _ in 0..3 {
        w.step();
    }
    call(&mut w, ids[0], SHOUT, 7).unwrap();
    let conn = w.clients[0].conn;
    let mut stores: Vec<_> = w.stores.iter_mut().collect();
    w.driver.tick(&mut stores).unwrap();
    let packets = w.driver.take_packets(conn).unwrap();
    assert_eq!(packets.len(), 1);
    let seq = BitReader::new(&packets[0]).read_packed().unwrap() as u32;
    let client = &mut w.clients[0].world;
    for s in [seq, seq + 1] {
        let mut f = BitWriter::new();
        begin_packet(&mut f, Seq(s));
        end_packet(&mut f);
        client.receive(&f.into_bytes()).unwrap();
    }
    client.receive(&packets[0]).unwrap(); // late: dropped
    w.driver.receive_feedback(conn, &w.clients[0].world.feedback()).unwrap();
    for _ in 0..10 {
        w.step();
    }
    let got = numbers(&w.clients[0].world.take_rpcs(), SHOUT);
    assert_eq!(got, vec![7], "the server's reliable call was lost for good");
}

/// The server may resend a call from exactly `MAX_RELIABLE_RPCS` numbers behind the client's
/// window — every call of a full window delivered, every acknowledgement lost, the oldest sent
/// again: the client knows its bits under that number and drops it, as any resend (a mutant
/// that kept one number fewer delivered it twice).
#[test]
fn a_resend_from_a_full_window_behind_is_dropped_as_a_resend() {
    let g = NetGuid(2);
    let mut c = crafted_client(g, &[]);
    let all: Vec<u32> = (0..MAX_RELIABLE_RPCS).collect();
    let mut seq = 2;
    for chunk in all.chunks(50) {
        c.receive(&shouts(seq, &chunk.iter().map(|&n| (n, g, n)).collect::<Vec<_>>())).unwrap();
        seq += 1;
    }
    assert_eq!(numbers(&c.take_rpcs(), SHOUT), all);
    let last = MAX_RELIABLE_RPCS - 1;
    c.receive(&shouts(seq, &[(0, g, 0), (1, g, 1), (last, g, last)])).unwrap();
    assert!(c.take_rpcs().is_empty(), "a resend was delivered twice");
    assert_eq!((c.stats().rpcs_stale, c.stats().rpcs_conflicts), (3, 0));
}

/// A forged call and the server's held under one number are both delivered in their turn, and
/// the number keeps both their hashes: the server's resend of its call afterwards is dropped,
/// not delivered a second time (a mutant that kept only the first hash delivered it again).
#[test]
fn a_resend_of_a_call_held_beside_a_forged_one_is_not_delivered_twice() {
    let g = NetGuid(2);
    let mut c = crafted_client(g, &[]);
    c.receive(&shouts(2, &[(1, g, 666)])).unwrap(); // forged, held for number 0
    c.receive(&shouts(3, &[(1, g, 11)])).unwrap(); // the server's, held beside it
    c.receive(&shouts(4, &[(0, g, 10)])).unwrap();
    assert_eq!(numbers(&c.take_rpcs(), SHOUT), vec![10, 666, 11]);
    c.receive(&shouts(5, &[(1, g, 11), (1, g, 666), (0, g, 10)])).unwrap(); // resends
    assert!(c.take_rpcs().is_empty(), "a resend was delivered twice");
    assert_eq!(c.stats().rpcs_stale, 3);
}

/// A call's hash covers its target: a forged call taking the server's next number with the
/// server's very arguments on another actor does not make the server's call look like a resend
/// (a mutant hashing the bits alone dropped the server's call: a forger silenced it).
#[test]
fn a_forged_call_with_the_servers_bits_on_another_actor_does_not_silence_the_servers() {
    let g = NetGuid(2);
    let mut c = crafted_client(g, &[]);
    c.receive(&shouts(2, &[(0, NetGuid(4), 10)])).unwrap(); // forged: an actor the client lacks
    c.receive(&shouts(3, &[(0, g, 10)])).unwrap(); // the server's
    let got = c.take_rpcs();
    assert_eq!(numbers(&got, SHOUT), vec![10]);
    assert!(got.iter().all(|e| e.guid == g));
    assert_eq!((c.stats().rpcs_stale, c.stats().rpcs_conflicts), (0, 1));
}
