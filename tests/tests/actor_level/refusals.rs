//! Packets an honest server sends in order, under nothing but loss, are never refused: each
//! case here was a refusal ("a plain bunch for an actor the receiver does not have") found by
//! the lifecycle review's random worlds.

use super::lifecycle_review::World;
use super::*;
use shadowrep::net::SubObjectCondition;

/// Index of the weapon's ammo (its only property).
const AMMO: usize = 0;

#[test]
fn a_sub_objects_open_delivered_without_its_owners_leaves_no_plain_update_refused() {
    // The owner's open is lost; its sub-object's open, sent in a later packet before the server
    // knows of the loss, arrives alone: the client sets it aside (no owner to hang it on) and
    // asks for it again. Its request rides eight feedbacks, all lost; the next one acknowledges
    // the sub-object's packet, so the server believes its open delivered, and the sub-object's
    // next change goes as a plain bunch (behind the owner's open sent again). Seed 140 of the
    // review's sweep. UE's client drops an update of a channel it has not opened and reads the
    // rest of the packet: refused, the packet went again whole.
    let mut w = World::new(1);
    let conn = w.clients[0].0;
    let (_, owner) = w.spawn([500.0, 0.0, 0.0]);
    let tick = |w: &mut World| {
        w.driver.tick(&mut [&mut w.chars, &mut w.weapons]).unwrap();
        w.driver.take_packets(conn).unwrap()
    };
    // The owner's open: lost.
    assert!(!tick(&mut w).is_empty());
    w.driver.heard_from(conn).unwrap();
    // The weapon's open, in the next packet: delivered, set aside.
    let (weapon, wg) = w.weapon(owner, 7, SubObjectCondition::None);
    let packets = tick(&mut w);
    assert!(!packets.is_empty());
    for p in &packets {
        w.clients[0].1.receive(p).unwrap();
    }
    assert!(!w.client(0).has(owner) && !w.client(0).has(wg));
    // Eight feedbacks lost (the reopen request with them); the ninth goes.
    for _ in 0..8 {
        let _ = w.clients[0].1.feedback();
    }
    let fb = w.clients[0].1.feedback();
    w.driver.receive_feedback(conn, &fb).unwrap();
    // The weapon changes: the owner's open goes again, the weapon's change as a plain bunch.
    w.weapons.set(weapon, AMMO, &Value::U32(8)).unwrap();
    for p in tick(&mut w) {
        let got = w.clients[0].1.receive(&p);
        assert!(got.is_ok(), "an honest server's packet, in order, refused: {got:?}");
    }
    assert!(w.client(0).has(owner), "the rest of the packet applied");
    // The update read past asked for the weapon again: it comes whole.
    w.run(5);
    assert_eq!(w.client(0).value(wg, AMMO), Some(Value::U32(8)));
    assert!(w.refused.is_empty(), "{:?}", w.refused);
}
