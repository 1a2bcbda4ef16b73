//! Net condition groups (UE 5's `COND_NetGroup`): a sub-object or a fast array in some groups
//! reaches the connections in one of them — and, with `NetGroups::OWNER` / `REPLAY`, its owner's
//! connection / replays — as groups and conditions change.

use super::*;
use shadowrep::fastarray::item_layout;
use shadowrep::net::{DriverError, NetGroups, SubObjectCondition};

fn red() -> NetGroups {
    NetGroups::group(0).unwrap()
}

fn blue() -> NetGroups {
    NetGroups::group(1).unwrap()
}

/// Pawns (the `thing` class) and their bags, three clients at the origin; every actor due every
/// frame.
struct Teams {
    driver: NetDriver,
    pawns: ClassStore,
    bags: ClassStore,
    pawn_class: ClassId,
    bag_class: ClassId,
    clients: Vec<(ConnectionId, ClientWorld)>,
}

impl Teams {
    fn new() -> Teams {
        let bag =
            Arc::new(ClassBuilder::new("Bag").property(PropertyDecl::new("Coins", PropType::U32)).build().unwrap());
        let (mut pawns, mut bags) = (ClassStore::new(thing()), ClassStore::new(bag.clone()));
        let cfg = DriverConfig { actor_level: Some(ActorLevelConfig::default()), ..DriverConfig::default() };
        let mut driver = NetDriver::new(cfg).unwrap();
        let pawn_class = driver.register_class(&mut pawns).unwrap();
        let bag_class = driver.register_class(&mut bags).unwrap();
        driver.set_location_property(pawn_class, LOCATION).unwrap();
        let mut s = NetSettings::default();
        s.frequency.net_update_frequency = 1.0e6;
        driver.set_class_settings(pawn_class, s).unwrap();
        driver.set_class_settings(bag_class, s).unwrap();
        let kind = driver.register_fast_array_kind(slots()).unwrap();
        assert_eq!(kind.0, 0);
        let mut clients = Vec::new();
        for _ in 0..3 {
            let conn = driver.add_connection(false);
            driver.set_viewers(conn, &[viewer([0.0; 3], None)]).unwrap();
            let world = ClientWorld::new(&[thing(), bag.clone()], &driver.checksums())
                .and_then(|w| w.with_fast_array_kinds(&[slots()], &driver.fast_array_checksums()))
                .unwrap();
            clients.push((conn, world));
        }
        Teams { driver, pawns, bags, pawn_class, bag_class, clients }
    }

    /// A pawn owned by client 0, with a bag of `coins` under `condition`.
    fn pawn_with_bag(&mut self, coins: u32, condition: SubObjectCondition) -> (NetGuid, ActorId, NetGuid) {
        let p = self.pawns.spawn();
        self.pawns.set(p, LOCATION, &Value::Vector([100.0, 0.0, 0.0])).unwrap();
        let pg = self.driver.assign_guid(self.pawn_class, &self.pawns, p).unwrap();
        self.driver.set_owner(self.pawn_class, &self.pawns, p, Some(self.clients[0].0), true).unwrap();
        let b = self.bags.spawn();
        self.bags.set(b, 0, &Value::U32(coins)).unwrap();
        let bg = self.driver.register_sub_object(self.bag_class, &self.bags, b, pg, condition).unwrap();
        (pg, b, bg)
    }

    fn groups(&mut self, c: usize, groups: NetGroups) {
        self.driver.set_connection_net_groups(self.clients[c].0, groups).unwrap();
    }

    fn run(&mut self, frames: usize) {
        for _ in 0..frames {
            self.driver.tick(&mut [&mut self.pawns, &mut self.bags]).unwrap();
            for (conn, world) in &mut self.clients {
                for p in self.driver.take_packets(*conn).unwrap() {
                    world.receive(&p).unwrap();
                }
                self.driver.receive_feedback(*conn, &world.feedback()).unwrap();
            }
        }
    }

    /// Which clients hold `guid`.
    fn holders(&self, guid: NetGuid) -> Vec<usize> {
        (0..self.clients.len()).filter(|&c| self.clients[c].1.has(guid)).collect()
    }
}

fn slots() -> Arc<shadowrep::schema::ArrayLayout> {
    Arc::new(item_layout("Slots", PropType::U32).unwrap())
}

#[test]
fn a_sub_object_reaches_the_connections_of_its_groups_as_groups_change() {
    let mut t = Teams::new();
    t.groups(1, red());
    t.groups(2, blue());
    let (pawn, b, bag) = t.pawn_with_bag(7, SubObjectCondition::NetGroup(red()));
    t.run(3);
    assert_eq!(t.holders(pawn), [0, 1, 2], "the pawn is everyone's");
    assert_eq!(t.holders(bag), [1], "red only: not its owner's connection (no OWNER), not blue");
    assert_eq!(t.clients[1].1.value(bag, 0), Some(Value::U32(7)));
    // Its owner's connection too (UE's NetGroupOwner).
    let cond = SubObjectCondition::NetGroup(red() | NetGroups::OWNER);
    t.driver.set_sub_object_condition(t.bag_class, &t.bags, b, cond).unwrap();
    t.run(3);
    assert_eq!(t.holders(bag), [0, 1]);
    // Client 1 goes over to blue: its copy closes; client 2 joins red as well: it opens with
    // the current value.
    t.bags.set(b, 0, &Value::U32(8)).unwrap();
    t.groups(1, blue());
    t.groups(2, red() | blue());
    t.run(3);
    assert_eq!(t.holders(bag), [0, 2]);
    assert_eq!(t.clients[2].1.value(bag, 0), Some(Value::U32(8)));
    // No condition: everyone the owner reaches.
    t.driver.set_sub_object_condition(t.bag_class, &t.bags, b, SubObjectCondition::None).unwrap();
    t.run(3);
    assert_eq!(t.holders(bag), [0, 1, 2]);
    assert!(t.clients.iter().all(|(_, w)| w.value(bag, 0) == Some(Value::U32(8))));
}

#[test]
fn a_fast_array_in_a_group_reaches_a_connection_that_joins_the_group_later() {
    let mut t = Teams::new();
    t.groups(1, red());
    let (pawn, _, _) = t.pawn_with_bag(1, SubObjectCondition::None);
    let fa =
        t.driver.add_fast_array(shadowrep::net::FastArrayKind(0), pawn, SubObjectCondition::NetGroup(red())).unwrap();
    t.driver.fast_array_mut(fa).unwrap().add(&5u32.to_le_bytes()).unwrap();
    t.run(4);
    let holders = |t: &Teams| (0..3).filter(|&c| t.clients[c].1.fast_array(fa).is_some()).collect::<Vec<_>>();
    assert_eq!(holders(&t), [1]);
    // The array does not change; client 2 joins red. (Its quiet record once said "nothing to
    // do" for an array whose items had not changed, so the newcomer never got it.)
    t.groups(2, red());
    t.run(4);
    assert_eq!(holders(&t), [1, 2]);
    let items: Vec<Vec<u8>> = t.clients[2].1.fast_array(fa).unwrap().iter().map(|(_, b)| b.to_vec()).collect();
    assert_eq!(items, [5u32.to_le_bytes().to_vec()]);
    // And leaves it: the array closes there.
    t.groups(2, NetGroups::EMPTY);
    t.run(4);
    assert_eq!(holders(&t), [1]);
}

#[test]
fn net_group_calls_refuse_what_they_cannot_do() {
    let mut t = Teams::new();
    let (pawn, _, _) = t.pawn_with_bag(1, SubObjectCondition::None);
    assert_eq!(NetGroups::group(NetGroups::GAME_GROUPS), None);
    assert!(NetGroups::group(NetGroups::GAME_GROUPS - 1).is_some());
    // A connection is not the game's to put in OWNER or REPLAY.
    let conn = t.clients[1].0;
    t.driver.set_connection_net_groups(conn, red() | NetGroups::OWNER | NetGroups::REPLAY).unwrap();
    assert_eq!(t.driver.connection_net_groups(conn), Ok(red()));
    let nobody = ConnectionId(99);
    assert_eq!(t.driver.set_connection_net_groups(nobody, red()), Err(DriverError::UnknownConnection(nobody)));
    // Only a sub-object's condition changes.
    let p = t.pawns.spawn();
    t.driver.assign_guid(t.pawn_class, &t.pawns, p).unwrap();
    let cond = SubObjectCondition::NetGroup(red());
    let e = t.driver.set_sub_object_condition(t.pawn_class, &t.pawns, p, cond).unwrap_err();
    assert_eq!(e, DriverError::NotASubObject(p));
    assert!(e.to_string().contains("not a registered sub-object"));
    let _ = pawn;
}

#[test]
fn groups_changed_as_the_owner_tears_off_leave_the_torn_off_copies_and_open_no_new_one() {
    for same_frame in [false, true] {
        let mut t = Teams::new();
        t.groups(1, red());
        let (pawn, b, bag) = t.pawn_with_bag(7, SubObjectCondition::NetGroup(red()));
        t.run(3);
        assert_eq!(t.holders(bag), [1]);
        let p = t.pawns.ids().next().unwrap();
        t.driver.tear_off(t.pawn_class, &t.pawns, p).unwrap();
        if !same_frame {
            t.run(3);
        }
        t.groups(1, blue());
        t.groups(2, red());
        t.bags.set(b, 0, &Value::U32(8)).unwrap();
        t.run(5);
        assert!(t.holders(pawn).contains(&1), "torn-off copy kept");
        assert!(
            t.holders(bag).contains(&1),
            "same_frame {same_frame}: the torn-off owner's sub-object kept on client 1"
        );
        assert!(!t.holders(bag).contains(&2), "same_frame {same_frame}: no new copy for a torn-off owner");
    }
}
