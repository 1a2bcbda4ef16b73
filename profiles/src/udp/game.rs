//! The world `shadowrep serve` runs: a profile's simulated game (`benches/src/scenario`) driven
//! one frame at a time, with real clients taking over its players as they join.
//!
//! ```text
//! new       the profile's world (scaled), its driver (scenario_driver), the level load
//!           (ticked, no connections), then every player's character spawns with its weapon
//!           (a sub-object): players nobody controls still move and shoot
//! attach    a client joins: the first free player's character is owned by its new
//!           connection (autonomous proxy) and the connection views from it
//! detach    the client left: its connection is removed, the character is nobody's
//! frame     the clients' Server calls taken (ShooterGame's ServerSetTargeting and
//!           ServerSetRunning on their own characters: applied unless frozen); unless frozen,
//!           the game's step and its calls (apply_events); every attached connection's viewer;
//!           NetDriver::tick
//! freeze    the game stops changing anything; ticks go on, so the links drain
//! ```

use shadowrep::net::{ClassId, ConnectionId, NetDriver, NetGuid, SubObjectCondition, TickStats, Viewer};
use shadowrep::session::{expected_digest, StateDigest};
use shadowrep::store::ClassStore;
use shadowrep_benches::scenario::{apply_events, scenario_driver, Kind, ScenarioConfig, World};
use shadowrep_layouts::classes::ShooterCharacter;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// See the module documentation.
pub struct LiveGame {
    world: World,
    driver: NetDriver,
    classes: [ClassId; 5],
    /// Each player's character.
    characters: Vec<NetGuid>,
    /// The connection controlling each player, if any.
    players: Vec<Option<ConnectionId>>,
    frozen: bool,
    calls: ServerCalls,
    /// Connections the driver ended, not yet taken by the server ([`LiveGame::take_failed`]).
    failed: Vec<ConnectionId>,
}

/// The clients' Server calls the game took.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerCalls {
    /// Taken from the driver (each call a client made, once).
    pub taken: u64,
    /// Applied to the caller's character.
    pub applied: u64,
    /// Taken while the world was frozen: not applied.
    pub frozen: u64,
}

impl LiveGame {
    /// Builds `cfg`'s world, loads its level and spawns every player's character.
    pub fn new(cfg: &ScenarioConfig, parallel: bool) -> Result<LiveGame, String> {
        let mut world = World::new(cfg);
        let (mut driver, classes) = scenario_driver(&mut world, parallel)?;
        let batches = cfg.load_frames();
        for b in 0..batches {
            let events = world.load_step(b, batches);
            apply_events(&mut driver, &classes, &world, &events, &[])?;
            driver.tick(&mut world.stores_mut()).map_err(err)?;
        }
        let events = world.join();
        let (character, weapon) = (classes[Kind::Character.index()], classes[Kind::Weapon.index()]);
        let mut characters = Vec::with_capacity(events.joined.len());
        for &p in &events.joined {
            let id = world.character(p).ok_or_else(|| format!("player {p} has no character"))?;
            let guid = driver.assign_guid(character, world.store(Kind::Character), id).map_err(err)?;
            let w = world.weapon(p).ok_or_else(|| format!("player {p} has no weapon"))?;
            driver
                .register_sub_object(weapon, world.store(Kind::Weapon), w, guid, SubObjectCondition::None)
                .map_err(err)?;
            characters.push(guid);
        }
        world.bind_character_guids(characters.iter().map(|g| g.0).collect());
        let players = vec![None; characters.len()];
        Ok(LiveGame {
            world,
            driver,
            classes,
            characters,
            players,
            frozen: false,
            calls: ServerCalls::default(),
            failed: Vec::new(),
        })
    }

    /// The driver.
    pub fn driver(&self) -> &NetDriver {
        &self.driver
    }

    /// The driver, for feedback.
    pub fn driver_mut(&mut self) -> &mut NetDriver {
        &mut self.driver
    }

    /// Actors in the world.
    pub fn actors(&self) -> usize {
        self.world.stores.iter().map(ClassStore::len).sum()
    }

    /// Players in the world, and how many clients control one.
    pub fn players(&self) -> (usize, usize) {
        (self.players.len(), self.players.iter().flatten().count())
    }

    /// A new client: a connection controlling the first free player, or `None` when every
    /// player has one.
    pub fn attach(&mut self) -> Result<Option<ConnectionId>, String> {
        let Some(p) = self.players.iter().position(Option::is_none) else { return Ok(None) };
        let conn = self.driver.add_connection(false);
        let class = self.classes[Kind::Character.index()];
        let id = self.world.character(p).ok_or_else(|| format!("player {p} has no character"))?;
        self.driver.set_owner(class, self.world.store(Kind::Character), id, Some(conn), true).map_err(err)?;
        self.players[p] = Some(conn);
        self.world.set_controlled(p, true);
        self.set_viewer(p, conn)?;
        Ok(Some(conn))
    }

    /// A client left: its connection goes, its player is free again.
    pub fn detach(&mut self, conn: ConnectionId) -> Result<(), String> {
        if self.free_player(conn) {
            self.driver.remove_connection(conn).map_err(err)?;
        }
        Ok(())
    }

    /// Gives `conn`'s player back to the game (nobody controls it); whether `conn` had one.
    fn free_player(&mut self, conn: ConnectionId) -> bool {
        let Some(p) = self.players.iter().position(|c| *c == Some(conn)) else { return false };
        self.players[p] = None;
        self.world.set_controlled(p, false);
        true
    }

    fn set_viewer(&mut self, p: usize, conn: ConnectionId) -> Result<(), String> {
        let (location, direction) = self.world.view(p);
        let viewer = Viewer { real_viewer: None, view_target: Some(self.characters[p]), location, direction };
        self.driver.set_viewers(conn, std::slice::from_ref(&viewer)).map_err(err)
    }

    /// Stops the game: nothing changes from now on; frames still tick.
    pub fn freeze(&mut self) {
        self.frozen = true;
    }

    /// Whether the game is frozen.
    pub fn frozen(&self) -> bool {
        self.frozen
    }

    /// The clients' Server calls taken so far.
    pub fn server_calls(&self) -> ServerCalls {
        self.calls
    }

    /// Takes the clients' Server calls and applies each to its caller's character (the driver
    /// delivers only calls on an actor the calling connection owns).
    fn apply_server_calls(&mut self) {
        for call in self.driver.take_server_rpcs() {
            self.calls.taken += 1;
            if self.frozen {
                self.calls.frozen += 1;
                continue;
            }
            let Some(p) = self.players.iter().position(|c| *c == Some(call.conn)) else { continue };
            if self.characters[p] != call.guid {
                continue;
            }
            let applied = if let Some((on,)) = ShooterCharacter::server_set_targeting_args(&call) {
                self.world.set_targeting(p, on)
            } else if let Some((on, _toggle)) = ShooterCharacter::server_set_running_args(&call) {
                self.world.set_running(p, on)
            } else {
                false
            };
            self.calls.applied += u64::from(applied);
        }
    }

    /// One server frame (the clients' calls, the game's step unless frozen, then the driver's
    /// tick).
    pub fn frame(&mut self) -> Result<TickStats, String> {
        self.apply_server_calls();
        if !self.frozen {
            let events = self.world.step();
            apply_events(&mut self.driver, &self.classes, &self.world, &events, &self.characters)?;
        }
        for p in 0..self.players.len() {
            if let Some(conn) = self.players[p] {
                self.set_viewer(p, conn)?;
            }
        }
        let stats = self.driver.tick(&mut self.world.stores_mut()).map_err(err)?;
        // Connections the driver ended (a client that acknowledged none of the last 1024
        // reliable calls): their players go back to the game, for the server to end the sessions.
        for failed in self.driver.take_failed_connections() {
            // The driver removed the connection already.
            self.free_player(failed.conn);
            self.failed.push(failed.conn);
        }
        Ok(stats)
    }

    /// The connections the driver ended since the last call (their players free again): end
    /// their sessions.
    pub fn take_failed(&mut self) -> Vec<ConnectionId> {
        std::mem::take(&mut self.failed)
    }

    /// The digest of what `conn` should hold.
    pub fn digest(&self, conn: ConnectionId) -> Result<StateDigest, String> {
        let stores: Vec<&ClassStore> = self.world.stores.iter().collect();
        expected_digest(&self.driver, conn, &stores).map_err(err)
    }
}
