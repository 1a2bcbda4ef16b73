//! The profiles' worlds as data: the classes of a scenario with their net settings, the hot
//! drop, and [`ScenarioConfig`] for `battle_royale`, `mmo` and `open_world`.

use shadowrep::net::consider::UpdateFrequency;
use shadowrep::net::NetSettings;
use shadowrep::schema::ClassLayout;
use shadowrep_layouts::classes::{LootContainer, Pickup, Projectile, ShooterCharacter, ShooterWeapon};
use std::sync::Arc;

/// The classes of a scenario, in registration order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A player's `ShooterCharacter`.
    Character,
    /// A `Projectile` in the air.
    Projectile,
    /// A `Pickup` on the floor.
    Pickup,
    /// A `LootContainer`.
    Loot,
    /// A character's `ShooterWeapon` (a sub-object of the character).
    Weapon,
}

impl Kind {
    /// Every kind, in registration order.
    pub const ALL: [Kind; 5] = [Kind::Character, Kind::Projectile, Kind::Pickup, Kind::Loot, Kind::Weapon];

    /// Index in [`Kind::ALL`] (and the class id the server registers it as).
    pub fn index(self) -> usize {
        self as usize
    }

    /// The class layout.
    pub fn layout(self) -> &'static Arc<ClassLayout> {
        match self {
            Kind::Character => ShooterCharacter::layout(),
            Kind::Projectile => Projectile::layout(),
            Kind::Pickup => Pickup::layout(),
            Kind::Loot => LootContainer::layout(),
            Kind::Weapon => ShooterWeapon::layout(),
        }
    }

    /// The class name.
    pub fn class_name(self) -> &'static str {
        match self {
            Kind::Character => ShooterCharacter::CLASS_NAME,
            Kind::Projectile => Projectile::CLASS_NAME,
            Kind::Pickup => Pickup::CLASS_NAME,
            Kind::Loot => LootContainer::CLASS_NAME,
            Kind::Weapon => ShooterWeapon::CLASS_NAME,
        }
    }

    /// The class's net settings (see the module documentation for the choices).
    pub fn net_settings(self) -> NetSettings {
        let freq = |net_update_frequency, min_net_update_frequency| UpdateFrequency {
            net_update_frequency,
            min_net_update_frequency,
        };
        let ue = NetSettings::default();
        match self {
            Kind::Character => NetSettings { frequency: freq(100.0, 2.0), net_priority: 3.0, ..ue },
            Kind::Projectile => NetSettings { frequency: freq(100.0, 2.0), net_priority: 1.0, ..ue },
            Kind::Pickup => NetSettings { frequency: freq(2.0, 1.0), net_priority: 1.0, ..ue },
            Kind::Loot => NetSettings { frequency: freq(5.0, 1.0), net_priority: 1.0, ..ue },
            // A sub-object takes its character's frequency, priority and relevancy.
            Kind::Weapon => NetSettings { frequency: freq(100.0, 2.0), net_priority: 3.0, ..ue },
        }
    }
}

/// The opening hot drop: most players start close together and fly apart.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HotDrop {
    /// Share of the players who drop there.
    pub fraction: f64,
    /// Radius of the drop disc, units.
    pub radius: f32,
    /// Seconds the players fight in the drop (roaming in the disc) before they leave it.
    pub fight_seconds: f32,
    /// Speed range of leaving it (gliding, vehicles), units per second.
    pub spread_speed: (f32, f32),
    /// How long each keeps leaving before it roams, seconds (range).
    pub spread_seconds: (f32, f32),
}

/// A scenario's sizes and rates.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioConfig {
    /// Profile name.
    pub name: String,
    /// Connections (= players = characters).
    pub connections: usize,
    /// Actors in all (characters, projectiles in the air, static actors), about.
    pub actors: usize,
    /// Projectiles in the air, about.
    pub projectiles: usize,
    /// Share of the static actors that are pickups (the rest: loot containers).
    pub pickup_share: f64,
    /// Side of the square map, units (cm).
    pub world_size: f32,
    /// Server ticks per second.
    pub tick_rate: f64,
    /// Bytes per second per connection.
    pub net_speed: u32,
    /// The opening hot drop, if any.
    pub hot_drop: Option<HotDrop>,
    /// Share of the static actors whose state changes per second.
    pub static_change_rate: f64,
    /// Dormant actors besides the awake ones (`actors` counts the awake), if any.
    pub dormant: Option<DormantActors>,
    /// The server makes remote procedure calls: a muzzle effect multicast per shot
    /// (`MulticastFireEffect`, unreliable) and the weapon's `ClientStartReload` (reliable) when
    /// a clip runs dry.
    pub calls: bool,
    /// Owning connections follow owner chains (`ActorLevelConfig::owner_chain_connections`, on
    /// by default): a projectile whose owner actor is a character belongs to that character's
    /// player.
    pub owner_chains: bool,
    /// RNG seed.
    pub seed: u64,
}

/// A world's dormant actors: spawned at level load, idle.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DormantActors {
    /// How many.
    pub actors: usize,
    /// Share placed in the level (static actors, `Initial` dormancy); the rest is idle loot
    /// (dynamic, `DormantAll`).
    pub static_share: f64,
}

impl ScenarioConfig {
    /// Static actors (pickups and loot containers).
    pub fn static_actors(&self) -> usize {
        self.actors.saturating_sub(self.connections + self.projectiles)
    }

    /// Frames of level load: one period of the slowest static class.
    pub fn load_frames(&self) -> usize {
        let slowest =
            Kind::ALL.iter().map(|k| k.net_settings().frequency.net_update_frequency).fold(f32::MAX, f32::min);
        (self.tick_rate / slowest as f64).ceil().max(1.0) as usize
    }

    /// The same world with dormant actors making up `fraction` of it (`0 ≤ fraction < 1`): the
    /// awake actors stay, the dormant ones are `awake × fraction / (1 − fraction)`.
    pub fn with_dormant_fraction(&self, fraction: f64) -> Result<ScenarioConfig, String> {
        if !(0.0..1.0).contains(&fraction) {
            return Err(format!("dormant fraction {fraction} is not in 0..1"));
        }
        let actors = (self.actors as f64 * fraction / (1.0 - fraction)).round() as usize;
        let static_share = self.dormant.map_or(0.9, |d| d.static_share);
        Ok(ScenarioConfig { dormant: (actors > 0).then_some(DormantActors { actors, static_share }), ..self.clone() })
    }

    /// Every actor: the awake and the dormant.
    pub fn all_actors(&self) -> usize {
        self.actors + self.dormant.map_or(0, |d| d.actors)
    }

    /// The same world with `factor` × the actors, connections and area (the same density; the
    /// hot drop's disc keeps its size), for tests of a smaller world.
    pub fn scaled(&self, factor: f64) -> ScenarioConfig {
        let n = |x: usize| ((x as f64 * factor).round() as usize).max(1);
        ScenarioConfig {
            connections: n(self.connections),
            actors: n(self.actors),
            projectiles: n(self.projectiles),
            world_size: self.world_size * factor.sqrt() as f32,
            dormant: self.dormant.map(|d| DormantActors { actors: n(d.actors), ..d }),
            ..self.clone()
        }
    }
}

/// The named profiles of `shadowrep run`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// 100 players, 50k actors, a hot drop.
    BattleRoyale,
    /// 1000 players, 1M actors, 20× the area.
    Mmo,
    /// 100 players, 10k awake actors and 990k dormant ones.
    OpenWorld,
}

impl Profile {
    /// Every profile.
    pub const ALL: [Profile; 3] = [Profile::BattleRoyale, Profile::Mmo, Profile::OpenWorld];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Profile::BattleRoyale => "battle_royale",
            Profile::Mmo => "mmo",
            Profile::OpenWorld => "open_world",
        }
    }

    /// The profile called `name`.
    pub fn by_name(name: &str) -> Option<Profile> {
        Profile::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Frames the UE-style reference runs on by default (it loops over every due actor for every
    /// connection: mmo's takes seconds a frame).
    pub fn default_reference_frames(self) -> usize {
        match self {
            Profile::BattleRoyale => 360,
            Profile::Mmo => 5,
            // Two seconds: every connection's first look at the sleepers and its next (a frame of
            // the reference walks the million actors: ~0.3 s).
            Profile::OpenWorld => 60,
        }
    }

    /// Timed frames when none are asked for: battle_royale's hot drop and its spreading out
    /// (12 s); a 1M-actor world's first two seconds (projectiles in the air reach their
    /// number in the second).
    pub fn default_frames(self) -> usize {
        match self {
            Profile::BattleRoyale => 360,
            Profile::Mmo => 60,
            Profile::OpenWorld => 300,
        }
    }

    /// The profile's world for `seed`.
    pub fn config(self, seed: u64) -> ScenarioConfig {
        let battle_royale = ScenarioConfig {
            name: "battle_royale".into(),
            connections: 100,
            actors: 50_000,
            projectiles: 2_000,
            pickup_share: 0.6,
            world_size: 400_000.0,
            tick_rate: 30.0,
            net_speed: 100_000,
            hot_drop: Some(HotDrop {
                fraction: 0.8,
                radius: 15_000.0,
                fight_seconds: 3.0,
                spread_speed: (2_000.0, 5_000.0),
                spread_seconds: (3.0, 8.0),
            }),
            static_change_rate: 0.005,
            dormant: None,
            calls: false,
            // The driver's default (UE's walk of the owner chain).
            owner_chains: shadowrep::net::ActorLevelConfig::default().owner_chain_connections,
            seed,
        };
        match self {
            Profile::BattleRoyale => battle_royale,
            Profile::Mmo => ScenarioConfig {
                name: "mmo".into(),
                connections: 1_000,
                actors: 1_000_000,
                projectiles: 40_000,
                world_size: battle_royale.world_size * 20f32.sqrt(),
                hot_drop: None,
                ..battle_royale
            },
            Profile::OpenWorld => ScenarioConfig {
                name: "open_world".into(),
                actors: 10_000,
                hot_drop: None,
                dormant: Some(DormantActors { actors: 990_000, static_share: 0.9 }),
                ..battle_royale
            },
        }
    }
}
