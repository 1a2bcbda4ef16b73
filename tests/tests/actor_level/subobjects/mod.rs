//! Sub-objects: created on the client with their owner, replicated where the owner is relevant
//! (to its owning connection only when owner-only), referenced by GUID, destroyed with the owner.

use super::*;
use shadowrep::net::SubObjectCondition;
use shadowrep::value::ObjectRef;

mod conditions;
mod dormancy;
mod lifecycle;
mod loss;
mod replication;
mod tear_off;

/// Parents of [`weapon`].
pub(super) const AMMO: usize = 0;
const RECOIL: usize = 1;

fn weapon() -> Arc<ClassLayout> {
    use shadowrep::schema::Condition;
    Arc::new(
        ClassBuilder::new("Weapon")
            .property(PropertyDecl::new("Ammo", PropType::U32))
            .property(PropertyDecl::new("Recoil", PropType::U8).condition(Condition::SimulatedOrPhysics))
            .build()
            .unwrap(),
    )
}

/// Characters (the `thing` class with a current-weapon reference) and weapons, two clients at
/// the origin.
pub(super) struct Arena {
    pub(super) driver: NetDriver,
    pub(super) characters: ClassStore,
    pub(super) weapons: ClassStore,
    pub(super) character: ClassId,
    pub(super) weapon: ClassId,
    pub(super) clients: Vec<(ConnectionId, ClientWorld)>,
    /// The two classes' layouts (a client added later is made with them).
    pub(super) layouts: Vec<Arc<ClassLayout>>,
}

/// Parent of the character's current weapon.
const CURRENT: usize = 2;

impl Arena {
    pub(super) fn new() -> Arena {
        let character = Arc::new(
            ClassBuilder::new("Character")
                .property(PropertyDecl::new("Location", PropType::Vector(VectorQuant::None)))
                .property(PropertyDecl::new("Health", PropType::U32))
                .property(PropertyDecl::new("Current", PropType::Object))
                .build()
                .unwrap(),
        );
        let mut characters = ClassStore::new(character.clone());
        let mut weapons = ClassStore::new(weapon());
        let cfg = DriverConfig { actor_level: Some(ActorLevelConfig::default()), ..DriverConfig::default() };
        let mut driver = NetDriver::new(cfg).unwrap();
        let c = driver.register_class(&mut characters).unwrap();
        let w = driver.register_class(&mut weapons).unwrap();
        driver.set_location_property(c, LOCATION).unwrap();
        let mut s = NetSettings::default();
        s.frequency.net_update_frequency = 1.0e6;
        driver.set_class_settings(c, s).unwrap();
        driver.set_class_settings(w, s).unwrap();
        let mut clients = Vec::new();
        for _ in 0..2 {
            let conn = driver.add_connection(false);
            driver.set_viewers(conn, &[viewer([0.0; 3], None)]).unwrap();
            let world = ClientWorld::new(&[character.clone(), weapon()], &driver.checksums()).unwrap();
            clients.push((conn, world));
        }
        let layouts = vec![character, weapon()];
        Arena { driver, characters, weapons, character: c, weapon: w, clients, layouts }
    }

    /// A character at `at` owned by client `owner`, with a weapon holding `ammo` (`condition`).
    pub(super) fn armed(
        &mut self,
        at: [f32; 3],
        owner: usize,
        ammo: u32,
        condition: SubObjectCondition,
    ) -> (ActorId, NetGuid, ActorId, NetGuid) {
        let ch = self.characters.spawn();
        self.characters.set(ch, LOCATION, &Value::Vector(at)).unwrap();
        let cg = self.driver.assign_guid(self.character, &self.characters, ch).unwrap();
        self.driver.set_owner(self.character, &self.characters, ch, Some(self.clients[owner].0), true).unwrap();
        let w = self.weapons.spawn();
        self.weapons.set(w, AMMO, &Value::U32(ammo)).unwrap();
        let wg = self.driver.register_sub_object(self.weapon, &self.weapons, w, cg, condition).unwrap();
        self.characters.set(ch, CURRENT, &Value::Object(ObjectRef(wg.0))).unwrap();
        (ch, cg, w, wg)
    }

    /// A character at `at` that no connection owns.
    pub(super) fn character_at(&mut self, at: [f32; 3]) -> (ActorId, NetGuid) {
        let ch = self.characters.spawn();
        self.characters.set(ch, LOCATION, &Value::Vector(at)).unwrap();
        (ch, self.driver.assign_guid(self.character, &self.characters, ch).unwrap())
    }

    pub(super) fn run(&mut self, frames: usize) {
        for _ in 0..frames {
            self.driver.tick(&mut [&mut self.characters, &mut self.weapons]).unwrap();
            for (conn, world) in &mut self.clients {
                for p in self.driver.take_packets(*conn).unwrap() {
                    world.receive(&p).unwrap();
                }
                self.driver.receive_feedback(*conn, &world.feedback()).unwrap();
            }
        }
    }

    pub(super) fn client(&self, c: usize) -> &ClientWorld {
        &self.clients[c].1
    }

    /// A client joining later (a replay one with `replay`), viewing from the origin: its index.
    pub(super) fn join(&mut self, replay: bool) -> usize {
        let conn = self.driver.add_connection(replay);
        self.driver.set_viewers(conn, &[viewer([0.0; 3], None)]).unwrap();
        let world = ClientWorld::new(&self.layouts, &self.driver.checksums()).unwrap();
        self.clients.push((conn, world));
        self.clients.len() - 1
    }
}
