//! The kernel's server for a scenario: a [`NetDriver`] with the actor level, the game's calls
//! into it, acknowledging clients, and the frame dump (`dump`).
//!
//! ```text
//! new         register the four classes (class id = Kind index), their net settings and
//!             location properties
//! prepare     joined   → a connection each, its character's GUID, set_owner(autonomous), its
//!                        weapon (a sub-object), its inventory (an owner-only fast array of
//!                        INVENTORY_ITEMS items)
//!             fired    → set_owner_actor(projectile, owner = instigator = the shooter); one of
//!                        the shooter's inventory items loses a round, and every PICKUP_EVERY-th
//!                        shot picks one up (an add; past INVENTORY_MAX the oldest goes)
//!             changed  → force_net_update
//!             dormant  → placed in the level: register_static_actor (path `Prop_<n>`) and
//!                        Initial dormancy; idle loot: DormantAll
//!             always   → each connection's viewer: view target = its character, at its eyes,
//!                        looking where it faces
//! tick        NetDriver::tick over the world's stores
//! feedback    per connection: heard_from (the client's own traffic), and one feedback
//!             acknowledging every packet of the frame
//! ```

use super::{FrameEvents, Kind, ScenarioServer, World};
use crate::phase::{within, Phase, PhaseProbe};
use crate::replicate::drain_and_ack;
use shadowrep::fastarray::{item_layout, ReplicationId};
use shadowrep::net::spatial::{GridConfig, DEFAULT_CELL_SIZE};
use shadowrep::net::FastArrayKind;
use shadowrep::net::{
    Action, ActorLevelConfig, ClassId, ConnectionId, Dormancy, DriverConfig, NetDriver, NetGuid, SubObjectCondition,
    TickStats, Viewer,
};
use shadowrep::reference::frame::ReferenceFrame;
use shadowrep::schema::{ArrayLayout, PropType, StructType};
use shadowrep_layouts::classes::{Actor, Pickup, Projectile, ShooterCharacter, ShooterWeapon};
use std::io::Write;

mod dump;
use dump::write_dump;

/// See the module documentation.
pub struct KernelServer {
    driver: NetDriver,
    /// The UE-style reference ticked on the same frames, when comparing.
    reference: Option<Reference>,
    classes: [ClassId; 5],
    conns: Vec<ConnectionId>,
    /// Each player's character.
    characters: Vec<NetGuid>,
    viewers: Vec<Viewer>,
    /// The dormant actors' GUIDs (to tell their bytes apart).
    dormant: std::collections::HashSet<NetGuid>,
    /// The inventories' item layout.
    inventory_kind: FastArrayKind,
    /// Each player's inventory: its fast array, its items (oldest first), shots fired.
    inventories: Vec<Inventory>,
}

/// One player's inventory.
struct Inventory {
    guid: NetGuid,
    items: std::collections::VecDeque<ReplicationId>,
    shots: u32,
}

/// Items an inventory starts with.
pub const INVENTORY_ITEMS: u16 = 16;
/// Most items an inventory holds (a pickup past it drops the oldest).
pub const INVENTORY_MAX: usize = 24;
/// A pickup every this many shots.
pub const PICKUP_EVERY: u32 = 8;

/// An inventory item: which item, how many, and its durability.
pub fn inventory_layout() -> std::sync::Arc<ArrayLayout> {
    let item = StructType::new("InventoryItem")
        .field("ItemId", PropType::U16)
        .field("Count", PropType::U16)
        .field("Durability", PropType::U8);
    std::sync::Arc::new(item_layout("Inventory", PropType::Struct(item)).expect("a valid item layout"))
}

/// An item's bytes in [`inventory_layout`] (its stride is 6: a padding byte, kept zero).
fn inventory_item(item: u16, count: u16, durability: u8) -> [u8; 6] {
    let (i, c) = (item.to_le_bytes(), count.to_le_bytes());
    [i[0], i[1], c[0], c[1], durability, 0]
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

impl KernelServer {
    /// A driver for `world`'s classes; `parallel`: per-connection work on the rayon pool.
    pub fn new(world: &mut World, parallel: bool) -> Result<KernelServer, String> {
        let (mut driver, classes) = scenario_driver(world, parallel)?;
        let inventory_kind = driver.register_fast_array_kind(inventory_layout()).map_err(err)?;
        Ok(KernelServer {
            driver,
            reference: None,
            classes,
            conns: Vec::new(),
            characters: Vec::new(),
            viewers: Vec::new(),
            dormant: Default::default(),
            inventory_kind,
            inventories: Vec::new(),
        })
    }

    /// The same server with the UE-style reference frame ticked after the kernel on every frame,
    /// and the kernel's decisions recorded so the two can be compared.
    pub fn with_reference(world: &mut World, parallel: bool) -> Result<KernelServer, String> {
        let mut server = KernelServer::new(world, parallel)?;
        let frame = ReferenceFrame::new(&server.driver, &mut world.stores_mut()).map_err(err)?;
        server.driver.set_record_decisions(true).map_err(err)?;
        server.reference = Some(Reference { frame, last_ns: 0, audit_ns: 0, mismatch: None });
        Ok(server)
    }

    /// With a reference: the last frame's reference time, ns, and the first frame on which the
    /// two decided differently so far (a description), if any.
    pub fn reference_report(&self) -> Option<(u64, Option<&str>)> {
        self.reference.as_ref().map(|r| (r.last_ns, r.mismatch.as_deref()))
    }

    /// The driver.
    pub fn driver(&self) -> &NetDriver {
        &self.driver
    }

    /// The driver, to change what the scenario does not (a test's sublevels, say).
    pub fn driver_mut(&mut self) -> &mut NetDriver {
        &mut self.driver
    }

    /// The class registered for `kind`.
    pub fn class(&self, kind: Kind) -> ClassId {
        self.classes[kind.index()]
    }

    /// The connections, in player order.
    pub fn connections(&self) -> &[ConnectionId] {
        &self.conns
    }

    /// Each player's character.
    pub fn characters(&self) -> &[NetGuid] {
        &self.characters
    }

    /// Bytes the last frame (recorded with [`ScenarioServer::record_decisions`]) spent on
    /// dormant actors, over every connection: (updates of copies a client already holds — idle
    /// dormant actors should cost nothing —, first sight: the opens of those a connection meets
    /// and their dormancy closes).
    pub fn dormant_bytes(&self) -> Result<(f64, f64), String> {
        let (mut idle, mut first) = (0u64, 0u64);
        for &c in &self.conns {
            let Some(d) = self.driver.decisions(c).map_err(err)? else { continue };
            for s in d.sends.iter().filter(|s| self.dormant.contains(&s.guid)) {
                match s.action {
                    Action::Replicated { opened: false } | Action::Closed | Action::TornOff => idle += s.bits as u64,
                    Action::Replicated { opened: true } | Action::OpenedForCall | Action::Dormant => {
                        first += s.bits as u64
                    }
                }
            }
        }
        Ok((idle as f64 / 8.0, first as f64 / 8.0))
    }

    /// Player `p` fired: an inventory item loses a round; every PICKUP_EVERY-th shot picks an
    /// item up. (An inventory whose owner is gone went with it: nothing to do.)
    fn shot(&mut self, p: usize) -> Result<(), String> {
        let Some(inv) = self.inventories.get_mut(p) else { return Ok(()) };
        let Ok(mut items) = self.driver.fast_array_mut(inv.guid) else { return Ok(()) };
        inv.shots += 1;
        if let Some(&id) = inv.items.get(inv.shots as usize % inv.items.len().max(1)) {
            let bytes = items.item_mut(id).map_err(err)?;
            let count = u16::from_le_bytes([bytes[2], bytes[3]]).wrapping_sub(1);
            bytes[2..4].copy_from_slice(&count.to_le_bytes());
        }
        if inv.shots % PICKUP_EVERY == 0 {
            let item = (inv.shots / PICKUP_EVERY) as u16;
            inv.items.push_back(items.add(&inventory_item(item, 1, 100)).map_err(err)?);
            if inv.items.len() > INVENTORY_MAX {
                let oldest = inv.items.pop_front().expect("more than the maximum");
                items.remove(oldest).map_err(err)?;
            }
        }
        Ok(())
    }
}

/// A driver for `world`'s classes (class id = [`Kind`] index) with the actor level at the
/// world's tick rate and net speed, each class's net settings and location property;
/// `parallel`: per-connection work on the rayon pool. The scenario's server and `shadowrep
/// serve` start from it.
pub fn scenario_driver(world: &mut World, parallel: bool) -> Result<(NetDriver, [ClassId; 5]), String> {
    let cfg = world.config();
    // Cells of the replication graph's size, covering the map with a cell to spare.
    let cells = (cfg.world_size / DEFAULT_CELL_SIZE).ceil() as u32 + 2;
    let level = ActorLevelConfig {
        tick_rate: cfg.tick_rate,
        net_speed: cfg.net_speed,
        grid: GridConfig::centred(DEFAULT_CELL_SIZE, cells),
        owner_chain_connections: cfg.owner_chains,
        ..ActorLevelConfig::default()
    };
    let mut driver =
        NetDriver::new(DriverConfig { parallel, actor_level: Some(level), ..DriverConfig::default() }).map_err(err)?;
    let mut classes = [ClassId(0); 5];
    for kind in Kind::ALL {
        let class = driver.register_class(&mut world.stores[kind.index()]).map_err(err)?;
        driver.set_class_settings(class, kind.net_settings()).map_err(err)?;
        let location = match kind {
            // LootContainer extends Actor: the base's parents keep their indices.
            Kind::Character | Kind::Loot => Some(Actor::LOCATION),
            Kind::Projectile => Some(Projectile::LOCATION),
            Kind::Pickup => Some(Pickup::LOCATION),
            // A sub-object is where its owner is.
            Kind::Weapon => None,
        };
        if let Some(location) = location {
            driver.set_location_property(class, location).map_err(err)?;
        }
        classes[kind.index()] = class;
    }
    Ok((driver, classes))
}

/// The game's calls into `driver` for a frame's events besides joins: projectiles owned and
/// instigated by their shooter (`characters[p]`: player p's character), `ForceNetUpdate` on
/// changed static actors, dormant actors registered (placed in the level: static, `Initial`
/// dormancy; idle loot: `DormantAll`). Returns the dormant actors' GUIDs.
pub fn apply_events(
    driver: &mut NetDriver,
    classes: &[ClassId; 5],
    world: &World,
    events: &FrameEvents,
    characters: &[NetGuid],
) -> Result<Vec<NetGuid>, String> {
    let class = |kind: Kind| classes[kind.index()];
    let projectile = class(Kind::Projectile);
    for &(id, p) in &events.fired {
        let shooter = characters.get(p).copied();
        driver.set_owner_actor(projectile, world.store(Kind::Projectile), id, shooter, shooter).map_err(err)?;
    }
    for &(kind, id) in &events.changed {
        driver.force_net_update(class(kind), world.store(kind), id).map_err(err)?;
    }
    let mut dormant = Vec::with_capacity(events.dormant.len());
    for &(kind, id, placed, n) in &events.dormant {
        let (c, store) = (class(kind), world.store(kind));
        let (guid, dormancy) = if placed {
            (driver.register_static_actor(c, store, id, &format!("Prop_{n}")).map_err(err)?, Dormancy::Initial)
        } else {
            (driver.assign_guid(c, store, id).map_err(err)?, Dormancy::DormantAll)
        };
        driver.set_net_dormancy(c, store, id, dormancy).map_err(err)?;
        dormant.push(guid);
    }
    Ok(dormant)
}

impl KernelServer {
    /// Calls written to the connections so far (resends included), those dropped (mostly
    /// unreliable calls on a saturated connection), those not for a connection (no open
    /// channel of the actor there), and the channels saturated frames opened for calls.
    pub fn calls_written(&self) -> Result<[u64; 4], String> {
        let mut n = [0; 4];
        for &c in &self.conns {
            let st = self.driver.connection_stats(c).map_err(err)?;
            let add = [st.rpcs_sent, st.rpcs_dropped, st.rpcs_without_channel, st.channels_opened_for_calls];
            n.iter_mut().zip(add).for_each(|(n, a)| *n += a);
        }
        Ok(n)
    }

    /// The frame's remote procedure calls (`ScenarioConfig::calls`): each shot's muzzle effect
    /// to everyone who sees the shooter, and a reload to the owner of each weapon whose clip
    /// ran dry.
    fn make_calls(&mut self, world: &World, events: &FrameEvents) -> Result<(), String> {
        let (character, weapon) = (self.class(Kind::Character), self.class(Kind::Weapon));
        for &(projectile, p) in &events.fired {
            let id = world.character(p).ok_or_else(|| format!("player {p} has no character"))?;
            let muzzle = (projectile.index % 4) as u8;
            ShooterCharacter::call_multicast_fire_effect(
                &mut self.driver,
                character,
                world.store(Kind::Character),
                id,
                muzzle,
            )
            .map_err(err)?;
        }
        for &p in &events.reloaded {
            let id = world.weapon(p).ok_or_else(|| format!("player {p} has no weapon"))?;
            ShooterWeapon::call_client_start_reload(&mut self.driver, weapon, world.store(Kind::Weapon), id)
                .map_err(err)?;
        }
        Ok(())
    }
}

impl ScenarioServer for KernelServer {
    fn prepare(&mut self, world: &mut World, events: &FrameEvents) -> Result<(), String> {
        let character = self.class(Kind::Character);
        for &p in &events.joined {
            if p != self.conns.len() {
                return Err(format!("player {p} joined out of order"));
            }
            let id = world.character(p).ok_or_else(|| format!("player {p} has no character"))?;
            let store = world.store(Kind::Character);
            let conn = self.driver.add_connection(false);
            let guid = self.driver.assign_guid(character, store, id).map_err(err)?;
            self.driver.set_owner(character, store, id, Some(conn), true).map_err(err)?;
            let weapon = world.weapon(p).ok_or_else(|| format!("player {p} has no weapon"))?;
            let weapon_class = self.class(Kind::Weapon);
            self.driver
                .register_sub_object(weapon_class, world.store(Kind::Weapon), weapon, guid, SubObjectCondition::None)
                .map_err(err)?;
            let inventory =
                self.driver.add_fast_array(self.inventory_kind, guid, SubObjectCondition::OwnerOnly).map_err(err)?;
            let mut items = self.driver.fast_array_mut(inventory).map_err(err)?;
            let ids = (0..INVENTORY_ITEMS)
                .map(|i| items.add(&inventory_item(i, 30, 100)).map_err(err))
                .collect::<Result<_, _>>()?;
            self.inventories.push(Inventory { guid: inventory, items: ids, shots: 0 });
            self.conns.push(conn);
            self.characters.push(guid);
        }
        if !events.joined.is_empty() {
            world.bind_character_guids(self.characters.iter().map(|g| g.0).collect());
        }
        let dormant = apply_events(&mut self.driver, &self.classes, world, events, &self.characters)?;
        self.dormant.extend(dormant);
        for &(_, p) in &events.fired {
            self.shot(p)?;
        }
        if world.config().calls {
            self.make_calls(world, events)?;
        }
        self.viewers.clear();
        for (p, (&conn, &guid)) in self.conns.iter().zip(&self.characters).enumerate() {
            let (location, direction) = world.view(p);
            let viewer = Viewer { real_viewer: None, view_target: Some(guid), location, direction };
            self.driver.set_viewers(conn, std::slice::from_ref(&viewer)).map_err(err)?;
            self.viewers.push(viewer);
        }
        Ok(())
    }

    fn tick(&mut self, world: &mut World, probe: &mut dyn PhaseProbe) -> Result<TickStats, String> {
        let stats = within(probe, Phase::Kernel, || self.driver.tick(&mut world.stores_mut())).map_err(err)?;
        if let Some(r) = self.reference.as_mut() {
            let t = std::time::Instant::now();
            let tick =
                within(probe, Phase::Reference, || r.frame.tick(&self.driver, &mut world.stores_mut())).map_err(err)?;
            // The relevancy audit (answers UE never asks, for the cross-check) is not the
            // reference's frame.
            let total = t.elapsed().as_nanos() as u64;
            r.audit_ns = (tick.audit_seconds * 1e9) as u64;
            r.last_ns = total.saturating_sub(r.audit_ns);
            if r.mismatch.is_none() && tick.missed_slots > 0 {
                r.mismatch = Some(format!("reference: {} slots changed outside the driver's log", tick.missed_slots));
            }
            if r.mismatch.is_none() {
                r.mismatch = compare_decisions(&self.driver, &r.frame, &self.conns);
            }
        }
        Ok(stats)
    }

    fn feedback(&mut self) -> Result<(), String> {
        if let Some(r) = self.reference.as_mut() {
            r.frame.acknowledge_all();
        }
        for &c in &self.conns {
            self.driver.heard_from(c).map_err(err)?;
        }
        drain_and_ack(&mut self.driver, &self.conns).map(|_| ())
    }

    fn record_decisions(&mut self, on: bool) -> Result<(), String> {
        self.driver.set_record_decisions(on).map_err(err)
    }

    fn dump(&self, world: &World, frame: usize, out: &mut dyn Write) -> Result<(), String> {
        write_dump(self, world, frame, out).map_err(|e| format!("writing the frame dump: {e}"))
    }

    fn reference_ns(&self) -> Option<u64> {
        self.reference.as_ref().map(|r| r.last_ns)
    }

    fn reference_audit_ns(&self) -> u64 {
        self.reference.as_ref().map_or(0, |r| r.audit_ns)
    }

    fn pair_state(&self) -> Result<(usize, usize), String> {
        let mut total = (0, 0);
        for &c in &self.conns {
            let (rows, bytes) = self.driver.channels(c).map_err(err)?;
            total = (total.0 + rows, total.1 + bytes);
        }
        Ok(total)
    }
}

/// The reference frame and what it found.
struct Reference {
    frame: ReferenceFrame,
    /// Its last frame, ns, without the audit.
    last_ns: u64,
    /// Its last frame's relevancy audit, ns (`ReferenceTick::audit_seconds`).
    audit_ns: u64,
    mismatch: Option<String>,
}

/// Where the kernel's and the reference's decisions of the last frame differ, if they do:
/// relevant sets, send order with priorities, actions and bits, saturation, queued bits.
fn compare_decisions(driver: &NetDriver, reference: &ReferenceFrame, conns: &[ConnectionId]) -> Option<String> {
    for &c in conns {
        let kernel = driver.decisions(c).ok().flatten();
        let refd = reference.decisions(c);
        let (Some(k), Some(r)) = (kernel, refd) else {
            return Some(format!("connection {}: decisions missing", c.0));
        };
        if k.relevant != r.relevant {
            let only_kernel: Vec<u64> =
                k.relevant.iter().filter(|g| !r.relevant.contains(g)).map(|g| g.0).take(5).collect();
            let only_reference: Vec<u64> =
                r.relevant.iter().filter(|g| !k.relevant.contains(g)).map(|g| g.0).take(5).collect();
            return Some(format!(
                "frame {}, connection {}: relevant sets differ ({} vs {} actors; only the kernel's: {only_kernel:?}, \
                 only the reference's: {only_reference:?})",
                k.frame.0,
                c.0,
                k.relevant.len(),
                r.relevant.len()
            ));
        }
        if let Some(i) = (0..k.sends.len().max(r.sends.len())).find(|&i| k.sends.get(i) != r.sends.get(i)) {
            return Some(format!(
                "frame {}, connection {}: send {i} differs (kernel {:?}, reference {:?})",
                k.frame.0,
                c.0,
                k.sends.get(i),
                r.sends.get(i)
            ));
        }
        if k.saturated != r.saturated || k.queued_bits != r.queued_bits {
            return Some(format!("frame {}, connection {}: budgets differ", k.frame.0, c.0));
        }
    }
    None
}
