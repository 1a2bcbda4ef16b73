//! When a client's reliable Server call goes again and when the server writes its acknowledgement:
//! the round trip and resend gap, late, lost and forged acknowledgements.

use crate::common::*;
use shadowrep::client::ClientWorld;
use shadowrep::ids::{NetGuid, Seq};
use shadowrep::link::LinkConfig;
use shadowrep::net::NetDriver;
use shadowrep::store::ClassStore;
use shadowrep::value::Value;
use shadowrep::wire::feedback::read_feedback;
use shadowrep::wire::open::EXPORT_GUID;
use shadowrep::wire::packet::{begin_packet, end_packet, write_bunch_after};
use shadowrep::wire::rpc::write_calls_ack_body;
use shadowrep::wire::BitWriter;
use shadowrep_tests::World;

/// A reliable Server call goes in one feedback while the server's acknowledgements come within
/// a round trip and a half, and again only once one has not — not in every feedback until it
/// comes, a round trip of copies (UE resends a reliable bunch only when it is lost). Feedback
/// reaches the server three feedbacks late here; the client measures that.
#[test]
fn a_reliable_server_call_goes_again_only_when_its_acknowledgement_is_late() {
    use std::collections::{HashMap, VecDeque};
    const DELAY: usize = 3;
    let (mut driver, mut store, mut client, conn, guid) = one_owned_pawn();
    // Each frame: tick, the packets applied, one feedback — delivered DELAY frames later, or
    // never when `lost`. Returns the reliable numbers the feedback carried.
    let mut in_flight: VecDeque<(Vec<u8>, bool)> = VecDeque::new();
    let mut frame = |driver: &mut NetDriver, client: &mut ClientWorld, store: &mut ClassStore, lost: bool| {
        driver.tick(&mut [store]).unwrap();
        for p in driver.take_packets(conn).unwrap() {
            client.receive(&p).unwrap();
        }
        let fb = client.feedback();
        let seqs: Vec<u16> = read_feedback(&fb).unwrap().calls.iter().filter_map(|c| c.seq).collect();
        in_flight.push_back((fb, lost));
        while in_flight.len() > DELAY {
            let (fb, lost) = in_flight.pop_front().unwrap();
            if !lost {
                driver.receive_feedback(conn, &fb).unwrap();
            }
        }
        seqs
    };
    for _ in 0..8 {
        frame(&mut driver, &mut client, &mut store, false);
    }
    assert!(client.has(guid));
    let mut copies: HashMap<u16, usize> = HashMap::new();
    let count = |copies: &mut HashMap<u16, usize>, seqs: Vec<u16>| {
        seqs.into_iter().for_each(|s| *copies.entry(s).or_default() += 1)
    };
    // The first call: no round trip known yet, it goes in every feedback until acknowledged.
    client.call_server_rpc(guid, USE, &[Value::U32(0)]).unwrap();
    for _ in 0..12 {
        count(&mut copies, frame(&mut driver, &mut client, &mut store, false));
    }
    let first = copies[&0];
    assert!(first > DELAY, "until the acknowledgement came: {first} copies");
    let rtt = client.server_calls_round_trip().expect("measured");
    assert!((DELAY as f64..=DELAY as f64 + 2.0).contains(&rtt), "round trip {rtt} feedbacks");
    // Then one call a frame: each in one feedback only.
    for n in 1..=30 {
        client.call_server_rpc(guid, USE, &[Value::U32(n)]).unwrap();
        count(&mut copies, frame(&mut driver, &mut client, &mut store, false));
    }
    for _ in 0..12 {
        count(&mut copies, frame(&mut driver, &mut client, &mut store, false));
    }
    assert!((1..=30).all(|n| copies[&(n as u16)] == 1), "one copy each: {copies:?}");
    assert_eq!(client.stats().server_calls_resent, first as u64 - 1);
    // A call whose feedback is lost goes again, once, after the resend gap — not at once; its
    // acknowledgement does not time the round trip (it cannot tell which copy it answers).
    let before = client.server_calls_round_trip();
    client.call_server_rpc(guid, USE, &[Value::U32(31)]).unwrap();
    let mut carried = vec![frame(&mut driver, &mut client, &mut store, true)];
    for _ in 0..12 {
        carried.push(frame(&mut driver, &mut client, &mut store, false));
    }
    let when: Vec<usize> = (0..carried.len()).filter(|&i| carried[i].contains(&31)).collect();
    assert_eq!(when.len(), 2, "sent, then resent once: {carried:?}");
    assert!(when[1] > DELAY, "resent after a round trip and more, not at once: feedback {}", when[1]);
    assert_eq!(client.server_calls_unacknowledged(), 0);
    assert_eq!(client.server_calls_round_trip(), before, "a resent call's acknowledgement is not timed");
    let taken = server_numbers(&driver.take_server_rpcs(), conn, USE);
    assert_eq!(taken, (0..=31).collect::<Vec<_>>(), "each once, in order");
}

/// One forged acknowledgement of the client's reliable Server calls (a plain session), naming
/// calls the server never got, does not leave the server's window waiting for them for good:
/// the server's own acknowledgement, naming the number it lacks, has the client send them again
/// (found by a helper's reading in session 56: every later reliable call was held at the server
/// and the client refused new ones from its 1 026th).
#[test]
fn one_forged_calls_ack_does_not_wedge_the_clients_reliable_server_calls() {
    use shadowrep::client::ClientError;
    let (mut driver, mut store, mut client, conn, guid) = one_owned_pawn();
    // A perfect link; `deliver`: whether the client's feedback reaches the server.
    let frame = |driver: &mut NetDriver, client: &mut ClientWorld, store: &mut ClassStore, deliver: bool| {
        driver.tick(&mut [store]).unwrap();
        for p in driver.take_packets(conn).unwrap() {
            let _ = client.receive(&p);
        }
        let fb = client.feedback();
        if deliver {
            driver.receive_feedback(conn, &fb).unwrap();
        }
    };
    for _ in 0..8 {
        frame(&mut driver, &mut client, &mut store, true);
    }
    assert!(client.has(guid));
    // Calls 0 and 1; their feedback is lost (nothing else: the next feedbacks would resend them
    // once their resend gap passed).
    client.call_server_rpc(guid, USE, &[Value::U32(0)]).unwrap();
    client.call_server_rpc(guid, USE, &[Value::U32(1)]).unwrap();
    let _lost = client.feedback();
    // A forged packet (the next number, a plain session): "the server expects call 2".
    let mut w = BitWriter::new();
    begin_packet(&mut w, Seq(client.highest_received().0 + 1));
    let mut body = BitWriter::new();
    write_calls_ack_body(&mut body, 2);
    write_bunch_after(&mut w, NetGuid(0), EXPORT_GUID, None, &body);
    end_packet(&mut w);
    client.receive(&w.into_bytes()).unwrap();
    assert_eq!(client.server_calls_unacknowledged(), 0, "the forged acknowledgement is believed");
    // Documented: calls 0 and 1 are not sent again. Now the honest client goes on calling, one
    // reliable call a frame, every feedback delivered, for 1 200 frames.
    let mut taken = Vec::new();
    let mut refused_from = None;
    for n in 2..1200u32 {
        match client.call_server_rpc(guid, USE, &[Value::U32(n)]) {
            Ok(()) => {}
            Err(ClientError::TooManyCalls) => {
                refused_from.get_or_insert(n);
            }
            Err(e) => panic!("{e:?}"),
        }
        frame(&mut driver, &mut client, &mut store, true);
        taken.extend(driver.take_server_rpcs().into_iter().map(|e| e.args[0].clone()));
    }
    for _ in 0..60 {
        frame(&mut driver, &mut client, &mut store, true);
        taken.extend(driver.take_server_rpcs().into_iter().map(|e| e.args[0].clone()));
    }
    assert_eq!(refused_from, None, "the client refused reliable Server calls");
    // Every call, the two the forged acknowledgement retired first, each once and in order.
    let want: Vec<Value> = (0..1200u32).map(Value::U32).collect();
    assert_eq!(taken, want);
    assert_eq!(client.server_calls_unacknowledged(), 0);
    assert!(client.stats().server_calls_restored >= 2);
}

/// The resend gap follows a round trip that grows past it: every call would go again before
/// its acknowledgement could come and Karn's rule would time none of them, so a feedback that
/// resends doubles the gap (TCP's back-off) until a call sent once is timed. Feedback 2 frames
/// late, then 12 (a latency rise; found by a helper's reading in session 56, the estimate stuck
/// at 3 and every call sent three times).
#[test]
fn the_resend_gap_follows_a_rising_round_trip() {
    use std::collections::{HashMap, VecDeque};
    let (mut driver, mut store, mut client, conn, guid) = one_owned_pawn();
    let mut in_flight: VecDeque<(usize, Vec<u8>)> = VecDeque::new();
    let mut now = 0usize;
    // One frame; the feedback reaches the server `delay` frames later. Returns its call numbers.
    let mut frame = |driver: &mut NetDriver, client: &mut ClientWorld, store: &mut ClassStore, delay: usize| {
        driver.tick(&mut [store]).unwrap();
        for p in driver.take_packets(conn).unwrap() {
            client.receive(&p).unwrap();
        }
        let fb = client.feedback();
        let seqs: Vec<u16> =
            shadowrep::wire::feedback::read_feedback(&fb).unwrap().calls.iter().filter_map(|c| c.seq).collect();
        in_flight.push_back((now + delay, fb));
        while in_flight.front().is_some_and(|(at, _)| *at <= now) {
            driver.receive_feedback(conn, &in_flight.pop_front().unwrap().1).unwrap();
        }
        now += 1;
        seqs
    };
    for _ in 0..8 {
        frame(&mut driver, &mut client, &mut store, 0);
    }
    let mut copies: HashMap<u16, usize> = HashMap::new();
    let mut n = 0u32;
    for _ in 0..60 {
        client.call_server_rpc(guid, USE, &[Value::U32(n)]).unwrap();
        n += 1;
        for s in frame(&mut driver, &mut client, &mut store, 2) {
            *copies.entry(s).or_default() += 1;
        }
    }
    let before = client.server_calls_round_trip().unwrap();
    let first_late = n;
    for _ in 0..400 {
        client.call_server_rpc(guid, USE, &[Value::U32(n)]).unwrap();
        n += 1;
        for s in frame(&mut driver, &mut client, &mut store, 12) {
            *copies.entry(s).or_default() += 1;
        }
    }
    let after = client.server_calls_round_trip().unwrap();
    let last: Vec<usize> = (n - 100..n - 20).map(|k| copies[&(k as u16)]).collect();
    let mean = last.iter().sum::<usize>() as f64 / last.len() as f64;
    assert!(before < 5.0, "round trip {before} feedbacks at delay 2");
    let _ = first_late;
    assert!(after > 8.0, "the estimate stayed at {after} feedbacks: the true round trip is ~12");
    assert!(mean < 1.5, "each call sent {mean} times on a loss-free link");
}

/// The server writes an acknowledgement of a client's reliable Server calls once for each number
/// it expects: while it flies and no new call comes, no other is written, however many frames
/// pass (a mutant writing one every frame while owed lived: the rule only costs bytes); a new
/// call gets its own at once, whatever flies (since session 56); once delivered, none.
#[test]
fn an_acknowledgement_of_a_clients_calls_is_written_once_for_each_number() {
    use shadowrep::wire::bunch::{decode_packet, Resolve};
    let (mut w, _, guids) = owned_world(1, 1, LinkConfig::perfect(0));
    let conn = w.clients[0].conn;
    // A frame whose packets are held back: how many carry an acknowledgement.
    let frame = |w: &mut World, held: &mut Vec<Vec<u8>>| {
        let layout = pawn();
        let mut stores: Vec<_> = w.stores.iter_mut().collect();
        w.driver.tick(&mut stores).unwrap();
        let packets = w.driver.take_packets(conn).unwrap();
        let acks = packets
            .iter()
            .filter(|p| decode_packet(p, |_, _| Ok(Resolve::Layout(&layout))).unwrap().calls_ack.is_some())
            .count();
        held.extend(packets);
        acks
    };
    w.clients[0].world.call_server_rpc(guids[0], USE, &[Value::U32(1)]).unwrap();
    let fb = w.clients[0].world.feedback();
    w.driver.receive_feedback(conn, &fb).unwrap();
    assert_eq!(server_numbers(&w.driver.take_server_rpcs(), conn, USE), vec![1]);
    let mut held = Vec::new();
    let acks: Vec<usize> = (0..4).map(|_| frame(&mut w, &mut held)).collect();
    assert_eq!(acks, vec![1, 0, 0, 0], "one acknowledgement in flight");
    // A second call while the first acknowledgement flies: acknowledged in the next packet.
    w.clients[0].world.call_server_rpc(guids[0], USE, &[Value::U32(2)]).unwrap();
    let fb = w.clients[0].world.feedback();
    w.driver.receive_feedback(conn, &fb).unwrap();
    assert_eq!(server_numbers(&w.driver.take_server_rpcs(), conn, USE), vec![2]);
    let acks: Vec<usize> = (0..3).map(|_| frame(&mut w, &mut held)).collect();
    assert_eq!(acks, vec![1, 0, 0], "the new number's acknowledgement, at once");
    for p in held.drain(..) {
        w.clients[0].world.receive(&p).unwrap();
    }
    assert_eq!(w.clients[0].world.server_calls_unacknowledged(), 0);
    let fb = w.clients[0].world.feedback();
    w.driver.receive_feedback(conn, &fb).unwrap();
    let acks: Vec<usize> = (0..3).map(|_| frame(&mut w, &mut held)).collect();
    assert_eq!(acks, vec![0, 0, 0], "delivered: owed no more");
}

/// A packet carrying the acknowledgement of a client's calls that is lost has the server write
/// it again in its next packet — not left to the client's resend a resend gap later (the
/// mutation pass's m8, a lost acknowledgement settled as delivered, lived on session 56's rule:
/// the calls still arrived, later).
#[test]
fn a_lost_acknowledgement_of_a_clients_calls_is_written_again_at_once() {
    use shadowrep::wire::bunch::{decode_packet, Resolve};
    let (mut driver, mut store, mut client, conn, guid) = one_owned_pawn();
    let layout = pawn();
    let has_ack = |p: &[u8]| decode_packet(p, |_, _| Ok(Resolve::Layout(&layout))).unwrap().calls_ack.is_some();
    for _ in 0..4 {
        driver.tick(&mut [&mut store]).unwrap();
        for p in driver.take_packets(conn).unwrap() {
            client.receive(&p).unwrap();
        }
        driver.receive_feedback(conn, &client.feedback()).unwrap();
    }
    // A first call acknowledged at once: the client's round trip is one feedback.
    client.call_server_rpc(guid, USE, &[Value::U32(6)]).unwrap();
    driver.receive_feedback(conn, &client.feedback()).unwrap();
    driver.tick(&mut [&mut store]).unwrap();
    for p in driver.take_packets(conn).unwrap() {
        client.receive(&p).unwrap();
    }
    assert_eq!(client.server_calls_round_trip(), Some(1.0));
    client.call_server_rpc(guid, USE, &[Value::U32(7)]).unwrap();
    driver.receive_feedback(conn, &client.feedback()).unwrap();
    assert_eq!(server_numbers(&driver.take_server_rpcs(), conn, USE), vec![6, 7]);
    // The packet with the acknowledgement is lost; a later one (a keep-alive: the world is
    // quiet) arrives, so the client's feedback reports the loss.
    driver.tick(&mut [&mut store]).unwrap();
    let lost = driver.take_packets(conn).unwrap();
    assert!(lost.iter().any(|p| has_ack(p)), "acknowledged in the next packet");
    let mut next = || {
        (0..200).find_map(|_| {
            driver.tick(&mut [&mut store]).unwrap();
            Some(driver.take_packets(conn).unwrap()).filter(|p| !p.is_empty())
        })
    };
    for p in next().expect("a keep-alive") {
        assert!(!has_ack(&p), "one acknowledgement while it flies");
        client.receive(&p).unwrap();
    }
    let fb = client.feedback();
    assert!(read_feedback(&fb).unwrap().calls.is_empty(), "the call is not due again yet");
    driver.receive_feedback(conn, &fb).unwrap();
    driver.tick(&mut [&mut store]).unwrap();
    let again = driver.take_packets(conn).unwrap();
    assert!(again.iter().any(|p| has_ack(p)), "written again once its packet is known lost");
    for p in &again {
        client.receive(p).unwrap();
    }
    assert_eq!(client.server_calls_unacknowledged(), 0);
    assert_eq!(client.stats().server_calls_resent, 0, "the client had no need to send it again");
}
