//! Hand-made hostile packets: an open contradicting its GUID's parity, sub-object chains, export
//! conflicts and close paths naming someone else's actor, and references to unknown objects capped
//! at `MAX_UNMAPPED`.

use super::*;
use shadowrep::client::ReceiveError;
use shadowrep::wire::open::{OpenHeader, OpenKind, SpawnInfo};
use shadowrep::wire::packet::{begin_packet, end_packet, write_bunch};
use shadowrep::wire::{BitWriter, WireError};

/// One hand-made packet with one open of `guid`.
fn open_packet(guid: NetGuid, kind: OpenKind) -> Vec<u8> {
    let mut w = BitWriter::new();
    begin_packet(&mut w, shadowrep::ids::Seq(1));
    write_bunch(&mut w, guid, Some(&OpenHeader { class: 0, kind, autonomous: false }), &BitWriter::new());
    end_packet(&mut w);
    w.into_bytes()
}

#[test]
fn an_open_that_contradicts_its_guids_parity_is_refused() {
    let l = Level::new(every_frame(), 0);
    let mut client = ClientWorld::new(std::slice::from_ref(&l.layout), &l.driver.checksums()).unwrap();
    client.load_static_actor(DOOR, 0).unwrap();
    let refused = |c: &mut ClientWorld, p: &[u8], why: &'static str| {
        assert_eq!(c.receive(p), Err(ReceiveError::Wire(WireError::Invalid(why))));
    };
    refused(
        &mut client,
        &open_packet(NetGuid(5), OpenKind::Spawn(SpawnInfo::default())),
        "a static GUID opened with spawn info",
    );
    refused(&mut client, &open_packet(NetGuid(4), OpenKind::Static(DOOR.into())), "a dynamic GUID opened by path");
    assert_eq!(client.actor_count(), 0);
    assert!(client.receive(&open_packet(NetGuid(5), OpenKind::Static(DOOR.into()))).is_ok());
    assert!(client.has(NetGuid(5)));
}

fn open(w: &mut BitWriter, guid: u64, kind: OpenKind) {
    write_bunch(w, NetGuid(guid), Some(&OpenHeader { class: 0, kind, autonomous: false }), &BitWriter::new());
}

#[test]
fn hostile_sub_object_chains_export_conflicts_and_foreign_close_paths_do_no_harm() {
    use shadowrep::wire::open::{write_export_body, CloseReason, EXPORT_GUID};
    use shadowrep::wire::packet::write_close_for;
    let l = Level::new(every_frame(), 0);
    let mut c = ClientWorld::new(std::slice::from_ref(&l.layout), &l.driver.checksums()).unwrap();
    // A chain: 2 is an actor, 4 its sub-object, 6 claims 4 as its owner, and so on for 2 000
    // links — only the first level is created, and destroying the root is no deep recursion.
    let spawn = || OpenKind::Spawn(SpawnInfo::default());
    c.receive(&crafted(1, |w| open(w, 2, spawn()))).unwrap();
    for (i, g) in (4..4004u64).step_by(2).enumerate() {
        c.receive(&crafted(2 + i as u32, |w| open(w, g, OpenKind::SubObject { owner: NetGuid(g - 2) }))).unwrap();
    }
    assert!(c.has(NetGuid(4)) && !c.has(NetGuid(6)), "no sub-object of a sub-object");
    assert_eq!(c.sub_objects(NetGuid(2)), &[NetGuid(4)]);
    // A sub-object opened under a static GUID or the export GUID is stepped over.
    c.receive(&crafted(2002, |w| open(w, 5000, OpenKind::SubObject { owner: NetGuid(3) }))).unwrap();
    c.receive(&crafted(2003, |w| open(w, 5002, OpenKind::SubObject { owner: EXPORT_GUID }))).unwrap();
    assert!(!c.has(NetGuid(5000)) && !c.has(NetGuid(5002)));
    c.receive(&crafted(2004, |w| write_close_for(w, NetGuid(2), CloseReason::Destroyed, None))).unwrap();
    assert!(!c.has(NetGuid(2)) && !c.has(NetGuid(4)), "the sub-object went with its owner");

    // One level copy is never bound to two GUIDs: an export and an open of the same path in one
    // packet bind it once — the open, the newer (a server gives a path one GUID, so one of the
    // two is forged; since session 44 the newest open of a path binds it, which heals a forged
    // binding once the server's open comes again).
    let other = "/Game/Map.Lamp";
    c.load_static_actor(DOOR, 0).unwrap();
    let lamp = c.load_static_actor(other, 0).unwrap();
    let export = |w: &mut BitWriter| {
        let mut body = BitWriter::new();
        write_export_body(&mut body, NetGuid(7), DOOR);
        write_bunch(w, EXPORT_GUID, None, &body);
    };
    c.receive(&crafted(2005, |w| {
        export(w);
        let door = OpenHeader { class: 0, kind: OpenKind::Static(DOOR.into()), autonomous: false };
        shadowrep::wire::packet::write_bunch_after(w, EXPORT_GUID, NetGuid(5), Some(&door), &BitWriter::new());
    }))
    .unwrap();
    assert!(c.has(NetGuid(5)) && !c.has(NetGuid(7)), "bound once, by the open after the export");
    // A close naming someone else's path takes nothing; one naming an unbound path takes it.
    c.receive(&crafted(2006, |w| write_close_for(w, NetGuid(9), CloseReason::Destroyed, Some(DOOR)))).unwrap();
    assert!(c.has(NetGuid(5)), "the door is bound to 5, not 9");
    let events = c.take_events();
    c.receive(&crafted(2007, |w| write_close_for(w, NetGuid(11), CloseReason::Destroyed, Some(other)))).unwrap();
    assert!(c.take_events().contains(&ClientEvent::Destroyed { guid: NetGuid(11) }), "{events:?}");
    assert!(c.load_static_actor(other, 0).is_ok(), "the lamp's path is free again");
    let _ = lamp;
    // Destroying the bound door frees its path too.
    c.receive(&crafted(2008, |w| write_close_for(w, NetGuid(5), CloseReason::Destroyed, Some(DOOR)))).unwrap();
    assert!(!c.has(NetGuid(5)));
    assert!(c.load_static_actor(DOOR, 0).is_ok());
}

#[test]
fn references_waiting_for_unknown_objects_stop_at_max_unmapped_and_are_counted() {
    use shadowrep::client::MAX_UNMAPPED;
    use shadowrep::schema::LeafKind;
    use shadowrep::wire::bunch::{end_array, write_array_head};
    let layout = Arc::new(
        ClassBuilder::new("Keyring")
            .property(PropertyDecl::new("Keys", PropType::Array { element: Box::new(PropType::Object), max_len: 2048 }))
            .build()
            .unwrap(),
    );
    let mut c = ClientWorld::new(std::slice::from_ref(&layout), &[layout.checksum]).unwrap();
    let mut seq = 1;
    let mut next_static = 3u64;
    // Actors of 2048 references each, every one to a static GUID nobody registered, in bunches
    // of 1000 elements (a packet holds them under the largest MTU).
    let actors = MAX_UNMAPPED / 2048 + 2;
    for a in 0..actors as u64 {
        let guid = NetGuid(2 + 2 * a);
        for part in 0..3usize {
            let elements = part * 1000..((part + 1) * 1000).min(2048);
            let mut body = BitWriter::new();
            write_array_head(&mut body, shadowrep::wire::bunch::handle_bits(&layout), 1, 2048);
            for e in elements {
                body.write_packed(e as u64 + 1);
                shadowrep::wire::write_leaf(&mut body, LeafKind::Object, &next_static.to_le_bytes());
                next_static += 2;
            }
            end_array(&mut body);
            let open = (part == 0).then(|| OpenHeader::spawn(0));
            let packet = crafted(seq, |w| write_bunch(w, guid, open.as_ref(), &body));
            seq += 1;
            assert!(packet.len() <= shadowrep::wire::packet::MAX_MTU);
            c.receive(&packet).unwrap();
        }
    }
    assert_eq!(c.unmapped_count(), MAX_UNMAPPED, "remembered up to the cap");
    let dropped = (actors * 2048 - MAX_UNMAPPED) as u64;
    assert_eq!(c.stats().unmapped_dropped, dropped, "the rest counted");
    // Every reference reads as null until its object is known.
    let last = NetGuid(2 + 2 * (actors as u64 - 1));
    assert!(
        matches!(c.value(last, 0), Some(Value::Array(v)) if v.iter().all(|x| *x == Value::Object(shadowrep::value::ObjectRef(0))))
    );
}
