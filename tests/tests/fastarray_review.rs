//! An adversarial review of the FastArray path (server base, wire keys, client receiver, the
//! driver's per-connection state): each test here failed on the code before its fix.

use shadowrep::client::ClientWorld;
use shadowrep::fastarray::{item_layout, FastArray, FastArrayError, FastArrayReceiver, MAX_PINNED_REMOVALS};
use shadowrep::ids::{ClassId, ConnectionId, NetGuid};
use shadowrep::net::{
    ActorLevelConfig, DriverConfig, DriverError, FastArrayKind, NetDriver, NetSettings, SubObjectCondition, Viewer,
};
use shadowrep::schema::{ArrayLayout, ClassBuilder, ClassLayout, PropType, PropertyDecl};
use shadowrep::store::{ActorId, ClassStore};
use shadowrep::value::Value;
use shadowrep::wire::BitWriter;
use shadowrep_tests::random_world::{thing, HEALTH, LOCATION};
use std::collections::BTreeMap;
use std::sync::Arc;

fn slots() -> Arc<ArrayLayout> {
    Arc::new(item_layout("Inventory", PropType::U32).unwrap())
}

type Items = BTreeMap<u32, Vec<u8>>;

/// A server without the actor level, one class, clients over a perfect link.
struct Sim {
    driver: NetDriver,
    store: ClassStore,
    class: ClassId,
    layout: Arc<ClassLayout>,
    kind: FastArrayKind,
    clients: Vec<(ConnectionId, ClientWorld)>,
    /// Packets each client refused.
    refused: usize,
}

impl Sim {
    fn new(clients: usize) -> Sim {
        let layout = Arc::new(
            ClassBuilder::new("Character").property(PropertyDecl::new("Health", PropType::U16)).build().unwrap(),
        );
        let mut store = ClassStore::new(layout.clone());
        let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
        let class = driver.register_class(&mut store).unwrap();
        let kind = driver.register_fast_array_kind(slots()).unwrap();
        let mut sim = Sim { driver, store, class, layout, kind, clients: Vec::new(), refused: 0 };
        for _ in 0..clients {
            sim.add_client();
        }
        sim
    }

    fn add_client(&mut self) -> usize {
        let conn = self.driver.add_connection(false);
        let world = ClientWorld::new(std::slice::from_ref(&self.layout), &self.driver.checksums())
            .and_then(|c| c.with_fast_array_kinds(&[slots()], &self.driver.fast_array_checksums()))
            .unwrap();
        self.clients.push((conn, world));
        self.clients.len() - 1
    }

    fn spawn(&mut self) -> (ActorId, NetGuid) {
        let id = self.store.spawn();
        self.store.set(id, 0, &Value::U16(100)).unwrap();
        let guid = self.driver.assign_guid(self.class, &self.store, id).unwrap();
        (id, guid)
    }

    /// One frame: tick, deliver every packet (counting refusals), return feedback.
    fn step(&mut self) {
        self.driver.tick(&mut [&mut self.store]).unwrap();
        for (conn, world) in &mut self.clients {
            for p in self.driver.take_packets(*conn).unwrap() {
                if world.receive(&p).is_err() {
                    self.refused += 1;
                }
            }
            self.driver.receive_feedback(*conn, &world.feedback()).unwrap();
        }
    }

    fn run(&mut self, n: usize) {
        for _ in 0..n {
            self.step();
        }
    }

    fn server_items(&self, fa: NetGuid) -> Items {
        self.driver.fast_array(fa).unwrap().iter().map(|(id, b)| (id.0, b.to_vec())).collect()
    }

    fn client_items(&self, c: usize, fa: NetGuid) -> Option<Items> {
        self.clients[c].1.fast_array(fa).map(|r| r.iter().map(|(id, b)| (id.0, b.to_vec())).collect())
    }
}

/// Adds and removes one item `n` times: the array key moves on by 2n, the array stays empty.
fn churn(items: &mut FastArray, n: u32) {
    for i in 0..n {
        let id = items.add(&i.to_le_bytes()).unwrap();
        items.remove(id).unwrap();
    }
}

#[test]
fn a_connection_that_joins_an_empty_array_with_a_high_key_gets_what_is_added_later() {
    // The array key is past the short key's window, the array empty: the new connection's first
    // write has nothing to send and settles its base at the array key without a delta, so its
    // client's newest key is still 0. The next delta's key was sent short (16 bits) because it is
    // close to the acknowledged base — and the client widened it against its own newest key, 0:
    // refused (or misread), and the item never arrived.
    let layout = slots();
    let mut server = FastArray::new(layout.clone());
    churn(&mut server, 20_000);
    assert_eq!(server.array_key().0, 40_000);
    let base = server.connect();
    let mut client = FastArrayReceiver::new(layout);
    let mut w = BitWriter::new();
    assert_eq!(server.write_delta(base, &mut w).unwrap(), None, "nothing for this client");
    let id = server.add(&7u32.to_le_bytes()).unwrap();
    let mut w = BitWriter::new();
    let token = server.write_delta(base, &mut w).unwrap().expect("the add");
    client.receive(w.bytes(), &mut ()).expect("the server's own delta applies");
    server.acked(base, token);
    assert_eq!(client.item(id), Some(&7u32.to_le_bytes()[..]));
    assert_eq!(client.newest_key(), server.array_key());
}

#[test]
fn an_owner_opened_on_an_empty_fast_array_with_a_high_key_gets_its_later_items() {
    // The same through the driver: an inventory that saw 40 000 marks, empty when its owner
    // opens on a client; then an item is added.
    let mut sim = Sim::new(1);
    let (_, owner) = sim.spawn();
    let fa = sim.driver.add_fast_array(sim.kind, owner, SubObjectCondition::None).unwrap();
    {
        let mut items = sim.driver.fast_array_mut(fa).unwrap();
        for i in 0..20_000u32 {
            let id = items.add(&i.to_le_bytes()).unwrap();
            items.remove(id).unwrap();
        }
    }
    sim.run(3);
    assert_eq!(sim.client_items(0, fa), Some(Items::new()), "the array opened, empty");
    sim.driver.fast_array_mut(fa).unwrap().add(&7u32.to_le_bytes()).unwrap();
    sim.run(60);
    assert_eq!(sim.client_items(0, fa), Some(sim.server_items(fa)));
    assert_eq!(sim.refused, 0, "the client refused the server's packets");
}

impl Sim {
    /// One frame whose packets to client `c` are all lost (the others' arrive); every client's
    /// feedback goes back.
    fn step_losing(&mut self, c: usize) {
        self.driver.tick(&mut [&mut self.store]).unwrap();
        for (i, (conn, world)) in self.clients.iter_mut().enumerate() {
            for p in self.driver.take_packets(*conn).unwrap() {
                if i != c && world.receive(&p).is_err() {
                    self.refused += 1;
                }
            }
            self.driver.receive_feedback(*conn, &world.feedback()).unwrap();
        }
    }

    fn set_owner(&mut self, id: ActorId, owner: Option<usize>) {
        let owner = owner.map(|c| self.clients[c].0);
        self.driver.set_owner(self.class, &self.store, id, owner, false).unwrap();
    }
}

#[test]
fn a_lost_close_of_a_fast_array_does_not_destroy_it_once_it_is_open_again() {
    // An owner-only inventory whose owner changes away and back: the close of the first change
    // is lost, the array opens again (with its items) before the loss is known — and the close,
    // sent again, destroyed the client's new copy. The server believed the client had it: a
    // quiet array never came back.
    let mut sim = Sim::new(1);
    let (hero, owner) = sim.spawn();
    sim.set_owner(hero, Some(0));
    let fa = sim.driver.add_fast_array(sim.kind, owner, SubObjectCondition::OwnerOnly).unwrap();
    {
        let mut items = sim.driver.fast_array_mut(fa).unwrap();
        for i in 0..5u32 {
            items.add(&i.to_le_bytes()).unwrap();
        }
    }
    sim.run(3);
    assert_eq!(sim.client_items(0, fa), Some(sim.server_items(fa)));
    sim.set_owner(hero, None);
    sim.step(); // the close is queued (the condition is read after the frame's closes)
    sim.step_losing(0); // the close goes, and is lost
    sim.set_owner(hero, Some(0));
    sim.run(10); // the array opens again; the loss is learned of
    assert_eq!(sim.refused, 0);
    assert_eq!(sim.client_items(0, fa), Some(sim.server_items(fa)), "the client lost its copy");
}

#[test]
fn an_owner_only_fast_array_reaches_an_owner_added_in_a_reused_connection_slot() {
    // set_owner recorded the connection's id where every check reads its slot in the driver's
    // tables: once a slot was reused (a connection removed, another added) they differ, and
    // the owner-only inventory went to the wrong connection, or to none.
    let mut sim = Sim::new(2);
    let (hero, owner) = sim.spawn();
    let fa = sim.driver.add_fast_array(sim.kind, owner, SubObjectCondition::OwnerOnly).unwrap();
    sim.driver.fast_array_mut(fa).unwrap().add(&7u32.to_le_bytes()).unwrap();
    // Connection 0 leaves; a new one (id 2) takes its slot (0).
    let (gone, _) = sim.clients.remove(0);
    sim.driver.remove_connection(gone).unwrap();
    let c = sim.add_client();
    sim.set_owner(hero, Some(c));
    assert_eq!(sim.driver.owning_connection(sim.class, hero), Some(sim.clients[c].0));
    sim.run(4);
    assert_eq!(sim.client_items(c, fa), Some(sim.server_items(fa)), "the owner has its inventory");
    assert_eq!(sim.client_items(0, fa), None, "the other connection does not");
}

#[test]
fn a_lost_close_not_sent_again_for_an_open_that_is_lost_too_still_reaches_the_client() {
    // As above, but the new open is lost as well: the client still holds the copy the first
    // close was to destroy, and once the condition leaves it out again (no base, so nothing
    // to close by itself) that copy must not stay.
    let mut sim = Sim::new(1);
    let (hero, owner) = sim.spawn();
    sim.set_owner(hero, Some(0));
    let fa = sim.driver.add_fast_array(sim.kind, owner, SubObjectCondition::OwnerOnly).unwrap();
    sim.driver.fast_array_mut(fa).unwrap().add(&7u32.to_le_bytes()).unwrap();
    sim.run(3);
    assert_eq!(sim.client_items(0, fa), Some(sim.server_items(fa)));
    sim.set_owner(hero, None);
    sim.step(); // the close is queued
    sim.step_losing(0); // the close goes, and is lost
    sim.set_owner(hero, Some(0));
    sim.step_losing(0); // the array opens again, and that is lost too
                        // A packet that arrives (the owner changed): its feedback tells both losses.
    sim.store.set(hero, 0, &Value::U16(99)).unwrap();
    sim.step();
    sim.set_owner(hero, None);
    sim.run(10);
    assert_eq!(sim.refused, 0);
    assert_eq!(sim.client_items(0, fa), None, "the client kept a copy it is no longer entitled to");
}

/// A server with the actor level (every actor due every frame), one class of things placed by
/// their location, and clients viewing from the origin over a perfect link.
struct Lvl {
    driver: NetDriver,
    store: ClassStore,
    class: ClassId,
    kind: FastArrayKind,
    clients: Vec<(ConnectionId, ClientWorld)>,
}

fn viewer(at: [f32; 3]) -> Viewer {
    Viewer { real_viewer: None, view_target: None, location: at, direction: [1.0, 0.0, 0.0] }
}

impl Lvl {
    fn new(clients: usize) -> Lvl {
        let layout = thing();
        let mut store = ClassStore::new(layout.clone());
        let cfg = DriverConfig { actor_level: Some(ActorLevelConfig::default()), ..DriverConfig::default() };
        let mut driver = NetDriver::new(cfg).unwrap();
        let class = driver.register_class(&mut store).unwrap();
        driver.set_location_property(class, LOCATION).unwrap();
        let mut s = NetSettings::default();
        s.frequency.net_update_frequency = 1.0e6;
        driver.set_class_settings(class, s).unwrap();
        let kind = driver.register_fast_array_kind(slots()).unwrap();
        let mut l = Lvl { driver, store, class, kind, clients: Vec::new() };
        for _ in 0..clients {
            let conn = l.driver.add_connection(false);
            let world = ClientWorld::new(std::slice::from_ref(&layout), &l.driver.checksums())
                .and_then(|c| c.with_fast_array_kinds(&[slots()], &l.driver.fast_array_checksums()))
                .unwrap();
            l.driver.set_viewers(conn, &[viewer([0.0; 3])]).unwrap();
            l.clients.push((conn, world));
        }
        l
    }

    fn spawn(&mut self, at: [f32; 3]) -> (ActorId, NetGuid) {
        let id = self.store.spawn();
        self.store.set(id, LOCATION, &Value::Vector(at)).unwrap();
        self.store.set(id, HEALTH, &Value::U32(1)).unwrap();
        let guid = self.driver.assign_guid(self.class, &self.store, id).unwrap();
        (id, guid)
    }

    fn step(&mut self) {
        self.driver.tick(&mut [&mut self.store]).unwrap();
        for (conn, world) in &mut self.clients {
            for p in self.driver.take_packets(*conn).unwrap() {
                world.receive(&p).expect("a well-formed packet");
            }
            self.driver.receive_feedback(*conn, &world.feedback()).unwrap();
        }
    }

    fn run(&mut self, n: usize) {
        for _ in 0..n {
            self.step();
        }
    }

    fn server_items(&self, fa: NetGuid) -> Items {
        self.driver.fast_array(fa).unwrap().iter().map(|(id, b)| (id.0, b.to_vec())).collect()
    }

    fn client_items(&self, c: usize, fa: NetGuid) -> Option<Items> {
        self.clients[c].1.fast_array(fa).map(|r| r.iter().map(|(id, b)| (id.0, b.to_vec())).collect())
    }
}

#[test]
fn a_connection_its_owner_left_does_not_pin_the_arrays_change_log() {
    // A shared array (a vending machine's stock, say) on an actor one client walks away from:
    // the owner's channel there closes for relevancy and the client destroys its copy, yet the
    // server kept that connection's base until the owner came back — its acknowledged point
    // pinned every later removal in the change log, which grew without bound for as long as
    // the client stayed away.
    let mut l = Lvl::new(2);
    let (_, owner) = l.spawn([100.0, 0.0, 0.0]);
    let fa = l.driver.add_fast_array(l.kind, owner, SubObjectCondition::None).unwrap();
    {
        let mut items = l.driver.fast_array_mut(fa).unwrap();
        for i in 0..20u32 {
            items.add(&i.to_le_bytes()).unwrap();
        }
    }
    l.run(4);
    assert_eq!(l.client_items(1, fa), Some(l.server_items(fa)));
    let far = l.clients[1].0;
    l.driver.set_viewers(far, &[viewer([500_000.0, 0.0, 0.0])]).unwrap();
    l.run(200);
    assert_eq!(l.client_items(1, fa), None, "destroyed with its owner");
    for frame in 0..200u32 {
        {
            let mut items = l.driver.fast_array_mut(fa).unwrap();
            for i in 0..50 {
                let id = items.add(&(frame * 100 + i).to_le_bytes()).unwrap();
                items.remove(id).unwrap();
            }
        }
        l.step();
    }
    assert_eq!(l.client_items(0, fa), Some(l.server_items(fa)));
    let log = l.driver.fast_array(fa).unwrap().log_len();
    assert!(log < 1_000, "the change log holds {log} entries after 10 000 removals");
    // Back: the array comes whole.
    l.driver.set_viewers(far, &[viewer([0.0; 3])]).unwrap();
    l.run(4);
    assert_eq!(l.client_items(1, fa), Some(l.server_items(fa)));
}

#[test]
fn a_connection_that_loses_everything_does_not_pin_the_arrays_change_log() {
    // Several clients share an array; one's downstream dies (every packet lost) while it stays
    // connected (its feedback, acknowledging nothing new, still arrives). Its base's
    // acknowledged point pinned every later removal in the change log: the log — shared by
    // every connection — grew with the removals for as long as that connection lived. (UE's
    // base is an id → key map, bounded by the items.) Now the base expires past a bound, and
    // the connection, once its packets arrive again, gets the array whole.
    let mut l = Lvl::new(2);
    let (_, owner) = l.spawn([100.0, 0.0, 0.0]);
    let fa = l.driver.add_fast_array(l.kind, owner, SubObjectCondition::None).unwrap();
    l.driver.fast_array_mut(fa).unwrap().add(&7u32.to_le_bytes()).unwrap();
    l.run(4);
    assert_eq!(l.client_items(1, fa), Some(l.server_items(fa)));
    for frame in 0..400u32 {
        {
            let mut items = l.driver.fast_array_mut(fa).unwrap();
            for i in 0..50 {
                let id = items.add(&(frame * 100 + i).to_le_bytes()).unwrap();
                items.remove(id).unwrap();
            }
        }
        l.driver.tick(&mut [&mut l.store]).unwrap();
        for (c, (conn, world)) in l.clients.iter_mut().enumerate() {
            for p in l.driver.take_packets(*conn).unwrap() {
                if c == 0 {
                    world.receive(&p).unwrap();
                }
            }
            l.driver.receive_feedback(*conn, &world.feedback()).unwrap();
        }
    }
    assert_eq!(l.client_items(0, fa), Some(l.server_items(fa)));
    let log = l.driver.fast_array(fa).unwrap().log_len();
    assert!(log <= 2 * MAX_PINNED_REMOVALS + 64, "the change log holds {log} entries after 20 000 removals");
    // The link heals: the client is asked to start over, and ends with the server's items.
    l.run(40);
    assert_eq!(l.client_items(1, fa), Some(l.server_items(fa)));
    assert_eq!(l.client_items(0, fa), Some(l.server_items(fa)));
}

#[test]
fn a_base_far_behind_expires_and_starts_again_while_the_others_go_on() {
    // The standalone array: one connection acknowledges everything, another nothing. The log
    // stays bounded; the silent one's base expires (its delta refused with a clear error) and,
    // started again, brings a fresh receiver to the server's items.
    let layout = slots();
    let mut server = FastArray::new(layout.clone());
    let (live, dead) = (server.connect(), server.connect());
    let mut client = FastArrayReceiver::new(layout.clone());
    let kept: Vec<_> = (0..10u32).map(|i| server.add(&i.to_le_bytes()).unwrap()).collect();
    for i in 0..30_000u32 {
        let id = server.add(&i.to_le_bytes()).unwrap();
        server.remove(id).unwrap();
        if i % 100 == 0 {
            server.set(kept[(i / 100) as usize % 10], &i.to_le_bytes()).unwrap();
            let mut w = BitWriter::new();
            if let Some(t) = server.write_delta(live, &mut w).unwrap() {
                client.receive(w.bytes(), &mut ()).unwrap();
                server.acked(live, t);
            }
            // The silent connection is written to; nothing of it arrives.
            let mut w = BitWriter::new();
            let _ = server.write_delta(dead, &mut w);
        }
    }
    assert!(server.log_len() <= 2 * MAX_PINNED_REMOVALS + 64, "{} log entries", server.log_len());
    assert!(!server.is_expired(live));
    assert!(server.is_expired(dead));
    let mut w = BitWriter::new();
    assert_eq!(server.write_delta(dead, &mut w), Err(FastArrayError::BaseExpired(dead)));
    let mut w = BitWriter::new();
    if let Some(t) = server.write_delta(live, &mut w).unwrap() {
        client.receive(w.bytes(), &mut ()).unwrap();
        server.acked(live, t);
    }
    let want: Items = server.iter().map(|(id, b)| (id.0, b.to_vec())).collect();
    assert_eq!(client.iter().map(|(id, b)| (id.0, b.to_vec())).collect::<Items>(), want);
    server.disconnect(dead).unwrap();
    let again = server.connect();
    let mut fresh = FastArrayReceiver::new(layout);
    let mut w = BitWriter::new();
    let t = server.write_delta(again, &mut w).unwrap().expect("every item");
    fresh.receive(w.bytes(), &mut ()).unwrap();
    server.acked(again, t);
    assert_eq!(fresh.iter().map(|(id, b)| (id.0, b.to_vec())).collect::<Items>(), want);
}

#[test]
fn an_actor_with_a_fast_array_cannot_become_a_sub_object() {
    // add_fast_array refuses a sub-object as the owner (a client accepts a fast array's open
    // only under an actor), but register_sub_object took an actor that already had a fast
    // array: every client stepped over the array's open, and its copy never came.
    let mut l = Lvl::new(1);
    let (_, owner) = l.spawn([100.0, 0.0, 0.0]);
    let (weapon, weapon_guid) = l.spawn([100.0, 0.0, 0.0]);
    let fa = l.driver.add_fast_array(l.kind, weapon_guid, SubObjectCondition::None).unwrap();
    l.driver.fast_array_mut(fa).unwrap().add(&7u32.to_le_bytes()).unwrap();
    let r = l.driver.register_sub_object(l.class, &l.store, weapon, owner, SubObjectCondition::None);
    assert_eq!(r, Err(DriverError::SubObjectChain(weapon_guid)));
    // Refused, nothing changed: the weapon is an actor of its own, and its array arrives.
    l.run(4);
    assert_eq!(l.client_items(0, fa), Some(l.server_items(fa)));
}

#[test]
fn keys_far_past_the_short_window_converge_under_loss_with_late_joiners() {
    // Array keys in the hundreds of thousands, hundreds of marks a frame, in-order delivery
    // with long runs of loss (a base falls more than the short key's window behind), an array
    // emptied now and then, and connections joining late: every client ends with the server's
    // items, and no server delta is refused.
    use rand::{Rng, SeedableRng};
    let layout = slots();
    for seed in 0..8u64 {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut server = FastArray::new(layout.clone());
        churn(&mut server, 50_000 + rng.random_range(0..20_000));
        let mut live: Vec<_> = Vec::new();
        let mut conns: Vec<(shadowrep::fastarray::BaseId, FastArrayReceiver)> = Vec::new();
        for frame in 0..400u32 {
            if frame % 50 == 0 {
                if frame % 100 == 0 {
                    // Every other one joins an array just emptied.
                    for id in live.drain(..) {
                        server.remove(id).unwrap();
                    }
                }
                let (base, mut client) = (server.connect(), FastArrayReceiver::new(layout.clone()));
                // Written to at once (before this frame's changes).
                let mut w = BitWriter::new();
                if let Some(t) = server.write_delta(base, &mut w).unwrap() {
                    client.receive(w.bytes(), &mut ()).unwrap();
                    server.acked(base, t);
                }
                conns.push((base, client));
            }
            if rng.random_bool(0.02) {
                for id in live.drain(..) {
                    server.remove(id).unwrap();
                }
            }
            for _ in 0..rng.random_range(0..600) {
                match rng.random_range(0..10) {
                    0..3 if live.len() < 200 => live.push(server.add(&frame.to_le_bytes()).unwrap()),
                    3..5 if !live.is_empty() => {
                        let id = live.swap_remove(rng.random_range(0..live.len()));
                        server.remove(id).unwrap();
                    }
                    _ if !live.is_empty() => {
                        let id = live[rng.random_range(0..live.len())];
                        server.set(id, &rng.random::<u32>().to_le_bytes()).unwrap();
                    }
                    _ => {}
                }
            }
            // Each connection: a long outage now and then, else 20 % loss.
            let healed = frame >= 360;
            for (c, (base, client)) in conns.iter_mut().enumerate() {
                let outage = !healed && (frame / 60 + c as u32).is_multiple_of(3);
                for _ in 0..4 {
                    let mut w = BitWriter::new();
                    let Some(t) = server.write_delta_within(*base, &mut w, 8 * 1200).unwrap() else { break };
                    if healed || (!outage && !rng.random_bool(0.2)) {
                        client.receive(w.bytes(), &mut ()).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
                        server.acked(*base, t);
                    } else {
                        server.lost(*base, t);
                    }
                }
            }
        }
        let want: Items = server.iter().map(|(id, b)| (id.0, b.to_vec())).collect();
        for (base, client) in &conns {
            assert!(server.is_synced(*base), "seed {seed}");
            assert_eq!(client.iter().map(|(id, b)| (id.0, b.to_vec())).collect::<Items>(), want, "seed {seed}");
        }
    }
}
