//! A small dedicated server, end to end, in process: three players, their heroes (movement,
//! health with the old value in its RepNotify, owner-only ammo, a pushed score, a weapon
//! sub-object), health packs spawned and destroyed (one spawned dormant, one made dormant and
//! woken), a reliable multicast and a Server call, over links losing 10 % of the datagrams each
//! way; then quiet frames, and every client must hold the server's values (the library's state
//! digests).
//!
//! ```sh
//! cargo run --release -p shadowrep-layouts --example dedicated_server   # SEED=3 LOSS=0.3 to vary
//! ```
//!
//! (Written by a newcomer to the crate from its README and docs — session 75's usability review;
//! `layouts/tests/dedicated_server.rs` runs it in every `cargo test`.)

use shadowrep::client::{client_digest, expected_digest};
use shadowrep::client::{ClientEvent, ClientWorld};
use shadowrep::link::{Link, LinkConfig};
use shadowrep::net::{
    ActorLevelConfig, ConnectionId, Dormancy, DriverConfig, NetDriver, NetGuid, NetSettings, SubObjectCondition,
    UpdateFrequency, Viewer,
};
use shadowrep_layouts::classes::Actor;
use shadowrep_layouts::prelude::*;

replicated_class! {
    /// The player's pawn.
    pub class Hero extends Actor {
        /// Hit points; the client's notify gets the previous value (a damage number).
        health: f32 = "Health" [notify = OnChangedWithOld, default = 100.0],
        /// Only the owning player sees its ammo.
        ammo: u16 = "Ammo" [cond = OwnerOnly, default = 30],
        /// Push model: marked when it changes.
        score: u32 = "Score" [push],
    }
    rpcs {
        /// Everyone who sees the hero plays the taunt.
        play_taunt = "MulticastPlayTaunt" (taunt: u8) [multicast, reliable];
        /// The owning player jumps.
        jump = "ServerJump" (height: f32) [server, reliable];
    }
}

replicated_class! {
    /// A health pack lying in the world.
    pub class HealthPack extends Actor {
        heal_amount: u16 = "HealAmount" [default = 25],
        available: bool = "bAvailable" [notify = OnChanged, default = true],
    }
}

replicated_class! {
    /// A hero's weapon, a sub-object of the hero.
    pub class Weapon {
        burst_counter: u32 = "BurstCounter" [notify = OnChanged],
        clip: u16 = "Clip" [cond = OwnerOnly, default = 12],
    }
}

const PLAYERS: usize = 3;
const FRAMES: u32 = 100;
const HEAL_FRAMES: u32 = 90;
const PACK_CULL: f32 = 5_000.0;

struct Player {
    conn: ConnectionId,
    world: ClientWorld,
    down: Link,
    up: Link,
    hero: ActorId,
    hero_guid: NetGuid,
    notifies: usize,
    old_health_seen: Vec<(f32, f32)>,
    taunts: usize,
    spawned: usize,
    destroyed: usize,
    dormant_events: usize,
}

fn lossy(seed: u64, loss: f64) -> LinkConfig {
    LinkConfig { loss, duplicate: 0.0, reorder: 0.0, latency: 1, jitter: 0, seed }
}

/// Runs the server and its clients; an error names what did not converge.
pub fn main() -> Result<(), Box<dyn std::error::Error>> {
    // ---- the server -------------------------------------------------------------------------
    let level = ActorLevelConfig { tick_rate: 30.0, ..ActorLevelConfig::default() };
    let mut driver = NetDriver::new(DriverConfig { actor_level: Some(level), ..DriverConfig::default() })?;
    let mut heroes = Hero::new_store();
    let mut packs = HealthPack::new_store();
    let mut weapons = Weapon::new_store();
    let hero_class = driver.register_class(&mut heroes)?;
    let pack_class = driver.register_class(&mut packs)?;
    let weapon_class = driver.register_class(&mut weapons)?;
    // Relevancy reads each actor's replicated location.
    driver.set_location_property(hero_class, Actor::LOCATION)?;
    driver.set_location_property(pack_class, Actor::LOCATION)?;
    // Heroes: 30 Hz, default cull distance (15 000 units). Packs: 2 Hz, culled at 5 000 units.
    driver.set_class_settings(
        hero_class,
        NetSettings {
            frequency: UpdateFrequency { net_update_frequency: 30.0, min_net_update_frequency: 5.0 },
            net_priority: 3.0,
            ..NetSettings::default()
        },
    )?;
    driver.set_class_settings(
        pack_class,
        NetSettings {
            frequency: UpdateFrequency { net_update_frequency: 2.0, min_net_update_frequency: 1.0 },
            cull_distance_squared: PACK_CULL * PACK_CULL,
            ..NetSettings::default()
        },
    )?;

    // ---- players join -----------------------------------------------------------------------
    // SEED (environment) picks the links' luck; LOSS their loss (default 0.1).
    let seed: u64 = std::env::var("SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0);
    let loss: f64 = std::env::var("LOSS").ok().and_then(|s| s.parse().ok()).unwrap_or(0.1);
    let mut players = Vec::new();
    let mut weapon_of = Vec::new();
    for i in 0..PLAYERS {
        let conn = driver.add_connection(false);
        // A client knows the server's classes in the server's order (over UDP it checks the
        // checksums in its handshake: `shadowrep::session`).
        let world = ClientWorld::new(&driver.layouts(), &driver.checksums())?;
        let hero = heroes.spawn();
        Actor::set_location(&mut heroes, hero, NetQuantize100::new(i as f32 * 1_000.0, 0.0, 0.0))?;
        let hero_guid = driver.assign_guid(hero_class, &heroes, hero)?;
        driver.set_owner(hero_class, &heroes, hero, Some(conn), true)?; // possessed: autonomous proxy
        let weapon = weapons.spawn();
        driver.register_sub_object(weapon_class, &weapons, weapon, hero_guid, SubObjectCondition::None)?;
        weapon_of.push(weapon);
        players.push(Player {
            conn,
            world,
            down: Link::new(lossy(seed * 1000 + 100 + i as u64, loss)),
            up: Link::new(lossy(seed * 1000 + 200 + i as u64, loss)),
            hero,
            hero_guid,
            notifies: 0,
            old_health_seen: Vec::new(),
            taunts: 0,
            spawned: 0,
            destroyed: 0,
            dormant_events: 0,
        });
    }

    // Health packs: four near the players, one far away (beyond the packs' cull distance).
    let mut live_packs = Vec::new();
    for x in [500.0, 1_500.0, 2_500.0, 3_000.0, 40_000.0] {
        let p = packs.spawn();
        Actor::set_location(&mut packs, p, NetQuantize100::new(x, 800.0, 0.0))?;
        live_packs.push(p);
    }
    let sleeper = live_packs[0];
    // A pack that sleeps from its spawn: opened once with its state, then dormant (UE's pickup
    // spawned with `DORM_DormantAll`) — the call gives it its NetGUID at once.
    let napper = packs.spawn();
    Actor::set_location(&mut packs, napper, NetQuantize100::new(1_800.0, 800.0, 0.0))?;
    driver.set_net_dormancy(pack_class, &packs, napper, Dormancy::DormantAll)?;

    // ---- the game loop ----------------------------------------------------------------------
    let mut jumps = 0;
    let mut ragdoll = None;
    for frame in 0..FRAMES + HEAL_FRAMES {
        let playing = frame < FRAMES;
        if frame == FRAMES {
            for p in &mut players {
                p.down.set_config(lossy(0, 0.0));
                p.up.set_config(lossy(0, 0.0));
            }
        }
        if playing {
            // Movement: each hero walks along x and back.
            for (i, p) in players.iter().enumerate() {
                let t = frame as f32 / 30.0;
                let x = i as f32 * 1_000.0 + 400.0 * (t + i as f32).sin();
                let y = 300.0 * (0.5 * t).cos();
                Actor::set_location(&mut heroes, p.hero, NetQuantize100::new(x, y, 0.0))?;
                Actor::set_linear_velocity(
                    &mut heroes,
                    p.hero,
                    NetQuantize10::new(400.0 * (t + i as f32).cos(), 0.0, 0.0),
                )?;
            }
            // Combat: player 0 takes damage every 10 frames, everyone fires now and then.
            if frame % 10 == 5 {
                let h = Hero::health(&heroes, players[0].hero)?;
                Hero::set_health(&mut heroes, players[0].hero, h - 7.5)?;
            }
            if frame % 7 == 3 {
                for (i, p) in players.iter().enumerate() {
                    let ammo = Hero::ammo(&heroes, p.hero)?;
                    Hero::set_ammo(&mut heroes, p.hero, ammo.saturating_sub(1 + i as u16))?;
                    let w = weapon_of[i];
                    let (burst, clip) = (Weapon::burst_counter(&weapons, w)?, Weapon::clip(&weapons, w)?);
                    Weapon::set_burst_counter(&mut weapons, w, burst + 1)?;
                    Weapon::set_clip(&mut weapons, w, clip.saturating_sub(1))?;
                }
            }
            if frame % 13 == 0 {
                let s = Hero::score(&heroes, players[1].hero)?;
                Hero::set_score_and_mark_dirty(&mut heroes, players[1].hero, s + 10)?;
            }
            // A pack goes dormant, changes while asleep, then wakes.
            match frame {
                20 => driver.set_net_dormancy(pack_class, &packs, sleeper, Dormancy::DormantAll)?,
                50 => HealthPack::set_heal_amount(&mut packs, sleeper, 50)?,
                70 => driver.set_net_dormancy(pack_class, &packs, sleeper, Dormancy::Awake)?,
                _ => {}
            }
            // Packs are picked up (destroyed) and new ones spawn.
            if frame == 30 {
                let taken = live_packs.remove(1);
                HealthPack::set_available(&mut packs, taken, false)?;
                packs.despawn(taken)?;
            }
            if frame == 40 {
                let p = packs.spawn();
                Actor::set_location(&mut packs, p, NetQuantize100::new(1_200.0, -900.0, 0.0))?;
                HealthPack::set_heal_amount(&mut packs, p, 75)?;
                live_packs.push(p);
            }
            if frame == 60 {
                let taken = live_packs.remove(2);
                packs.despawn(taken)?;
                let p = packs.spawn();
                Actor::set_location(&mut packs, p, NetQuantize100::new(2_200.0, 600.0, 0.0))?;
                live_packs.push(p);
            }
            // A reliable multicast: player 2's hero taunts.
            if frame == 25 {
                Hero::call_play_taunt(&mut driver, hero_class, &heroes, players[2].hero, 4)?;
            }
            // Player 2's hero dies: health 0, torn off (a ragdoll on every client), then gone;
            // a new hero with a new weapon is possessed.
            if frame == 75 {
                let dead = players[2].hero;
                ragdoll = Some(players[2].hero_guid);
                Hero::set_health(&mut heroes, dead, 0.0)?;
                driver.tear_off(hero_class, &heroes, dead)?;
            }
            if frame == 80 {
                let p = &mut players[2];
                heroes.despawn(p.hero)?;
                weapons.despawn(weapon_of[2])?;
                p.hero = heroes.spawn();
                Actor::set_location(&mut heroes, p.hero, NetQuantize100::new(2_000.0, 0.0, 0.0))?;
                p.hero_guid = driver.assign_guid(hero_class, &heroes, p.hero)?;
                driver.set_owner(hero_class, &heroes, p.hero, Some(p.conn), true)?;
                weapon_of[2] = weapons.spawn();
                driver.register_sub_object(
                    weapon_class,
                    &weapons,
                    weapon_of[2],
                    p.hero_guid,
                    SubObjectCondition::None,
                )?;
            }
            // A Server call: player 1's client asks to jump.
            if frame == 35 {
                let p = &mut players[1];
                Hero::call_jump(&mut p.world, p.hero_guid, 120.0)?;
            }
        }

        // Each connection views from its hero, every frame (the actor level sends a connection
        // without viewers nothing but keep-alives).
        for p in &players {
            let at = Actor::location(&heroes, p.hero)?.0;
            let viewer =
                Viewer { real_viewer: None, view_target: Some(p.hero_guid), location: at, direction: [1.0, 0.0, 0.0] };
            driver.set_viewers(p.conn, &[viewer])?;
        }

        driver.tick(&mut [&mut heroes, &mut packs, &mut weapons])?;
        // A client that stopped acknowledging reliable calls is dropped by the driver: end its
        // session (here: nobody should be).
        if let Some(failed) = driver.take_failed_connections().first() {
            return Err(format!("connection failed: {failed:?}").into());
        }

        for p in &mut players {
            for packet in driver.take_packets(p.conn)? {
                p.down.send(packet);
            }
            for packet in p.down.tick() {
                p.world.receive(&packet)?;
            }
            for n in p.world.take_notifies() {
                p.notifies += 1;
                // Typed: `Some((old, new))` for a notify of Hero's Health, `None` for any other.
                if let Some((Some(old), new)) = Hero::health_notify(&p.world, &n) {
                    p.old_health_seen.push((old, new));
                }
            }
            for e in p.world.take_events() {
                match e {
                    ClientEvent::Spawned { .. } => p.spawned += 1,
                    ClientEvent::Destroyed { .. } => p.destroyed += 1,
                    ClientEvent::Dormant { .. } => p.dormant_events += 1,
                    _ => {}
                }
            }
            for call in p.world.take_rpcs() {
                if Hero::play_taunt_args(&call) == Some((4,)) {
                    p.taunts += 1;
                }
            }
            // Feedback whenever the client owes it (packets came, calls wait).
            if p.world.feedback_due() {
                p.up.send(p.world.feedback());
            }
            for feedback in p.up.tick() {
                driver.receive_feedback(p.conn, &feedback)?;
            }
        }
        for call in driver.take_server_rpcs() {
            if let Some((height,)) = Hero::jump_args(&call) {
                jumps += 1;
                let at = Actor::location(&heroes, call.id)?.0;
                Actor::set_location(&mut heroes, call.id, NetQuantize100::new(at[0], at[1], height))?;
            }
        }
    }

    // ---- did every client converge? ---------------------------------------------------------
    // After the quiet frames nothing is in flight: each client's digest (its actors and their
    // values as the wire carries them: quantised vectors, say) equals the one the server
    // computes of what the connection should hold. (Dormant and torn-off copies are not in
    // either: the client keeps what it had.)
    let mut failures = Vec::new();
    for p in &players {
        let held = client_digest(&p.world);
        let expected = expected_digest(&driver, p.conn, &[&heroes, &packs, &weapons])?;
        println!(
            "conn {:?}: {} actors held, {} notifies (health old→new {:?}), {} spawned, {} destroyed, {} dormant, \
             {} taunts; settled {}, digests {}",
            p.conn,
            p.world.actor_count(),
            p.notifies,
            p.old_health_seen,
            p.spawned,
            p.destroyed,
            p.dormant_events,
            p.taunts,
            driver.is_settled(p.conn)?,
            if held == expected { "equal" } else { "DIFFER" },
        );
        if held != expected {
            failures.push(format!("conn {:?}: client {held:?}, server {expected:?}", p.conn));
        }
        if !p.world.is_dormant(driver.guid_of(pack_class, napper).ok_or("the napper has a GUID")?) {
            failures.push(format!("conn {:?}: the pack spawned dormant is not held dormant", p.conn));
        }
        if p.taunts != 1 {
            failures.push(format!("conn {:?}: {} taunts, not the one reliable call", p.conn, p.taunts));
        }
        // Every old → new pair a Health notify brought is a step of 7.5 or the ragdoll's fall.
        if p.old_health_seen.is_empty() || p.old_health_seen.iter().any(|&(old, new)| old - new != 7.5 && new != 0.0) {
            failures.push(format!("conn {:?}: health notifies {:?}", p.conn, p.old_health_seen));
        }
    }
    println!("server took {jumps} jump(s)");
    if jumps != 1 {
        failures.push(format!("{jumps} Server calls taken, not the one made"));
    }
    if let Some(guid) = ragdoll {
        for p in &players {
            let health = p.world.actor(guid).map(|(store, id)| Hero::health(store, id));
            if !p.world.is_torn_off(guid) {
                failures.push(format!("conn {:?}: ragdoll {guid:?} not torn off", p.conn));
            } else if !matches!(health, Some(Ok(h)) if h == 0.0) {
                // As in UE, a tear-off's last update is not resent once its packet is lost (the
                // channel is closed): the ragdoll keeps what it had. Not a failure — a death that
                // must arrive goes as a reliable multicast before the tear-off.
                println!("note: conn {:?}: ragdoll {guid:?} kept health {health:?} (its last update was lost)", p.conn);
            }
        }
    }
    for f in &failures {
        println!("MISMATCH {f}");
    }
    if failures.is_empty() {
        println!("converged: every client holds the server's values");
        Ok(())
    } else {
        Err(format!("{} mismatches", failures.len()).into())
    }
}
