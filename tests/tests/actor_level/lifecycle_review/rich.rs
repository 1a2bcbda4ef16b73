//! The switch worlds with more: a short relevant timeout, delayed packets, static actors with
//! fast arrays in a sublevel the clients stream out and in, tear-off, clients leaving and joining.

use super::*;

/// A static actor of the richer worlds: its path, sublevel and fast array.
struct Static {
    id: ActorId,
    guid: NetGuid,
    path: String,
    sublevel: shadowrep::net::SublevelId,
    arrays: Vec<(NetGuid, SubObjectCondition)>,
    alive: bool,
    torn: bool,
}

/// A client of the richer worlds: its packets delayed `delay` frames, the sublevel it loaded.
struct Peer {
    inbox: std::collections::VecDeque<(u32, Vec<u8>)>,
    loaded: bool,
    streamed: Option<u32>,
    refused: u32,
}

/// [`switch_world`] with more: a short relevant timeout (closes and reopens while earlier ones
/// fly), packets delayed two frames, static actors with fast arrays in a sublevel clients stream
/// out and in, tear-off, a client leaving and one joining. Torn-off characters are checked
/// only as torn off where held.
pub(super) fn rich_world(seed: u64, loss: f64, frames: u32) -> Result<(), String> {
    use rand::{Rng, SeedableRng};
    use shadowrep::net::SublevelId;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut w = World::with_level(0, ActorLevelConfig { relevant_timeout: 0.1, ..ActorLevelConfig::default() });
    const HALL: SublevelId = SublevelId(1);
    // Static actors, half in the hall.
    let mut statics: Vec<Static> = Vec::new();
    for i in 0..4 {
        let id = w.chars.spawn();
        w.chars.set(id, LOCATION, &Value::Vector([200.0 * i as f32, 0.0, 0.0])).unwrap();
        let path = format!("Level/Static{i}");
        let guid = w.driver.register_static_actor(w.ch, &w.chars, id, &path).unwrap();
        let sublevel = if i % 2 == 0 { HALL } else { SublevelId::PERSISTENT };
        w.driver.set_sublevel(w.ch, &w.chars, id, sublevel).unwrap();
        let cond = CONDS[i % 3];
        let fa = w.driver.add_fast_array(w.kind, guid, cond).unwrap();
        statics.push(Static { id, guid, path, sublevel, arrays: vec![(fa, cond)], alive: true, torn: false });
    }
    let mut peers: Vec<Peer> = Vec::new();
    let join = |w: &mut World, peers: &mut Vec<Peer>, statics: &[Static]| {
        let c = w.join();
        // The persistent level's static actors are loaded with the map (destroyed ones too).
        for s in statics.iter().filter(|s| s.sublevel == SublevelId::PERSISTENT) {
            w.clients[c].1.load_static_actor(&s.path, w.ch.0).unwrap();
        }
        peers.push(Peer { inbox: Default::default(), loaded: false, streamed: None, refused: 0 });
    };
    for _ in 0..3 {
        join(&mut w, &mut peers, &statics);
    }
    let now = std::cell::Cell::new(0u32);
    let stream = |w: &mut World, peers: &mut [Peer], statics: &[Static], c: usize, load: bool| {
        if peers[c].loaded == load {
            return;
        }
        for s in statics.iter().filter(|s| s.sublevel == HALL) {
            if load {
                w.clients[c].1.load_static_actor(&s.path, w.ch.0).unwrap();
            } else {
                w.clients[c].1.unload_static_actor(&s.path);
            }
        }
        peers[c].loaded = load;
        peers[c].streamed = Some(now.get());
        w.driver.set_sublevel_loaded(w.clients[c].0, HALL, load).unwrap();
    };
    let mut chars: Vec<Char> = Vec::new();
    let mut torn: Vec<NetGuid> = Vec::new();
    let mut torn_ids: Vec<ActorId> = Vec::new();
    let mut gone: Vec<NetGuid> = Vec::new();
    let mut why: std::collections::HashMap<NetGuid, String> = Default::default();
    let mut frame_no = 0u32;
    for frame in 0..frames {
        now.set(frame_no);
        let op = rng.random_range(0..48);
        let k = (!chars.is_empty()).then(|| rng.random_range(0..chars.len()));
        let si = rng.random_range(0..statics.len());
        match (op, k) {
            (0..=2, _) if chars.len() < 8 => {
                let c = spawn_char(&mut w, &mut rng, Some(HALL));
                chars.push(c);
            }
            (3..=8, Some(k)) => toggle(&mut w, chars[k].id),
            (9..=11, Some(k)) => wander(&mut w, &mut rng, chars[k].id),
            (12..=13, Some(k)) if chars[k].weapons.len() < 3 => chars[k].arm(&mut w, &mut rng),
            (14, Some(k)) if !chars[k].weapons.is_empty() => {
                let wg = w.disarm(&mut rng, &mut chars[k].weapons, &mut gone);
                why.insert(
                    wg,
                    format!(
                        "weapon despawned at {frame} (owner {} on {:?})",
                        chars[k].guid,
                        w.driver.replicates(w.ch, chars[k].id)
                    ),
                );
            }
            (15, Some(k)) if !chars[k].weapons.is_empty() => chars[k].recondition(&mut w, &mut rng),
            (16, Some(k)) => chars[k].reown(&mut w, &mut rng),
            (17, Some(k)) if chars[k].arrays.len() < 2 => chars[k].add_array(&mut w, &mut rng),
            (18, Some(k)) if !chars[k].arrays.is_empty() => {
                let i = rng.random_range(0..chars[k].arrays.len());
                let (fa, _) = chars[k].arrays.remove(i);
                w.driver.remove_fast_array(fa).unwrap();
                gone.push(fa);
                let held: Vec<bool> = w.clients.iter().map(|c| c.1.fast_array(fa).is_some()).collect();
                let chans: Vec<bool> = w
                    .clients
                    .iter()
                    .map(|c| w.driver.channel_info(c.0).unwrap().iter().any(|i| i.guid == chars[k].guid))
                    .collect();
                why.insert(fa, format!("array removed at {frame} (owner {} on {:?} asleep {} at {:?}, held {held:?}, owner channels {chans:?}, dormant held {:?})", chars[k].guid, w.driver.replicates(w.ch, chars[k].id), w.driver.is_asleep(w.ch, chars[k].id), w.chars.get(chars[k].id, LOCATION).ok(), w.clients.iter().map(|c| c.1.is_dormant(chars[k].guid)).collect::<Vec<_>>()));
            }
            (19..=20, Some(k)) => {
                let d = if rng.random_bool(0.5) { Dormancy::DormantAll } else { Dormancy::Awake };
                w.driver.set_net_dormancy(w.ch, &w.chars, chars[k].id, d).unwrap();
            }
            (21, Some(k)) => {
                let c = chars.swap_remove(k);
                w.despawn_character((c.id, c.guid), (&c.weapons, &c.arrays), &mut gone);
                why.insert(c.guid, format!("char despawned at {frame} on {:?}", w.driver.replicates(w.ch, c.id)));
                for &(_, wg, _) in &c.weapons {
                    why.insert(wg, format!("weapon of despawned char {} at {frame}", c.guid));
                }
            }
            (22, Some(k)) => {
                // Torn off, sometimes with the switch, dormancy or its sublevel in the same frame.
                let c = chars.swap_remove(k);
                w.driver.tear_off(w.ch, &w.chars, c.id).unwrap();
                match rng.random_range(0..4) {
                    0 => w.driver.set_replicates(w.ch, &w.chars, c.id, false).unwrap(),
                    1 => w.driver.set_net_dormancy(w.ch, &w.chars, c.id, Dormancy::DormantAll).unwrap(),
                    2 => {
                        let cl = rng.random_range(0..w.clients.len());
                        stream(&mut w, &mut peers, &statics, cl, false);
                    }
                    _ => {}
                }
                torn.push(c.guid);
                // Its weapons and arrays are not checked further; it is switched on at the heal
                // (a tear-off waits while the actor is off).
                torn_ids.push(c.id);
            }
            (23..=24, _) => {
                let cl = rng.random_range(0..w.clients.len());
                let load = !peers[cl].loaded;
                stream(&mut w, &mut peers, &statics, cl, load);
            }
            (25..=27, _) if statics[si].alive && !statics[si].torn => toggle(&mut w, statics[si].id),
            (28, _) if statics[si].alive && !statics[si].torn => wander(&mut w, &mut rng, statics[si].id),
            (29, _) if statics[si].alive && !statics[si].torn && rng.random_bool(0.2) => {
                statics[si].alive = false;
                w.chars.despawn(statics[si].id).unwrap();
                gone.extend(statics[si].arrays.iter().map(|a| a.0));
            }
            (30, _) if statics[si].alive && !statics[si].torn && statics[si].arrays.len() < 2 => {
                let cond = CONDS[rng.random_range(0..3)];
                let fa = w.driver.add_fast_array(w.kind, statics[si].guid, cond).unwrap();
                statics[si].arrays.push((fa, cond));
            }
            (31, _) if statics[si].alive && !statics[si].torn && !statics[si].arrays.is_empty() => {
                let (fa, _) = statics[si].arrays.remove(0);
                w.driver.remove_fast_array(fa).unwrap();
                gone.push(fa);
            }
            (32, _) if frame == frames / 2 => {}
            _ => {}
        }
        if frame == frames / 3 {
            // Client 1 leaves; a new one joins.
            let (conn, _) = w.clients.remove(1);
            peers.remove(1);
            w.driver.remove_connection(conn).unwrap();
            for c in &mut chars {
                c.owner = match c.owner {
                    Some(1) => None,
                    Some(o) if o > 1 => Some(o - 1),
                    o => o,
                };
            }
            join(&mut w, &mut peers, &statics);
        }
        // Values change now and then (the game does not care whether the actor is on).
        let live_statics: Vec<(ActorId, Vec<NetGuid>)> = statics
            .iter()
            .filter(|s| s.alive && !s.torn)
            .map(|s| (s.id, s.arrays.iter().map(|a| a.0).collect()))
            .collect();
        let owners = chars.iter().map(|c| (c.id, c.arrays.iter().map(|a| a.0).collect::<Vec<_>>())).chain(live_statics);
        for (id, arrays) in owners.collect::<Vec<_>>() {
            if rng.random_bool(0.05) {
                w.chars.set(id, HEALTH, &Value::U32(rng.random_range(0..1000))).unwrap();
            }
            for fa in arrays {
                if rng.random_bool(0.1) {
                    let mut items = w.driver.fast_array_mut(fa).unwrap();
                    let ids: Vec<_> = items.iter().map(|(id, _)| id).collect();
                    match rng.random_range(0..3) {
                        0 if !ids.is_empty() => items.remove(ids[rng.random_range(0..ids.len())]).unwrap(),
                        1 if !ids.is_empty() => {
                            let v: u32 = rng.random();
                            items.set(ids[rng.random_range(0..ids.len())], &v.to_le_bytes()).unwrap()
                        }
                        _ => {
                            let v: u32 = rng.random();
                            items.add(&v.to_le_bytes()).map(|_| ()).unwrap()
                        }
                    }
                }
            }
        }
        for c in &chars {
            for &(wid, _, _) in &c.weapons {
                if rng.random_bool(0.05) {
                    w.weapons.set(wid, AMMO, &Value::U32(rng.random_range(0..1000))).unwrap();
                }
            }
        }
        let lossy = frame < frames;
        rich_step(&mut w, &mut peers, &mut rng, if lossy { loss } else { 0.0 }, frame_no);
        frame_no += 1;
    }
    // Heal: every client loads the hall, every actor on, awake and near.
    for c in &chars {
        w.driver.set_replicates(w.ch, &w.chars, c.id, true).unwrap();
        w.driver.set_net_dormancy(w.ch, &w.chars, c.id, Dormancy::Awake).unwrap();
        w.chars.set(c.id, LOCATION, &Value::Vector([100.0, 0.0, 0.0])).unwrap();
    }
    for &id in &torn_ids {
        w.driver.set_replicates(w.ch, &w.chars, id, true).unwrap();
    }
    for s in statics.iter().filter(|s| s.alive) {
        w.driver.set_replicates(w.ch, &w.chars, s.id, true).unwrap();
        w.chars.set(s.id, LOCATION, &Value::Vector([100.0, 0.0, 0.0])).unwrap();
    }
    now.set(frame_no);
    for c in 0..w.clients.len() {
        stream(&mut w, &mut peers, &statics, c, true);
    }
    for _ in 0..150 {
        rich_step(&mut w, &mut peers, &mut rng, 0.0, frame_no);
        frame_no += 1;
    }
    let what = |e: String| format!("seed {seed}, loss {loss}: {e}");
    // An honest server's packets, in order, are never refused (a sublevel streamed out with
    // updates in flight included).
    let refused: u32 = peers.iter().map(|p| p.refused).sum();
    if refused > 0 {
        return Err(what(format!("{refused} packets refused")));
    }
    check(&w, &chars, &gone).map_err(|e| {
        let g: Vec<_> =
            why.iter().filter(|(g, _)| e.contains(&format!(" {g},"))).map(|(g, y)| format!("{g}: {y}")).collect();
        what(format!("{e} {g:?}"))
    })?;
    for (c, (_, client)) in w.clients.iter().enumerate() {
        for &g in &torn {
            if client.has(g) && !client.is_torn_off(g) {
                return Err(what(format!("client {c} holds torn-off {g} not torn off")));
            }
        }
        for s in &statics {
            if !s.alive {
                if client.has(s.guid) || client.static_object(&s.path).is_some() {
                    return Err(what(format!("client {c} holds destroyed static {}", s.guid)));
                }
                continue;
            }
            if !client.has(s.guid) {
                return Err(what(format!("client {c} lacks static {} ({:?})", s.guid, s.sublevel)));
            }
            let health = w.chars.get(s.id, HEALTH).ok();
            if client.value(s.guid, HEALTH) != health {
                return Err(what(format!(
                    "client {c}: static {} health {:?}, server {health:?}",
                    s.guid,
                    client.value(s.guid, HEALTH)
                )));
            }
            let mut want = Vec::new();
            for &(fa, cond) in &s.arrays {
                if allows(cond, false) {
                    want.push(fa);
                    let (server, held) = (w.items(fa), w.client_items(c, fa));
                    if held.as_ref() != Some(&server) {
                        return Err(what(format!(
                            "client {c}: static {}'s fast array {fa} {held:?}, server {server:?}",
                            s.guid
                        )));
                    }
                }
            }
            let mut have = client.fast_arrays_of(s.guid).to_vec();
            want.sort();
            have.sort();
            if have != want {
                return Err(what(format!("client {c}: static {}'s fast arrays {have:?}, want {want:?}", s.guid)));
            }
        }
    }
    Ok(())
}

/// One frame of [`rich_world`]: packets reach each client two frames later (each lost with
/// `loss`), feedback comes straight back (lost with `loss`).
fn rich_step(w: &mut World, peers: &mut [Peer], rng: &mut impl rand::Rng, loss: f64, frame: u32) {
    w.driver.tick(&mut [&mut w.chars, &mut w.weapons]).unwrap();
    for (c, (conn, world)) in w.clients.iter_mut().enumerate() {
        for p in w.driver.take_packets(*conn).unwrap() {
            if !(loss > 0.0 && rng.random_bool(loss)) {
                peers[c].inbox.push_back((frame + 2, p));
            }
        }
        while peers[c].inbox.front().is_some_and(|(at, _)| *at <= frame) {
            let (_, p) = peers[c].inbox.pop_front().unwrap();
            if let Err(e) = world.receive(&p) {
                if std::env::var("REVIEW_LOG").is_ok() {
                    eprintln!(
                        "frame {frame} client {c} (hall loaded {}, last stream {:?}): {e}",
                        peers[c].loaded, peers[c].streamed
                    );
                }
                peers[c].refused += 1;
            }
        }
        let fb = world.feedback();
        if !(loss > 0.0 && rng.random_bool(loss)) {
            w.driver.receive_feedback(*conn, &fb).unwrap();
        } else {
            w.driver.heard_from(*conn).unwrap();
        }
    }
}

#[test]
fn rich_random_worlds_heal_to_the_servers_state() {
    let mut failures = Vec::new();
    for seed in 0..16 {
        if let Err(e) = rich_world(seed, 0.25, 500) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}
