//! Remote procedure calls at the actor level: a call reaches the connections with the actor's
//! channel open — relevancy, dormancy and reopened channels decide — and a saturated connection
//! still gets reliable calls, not unreliable ones.

use super::*;
use shadowrep::client::RpcEvent;
use shadowrep::net::Dormancy;
use shadowrep::reference::frame::ReferenceFrame;
use shadowrep_tests::random_world::CALLS;

const PING: &str = CALLS[0];
const SHOUT: &str = CALLS[1];

fn call(l: &mut Level, id: ActorId, name: &str, n: u32) {
    l.driver.call_rpc(l.class, &l.store, id, name, &[Value::U32(n)]).expect("a valid call");
}

/// Client `c`'s calls since the last look: (name, number).
fn calls(l: &mut Level, c: usize) -> Vec<(String, u32)> {
    let take = |e: RpcEvent| match e.args[..] {
        [Value::U32(n)] => (e.name, n),
        _ => panic!("one u32 argument"),
    };
    l.clients[c].1.take_rpcs().into_iter().map(take).collect()
}

fn dropped(l: &Level, c: usize) -> u64 {
    l.driver.connection_stats(l.clients[c].0).unwrap().rpcs_dropped
}

/// Calls not for client `c`: their actor had no open channel there.
fn without_channel(l: &Level, c: usize) -> u64 {
    l.driver.connection_stats(l.clients[c].0).unwrap().rpcs_without_channel
}

#[test]
fn a_call_reaches_the_connections_its_actor_is_relevant_to() {
    let mut l = Level::new(every_frame(), 2);
    always_due(&mut l);
    // Client 1 looks from beyond the cull distance.
    l.driver.set_viewers(l.clients[1].0, &[viewer([1.0e6, 0.0, 0.0], None)]).unwrap();
    let (id, _) = l.spawn([100.0, 0.0, 0.0], 1);
    l.run(3);
    call(&mut l, id, SHOUT, 1);
    call(&mut l, id, PING, 2);
    l.step();
    assert_eq!(calls(&mut l, 0), vec![(SHOUT.into(), 1), (PING.into(), 2)]);
    assert_eq!((calls(&mut l, 1), without_channel(&l, 1), dropped(&l, 1)), (vec![], 2, 0));
    // The viewer comes close: the channel opens, and the next calls reach it.
    l.driver.set_viewers(l.clients[1].0, &[viewer([0.0; 3], None)]).unwrap();
    l.step();
    call(&mut l, id, SHOUT, 3);
    call(&mut l, id, PING, 4);
    l.run(3);
    assert_eq!(calls(&mut l, 1), vec![(SHOUT.into(), 3), (PING.into(), 4)]);
    assert_eq!((without_channel(&l, 1), dropped(&l, 1)), (2, 0));
}

/// A departure from UE (README, "Calling"): UE's call finding the dormant actor's channel closed
/// opens one and sends it; here it goes only down an open channel.
#[test]
fn a_dormant_actors_calls_are_dropped_until_it_wakes() {
    let mut l = Level::new(every_frame(), 1);
    always_due(&mut l);
    let (id, guid) = l.spawn([100.0, 0.0, 0.0], 1);
    l.driver.set_net_dormancy(l.class, &l.store, id, Dormancy::DormantAll).unwrap();
    l.run(4);
    assert!(l.client(0).is_dormant(guid));
    call(&mut l, id, SHOUT, 1);
    call(&mut l, id, PING, 2);
    l.step();
    let not_sent = (without_channel(&l, 0), dropped(&l, 0));
    assert_eq!((calls(&mut l, 0), not_sent), (vec![], (2, 0)), "no call down a closed (dormant) channel");
    l.driver.set_net_dormancy(l.class, &l.store, id, Dormancy::Awake).unwrap();
    l.step();
    call(&mut l, id, SHOUT, 3);
    l.run(3);
    assert_eq!(calls(&mut l, 0), vec![(SHOUT.into(), 3)]);
}

#[test]
fn a_saturated_connection_gets_reliable_calls_and_not_unreliable_ones() {
    let mut l = Level::new(every_frame(), 1);
    always_due(&mut l);
    let (id, _) = l.spawn([100.0, 0.0, 0.0], 1);
    l.run(3);
    // Many more actors than a slow connection carries in a frame.
    for i in 0..400 {
        l.spawn([200.0 + i as f32, 0.0, 0.0], i);
    }
    l.driver.set_net_speed(l.clients[0].0, 2_000).unwrap();
    l.step();
    assert!(l.decisions(0).saturated);
    call(&mut l, id, SHOUT, 1);
    call(&mut l, id, PING, 2);
    l.step();
    assert!(l.decisions(0).saturated);
    assert_eq!(calls(&mut l, 0), vec![(SHOUT.into(), 1)]);
    assert_eq!((dropped(&l, 0), without_channel(&l, 0)), (1, 0));
}

/// A level whose `clients` connections are slow (3 000 B/s) and view 300 actors near them:
/// every frame saturates. The near actors.
fn crowded(clients: usize) -> (Level, Vec<ActorId>) {
    let mut l = Level::new(every_frame(), clients);
    always_due(&mut l);
    let near = (0..300).map(|i| l.spawn([100.0 + i as f32, 0.0, 0.0], i).0).collect();
    for c in 0..clients {
        l.driver.set_net_speed(l.clients[c].0, 3_000).unwrap();
    }
    (l, near)
}

/// A thing with `health`, relevant (within the cull distance) and ranked last (net priority
/// 0.001): a saturated frame's leftover.
fn far_last(l: &mut Level, health: u32) -> (ActorId, NetGuid) {
    let (id, guid) = l.spawn([9_000.0, 0.0, 0.0], health);
    l.settings(id, |s| s.net_priority = 0.001);
    (id, guid)
}

/// The UE-style reference beside a level, client 0 answering each frame through both
/// ([`beside_reference`]); `f` counts the frames.
struct Beside {
    r: ReferenceFrame,
    f: usize,
}

impl Beside {
    fn new(l: &mut Level) -> Beside {
        Beside { r: ReferenceFrame::new(&l.driver, &mut [&mut l.store]).expect("reference"), f: 0 }
    }

    /// `n` frames side by side.
    fn frames(&mut self, l: &mut Level, n: usize) {
        for _ in 0..n {
            beside_reference(l, &mut self.r, false, false, self.f);
            self.f += 1;
        }
    }
}

/// UE's `InternalProcessRemoteFunction`: a call finding no channel of its actor opens one and
/// replicates the actor at once, outside the budget. Here, on a saturated frame's leftovers: a
/// reliable multicast and a reliable Client call on relevant actors the frame left unopened
/// open their channels (`Action::OpenedForCall`, the frame still saturated) and reach the
/// client; an unreliable Client call — UE drops it on a connection that is not net-ready —
/// opens nothing and is lost. The kernel and the UE-style reference write the same packets all
/// along. (Before, each call found no channel: counted in `rpcs_without_channel`, never sent.)
#[test]
fn a_reliable_call_on_an_actor_a_saturated_frame_left_unopened_opens_its_channel() {
    use shadowrep::net::Action;
    const WHISPER: &str = CALLS[3];
    const HINT: &str = CALLS[2];
    let (mut l, _) = crowded(1);
    let conn = l.clients[0].0;
    let mut b = Beside::new(&mut l);
    b.frames(&mut l, 3);
    assert!(l.decisions(0).saturated);
    // Three relevant actors that rank last, each with a call.
    let ((shout, shout_g), (whisper, whisper_g), (hint, hint_g)) =
        (far_last(&mut l, 1), far_last(&mut l, 2), far_last(&mut l, 3));
    for id in [whisper, hint] {
        l.driver.set_owner(l.class, &l.store, id, Some(conn), true).unwrap();
    }
    call(&mut l, shout, SHOUT, 1);
    call(&mut l, whisper, WHISPER, 2);
    call(&mut l, hint, HINT, 3);
    b.frames(&mut l, 1);
    let d = l.decisions(0);
    assert!(d.saturated);
    for g in [shout_g, whisper_g, hint_g] {
        assert!(d.relevant.contains(&g), "relevant: {g:?}");
    }
    let action = |g| d.sends.iter().find(|s| s.guid == g).map(|s| (s.action, s.bits > 0));
    assert_eq!(action(shout_g), Some((Action::OpenedForCall, true)), "the reliable multicast's actor");
    assert_eq!(action(whisper_g), Some((Action::OpenedForCall, true)), "the reliable Client call's actor");
    assert_eq!(action(hint_g), None, "an unreliable Client call opens nothing on a saturated connection");
    assert_eq!(
        d.sends.iter().rev().take(2).map(|s| s.guid).collect::<Vec<_>>(),
        [whisper_g, shout_g],
        "after the frame's sends, in call order"
    );
    b.frames(&mut l, 4);
    assert_eq!(calls(&mut l, 0), vec![(SHOUT.into(), 1), (WHISPER.into(), 2)]);
    assert_eq!((without_channel(&l, 0), dropped(&l, 0)), (1, 0), "the unreliable call found no channel");
    assert_eq!(l.driver.connection_stats(conn).unwrap().channels_opened_for_calls, 2);
    assert!(l.client(0).actor(shout_g).is_some() && l.client(0).actor(whisper_g).is_some());
}

/// Channels open for calls where the calls reach, in call order: two saturated clients, three
/// left-over actors with calls made in the reverse of their spawn order — an unreliable
/// multicast (it opens the channel on both, and is dropped with the saturated frames' other
/// unreliable calls), a reliable Client call to client 1 (not client 0's to open) and a reliable
/// multicast.
#[test]
fn channels_open_for_calls_where_the_calls_reach_in_call_order() {
    use shadowrep::net::Action;
    const WHISPER: &str = CALLS[3];
    let (mut l, _) = crowded(2);
    l.run(3);
    let ((a, a_g), (b, b_g), (c, c_g)) = (far_last(&mut l, 1), far_last(&mut l, 2), far_last(&mut l, 3));
    l.driver.set_owner(l.class, &l.store, b, Some(l.clients[1].0), true).unwrap();
    call(&mut l, c, PING, 1);
    call(&mut l, b, WHISPER, 2);
    call(&mut l, a, SHOUT, 3);
    l.step();
    let opened = |l: &Level, k: usize| {
        let d = l.decisions(k);
        assert!(d.saturated, "client {k} saturated");
        d.sends.iter().filter(|s| s.action == Action::OpenedForCall).map(|s| s.guid).collect::<Vec<_>>()
    };
    assert_eq!(opened(&l, 0), [c_g, a_g], "client 0: the multicasts' actors, in call order");
    assert_eq!(opened(&l, 1), [c_g, b_g, a_g], "client 1: its Client call's actor too");
    l.run(4);
    assert_eq!(calls(&mut l, 0), vec![(SHOUT.into(), 3)]);
    assert_eq!(calls(&mut l, 1), vec![(WHISPER.into(), 2), (SHOUT.into(), 3)]);
    for k in 0..2 {
        assert_eq!(dropped(&l, k), 1, "client {k}: the unreliable multicast, on a saturated connection");
    }
}

/// A temporary actor (`bNetTemporary`) whose channel a call opened is sent once, as after any
/// open (UE's `SentTemporaries`): a change made right after its open is never sent — the kernel
/// and the reference alike.
#[test]
fn a_temporary_actor_opened_for_a_call_is_never_updated_after() {
    use shadowrep::net::Action;
    let (mut l, _) = crowded(1);
    let mut b = Beside::new(&mut l);
    b.frames(&mut l, 3);
    let (id, guid) = far_last(&mut l, 1);
    l.settings(id, |s| s.net_temporary = true);
    call(&mut l, id, SHOUT, 1);
    b.frames(&mut l, 1);
    assert!(l.decisions(0).sends.iter().any(|s| s.guid == guid && s.action == Action::OpenedForCall));
    // It changes at once; the connection drains the near actors' opens.
    l.store.set(id, HEALTH, &Value::U32(99)).unwrap();
    b.frames(&mut l, 120);
    assert!(!l.decisions(0).saturated);
    assert_eq!(calls(&mut l, 0), vec![(SHOUT.into(), 1)]);
    assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(1)), "never updated after its open");
}

/// A sub-object rides its owner's channel: a reliable multicast on a left-over sub-object opens
/// no channel of its own (nor its owner's), and finds none.
#[test]
fn a_call_on_a_left_over_sub_object_opens_no_channel() {
    use shadowrep::net::{Action, SubObjectCondition};
    let (mut l, _) = crowded(1);
    l.run(3);
    let (_, owner_g) = far_last(&mut l, 1);
    let sub = l.store.spawn();
    l.store.set(sub, LOCATION, &Value::Vector([9_000.0, 0.0, 0.0])).unwrap();
    let sub_g = l.driver.register_sub_object(l.class, &l.store, sub, owner_g, SubObjectCondition::None).unwrap();
    call(&mut l, sub, SHOUT, 1);
    l.step();
    let d = l.decisions(0);
    assert!(d.saturated && d.relevant.contains(&sub_g));
    assert!(
        !d.sends.iter().any(|s| s.action == Action::OpenedForCall),
        "{:?}",
        &d.sends[d.sends.len().saturating_sub(3)..]
    );
    assert_eq!(without_channel(&l, 0), 1);
}

/// A channel opened for a call is marked relevant for a while, as UE's frame marks the channel
/// a call opened before it: its actor leaving the viewer's range at once — past the first
/// seconds of the server's clock, and ranked first the next frame — keeps it for the relevant
/// timeout, and the reliable call waiting for the open's acknowledgement arrives. (Left at UE's
/// fresh channel's relevant time 0, the channel closed the next frame and the call was lost: a
/// review's find.)
#[test]
fn a_channel_opened_for_a_call_outlives_its_actor_leaving_at_once() {
    let (mut l, near) = crowded(1);
    // Past the relevant timeout (5 s at 30 Hz); then every near actor changes: the frame saturates.
    l.run(200);
    for (k, &n) in near.iter().enumerate() {
        l.store.set(n, HEALTH, &Value::U32(1_000 + k as u32)).unwrap();
    }
    let (id, guid) = far_last(&mut l, 1);
    call(&mut l, id, SHOUT, 1);
    l.step();
    assert!(l.decisions(0).sends.iter().any(|s| s.guid == guid && s.action == shadowrep::net::Action::OpenedForCall));
    // Out of range, and first in the next frame's order.
    l.move_to(id, [1.0e6, 0.0, 0.0]);
    l.settings(id, |s| s.net_priority = 1_000.0);
    l.run(4);
    assert_eq!(calls(&mut l, 0), vec![(SHOUT.into(), 1)]);
    assert!(l.client(0).actor(guid).is_some(), "its channel stays for the relevant timeout");
}

/// A channel opened while the connection's window is full owes its open; a reliable call on
/// its actor waits for it — as UE's reliable stream holds a call behind the channel's open —
/// and reaches the client once the window drains, where it was lost (no channel yet); an
/// unreliable one cannot go (the client has no actor to call).
#[test]
fn a_reliable_call_waits_for_an_open_the_full_window_held_back() {
    let mut l = Level::new(every_frame(), 1);
    always_due(&mut l);
    let conn = l.clients[0].0;
    let near: Vec<ActorId> = (0..200).map(|i| l.spawn([100.0 + i as f32, 0.0, 0.0], i).0).collect();
    let mut b = Beside::new(&mut l);
    b.frames(&mut l, 3);
    // The client hears every packet and answers none (the server still hears from it): the
    // window of packets in flight fills — the kernel's and the reference's alike.
    while l.driver.connection_stats(conn).unwrap().window_full_frames == 0 {
        assert!(b.f < 1_000, "the window fills");
        for (k, &n) in near.iter().enumerate() {
            l.store.set(n, HEALTH, &Value::U32((b.f * 1_000 + k) as u32)).unwrap();
        }
        beside_reference(&mut l, &mut b.r, true, false, b.f);
        l.driver.heard_from(conn).unwrap();
        b.f += 1;
    }
    let (id, guid) = l.spawn([50.0, 0.0, 0.0], 1);
    call(&mut l, id, SHOUT, 1);
    call(&mut l, id, PING, 2);
    b.frames(&mut l, 1);
    let d = l.decisions(0);
    let opened = d.sends.iter().find(|s| s.guid == guid).map(|s| (s.action, s.bits));
    assert_eq!(opened, Some((shadowrep::net::Action::Replicated { opened: true }, 0)), "opened, its open owed");
    assert_eq!(
        (without_channel(&l, 0), dropped(&l, 0)),
        (0, 1),
        "the reliable call waits, the unreliable one is dropped"
    );
    b.frames(&mut l, 6);
    assert_eq!(calls(&mut l, 0), vec![(SHOUT.into(), 1)]);
    assert!(l.client(0).actor(guid).is_some());
}

/// One frame of the kernel and the UE-style reference side by side: both tick and must write
/// client 0's packets byte for byte; the client gets them and, unless `silent`, answers — the
/// kernel with its feedback, the reference with the same bytes or, `perfect`, as a perfect
/// link ([`ReferenceFrame::acknowledge`]).
fn beside_reference(l: &mut Level, r: &mut ReferenceFrame, silent: bool, perfect: bool, frame: usize) {
    let packets = l.tick_beside(r, frame as u32);
    let (conn, world) = &mut l.clients[0];
    for p in &packets {
        world.receive(p).expect("a well-formed packet");
    }
    if !silent {
        let fb = world.feedback();
        l.driver.receive_feedback(*conn, &fb).expect("decodes");
        if perfect {
            r.acknowledge(*conn);
        } else {
            r.receive_feedback(&l.driver, *conn, &fb).expect("decodes");
        }
    }
}

/// A reliable call made while its client is silent past the ready timeout is numbered and waits
/// (nothing is written to a connection not ready); when the client answers, the reference's
/// perfect link (`ReferenceFrame::acknowledge`) acknowledges what flew — not that call — and
/// the kernel and the reference then write it alike (a mutant acknowledging every numbered call
/// dropped it from the reference's stream; mutation pass m9).
#[test]
fn a_call_waiting_out_a_silent_client_goes_from_the_kernel_and_the_reference_alike() {
    let mut l = Level::new(every_frame(), 1);
    always_due(&mut l);
    let (id, _) = l.spawn([100.0, 0.0, 0.0], 1);
    let mut r = ReferenceFrame::new(&l.driver, &mut [&mut l.store]).expect("reference");
    let mut f = 0;
    for _ in 0..3 {
        beside_reference(&mut l, &mut r, false, true, f);
        f += 1;
    }
    while l.decisions(0).ready {
        beside_reference(&mut l, &mut r, true, true, f);
        f += 1;
    }
    call(&mut l, id, SHOUT, 1);
    for _ in 0..3 {
        beside_reference(&mut l, &mut r, true, true, f);
        f += 1;
    }
    assert!(calls(&mut l, 0).is_empty(), "nothing is written to a client not ready");
    for _ in 0..3 {
        beside_reference(&mut l, &mut r, false, true, f);
        f += 1;
    }
    assert_eq!(calls(&mut l, 0), vec![(SHOUT.into(), 1)]);
}

/// A client floods its connection's room for Server calls; its next reliable call finds no room
/// and is not taken — nor by the reference, which keeps the same window from the same feedback
/// (the kernel tells it which calls it left): both write the same acknowledgements, none for
/// that call (a mutant whose reference took it acknowledged a call the kernel never ran, and
/// the packets differed; mutation pass s16).
#[test]
fn a_server_call_the_kernel_has_no_room_for_is_not_taken_by_the_reference_either() {
    use shadowrep::net::MAX_UNTAKEN_SERVER_RPCS;
    use shadowrep::wire::feedback::{write_feedback, write_feedback_calls, AckBits};
    use shadowrep::wire::rpc::{encode_call, RpcBunch};
    use shadowrep_tests::random_world::SERVER_CALLS;
    let mut l = Level::new(every_frame(), 1);
    always_due(&mut l);
    let (id, guid) = l.spawn([100.0, 0.0, 0.0], 1);
    let conn = l.clients[0].0;
    l.driver.set_owner(l.class, &l.store, id, Some(conn), true).unwrap();
    let mut r = ReferenceFrame::new(&l.driver, &mut [&mut l.store]).expect("reference");
    for f in 0..3 {
        beside_reference(&mut l, &mut r, false, false, f);
    }
    let layout = l.layout.clone();
    let bunch = |name: &str, seq: u16| {
        let index = layout.rpc_index(name).unwrap();
        let bits = encode_call(&layout, index, &[Value::U32(u32::from(seq))]).unwrap();
        let reliable = layout.rpcs[index].reliable;
        RpcBunch { target: guid, seq: Some(seq), bits: bits.len_bits(), call: bits.into_bytes(), reliable }
    };
    let highest = l.clients[0].1.highest_received();
    let send = |l: &mut Level, r: &mut ReferenceFrame, calls: &[RpcBunch]| {
        let mut w = shadowrep::wire::BitWriter::new();
        write_feedback(&mut w, highest, &AckBits([u64::MAX; 4]), &[]);
        write_feedback_calls(&mut w, calls);
        let fb = w.into_bytes();
        l.driver.receive_feedback(conn, &fb).unwrap();
        r.receive_feedback(&l.driver, conn, &fb).unwrap();
    };
    for d in 0..(MAX_UNTAKEN_SERVER_RPCS / 64) as u16 {
        let flood: Vec<_> = (0..64).map(|i| bunch(SERVER_CALLS[0], d * 64 + i)).collect();
        send(&mut l, &mut r, &flood);
    }
    send(&mut l, &mut r, &[bunch(SERVER_CALLS[1], 0)]);
    assert_eq!(l.driver.connection_stats(conn).unwrap().server_rpcs_no_room, 1);
    for f in 3..6 {
        beside_reference(&mut l, &mut r, false, false, f);
    }
    assert_eq!(l.driver.take_server_rpcs().len(), MAX_UNTAKEN_SERVER_RPCS);
}
