//! The lookup budget of reopen requests for what changed since the last tick
//! (`SinceTick::MAX_LOOKUPS`): a flood of requests — any feedback datagram may carry 64 — is
//! looked up in the lists of retiring slots, ended channels and woken copies at most twice a
//! feedback's worth a tick per connection, then costs a hash lookup each and is ignored. These
//! check the kernel's counters: the reference models no budget (a flood past it differs by
//! design).

use super::*;

// ---- 5. A flood of requests for GUIDs gone or never sent -------------------------------------

/// The actor of `reused_slot_reopened` gone between ticks, its slot reused; before the request
/// for it, `flood` feedbacks each ask for 64 GUIDs that name nothing. A request for an actor
/// that is not live is looked up in what changed since the last tick (the slots retiring, the
/// channels calls ended) at most `2 × 64` times a tick: past that the flood costs a hash lookup
/// each, and the genuine request of the same tick is ignored with it — the next tick looks again.
/// Returns the kernel's (honoured, ignored) reopen counts.
fn flooded_reopen(flood: usize) -> (u64, u64) {
    let mut l = Level::new(every_frame(), 1);
    always_due(&mut l);
    let (id, guid) = l.spawn([100.0, 0.0, 0.0], 1);
    for _ in 0..3 {
        l.step();
    }
    assert!(l.client(0).has(guid));
    let conn = l.clients[0].0;
    let fb = l.clients[0].1.feedback();
    reuse(&mut l, id);
    let nothing: Vec<NetGuid> = (0..64).map(|i| NetGuid(1_000_000 + 2 * i)).collect();
    for _ in 0..flood {
        l.driver.receive_feedback(conn, &with_reopens(&fb, &nothing)).expect("decodes");
    }
    l.driver.receive_feedback(conn, &with_reopen(&fb, guid)).expect("decodes");
    let stats = l.driver.connection_stats(conn).unwrap();
    (stats.reopens_honoured, stats.reopens_ignored)
}

#[test]
fn a_flood_of_reopen_requests_is_looked_up_a_bounded_number_of_times_a_tick() {
    // Control: the request alone is honoured (on the retiring rows).
    let (honoured, ignored) = flooded_reopen(0);
    assert_eq!((honoured, ignored), (1, 0));
    // One feedback's worth of nothing: still within the tick's lookups.
    let (honoured, ignored) = flooded_reopen(1);
    assert_eq!((honoured, ignored), (1, 64));
    // Two and more: the lookups are spent, the request is ignored with the flood.
    let (honoured, ignored) = flooded_reopen(20);
    assert_eq!((honoured, ignored), (0, 20 * 64 + 1));
}

// ---- 7. The lookup budget, exactly (a helper's mutation pass) -----------------------------

/// As [`flooded_reopen`], with `nothing` requests for GUIDs that name nothing (in feedbacks of
/// at most 64), then the genuine request; `then`: after it the tick, and a second actor's
/// request like the first (its slot reused between the tick and the request).
/// Returns the kernel's (honoured, ignored) reopen counts.
fn flooded_reopen_by(nothing: usize, then: bool) -> (u64, u64) {
    use shadowrep::wire::feedback::MAX_REOPENS;
    let mut l = Level::new(every_frame(), 1);
    always_due(&mut l);
    let (id, guid) = l.spawn([100.0, 0.0, 0.0], 1);
    let (id2, guid2) = l.spawn([150.0, 0.0, 0.0], 3);
    for _ in 0..3 {
        l.step();
    }
    assert!(l.client(0).has(guid) && l.client(0).has(guid2));
    let conn = l.clients[0].0;
    let fb = l.clients[0].1.feedback();
    reuse(&mut l, id);
    let nothing: Vec<NetGuid> = (0..nothing as u64).map(|i| NetGuid(1_000_000 + 2 * i)).collect();
    for chunk in nothing.chunks(MAX_REOPENS) {
        l.driver.receive_feedback(conn, &with_reopens(&fb, chunk)).expect("decodes");
    }
    l.driver.receive_feedback(conn, &with_reopen(&fb, guid)).expect("decodes");
    if then {
        l.step();
        let fb = l.clients[0].1.feedback();
        l.store.despawn(id2).unwrap();
        let (other, _) = l.spawn([250.0, 0.0, 0.0], 4);
        assert_eq!(other.index, id2.index, "the second slot reused");
        l.driver.receive_feedback(conn, &with_reopen(&fb, guid2)).expect("decodes");
    }
    let stats = l.driver.connection_stats(conn).unwrap();
    (stats.reopens_honoured, stats.reopens_ignored)
}

#[test]
fn a_tick_looks_up_exactly_two_feedbacks_worth_of_reopen_requests() {
    // 127 requests for nothing: the genuine one is the 128th lookup, still made.
    assert_eq!(flooded_reopen_by(127, false), (1, 127));
    // 128: the lookups are spent before it.
    assert_eq!(flooded_reopen_by(128, false), (0, 129));
}

#[test]
fn the_next_tick_looks_up_reopen_requests_again_after_a_flood() {
    // Control: no flood, both requests honoured on their retiring rows.
    assert_eq!(flooded_reopen_by(0, true), (2, 0));
    // The first tick's lookups spent by the flood; the next tick's request is looked up.
    assert_eq!(flooded_reopen_by(20 * 64, true), (1, 20 * 64 + 1));
}

/// A static actor's channel open and acknowledged; the game destroys it and spawns another
/// actor in its slot (its rows dropped at the call, the record of its channel's end kept:
/// `Closes::ending`); before the tick `flood` requests for GUIDs that name nothing, then one for
/// the door. Returns the kernel's (honoured, ignored) reopen counts.
fn static_destroyed_flooded(flood: usize) -> (u64, u64) {
    use shadowrep::wire::feedback::MAX_REOPENS;
    let (mut l, id, guid) = level_with_door("/Game/Maps/Arena.Arena:PersistentLevel.Door_76");
    for _ in 0..3 {
        l.step();
    }
    let conn = l.clients[0].0;
    let fb = l.clients[0].1.feedback();
    reuse(&mut l, id);
    let nothing: Vec<NetGuid> = (0..flood as u64).map(|i| NetGuid(1_000_000 + 2 * i)).collect();
    for chunk in nothing.chunks(MAX_REOPENS) {
        l.driver.receive_feedback(conn, &with_reopens(&fb, chunk)).expect("decodes");
    }
    l.driver.receive_feedback(conn, &with_reopen(&fb, guid)).expect("decodes");
    let stats = l.driver.connection_stats(conn).unwrap();
    (stats.reopens_honoured, stats.reopens_ignored)
}

#[test]
fn a_flood_spends_the_lookups_of_the_records_of_channels_calls_ended_too() {
    // Control: taken on the record of the channel's end.
    assert_eq!(static_destroyed_flooded(0), (1, 0));
    assert_eq!(static_destroyed_flooded(127), (1, 127));
    // Past the tick's lookups: ignored with the flood.
    assert_eq!(static_destroyed_flooded(128), (0, 129));
}

// ---- 9. Requests for a woken actor past the lookup budget (a helper's mutation pass) -------

/// Actor A goes dormant on client 0, B stays awake; the game wakes A (`SinceTick::woken`); then,
/// before the tick, `flood` requests for B (one honoured, the rest ignored: its open no longer
/// acknowledged) and one for A. Within the tick's lookups A's request is found among the woken
/// copies and ignored; past them it is taken as woken, ignored too — never honoured (the
/// client's copy is the dormant one until a frame replicates it).
/// Returns the kernel's (honoured, ignored) reopen counts.
fn woken_after_a_flood(flood: usize) -> (u64, u64) {
    use shadowrep::wire::feedback::MAX_REOPENS;
    let mut l = Level::new(every_frame(), 1);
    always_due(&mut l);
    let (a, ga) = l.spawn([100.0, 0.0, 0.0], 1);
    let (_, gb) = l.spawn([150.0, 0.0, 0.0], 2);
    l.driver.set_net_dormancy(l.class, &l.store, a, Dormancy::DormantAll).unwrap();
    let mut f = 0;
    while !l.client(0).is_dormant(ga) {
        l.step();
        f += 1;
        assert!(f < 20, "never dormant");
    }
    l.step();
    assert!(l.client(0).has(gb));
    let conn = l.clients[0].0;
    let fb = l.clients[0].1.feedback();
    l.driver.set_net_dormancy(l.class, &l.store, a, Dormancy::Awake).unwrap();
    let bs = vec![gb; flood];
    for chunk in bs.chunks(MAX_REOPENS) {
        l.driver.receive_feedback(conn, &with_reopens(&fb, chunk)).expect("decodes");
    }
    l.driver.receive_feedback(conn, &with_reopen(&fb, ga)).expect("decodes");
    let stats = l.driver.connection_stats(conn).unwrap();
    (stats.reopens_honoured, stats.reopens_ignored)
}

#[test]
fn a_request_for_an_actor_woken_since_the_tick_is_ignored_past_the_lookups_too() {
    // Within the lookups: found among the woken copies.
    assert_eq!(woken_after_a_flood(1), (1, 1));
    // Past them: taken as woken.
    assert_eq!(woken_after_a_flood(2 * 64), (1, 2 * 64));
}

// ---- 11. Requests for live actors spend no lookups (session 75: mutant m23) -----------------

/// `live` actors open at client 0; before the next tick one feedback's worth of requests at a
/// time asks for every one of them (a client that lost them all — or a forger), then, when
/// `gone`, a request for an actor whose slot the game reused since the tick. Nothing was woken,
/// so a live actor's request needs no look at what changed since the tick: it spends none of
/// the tick's lookups, however many come. Returns the kernel's (honoured, ignored) counts.
fn live_flood(live: usize, gone: bool) -> (u64, u64) {
    use shadowrep::wire::feedback::MAX_REOPENS;
    let mut l = Level::new(every_frame(), 1);
    always_due(&mut l);
    let guids: Vec<NetGuid> = (0..live).map(|i| l.spawn([100.0 + i as f32, 0.0, 0.0], 1).1).collect();
    let (id, guid) = l.spawn([50.0, 0.0, 0.0], 1);
    for _ in 0..8 {
        l.step();
    }
    assert!(guids.iter().chain([&guid]).all(|&g| l.client(0).has(g)), "every actor open at the client");
    let conn = l.clients[0].0;
    let fb = l.clients[0].1.feedback();
    if gone {
        reuse(&mut l, id);
    }
    for chunk in guids.chunks(MAX_REOPENS) {
        l.driver.receive_feedback(conn, &with_reopens(&fb, chunk)).expect("decodes");
    }
    if gone {
        l.driver.receive_feedback(conn, &with_reopen(&fb, guid)).expect("decodes");
    }
    let stats = l.driver.connection_stats(conn).unwrap();
    (stats.reopens_honoured, stats.reopens_ignored)
}

#[test]
fn requests_for_live_actors_spend_none_of_the_ticks_lookups() {
    // Past `SinceTick::MAX_LOOKUPS` (crate-private): two feedbacks' worth of requests.
    let past = 2 * shadowrep::wire::feedback::MAX_REOPENS + 12;
    // Every live actor asked for is opened again, past the lookup budget too.
    assert_eq!(live_flood(past, false), (past as u64, 0));
    // And a gone actor's request after them is still looked up (on its retiring rows).
    assert_eq!(live_flood(past, true), (past as u64 + 1, 0));
}
