//! One forged server→client packet (an on-path attacker who saw the session token) never leaves
//! a connection or an actor wrong for good: each test injects one, then runs a perfect link and
//! asserts the client converges to the server's values within a bounded number of frames. This
//! module holds the forger's packets and the two-class driver the tests share; the tests are in
//! its topic files.

use shadowrep::client::{ClientWorld, Receipt};
use shadowrep::ids::{ClassId, ConnectionId, NetGuid, Seq};
use shadowrep::net::{DriverConfig, NetDriver};
use shadowrep::schema::{ClassBuilder, PropType, PropertyDecl};
use shadowrep::store::{ActorId, ClassStore};
use shadowrep::wire::open::OpenHeader;
use shadowrep::wire::packet::write_bunch;
use shadowrep::wire::packet::{begin_packet, end_packet};
use shadowrep::wire::BitWriter;
use std::sync::Arc;

mod tear_off;
mod window;
mod wrong_class;

fn counter() -> ClassBuilder {
    ClassBuilder::new("C").property(PropertyDecl::new("N", PropType::U32))
}

fn empty_packet(seq: u32) -> Vec<u8> {
    packet(seq, |_| {})
}

/// A packet numbered `seq` whose bunches `f` writes (what a forger with the token sends).
fn packet(seq: u32, f: impl FnOnce(&mut BitWriter)) -> Vec<u8> {
    let mut w = BitWriter::new();
    begin_packet(&mut w, Seq(seq));
    f(&mut w);
    end_packet(&mut w);
    w.into_bytes()
}

/// A driver with two classes — [`counter`] (class 0) and `other` (class 1) — and one client,
/// driven by hand: every packet is offered to the client (a refusal is allowed) and its feedback
/// returned.
struct TwoClasses {
    driver: NetDriver,
    counters: ClassStore,
    others: ClassStore,
    class: ClassId,
    conn: ConnectionId,
    client: ClientWorld,
}

impl TwoClasses {
    fn new(other: ClassBuilder) -> Self {
        let (la, lb) = (Arc::new(counter().build().unwrap()), Arc::new(other.build().unwrap()));
        let (mut counters, mut others) = (ClassStore::new(la.clone()), ClassStore::new(lb.clone()));
        let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
        let class = driver.register_class(&mut counters).unwrap();
        driver.register_class(&mut others).unwrap();
        let conn = driver.add_connection(false);
        let client = ClientWorld::new(&[la, lb], &driver.checksums()).unwrap();
        TwoClasses { driver, counters, others, class, conn, client }
    }

    /// A counter, with its GUID.
    fn spawn(&mut self) -> (ActorId, NetGuid) {
        let id = self.counters.spawn();
        (id, self.driver.assign_guid(self.class, &self.counters, id).unwrap())
    }

    /// A counter the client has had for three frames, with its GUID.
    fn spawn_settled(&mut self) -> (ActorId, NetGuid) {
        let spawned = self.spawn();
        for _ in 0..3 {
            self.step();
        }
        spawned
    }

    /// A counter whose open the client never gets: the server's packet carrying it is lost, and
    /// a forged packet with its number, opening the counter's GUID with class 1, took its place —
    /// so the client acknowledges it, and the server counts its open delivered. The client's
    /// copy has the forger's class, and no open of the server's is left to conflict with it (a
    /// forged close and a forged open after it no longer get there: the client remembers the
    /// class of what it closed).
    fn spawn_forged(&mut self) -> (ActorId, NetGuid) {
        let (id, guid) = self.spawn();
        self.driver.tick(&mut [&mut self.counters, &mut self.others]).unwrap();
        let lost = self.driver.take_packets(self.conn).unwrap();
        assert_eq!(lost.len(), 1);
        let seq = shadowrep::wire::BitReader::new(&lost[0]).read_packed().unwrap() as u32;
        let forged = packet(seq, |w| write_bunch(w, guid, Some(&OpenHeader::spawn(1)), &BitWriter::new()));
        assert!(matches!(self.client.receive(&forged), Ok(Receipt::Applied { .. })));
        assert_eq!(self.client.class_of(guid), Some(1), "the forged copy took");
        self.driver.receive_feedback(self.conn, &self.client.feedback()).unwrap();
        (id, guid)
    }

    fn step(&mut self) {
        self.driver.tick(&mut [&mut self.counters, &mut self.others]).unwrap();
        for p in self.driver.take_packets(self.conn).unwrap() {
            let _ = self.client.receive(&p);
        }
        self.driver.receive_feedback(self.conn, &self.client.feedback()).unwrap();
    }
}
