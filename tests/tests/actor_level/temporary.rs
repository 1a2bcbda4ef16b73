//! UE's `bNetTemporary` (`NetSettings::net_temporary`): a connection is sent a temporary actor's
//! initial bunch once and nothing more — its later changes never reach a client that has it, a
//! client that joins later gets the state of the moment once, an initial bunch lost is sent
//! again, its channel is never closed for relevancy, and it closes when the actor is destroyed;
//! torn off, set dormant or owned by a connection, nothing more goes where its open went; its
//! sublevel unloaded and loaded again, nothing comes back (UE's `SentTemporaries` outlives the
//! channel).

use super::*;
use shadowrep::link::{Link, LinkConfig};
use shadowrep::net::Action;

/// A level of one client with a temporary thing and a plain one beside it (the control: what
/// the plain one gets shows what the temporary one would have got).
fn pair_of_things(l: &mut Level) -> ((ActorId, NetGuid), (ActorId, NetGuid)) {
    let temporary = l.spawn([100.0, 0.0, 0.0], 7);
    l.settings(temporary.0, |s| s.net_temporary = true);
    let plain = l.spawn([120.0, 0.0, 0.0], 7);
    (temporary, plain)
}

/// Whether client `c`'s last frame sent anything of `guid`.
fn sent(l: &Level, c: usize, guid: NetGuid) -> bool {
    l.decisions(c).sends.iter().any(|s| s.guid == guid)
}

#[test]
fn a_temporary_actors_later_changes_never_reach_a_client_that_got_its_initial_bunch() {
    let mut l = Level::new(every_frame(), 1);
    always_due(&mut l);
    let ((tid, tg), (pid, pg)) = pair_of_things(&mut l);
    l.step();
    assert!(sent(&l, 0, tg), "its initial bunch goes");
    let opened = l.decisions(0).sends.iter().find(|s| s.guid == tg).map(|s| s.action);
    assert_eq!(opened, Some(Action::Replicated { opened: true }));
    l.run(2);
    assert_eq!(l.client(0).value(tg, HEALTH), Some(Value::U32(7)));
    for (frame, health) in (0..30).zip(100u32..) {
        l.store.set(tid, HEALTH, &Value::U32(health)).unwrap();
        l.store.set(pid, HEALTH, &Value::U32(health)).unwrap();
        l.move_to(tid, [100.0 + frame as f32, 0.0, 0.0]);
        l.step();
        assert!(!sent(&l, 0, tg), "frame {frame}: a temporary actor whose open went is skipped");
    }
    assert_eq!(l.client(0).value(pg, HEALTH), Some(Value::U32(129)), "the plain one is updated");
    assert_eq!(l.client(0).value(tg, HEALTH), Some(Value::U32(7)), "the temporary one never is");
    assert_eq!(l.client(0).value(tg, LOCATION), Some(Value::Vector([100.0, 0.0, 0.0])));
    // Its relevancy is not even asked (UE skips it before relevancy): it is in the relevant set,
    // yet no send decision names it.
    assert!(l.decisions(0).relevant.contains(&tg));
}

#[test]
fn a_client_that_connects_later_gets_the_current_state_once() {
    let mut l = Level::new(every_frame(), 1);
    always_due(&mut l);
    let ((tid, tg), _) = pair_of_things(&mut l);
    l.run(3);
    l.store.set(tid, HEALTH, &Value::U32(50)).unwrap();
    l.run(3);
    let late = l.add_client();
    l.run(3);
    assert_eq!(l.client(late).value(tg, HEALTH), Some(Value::U32(50)), "the state of the moment");
    assert_eq!(l.client(0).value(tg, HEALTH), Some(Value::U32(7)), "the first client keeps its own");
    l.store.set(tid, HEALTH, &Value::U32(60)).unwrap();
    l.run(10);
    assert_eq!(l.client(late).value(tg, HEALTH), Some(Value::U32(50)), "once: then nothing more");
    assert_eq!(l.client(0).value(tg, HEALTH), Some(Value::U32(7)));
    let spawned =
        l.events(late).iter().filter(|e| matches!(e, ClientEvent::Spawned { guid, .. } if *guid == tg)).count();
    assert_eq!(spawned, 1, "one open, one copy");
}

#[test]
fn an_initial_bunch_lost_is_sent_again_with_the_current_values() {
    let mut l = Level::new(every_frame(), 1);
    always_due(&mut l);
    let ((tid, tg), _) = pair_of_things(&mut l);
    // The downlink loses everything for the first two frames, then delivers all.
    let mut down = Link::new(LinkConfig { loss: 1.0, ..LinkConfig::perfect(0) });
    let mut opens = 0;
    for frame in 0..40 {
        if frame == 2 {
            down.set_config(LinkConfig::perfect(0));
            // Changed before the open goes again: the resent initial bunch carries it.
            l.store.set(tid, HEALTH, &Value::U32(42)).unwrap();
        }
        if frame == 20 {
            l.store.set(tid, HEALTH, &Value::U32(43)).unwrap();
        }
        l.step_through(&mut down);
        opens += l.decisions(0).sends.iter().filter(|s| s.guid == tg).count();
        if frame == 1 {
            assert!(!l.client(0).has(tg), "its open was lost");
        }
    }
    assert!(down.counts().1 >= 1, "the link lost the first frames' packets");
    assert!(opens >= 2, "sent on the first frame, and again once reported lost ({opens} sends)");
    assert!(opens <= 4, "not sent on every frame ({opens} sends)");
    assert!(l.client(0).has(tg));
    assert_eq!(l.client(0).value(tg, HEALTH), Some(Value::U32(42)), "the resent open, with the values of then");
}

#[test]
fn a_temporary_actor_is_not_closed_for_relevancy_and_closes_when_destroyed() {
    let mut l = Level::new(every_frame(), 1);
    always_due(&mut l);
    let ((tid, tg), (pid, pg)) = pair_of_things(&mut l);
    l.run(3);
    l.events(0);
    l.move_to(tid, [1.0e6, 0.0, 0.0]);
    l.move_to(pid, [1.0e6, 0.0, 0.0]);
    // Ten seconds out of every viewer's range: twice the relevant timeout.
    l.run(300);
    let events = l.events(0);
    assert!(events.contains(&ClientEvent::Destroyed { guid: pg }), "the plain one's channel timed out");
    assert!(!events.contains(&ClientEvent::Destroyed { guid: tg }), "the temporary one's did not");
    assert!(l.client(0).has(tg) && !l.client(0).has(pg));
    let conn = l.clients[0].0;
    assert_eq!(l.driver.channels(conn).unwrap().0, 1, "its channel stays open");
    // Destroyed on the server: its channel closes, with reason Destroyed.
    l.store.despawn(tid).unwrap();
    l.run(2);
    assert_eq!(l.events(0), vec![ClientEvent::Destroyed { guid: tg }]);
    assert!(!l.client(0).has(tg));
    assert_eq!(l.driver.channels(conn).unwrap().0, 0);
}

#[test]
fn a_temporary_actor_set_by_its_class_default_and_taken_back_by_an_override() {
    let mut l = Level::new(every_frame(), 1);
    let mut s = NetSettings { net_temporary: true, ..NetSettings::default() };
    s.frequency.net_update_frequency = 1.0e6;
    l.driver.set_class_settings(l.class, s).unwrap();
    let (a, ag) = l.spawn([100.0, 0.0, 0.0], 7);
    let (b, bg) = l.spawn([110.0, 0.0, 0.0], 7);
    l.settings(b, |s| s.net_temporary = false);
    l.run(3);
    l.store.set(a, HEALTH, &Value::U32(8)).unwrap();
    l.store.set(b, HEALTH, &Value::U32(8)).unwrap();
    l.run(3);
    assert_eq!(l.client(0).value(ag, HEALTH), Some(Value::U32(7)), "temporary by its class");
    assert_eq!(l.client(0).value(bg, HEALTH), Some(Value::U32(8)), "not by its own setting");
    assert!(l.driver.net_settings(l.class, a).unwrap().net_temporary);
}

#[test]
fn a_torn_off_temporary_actor_is_sent_nothing_more_and_its_channel_closes_torn_off() {
    // UE skips it before anything else: its tear-off's last update does not go where its open
    // went. When the tear-off ends its channel closes TornOff, as any torn-off actor's here
    // (UE would leave a skipped channel open until the actor is destroyed): the client keeps
    // its copy, as it was.
    let mut l = Level::new(every_frame(), 1);
    always_due(&mut l);
    let ((tid, tg), _) = pair_of_things(&mut l);
    l.run(3);
    l.events(0);
    l.store.set(tid, HEALTH, &Value::U32(1)).unwrap();
    l.driver.tear_off(l.class, &l.store, tid).unwrap();
    for _ in 0..5 {
        l.step();
        assert!(!sent(&l, 0, tg), "nothing more goes, not even the tear-off's update");
    }
    assert_eq!(l.events(0), vec![ClientEvent::TornOff { guid: tg }]);
    assert_eq!(l.client(0).value(tg, HEALTH), Some(Value::U32(7)), "its copy as it was sent");
    l.store.despawn(tid).unwrap();
    l.run(2);
    assert!(l.client(0).has(tg), "torn off: the client's own");
}

#[test]
fn a_temporary_actor_taken_by_a_connection_is_sent_nothing_more() {
    // Ownership (and the role it brings) is not sent again: UE's channel is never updated.
    let mut l = Level::new(every_frame(), 2);
    always_due(&mut l);
    let ((tid, tg), (pid, pg)) = pair_of_things(&mut l);
    l.run(3);
    let conn = l.clients[0].0;
    l.driver.set_owner(l.class, &l.store, tid, Some(conn), true).unwrap();
    l.driver.set_owner(l.class, &l.store, pid, Some(conn), true).unwrap();
    l.run(3);
    use shadowrep::client::NetRole;
    assert_eq!(l.client(0).role(pg), Some(NetRole::AutonomousProxy), "the plain one's new role goes");
    assert_eq!(l.client(0).role(tg), Some(NetRole::SimulatedProxy), "the temporary one's does not");
    assert_eq!(l.driver.channels(conn).unwrap().0, 2);
}

#[test]
fn a_temporary_actor_set_dormant_stays_awake_and_a_late_client_still_gets_it() {
    // Its channel is skipped where its open went, so it never settles there: never closed
    // Dormant, and the actor never falls asleep (the plain dormant one beside it does).
    use shadowrep::net::Dormancy;
    let mut l = Level::new(every_frame(), 1);
    always_due(&mut l);
    let ((tid, tg), (pid, _)) = pair_of_things(&mut l);
    l.run(3);
    l.driver.set_net_dormancy(l.class, &l.store, tid, Dormancy::DormantAll).unwrap();
    l.driver.set_net_dormancy(l.class, &l.store, pid, Dormancy::DormantAll).unwrap();
    let mut dormant_closes = 0;
    for _ in 0..20 {
        l.step();
        let d = l.decisions(0);
        assert!(!d.sends.iter().any(|s| s.guid == tg), "skipped, not closed Dormant");
        dormant_closes += d.sends.iter().filter(|s| s.action == Action::Dormant).count();
    }
    assert_eq!(dormant_closes, 1, "the plain one's channel closed Dormant");
    assert!(l.driver.is_asleep(l.class, pid) && !l.driver.is_asleep(l.class, tid));
    l.store.set(tid, HEALTH, &Value::U32(70)).unwrap();
    let late = l.add_client();
    l.run(3);
    assert_eq!(l.client(late).value(tg, HEALTH), Some(Value::U32(70)));
    assert_eq!(l.client(0).value(tg, HEALTH), Some(Value::U32(7)));
}

#[test]
fn a_temporary_actor_whose_sublevel_the_client_unloads_is_not_sent_again_when_it_loads_it() {
    use super::sublevels::{level, stream, HALL};
    let mut l = level(1);
    let ((tid, tg), (pid, pg)) = pair_of_things(&mut l);
    for id in [tid, pid] {
        l.driver.set_sublevel(l.class, &l.store, id, HALL).unwrap();
    }
    stream(&mut l, 0, &[], true);
    l.run(3);
    assert!(l.client(0).has(tg) && l.client(0).has(pg));
    l.events(0);
    stream(&mut l, 0, &[], false);
    l.step();
    let events = l.events(0);
    assert!(events.contains(&ClientEvent::Destroyed { guid: tg }), "the unload closes it: {events:?}");
    assert!(!l.client(0).has(tg));
    l.store.set(tid, HEALTH, &Value::U32(40)).unwrap();
    l.store.set(pid, HEALTH, &Value::U32(40)).unwrap();
    stream(&mut l, 0, &[], true);
    l.run(5);
    assert_eq!(l.client(0).value(pg, HEALTH), Some(Value::U32(40)), "the plain one comes back");
    // UE keeps the connection's `SentTemporaries` across the unload (it forgets an actor only
    // when the actor is destroyed): the temporary one is not sent again.
    assert!(!l.client(0).has(tg), "sent once to this connection, never again");
}
