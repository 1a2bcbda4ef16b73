//! Relevancy through the driver: UE's rules, the grid and the links agree with the rules asked
//! one actor at a time.

use super::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use shadowrep::net::relevancy::{relevant_to_connection, ActorRelevancy};
use shadowrep::net::MAX_OWNER_DEPTH;
use std::collections::HashMap;

fn has(l: &Level, c: usize, g: NetGuid) -> bool {
    l.client(c).has(g)
}

#[test]
fn distance_decides_strictly_and_the_client_gets_only_what_is_near() {
    let mut l = Level::new(every_frame(), 1);
    let (_, near) = l.spawn([100.0, 0.0, 0.0], 1);
    let (_, far) = l.spawn([20_000.0, 0.0, 0.0], 2);
    let (_, edge) = l.spawn([15_000.0, 0.0, 0.0], 3);
    let (_, inside) = l.spawn([14_999.0, 0.0, 0.0], 4);
    l.run(2);
    assert!(has(&l, 0, near) && has(&l, 0, inside));
    assert!(!has(&l, 0, far), "beyond the cull distance");
    assert!(!has(&l, 0, edge), "exactly at the cull distance is not relevant (strictly less)");
    assert_eq!(l.client(0).value(near, HEALTH), Some(Value::U32(1)));
    let (conn, _) = l.clients[0];
    assert_eq!(l.driver.channels(conn).unwrap().0, 2, "channels only for the relevant actors");
}

#[test]
fn owner_only_always_relevant_and_hidden_actors() {
    let mut l = Level::new(every_frame(), 2);
    let far = [1.0e6, 0.0, 0.0];
    let (private, p) = l.spawn(far, 1);
    l.settings(private, |s| s.only_relevant_to_owner = true);
    let conn0 = l.clients[0].0;
    l.driver.set_owner(l.class, &l.store, private, Some(conn0), true).unwrap();
    let (always, a) = l.spawn(far, 2);
    l.settings(always, |s| s.always_relevant = true);
    let (ghost, g) = l.spawn([10.0, 0.0, 0.0], 3);
    l.settings(ghost, |s| {
        s.hidden = true;
        s.collision = false
    });
    let (solid, h) = l.spawn([10.0, 0.0, 0.0], 4);
    l.settings(solid, |s| s.hidden = true);
    let (rootless, r) = l.spawn([10.0, 0.0, 0.0], 5);
    l.settings(rootless, |s| s.has_root = false);
    l.run(2);
    assert!(has(&l, 0, p) && !has(&l, 1, p), "owner only: its owning connection alone");
    assert!(has(&l, 0, a) && has(&l, 1, a), "always relevant, however far");
    assert!(!has(&l, 0, g) && !has(&l, 1, g), "hidden without collision");
    assert!(has(&l, 0, h) && has(&l, 1, h), "hidden but colliding: the distance decides");
    assert!(!has(&l, 0, r), "no root component");
}

#[test]
fn an_owner_only_actor_given_to_another_connection_is_sent_nothing_more_and_closed_at_the_timeout() {
    // UE's PrioritizeActors skips an owner-only actor the connection does not own — nothing more
    // is sent to it — and closes its channel once its relevancy lapses (RelevantTimeout, 5 s).
    let mut l = Level::new(every_frame(), 2);
    always_due(&mut l);
    let (inventory, g) = l.spawn([1.0e6, 0.0, 0.0], 1);
    l.settings(inventory, |s| s.only_relevant_to_owner = true);
    let (a, b) = (l.clients[0].0, l.clients[1].0);
    // Viewers with a view target each (with a viewer still without one, UE keeps the channel).
    for (conn, at) in [(a, 0.0), (b, 10.0)] {
        let (_, pawn) = l.spawn([at, 0.0, 0.0], 0);
        l.driver.set_viewers(conn, &[viewer([at, 0.0, 0.0], Some(pawn))]).unwrap();
    }
    l.driver.set_owner(l.class, &l.store, inventory, Some(a), false).unwrap();
    l.run(3);
    assert!(has(&l, 0, g) && !has(&l, 1, g));
    l.driver.set_owner(l.class, &l.store, inventory, Some(b), false).unwrap();
    l.store.set(inventory, HEALTH, &Value::U32(2)).unwrap();
    l.run(3);
    assert_eq!(l.client(1).value(g, HEALTH), Some(Value::U32(2)), "the new owner has it");
    assert_eq!(l.client(0).value(g, HEALTH), Some(Value::U32(1)), "the old owner is sent nothing more");
    assert!(l.decisions(0).sends.iter().all(|s| s.guid != g));
    let mut closed_after = None;
    for frame in 0..200 {
        l.step();
        if !has(&l, 0, g) {
            closed_after = Some(frame);
            break;
        }
    }
    let frames = closed_after.expect("the old owner's channel closes");
    assert!((140..=160).contains(&frames), "closed at the relevant timeout, after {frames} frames");
    assert!(has(&l, 1, g));
}

#[test]
fn view_targets_owner_chains_instigators_and_owner_relevancy() {
    let mut l = Level::new(every_frame(), 2);
    let far = [1.0e6, 0.0, 0.0];
    let (_, pawn) = l.spawn(far, 1);
    let (weapon, w) = l.spawn(far, 2);
    let (scope, s) = l.spawn(far, 3);
    let (bullet, b) = l.spawn(far, 4);
    let (badge, bd) = l.spawn(far, 5);
    let (near_owner, no) = l.spawn([10.0, 0.0, 0.0], 6);
    l.driver.set_owner_actor(l.class, &l.store, weapon, Some(pawn), None).unwrap();
    l.driver.set_owner_actor(l.class, &l.store, scope, Some(w), None).unwrap();
    l.driver.set_owner_actor(l.class, &l.store, bullet, None, Some(pawn)).unwrap();
    l.driver.set_owner_actor(l.class, &l.store, badge, Some(no), None).unwrap();
    l.settings(badge, |s| s.use_owner_relevancy = true);
    let conn0 = l.clients[0].0;
    l.driver.set_viewers(conn0, &[viewer([0.0; 3], Some(pawn))]).unwrap();
    l.run(2);
    for (what, g) in [("view target", pawn), ("owned by it", w), ("owned through a chain", s), ("instigated", b)] {
        assert!(has(&l, 0, g), "{what}: relevant to the viewer of the pawn");
        assert!(!has(&l, 1, g), "{what}: not relevant to another viewer");
    }
    let _ = near_owner;
    assert!(has(&l, 0, bd) && has(&l, 1, bd), "owner relevancy: far, but its owner is near");
}

#[test]
fn links_to_actors_that_do_not_exist_make_nothing_relevant_and_cycles_end() {
    // The game's links are GUIDs the driver does not check when they are set (an owner may be
    // spawned or despawned later): a viewer whose view target and real viewer name nobody, an
    // owner or instigator never assigned or despawned since, and an owner cycle (a
    // misconfigured game) each answer "not owned, not relevant by that rule" — no panic, no
    // hang — while the distance still decides for everything else, and the same actors become
    // relevant once a link names a live, near actor.
    let mut l = Level::new(every_frame(), 1);
    let far = [1.0e6, 0.0, 0.0];
    let nobody = NetGuid(999_998);
    let (gone, gone_guid) = l.spawn(far, 9);
    let (follower, f) = l.spawn(far, 1);
    let (private, p) = l.spawn(far, 2);
    let (shot, s) = l.spawn(far, 3);
    let (cycle_a, ca) = l.spawn(far, 4);
    let (cycle_b, cb) = l.spawn(far, 5);
    let (_, near) = l.spawn([10.0, 0.0, 0.0], 6);
    l.driver.set_owner_actor(l.class, &l.store, follower, Some(nobody), None).unwrap();
    l.settings(follower, |s| s.use_owner_relevancy = true);
    l.driver.set_owner_actor(l.class, &l.store, private, Some(gone_guid), None).unwrap();
    l.settings(private, |s| s.only_relevant_to_owner = true);
    l.driver.set_owner_actor(l.class, &l.store, shot, None, Some(nobody)).unwrap();
    l.driver.set_owner_actor(l.class, &l.store, cycle_a, Some(cb), None).unwrap();
    l.driver.set_owner_actor(l.class, &l.store, cycle_b, Some(ca), None).unwrap();
    for who in [cycle_a, cycle_b] {
        l.settings(who, |s| s.use_owner_relevancy = true);
    }
    l.store.despawn(gone).unwrap();
    let conn = l.clients[0].0;
    // (Another GUID than the links': links compare GUIDs, so an owner link naming the view
    // target's own GUID is "owned by the view target" whether that actor exists or not — as
    // UE's pointer comparison is for an actor being destroyed.)
    let lost = Viewer { real_viewer: Some(NetGuid(999_996)), ..viewer([0.0; 3], Some(NetGuid(999_994))) };
    l.driver.set_viewers(conn, &[lost]).unwrap();
    l.run(3);
    assert!(has(&l, 0, near), "the distance still decides");
    for (what, g) in
        [("owner never assigned", f), ("owner despawned", p), ("instigator never assigned", s), ("owner cycle", ca)]
    {
        assert!(!has(&l, 0, g), "{what}: not relevant");
        assert!(!l.decisions(0).relevant.contains(&g), "{what}: not in the relevant set");
    }
    assert!(!has(&l, 0, cb));
    // The follower's owner link now names the near actor: relevant through it.
    l.driver.set_owner_actor(l.class, &l.store, follower, Some(near), None).unwrap();
    l.step();
    assert!(has(&l, 0, f), "owner relevancy through a live, near owner");
}

#[test]
fn owner_relevancy_asks_an_owner_only_owner_its_rules_not_its_filter() {
    // UE hands the question to the owner's `IsNetRelevantFor`, whose first rule (always
    // relevant) comes before its owner-only rule; the owner-only filter of `PrioritizeActors`
    // belongs to the actor a connection considers. So an always-relevant, owner-only owner that
    // this connection does not own still makes its follower relevant here.
    let mut l = Level::new(every_frame(), 1);
    let (owner, o) = l.spawn([1.0e6, 0.0, 0.0], 1);
    let (follower, f) = l.spawn([1.0e6, 0.0, 0.0], 2);
    l.settings(owner, |s| {
        s.only_relevant_to_owner = true;
        s.always_relevant = true;
    });
    l.settings(follower, |s| s.use_owner_relevancy = true);
    l.driver.set_owner_actor(l.class, &l.store, follower, Some(o), None).unwrap();
    l.run(2);
    assert!(!has(&l, 0, o), "the owner-only owner is not this connection's");
    assert!(has(&l, 0, f), "its follower is relevant by the owner's rules");
}

#[test]
fn owner_relevancy_asks_the_owners_class_hook() {
    // UE's owner relevancy calls the owner's `IsNetRelevantFor`, which a game overrides: the
    // owner's class hook answers for it, near or far, due or not.
    let mut l = Level::new(every_frame(), 1);
    let (owner, o) = l.spawn([1.0e6, 0.0, 0.0], 1);
    let (near_owner, n) = l.spawn([10.0, 0.0, 0.0], 2);
    let (follower, f) = l.spawn([1.0e6, 0.0, 0.0], 3);
    let (shunned, sf) = l.spawn([10.0, 0.0, 0.0], 4);
    let hook: shadowrep::net::relevancy::RelevancyHook = Arc::new(move |a, _| {
        if a.guid == o {
            Some(true)
        } else if a.guid == n {
            Some(false)
        } else {
            None
        }
    });
    l.driver.set_relevancy_hook(l.class, Some(hook)).unwrap();
    for (who, whose) in [(follower, o), (shunned, n)] {
        l.settings(who, |s| s.use_owner_relevancy = true);
        l.driver.set_owner_actor(l.class, &l.store, who, Some(whose), None).unwrap();
    }
    // The owners are seldom due: their answer comes from the hook through the links.
    l.settings(owner, |s| s.frequency.net_update_frequency = 0.01);
    l.settings(near_owner, |s| s.frequency.net_update_frequency = 0.01);
    l.run(3);
    assert!(has(&l, 0, f), "far, but its owner's hook says relevant");
    assert!(!has(&l, 0, sf), "near, but its owner's hook says not");
}

#[test]
fn a_class_hook_overrides_ues_rules_and_split_screen_viewers_count() {
    let mut l = Level::new(every_frame(), 1);
    let (_, hidden_by_hook) = l.spawn([10.0, 0.0, 0.0], 1);
    let (_, other) = l.spawn([20.0, 0.0, 0.0], 2);
    let (_, by_child) = l.spawn([50_000.0, 0.0, 0.0], 3);
    let hook: shadowrep::net::RelevancyHook = Arc::new(move |a, _| (a.guid == hidden_by_hook).then_some(false));
    l.driver.set_relevancy_hook(l.class, Some(hook)).unwrap();
    let conn = l.clients[0].0;
    l.driver.set_viewers(conn, &[viewer([0.0; 3], None), viewer([50_100.0, 0.0, 0.0], None)]).unwrap();
    l.run(2);
    assert!(!has(&l, 0, hidden_by_hook), "the hook said no");
    assert!(has(&l, 0, other), "the hook left it to UE's rules");
    assert!(has(&l, 0, by_child), "near the second (split-screen) viewer");
}

/// What the test set for one actor (written apart from the driver).
#[derive(Clone, Copy)]
struct Known {
    id: ActorId,
    rel: ActorRelevancy,
    owner_conn: Option<usize>,
}

#[test]
fn the_index_equals_ues_rules_asked_one_actor_at_a_time_on_random_worlds() {
    // With owner chains (the default) an actor's owning connection is the first one up its
    // chain, as UE's `GetNetConnection` walks `Owner`; without, only `set_owner` makes one.
    for (seed, chains) in (0..4u64).flat_map(|s| [(s, true), (s, false)]) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut l = Level::new(ActorLevelConfig { owner_chain_connections: chains, ..every_frame() }, 4);
        let mut known: Vec<Known> = Vec::new();
        let span = 40_000.0f32;
        let pos = |rng: &mut ChaCha8Rng| {
            [rng.random_range(-span..span), rng.random_range(-span..span), rng.random_range(-500.0..500.0f32)]
        };
        for i in 0..400 {
            let at = pos(&mut rng);
            let (id, guid) = l.spawn(at, i);
            let s = NetSettings {
                cull_distance_squared: [225_000_000.0, 25_000_000.0, 4.0e8][rng.random_range(0..3)],
                always_relevant: rng.random_bool(0.03),
                only_relevant_to_owner: rng.random_bool(0.08),
                use_owner_relevancy: rng.random_bool(0.08),
                hidden: rng.random_bool(0.1),
                collision: !rng.random_bool(0.3),
                has_root: !rng.random_bool(0.03),
                ..NetSettings::default()
            };
            l.driver.set_net_settings(l.class, &l.store, id, s).unwrap();
            let owner_actor =
                (rng.random_bool(0.2) && !known.is_empty()).then(|| known[rng.random_range(0..known.len())].rel.guid);
            let instigator =
                (rng.random_bool(0.1) && !known.is_empty()).then(|| known[rng.random_range(0..known.len())].rel.guid);
            l.driver.set_owner_actor(l.class, &l.store, id, owner_actor, instigator).unwrap();
            let owner_conn = rng.random_bool(0.1).then(|| rng.random_range(0..4));
            if let Some(c) = owner_conn {
                l.driver.set_owner(l.class, &l.store, id, Some(l.clients[c].0), false).unwrap();
            }
            let rel = ActorRelevancy {
                guid,
                owner: owner_actor,
                instigator,
                location: at,
                cull_distance_squared: s.cull_distance_squared,
                always_relevant: s.always_relevant,
                only_relevant_to_owner: s.only_relevant_to_owner,
                use_owner_relevancy: s.use_owner_relevancy,
                hidden: s.hidden,
                has_root: s.has_root,
                collision: s.collision,
            };
            known.push(Known { id, rel, owner_conn });
        }
        // A cycle in the owner chains must neither hang nor count as owned.
        let (a, b) = (known[5].rel.guid, known[6].rel.guid);
        l.driver.set_owner_actor(l.class, &l.store, known[5].id, Some(b), None).unwrap();
        l.driver.set_owner_actor(l.class, &l.store, known[6].id, Some(a), None).unwrap();
        known[5].rel.owner = Some(b);
        known[6].rel.owner = Some(a);
        let mut viewers = Vec::new();
        for c in 0..4 {
            let n = rng.random_range(1..=2);
            let vs: Vec<Viewer> = (0..n)
                .map(|_| {
                    let vt = rng.random_bool(0.7).then(|| known[rng.random_range(0..known.len())].rel.guid);
                    let rv = rng.random_bool(0.5).then(|| known[rng.random_range(0..known.len())].rel.guid);
                    Viewer { real_viewer: rv, ..viewer(pos(&mut rng), vt) }
                })
                .collect();
            l.driver.set_viewers(l.clients[c].0, &vs).unwrap();
            viewers.push(vs);
        }
        for frame in 0..6 {
            // Everyone moves; everyone is due.
            for k in known.iter_mut() {
                let at = pos(&mut rng);
                k.rel.location = at;
                l.move_to(k.id, at);
                l.driver.force_net_update(l.class, &l.store, k.id).unwrap();
            }
            l.step();
            let map: HashMap<NetGuid, ActorRelevancy> = known.iter().map(|k| (k.rel.guid, k.rel)).collect();
            let given: HashMap<NetGuid, usize> =
                known.iter().filter_map(|k| Some((k.rel.guid, k.owner_conn?))).collect();
            let owner_conn = |k: &Known| {
                if !chains {
                    return k.owner_conn;
                }
                let mut at = k.rel.guid;
                for _ in 0..=MAX_OWNER_DEPTH {
                    if let Some(&c) = given.get(&at) {
                        return Some(c);
                    }
                    at = map.get(&at)?.owner?;
                }
                None
            };
            for (c, vs) in viewers.iter().enumerate() {
                let mut expect: Vec<NetGuid> = known
                    .iter()
                    .filter(|k| {
                        relevant_to_connection(&k.rel, owner_conn(k) == Some(c), vs, None, &|g| map.get(&g), &|_| None)
                    })
                    .map(|k| k.rel.guid)
                    .collect();
                expect.sort();
                let got = l.decisions(c).relevant;
                assert_eq!(got, expect, "seed {seed}, chains {chains}, frame {frame}, client {c}");
            }
        }
    }
}

/// Owner chains around `MAX_OWNER_DEPTH` (16) links, far from the viewer, whose view target is
/// one link of the chain: the kernel's relevant sets equal the reference's (which looks up every
/// actor). The chain's head follows its owner (owner relevancy) — alone, where the index takes
/// its plain owner's answer, or with every link following its own. Session 39's review found
/// the first case wrong: the owner's answer reached the follower's 17th link.
#[test]
fn long_owner_chains_get_the_references_answers() {
    use shadowrep::net::relevancy::MAX_OWNER_DEPTH;
    use shadowrep::reference::frame::ReferenceFrame;
    let relevant = |len: usize, target: usize, all_follow: bool| {
        let mut l = Level::new(every_frame(), 1);
        always_due(&mut l);
        let chain: Vec<(ActorId, NetGuid)> = (0..=len).map(|i| l.spawn([1.0e6 + i as f32, 0.0, 0.0], 1)).collect();
        for i in 0..len {
            l.driver.set_owner_actor(l.class, &l.store, chain[i].0, Some(chain[i + 1].1), None).unwrap();
        }
        for (i, &(id, _)) in chain.iter().enumerate() {
            l.settings(id, |s| s.use_owner_relevancy = i == 0 || all_follow);
        }
        let conn = l.clients[0].0;
        l.driver.set_viewers(conn, &[viewer([0.0; 3], Some(chain[target].1))]).unwrap();
        let mut reference = ReferenceFrame::new(&l.driver, &mut [&mut l.store]).unwrap();
        for _ in 0..2 {
            l.step();
            reference.tick(&l.driver, &mut [&mut l.store]).unwrap();
            reference.acknowledge_all();
        }
        let kernel = l.driver.decisions(conn).unwrap().unwrap().relevant.clone();
        (kernel, reference.decisions(conn).unwrap().relevant.clone(), chain[0].1)
    };
    let mut head_relevant = [false; 2];
    for len in MAX_OWNER_DEPTH - 1..=MAX_OWNER_DEPTH + 2 {
        for target in [len - 1, len].into_iter().filter(|&t| t <= len) {
            for all_follow in [false, true] {
                let (kernel, reference, head) = relevant(len, target, all_follow);
                assert_eq!(kernel, reference, "{len} links, view target link {target}, all follow {all_follow}");
                head_relevant[usize::from(kernel.contains(&head))] = true;
            }
        }
    }
    assert_eq!(head_relevant, [true, true], "the head relevant in some worlds, not in others");
}
