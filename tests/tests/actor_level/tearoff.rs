//! Tear-off at the actor level: the last update, then the close, on each connection as it gets
//! to the actor — a connection that left it over, or whose full sequence window deferred it,
//! gets it later, and the tear-off waits for it.

use super::*;

/// A connection that does not get to a torn-off actor in its frame (here: not net-ready) leaves
/// it over like any other, and the tear-off waits for it: its client gets the last update later,
/// then the close. Meanwhile a connection that comes near the tearing actor opens no channel.
#[test]
fn a_tear_off_waits_for_a_connection_that_left_it_over_and_opens_no_channel() {
    let mut l = Level::new(every_frame(), 3);
    always_due(&mut l);
    let slow = l.clients[1].0;
    l.driver.set_viewers(l.clients[2].0, &[viewer([1.0e6, 0.0, 0.0], None)]).unwrap();
    let (id, guid) = l.spawn([100.0, 0.0, 0.0], 5);
    l.run(3);
    assert!(l.client(0).has(guid) && l.client(1).has(guid) && !l.client(2).has(guid));
    // Client 1's connection gets next to no allowance (a byte a second): once it sends, it is
    // not net-ready.
    l.driver.set_net_speed(slow, 1).unwrap();
    l.store.set(id, HEALTH, &Value::U32(6)).unwrap();
    l.step();
    assert_eq!(l.client(1).value(guid, HEALTH), Some(Value::U32(6)));
    l.store.set(id, HEALTH, &Value::U32(7)).unwrap();
    l.driver.tear_off(l.class, &l.store, id).unwrap();
    l.step();
    assert!(l.client(0).is_torn_off(guid));
    assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(7)));
    assert!(!l.client(1).is_torn_off(guid), "left over");
    // Client 2 comes near while the tear-off waits for client 1.
    l.driver.set_viewers(l.clients[2].0, &[viewer([0.0; 3], None)]).unwrap();
    l.run(3);
    assert!(!l.client(1).is_torn_off(guid));
    assert!(!l.client(2).has(guid), "a tearing actor opens no channel");
    l.driver.set_net_speed(slow, 100_000).unwrap();
    l.run(3);
    assert!(l.client(1).is_torn_off(guid));
    assert_eq!(l.client(1).value(guid, HEALTH), Some(Value::U32(7)), "its last update, then the close");
    assert!(!l.client(2).has(guid));
    // Done: never considered again.
    l.run(2);
    assert!(l.decisions(0).sends.iter().chain(&l.decisions(1).sends).all(|s| s.guid != guid));
}

/// A connection whose full sequence window deferred the torn-off actor's last update (its client
/// sends no feedback for a while) owes it: the tear-off waits, and the update goes out before the
/// close once the window opens (it had finished at once, and dropped the update).
#[test]
fn a_last_update_a_full_window_deferred_goes_out_before_the_close() {
    last_update_through_a_full_window(false, false);
}

/// The same for an owner-only actor the connection owns through its viewer (its owner actor is
/// the view target), as the frame serves it: the wait had asked only for the owning connection.
#[test]
fn a_deferred_last_update_of_an_actor_owned_through_the_viewer_goes_out_before_the_close() {
    last_update_through_a_full_window(true, false);
}

/// The same when the last change is in the actor's fast array alone: its delta, deferred, fills
/// no resend set, and the tear-off had finished without it.
#[test]
fn a_deferred_last_fast_array_delta_goes_out_before_the_close() {
    last_update_through_a_full_window(false, true);
}

fn last_update_through_a_full_window(owned_through_viewer: bool, fast_array: bool) {
    let (mut l, kind) = level_with_counts();
    let conn = l.clients[0].0;
    l.driver.set_net_speed(conn, 10_000_000).unwrap();
    let (id, guid) = l.spawn([100.0, 0.0, 0.0], 5);
    let counts = l.driver.add_fast_array(kind, guid, shadowrep::net::SubObjectCondition::None).unwrap();
    let item = l.driver.fast_array_mut(counts).unwrap().add(&1u32.to_le_bytes()).unwrap();
    let fillers: Vec<ActorId> = (0..40).map(|i| l.spawn([200.0 + i as f32, 0.0, 0.0], 0).0).collect();
    if owned_through_viewer {
        let (_, pawn) = l.spawn([300.0, 0.0, 0.0], 1);
        l.driver.set_owner_actor(l.class, &l.store, id, Some(pawn), None).unwrap();
        l.settings(id, |s| s.only_relevant_to_owner = true);
        l.driver.set_viewers(conn, &[viewer([0.0; 3], Some(pawn))]).unwrap();
    }
    l.run(3);
    assert!(l.client(0).has(guid));
    // Seldom due of itself: only the tear-off makes it considered.
    l.settings(id, |s| s.frequency.net_update_frequency = 0.2);
    // The client hears everything, the server nothing (kept net-ready): the window fills.
    let tick = |l: &mut Level, frame: u32, feedback: bool| stalled_tick(l, &fillers, frame, feedback);
    let frame = fill_the_window(&mut l, &fillers);
    if fast_array {
        l.driver.fast_array_mut(counts).unwrap().set(item, &2u32.to_le_bytes()).unwrap();
    } else {
        l.store.set(id, HEALTH, &Value::U32(0)).unwrap();
    }
    l.driver.tear_off(l.class, &l.store, id).unwrap();
    for f in 1..=3 {
        tick(&mut l, frame + f, false);
    }
    assert!(!l.client(0).is_torn_off(guid), "nothing got through the full window");
    for f in 4..=7 {
        tick(&mut l, frame + f, true);
    }
    assert!(l.client(0).is_torn_off(guid));
    if fast_array {
        assert_eq!(count(&l, counts, item), Some(2), "its last delta, then the close");
    } else {
        assert_eq!(count(&l, counts, item), Some(1));
        assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(0)), "its last update, then the close");
    }
}

/// A connection that still owes an owner-only actor it no longer owns is never served it (UE
/// skips the actor there): the tear-off does not wait for it, and its channel closes TornOff at
/// once (a wait on it had lasted until its relevancy lapsed).
#[test]
fn a_tear_off_does_not_wait_for_a_connection_that_cannot_be_served() {
    let mut l = Level::new(every_frame(), 1);
    always_due(&mut l);
    let conn = l.clients[0].0;
    let (id, guid) = l.spawn([100.0, 0.0, 0.0], 5);
    l.settings(id, |s| s.only_relevant_to_owner = true);
    l.driver.set_owner(l.class, &l.store, id, Some(conn), false).unwrap();
    l.run(3);
    assert!(l.client(0).has(guid));
    // A packet carrying a change is lost; the next one's arrival reports it: the row owes it.
    l.store.set(id, HEALTH, &Value::U32(6)).unwrap();
    l.driver.tick(&mut [&mut l.store]).unwrap();
    drop(l.driver.take_packets(conn).unwrap());
    l.move_to(id, [110.0, 0.0, 0.0]);
    l.step();
    // Nobody owns it now, and it is torn off.
    l.driver.set_owner(l.class, &l.store, id, None, false).unwrap();
    l.driver.tear_off(l.class, &l.store, id).unwrap();
    l.run(4);
    assert!(l.client(0).is_torn_off(guid), "closed without the update it cannot be served");
}

/// A static actor destroyed while its tear-off waits for a connection that left it over: a
/// client that got the TornOff close owns its copy, and the Destroyed close every client of a
/// static actor is sent leaves that copy alone; the client still waiting destroys its own.
#[test]
fn a_static_actor_destroyed_mid_tear_off_stays_with_the_clients_that_tore_it_off() {
    const DOOR: &str = "/Game/Maps/Arena.Arena:PersistentLevel.Door_9";
    let mut l = Level::new(every_frame(), 2);
    always_due(&mut l);
    let id = l.store.spawn();
    l.move_to(id, [100.0, 0.0, 0.0]);
    let guid = l.driver.register_static_actor(l.class, &l.store, id, DOOR).unwrap();
    for c in 0..2 {
        l.clients[c].1.load_static_actor(DOOR, l.class.0).unwrap();
    }
    l.run(3);
    assert!(l.client(0).has(guid) && l.client(1).has(guid));
    // Client 1's connection gets next to no allowance (a byte a second): once it sends, it is
    // not net-ready.
    l.driver.set_net_speed(l.clients[1].0, 1).unwrap();
    l.store.set(id, HEALTH, &Value::U32(6)).unwrap();
    l.step();
    l.store.set(id, HEALTH, &Value::U32(7)).unwrap();
    l.driver.tear_off(l.class, &l.store, id).unwrap();
    l.step();
    assert!(l.client(0).is_torn_off(guid));
    assert!(!l.client(1).is_torn_off(guid), "left over");
    l.store.despawn(id).unwrap();
    l.driver.set_net_speed(l.clients[1].0, 100_000).unwrap();
    l.run(3);
    assert!(l.client(0).has(guid), "client 0 owns its torn-off copy");
    assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(7)));
    assert!(!l.client(1).has(guid), "client 1 never tore it off: destroyed");
}

/// A frame in which client 0 gets its packets (the fillers changed) and its feedback goes back
/// (`feedback`) — or not: the server only hears from it (kept net-ready).
fn stalled_tick(l: &mut Level, fillers: &[ActorId], frame: u32, feedback: bool) {
    for &f in fillers {
        l.store.set(f, HEALTH, &Value::U32(frame)).unwrap();
    }
    l.driver.tick(&mut [&mut l.store]).expect("tick");
    let (conn, world) = &mut l.clients[0];
    for p in l.driver.take_packets(*conn).expect("live") {
        world.receive(&p).expect("a well-formed packet");
    }
    let fb = world.feedback();
    if feedback {
        l.driver.receive_feedback(*conn, &fb).expect("decodes");
    } else {
        l.driver.heard_from(*conn).expect("live");
    }
}

/// Stalled frames until client 0's sequence window is full; returns how many.
fn fill_the_window(l: &mut Level, fillers: &[ActorId]) -> u32 {
    let conn = l.clients[0].0;
    let mut frame = 0;
    while l.driver.connection_stats(conn).unwrap().repeats == 0 {
        frame += 1;
        assert!(frame < 2_000, "the window never filled");
        stalled_tick(l, fillers, frame, false);
    }
    frame
}

/// A tear-off that a stalled client's full window meets with nothing owed (the actor at rest)
/// is not held for that client: its close waits in the queue, and what the server changes on
/// the actor afterwards never reaches the client (the wait had lasted until the window opened,
/// and the later change went out before the close).
#[test]
fn a_tear_off_with_nothing_owed_is_not_held_by_a_full_window() {
    tear_off_behind_a_full_window(false);
}

/// The same actor with a last change in its fast array alone, met by the full window after
/// other actors filled it: the tear-off waits for the delta, which arrives before the close.
#[test]
fn a_fast_array_delta_held_by_a_window_already_full_is_waited_for() {
    tear_off_behind_a_full_window(true);
}

fn tear_off_behind_a_full_window(fast_delta: bool) {
    let (mut l, kind) = level_with_counts();
    l.driver.set_net_speed(l.clients[0].0, 10_000_000).unwrap();
    // Ranked after the fillers (same priority, a later GUID): their writes find the window full.
    let fillers: Vec<ActorId> = (0..40).map(|i| l.spawn([200.0 + i as f32, 0.0, 0.0], 0).0).collect();
    let (id, guid) = l.spawn([100.0, 0.0, 0.0], 5);
    let counts = l.driver.add_fast_array(kind, guid, shadowrep::net::SubObjectCondition::None).unwrap();
    let item = l.driver.fast_array_mut(counts).unwrap().add(&1u32.to_le_bytes()).unwrap();
    l.run(3);
    let frame = fill_the_window(&mut l, &fillers);
    if fast_delta {
        l.driver.fast_array_mut(counts).unwrap().set(item, &2u32.to_le_bytes()).unwrap();
    }
    l.driver.tear_off(l.class, &l.store, id).unwrap();
    for f in 1..=3 {
        stalled_tick(&mut l, &fillers, frame + f, false);
    }
    // The server's own copy changes after the tear-off.
    l.store.set(id, HEALTH, &Value::U32(99)).unwrap();
    for f in 4..=7 {
        stalled_tick(&mut l, &fillers, frame + f, true);
    }
    assert!(l.client(0).is_torn_off(guid));
    if fast_delta {
        assert_eq!(count(&l, counts, item), Some(2), "its last delta, then the close");
    } else {
        assert_eq!(count(&l, counts, item), Some(1));
        assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(5)), "torn off as it was");
    }
}

/// A level of things whose client knows a fast array kind of one `u32` per item (counts).
fn level_with_counts() -> (Level, shadowrep::net::FastArrayKind) {
    let mut l = Level::new(every_frame(), 0);
    always_due(&mut l);
    let items = Arc::new(shadowrep::fastarray::item_layout("Counts", PropType::U32).unwrap());
    let kind = l.driver.register_fast_array_kind(items.clone()).unwrap();
    l.fast_kinds.push(items);
    l.add_client();
    (l, kind)
}

/// Client 0's count of `item` in fast array `counts`, if it has it.
fn count(l: &Level, counts: NetGuid, item: shadowrep::fastarray::ReplicationId) -> Option<u32> {
    let bytes = l.client(0).fast_array(counts)?.item(item)?;
    Some(u32::from_le_bytes(bytes.try_into().ok()?))
}

/// A frame of the kernel and the UE-style reference side by side, as [`stalled_tick`]: both must
/// write client 0's packets byte for byte; the client's feedback goes to both, or neither hears
/// anything but that it is alive.
fn stalled_tick_beside(
    l: &mut Level,
    r: &mut shadowrep::reference::frame::ReferenceFrame,
    fillers: &[ActorId],
    frame: u32,
    feedback: bool,
) {
    for &f in fillers {
        l.store.set(f, HEALTH, &Value::U32(frame)).unwrap();
    }
    let packets = l.tick_beside(r, frame);
    let (conn, world) = &mut l.clients[0];
    for p in &packets {
        world.receive(p).expect("a well-formed packet");
    }
    let fb = world.feedback();
    if feedback {
        l.driver.receive_feedback(*conn, &fb).expect("decodes");
        r.receive_feedback(&l.driver, *conn, &fb).expect("decodes");
    } else {
        l.driver.heard_from(*conn).expect("live");
    }
}

/// A world for the tear-offs judged beside the reference: client 0 views with `pawn` as its
/// view target; an owner-only actor (`id`) owned by `owner(l, pawn)`'s answer, 40 fillers that
/// change every frame; the actor torn off once client 0's full window holds back its last
/// update (that frame's feedback going back if `answered`).
struct Deferred {
    l: Level,
    r: shadowrep::reference::frame::ReferenceFrame,
    fillers: Vec<ActorId>,
    frame: u32,
    id: ActorId,
    guid: NetGuid,
}

impl Deferred {
    fn new(owner: impl FnOnce(&mut Level, NetGuid) -> NetGuid, answered: bool) -> Deferred {
        let mut l = Level::new(every_frame(), 1);
        always_due(&mut l);
        let conn = l.clients[0].0;
        let r = shadowrep::reference::frame::ReferenceFrame::new(&l.driver, &mut [&mut l.store]).unwrap();
        l.driver.set_net_speed(conn, 10_000_000).unwrap();
        let (_, pawn) = l.spawn([300.0, 0.0, 0.0], 1);
        let owner = owner(&mut l, pawn);
        let (id, guid) = l.spawn([100.0, 0.0, 0.0], 5);
        l.driver.set_owner_actor(l.class, &l.store, id, Some(owner), None).unwrap();
        l.settings(id, |s| s.only_relevant_to_owner = true);
        l.driver.set_viewers(conn, &[viewer([0.0; 3], Some(pawn))]).unwrap();
        let fillers: Vec<ActorId> = (0..40).map(|i| l.spawn([200.0 + i as f32, 0.0, 0.0], 0).0).collect();
        let mut w = Deferred { l, r, fillers, frame: 0, id, guid };
        for _ in 0..3 {
            w.tick(true);
        }
        assert!(w.l.client(0).has(guid));
        w.l.settings(id, |s| s.frequency.net_update_frequency = 0.2);
        while w.l.driver.connection_stats(conn).unwrap().repeats == 0 {
            assert!(w.frame < 2_000, "the window never filled");
            w.tick(false);
        }
        w.l.store.set(id, HEALTH, &Value::U32(0)).unwrap();
        w.l.driver.tear_off(w.l.class, &w.l.store, id).unwrap();
        w.tick(answered);
        assert!(!w.l.client(0).is_torn_off(guid), "nothing got through the full window");
        w
    }

    /// The next frame beside the reference ([`stalled_tick_beside`]).
    fn tick(&mut self, feedback: bool) {
        self.frame += 1;
        stalled_tick_beside(&mut self.l, &mut self.r, &self.fillers, self.frame, feedback);
    }
}

/// A tearing owner-only actor, served through the viewer (its owner actor is the view target),
/// whose last update a full window deferred, despawned and its slot given to a new actor
/// before the next tick, after which the game moves the viewer off the actor's owner chain: the
/// kernel judges the tear-off as the slot is reused (still owed there: the despawn closes the
/// channel Destroyed), by the viewers of that call, and the reference alike, from the driver's
/// log of what the call read (`Level::reused_tearing`). Until session 73 the reference judged it
/// with the viewers of its tick (no longer served: TornOff), and the second frame after the
/// reuse wrote a different close (a helper's call-order review named the case; no random world
/// had hit it).
#[test]
fn a_tear_off_decided_as_its_slot_is_reused_is_decided_as_the_reference_decides_it() {
    let mut w = Deferred::new(|_, pawn| pawn, false);
    // Between two ticks: despawned, its slot reused, the viewer off its owner chain.
    w.l.store.despawn(w.id).unwrap();
    let (reused, _) = w.l.spawn([150.0, 0.0, 0.0], 9);
    assert_eq!(reused.index, w.id.index, "the slot is reused");
    let conn = w.l.clients[0].0;
    w.l.driver.set_viewers(conn, &[viewer([0.0; 3], None)]).unwrap();
    for _ in 0..6 {
        w.tick(true);
    }
    assert!(!w.l.client(0).has(w.guid), "destroyed: the despawn closed the channel its tear-off waited on");
}

/// A tearing owner-only actor served through its owner chain (its owner's owner is the view
/// target), whose last update a full window deferred, and the game breaks the chain before the
/// next tick: the kernel judges the tear-off at that tick's start with the chain as it is then
/// (no longer served: it ends, TornOff), and the reference alike — it read the chain's links as
/// its last frame left them.
#[test]
fn a_tear_off_waiting_on_an_owner_chain_the_game_breaks_is_decided_as_the_reference_decides_it() {
    let mut holder = None;
    // (The feedback after the deferred update opens the window.)
    let mut w = Deferred::new(
        |l, pawn| {
            let (id, guid) = l.spawn([310.0, 0.0, 0.0], 1);
            l.driver.set_owner_actor(l.class, &l.store, id, Some(pawn), None).unwrap();
            holder = Some(id);
            guid
        },
        true,
    );
    // Between two ticks: the chain broken above the actor's owner.
    let holder = holder.expect("made");
    w.l.driver.set_owner_actor(w.l.class, &w.l.store, holder, None, None).unwrap();
    for _ in 0..6 {
        w.tick(true);
    }
    assert!(w.l.client(0).is_torn_off(w.guid), "closed TornOff: no longer served, nothing owed");
}

/// The game tears an actor off in the frame it spawns it, before any tick gave it a NetGUID: the
/// call gives it one (until session 75 it was refused as `StaleActor`), and no client ever gets
/// it — a tearing actor opens no channel, as UE's torn-off actor opens none — while an actor
/// spawned beside it arrives; the reference beside decides alike.
#[test]
fn an_actor_torn_off_before_any_tick_saw_it_is_never_sent() {
    use shadowrep::reference::frame::ReferenceFrame;
    let mut l = Level::new(every_frame(), 1);
    always_due(&mut l);
    let mut r = ReferenceFrame::new(&l.driver, &mut [&mut l.store]).unwrap();
    let ragdoll = l.store.spawn();
    l.move_to(ragdoll, [100.0, 0.0, 0.0]);
    l.driver.tear_off(l.class, &l.store, ragdoll).unwrap();
    let guid = l.driver.guid_of(l.class, ragdoll).expect("the call gave it its GUID");
    let (_, beside) = l.spawn([120.0, 0.0, 0.0], 3);
    for frame in 1..=6 {
        let packets = l.tick_beside(&mut r, frame);
        l.deliver_beside(&mut r, &packets);
    }
    assert!(l.client(0).has(beside));
    assert!(!l.client(0).has(guid) && !l.client(0).is_torn_off(guid), "never sent");
    assert!(l.decisions(0).sends.iter().all(|s| s.guid != guid));
    // Torn off again: nothing to do; despawned from the store: refused.
    l.driver.tear_off(l.class, &l.store, ragdoll).unwrap();
    l.store.despawn(ragdoll).unwrap();
    assert_eq!(l.driver.tear_off(l.class, &l.store, ragdoll), Err(shadowrep::net::DriverError::StaleActor(ragdoll)));
}
