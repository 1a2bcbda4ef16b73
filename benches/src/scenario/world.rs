//! The simulated game of a scenario: where every actor is and what it does, frame by frame, from
//! one seed. It knows nothing of replication: it writes the class stores (as game code does) and
//! says what happened in [`FrameEvents`], which a server turns into its own calls.
//!
//! ```text
//! World::new            empty stores, the map, the players' drop positions (not yet spawned)
//! load_step(b) × B      level load: batch b of the pickups and loot containers spawns (and of
//!                       the dormant ones, if the world has any: idle, never changed)
//! join                  every player's ShooterCharacter spawns at its drop position, with its
//!                       ShooterWeapon (a sub-object)
//! step                  one tick of game time (1 / tick rate):
//!   characters          after the hot drop's fight, dispersing from it (straight out, fast);
//!                       otherwise roaming
//!                       (running, turning at a rate that wanders); now and then hit, aiming,
//!                       sprinting
//!   projectiles         past their lifetime → despawned; the rest fly straight
//!   firing              each character fires at the rate that keeps ~`projectiles` in the air;
//!                       its weapon's burst counter and ammo change with each shot
//!   static actors       a fraction per second changes (a pickup taken or restocked, a loot
//!                       container claimed): the game calls ForceNetUpdate on each
//! ```
//!
//! Every random choice comes from one ChaCha8 stream seeded by the config, in a fixed order, so
//! a seed gives the same frames whatever the machine or thread count.

use super::{Kind, ScenarioConfig};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use shadowrep::store::{ActorId, ClassStore};
use shadowrep::value::ObjectRef;
use shadowrep_layouts::classes::{
    Actor, ContainerOwnInfo, ENetRole, LootContainer, Pickup, Projectile, ShooterCharacter, ShooterWeapon, TakeHitInfo,
};
use shadowrep_layouts::{NetQuantize10, NetQuantize100, Rotator};
use std::f32::consts::{PI, TAU};

/// UE's default `MaxWalkSpeed` (units per second).
pub const WALK_SPEED: f32 = 600.0;
/// ShooterGame's running speed modifier.
pub const RUN_MODIFIER: f32 = 1.5;
/// Height of a character's eyes above its feet, and of a muzzle.
const EYE_HEIGHT: f32 = 160.0;
/// Fastest turn of a roaming character, radians per second.
const MAX_TURN_RATE: f32 = 2.0;
/// Projectile speed range, units per second.
const PROJECTILE_SPEED: (f32, f32) = (3_000.0, 8_000.0);
/// Projectile lifetime range, seconds ("flying for a second or two").
const PROJECTILE_LIFETIME: (f64, f64) = (1.0, 2.0);
/// Per character and second: chances of taking a hit, toggling aim, toggling sprint.
const HIT_RATE: f64 = 0.5;
const AIM_TOGGLE_RATE: f64 = 0.3;
const RUN_TOGGLE_RATE: f64 = 0.2;

/// A weapon's reserve and clip at spawn.
const WEAPON_AMMO: i32 = 300;
const CLIP_AMMO: i32 = 30;

/// Game-side lookup failure: the world only touches live actors of the stores' own classes.
const LIVE: &str = "the world writes only its own live actors with their own property types";

/// What happened in one frame of the game, for a server to act on.
#[derive(Clone, Debug, Default)]
pub struct FrameEvents {
    /// Players that joined (index = player = connection order); their characters spawned.
    pub joined: Vec<usize>,
    /// Projectiles that spawned, with the player whose character fired them.
    pub fired: Vec<(ActorId, usize)>,
    /// Static actors (pickups, loot containers) that spawned (level load).
    pub loaded: Vec<(Kind, ActorId)>,
    /// Dormant actors that spawned (level load), and whether each is placed in the level (a
    /// static actor with `Initial` dormancy; otherwise idle loot, `DormantAll`), with its index
    /// among the dormant actors (its path's number).
    pub dormant: Vec<(Kind, ActorId, bool, usize)>,
    /// Projectiles that despawned (already gone from the store).
    pub despawned: Vec<ActorId>,
    /// Static actors whose replicated state the game changed (a server calls ForceNetUpdate).
    pub changed: Vec<(Kind, ActorId)>,
    /// Players whose clip ran dry and reloaded.
    pub reloaded: Vec<usize>,
}

/// One player's character.
#[derive(Clone, Copy, Debug)]
struct Character {
    id: Option<ActorId>,
    /// Its weapon (a sub-object), once it joined.
    weapon: Option<ActorId>,
    pos: [f32; 3],
    /// Facing and heading (radians about +Z).
    yaw: f32,
    yaw_rate: f32,
    running: bool,
    health: f32,
    /// Leaving the hot drop, if it dropped there.
    dispersal: Option<Dispersal>,
    /// Shots owed (fractional rate carried over).
    shots: f64,
    /// A client controls the player: its aiming and sprinting come from the client's Server
    /// calls ([`World::set_targeting`], [`World::set_running`]), not from the game's dice.
    controlled: bool,
}

/// Leaving the hot drop: straight out at `speed` from `from` until `until` (server seconds).
#[derive(Clone, Copy, Debug)]
struct Dispersal {
    speed: f32,
    from: f64,
    until: f64,
}

/// A projectile in the air.
#[derive(Clone, Copy, Debug)]
struct Flying {
    id: ActorId,
    pos: [f32; 3],
    vel: [f32; 3],
    expires: f64,
}

/// The game world: the four class stores and the simulation state behind them.
pub struct World {
    cfg: ScenarioConfig,
    /// The stores, indexed by [`Kind::index`].
    pub stores: [ClassStore; 5],
    rng: ChaCha8Rng,
    characters: Vec<Character>,
    /// Each player's character NetGUID, as the server named it (projectiles' `Instigator`).
    guids: Vec<u64>,
    flying: Vec<Flying>,
    statics: Vec<(Kind, ActorId)>,
    /// Static actors of the whole level, per kind.
    static_totals: [usize; 5],
    /// Dormant actors spawned so far (never changed by the game).
    dormant: usize,
    time: f64,
    /// Static changes owed (fractional rate carried over).
    changes_owed: f64,
    /// Player fire rate, shots per second.
    fire_rate: f64,
}

impl World {
    /// A world for `cfg`: empty stores and the players' drop positions.
    pub fn new(cfg: &ScenarioConfig) -> World {
        let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
        let half = cfg.world_size / 2.0;
        let drop = cfg.hot_drop.map(|h| {
            let inner = half * 0.5;
            ([rng.random_range(-inner..inner), rng.random_range(-inner..inner)], h)
        });
        let mut characters = Vec::with_capacity(cfg.connections);
        for _ in 0..cfg.connections {
            let yaw = rng.random_range(0.0..TAU);
            let mut c = Character {
                id: None,
                weapon: None,
                pos: [rng.random_range(-half..half), rng.random_range(-half..half), 0.0],
                yaw,
                yaw_rate: 0.0,
                running: false,
                health: 100.0,
                dispersal: None,
                shots: rng.random(),
                controlled: false,
            };
            if let Some((centre, h)) = drop.filter(|_| rng.random_bool(cfg.hot_drop.map_or(0.0, |h| h.fraction))) {
                // Uniform in the drop disc, then out and away from its centre.
                let (r, a) = (h.radius * rng.random::<f32>().sqrt(), rng.random_range(0.0..TAU));
                c.pos = [centre[0] + r * a.cos(), centre[1] + r * a.sin(), 0.0];
                c.yaw = a + rng.random_range(-0.5..0.5);
                let speed = rng.random_range(h.spread_speed.0..h.spread_speed.1);
                let from = h.fight_seconds as f64;
                let until = from + rng.random_range(h.spread_seconds.0..h.spread_seconds.1) as f64;
                c.dispersal = Some(Dispersal { speed, from, until });
            }
            characters.push(c);
        }
        let statics = cfg.static_actors();
        let pickups = (statics as f64 * cfg.pickup_share).round() as usize;
        let mut static_totals = [0; 5];
        static_totals[Kind::Pickup.index()] = pickups;
        static_totals[Kind::Loot.index()] = statics - pickups;
        let mean_life = (PROJECTILE_LIFETIME.0 + PROJECTILE_LIFETIME.1) / 2.0;
        World {
            stores: Kind::ALL.map(|k| ClassStore::new(k.layout().clone())),
            rng,
            characters,
            guids: Vec::new(),
            flying: Vec::new(),
            statics: Vec::with_capacity(statics),
            static_totals,
            dormant: 0,
            time: 0.0,
            changes_owed: 0.0,
            fire_rate: cfg.projectiles as f64 / (cfg.connections.max(1) as f64 * mean_life),
            cfg: cfg.clone(),
        }
    }

    /// The config the world was built from.
    pub fn config(&self) -> &ScenarioConfig {
        &self.cfg
    }

    /// The store of `kind`.
    pub fn store(&self, kind: Kind) -> &ClassStore {
        &self.stores[kind.index()]
    }

    /// Every store, mutably, in [`Kind`] order (what a server's tick takes).
    pub fn stores_mut(&mut self) -> Vec<&mut ClassStore> {
        self.stores.iter_mut().collect()
    }

    /// Seconds of game time since the players joined.
    pub fn time(&self) -> f64 {
        self.time
    }

    /// Players (one character and one connection each).
    pub fn players(&self) -> usize {
        self.characters.len()
    }

    /// Player `p`'s character, once it joined.
    pub fn character(&self, p: usize) -> Option<ActorId> {
        self.characters.get(p)?.id
    }

    /// Where player `p` views from (its character's eyes) and its unit view direction.
    pub fn view(&self, p: usize) -> ([f32; 3], [f32; 3]) {
        let c = &self.characters[p];
        ([c.pos[0], c.pos[1], c.pos[2] + EYE_HEIGHT], [c.yaw.cos(), c.yaw.sin(), 0.0])
    }

    /// Static actors spawned so far.
    pub fn statics(&self) -> &[(Kind, ActorId)] {
        &self.statics
    }

    /// Projectiles in the air.
    pub fn projectiles(&self) -> usize {
        self.flying.len()
    }

    /// Gives the world the NetGUID of each player's character (projectiles name their
    /// instigator by it).
    pub fn bind_character_guids(&mut self, guids: Vec<u64>) {
        let store = &mut self.stores[Kind::Weapon.index()];
        for (c, &g) in self.characters.iter().zip(&guids) {
            if let Some(w) = c.weapon {
                ShooterWeapon::set_my_pawn_and_mark_dirty(store, w, ObjectRef(g)).expect(LIVE);
            }
        }
        self.guids = guids;
    }

    /// Level load, batch `b` of `batches`: spawns that share of the pickups and loot
    /// containers, at rest anywhere on the map.
    pub fn load_step(&mut self, b: usize, batches: usize) -> FrameEvents {
        let mut ev = FrameEvents::default();
        let half = self.cfg.world_size / 2.0;
        let batches = batches.max(1);
        for kind in [Kind::Pickup, Kind::Loot] {
            let total = self.static_totals[kind.index()];
            let share = |b: usize| (total * b / batches).min(total);
            for _ in share(b)..share(b + 1) {
                let rng = &mut self.rng;
                let at = [rng.random_range(-half..half), rng.random_range(-half..half), rng.random_range(0.0..300.0)];
                let id = self.spawn_static(kind, at);
                self.statics.push((kind, id));
                ev.loaded.push((kind, id));
            }
        }
        if let Some(d) = self.cfg.dormant {
            let share = |b: usize| (d.actors * b / batches).min(d.actors);
            let placed = (d.actors as f64 * d.static_share).round() as usize;
            for i in share(b)..share(b + 1) {
                let kind = if self.rng.random_bool(self.cfg.pickup_share) { Kind::Pickup } else { Kind::Loot };
                let rng = &mut self.rng;
                let at = [rng.random_range(-half..half), rng.random_range(-half..half), rng.random_range(0.0..300.0)];
                let id = self.spawn_static(kind, at);
                ev.dormant.push((kind, id, i < placed, i));
                self.dormant += 1;
            }
        }
        ev
    }

    /// Dormant actors spawned so far.
    pub fn dormant_actors(&self) -> usize {
        self.dormant
    }

    fn spawn_static(&mut self, kind: Kind, at: [f32; 3]) -> ActorId {
        let rng = &mut self.rng;
        let store = &mut self.stores[kind.index()];
        let id = store.spawn();
        match kind {
            Kind::Pickup => {
                Pickup::set_item_id_and_mark_dirty(store, id, rng.random_range(1..400)).expect(LIVE);
                Pickup::set_count_and_mark_dirty(store, id, rng.random_range(1..60)).expect(LIVE);
                Pickup::set_available_and_mark_dirty(store, id, true).expect(LIVE);
                Pickup::set_location_and_mark_dirty(store, id, NetQuantize100(at)).expect(LIVE);
            }
            _ => {
                Actor::set_location(store, id, NetQuantize100(at)).expect(LIVE);
                let yaw = rng.random_range(-180.0..180.0);
                Actor::set_rotation(store, id, Rotator::new(0.0, yaw, 0.0)).expect(LIVE);
                set_roles(store, id, ENetRole::SimulatedProxy);
            }
        }
        id
    }

    /// Every player joins: its character spawns at its drop position.
    pub fn join(&mut self) -> FrameEvents {
        let mut ev = FrameEvents::default();
        for p in 0..self.characters.len() {
            let store = &mut self.stores[Kind::Character.index()];
            let id = store.spawn();
            let c = &mut self.characters[p];
            c.id = Some(id);
            Actor::set_location(store, id, NetQuantize100(c.pos)).expect(LIVE);
            Actor::set_rotation(store, id, Rotator::new(0.0, c.yaw.to_degrees(), 0.0)).expect(LIVE);
            ShooterCharacter::set_health(store, id, c.health).expect(LIVE);
            set_roles(store, id, ENetRole::AutonomousProxy);
            let weapons = &mut self.stores[Kind::Weapon.index()];
            let w = weapons.spawn();
            ShooterWeapon::set_current_ammo(weapons, w, WEAPON_AMMO).expect(LIVE);
            ShooterWeapon::set_current_ammo_in_clip(weapons, w, CLIP_AMMO).expect(LIVE);
            self.characters[p].weapon = Some(w);
            ev.joined.push(p);
        }
        ev
    }

    /// Whether a client controls player `p` (its aiming and sprinting then come from the
    /// client's calls) — a player nobody controls aims and sprints at random.
    pub fn set_controlled(&mut self, p: usize, controlled: bool) {
        if let Some(c) = self.characters.get_mut(p) {
            c.controlled = controlled;
        }
    }

    /// Player `p`'s client aims or stops (ShooterGame's `ServerSetTargeting`); false if the
    /// player has no character.
    pub fn set_targeting(&mut self, p: usize, on: bool) -> bool {
        let Some(id) = self.character(p) else { return false };
        ShooterCharacter::set_is_targeting(&mut self.stores[Kind::Character.index()], id, on).is_ok()
    }

    /// Player `p`'s client sprints or stops (ShooterGame's `ServerSetRunning`); false if the
    /// player has no character.
    pub fn set_running(&mut self, p: usize, on: bool) -> bool {
        let Some(id) = self.character(p) else { return false };
        self.characters[p].running = on;
        ShooterCharacter::set_wants_to_run(&mut self.stores[Kind::Character.index()], id, on).is_ok()
    }

    /// Player `p`'s weapon, once it joined.
    pub fn weapon(&self, p: usize) -> Option<ActorId> {
        self.characters.get(p)?.weapon
    }

    /// One tick of game time.
    pub fn step(&mut self) -> FrameEvents {
        let dt = 1.0 / self.cfg.tick_rate;
        self.time += dt;
        let mut ev = FrameEvents::default();
        self.move_characters(dt as f32);
        self.fly(dt, &mut ev);
        self.fire(dt, &mut ev);
        self.change_statics(dt, &mut ev);
        ev
    }

    fn move_characters(&mut self, dt: f32) {
        let half = self.cfg.world_size / 2.0;
        let p = |rate: f64| (rate * dt as f64).min(1.0);
        let store = &mut self.stores[Kind::Character.index()];
        for c in &mut self.characters {
            let Some(id) = c.id else { continue };
            let speed = match c.dispersal {
                Some(d) if (d.from..d.until).contains(&self.time) => d.speed,
                _ => {
                    if c.dispersal.is_some_and(|d| self.time >= d.until) {
                        c.dispersal = None;
                    }
                    c.yaw_rate =
                        (c.yaw_rate + self.rng.random_range(-4.0..4.0) * dt).clamp(-MAX_TURN_RATE, MAX_TURN_RATE);
                    c.yaw = (c.yaw + c.yaw_rate * dt).rem_euclid(TAU);
                    if c.running {
                        WALK_SPEED * RUN_MODIFIER
                    } else {
                        WALK_SPEED
                    }
                }
            };
            let vel = [speed * c.yaw.cos(), speed * c.yaw.sin(), 0.0];
            c.pos[0] += vel[0] * dt;
            c.pos[1] += vel[1] * dt;
            // The map's edge turns a character back.
            if c.pos[0].abs() > half {
                c.pos[0] = c.pos[0].clamp(-half, half);
                c.yaw = (PI - c.yaw).rem_euclid(TAU);
            }
            if c.pos[1].abs() > half {
                c.pos[1] = c.pos[1].clamp(-half, half);
                c.yaw = (-c.yaw).rem_euclid(TAU);
            }
            Actor::set_location(store, id, NetQuantize100(c.pos)).expect(LIVE);
            Actor::set_rotation(store, id, Rotator::new(0.0, c.yaw.to_degrees(), 0.0)).expect(LIVE);
            Actor::set_linear_velocity(store, id, NetQuantize10(vel)).expect(LIVE);
            if self.rng.random_bool(p(HIT_RATE)) {
                let damage = self.rng.random_range(5.0..40.0f32);
                c.health = if c.health > damage { c.health - damage } else { 100.0 };
                ShooterCharacter::set_health(store, id, c.health).expect(LIVE);
                let hit = TakeHitInfo { actual_damage: damage, damage_type_class: ObjectRef(0) };
                ShooterCharacter::set_last_take_hit_info(store, id, hit).expect(LIVE);
            }
            // A controlled player's dice are rolled all the same: the rest of the world draws
            // what it would have.
            if self.rng.random_bool(p(AIM_TOGGLE_RATE)) && !c.controlled {
                let aiming = !ShooterCharacter::is_targeting(store, id).expect(LIVE);
                ShooterCharacter::set_is_targeting(store, id, aiming).expect(LIVE);
            }
            if self.rng.random_bool(p(RUN_TOGGLE_RATE)) && !c.controlled {
                c.running = !c.running;
                ShooterCharacter::set_wants_to_run(store, id, c.running).expect(LIVE);
            }
        }
    }

    fn fly(&mut self, dt: f64, ev: &mut FrameEvents) {
        let (time, store) = (self.time, &mut self.stores[Kind::Projectile.index()]);
        self.flying.retain_mut(|f| {
            if f.expires <= time {
                store.despawn(f.id).expect(LIVE);
                ev.despawned.push(f.id);
                return false;
            }
            for (p, v) in f.pos.iter_mut().zip(f.vel) {
                *p += v * dt as f32;
            }
            Projectile::set_location(store, f.id, NetQuantize100(f.pos)).expect(LIVE);
            true
        });
    }

    fn fire(&mut self, dt: f64, ev: &mut FrameEvents) {
        const _: () = assert!(Kind::Projectile as usize == 1 && Kind::Weapon as usize == 4, "the stores' order");
        let [_, store, _, _, weapons] = &mut self.stores;
        for (p, c) in self.characters.iter_mut().enumerate() {
            if c.id.is_none() {
                continue;
            }
            c.shots += self.fire_rate * dt;
            while c.shots >= 1.0 {
                c.shots -= 1.0;
                let speed = self.rng.random_range(PROJECTILE_SPEED.0..PROJECTILE_SPEED.1);
                let spread = self.rng.random_range(-0.05..0.05f32);
                let yaw = c.yaw + spread;
                let vel = [speed * yaw.cos(), speed * yaw.sin(), speed * self.rng.random_range(-0.02..0.05f32)];
                let pos = [c.pos[0], c.pos[1], c.pos[2] + EYE_HEIGHT];
                let id = store.spawn();
                Projectile::set_location(store, id, NetQuantize100(pos)).expect(LIVE);
                Projectile::set_velocity(store, id, NetQuantize10(vel)).expect(LIVE);
                let damage = self.rng.random_range(10.0..50.0f32);
                Projectile::set_damage_and_mark_dirty(store, id, damage).expect(LIVE);
                let instigator = ObjectRef(self.guids.get(p).copied().unwrap_or(0));
                Projectile::set_instigator_and_mark_dirty(store, id, instigator).expect(LIVE);
                let life = self.rng.random_range(PROJECTILE_LIFETIME.0..PROJECTILE_LIFETIME.1);
                self.flying.push(Flying { id, pos, vel, expires: self.time + life });
                ev.fired.push((id, p));
                if let Some(w) = c.weapon {
                    let burst = ShooterWeapon::burst_counter(weapons, w).expect(LIVE);
                    ShooterWeapon::set_burst_counter(weapons, w, burst.wrapping_add(1)).expect(LIVE);
                    let clip = ShooterWeapon::current_ammo_in_clip(weapons, w).expect(LIVE);
                    let ammo = ShooterWeapon::current_ammo(weapons, w).expect(LIVE);
                    // Reloaded from the reserve when the clip runs dry; the reserve refills.
                    let (clip, ammo) = if clip > 1 {
                        (clip - 1, ammo)
                    } else {
                        ev.reloaded.push(p);
                        (CLIP_AMMO, (ammo - CLIP_AMMO).max(CLIP_AMMO))
                    };
                    ShooterWeapon::set_current_ammo_in_clip(weapons, w, clip).expect(LIVE);
                    ShooterWeapon::set_current_ammo(weapons, w, ammo).expect(LIVE);
                }
            }
        }
    }

    fn change_statics(&mut self, dt: f64, ev: &mut FrameEvents) {
        if self.statics.is_empty() {
            return;
        }
        self.changes_owed += self.cfg.static_change_rate * self.statics.len() as f64 * dt;
        while self.changes_owed >= 1.0 {
            self.changes_owed -= 1.0;
            let (kind, id) = self.statics[self.rng.random_range(0..self.statics.len())];
            let store = &mut self.stores[kind.index()];
            match kind {
                Kind::Pickup => {
                    // Taken (gone until restocked) or restocked with a new stack.
                    let available = !Pickup::available(store, id).expect(LIVE);
                    Pickup::set_available_and_mark_dirty(store, id, available).expect(LIVE);
                    if available {
                        Pickup::set_count_and_mark_dirty(store, id, self.rng.random_range(1..60)).expect(LIVE);
                    }
                }
                _ => {
                    // Claimed by a player for 30 s, or released.
                    let owned = !LootContainer::is_container_owned(store, id).expect(LIVE);
                    LootContainer::set_is_container_owned_and_mark_dirty(store, id, owned).expect(LIVE);
                    let player = self.rng.random_range(0..self.characters.len().max(1)) as u64;
                    let info = ContainerOwnInfo {
                        player_id_array: if owned { vec![player] } else { Vec::new() },
                        start_time: self.time as f32,
                        own_duration: 30.0,
                    };
                    LootContainer::set_container_own_info_and_mark_dirty(store, id, info).expect(LIVE);
                }
            }
            ev.changed.push((kind, id));
        }
    }
}

/// Server-side roles of a new actor (push-based: written once, marked).
fn set_roles(store: &mut ClassStore, id: ActorId, remote: ENetRole) {
    Actor::set_role_and_mark_dirty(store, id, ENetRole::Authority).expect(LIVE);
    Actor::set_remote_role_and_mark_dirty(store, id, remote).expect(LIVE);
}
