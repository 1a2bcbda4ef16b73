//! The reliability unit tests: the window across the wrap, feedback classified (stale, never
//! sent, ahead of the newest), which packets are carried, keep-alives, and settled entries
//! reaching their pairs in packet order.

use super::*;
use crate::net::connection::{pair, Connection};
use crate::wire::feedback::AckBits;

fn feedback(highest: u32, received: &[u32]) -> Feedback {
    let mut bits = AckBits::default();
    for &r in received {
        bits.set(highest.wrapping_sub(r));
    }
    Feedback { highest: Seq(highest), received: bits, reopen: Vec::new(), calls: Vec::new() }
}

fn send(r: &mut Reliability, n: u32) {
    for _ in 0..n {
        r.sent(1, 0, 0, 0, (0, 0));
    }
}

#[test]
fn settled_entries_reach_their_pairs_in_packet_order_whatever_the_table_order() {
    use crate::net::pairs::Pairs;
    let mut conn = Connection::new(false, Pairs::channels(), crate::wire::packet::MIN_MTU, Seq(1));
    let pair = |conn: &mut Connection, class, slot, flags, epoch| {
        let ps = conn.pairs.get_or_insert(class, slot);
        (ps.flags, ps.epoch) = (flags, epoch);
    };
    pair(&mut conn, 0, 3, pair::OPEN_SENT, 1);
    pair(&mut conn, 0, 9, pair::OPEN_SENT, 4);
    pair(&mut conn, 0, 11, pair::OPEN_SENT, 6);
    pair(&mut conn, 1, 2, pair::OPEN_ACKED, 0);
    pair(&mut conn, 2, 7, pair::OPEN_ACKED, 0);
    let entry = |class, slot, epoch, open, leaf| SentEntry {
        class,
        slot,
        guid_low: 0,
        epoch,
        flags: if open { entry::OPEN | entry::INITIAL } else { 0 },
        leaves: LeafMask::leaf(leaf),
    };
    let mut entries = Vec::new();
    let mut push = |e: SentEntry, delivered| {
        let order = entries.len() as u32;
        entries.push(SettledEntry { order, delivered, entry: e, earlier: false });
    };
    // Packet 1, lost, in send order: (2, 7), (0, 3)'s open, (1, 2), (0, 5) which has no pair.
    push(entry(2, 7, 0, false, 1), false);
    push(entry(0, 3, 1, true, 0), false);
    push(entry(1, 2, 0, false, 2), false);
    push(entry(0, 5, 0, false, 0), false);
    // Packet 2, delivered: (0, 3)'s open again, (0, 9)'s open of an older channel, (1, 2)
    // (an entry `apply_settled` drops, applied here to show it changes nothing). Packet 3,
    // lost: (0, 11)'s open of an older channel.
    push(entry(0, 3, 1, true, 0), true);
    push(entry(0, 9, 3, true, 0), true);
    push(entry(1, 2, 0, false, 2), true);
    push(entry(0, 11, 5, true, 0), false);
    apply_entries(&mut conn, &mut entries);
    assert!(entries.is_empty());
    let ps = |conn: &Connection, class, slot| *conn.pairs.get(class, slot).unwrap();
    // The lost open was sent again, then the second open was acknowledged: in that order
    // the open is acknowledged and not owed (the reverse would leave it `OPEN_SENT`).
    let a = ps(&conn, 0, 3);
    assert_eq!((a.flags, a.resend), (pair::OPEN_ACKED, LeafMask::leaf(0)));
    assert_eq!(ps(&conn, 0, 9).flags, pair::OPEN_SENT, "an older channel's open acknowledges nothing");
    assert_eq!(ps(&conn, 0, 11).flags, pair::OPEN_SENT, "an older channel's lost open is not this one's");
    assert_eq!(ps(&conn, 1, 2).resend, LeafMask::leaf(2));
    assert_eq!(ps(&conn, 2, 7).resend, LeafMask::leaf(1));
    assert!(conn.pairs.get(0, 5).is_none(), "a settled entry creates no pair");
    assert_eq!(conn.stats.leaves_resent, 4);
}

#[test]
fn the_window_holds_256_packets_past_the_newest_reported() {
    let mut r = Reliability::new(Seq(u32::MAX - 10));
    assert_eq!(r.room(), ACK_WINDOW);
    send(&mut r, ACK_WINDOW);
    assert_eq!(r.room(), 0);
    let top = (u32::MAX - 10).wrapping_add(100);
    let fb = feedback(top, &[top]);
    assert_eq!(r.classify(&fb), Intake::Settle);
    let mut settled = 0;
    while let Some((_, delivered)) = r.settle_next(&fb) {
        settled += 1;
        assert_eq!(delivered, settled == 101, "only the newest was received");
    }
    r.settled(&fb);
    assert_eq!(settled, 101);
    assert_eq!(r.room(), 101, "settling across the wrap frees the window");
}

#[test]
fn feedback_about_nothing_new_or_never_sent_is_refused() {
    let mut r = Reliability::new(Seq(1));
    assert_eq!(r.classify(&feedback(1 + ACK_WINDOW, &[])), Intake::NeverSent, "nothing sent yet");
    assert_eq!(r.classify(&feedback(0, &[])), Intake::Stale);
    send(&mut r, 10);
    for forged in [11 + ACK_WINDOW, 1000] {
        assert_eq!(r.classify(&feedback(forged, &[])), Intake::NeverSent, "{forged}");
    }
    for behind in [u32::MAX, 10 + (1 << 31)] {
        assert_eq!(r.classify(&feedback(behind, &[])), Intake::Stale, "{behind}: behind, by wrapping distance");
    }
    let fb = feedback(5, &[5, 4]);
    assert_eq!(r.classify(&fb), Intake::Settle);
    while r.settle_next(&fb).is_some() {}
    r.settled(&fb);
    assert_eq!(r.in_flight(), 5);
    for again in [5, 4, 1] {
        assert_eq!(r.classify(&feedback(again, &[again])), Intake::Stale, "{again} is settled");
    }
}

/// Feedback up to ACK_WINDOW past the newest packet sent (its client took a forged jump)
/// settles the packets sent exactly as the same bits said of our newest packet would, moves
/// acked to our newest packet and no further, and the packets it no longer reaches are lost.
#[test]
fn feedback_ahead_of_the_newest_settles_what_it_says_of_the_packets_sent() {
    let mut r = Reliability::new(Seq(u32::MAX - 5));
    assert_eq!(r.classify(&feedback(u32::MAX - 5, &[])), Intake::Ahead, "nothing sent yet");
    let idle = r.as_of_newest(&feedback(u32::MAX - 5, &[]));
    assert_eq!(r.settle_next(&idle).map(|s| s.0.seq), None, "settles nothing");
    send(&mut r, 10); // u32::MAX − 5 ..= 3, across the wrap
    let newest = 3u32;
    for (ahead, got) in [(1u32, vec![3, 1, u32::MAX]), (200, vec![2, 0]), (ACK_WINDOW - 2, vec![3, 2, 1])] {
        let highest = newest.wrapping_add(ahead);
        let fb = feedback(highest, &[&[highest][..], &got].concat());
        assert_eq!(r.classify(&fb), Intake::Ahead, "{ahead}");
        let rebased = r.as_of_newest(&fb);
        assert_eq!(rebased.highest, Seq(newest));
        let mut check = Reliability::new(Seq(u32::MAX - 5));
        send(&mut check, 10);
        while let Some((rec, delivered)) = check.settle_next(&rebased) {
            // Reached by the feedback's window: as it says; beyond it: lost.
            let back = highest.wrapping_sub(rec.seq.0);
            assert_eq!(delivered, back < ACK_WINDOW && got.contains(&rec.seq.0), "{ahead}: {:?}", rec.seq);
        }
        check.settled(&rebased);
        assert_eq!((check.in_flight(), check.room()), (0, ACK_WINDOW), "acked is our newest, not {highest}");
    }
    let edge = feedback(newest + ACK_WINDOW, &[newest + ACK_WINDOW]);
    assert_eq!(r.classify(&edge), Intake::Ahead, "a jump of exactly the window");
    let rebased = r.as_of_newest(&edge);
    assert_eq!(rebased.received, AckBits::default(), "reaches none of ours: all lost");
    assert_eq!(r.classify(&feedback(newest + ACK_WINDOW + 1, &[])), Intake::NeverSent);
}

#[test]
fn a_packet_is_carried_while_open_or_in_flight_and_not_after() {
    // Sequence numbers across the 16-bit wrap of the pairs' record.
    let mut r = Reliability::new(Seq(0x1_fffe));
    let low = |s: u32| s as u16;
    assert!(r.carries(low(0x1_fffe)), "the open packet");
    assert!(!r.carries(low(0x1_fffd)), "nothing in flight before it");
    send(&mut r, 3);
    for s in 0x1_fffe..=0x2_0001 {
        assert!(r.carries(low(s)), "{s:#x}: sent and not settled, or open");
    }
    assert!(!r.carries(low(0x1_fffd)));
    let mut bits = AckBits::default();
    bits.set(0);
    bits.set(1);
    let fb = Feedback { highest: Seq(0x1_ffff), received: bits, reopen: Vec::new(), calls: Vec::new() };
    while r.settle_next(&fb).is_some() {}
    r.settled(&fb);
    assert!(!r.carries(low(0x1_fffe)) && !r.carries(low(0x1_ffff)), "settled");
    assert!(r.carries(low(0x2_0000)) && r.carries(low(0x2_0001)), "still in flight, and open");
    // A packet 65 536 back shares its 16 bits with the open one: read as in flight.
    assert!(r.carries(low(0x1_0001)));
}

#[test]
fn keep_alives_are_due_only_with_content_in_flight() {
    let mut r = Reliability::new(Seq(1));
    r.idle_frames = 100;
    assert!(!r.keep_alive_due(6, false), "nothing in flight");
    r.sent(0, 0, 0, 0, (0, 0));
    r.idle_frames = 100;
    assert!(!r.keep_alive_due(6, false), "only a keep-alive in flight");
    r.sent(1, 0, 0, 0, (0, 0));
    r.idle_frames = 5;
    assert!(!r.keep_alive_due(6, false));
    r.idle_frames = 6;
    assert!(r.keep_alive_due(6, false));
    let mut quiet = Reliability::new(Seq(1));
    quiet.idle_frames = 5;
    assert!(!quiet.keep_alive_due(6, true));
    quiet.idle_frames = 6;
    assert!(quiet.keep_alive_due(6, true), "the actor level keeps a quiet client hearing from us");
}

#[test]
fn settling_the_content_stops_keep_alives() {
    let mut r = Reliability::new(Seq(1));
    r.sent(1, 0, 0, 0, (0, 0)); // 1: content
    r.sent(0, 0, 0, 0, (0, 0)); // 2: a keep-alive
    let fb = feedback(1, &[1]);
    assert_eq!(r.classify(&fb), Intake::Settle);
    while r.settle_next(&fb).is_some() {}
    r.settled(&fb);
    assert_eq!(r.in_flight(), 1);
    r.idle_frames = 100;
    assert!(!r.keep_alive_due(6, false), "only a keep-alive is left in flight");
    // A lost content packet is settled too: its content goes back to the pairs.
    r.sent(1, 0, 0, 0, (0, 0)); // 3: content
    r.idle_frames = 100;
    assert!(r.keep_alive_due(6, false));
    let fb = feedback(3, &[]);
    while r.settle_next(&fb).is_some() {}
    r.settled(&fb);
    assert_eq!(r.in_flight(), 0);
    r.sent(0, 0, 0, 0, (0, 0));
    r.idle_frames = 100;
    assert!(!r.keep_alive_due(6, false), "the lost packet's content is no longer in flight");
}
