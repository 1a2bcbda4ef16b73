//! The condition map, per condition, through the server

use crate::helpers::*;
use shadowrep::link::LinkConfig;
use shadowrep::schema::{ClassBuilder, ClassLayout, Condition, PropType, PropertyDecl};
use shadowrep::store::ActorId;
use shadowrep::value::Value;
use shadowrep_tests::World;
use std::collections::HashMap;
use std::sync::Arc;

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
        w.set_physics(0, id, self.physics);
    }
}

enum Phase {
    /// Every property of every actor gets a new value (base + actor * 100 + parent + 1).
    Values(u32),
    /// Ownership / physics changes: (actor, new setup).
    Flags(Vec<(usize, Setup)>),
    /// Every actor's own condition for the Dynamic parent (`set_dynamic_condition`).
    Dynamic(Condition),
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
    condition_scenario_as(cond, false);
}

/// [`condition_scenario`], with `dynamic`: property `cond` is the Dynamic parent, each actor
/// given `cond` as its own condition (`set_dynamic_condition`) before its first send — and at
/// the end every actor's condition set back to the class's (active everywhere: each connection
/// it was off for is sent the current value).
fn condition_scenario_as(cond: Condition, dynamic: bool) {
    let layout = conditions_layout();
    let p = if dynamic { Condition::Dynamic as usize } else { cond as usize };
    assert_eq!(layout.parents[p].condition, if dynamic { Condition::Dynamic } else { cond });
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
    let guids: Vec<NetGuid> = ids.iter().map(|&id| w.guid(0, id)).collect();
    let layouts: HashMap<NetGuid, Arc<ClassLayout>> = guids.iter().map(|&g| (g, layout.clone())).collect();
    for (s, &id) in setups.iter().zip(&ids) {
        s.apply(&mut w, id);
    }
    let mut phases = vec![
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
    let mut cond = cond;
    if dynamic {
        phases.insert(0, Phase::Dynamic(cond));
        phases.extend([Phase::Values(5000), Phase::Dynamic(Condition::Dynamic), Phase::Values(6000)]);
    }
    let first = cond;
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
            Phase::Dynamic(c) => {
                cond = *c;
                for &id in &ids {
                    let class = shadowrep::ids::ClassId(0);
                    w.driver.set_dynamic_condition(class, &w.stores[0], id, p, *c).expect("a Dynamic parent");
                    assert_eq!(w.driver.dynamic_condition(class, id, p), Some(*c));
                }
            }
        }
        let initial = n == usize::from(dynamic);
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
    if dynamic {
        // Set back to the class's rule at the end, where every connection holds the value.
        assert!(seen_active, "{first:?} (and the class's rule after it) was never active");
        return;
    }
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

macro_rules! dynamic_condition_tests {
    ($($name:ident => $cond:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                condition_scenario_as(Condition::$cond, true);
            }
        )*
    };
}

// Each condition but the initial-only ones (refused: `bad_dynamic_conditions_are_refused`) as
// one actor's own condition for a Dynamic parent.
dynamic_condition_tests! {
    dynamic_as_none => None,
    dynamic_as_owner_only => OwnerOnly,
    dynamic_as_skip_owner => SkipOwner,
    dynamic_as_simulated_only => SimulatedOnly,
    dynamic_as_autonomous_only => AutonomousOnly,
    dynamic_as_simulated_or_physics => SimulatedOrPhysics,
    dynamic_as_custom => Custom,
    dynamic_as_replay_or_owner => ReplayOrOwner,
    dynamic_as_replay_only => ReplayOnly,
    dynamic_as_simulated_only_no_replay => SimulatedOnlyNoReplay,
    dynamic_as_simulated_or_physics_no_replay => SimulatedOrPhysicsNoReplay,
    dynamic_as_skip_replay => SkipReplay,
    dynamic_as_dynamic => Dynamic,
    dynamic_as_never => Never,
}

#[test]
fn bad_dynamic_conditions_are_refused() {
    use shadowrep::net::DriverError;
    let layout = conditions_layout();
    let mut w = world_with(&layout, &[false]);
    let id = w.spawn(0);
    let class = shadowrep::ids::ClassId(0);
    assert_eq!(w.driver.dynamic_condition(class, id, 0), None, "no GUID yet: the driver has not seen it");
    w.guid(0, id);
    let d = Condition::Dynamic as usize;
    for bad in [Condition::InitialOnly, Condition::InitialOrOwner] {
        let err = w.driver.set_dynamic_condition(class, &w.stores[0], id, d, bad);
        assert_eq!(err, Err(DriverError::BadDynamicCondition(bad)));
    }
    let owner_only = Condition::OwnerOnly as usize;
    let err = w.driver.set_dynamic_condition(class, &w.stores[0], id, owner_only, Condition::SkipOwner);
    assert_eq!(err, Err(DriverError::NotDynamic(owner_only)));
    let err = w.driver.set_dynamic_condition(class, &w.stores[0], id, 99, Condition::SkipOwner);
    assert_eq!(err, Err(DriverError::NoSuchParent(99)));
    // Refusals change nothing: the class's rule still holds.
    assert_eq!(w.driver.dynamic_condition(class, id, d), Some(Condition::Dynamic));
    assert_eq!(w.driver.dynamic_condition(class, id, owner_only), Some(Condition::OwnerOnly));
    assert_eq!(w.driver.dynamic_condition(class, id, 99), None);
}

/// The test's role table and the kernel's flag map agree (a cross-check of the oracle itself).
#[test]
fn role_table_agrees_with_the_kernel_condition_map() {
    use shadowrep::net::condition::{condition_active, flags};
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
        w.set_custom(0, id, parent, on);
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
    w.set_custom(0, id, 1, false);
    set(&mut w, 0, id, 0, mine(&[1, 2, 3]));
    set(&mut w, 0, id, 1, toggled(&[4, 5]));
    run_and_collect(&mut w, 3, &layouts);
    check(&w, [(mine(&[]), toggled(&[])), (mine(&[]), toggled(&[]))], "nobody owns it, override off");

    set_owner(&mut w, id, Some(0), true);
    run_and_collect(&mut w, 3, &layouts);
    check(&w, [(mine(&[1, 2, 3]), toggled(&[])), (mine(&[]), toggled(&[]))], "client 0 owns it");

    w.set_custom(0, id, 1, true);
    run_and_collect(&mut w, 3, &layouts);
    check(&w, [(mine(&[1, 2, 3]), toggled(&[4, 5])), (mine(&[]), toggled(&[4, 5]))], "override on");

    set(&mut w, 0, id, 0, mine(&[7]));
    set_owner(&mut w, id, Some(1), true);
    let sent = run_and_collect(&mut w, 3, &layouts);
    check(&w, [(mine(&[1, 2, 3]), toggled(&[4, 5])), (mine(&[7]), toggled(&[4, 5]))], "changed and moved to client 1");
    assert!(!sent.contains(&(0, guid, handle(&layout, 0))), "the old owner got the new contents");
}
