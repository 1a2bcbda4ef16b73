//! Characters switched off and on (`set_replicates`) with weapons and fast arrays, under loss
//! and dormancy, healed and checked.

use super::*;

/// Plays a random world of characters switched off and on, with weapons and fast arrays coming
/// and going, moving in and out of reach, changing owner and dormancy, over a link losing `loss`
/// of everything; then heals it (every character on, awake, in reach; no loss) and checks every
/// client holds exactly the server's state: each character, each weapon and fast array its
/// condition allows with the server's values, and nothing else — no destroyed character or
/// weapon, no weapon or array the server no longer sends it.
pub(super) fn switch_world(seed: u64, loss: f64, frames: u32, dormancy: bool) -> Result<(), String> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut w = World::new(3);
    let mut chars: Vec<Char> = Vec::new();
    let mut gone: Vec<NetGuid> = Vec::new();
    for frame in 0..frames {
        let op = rng.random_range(0..40);
        let k = (!chars.is_empty()).then(|| rng.random_range(0..chars.len()));
        match (op, k) {
            (0..=2, _) if chars.len() < 8 => {
                let c = spawn_char(&mut w, &mut rng, None);
                chars.push(c);
            }
            (3..=8, Some(k)) => toggle(&mut w, chars[k].id),
            (9..=10, Some(k)) => wander(&mut w, &mut rng, chars[k].id),
            (11..=12, Some(k)) if chars[k].weapons.len() < 3 => chars[k].arm(&mut w, &mut rng),
            (13, Some(k)) if !chars[k].weapons.is_empty() => {
                w.disarm(&mut rng, &mut chars[k].weapons, &mut gone);
            }
            (14, Some(k)) if !chars[k].weapons.is_empty() => chars[k].recondition(&mut w, &mut rng),
            (15..=16, Some(k)) => chars[k].reown(&mut w, &mut rng),
            (17, Some(k)) if chars[k].arrays.len() < 2 => chars[k].add_array(&mut w, &mut rng),
            (18, Some(k)) if !chars[k].arrays.is_empty() => {
                let i = rng.random_range(0..chars[k].arrays.len());
                let (fa, _) = chars[k].arrays.remove(i);
                w.driver.remove_fast_array(fa).unwrap();
                gone.push(fa);
            }
            (19..=20, Some(k)) if dormancy => {
                let d = if rng.random_bool(0.5) { Dormancy::DormantAll } else { Dormancy::Awake };
                w.driver.set_net_dormancy(w.ch, &w.chars, chars[k].id, d).unwrap();
            }
            (21, Some(k)) => {
                let c = chars.swap_remove(k);
                w.despawn_character((c.id, c.guid), (&c.weapons, &c.arrays), &mut gone);
            }
            _ => {}
        }
        // Values change now and then (the game does not care whether the actor is on).
        for c in &chars {
            for &(wid, _, _) in &c.weapons {
                if rng.random_bool(0.05) {
                    w.weapons.set(wid, AMMO, &Value::U32(rng.random_range(0..1000))).unwrap();
                }
            }
            if rng.random_bool(0.05) {
                w.chars.set(c.id, HEALTH, &Value::U32(rng.random_range(0..1000))).unwrap();
            }
            for &(fa, _) in &c.arrays {
                if rng.random_bool(0.1) {
                    let mut items = w.driver.fast_array_mut(fa).unwrap();
                    let ids: Vec<_> = items.iter().map(|(id, _)| id).collect();
                    match rng.random_range(0..3) {
                        0 if !ids.is_empty() => {
                            items.remove(ids[rng.random_range(0..ids.len())]).unwrap();
                        }
                        1 if !ids.is_empty() => {
                            let v: u32 = rng.random();
                            items.set(ids[rng.random_range(0..ids.len())], &v.to_le_bytes()).unwrap();
                        }
                        _ => {
                            let v: u32 = rng.random();
                            items.add(&v.to_le_bytes()).unwrap();
                        }
                    }
                }
            }
        }
        // Now and then one client loses everything for a while.
        let drop_all = if frame % 50 < 8 { 1 << (frame / 50 % 3) } else { 0 };
        w.step(&mut rng, loss, drop_all);
    }
    // Heal.
    for c in &chars {
        w.driver.set_replicates(w.ch, &w.chars, c.id, true).unwrap();
        if dormancy {
            w.driver.set_net_dormancy(w.ch, &w.chars, c.id, Dormancy::Awake).unwrap();
        }
        w.chars.set(c.id, LOCATION, &Value::Vector([100.0, 0.0, 0.0])).unwrap();
    }
    w.run(150);
    let what = |e: String| format!("seed {seed}, loss {loss}, dormancy {dormancy}: {e}");
    if !w.refused.is_empty() {
        return Err(what(format!("packets refused: {:?}", w.refused)));
    }
    check(&w, &chars, &gone).map_err(what)
}

#[test]
fn random_switch_worlds_heal_to_the_servers_state() {
    let mut failures = Vec::new();
    for seed in 0..12 {
        for (loss, dormancy) in [(0.2, false), (0.35, true)] {
            if let Err(e) = switch_world(seed, loss, 400, dormancy) {
                failures.push(e);
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}
