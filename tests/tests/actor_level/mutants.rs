//! Tests added by the mutation pass over the actor level (priority, consider clock, relevancy,
//! budget, channels, dormancy, tear-off): each pins a rule of UE's that a surviving mutant
//! changed without any other test noticing.

use super::*;
use shadowrep::net::priority::priority_key;

/// The send key of `guid` in client `c`'s last frame.
fn key_of(l: &Level, c: usize, guid: NetGuid) -> u32 {
    l.decisions(c).sends.iter().find(|s| s.guid == guid).map(|s| s.priority).expect("sent this frame")
}

#[test]
fn priority_keys_round_to_the_nearest_integer() {
    // UE's integer priority is FMath::RoundToInt(65536 × GetNetPriority): half up, not truncated.
    assert_eq!(priority_key(1.5 / 65536.0), 2);
    assert_eq!(priority_key(2.75 / 65536.0), 3);
    assert_eq!(priority_key(1.25 / 65536.0), 1);
    assert_eq!(priority_key(3.0 + 0.5 / 65536.0), 3 * 65536 + 1);
}

#[test]
fn a_hidden_actor_gets_no_distance_terms_in_its_priority() {
    // AActor::GetNetPriority applies the distance and direction factors only to an actor that
    // is not hidden and has a root component: a hidden (colliding, so still relevant) actor far
    // behind the viewer keeps NetPriority × T, where a visible one there gets × 0.2.
    let mut l = Level::new(every_frame(), 1);
    let (hidden, hg) = l.spawn([-5000.0, 0.0, 0.0], 1);
    l.settings(hidden, |s| s.hidden = true);
    let (_, vg) = l.spawn([-5000.0, 10.0, 0.0], 1);
    l.step();
    assert!(l.client(0).has(hg), "hidden but colliding: relevant");
    // No channel yet: T = SpawnPrioritySeconds (1 s), NetPriority 1.
    assert_eq!(key_of(&l, 0, hg), 65536, "hidden: NetPriority × T");
    assert_eq!(key_of(&l, 0, vg), priority_key(0.2), "visible, far behind: × 0.2");
}

mod consider_clock {
    use shadowrep::ids::{Frame, NetGuid};
    use shadowrep::net::consider::{ConsiderClock, ServerTime, UpdateFrequency};

    const TICK: f64 = 1.0 / 30.0;

    fn at(frame: u32, now: f64) -> ServerTime {
        ServerTime { frame: Frame(frame), now, tick: TICK }
    }

    #[test]
    fn an_actor_is_due_only_strictly_after_its_next_update_time() {
        // UE's consider list skips an actor while `!bPendingNetUpdate && Time <= NextUpdateTime`.
        let c = ConsiderClock { next_update_time: 2.0, ..ConsiderClock::default() };
        assert!(!c.due(2.0), "at its next update time exactly: not yet");
        assert!(c.due(2.0 + 1e-9));
        assert!(ConsiderClock { pending_net_update: true, ..c }.due(0.0), "pending: due whatever the time");
    }

    #[test]
    fn adaptive_frequency_starts_at_the_fastest_whenever_an_actor_is_first_seen() {
        // First sight: OptimalNetUpdateDelta = 1 / NetUpdateFrequency, the silence measured from
        // then (an actor first seen 100 s into the game has not been silent for 100 s).
        let f = UpdateFrequency { net_update_frequency: 10.0, min_net_update_frequency: 2.0 };
        let mut c = ConsiderClock::default();
        c.considered(NetGuid(2), &at(3000, 100.0), &f, true);
        assert!((c.optimal_delta - 0.1).abs() < 1e-12, "{}", c.optimal_delta);
        assert!(c.next_update_time < 100.0 + TICK + 0.1 + 1e-9, "{}", c.next_update_time);
    }

    #[test]
    fn adaptive_back_off_starts_strictly_after_two_seconds_and_stops_at_the_slowest() {
        let f = UpdateFrequency { net_update_frequency: 10.0, min_net_update_frequency: 2.0 };
        // Last sent at 1 s, which set the interval to 0.3 s: exactly 2 s later UE's
        // `LastReplicateDelta > 2.0` is false and the interval stays.
        let sent = ConsiderClock { last_replicate_time: 1.0, optimal_delta: 0.3, ..ConsiderClock::default() };
        let mut c = sent;
        c.considered(NetGuid(2), &at(90, 3.0), &f, true);
        assert!((c.optimal_delta - 0.3).abs() < 1e-12, "{}", c.optimal_delta);
        // Long past 2 + 5 s: the slowest (1 / MinNetUpdateFrequency), no further.
        let mut c = sent;
        c.considered(NetGuid(2), &at(600, 20.0), &f, true);
        assert!((c.optimal_delta - 0.5).abs() < 1e-12, "{}", c.optimal_delta);
    }

    #[test]
    fn the_slowest_interval_is_never_faster_than_net_update_frequency() {
        // UE backs off towards max(1 / MinNetUpdateFrequency, 1 / NetUpdateFrequency): an actor of
        // 1 Hz with a MinNetUpdateFrequency of 2 Hz stays at 1 s.
        let f = UpdateFrequency { net_update_frequency: 1.0, min_net_update_frequency: 2.0 };
        let mut c = ConsiderClock::default();
        c.considered(NetGuid(2), &at(1, 0.0), &f, true);
        c.considered(NetGuid(2), &at(300, 10.0), &f, true);
        assert!((c.optimal_delta - 1.0).abs() < 1e-12, "{}", c.optimal_delta);
        c.replicated(13.0, &f, 1);
        assert!((c.optimal_delta - 1.0).abs() < 1e-12, "0.7 × 3 s clamped to the slowest: {}", c.optimal_delta);
    }
}

mod budget {
    use shadowrep::net::budget::{Budget, MAX_NET_TICK_RATE};

    #[test]
    fn a_tick_counts_at_most_one_tick_of_max_net_tick_rate() {
        // UE clamps a connection's BandwidthDeltaTime to 1 / min(tick rate, MaxNetTickRate = 120):
        // on a 240 Hz server a frame 1/60 s long (a hitch) still earns 1/120 s of net speed.
        assert_eq!(MAX_NET_TICK_RATE, 120.0);
        let mut b = Budget::new(6000, false);
        b.tick(1.0 / 60.0, 240.0);
        assert!((b.queued_bits + 6000.0 * 8.0 / 120.0).abs() < 1e-9, "{}", b.queued_bits);
        // At 30 Hz a tick earns 1/30 s.
        let mut b = Budget::new(6000, false);
        b.tick(1.0 / 20.0, 30.0);
        assert!((b.queued_bits + 6000.0 * 8.0 / 30.0).abs() < 1e-9, "{}", b.queued_bits);
    }
}

mod dormant_cells {
    use super::*;
    use shadowrep::net::Dormancy;

    /// A level whose one client views from the origin and a DormantAll thing at `at`, asleep.
    fn sleeper_at(at: [f32; 3]) -> (Level, ActorId, NetGuid) {
        sleeper(at, Dormancy::DormantAll)
    }

    /// The same with `dormancy`.
    fn sleeper(at: [f32; 3], dormancy: Dormancy) -> (Level, ActorId, NetGuid) {
        let mut l = Level::new(every_frame(), 1);
        always_due(&mut l);
        let (id, guid) = l.spawn(at, 10);
        l.driver.set_net_dormancy(l.class, &l.store, id, dormancy).unwrap();
        l.run(6);
        assert!(l.driver.is_asleep(l.class, id));
        (l, id, guid)
    }

    /// Adds a client with `viewers` and runs `frames` frames.
    fn join(l: &mut Level, viewers: &[Viewer], frames: usize) -> usize {
        let c = l.add_client();
        let conn = l.clients[c].0;
        l.driver.set_viewers(conn, viewers).unwrap();
        l.run(frames);
        c
    }

    #[test]
    fn a_connection_that_joins_gets_a_sleeper_just_inside_its_cull_distance_at_once() {
        // UE re-activates dormant actors for a new connection: it gets the actor relevant to it
        // in its first frames — here one in the farthest cell a cull distance reaches (15 000
        // units across the 10 000-unit cells from a viewer near its cell's edge).
        for (view, at) in [([0.0, 9_999.0, 0.0], [0.0, 24_990.0, 0.0]), ([9_999.0, 0.0, 0.0], [24_990.0, 0.0, 0.0])] {
            let (mut l, _, guid) = sleeper_at(at);
            let c = join(&mut l, &[viewer(view, None)], 3);
            assert!(l.client(c).has(guid), "viewer at {view:?}, sleeper at {at:?}");
            assert!(!l.client(0).has(guid), "too far from the origin");
        }
    }

    #[test]
    fn a_split_screen_connection_meets_the_sleepers_near_its_second_viewer() {
        // A connection's viewers are UE's connection and its children: a sleeper near any of
        // them is relevant — here near the second, in the same column of cells as the first.
        let (mut l, _, guid) = sleeper_at([500.0, 200_000.0, 0.0]);
        let c = join(&mut l, &[viewer([0.0; 3], None), viewer([0.0, 200_000.0, 0.0], None)], 3);
        assert!(l.client(c).has(guid));
        assert!(!l.client(0).has(guid));
    }

    #[test]
    fn a_dynamic_actor_with_initial_dormancy_is_met_by_a_connection_that_joins_later() {
        // Initial dormancy is for level actors; a spawned actor with it behaves as DormantAll
        // (UE): once asleep, a connection that joins near it still gets it.
        let (mut l, _, guid) = sleeper([500.0, 0.0, 0.0], Dormancy::Initial);
        assert!(l.client(0).is_dormant(guid), "opened, then closed for dormancy");
        let c = join(&mut l, &[viewer([0.0; 3], None)], 3);
        assert!(l.client(c).has(guid));
    }

    #[test]
    fn initial_dormancy_set_on_a_level_actor_already_replicated_goes_dormant_like_dormant_all() {
        // Initial dormancy keeps a level actor from ever opening only when it has not been
        // replicated yet; set on one whose channel is open, it goes dormant once what was sent
        // is acknowledged, as DormantAll does (UE), its last change delivered first.
        let mut l = Level::new(every_frame(), 1);
        always_due(&mut l);
        let id = l.store.spawn();
        l.move_to(id, [300.0, 0.0, 0.0]);
        l.store.set(id, HEALTH, &Value::U32(40)).unwrap();
        let door = "/Game/Maps/Arena.Arena:PersistentLevel.Door_7";
        let guid = l.driver.register_static_actor(l.class, &l.store, id, door).unwrap();
        l.clients[0].1.load_static_actor(door, l.class.0).unwrap();
        l.run(3);
        assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(40)));
        l.store.set(id, HEALTH, &Value::U32(41)).unwrap();
        l.driver.set_net_dormancy(l.class, &l.store, id, Dormancy::Initial).unwrap();
        l.run(6);
        assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(41)));
        assert!(l.client(0).is_dormant(guid));
        assert!(l.driver.is_asleep(l.class, id));
    }
}

#[test]
fn a_connection_without_viewers_finds_nothing_relevant_not_even_what_it_owns() {
    // UE asks relevancy only of a connection with a viewer (its player controller and view
    // target): `relevant_to_connection` for one with none says no, even for an actor the
    // connection owns. (The driver's relevancy index stops early for such a connection; the
    // reference frame asks this function.)
    use shadowrep::net::relevancy::{relevant_to_connection, ActorRelevancy};
    let none = |_: NetGuid| None;
    let a = ActorRelevancy::at(NetGuid(2), [100.0, 0.0, 0.0]);
    assert!(!relevant_to_connection(&a, true, &[], None, &none, &|_| None));
    assert!(relevant_to_connection(&a, true, &[viewer([1.0e9, 0.0, 0.0], None)], None, &none, &|_| None));
}

mod relevant_time {
    use super::*;
    use shadowrep::net::Action;

    const TICK: f64 = 1.0 / 30.0;

    /// A level with `relevant_timeout`, one client at the origin and a thing near it, after the
    /// frame that opened its channel; with the channel's relevant time (UE's `RelevantTime`:
    /// that frame's time plus up to half a second of jitter, the same for every run).
    fn opened(relevant_timeout: f64) -> (Level, ActorId, NetGuid, f64) {
        let mut l = Level::new(ActorLevelConfig { relevant_timeout, ..every_frame() }, 1);
        always_due(&mut l);
        let (id, guid) = l.spawn([100.0, 0.0, 0.0], 1);
        l.step();
        let info = l.driver.channel_info(l.clients[0].0).unwrap();
        let rt = info.iter().find(|c| c.guid == guid).expect("opened").relevant_time;
        assert!((TICK..TICK + 0.5).contains(&rt), "{rt}");
        (l, id, guid, rt)
    }

    fn closed(l: &Level, guid: NetGuid) -> bool {
        l.decisions(0).sends.iter().any(|s| s.guid == guid && s.action == Action::Closed)
    }

    #[test]
    fn a_relevant_actor_is_rechecked_exactly_at_the_recheck_time_and_keeps_its_channel() {
        // UE rechecks a channel's relevancy once `Time − RelevantTime >= min(RelevantTimeout, 1)`:
        // a relevant actor then stays recently relevant. A timeout under a second that ends
        // exactly on frame 20 makes that frame the recheck (and the timeout) at once.
        let (_, _, _, rt) = opened(5.0);
        let timeout = 20.0 * TICK - rt;
        assert!(timeout > 0.0 && timeout < 1.0);
        let (mut l, _, guid, again) = opened(timeout);
        assert_eq!(again, rt, "the same jitter");
        for frame in 2..=26 {
            l.step();
            assert!(!closed(&l, guid), "frame {frame}: a relevant actor's channel closed");
            assert!(!l.events(0).contains(&ClientEvent::Destroyed { guid }), "frame {frame}");
        }
    }

    #[test]
    fn a_channel_closes_exactly_when_the_relevant_timeout_has_passed() {
        // UE keeps a channel while `Time − RelevantTime < RelevantTimeout`: not at equality. A
        // timeout that ends exactly on frame 60 closes the channel of an actor gone out of range
        // on that frame, not later.
        let (_, _, _, rt) = opened(5.0);
        let timeout = 60.0 * TICK - rt;
        assert!(timeout > 1.0 && timeout < 2.0);
        let (mut l, id, guid, again) = opened(timeout);
        assert_eq!(again, rt);
        l.move_to(id, [1.0e6, 0.0, 0.0]);
        for frame in 2..60 {
            l.step();
            assert!(!closed(&l, guid), "frame {frame}: closed early");
        }
        l.step();
        assert!(closed(&l, guid), "frame 60: the timeout has passed");
    }

    /// An owner-only thing far away owned by client 0 (both clients view through a pawn), after
    /// the frame that opened it there; with its relevant time on client 0.
    fn owned_inventory(relevant_timeout: f64) -> (Level, ActorId, NetGuid, f64) {
        let mut l = Level::new(ActorLevelConfig { relevant_timeout, ..every_frame() }, 2);
        always_due(&mut l);
        let (inventory, g) = l.spawn([1.0e6, 0.0, 0.0], 1);
        l.settings(inventory, |s| s.only_relevant_to_owner = true);
        for c in 0..2 {
            let (_, pawn) = l.spawn([10.0 * c as f32, 0.0, 0.0], 0);
            let conn = l.clients[c].0;
            l.driver.set_viewers(conn, &[viewer([10.0 * c as f32, 0.0, 0.0], Some(pawn))]).unwrap();
        }
        l.driver.set_owner(l.class, &l.store, inventory, Some(l.clients[0].0), false).unwrap();
        l.step();
        let info = l.driver.channel_info(l.clients[0].0).unwrap();
        let rt = info.iter().find(|c| c.guid == g).expect("opened").relevant_time;
        (l, inventory, g, rt)
    }

    #[test]
    fn an_owner_only_channel_the_connection_no_longer_owns_closes_exactly_at_the_timeout() {
        // UE closes the channel of an owner-only actor the connection does not own once
        // `Time − RelevantTime >= RelevantTimeout`: at equality, not a frame later.
        let (_, _, _, rt) = owned_inventory(5.0);
        let timeout = 60.0 * TICK - rt;
        assert!(timeout > 1.0 && timeout < 2.0);
        let (mut l, inventory, g, again) = owned_inventory(timeout);
        assert_eq!(again, rt);
        assert!(l.client(0).has(g));
        l.driver.set_owner(l.class, &l.store, inventory, Some(l.clients[1].0), false).unwrap();
        for frame in 2..60 {
            l.step();
            assert!(l.client(0).has(g), "frame {frame}: closed early");
        }
        l.step();
        assert!(!l.client(0).has(g), "frame 60: the timeout has passed");
        assert!(l.client(1).has(g));
    }

    #[test]
    fn an_owner_only_channel_is_kept_while_the_connection_has_a_viewer_without_a_view_target() {
        // UE closes an unowned owner-only actor's channel at the timeout only if none of the
        // connection's viewers has a null view target (it may yet come to own the actor).
        let (mut l, inventory, g, _) = owned_inventory(5.0);
        let (a, b) = (l.clients[0].0, l.clients[1].0);
        l.driver.set_viewers(a, &[viewer([0.0; 3], None)]).unwrap();
        l.driver.set_owner(l.class, &l.store, inventory, Some(b), false).unwrap();
        l.store.set(inventory, HEALTH, &Value::U32(2)).unwrap();
        l.run(200);
        assert!(l.client(0).has(g), "kept past the relevant timeout");
        assert_eq!(l.client(0).value(g, HEALTH), Some(Value::U32(1)), "sent nothing more");
        assert_eq!(l.client(1).value(g, HEALTH), Some(Value::U32(2)));
    }
}

#[test]
fn a_silent_connections_open_channel_holds_a_dormant_actor_awake_until_it_is_settled_there() {
    // UE closes a channel for dormancy per connection, once everything sent on it is
    // acknowledged; the actor is dormant only once no connection holds it awake. A client not
    // heard from (not replicated to) keeps its open channel: the actor stays awake, and when the
    // client answers again it gets what it missed and then its dormancy close.
    let mut l = Level::new(every_frame(), 2);
    always_due(&mut l);
    let (id, guid) = l.spawn([500.0, 0.0, 0.0], 1);
    l.run(3);
    for _ in 0..50 {
        l.step_with_silent(1);
    }
    assert!(!l.decisions(1).ready, "client 1 not heard from for more than 1.5 s");
    l.store.set(id, HEALTH, &Value::U32(5)).unwrap();
    l.driver.set_net_dormancy(l.class, &l.store, id, shadowrep::net::Dormancy::DormantAll).unwrap();
    for _ in 0..10 {
        l.step_with_silent(1);
    }
    assert!(l.client(0).is_dormant(guid));
    assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(5)));
    assert!(!l.driver.is_asleep(l.class, id), "client 1's channel is open");
    l.run(6);
    assert_eq!(l.client(1).value(guid, HEALTH), Some(Value::U32(5)), "what it missed");
    assert!(l.client(1).is_dormant(guid));
    assert!(l.driver.is_asleep(l.class, id));
}

#[test]
fn an_actor_falls_asleep_in_the_frame_its_last_channel_closes_for_dormancy() {
    // Once every connection's channel is closed for dormancy (UE: the actor leaves the active
    // list once dormant on all connections), it is off the consider list in that very frame,
    // relevant or not.
    let mut l = Level::new(every_frame(), 1);
    always_due(&mut l);
    let (id, guid) = l.spawn([500.0, 0.0, 0.0], 10);
    l.driver.set_net_dormancy(l.class, &l.store, id, shadowrep::net::Dormancy::DormantAll).unwrap();
    for frame in 1..=10 {
        l.step();
        if l.client(0).is_dormant(guid) {
            assert!(l.driver.is_asleep(l.class, id), "frame {frame}: dormant on its only client, still awake");
            return;
        }
        assert!(!l.driver.is_asleep(l.class, id));
    }
    panic!("never dormant");
}

/// Client 0 stalled: it gets its packets and is heard from, but acknowledges nothing, while
/// `fillers` change every frame. Ticks until its window is full (the driver repeats packets),
/// and returns the frame step to go on with (it returns the tick's statistics).
fn stalled_window(l: &mut Level, fillers: Vec<ActorId>) -> impl FnMut(&mut Level) -> shadowrep::net::TickStats {
    let stalled = l.clients[0].0;
    let mut frame = 0u32;
    let mut tick = move |l: &mut Level| {
        frame += 1;
        for &f in &fillers {
            l.store.set(f, HEALTH, &Value::U32(frame)).unwrap();
        }
        let stats = l.driver.tick(&mut [&mut l.store]).unwrap();
        for (c, (conn, world)) in l.clients.iter_mut().enumerate() {
            for p in l.driver.take_packets(*conn).unwrap() {
                world.receive(&p).unwrap();
            }
            if c == 0 {
                l.driver.heard_from(*conn).unwrap();
            } else {
                l.driver.receive_feedback(*conn, &world.feedback()).unwrap();
            }
        }
        stats
    };
    for filled in 0.. {
        if l.driver.connection_stats(stalled).unwrap().repeats > 0 {
            break;
        }
        assert!(filled < 2_000, "the window never filled");
        tick(l);
    }
    tick
}

#[test]
fn a_tear_off_waits_for_a_stalled_client_at_most_a_window_of_frames() {
    // A tear-off whose last update a client's full window deferred waits for that client — but
    // only a window's worth of frames (256): a client stalled longer gets the close anyway, and
    // the driver stops considering the torn-off actor (it never replicates it again).
    let mut l = Level::new(every_frame(), 2);
    always_due(&mut l);
    let stalled = l.clients[0].0;
    l.driver.set_net_speed(stalled, 10_000_000).unwrap();
    let fillers: Vec<ActorId> = (0..40).map(|i| l.spawn([200.0 + i as f32, 0.0, 0.0], 0).0).collect();
    let (id, guid) = l.spawn([100.0, 0.0, 0.0], 5);
    l.run(3);
    // Client 0 gets its packets and is heard from, but acknowledges nothing.
    let mut tick = stalled_window(&mut l, fillers.clone());
    l.store.set(id, HEALTH, &Value::U32(0)).unwrap();
    l.driver.tear_off(l.class, &l.store, id).unwrap();
    for _ in 0..3 {
        tick(&mut l);
    }
    assert!(l.client(1).is_torn_off(guid), "client 1 got its last update and close");
    let mut due = Vec::new();
    for _ in 0..300 {
        due.push(tick(&mut l).due_actors);
    }
    assert!(due[..120].iter().all(|&d| d == fillers.len() + 1), "waited for client 0: {:?}", &due[..10]);
    assert!(due[280..].iter().all(|&d| d == fillers.len()), "then torn off: {:?}", &due[280..]);
}

#[test]
fn a_tear_off_does_not_wait_for_a_stalled_client_it_no_longer_serves() {
    // An owner-only actor torn off while its owner's window is full waits for that client —
    // until the game gives the actor to another player: the stalled client is not served any
    // more (its channel closes without the update, as UE skips it), so the tear-off ends at
    // once instead of waiting out the window (the mutation pass's survivor l4).
    let mut l = Level::new(every_frame(), 2);
    always_due(&mut l);
    let (stalled, other) = (l.clients[0].0, l.clients[1].0);
    l.driver.set_net_speed(stalled, 10_000_000).unwrap();
    let fillers: Vec<ActorId> = (0..40).map(|i| l.spawn([200.0 + i as f32, 0.0, 0.0], 0).0).collect();
    let (id, _) = l.spawn([100.0, 0.0, 0.0], 5);
    l.settings(id, |s| s.only_relevant_to_owner = true);
    l.driver.set_owner(l.class, &l.store, id, Some(stalled), false).unwrap();
    l.run(3);
    let mut tick = stalled_window(&mut l, fillers.clone());
    l.store.set(id, HEALTH, &Value::U32(0)).unwrap();
    l.driver.tear_off(l.class, &l.store, id).unwrap();
    let due: Vec<usize> = (0..5).map(|_| tick(&mut l).due_actors).collect();
    assert!(due.iter().all(|&d| d == fillers.len() + 1), "waits for its stalled owner: {due:?}");
    l.driver.set_owner(l.class, &l.store, id, Some(other), false).unwrap();
    let due: Vec<usize> = (0..10).map(|_| tick(&mut l).due_actors).collect();
    assert!(due[3..].iter().all(|&d| d == fillers.len()), "torn off once the owner changed: {due:?}");
}
