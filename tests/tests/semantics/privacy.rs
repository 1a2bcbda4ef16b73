//! Privacy: OwnerOnly data never reaches a non-owner's wire

use crate::helpers::*;
use shadowrep::link::LinkConfig;
use shadowrep::net::DriverConfig;
use shadowrep::schema::{ClassBuilder, ClassLayout, Condition, PropType, PropertyDecl};
use shadowrep::store::ActorId;
use shadowrep::value::Value;
use shadowrep_tests::World;
use std::collections::HashMap;
use std::sync::Arc;

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
    let guids: Vec<NetGuid> = ids.iter().map(|&id| w.guid(0, id)).collect();
    let layouts: HashMap<NetGuid, Arc<ClassLayout>> = guids.iter().map(|&g| (g, layout.clone())).collect();
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
