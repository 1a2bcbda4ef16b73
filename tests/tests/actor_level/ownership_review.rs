//! Review of ownership changing at run time: owner-only characters (`only_relevant_to_owner`)
//! and characters whose weapons (sub-objects) and fast arrays are under owner conditions
//! (OwnerOnly, SkipOwner, AutonomousOnly, SimulatedOnly), handed from connection to connection
//! (`set_owner`, `set_autonomous_proxy`) over a link that loses, duplicates, delays and reorders,
//! with dormancy and relevancy lapses — then healed and checked: every client holds exactly what
//! UE would give it (an owner-only character its owner alone, each weapon and array its
//! condition allows with the server's values, the role the server gives it) and nothing stale.

use super::lifecycle_review::World;
use super::*;
use shadowrep::link::{Link, LinkConfig};
use shadowrep::net::{Dormancy, NetRole, SubObjectCondition};

/// Parent of the weapon's ammo.
const AMMO: usize = 0;

const CONDS: [SubObjectCondition; 5] = [
    SubObjectCondition::None,
    SubObjectCondition::OwnerOnly,
    SubObjectCondition::SkipOwner,
    SubObjectCondition::AutonomousOnly,
    SubObjectCondition::SimulatedOnly,
];

/// One character: its owner (a client's index) and whether that client holds an autonomous
/// proxy, whether it is owner-only, its weapons and fast arrays.
struct Char {
    id: ActorId,
    guid: NetGuid,
    owner: Option<usize>,
    autonomous: bool,
    owner_only: bool,
    /// Its owner actor: a client's pawn (by index), if any.
    owner_actor: Option<usize>,
    weapons: Vec<(ActorId, NetGuid, SubObjectCondition)>,
    arrays: Vec<(NetGuid, SubObjectCondition)>,
}

/// The world's links: per client, packets down and feedback up.
struct Links {
    down: Vec<Link>,
    up: Vec<Link>,
}

/// The server's net settings with `owner_only`, every actor due every frame.
fn settings(owner_only: bool) -> NetSettings {
    let mut s = NetSettings::default();
    s.frequency.net_update_frequency = 1.0e6;
    s.only_relevant_to_owner = owner_only;
    s
}

fn lossy(loss: f64, seed: u64) -> LinkConfig {
    LinkConfig { loss, ..LinkConfig::lossy(loss, seed) }
}

/// One frame: packets down and feedback up through the links (the client is alive: the server
/// hears from it every frame, its feedback lost or not).
fn step(w: &mut World, links: &mut Links, frame: u32) {
    w.driver.tick(&mut [&mut w.chars, &mut w.weapons]).unwrap();
    for (c, (conn, world)) in w.clients.iter_mut().enumerate() {
        for p in w.driver.take_packets(*conn).unwrap() {
            links.down[c].send(p);
        }
        for p in links.down[c].tick() {
            if let Err(e) = world.receive(&p) {
                w.refused.push(format!("client {c} at frame {frame}: {e}"));
            }
        }
        if world.feedback_due() || frame.is_multiple_of(2) {
            links.up[c].send(world.feedback());
        }
        for fb in links.up[c].tick() {
            w.driver.receive_feedback(*conn, &fb).unwrap();
        }
        w.driver.heard_from(*conn).unwrap();
    }
}

/// The client that owns `ch`: its own owner, else — owner chains, the driver's default, as UE's
/// `GetNetConnection` walks `Owner` — its owner actor's (a pawn, owned by its client).
fn owner_of(ch: &Char, pawns: &[Char]) -> Option<usize> {
    ch.owner.or_else(|| pawns[ch.owner_actor?].owner)
}

/// Client `c`'s end state against the server's (`target`: the pawn it views through).
fn check_client(
    w: &World,
    c: usize,
    target: usize,
    (chars, pawns): (&[Char], &[Char]),
    gone: &[NetGuid],
) -> Result<(), String> {
    let client = w.client(c);
    for &g in gone {
        if client.has(g) || client.fast_array(g).is_some() {
            return Err(format!("client {c} still holds {g}, gone on the server"));
        }
    }
    for ch in chars {
        let owner = owner_of(ch, pawns);
        assert_eq!(w.driver.owning_connection(w.ch, ch.id), owner.map(|o| w.clients[o].0));
        // UE's owner-only rule: the owning connection, or one whose view target owns it.
        let sees = !ch.owner_only || owner == Some(c) || ch.owner_actor == Some(target);
        if !sees {
            let held: Vec<NetGuid> = std::iter::once(ch.guid)
                .chain(ch.weapons.iter().map(|x| x.1))
                .filter(|&g| client.has(g))
                .chain(ch.arrays.iter().map(|a| a.0).filter(|&fa| client.fast_array(fa).is_some()))
                .collect();
            if !held.is_empty() {
                return Err(format!(
                    "client {c} holds {held:?} of owner-only character {} owned by {:?}",
                    ch.guid, owner
                ));
            }
            continue;
        }
        if !client.has(ch.guid) {
            return Err(format!(
                "client {c} lacks character {} (owner {:?}, owner-only {})",
                ch.guid, owner, ch.owner_only
            ));
        }
        w.check_health(c, (ch.id, ch.guid))?;
        let role = if owner == Some(c) && ch.autonomous { NetRole::AutonomousProxy } else { NetRole::SimulatedProxy };
        if client.role(ch.guid) != Some(role) {
            return Err(format!("client {c}: character {} role {:?}, want {role:?}", ch.guid, client.role(ch.guid)));
        }
        let f = shadowrep::net::ReplicationFlags {
            owner: owner == Some(c),
            autonomous: ch.autonomous,
            ..Default::default()
        };
        let why = format!(" (owner {owner:?} autonomous {})", ch.autonomous);
        w.check_parts(c, ch.guid, (&ch.weapons, &ch.arrays), |cond| cond.allows(f), &why)?;
    }
    Ok(())
}

/// Debugging: `OWN_WATCH=owner,array,client` prints each frame what that client holds of them.
fn watch(w: &World, frame: u32) {
    let Ok(v) = std::env::var("OWN_WATCH") else { return };
    let v: Vec<u64> = v.split(',').map(|x| x.parse().unwrap()).collect();
    let (owner, fa, c) = (NetGuid(v[0]), NetGuid(v[1]), v[2] as usize);
    let client = w.client(c);
    let chans: Vec<_> =
        w.driver.channel_info(w.clients[c].0).unwrap().iter().filter(|i| i.guid == owner).cloned().collect();
    eprintln!(
        "{frame}: c{c} has owner {} dormant {} array {:?} | server chans {:?}",
        client.has(owner),
        client.is_dormant(owner),
        w.client_items(c, fa).map(|m| m.len()),
        chans
    );
}

/// What the random world does.
#[derive(Clone, Copy)]
struct Play {
    loss: f64,
    dormancy: bool,
    /// The game flips a character's owner-only setting now and then.
    flip_owner_only: bool,
    /// Characters get a pawn as owner actor, and clients switch the pawn they view through.
    view_targets: bool,
}

/// A random world of characters handed from client to client (`clients` clients, each viewing
/// through its own pawn), played for `frames` frames over links losing `play.loss`, then healed
/// (every character awake and near, perfect links) and checked.
fn ownership_world(seed: u64, clients: usize, frames: u32, play: Play) -> Result<(), String> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut w = World::with_level(clients, ActorLevelConfig { relevant_timeout: 0.3, ..ActorLevelConfig::default() });
    let mut links = Links {
        down: (0..clients).map(|c| Link::new(lossy(play.loss, seed * 31 + c as u64))).collect(),
        up: (0..clients).map(|c| Link::new(lossy(play.loss, seed * 37 + 1000 + c as u64))).collect(),
    };
    // Each client views through a pawn of its own (so every viewer has a view target: an
    // owner-only actor's channel on a connection that does not own it closes once its relevancy
    // lapses).
    let mut pawns = Vec::new();
    for c in 0..clients {
        let (pid, pg) = w.spawn([0.0; 3]);
        w.driver.set_owner(w.ch, &w.chars, pid, Some(w.clients[c].0), true).unwrap();
        w.driver.set_viewers(w.clients[c].0, &[viewer([0.0; 3], Some(pg))]).unwrap();
        pawns.push(Char {
            id: pid,
            guid: pg,
            owner: Some(c),
            autonomous: true,
            owner_only: false,
            owner_actor: None,
            weapons: Vec::new(),
            arrays: Vec::new(),
        });
    }
    // The pawn each client views through.
    let mut targets: Vec<usize> = (0..clients).collect();
    let mut chars: Vec<Char> = Vec::new();
    let mut gone: Vec<NetGuid> = Vec::new();
    let mut log: Vec<String> = Vec::new();
    for frame in 0..frames {
        let op = rng.random_range(0..40);
        let k = (!chars.is_empty()).then(|| rng.random_range(0..chars.len()));
        match (op, k) {
            (0..=2, _) if chars.len() < 6 => {
                let at = [rng.random_range(0.0..3000.0), 0.0, 0.0];
                let (id, guid) = w.spawn(at);
                let owner_only = rng.random_bool(0.5);
                w.driver.set_net_settings(w.ch, &w.chars, id, settings(owner_only)).unwrap();
                let owner = rng.random_bool(0.8).then(|| rng.random_range(0..clients));
                let autonomous = rng.random_bool(0.5);
                w.driver.set_owner(w.ch, &w.chars, id, owner.map(|o| w.clients[o].0), autonomous).unwrap();
                let mut ch = Char {
                    id,
                    guid,
                    owner,
                    autonomous,
                    owner_only,
                    owner_actor: None,
                    weapons: Vec::new(),
                    arrays: Vec::new(),
                };
                for _ in 0..rng.random_range(1..4) {
                    let cond = CONDS[rng.random_range(0..CONDS.len())];
                    let (wid, wg) = w.weapon(guid, rng.random_range(0..100), cond);
                    log.push(format!("{frame}: weapon {wg} of {guid} {cond:?}"));
                    ch.weapons.push((wid, wg, cond));
                }
                for _ in 0..rng.random_range(0..3) {
                    let cond = CONDS[rng.random_range(0..CONDS.len())];
                    let fa = w.driver.add_fast_array(w.kind, guid, cond).unwrap();
                    for _ in 0..rng.random_range(0..4) {
                        let v: u32 = rng.random();
                        w.driver.fast_array_mut(fa).unwrap().add(&v.to_le_bytes()).unwrap();
                    }
                    log.push(format!("{frame}: array {fa} of {guid} {cond:?}"));
                    ch.arrays.push((fa, cond));
                }
                log.push(format!("{frame}: spawn {guid} owner {owner:?} aut {autonomous} oo {owner_only}"));
                chars.push(ch);
            }
            // Handed on: to another client (or nobody), autonomous or not.
            (3..=12, Some(k)) => {
                let o = rng.random_bool(0.85).then(|| rng.random_range(0..clients));
                let autonomous = rng.random_bool(0.5);
                let ch = &mut chars[k];
                ch.owner = o;
                ch.autonomous = autonomous;
                w.driver.set_owner(w.ch, &w.chars, ch.id, o.map(|o| w.clients[o].0), autonomous).unwrap();
                log.push(format!("{frame}: {} to {o:?} aut {autonomous}", ch.guid));
            }
            (13..=14, Some(k)) => {
                let ch = &mut chars[k];
                ch.autonomous = !ch.autonomous;
                w.driver.set_autonomous_proxy(w.ch, &w.chars, ch.id, ch.autonomous).unwrap();
                log.push(format!("{frame}: {} aut {}", ch.guid, ch.autonomous));
            }
            (15..=16, Some(k)) => {
                let at = if rng.random_bool(0.5) {
                    [900_000.0, 0.0, 0.0]
                } else {
                    [rng.random_range(0.0..3000.0), 0.0, 0.0]
                };
                w.chars.set(chars[k].id, LOCATION, &Value::Vector(at)).unwrap();
            }
            (17, Some(k)) if chars[k].weapons.len() < 4 => {
                let cond = CONDS[rng.random_range(0..CONDS.len())];
                let (wid, wg) = w.weapon(chars[k].guid, rng.random_range(0..100), cond);
                log.push(format!("{frame}: weapon {wg} of {} {cond:?}", chars[k].guid));
                chars[k].weapons.push((wid, wg, cond));
            }
            (18, Some(k)) if !chars[k].weapons.is_empty() => {
                let wg = w.disarm(&mut rng, &mut chars[k].weapons, &mut gone);
                log.push(format!("{frame}: weapon {wg} of {} despawned", chars[k].guid));
            }
            (19, Some(k)) if !chars[k].weapons.is_empty() => {
                let i = rng.random_range(0..chars[k].weapons.len());
                let cond = CONDS[rng.random_range(0..CONDS.len())];
                chars[k].weapons[i].2 = cond;
                log.push(format!("{frame}: weapon {} of {} now {cond:?}", chars[k].weapons[i].1, chars[k].guid));
                w.driver.set_sub_object_condition(w.wp, &w.weapons, chars[k].weapons[i].0, cond).unwrap();
            }
            (20, Some(k)) if chars[k].arrays.len() < 3 => {
                let cond = CONDS[rng.random_range(0..CONDS.len())];
                let fa = w.driver.add_fast_array(w.kind, chars[k].guid, cond).unwrap();
                log.push(format!("{frame}: array {fa} of {} {cond:?}", chars[k].guid));
                chars[k].arrays.push((fa, cond));
            }
            (21, Some(k)) if !chars[k].arrays.is_empty() => {
                let i = rng.random_range(0..chars[k].arrays.len());
                let (fa, _) = chars[k].arrays.remove(i);
                w.driver.remove_fast_array(fa).unwrap();
                log.push(format!("{frame}: array {fa} of {} removed", chars[k].guid));
                gone.push(fa);
            }
            (22, Some(k)) if !chars[k].arrays.is_empty() => {
                let i = rng.random_range(0..chars[k].arrays.len());
                let cond = CONDS[rng.random_range(0..CONDS.len())];
                chars[k].arrays[i].1 = cond;
                log.push(format!("{frame}: array {} of {} now {cond:?}", chars[k].arrays[i].0, chars[k].guid));
                w.driver.set_fast_array_condition(chars[k].arrays[i].0, cond).unwrap();
            }
            (23..=24, Some(k)) if play.dormancy => {
                let d = if rng.random_bool(0.5) { Dormancy::DormantAll } else { Dormancy::Awake };
                log.push(format!("{frame}: {} {d:?}", chars[k].guid));
                w.driver.set_net_dormancy(w.ch, &w.chars, chars[k].id, d).unwrap();
            }
            (25, Some(k)) if play.flip_owner_only => {
                let ch = &mut chars[k];
                ch.owner_only = !ch.owner_only;
                w.driver.set_net_settings(w.ch, &w.chars, ch.id, settings(ch.owner_only)).unwrap();
                log.push(format!("{frame}: {} oo {}", ch.guid, ch.owner_only));
            }
            (27..=28, Some(k)) if play.view_targets => {
                let p = rng.random_bool(0.8).then(|| rng.random_range(0..clients));
                chars[k].owner_actor = p;
                let owner = p.map(|p| pawns[p].guid);
                w.driver.set_owner_actor(w.ch, &w.chars, chars[k].id, owner, None).unwrap();
                log.push(format!("{frame}: {} owner actor {p:?}", chars[k].guid));
            }
            (29..=30, _) if play.view_targets => {
                let c = rng.random_range(0..clients);
                targets[c] = rng.random_range(0..clients);
                w.driver.set_viewers(w.clients[c].0, &[viewer([0.0; 3], Some(pawns[targets[c]].guid))]).unwrap();
                log.push(format!("{frame}: client {c} views through pawn {}", targets[c]));
            }
            (26, Some(k)) => {
                let ch = chars.swap_remove(k);
                log.push(format!("{frame}: {} despawned", ch.guid));
                w.despawn_character((ch.id, ch.guid), (&ch.weapons, &ch.arrays), &mut gone);
            }
            _ => {}
        }
        // Values change now and then.
        for ch in &chars {
            if rng.random_bool(0.05) {
                w.chars.set(ch.id, HEALTH, &Value::U32(rng.random_range(0..1000))).unwrap();
            }
            for &(wid, _, _) in &ch.weapons {
                if rng.random_bool(0.05) {
                    w.weapons.set(wid, AMMO, &Value::U32(rng.random_range(0..1000))).unwrap();
                }
            }
            for &(fa, _) in &ch.arrays {
                if rng.random_bool(0.1) {
                    let mut items = w.driver.fast_array_mut(fa).unwrap();
                    let ids: Vec<_> = items.iter().map(|(id, _)| id).collect();
                    let v: u32 = rng.random();
                    match rng.random_range(0..3) {
                        0 if !ids.is_empty() => items.remove(ids[rng.random_range(0..ids.len())]).unwrap(),
                        1 if !ids.is_empty() => {
                            items.set(ids[rng.random_range(0..ids.len())], &v.to_le_bytes()).unwrap()
                        }
                        _ => items.add(&v.to_le_bytes()).map(|_| ()).unwrap(),
                    }
                }
            }
        }
        step(&mut w, &mut links, frame);
        watch(&w, frame);
    }
    // Heal: perfect links (what is in flight still arrives), every character awake and near.
    for l in links.down.iter_mut().chain(links.up.iter_mut()) {
        l.set_config(LinkConfig::perfect(1));
    }
    for ch in &chars {
        w.driver.set_net_dormancy(w.ch, &w.chars, ch.id, Dormancy::Awake).unwrap();
        w.chars.set(ch.id, LOCATION, &Value::Vector([100.0, 0.0, 0.0])).unwrap();
    }
    for frame in frames..frames + 200 {
        step(&mut w, &mut links, frame);
        watch(&w, frame);
    }
    let what = |e: String| format!("seed {seed}, loss {}: {e}\n  {}", play.loss, log.join("\n  "));
    if !w.refused.is_empty() {
        return Err(what(format!("{} packets refused: {:?}", w.refused.len(), &w.refused[..w.refused.len().min(4)])));
    }
    for (c, &target) in targets.iter().enumerate() {
        check_client(&w, c, target, (&pawns, &pawns), &[]).map_err(what)?;
        check_client(&w, c, target, (&chars, &pawns), &gone).map_err(what)?;
    }
    Ok(())
}

fn sweep(seeds: std::ops::Range<u64>, clients: usize, frames: u32, play: Play) {
    let mut failures = Vec::new();
    for seed in seeds {
        if let Err(e) = ownership_world(seed, clients, frames, play) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn ownership_moves_heal_to_what_ue_gives_each_client_lossless() {
    sweep(0..16, 3, 300, Play { loss: 0.0, dormancy: false, flip_owner_only: false, view_targets: false });
}

#[test]
fn ownership_moves_heal_to_what_ue_gives_each_client_under_loss() {
    sweep(0..16, 3, 300, Play { loss: 0.25, dormancy: false, flip_owner_only: false, view_targets: false });
}

#[test]
fn ownership_moves_heal_with_dormancy_and_owner_only_flips_under_loss() {
    sweep(0..16, 3, 300, Play { loss: 0.25, dormancy: true, flip_owner_only: true, view_targets: false });
}

/// A wider sweep (`OWN_SEEDS=a..b OWN_LOSS=x OWN_DORM=1`), for exploring.
#[test]
#[ignore = "a sweep for exploring"]
fn ownership_sweep() {
    let seeds = std::env::var("OWN_SEEDS").unwrap_or("0..200".into());
    let (a, b) = seeds.split_once("..").unwrap();
    let loss: f64 = std::env::var("OWN_LOSS").map_or(0.25, |l| l.parse().unwrap());
    let dorm = std::env::var("OWN_DORM").is_ok();
    let clients: usize = std::env::var("OWN_CLIENTS").map_or(3, |l| l.parse().unwrap());
    let frames: u32 = std::env::var("OWN_FRAMES").map_or(300, |l| l.parse().unwrap());
    sweep(
        a.parse().unwrap()..b.parse().unwrap(),
        clients,
        frames,
        Play { loss, dormancy: dorm, flip_owner_only: dorm, view_targets: std::env::var("OWN_VT").is_ok() },
    );
}

#[test]
fn owner_actors_and_view_targets_moving_heal_to_what_ue_gives_each_client_under_loss() {
    sweep(0..16, 3, 300, Play { loss: 0.25, dormancy: true, flip_owner_only: true, view_targets: true });
}

/// Two clients viewing through pawns of their own; a character owned by client 0 with an
/// owner-only weapon and an owner-only fast array of three items.
fn handed(cond: SubObjectCondition) -> (World, ActorId, NetGuid, NetGuid, NetGuid) {
    let mut w = World::new(2);
    for c in 0..2 {
        let (pid, pg) = w.spawn([0.0; 3]);
        w.driver.set_owner(w.ch, &w.chars, pid, Some(w.clients[c].0), true).unwrap();
        w.driver.set_viewers(w.clients[c].0, &[viewer([0.0; 3], Some(pg))]).unwrap();
    }
    let (id, guid) = w.spawn([100.0, 0.0, 0.0]);
    w.driver.set_owner(w.ch, &w.chars, id, Some(w.clients[0].0), true).unwrap();
    let (_, wg) = w.weapon(guid, 5, cond);
    let fa = w.driver.add_fast_array(w.kind, guid, cond).unwrap();
    for v in 0..3u32 {
        w.driver.fast_array_mut(fa).unwrap().add(&v.to_le_bytes()).unwrap();
    }
    w.run(10);
    (w, id, guid, wg, fa)
}

#[test]
fn an_owner_only_fast_array_leaves_its_old_owner_when_ownership_moves_while_dormant() {
    let (mut w, id, guid, wg, fa) = handed(SubObjectCondition::OwnerOnly);
    assert!(w.client(0).has(wg) && w.client_items(0, fa) == Some(w.items(fa)));
    assert!(!w.client(1).has(wg) && w.client_items(1, fa).is_none());
    w.driver.set_net_dormancy(w.ch, &w.chars, id, Dormancy::DormantAll).unwrap();
    w.run(10);
    assert!(w.client(0).is_dormant(guid));
    // Handed to client 1 while dormant, then woken.
    w.driver.set_owner(w.ch, &w.chars, id, Some(w.clients[1].0), true).unwrap();
    w.run(10);
    w.driver.set_net_dormancy(w.ch, &w.chars, id, Dormancy::Awake).unwrap();
    w.run(20);
    assert!(w.client(1).has(wg), "the new owner gets the weapon");
    assert_eq!(w.client_items(1, fa), Some(w.items(fa)), "and the array, whole");
    assert!(!w.client(0).has(wg), "the old owner loses the weapon");
    assert_eq!(w.client_items(0, fa), None, "and the array");
}

/// A client's request to open a fast array again (it got a bunch of the array before its open)
/// can reach the server late — feedback is reordered — after a new open of the array reached
/// the client and was acknowledged. The server honoured it (the open acknowledged, as far as it
/// knew) by forgetting its base there, and with it that the client holds the array: when the
/// array's owner-only condition then left the connection out (its owner handed to another
/// player), nothing sent the array's close, and the old owner kept the array and its items for
/// good (seed 122 of the random worlds with view targets, dormancy and 30 % loss).
#[test]
fn a_late_request_to_reopen_a_fast_array_does_not_leave_it_with_an_old_owner() {
    let (mut w, id, _, _, fa) = handed(SubObjectCondition::OwnerOnly);
    assert_eq!(w.client_items(0, fa), Some(w.items(fa)));
    // Closed on client 0 and opened again; the open is lost, a delta after it delivered.
    w.driver.set_fast_array_condition(fa, SubObjectCondition::SkipOwner).unwrap();
    w.run(5);
    assert_eq!(w.client_items(0, fa), None);
    w.driver.set_fast_array_condition(fa, SubObjectCondition::OwnerOnly).unwrap();
    let tick = |w: &mut World| {
        w.driver.tick(&mut [&mut w.chars, &mut w.weapons]).unwrap();
        let other = w.clients[1].0;
        for p in w.driver.take_packets(other).unwrap() {
            w.clients[1].1.receive(&p).unwrap();
        }
        let fb = w.clients[1].1.feedback();
        w.driver.receive_feedback(other, &fb).unwrap();
        let c0 = w.clients[0].0;
        w.driver.take_packets(c0).unwrap()
    };
    let _lost = tick(&mut w);
    w.driver.fast_array_mut(fa).unwrap().add(&7u32.to_le_bytes()).unwrap();
    for p in tick(&mut w) {
        w.clients[0].1.receive(&p).unwrap();
    }
    assert_eq!(w.client_items(0, fa), None, "a delta without its open");
    // The feedback asking for the array again is held back; later ones go on.
    let late = w.clients[0].1.feedback();
    for _ in 0..10 {
        for p in tick(&mut w) {
            w.clients[0].1.receive(&p).unwrap();
        }
        let fb = w.clients[0].1.feedback();
        w.driver.receive_feedback(w.clients[0].0, &fb).unwrap();
    }
    assert_eq!(w.client_items(0, fa), Some(w.items(fa)), "opened again and acknowledged");
    // The late feedback arrives; in the same frame the character is handed to client 1.
    w.driver.receive_feedback(w.clients[0].0, &late).unwrap();
    w.driver.set_owner(w.ch, &w.chars, id, Some(w.clients[1].0), true).unwrap();
    w.run(20);
    assert_eq!(w.client_items(1, fa), Some(w.items(fa)), "the new owner gets the array");
    assert_eq!(w.client_items(0, fa), None, "the old owner's copy is closed");
}

/// The worlds that found the late request above (an owner-only array left with its old owner).
#[test]
fn the_worlds_that_found_a_late_reopen_request_heal() {
    let play = Play { loss: 0.3, dormancy: true, flip_owner_only: true, view_targets: true };
    let failures: Vec<String> = [122, 129].into_iter().filter_map(|s| ownership_world(s, 3, 300, play).err()).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The same for a request to open the array's *owner* again, arriving after the client has the
/// owner (late behind its own heal, or forged: the server cannot tell). The server honours it —
/// it sends the owner's open again and starts the owner's arrays from nothing — while the client
/// keeps the owner, arrays and all (an open of an actor it holds keeps its copy). Handed to
/// client 1 in that frame, the owner-only array leaves client 0 out with nothing to say client 0
/// holds it: unless the restart marks it stale, no close goes, and the old owner keeps it.
#[test]
fn a_late_request_to_reopen_an_owner_does_not_leave_its_fast_array_with_an_old_owner() {
    use shadowrep::wire::feedback::{read_feedback, write_feedback};
    let (mut w, id, guid, _, fa) = handed(SubObjectCondition::OwnerOnly);
    assert_eq!(w.client_items(0, fa), Some(w.items(fa)));
    let (c0, c1) = (w.clients[0].0, w.clients[1].0);
    w.driver.tick(&mut [&mut w.chars, &mut w.weapons]).unwrap();
    for c in 0..2 {
        for p in w.driver.take_packets(w.clients[c].0).unwrap() {
            w.clients[c].1.receive(&p).unwrap();
        }
    }
    let fb = w.clients[1].1.feedback();
    w.driver.receive_feedback(c1, &fb).unwrap();
    // Client 0's feedback, with a request for the owner it holds.
    let real = read_feedback(&w.clients[0].1.feedback()).unwrap();
    let mut late = shadowrep::wire::BitWriter::new();
    write_feedback(&mut late, real.highest, &real.received, &[guid]);
    w.driver.receive_feedback(c0, &late.into_bytes()).unwrap();
    w.driver.set_owner(w.ch, &w.chars, id, Some(c1), true).unwrap();
    w.run(20);
    assert!(w.client(0).has(guid), "the owner stays with client 0");
    assert_eq!(w.client_items(1, fa), Some(w.items(fa)), "the new owner gets the array");
    assert_eq!(w.client_items(0, fa), None, "the old owner's copy is closed");
}

/// Found by the ownership sweep (seeds 2000..5000 at 30 % loss with dormancy, owner-only flips
/// and view targets). Seed 2042 (session 67): client 0 kept a `SimulatedOnly` weapon with a
/// stale ammo (0 against the server's 155). Its change rode a bunch set aside (the owner's open
/// lost), and the open sent again for the lost one, without the ammo, ended the client's request
/// for the weapon before it reached the server (`Reopen::firm`; cut down in
/// `refusals::a_change_set_aside_with_its_sub_object_is_not_lost_to_the_open_sent_again`). Seed
/// 3972 (session 68): a fast array opened four times behind its owner's lost open, each set
/// aside; the request made for the first rode out before the fourth was acknowledged, and the
/// server ignores a request while its open is on the way — a request asked again now rides again.
#[test]
fn the_ownership_worlds_that_found_set_aside_requests_heal() {
    let play = Play { loss: 0.3, dormancy: true, flip_owner_only: true, view_targets: true };
    for seed in [2042, 3972] {
        ownership_world(seed, 3, 300, play).unwrap();
    }
}
