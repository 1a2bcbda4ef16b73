//! State digests: one number for "what a client holds", computed the same way from the
//! client's world ([`client_digest`]) and from what the server says the connection should hold
//! ([`expected_digest`]), so a test or a bot can tell whether a client converged.
//!
//! ```text
//! digest = FNV-1a 64 over, for each actor in ascending NetGUID order:
//!   guid (u64 LE), class id (u32 LE), the client's role (u8: 0 simulated, 1 autonomous; a
//!   sub-object's is its owner's),
//!   for each leaf of its class, in leaf order:
//!     fixed leaf:  its bytes as they are after a trip over the wire (wire::quantize_leaf),
//!                  an object reference replaced by 0 unless the referenced actor is one the
//!                  client holds (null, unmapped and dead references all read 0)
//!     array leaf:  element count (u32 LE), then each element's leaves as above
//! actors = how many actors went in
//! ```
//!
//! The client's role goes in as the newest open gave it ([`ClientWorld::role`]), the server's as
//! the connection's flags give it now: a role changed since it was sent makes them differ until
//! it is sent again, as a value does.
//!
//! The client digests every actor it has, except those closed for dormancy or torn off. The
//! server digests [`NetDriver::held_actors`]: the actors whose open the client acknowledged,
//! and of each, the leaves the connection may receive (its condition flags) from the store —
//! the rest at the class default, what a client has of a leaf never sent to it.
//!
//! What that makes exact: once nothing is in flight to the client (the server answers a digest
//! request only then, naming the last packet it sent), the two agree when the client applied
//! every packet right. It assumes a pair's condition flags (owner, autonomous, physics, Custom
//! switches) did not change while the client held the actor, and that InitialOnly values did
//! not change after the actor's open (the server has only the current value); dormant actors
//! are not covered (the client keeps what it last acknowledged, which the server does not
//! remember). A change not yet sent (an actor not due yet, or cut by the bandwidth budget)
//! makes them differ until it is sent.

use crate::client::ClientWorld;
use crate::ids::{ConnectionId, NetGuid, NetRole};
use crate::net::{DriverError, NetDriver};
use crate::schema::{ClassLayout, LeafKind};
use crate::store::ClassStore;
use crate::wire::quantize_leaf;
use std::collections::HashSet;
use std::fmt;

/// A digest and the number of actors in it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct StateDigest {
    /// Actors digested.
    pub actors: u32,
    /// The FNV-1a 64 hash.
    pub hash: u64,
}

/// Why the server side could not be digested.
#[derive(Clone, Debug, PartialEq)]
pub enum DigestError {
    /// The driver refused (unknown or removed connection).
    Driver(DriverError),
    /// No store given for a class id, or one with another layout than the driver's.
    Store(u32),
}

impl fmt::Display for DigestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DigestError::Driver(e) => write!(f, "{e}"),
            DigestError::Store(c) => write!(f, "no store with the driver's layout for class {c}"),
        }
    }
}

impl std::error::Error for DigestError {}

/// FNV-1a, 64 bits: small, fixed, the same on every build (a digest crosses the network).
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// Writes one value of `kind` (bytes as stored) into the hash, canonical.
fn put_leaf(h: &mut Fnv, kind: LeafKind, bytes: &[u8], holds: &dyn Fn(NetGuid) -> bool) {
    if kind == LeafKind::Object {
        let mut g = [0u8; 8];
        g.copy_from_slice(&bytes[..8]);
        let guid = u64::from_le_bytes(g);
        let known = guid != 0 && holds(NetGuid(guid));
        h.write(&(if known { guid } else { 0 }).to_le_bytes());
    } else {
        h.write(&quantize_leaf(kind, bytes));
    }
}

/// Where one actor's leaves come from: (fixed leaf → its bytes, array → its element bytes).
struct ActorSource<'a> {
    fixed: &'a dyn Fn(usize, &mut [u8]),
    array: &'a dyn Fn(usize) -> Vec<u8>,
}

fn put_actor(
    h: &mut Fnv,
    (guid, class, role): (NetGuid, u32, NetRole),
    layout: &ClassLayout,
    src: &ActorSource<'_>,
    holds: &dyn Fn(NetGuid) -> bool,
) {
    h.write(&guid.0.to_le_bytes());
    h.write(&class.to_le_bytes());
    h.write(&[u8::from(role == NetRole::AutonomousProxy)]);
    let mut buf = Vec::new();
    for (li, leaf) in layout.leaves.iter().enumerate() {
        match leaf.array {
            None => {
                buf.clear();
                buf.resize(leaf.kind.byte_size(), 0);
                (src.fixed)(li, &mut buf);
                put_leaf(h, leaf.kind, &buf, holds);
            }
            Some(a) => {
                let array = &layout.arrays[a];
                let bytes = (src.array)(a);
                let n = bytes.len().checked_div(array.stride).unwrap_or(0);
                h.write(&(n as u32).to_le_bytes());
                for el in bytes.chunks_exact(array.stride.max(1)) {
                    for e in &array.elements {
                        put_leaf(h, e.kind, &el[e.offset..e.offset + e.kind.byte_size()], holds);
                    }
                }
            }
        }
    }
}

/// The digest of what `world` holds (see the module documentation).
pub fn client_digest(world: &ClientWorld) -> StateDigest {
    let mut actors: Vec<(NetGuid, u32)> =
        world.actors().filter(|&(g, _)| !world.is_dormant(g) && !world.is_torn_off(g)).collect();
    actors.sort_unstable();
    let holds = |g: NetGuid| world.has(g);
    let mut h = Fnv::new();
    for &(guid, class) in &actors {
        let Some((store, id)) = world.actor(guid) else { continue };
        let src = ActorSource {
            fixed: &|li, out| store.read_leaf(id.index, li, out),
            array: &|a| store.array_bytes(id.index, a).to_vec(),
        };
        let role = world.role(guid).unwrap_or(NetRole::SimulatedProxy);
        put_actor(&mut h, (guid, class, role), store.layout(), &src, &holds);
    }
    StateDigest { actors: actors.len() as u32, hash: h.0 }
}

/// The digest of what connection `conn` should hold (see the module documentation).
/// `stores[i]` is the store of class id `i`.
pub fn expected_digest(
    driver: &NetDriver,
    conn: ConnectionId,
    stores: &[&ClassStore],
) -> Result<StateDigest, DigestError> {
    let held = driver.held_actors(conn).map_err(DigestError::Driver)?;
    let checksums = driver.checksums();
    for (i, c) in checksums.iter().enumerate() {
        if stores.get(i).is_none_or(|s| s.layout().checksum != *c) {
            return Err(DigestError::Store(i as u32));
        }
    }
    let known: HashSet<NetGuid> = held.iter().map(|a| a.guid).collect();
    let holds = |g: NetGuid| known.contains(&g);
    // A fresh actor of each class: what a client has of a leaf never sent to it.
    let defaults: Vec<ClassStore> = stores
        .iter()
        .map(|s| {
            let mut d = ClassStore::new(s.layout().clone());
            d.spawn();
            d
        })
        .collect();
    let mut h = Fnv::new();
    for a in &held {
        let ci = a.class.0 as usize;
        let (store, default) = (stores[ci], &defaults[ci]);
        let layout = store.layout();
        let sent = |li: usize| layout.groups.contains(a.leaves, li);
        let src = ActorSource {
            fixed: &|li, out| {
                if sent(li) {
                    store.read_leaf(a.id.index, li, out)
                } else {
                    default.read_leaf(0, li, out)
                }
            },
            array: &|ai| {
                if sent(layout.arrays[ai].leaf) {
                    store.array_bytes(a.id.index, ai).to_vec()
                } else {
                    default.array_bytes(0, ai).to_vec()
                }
            },
        };
        put_actor(&mut h, (a.guid, a.class.0, a.role), layout, &src, &holds);
    }
    Ok(StateDigest { actors: held.len() as u32, hash: h.0 })
}
