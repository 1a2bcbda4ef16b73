//! Replication semantics, end to end and at the client's door: the condition map per connection
//! (owner, autonomous proxy, simulated proxy, replay, physics), privacy of owner-only data,
//! notifies, dynamic arrays, unmapped object references, malformed input and layout checksums.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use shadowrep::client::{ClientError, ClientWorld, NotifyEvent, Receipt, ReceiveError};
use shadowrep::driver::DriverConfig;
use shadowrep::link::LinkConfig;
use shadowrep::schema::{
    ClassBuilder, ClassLayout, Condition, LeafKind, Notify, PropType, PropertyDecl, StructType, VectorQuant,
};
use shadowrep::store::{ActorId, ClassStore};
use shadowrep::value::{ObjectRef, Value};
use shadowrep::wire::bunch::{
    begin_bunch, begin_packet, decode_packet, end_bunch, end_packet, write_leaf_record, Packet,
};
use shadowrep::wire::{BitReader, BitWriter, WireError};
use shadowrep_tests::World;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

fn build(b: ClassBuilder) -> Arc<ClassLayout> {
    Arc::new(b.build().expect("valid layout"))
}

/// The handle of parent `parent`'s first leaf.
fn handle(layout: &ClassLayout, parent: usize) -> u16 {
    layout.leaves[layout.parents[parent].leaves.start].handle
}

/// A world with one class and one client per entry of `replays` (true: a replay connection), all
/// on perfect links.
fn world_with(layout: &Arc<ClassLayout>, replays: &[bool]) -> World {
    let mut w = World::with_layouts(vec![layout.clone()], DriverConfig::default(), 7);
    for &replay in replays {
        w.add_client(replay, LinkConfig::perfect(1));
    }
    w
}

/// Writes a value on the server and marks it dirty.
fn set(w: &mut World, store: usize, id: ActorId, parent: usize, v: Value) {
    w.stores[store].set(id, parent, &v).expect("valid value");
    w.stores[store].mark_dirty(id, parent).expect("live actor");
}

fn set_owner(w: &mut World, id: ActorId, owner: Option<usize>, autonomous: bool) {
    let owner = owner.map(|o| w.clients[o].conn);
    w.driver.set_owner(w.classes[0], &w.stores[0], id, owner, autonomous).expect("set_owner");
}

/// Like [`World::step`], but returns the packets the server produced for each client. Every
/// packet the server produces must be accepted by its client.
fn step_capture(w: &mut World) -> Vec<Vec<Vec<u8>>> {
    let mut stores: Vec<&mut ClassStore> = w.stores.iter_mut().collect();
    w.driver.tick(&mut stores).expect("tick");
    let mut out = Vec::new();
    for (ci, c) in w.clients.iter_mut().enumerate() {
        let packets = w.driver.take_packets(c.conn).expect("connection");
        for p in &packets {
            c.down.send(p.clone());
        }
        for p in c.down.tick() {
            if let Err(e) = c.world.receive(&p) {
                panic!("client {ci} refused a server packet: {e}");
            }
        }
        c.up.send(c.world.feedback());
        for f in c.up.tick() {
            w.driver.receive_feedback(c.conn, &f).expect("feedback decodes");
        }
        out.push(packets);
    }
    out
}

/// Decodes a server packet with a resolver mapping each actor GUID to its class layout.
fn decode(bytes: &[u8], layouts: &HashMap<u64, Arc<ClassLayout>>) -> Packet {
    decode_packet(bytes, |guid, _| {
        layouts.get(&guid).map(|l| &**l).ok_or(WireError::Invalid("GUID not in the test's map"))
    })
    .expect("server packet decodes")
}

/// Runs `frames` frames and returns every (client, actor GUID, record handle) that was sent.
fn run_and_collect(
    w: &mut World,
    frames: usize,
    layouts: &HashMap<u64, Arc<ClassLayout>>,
) -> HashSet<(usize, u64, u16)> {
    let mut sent = HashSet::new();
    for _ in 0..frames {
        for (ci, packets) in step_capture(w).iter().enumerate() {
            for p in packets {
                for b in decode(p, layouts).bunches {
                    for r in &b.records {
                        sent.insert((ci, b.guid, r.handle));
                    }
                }
            }
        }
    }
    sent
}

fn u32s(c: &ClientWorld, guid: u64, parents: usize) -> Vec<u32> {
    (0..parents)
        .map(|p| match c.value(guid, p) {
            Some(Value::U32(v)) => v,
            other => panic!("actor {guid} parent {p}: expected a u32, got {other:?}"),
        })
        .collect()
}

/// A hand-made packet: `body` writes the bunches.
fn craft(seq: u32, body: impl FnOnce(&mut BitWriter)) -> Vec<u8> {
    let mut w = BitWriter::new();
    begin_packet(&mut w, seq);
    body(&mut w);
    end_packet(&mut w);
    w.into_bytes()
}

/// A bunch of `u32` leaf records (handle, value), in handle order.
fn u32_bunch(w: &mut BitWriter, guid: u64, open: Option<u32>, records: &[(u16, u32)]) {
    begin_bunch(w, guid, open, false);
    for &(h, v) in records {
        write_leaf_record(w, h, LeafKind::U32, &v.to_le_bytes());
    }
    end_bunch(w);
}

// ---------------------------------------------------------------------------------------------
// 1. The condition map, per condition, through the server
// ---------------------------------------------------------------------------------------------

/// How a connection sees an actor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// Owns the actor and holds its autonomous proxy.
    AutonomousOwner,
    /// Owns the actor but holds a simulated proxy.
    SimulatedOwner,
    /// A plain viewer: simulated proxy, not the owner.
    Simulated,
    /// A replay connection (not the owner).
    Replay,
}

/// UE's condition map, written out per role (independently of the kernel's flag table).
fn ue_active(c: Condition, role: Role, initial: bool, physics: bool) -> bool {
    use Role::*;
    let owner = matches!(role, AutonomousOwner | SimulatedOwner);
    match c {
        Condition::None | Condition::Custom | Condition::Dynamic => true,
        Condition::InitialOnly => initial,
        Condition::OwnerOnly => owner,
        Condition::SkipOwner => !owner,
        Condition::SimulatedOnly => role != AutonomousOwner,
        Condition::AutonomousOnly => role == AutonomousOwner,
        Condition::SimulatedOrPhysics => role != AutonomousOwner || physics,
        Condition::InitialOrOwner => initial || owner,
        Condition::ReplayOrOwner => role == Replay || owner,
        Condition::ReplayOnly => role == Replay,
        Condition::SimulatedOnlyNoReplay => matches!(role, SimulatedOwner | Simulated),
        Condition::SimulatedOrPhysicsNoReplay => role != Replay && (role != AutonomousOwner || physics),
        Condition::SkipReplay => role != Replay,
        Condition::Never => false,
    }
}

/// Clients of the condition scenarios: 0 and 1 are game clients, 2 records a replay.
const REPLAY_CLIENT: usize = 2;
const CLIENTS: usize = 3;
const FRAMES_PER_PHASE: usize = 4;

/// Who owns an actor, how, and whether it replicates physics.
#[derive(Clone, Copy, Debug)]
struct Setup {
    owner: Option<usize>,
    autonomous: bool,
    physics: bool,
}

impl Setup {
    fn new(owner: Option<usize>, autonomous: bool, physics: bool) -> Self {
        Self { owner, autonomous, physics }
    }

    fn role(&self, client: usize) -> Role {
        match self.owner {
            Some(o) if o == client => {
                if self.autonomous {
                    Role::AutonomousOwner
                } else {
                    Role::SimulatedOwner
                }
            }
            _ if client == REPLAY_CLIENT => Role::Replay,
            _ => Role::Simulated,
        }
    }

    fn apply(&self, w: &mut World, id: ActorId) {
        set_owner(w, id, self.owner, self.autonomous);
        w.driver.set_physics(w.classes[0], &w.stores[0], id, self.physics).expect("set_physics");
    }
}

enum Phase {
    /// Every property of every actor gets a new value (base + actor * 100 + parent + 1).
    Values(u32),
    /// Ownership / physics changes: (actor, new setup).
    Flags(Vec<(usize, Setup)>),
}

/// One `u32` property per condition; parent `i` has condition `Condition::ALL[i]`.
fn conditions_layout() -> Arc<ClassLayout> {
    let mut b = ClassBuilder::new("Conditions");
    for c in Condition::ALL {
        b = b.property(PropertyDecl::new(format!("{c:?}"), PropType::U32).condition(c));
    }
    build(b)
}

/// Runs four actors (owned autonomously, owned as a simulated proxy, owned autonomously with
/// physics, unowned) past three connections (two game clients and a replay) through value and
/// ownership/physics changes, and checks after each phase that every connection holds the server
/// value of property `cond` exactly when the condition map makes it active, and that no record of
/// it was ever sent to a connection for which it was inactive.
fn condition_scenario(cond: Condition) {
    let layout = conditions_layout();
    let p = cond as usize;
    assert_eq!(layout.parents[p].condition, cond);
    assert_eq!(layout.parents[0].condition, Condition::None, "parent 0 is the control");
    let h = handle(&layout, p);
    let mut w = world_with(&layout, &[false, false, true]);
    let mut setups = [
        Setup::new(Some(0), true, false),  // autonomous proxy on client 0
        Setup::new(Some(1), false, false), // owned by client 1, simulated proxy there
        Setup::new(Some(0), true, true),   // autonomous on client 0, physics
        Setup::new(None, false, false),    // nobody's
    ];
    let ids: Vec<ActorId> = setups.iter().map(|_| w.spawn(0)).collect();
    let guids: Vec<u64> = ids.iter().map(|&id| w.guid(0, id)).collect();
    let layouts: HashMap<u64, Arc<ClassLayout>> = guids.iter().map(|&g| (g, layout.clone())).collect();
    for (s, &id) in setups.iter().zip(&ids) {
        s.apply(&mut w, id);
    }
    let phases = [
        Phase::Values(1000),
        Phase::Values(2000),
        Phase::Flags(vec![
            (0, Setup::new(Some(0), true, true)),  // physics on
            (1, Setup::new(None, false, false)),   // ownership dropped
            (2, Setup::new(Some(1), false, true)), // ownership moves, autonomy lost
            (3, Setup::new(Some(1), true, false)), // ownership gained
        ]),
        Phase::Values(3000),
        Phase::Flags(vec![
            (0, Setup::new(Some(1), true, false)), // ownership moves, physics off
            (3, Setup::new(None, false, true)),    // ownership dropped, physics on
        ]),
        Phase::Values(4000),
    ];
    let parents = layout.parents.len();
    let mut server = vec![vec![0u32; parents]; ids.len()];
    let mut expected = vec![[0u32; CLIENTS]; ids.len()];
    let (mut seen_active, mut seen_inactive) = (false, false);
    for (n, phase) in phases.iter().enumerate() {
        match phase {
            Phase::Values(base) => {
                for (a, &id) in ids.iter().enumerate() {
                    for (q, slot) in server[a].iter_mut().enumerate() {
                        *slot = base + a as u32 * 100 + q as u32 + 1;
                        w.stores[0].set(id, q, &Value::U32(*slot)).expect("valid value");
                        w.stores[0].mark_dirty(id, q).expect("live actor");
                    }
                }
            }
            Phase::Flags(changes) => {
                for &(a, s) in changes {
                    setups[a] = s;
                    s.apply(&mut w, ids[a]);
                }
            }
        }
        let initial = n == 0;
        let sent = run_and_collect(&mut w, FRAMES_PER_PHASE, &layouts);
        for (a, s) in setups.iter().enumerate() {
            for (ci, exp) in expected[a].iter_mut().enumerate() {
                let role = s.role(ci);
                let active = ue_active(cond, role, initial, s.physics);
                seen_active |= active;
                seen_inactive |= !active;
                if active {
                    *exp = server[a][p];
                }
                let world = &w.clients[ci].world;
                let ctx = format!("phase {n}: {cond:?} on actor {a} ({s:?}), client {ci} as {role:?}");
                assert_eq!(world.value(guids[a], 0), Some(Value::U32(server[a][0])), "{ctx}: control property");
                assert_eq!(world.value(guids[a], p), Some(Value::U32(*exp)), "{ctx}");
                if !active {
                    assert!(!sent.contains(&(ci, guids[a], h)), "{ctx}: a record of an inactive property was sent");
                }
            }
        }
    }
    // Each condition is exercised on the side(s) it has.
    match cond {
        Condition::None | Condition::Custom | Condition::Dynamic => assert!(seen_active && !seen_inactive),
        Condition::Never => assert!(!seen_active && seen_inactive),
        _ => assert!(seen_active && seen_inactive, "{cond:?} was only seen on one side"),
    }
}

macro_rules! condition_tests {
    ($($name:ident => $cond:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                condition_scenario(Condition::$cond);
            }
        )*
        /// The list above names every condition exactly once.
        #[test]
        fn every_condition_has_a_test() {
            let named = [$(Condition::$cond),*];
            assert_eq!(named.len(), Condition::ALL.len());
            for c in Condition::ALL {
                assert_eq!(named.iter().filter(|&&n| n == c).count(), 1, "{c:?}");
            }
        }
    };
}

condition_tests! {
    condition_none => None,
    condition_initial_only => InitialOnly,
    condition_owner_only => OwnerOnly,
    condition_skip_owner => SkipOwner,
    condition_simulated_only => SimulatedOnly,
    condition_autonomous_only => AutonomousOnly,
    condition_simulated_or_physics => SimulatedOrPhysics,
    condition_initial_or_owner => InitialOrOwner,
    condition_custom => Custom,
    condition_replay_or_owner => ReplayOrOwner,
    condition_replay_only => ReplayOnly,
    condition_simulated_only_no_replay => SimulatedOnlyNoReplay,
    condition_simulated_or_physics_no_replay => SimulatedOrPhysicsNoReplay,
    condition_skip_replay => SkipReplay,
    condition_dynamic => Dynamic,
    condition_never => Never,
}

/// The test's role table and the kernel's flag map agree (a cross-check of the oracle itself).
#[test]
fn role_table_agrees_with_the_kernel_condition_map() {
    use shadowrep::connection::{condition_active, flags};
    let roles = [
        (Role::AutonomousOwner, flags::OWNER),
        (Role::SimulatedOwner, flags::OWNER | flags::SIMULATED),
        (Role::Simulated, flags::SIMULATED),
        (Role::Replay, flags::SIMULATED | flags::REPLAY),
    ];
    for c in Condition::ALL {
        for (role, f) in roles {
            for initial in [false, true] {
                for physics in [false, true] {
                    let f = f | if initial { flags::INITIAL } else { 0 } | if physics { flags::PHYSICS } else { 0 };
                    assert_eq!(
                        condition_active(c, f),
                        ue_active(c, role, initial, physics),
                        "{c:?} {role:?} initial {initial} physics {physics}"
                    );
                }
            }
        }
    }
}

/// InitialOnly: the value at the first send reaches everyone, later changes reach no one, and a
/// connection added later gets the value current at its own first send.
#[test]
fn initial_only_is_sent_once_per_connection() {
    let layout = build(
        ClassBuilder::new("Init")
            .property(PropertyDecl::new("Init", PropType::U32).condition(Condition::InitialOnly))
            .property(PropertyDecl::new("Plain", PropType::U32)),
    );
    let mut w = world_with(&layout, &[false, false, true]);
    let id = w.spawn(0);
    let guid = w.guid(0, id);
    let layouts = HashMap::from([(guid, layout.clone())]);
    let h = handle(&layout, 0);
    set(&mut w, 0, id, 0, Value::U32(11));
    set(&mut w, 0, id, 1, Value::U32(1));
    let sent = run_and_collect(&mut w, 3, &layouts);
    for (ci, c) in w.clients.iter().enumerate() {
        assert_eq!(u32s(&c.world, guid, 2), [11, 1], "client {ci}");
        assert!(sent.contains(&(ci, guid, h)));
    }
    set(&mut w, 0, id, 0, Value::U32(22));
    set(&mut w, 0, id, 1, Value::U32(2));
    let sent = run_and_collect(&mut w, 5, &layouts);
    for (ci, c) in w.clients.iter().enumerate() {
        assert_eq!(u32s(&c.world, guid, 2), [11, 2], "client {ci}: a change after the open was acknowledged");
        assert!(!sent.contains(&(ci, guid, h)), "client {ci}");
    }
    let late = w.add_client(false, LinkConfig::perfect(1));
    run_and_collect(&mut w, 3, &layouts);
    assert_eq!(u32s(&w.clients[late].world, guid, 2), [22, 2], "a late joiner's first send carries the current value");
    set(&mut w, 0, id, 0, Value::U32(33));
    let sent = run_and_collect(&mut w, 3, &layouts);
    assert!(sent.iter().all(|s| s.2 != h), "InitialOnly went out after every open was acknowledged");
    for (ci, c) in w.clients.iter().enumerate() {
        let want = if ci == late { 22 } else { 11 };
        assert_eq!(u32s(&c.world, guid, 2), [want, 2], "client {ci}");
    }
}

/// Custom and Dynamic: switched off, nothing is sent; switched back on, the current value is sent;
/// switching on what is already on sends nothing.
#[test]
fn custom_and_dynamic_overrides() {
    let layout = build(
        ClassBuilder::new("Toggled")
            .property(PropertyDecl::new("Custom", PropType::U32).condition(Condition::Custom))
            .property(PropertyDecl::new("Dynamic", PropType::U32).condition(Condition::Dynamic))
            .property(PropertyDecl::new("Plain", PropType::U32)),
    );
    let mut w = world_with(&layout, &[false, true]);
    let id = w.spawn(0);
    let guid = w.guid(0, id);
    let layouts = HashMap::from([(guid, layout.clone())]);
    let (hc, hd) = (handle(&layout, 0), handle(&layout, 1));
    let toggle = |w: &mut World, parent: usize, on: bool| {
        w.driver.set_custom_active(w.classes[0], &w.stores[0], id, parent, on).expect("set_custom_active");
    };
    let check = |w: &World, want: [u32; 3], what: &str| {
        for (ci, c) in w.clients.iter().enumerate() {
            assert_eq!(u32s(&c.world, guid, 3), want, "client {ci}: {what}");
        }
    };
    // Off before the first send.
    toggle(&mut w, 0, false);
    for (p, v) in [5, 6, 7].into_iter().enumerate() {
        set(&mut w, 0, id, p, Value::U32(v));
    }
    let sent = run_and_collect(&mut w, 3, &layouts);
    check(&w, [0, 6, 7], "Custom off from the start");
    assert!(sent.iter().all(|s| s.2 != hc), "a switched-off Custom property was sent in the open");
    set(&mut w, 0, id, 0, Value::U32(8));
    let sent = run_and_collect(&mut w, 3, &layouts);
    check(&w, [0, 6, 7], "a change while off");
    assert!(sent.iter().all(|s| s.2 != hc));
    toggle(&mut w, 0, true);
    let sent = run_and_collect(&mut w, 3, &layouts);
    check(&w, [8, 6, 7], "switched on: the current value");
    assert!(sent.contains(&(0, guid, hc)) && sent.contains(&(1, guid, hc)));
    set(&mut w, 0, id, 0, Value::U32(9));
    run_and_collect(&mut w, 3, &layouts);
    check(&w, [9, 6, 7], "a change while on");
    toggle(&mut w, 0, false);
    toggle(&mut w, 1, false);
    for (p, v) in [10, 11, 12].into_iter().enumerate() {
        set(&mut w, 0, id, p, Value::U32(v));
    }
    let sent = run_and_collect(&mut w, 3, &layouts);
    check(&w, [9, 6, 12], "both switched off");
    assert!(sent.iter().all(|s| s.2 != hc && s.2 != hd));
    toggle(&mut w, 0, true);
    toggle(&mut w, 1, true);
    run_and_collect(&mut w, 3, &layouts);
    check(&w, [10, 11, 12], "both switched back on");
    let before: Vec<u64> = w.clients.iter().map(|c| w.driver.bytes_sent(c.conn)).collect();
    toggle(&mut w, 0, true);
    run_and_collect(&mut w, 3, &layouts);
    let after: Vec<u64> = w.clients.iter().map(|c| w.driver.bytes_sent(c.conn)).collect();
    assert_eq!(before, after, "switching on an active property sends nothing");
}

/// Properties that become active on an ownership change are sent to the connection they became
/// active for (with their current value), and only to it.
#[test]
fn ownership_changes_send_newly_active_properties() {
    let conds = [
        Condition::OwnerOnly,
        Condition::SkipOwner,
        Condition::AutonomousOnly,
        Condition::InitialOrOwner,
        Condition::ReplayOrOwner,
    ];
    let mut b = ClassBuilder::new("Owned");
    for c in conds {
        b = b.property(PropertyDecl::new(format!("{c:?}"), PropType::U32).condition(c));
    }
    let layout = build(b);
    let mut w = world_with(&layout, &[false, false, true]);
    let id = w.spawn(0);
    let guid = w.guid(0, id);
    let layouts = HashMap::from([(guid, layout.clone())]);
    let set_all = |w: &mut World, base: u32| {
        for p in 0..conds.len() {
            set(w, 0, id, p, Value::U32(base + p as u32));
        }
    };
    let check = |w: &World, want: [[u32; 5]; 3], what: &str| {
        for (ci, c) in w.clients.iter().enumerate() {
            assert_eq!(u32s(&c.world, guid, 5), want[ci], "client {ci}: {what} (columns: {conds:?})");
        }
    };
    set_all(&mut w, 10);
    run_and_collect(&mut w, 3, &layouts);
    check(&w, [[0, 11, 0, 13, 0], [0, 11, 0, 13, 0], [0, 11, 0, 13, 14]], "nobody owns it");

    set_owner(&mut w, id, Some(1), true);
    let sent = run_and_collect(&mut w, 3, &layouts);
    check(&w, [[0, 11, 0, 13, 0], [10, 11, 12, 13, 14], [0, 11, 0, 13, 14]], "client 1 became the autonomous owner");
    assert!(sent.iter().all(|s| s.0 == 1), "only the new owner gets anything: {sent:?}");

    set_all(&mut w, 20);
    run_and_collect(&mut w, 3, &layouts);
    check(&w, [[0, 21, 0, 13, 0], [20, 11, 22, 23, 24], [0, 21, 0, 13, 24]], "changes while client 1 owns it");

    set_owner(&mut w, id, Some(0), false);
    run_and_collect(&mut w, 3, &layouts);
    check(
        &w,
        [[20, 21, 0, 23, 24], [20, 21, 22, 23, 24], [0, 21, 0, 13, 24]],
        "ownership moved to client 0 (simulated proxy)",
    );

    set_all(&mut w, 30);
    run_and_collect(&mut w, 3, &layouts);
    check(&w, [[30, 21, 0, 33, 34], [20, 31, 22, 23, 24], [0, 31, 0, 13, 34]], "changes while client 0 owns it");
}

/// Dynamic arrays that become active (an ownership change, a Custom override switched on) are
/// sent whole, with their current contents.
#[test]
fn newly_active_arrays_are_sent_whole() {
    let layout = build(
        ClassBuilder::new("ArrayConds")
            .property(PropertyDecl::new("Mine", PropType::array(PropType::U32)).condition(Condition::OwnerOnly))
            .property(PropertyDecl::new("Toggled", PropType::array(PropType::U64)).condition(Condition::Custom)),
    );
    let mut w = world_with(&layout, &[false, false]);
    let id = w.spawn(0);
    let guid = w.guid(0, id);
    let layouts = HashMap::from([(guid, layout.clone())]);
    let mine = |v: &[u32]| Value::Array(v.iter().map(|&x| Value::U32(x)).collect());
    let toggled = |v: &[u64]| Value::Array(v.iter().map(|&x| Value::U64(x)).collect());
    let check = |w: &World, want: [(Value, Value); 2], what: &str| {
        for (ci, (m, t)) in want.iter().enumerate() {
            let c = &w.clients[ci].world;
            assert_eq!(
                (c.value(guid, 0).as_ref(), c.value(guid, 1).as_ref()),
                (Some(m), Some(t)),
                "client {ci}: {what}"
            );
        }
    };
    w.driver.set_custom_active(w.classes[0], &w.stores[0], id, 1, false).expect("override");
    set(&mut w, 0, id, 0, mine(&[1, 2, 3]));
    set(&mut w, 0, id, 1, toggled(&[4, 5]));
    run_and_collect(&mut w, 3, &layouts);
    check(&w, [(mine(&[]), toggled(&[])), (mine(&[]), toggled(&[]))], "nobody owns it, override off");

    set_owner(&mut w, id, Some(0), true);
    run_and_collect(&mut w, 3, &layouts);
    check(&w, [(mine(&[1, 2, 3]), toggled(&[])), (mine(&[]), toggled(&[]))], "client 0 owns it");

    w.driver.set_custom_active(w.classes[0], &w.stores[0], id, 1, true).expect("override");
    run_and_collect(&mut w, 3, &layouts);
    check(&w, [(mine(&[1, 2, 3]), toggled(&[4, 5])), (mine(&[]), toggled(&[4, 5]))], "override on");

    set(&mut w, 0, id, 0, mine(&[7]));
    set_owner(&mut w, id, Some(1), true);
    let sent = run_and_collect(&mut w, 3, &layouts);
    check(&w, [(mine(&[1, 2, 3]), toggled(&[4, 5])), (mine(&[7]), toggled(&[4, 5]))], "changed and moved to client 1");
    assert!(!sent.contains(&(0, guid, handle(&layout, 0))), "the old owner got the new contents");
}

// ---------------------------------------------------------------------------------------------
// 2. Privacy: OwnerOnly data never reaches a non-owner's wire
// ---------------------------------------------------------------------------------------------

fn owner_only_stays_private(shared: bool, loss: f64) {
    let layout = build(
        ClassBuilder::new("Secretive")
            .property(PropertyDecl::new("Public", PropType::U32))
            .property(PropertyDecl::new("Secret", PropType::U32).condition(Condition::OwnerOnly))
            .property(PropertyDecl::new("Also", PropType::U64)),
    );
    let secret = handle(&layout, 1);
    let cfg = DriverConfig { shared_serialization: shared, ..DriverConfig::default() };
    let mut w = World::with_layouts(vec![layout.clone()], cfg, 3);
    for (i, replay) in [false, false, true].into_iter().enumerate() {
        let link = if loss > 0.0 { LinkConfig::lossy(loss, 40 + i as u64) } else { LinkConfig::perfect(1) };
        w.add_client(replay, link);
    }
    let ids: Vec<ActorId> = (0..3).map(|_| w.spawn(0)).collect();
    let guids: Vec<u64> = ids.iter().map(|&id| w.guid(0, id)).collect();
    let layouts: HashMap<u64, Arc<ClassLayout>> = guids.iter().map(|&g| (g, layout.clone())).collect();
    // Actors 0 and 1 are client 0's, actor 2 nobody's.
    set_owner(&mut w, ids[0], Some(0), true);
    set_owner(&mut w, ids[1], Some(0), false);
    let mut records = [0usize; CLIENTS];
    let mut frame = 0u32;
    let mut run = |w: &mut World, frames: u32, owner: usize, records: &mut [usize; CLIENTS]| {
        for _ in 0..frames {
            frame += 1;
            for (a, &id) in ids.iter().enumerate() {
                for p in 0..3 {
                    let v = if p == 2 {
                        Value::U64((u64::from(frame) << 32) | a as u64)
                    } else {
                        Value::U32(frame * 10 + a as u32)
                    };
                    w.stores[0].set(id, p, &v).expect("valid");
                }
            }
            for (ci, packets) in step_capture(w).iter().enumerate() {
                for p in packets {
                    for b in decode(p, &layouts).bunches {
                        let owned = b.guid != guids[2];
                        for r in b.records.iter().filter(|r| r.handle == secret) {
                            assert!(
                                owned && ci == owner,
                                "client {ci} got the OwnerOnly record of actor {}: {r:?}",
                                b.guid
                            );
                            records[ci] += 1;
                        }
                    }
                }
            }
        }
    };
    run(&mut w, 30, 0, &mut records);
    assert!(records[0] >= 30, "the owner receives its secret: {records:?}");
    // Ownership moves to client 1; resends of what client 0 lost must not follow to anyone else.
    set_owner(&mut w, ids[0], Some(1), true);
    set_owner(&mut w, ids[1], Some(1), true);
    records = [0; CLIENTS];
    run(&mut w, 30, 1, &mut records);
    assert!(records[1] >= 30, "the new owner receives the secret: {records:?}");
    assert_eq!(records[0] + records[2], 0);
    // Heal and check the owner converged on the secret.
    w.set_links(LinkConfig::perfect(1));
    for _ in 0..40 {
        step_capture(&mut w);
    }
    for a in 0..2 {
        let v = w.stores[0].get(ids[a], 1).expect("live");
        assert_eq!(w.clients[1].world.value(guids[a], 1), Some(v), "owner converged");
    }
}

#[test]
fn owner_only_is_never_on_a_non_owners_wire() {
    owner_only_stays_private(true, 0.0);
}

#[test]
fn owner_only_is_never_on_a_non_owners_wire_without_shared_serialization() {
    owner_only_stays_private(false, 0.0);
}

#[test]
fn owner_only_is_never_on_a_non_owners_wire_with_loss_and_resends() {
    owner_only_stays_private(true, 0.3);
    owner_only_stays_private(false, 0.3);
}

// ---------------------------------------------------------------------------------------------
// 3. Notifies at the client
// ---------------------------------------------------------------------------------------------

#[test]
fn notifies_fire_by_their_declared_mode() {
    let pair = PropType::Struct(StructType::new("Pair").field("A", PropType::U32).field("B", PropType::U32));
    let layout = build(
        ClassBuilder::new("Notified")
            .property(PropertyDecl::new("Quiet", PropType::U32))
            .property(PropertyDecl::new("Changed", PropType::U32).notify(Notify::OnChanged))
            .property(PropertyDecl::new("ChangedOld", PropType::U32).notify(Notify::OnChangedWithOld))
            .property(PropertyDecl::new("Always", PropType::U32).notify(Notify::Always))
            .property(PropertyDecl::new("AlwaysOld", PropType::U32).notify(Notify::AlwaysWithOld))
            .property(PropertyDecl::new("Pair", pair).notify(Notify::OnChangedWithOld)),
    );
    assert_eq!((1..=5).map(|p| handle(&layout, p)).collect::<Vec<_>>(), [2, 3, 4, 5, 6]);
    let mut c = ClientWorld::new(std::slice::from_ref(&layout), &[layout.checksum]).expect("same layout");
    let g = 2;
    let ev = |parent: usize, old: Option<u32>, new: u32| NotifyEvent {
        guid: g,
        parent,
        old: old.map(Value::U32),
        new: Value::U32(new),
    };
    let pair_value = |a: u32, b: u32| Value::Struct(vec![Value::U32(a), Value::U32(b)]);
    let take = |c: &mut ClientWorld| {
        let mut n = c.take_notifies();
        n.sort_by_key(|e| e.parent);
        n
    };

    // Open with every value 5: OnChanged fires (5 differs from the default 0), Always fires.
    let p = craft(1, |w| u32_bunch(w, g, Some(0), &[(1, 5), (2, 5), (3, 5), (4, 5), (5, 5)]));
    assert_eq!(c.receive(&p), Ok(Receipt::Applied(1)));
    assert_eq!(take(&mut c), [ev(1, None, 5), ev(2, Some(0), 5), ev(3, None, 5), ev(4, Some(0), 5)]);
    assert_eq!(u32s(&c, g, 5), [5; 5]);

    // The same values again: only the Always notifies.
    let p = craft(2, |w| u32_bunch(w, g, None, &[(1, 5), (2, 5), (3, 5), (4, 5), (5, 5)]));
    assert_eq!(c.receive(&p), Ok(Receipt::Applied(1)));
    assert_eq!(take(&mut c), [ev(3, None, 5), ev(4, Some(5), 5)]);

    // New values, and both leaves of the struct: every notify, with old values where declared,
    // and one notify for the struct parent.
    let p = craft(3, |w| u32_bunch(w, g, None, &[(1, 9), (2, 9), (3, 9), (4, 9), (5, 9), (6, 1), (7, 2)]));
    assert_eq!(c.receive(&p), Ok(Receipt::Applied(1)));
    let mut want = vec![ev(1, None, 9), ev(2, Some(5), 9), ev(3, None, 9), ev(4, Some(5), 9)];
    want.push(NotifyEvent { guid: g, parent: 5, old: Some(pair_value(0, 0)), new: pair_value(1, 2) });
    assert_eq!(take(&mut c), want);
    assert_eq!(c.value(g, 5), Some(pair_value(1, 2)));

    // A partial bunch: Changed with its current value (nothing), Always (fires), one struct leaf
    // unchanged (nothing); properties not received fire nothing.
    let p = craft(4, |w| u32_bunch(w, g, None, &[(2, 9), (4, 9), (7, 2)]));
    assert_eq!(c.receive(&p), Ok(Receipt::Applied(1)));
    assert_eq!(take(&mut c), [ev(3, None, 9)]);

    // Notify::None never fires, changed or not.
    let p = craft(5, |w| u32_bunch(w, g, None, &[(1, 1)]));
    assert_eq!(c.receive(&p), Ok(Receipt::Applied(1)));
    assert!(take(&mut c).is_empty());
    assert_eq!(u32s(&c, g, 5), [1, 9, 9, 9, 9]);

    // One struct leaf changed: the struct parent fires with the whole old and new value.
    let p = craft(6, |w| u32_bunch(w, g, None, &[(7, 3)]));
    assert_eq!(c.receive(&p), Ok(Receipt::Applied(1)));
    assert_eq!(take(&mut c), [NotifyEvent { guid: g, parent: 5, old: Some(pair_value(1, 2)), new: pair_value(1, 3) }]);

    // A second actor opened with default values: OnChanged stays quiet, Always fires.
    let p = craft(7, |w| u32_bunch(w, 4, Some(0), &[(1, 0), (2, 0), (3, 0), (4, 0), (5, 0)]));
    assert_eq!(c.receive(&p), Ok(Receipt::Applied(1)));
    let opened_at_default = [
        NotifyEvent { guid: 4, parent: 3, old: None, new: Value::U32(0) },
        NotifyEvent { guid: 4, parent: 4, old: Some(Value::U32(0)), new: Value::U32(0) },
    ];
    assert_eq!(take(&mut c), opened_at_default);

    // A duplicate (not newer) is dropped: no values, no notifies.
    let p = craft(7, |w| u32_bunch(w, g, None, &[(1, 7), (4, 7)]));
    assert_eq!(c.receive(&p), Ok(Receipt::Dropped));
    assert!(take(&mut c).is_empty());
    assert_eq!(u32s(&c, g, 5), [1, 9, 9, 9, 9]);
}

// ---------------------------------------------------------------------------------------------
// 4. Dynamic arrays through the server
// ---------------------------------------------------------------------------------------------

fn arrays_layout() -> Arc<ClassLayout> {
    build(
        ClassBuilder::new("Arrays")
            .property(PropertyDecl::new("Tag", PropType::U32))
            .property(PropertyDecl::new("Small", PropType::array(PropType::U32)))
            .property(PropertyDecl::new("Big", PropType::Array { element: Box::new(PropType::U64), max_len: 2048 })),
    )
}

/// Every client holds exactly the server's bytes for every array of actor `id`.
fn assert_arrays_match(w: &World, id: ActorId, guid: u64, what: &str) {
    let layout = w.stores[0].layout().clone();
    for (a, array) in layout.arrays.iter().enumerate() {
        let server = w.stores[0].array_bytes(id.index, a);
        for (ci, c) in w.clients.iter().enumerate() {
            let client = c.world.array_bytes(guid, a).expect("client has the actor");
            assert!(
                client == server,
                "{what}: client {ci}, array {}: {} bytes vs the server's {}",
                layout.leaves[array.leaf].path,
                client.len(),
                server.len()
            );
            assert_eq!(
                c.world.value(guid, array.parent),
                w.stores[0].get(id, array.parent).ok(),
                "{what}: client {ci}"
            );
        }
    }
}

#[test]
fn dynamic_arrays_grow_shrink_and_change() {
    let layout = arrays_layout();
    let mut w = world_with(&layout, &[false, true]);
    let id = w.spawn(0);
    let guid = w.guid(0, id);
    let small = |v: &[u32]| Value::Array(v.iter().map(|&x| Value::U32(x)).collect());
    let steps: [(&str, Vec<u32>); 7] = [
        ("grow from empty", vec![1, 2, 3]),
        ("grow", (1..=10).collect()),
        ("change one element", vec![1, 2, 3, 4, 99, 6, 7, 8, 9, 10]),
        ("change first and last", vec![7, 2, 3, 4, 99, 6, 7, 8, 9, 70]),
        ("shrink", vec![7, 2, 3, 4]),
        ("shrink to empty", vec![]),
        ("grow again", vec![0, 5]),
    ];
    for (what, v) in steps {
        set(&mut w, 0, id, 1, small(&v));
        w.step();
        w.step();
        assert_eq!(w.clients[0].world.array_bytes(guid, 0).map(|b| b.len()), Some(v.len() * 4), "{what}");
        assert_arrays_match(&w, id, guid, what);
        w.assert_converged();
    }
}

#[test]
fn large_dynamic_arrays_split_across_packets() {
    let layout = arrays_layout();
    let mut w = world_with(&layout, &[false, false]);
    let id = w.spawn(0);
    let guid = w.guid(0, id);
    let big = |n: usize, salt: u64| {
        Value::Array((0..n as u64).map(|i| Value::U64(i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ salt)).collect())
    };
    step_capture(&mut w);
    let cases: [(&str, usize, u64, usize); 6] = [
        ("300 elements", 300, 1, 3),
        ("300 elements, all changed", 300, 2, 3),
        ("shrink to 120", 120, 2, 1),
        ("grow to 700", 700, 3, 7),
        ("the cap: 2048 elements", 2048, 4, 20),
        ("shrink to empty", 0, 0, 1),
    ];
    for (what, n, salt, min_packets) in cases {
        set(&mut w, 0, id, 2, big(n, salt));
        set(&mut w, 0, id, 0, Value::U32(n as u32));
        let packets = step_capture(&mut w);
        for (ci, p) in packets.iter().enumerate() {
            assert!(p.len() >= min_packets, "{what}: client {ci} got {} packets", p.len());
            assert!(p.iter().all(|p| p.len() <= 1024), "{what}: a packet over the MTU");
        }
        assert_eq!(w.clients[0].world.array_bytes(guid, 1).map(|b| b.len()), Some(n * 8), "{what}");
        assert_arrays_match(&w, id, guid, what);
    }
    // Single elements of a large array.
    set(&mut w, 0, id, 2, big(300, 5));
    step_capture(&mut w);
    let mut v = match big(300, 5) {
        Value::Array(v) => v,
        _ => unreachable!(),
    };
    for i in [0, 150, 299] {
        v[i] = Value::U64(u64::MAX - i as u64);
    }
    set(&mut w, 0, id, 2, Value::Array(v));
    step_capture(&mut w);
    assert_arrays_match(&w, id, guid, "single elements changed");
    w.assert_converged();
}

#[test]
fn large_dynamic_arrays_converge_over_a_lossy_link() {
    let layout = arrays_layout();
    let mut w = World::with_layouts(vec![layout], DriverConfig::default(), 9);
    for i in 0..2 {
        w.add_client(false, LinkConfig::lossy(0.25, 90 + i));
    }
    let ids: Vec<ActorId> = (0..2).map(|_| w.spawn(0)).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(17);
    for frame in 0..40 {
        if frame % 4 == 0 {
            for &id in &ids {
                let n = rng.random_range(0..500);
                let v = Value::Array((0..n).map(|_| Value::U64(rng.random())).collect());
                set(&mut w, 0, id, 2, v);
            }
        }
        w.step();
    }
    w.set_links(LinkConfig::perfect(1));
    for _ in 0..45 {
        w.step();
    }
    w.assert_converged();
    for &id in &ids {
        let guid = w.guid(0, id);
        assert_arrays_match(&w, id, guid, "after healing");
    }
}

// ---------------------------------------------------------------------------------------------
// 5. Unmapped object references
// ---------------------------------------------------------------------------------------------

#[test]
fn unmapped_reference_resolves_when_its_target_opens() {
    let layout = build(
        ClassBuilder::new("Linked")
            .property(PropertyDecl::new("Target", PropType::Object).notify(Notify::OnChangedWithOld))
            .property(PropertyDecl::new("N", PropType::U32)),
    );
    let mut c = ClientWorld::new(std::slice::from_ref(&layout), &[layout.checksum]).expect("same layout");
    let (a, b, d) = (2u64, 4u64, 6u64);
    let obj = |g: u64| Value::Object(ObjectRef(g));
    let reference = |w: &mut BitWriter, guid: u64, open: Option<u32>, target: u64| {
        begin_bunch(w, guid, open, false);
        write_leaf_record(w, 1, LeafKind::Object, &target.to_le_bytes());
        end_bunch(w);
    };

    // A opens pointing at B, which the client does not have: null, and waiting.
    assert_eq!(c.receive(&craft(1, |w| reference(w, a, Some(0), b))), Ok(Receipt::Applied(1)));
    assert_eq!(c.value(a, 0), Some(obj(0)));
    assert_eq!(c.unmapped_count(), 1);
    assert!(c.take_notifies().is_empty(), "null to null is no change");
    // The same unresolved reference again: still one waiting entry.
    assert_eq!(c.receive(&craft(2, |w| reference(w, a, None, b))), Ok(Receipt::Applied(1)));
    assert_eq!((c.value(a, 0), c.unmapped_count()), (Some(obj(0)), 1));
    assert!(c.take_notifies().is_empty());

    // B opens: A's reference now reads B, and A's notify fired with the old null.
    assert_eq!(c.receive(&craft(3, |w| u32_bunch(w, b, Some(0), &[(2, 1)]))), Ok(Receipt::Applied(1)));
    assert_eq!(c.value(a, 0), Some(obj(b)));
    assert_eq!(c.unmapped_count(), 0);
    assert_eq!(c.take_notifies(), [NotifyEvent { guid: a, parent: 0, old: Some(obj(0)), new: obj(b) }]);

    // A now points at D (unknown), then back at null before D arrives: D's later open must not
    // resurrect the stale reference.
    assert_eq!(c.receive(&craft(4, |w| reference(w, a, None, d))), Ok(Receipt::Applied(1)));
    assert_eq!((c.value(a, 0), c.unmapped_count()), (Some(obj(0)), 1));
    assert_eq!(c.take_notifies(), [NotifyEvent { guid: a, parent: 0, old: Some(obj(b)), new: obj(0) }]);
    assert_eq!(c.receive(&craft(5, |w| reference(w, a, None, 0))), Ok(Receipt::Applied(1)));
    assert_eq!(c.unmapped_count(), 0, "a newer value replaces the waiting reference");
    assert!(c.take_notifies().is_empty());
    assert_eq!(c.receive(&craft(6, |w| u32_bunch(w, d, Some(0), &[]))), Ok(Receipt::Applied(1)));
    assert_eq!(c.value(a, 0), Some(obj(0)));
    assert!(c.take_notifies().is_empty());

    // B points at an unknown actor, then B closes: nothing waits for a destroyed actor.
    assert_eq!(c.receive(&craft(7, |w| reference(w, b, None, 8))), Ok(Receipt::Applied(1)));
    assert_eq!(c.unmapped_count(), 1);
    let close = craft(8, |w| {
        begin_bunch(w, b, None, true);
        end_bunch(w);
    });
    assert_eq!(c.receive(&close), Ok(Receipt::Applied(1)));
    assert!(!c.has(b));
    assert_eq!(c.unmapped_count(), 0);
    assert_eq!(c.receive(&craft(9, |w| u32_bunch(w, 8, Some(0), &[]))), Ok(Receipt::Applied(1)));
    assert_eq!(c.actor_count(), 3);
}

/// Through the server: the referring actor's bunch is split across packets by a large array, so
/// its reference arrives packets before the target actor (spawned later) opens.
#[test]
fn unmapped_reference_through_the_server() {
    let layout = build(
        ClassBuilder::new("Holder")
            .property(PropertyDecl::new("Target", PropType::Object).notify(Notify::OnChangedWithOld))
            .property(PropertyDecl::new("Big", PropType::Array { element: Box::new(PropType::U64), max_len: 2048 })),
    );
    let mut w = world_with(&layout, &[false]);
    let a = w.spawn(0);
    let ga = w.guid(0, a);
    for _ in 0..3 {
        w.step();
    }
    assert!(w.clients[0].world.has(ga));
    assert!(w.clients[0].world.take_notifies().is_empty());

    let b = w.spawn(0);
    let gb = w.guid(0, b);
    assert!(b.index > a.index, "the target is sent after the referrer");
    set(&mut w, 0, a, 0, Value::Object(ObjectRef(gb)));
    set(&mut w, 0, a, 1, Value::Array((0..300u64).map(Value::U64).collect()));
    let mut stores: Vec<&mut ClassStore> = w.stores.iter_mut().collect();
    w.driver.tick(&mut stores).expect("tick");
    let conn = w.clients[0].conn;
    let packets = w.driver.take_packets(conn).expect("connection");
    assert!(packets.len() >= 3, "the array splits the bunch: {} packets", packets.len());
    let c = &mut w.clients[0].world;
    assert!(matches!(c.receive(&packets[0]), Ok(Receipt::Applied(_))));
    assert!(!c.has(gb), "the target's open is not in the first packet");
    assert_eq!(c.value(ga, 0), Some(Value::Object(ObjectRef(0))), "unmapped reads null");
    assert_eq!(c.unmapped_count(), 1);
    assert!(c.take_notifies().is_empty());
    for p in &packets[1..] {
        assert!(matches!(c.receive(p), Ok(Receipt::Applied(_))));
    }
    assert!(c.has(gb));
    assert_eq!(c.value(ga, 0), Some(Value::Object(ObjectRef(gb))));
    assert_eq!(c.unmapped_count(), 0);
    assert_eq!(
        c.take_notifies(),
        [NotifyEvent {
            guid: ga,
            parent: 0,
            old: Some(Value::Object(ObjectRef(0))),
            new: Value::Object(ObjectRef(gb))
        }]
    );
    let fb = c.feedback();
    w.driver.receive_feedback(conn, &fb).expect("feedback");
    for _ in 0..3 {
        w.step();
    }
    w.assert_converged();
}

// ---------------------------------------------------------------------------------------------
// 6. Malformed input
// ---------------------------------------------------------------------------------------------

fn mixed_layouts() -> Vec<Arc<ClassLayout>> {
    let item = PropType::Struct(StructType::new("Item").field("Count", PropType::U16).field("Owner", PropType::Object));
    vec![
        build(
            ClassBuilder::new("Mixed")
                .property(PropertyDecl::new("Health", PropType::U32))
                .property(PropertyDecl::new("Speed", PropType::F32))
                .property(PropertyDecl::new("Location", PropType::Vector(VectorQuant::Q100)))
                .property(PropertyDecl::new("Rotation", PropType::Rotator))
                .property(PropertyDecl::new("Alive", PropType::Bool))
                .property(PropertyDecl::new("Mode", PropType::Enum { bits: 3 }))
                .property(PropertyDecl::new("Target", PropType::Object).notify(Notify::Always))
                .property(PropertyDecl::new("Label", PropType::Name))
                .property(PropertyDecl::new("Items", PropType::Array { element: Box::new(item), max_len: 8 })),
        ),
        build(ClassBuilder::new("Small").property(PropertyDecl::new("Byte", PropType::U8).notify(Notify::OnChanged))),
    ]
}

/// A run of the server: the packets to one client, in order, and every actor GUID used.
fn recorded_run() -> (Vec<Arc<ClassLayout>>, Vec<Vec<u8>>, Vec<u64>) {
    let layouts = mixed_layouts();
    let mut w = World::with_layouts(layouts.clone(), DriverConfig::default(), 11);
    w.add_client(false, LinkConfig::perfect(1));
    for s in [0, 0, 0, 1, 1] {
        w.spawn(s);
    }
    let mut guids = HashSet::new();
    let mut packets = Vec::new();
    for frame in 0..10 {
        w.mutate(0.6);
        if frame == 5 {
            w.despawn(1);
            w.spawn(0);
        }
        for &(s, id) in &w.actors.clone() {
            guids.insert(w.guid(s, id));
        }
        packets.extend(step_capture(&mut w).swap_remove(0));
    }
    w.assert_converged();
    let mut guids: Vec<u64> = guids.into_iter().collect();
    guids.sort_unstable();
    (layouts, packets, guids)
}

/// Everything observable about a client's state, bit-exact.
fn snapshot(c: &ClientWorld, guids: &[u64], layouts: &[Arc<ClassLayout>]) -> String {
    use std::fmt::Write;
    let mut s = format!("actors {} unmapped {} feedback {:?}\n", c.actor_count(), c.unmapped_count(), c.feedback());
    for &g in guids {
        let Some(class) = c.class_of(g) else {
            let _ = writeln!(s, "{g}: absent");
            continue;
        };
        let layout = &layouts[class as usize];
        for p in 0..layout.parents.len() {
            let _ = writeln!(s, "{g}.{p} = {:?}", c.value(g, p));
        }
        for (li, leaf) in layout.leaves.iter().enumerate() {
            match leaf.array {
                None => {
                    let mut b = vec![0u8; leaf.kind.byte_size()];
                    assert!(c.leaf_bytes(g, li, &mut b));
                    let _ = writeln!(s, "{g} leaf {li}: {b:?}");
                }
                Some(a) => {
                    let _ = writeln!(s, "{g} array {a}: {:?}", c.array_bytes(g, a));
                }
            }
        }
    }
    s
}

fn fresh_client(layouts: &[Arc<ClassLayout>]) -> ClientWorld {
    let checksums: Vec<u64> = layouts.iter().map(|l| l.checksum).collect();
    ClientWorld::new(layouts, &checksums).expect("same layouts")
}

/// `Err` must leave the client exactly as it was (and fire nothing).
fn assert_refused_without_effect(
    c: &mut ClientWorld,
    bytes: &[u8],
    guids: &[u64],
    layouts: &[Arc<ClassLayout>],
    what: &str,
) -> ReceiveError {
    let before = snapshot(c, guids, layouts);
    let e = match c.receive(bytes) {
        Err(e) => e,
        Ok(r) => panic!("{what}: accepted ({r:?})"),
    };
    assert_eq!(snapshot(c, guids, layouts), before, "{what}: refused ({e}) but the state changed");
    assert!(c.take_notifies().is_empty(), "{what}: refused but notified");
    e
}

#[test]
fn every_truncation_of_a_real_packet_is_refused_without_effect() {
    let (layouts, packets, guids) = recorded_run();
    assert!(packets.len() >= 10);
    let mut c = fresh_client(&layouts);
    for (i, p) in packets.iter().enumerate() {
        for cut in 0..p.len() {
            assert_refused_without_effect(
                &mut c,
                &p[..cut],
                &guids,
                &layouts,
                &format!("packet {i} cut to {cut} of {} bytes", p.len()),
            );
        }
        assert!(matches!(c.receive(p), Ok(Receipt::Applied(_))), "packet {i} whole");
        c.take_notifies();
    }
    assert!(c.actor_count() > 0);
}

#[test]
fn bit_flipped_packets_never_panic_and_refusals_have_no_effect() {
    let (layouts, packets, guids) = recorded_run();
    let mut rng = ChaCha8Rng::seed_from_u64(0xf11b);
    let (mut refused, mut applied, mut dropped) = (0, 0, 0);
    for sample in 0..300 {
        let i = rng.random_range(0..packets.len());
        let mut c = fresh_client(&layouts);
        for p in &packets[..i] {
            assert!(matches!(c.receive(p), Ok(Receipt::Applied(_))));
        }
        c.take_notifies();
        let mut bad = packets[i].clone();
        for _ in 0..rng.random_range(1..=3) {
            let bit = rng.random_range(0..bad.len() * 8);
            bad[bit / 8] ^= 1 << (bit % 8);
        }
        let before = snapshot(&c, &guids, &layouts);
        match c.receive(&bad) {
            Err(e) => {
                refused += 1;
                assert_eq!(
                    snapshot(&c, &guids, &layouts),
                    before,
                    "sample {sample}: refused ({e}) but the state changed"
                );
                assert!(c.take_notifies().is_empty());
                // The refusal did not consume the sequence number: the real packet applies.
                assert!(matches!(c.receive(&packets[i]), Ok(Receipt::Applied(_))), "sample {sample}");
            }
            Ok(Receipt::Dropped) => {
                dropped += 1;
                assert_eq!(snapshot(&c, &guids, &layouts), before, "sample {sample}: dropped but the state changed");
            }
            Ok(Receipt::Applied(_)) => {
                applied += 1;
                // Whatever state that left, later packets must not panic either.
                for p in &packets[i + 1..] {
                    let _ = c.receive(p);
                }
            }
        }
    }
    assert!(refused > 0 && applied > 0, "refused {refused}, applied {applied}, dropped {dropped}");
}

#[test]
fn crafted_malformed_packets_are_refused_without_effect() {
    let (layouts, packets, guids) = recorded_run();
    let mut c = fresh_client(&layouts);
    for p in &packets {
        assert!(matches!(c.receive(p), Ok(Receipt::Applied(_))));
    }
    c.take_notifies();
    let last = packets.iter().map(|p| BitReader::new(p).read_packed().expect("seq")).max().expect("packets");
    let seq = u32::try_from(last).expect("u32") + 1;
    let mixed = &layouts[0];
    let victim = *guids.iter().find(|&&g| c.class_of(g) == Some(0)).expect("a Mixed actor on the client");
    let small = *guids.iter().find(|&&g| c.class_of(g) == Some(1)).expect("a Small actor on the client");
    let health = handle(mixed, 0);
    let target = handle(mixed, 6);
    let items = handle(mixed, 8);
    assert_eq!(mixed.arrays[0].max_len, 8);
    // Every bad packet starts with a valid bunch, which must not be applied either.
    let valid = |w: &mut BitWriter| u32_bunch(w, victim, None, &[(health, 0xdead_beef)]);
    let object_bunch = |w: &mut BitWriter, g: u64| {
        begin_bunch(w, victim, None, false);
        write_leaf_record(w, target, LeafKind::Object, &g.to_le_bytes());
        end_bunch(w);
    };
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "unknown handle",
            craft(seq, |w| {
                valid(w);
                u32_bunch(w, victim, None, &[(mixed.leaves.len() as u16 + 1, 1)]);
            }),
        ),
        ("handles out of order", craft(seq, |w| u32_bunch(w, victim, None, &[(health, 1), (health, 2)]))),
        (
            "array count over its cap",
            craft(seq, |w| {
                valid(w);
                begin_bunch(w, victim, None, false);
                w.write_packed(u64::from(items));
                w.write_packed(9);
                w.write_packed(0);
                end_bunch(w);
            }),
        ),
        (
            "nested handle beyond the count",
            craft(seq, |w| {
                valid(w);
                begin_bunch(w, victim, None, false);
                w.write_packed(u64::from(items));
                w.write_packed(1);
                w.write_packed(3); // one element has nested handles 1 and 2
                w.write_bits(0, 16);
                w.write_packed(0);
                end_bunch(w);
            }),
        ),
        (
            "unknown static GUID",
            craft(seq, |w| {
                valid(w);
                object_bunch(w, 7);
            }),
        ),
        (
            "unknown static GUID in an array element",
            craft(seq, |w| {
                valid(w);
                begin_bunch(w, victim, None, false);
                w.write_packed(u64::from(items));
                w.write_packed(1);
                w.write_packed(1);
                w.write_bits(3, 16);
                w.write_packed(2);
                w.write_packed(9);
                w.write_packed(0);
                end_bunch(w);
            }),
        ),
        (
            "bunch for an unknown actor without an open",
            craft(seq, |w| {
                valid(w);
                u32_bunch(w, 998, None, &[(1, 1)]);
            }),
        ),
        (
            "unknown class id in an open",
            craft(seq, |w| {
                valid(w);
                u32_bunch(w, 1000, Some(layouts.len() as u32), &[]);
            }),
        ),
        (
            "an odd (static) GUID as an actor",
            craft(seq, |w| {
                valid(w);
                u32_bunch(w, 1001, Some(0), &[]);
            }),
        ),
        (
            "an actor reopened with another class",
            craft(seq, |w| {
                valid(w);
                u32_bunch(w, small, Some(0), &[]);
            }),
        ),
    ];
    for (what, bytes) in &cases {
        let e = assert_refused_without_effect(&mut c, bytes, &guids, &layouts, what);
        match *what {
            "unknown static GUID" => assert_eq!(e, ReceiveError::UnknownStatic(7)),
            "unknown static GUID in an array element" => assert_eq!(e, ReceiveError::UnknownStatic(9)),
            _ => assert!(matches!(e, ReceiveError::Wire(_)), "{what}: {e:?}"),
        }
    }
    // Positive control: the same static reference is fine once the client knows GUID 7, and it
    // applies with the sequence number none of the refusals consumed.
    c.register_static(7);
    let ok = craft(seq, |w| {
        valid(w);
        object_bunch(w, 7);
    });
    assert_eq!(c.receive(&ok), Ok(Receipt::Applied(2)));
    assert_eq!(c.value(victim, 0), Some(Value::U32(0xdead_beef)));
    assert_eq!(c.value(victim, 6), Some(Value::Object(ObjectRef(7))));
    assert_eq!(c.unmapped_count(), 0);
}

/// A bunch for an actor closed earlier in the same packet names an actor the client no longer
/// has, without an open: the packet must be refused (and change nothing), or at least leave the
/// actor closed. The client validates bunches against the actors it had before the packet plus
/// the packet's opens, but not its closes, so the update re-spawns the closed actor.
#[test]
fn a_bunch_after_its_actors_close_in_the_same_packet_does_not_resurrect_it() {
    let layout = build(ClassBuilder::new("P").property(PropertyDecl::new("N", PropType::U32)));
    let layouts = [layout.clone()];
    let mut c = ClientWorld::new(&layouts, &[layout.checksum]).expect("same layout");
    assert_eq!(c.receive(&craft(1, |w| u32_bunch(w, 2, Some(0), &[(1, 5)]))), Ok(Receipt::Applied(1)));
    let p = craft(2, |w| {
        begin_bunch(w, 2, None, true);
        end_bunch(w);
        u32_bunch(w, 2, None, &[(1, 6)]);
    });
    let before = snapshot(&c, &[2], &layouts);
    match c.receive(&p) {
        Err(e) => assert_eq!(snapshot(&c, &[2], &layouts), before, "refused ({e}) but the state changed"),
        Ok(r) => assert!(
            !c.has(2),
            "{r:?}: the closed actor is back without an open (actors {}, value {:?})",
            c.actor_count(),
            c.value(2, 0)
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// 7. Layout checksums
// ---------------------------------------------------------------------------------------------

#[test]
fn a_client_with_a_different_layout_is_refused() {
    let server = build(ClassBuilder::new("Thing").property(PropertyDecl::new("A", PropType::U32)));
    let mut w = World::with_layouts(vec![server.clone()], DriverConfig::default(), 1);
    let checksums = w.driver.checksums();
    assert_eq!(checksums, [server.checksum]);
    let other = build(ClassBuilder::new("Thing").property(PropertyDecl::new("A", PropType::U16)));
    assert_ne!(other.checksum, server.checksum);
    match ClientWorld::new(std::slice::from_ref(&other), &checksums) {
        Err(ClientError::ChecksumMismatch { class, server: s, client }) => {
            assert_eq!((class, s, client), (0, server.checksum, other.checksum));
        }
        Err(e) => panic!("wrong error: {e:?}"),
        Ok(_) => panic!("a mismatched layout was accepted"),
    }
    // Only the second class differs: its index is reported.
    let two = [server.clone(), other.clone()];
    assert!(matches!(
        ClientWorld::new(&two, &[server.checksum, server.checksum]),
        Err(ClientError::ChecksumMismatch { class: 1, .. })
    ));
    assert!(matches!(ClientWorld::new(&two, &checksums), Err(ClientError::ClassCount { server: 1, client: 2 })));
    // Conditions and notifies are not part of the wire contract: such a client interoperates.
    let relaxed = build(
        ClassBuilder::new("Thing")
            .property(PropertyDecl::new("A", PropType::U32).condition(Condition::OwnerOnly).notify(Notify::Always)),
    );
    assert!(ClientWorld::new(&[relaxed], &checksums).is_ok());
    // And the world's own clients use the server's layouts.
    w.add_client(false, LinkConfig::perfect(1));
    w.step();
}
