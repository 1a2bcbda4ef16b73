//! Robustness: loss, reordering, hostile packets and hostile feedback, each defect of the
//! hardening issue reproduced as a test that failed before its fix.

mod defects;
mod driver_errors;
mod forged;
mod forged_packets;
mod mutants;
mod sequence;
mod soak;

use shadowrep::client::ClientWorld;
use shadowrep::ids::{ClassId, ConnectionId, NetGuid};
use shadowrep::net::{DriverConfig, NetDriver};
use shadowrep::schema::ClassBuilder;
use shadowrep::store::ClassStore;
use std::sync::Arc;

/// One class, one store, one driver, one client — driven by hand, packet by packet.
pub(crate) struct Bench {
    pub store: ClassStore,
    pub driver: NetDriver,
    pub class: ClassId,
    pub conn: ConnectionId,
    pub client: ClientWorld,
}

impl Bench {
    pub fn new(b: ClassBuilder, cfg: DriverConfig) -> Self {
        let layout = Arc::new(b.build().expect("valid layout"));
        let mut store = ClassStore::new(layout.clone());
        let mut driver = NetDriver::new(cfg).expect("valid config");
        let class = driver.register_class(&mut store).expect("registers");
        let conn = driver.add_connection(false);
        let client = ClientWorld::new(std::slice::from_ref(&layout), &driver.checksums()).expect("same layout");
        Self { store, driver, class, conn, client }
    }

    /// One tick; returns its packets.
    pub fn tick(&mut self) -> Vec<Vec<u8>> {
        self.driver.tick(&mut [&mut self.store]).expect("tick");
        self.driver.take_packets(self.conn).expect("connection")
    }

    /// Delivers packets to the client (each must be accepted) and its feedback to the server.
    pub fn deliver(&mut self, packets: &[Vec<u8>]) {
        for p in packets {
            self.client.receive(p).expect("a server packet is well-formed");
        }
        self.feed_back();
    }

    /// The client's feedback reaches the server.
    pub fn feed_back(&mut self) {
        let fb = self.client.feedback();
        self.driver.receive_feedback(self.conn, &fb).expect("feedback decodes");
    }

    /// Ticks and delivers everything, `n` times.
    pub fn run(&mut self, n: usize) {
        for _ in 0..n {
            let p = self.tick();
            self.deliver(&p);
        }
    }

    pub fn guid(&mut self, id: shadowrep::store::ActorId) -> NetGuid {
        self.driver.assign_guid(self.class, &self.store, id).expect("live actor")
    }
}
