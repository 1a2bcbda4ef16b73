//! Bad input refused: fast array registration with an unknown kind or owner, mismatched kind
//! checksums or counts, and hostile fast array bunches (unknown kinds, missing owners, junk
//! bodies, arrays owning arrays, GUIDs opened as an actor and as a fast array) doing no harm.

use super::*;
use shadowrep::client::ReceiveError;
use shadowrep::net::DriverError;
use shadowrep::wire::open::{OpenHeader, OpenKind};
use shadowrep::wire::packet::{write_bunch, write_bunch_after};
use shadowrep::wire::{BitWriter, WireError};

#[test]
fn fast_array_registration_and_checksums_refuse_bad_input() {
    let (mut l, kind) = level(0);
    assert_eq!(
        l.driver.add_fast_array(FastArrayKind(9), NetGuid(2), SubObjectCondition::None),
        Err(DriverError::UnknownFastArrayKind(FastArrayKind(9)))
    );
    assert_eq!(
        l.driver.add_fast_array(kind, NetGuid(9_999_998), SubObjectCondition::None),
        Err(DriverError::UnknownOwner(NetGuid(9_999_998)))
    );
    let other = Arc::new(item_layout("Other", PropType::U32).unwrap());
    let client = ClientWorld::new(std::slice::from_ref(&l.layout), &l.driver.checksums()).unwrap();
    assert!(matches!(
        client.with_fast_array_kinds(std::slice::from_ref(&other), &l.driver.fast_array_checksums()),
        Err(shadowrep::client::ClientError::FastArrayChecksumMismatch { kind: 0, .. })
    ));
    let client = ClientWorld::new(std::slice::from_ref(&l.layout), &l.driver.checksums()).unwrap();
    assert!(matches!(
        client.with_fast_array_kinds(&[], &l.driver.fast_array_checksums()),
        Err(shadowrep::client::ClientError::FastArrayKindCount { server: 1, client: 0 })
    ));
    // Two kinds given in another order than the server's: named as such, not as a mismatch.
    let mut l = l;
    let second = l.driver.register_fast_array_kind(other.clone()).unwrap();
    assert_eq!(second, FastArrayKind(1));
    let client = ClientWorld::new(std::slice::from_ref(&l.layout), &l.driver.checksums()).unwrap();
    let e = client.with_fast_array_kinds(&[other, slots()], &l.driver.fast_array_checksums()).err().expect("refused");
    assert_eq!(e, shadowrep::client::ClientError::FastArrayKindOrder { kind: 0, server_kind: 1 });
    assert!(e.to_string().contains("NetDriver::fast_array_kinds"), "{e}");
    let client = ClientWorld::new(std::slice::from_ref(&l.layout), &l.driver.checksums()).unwrap();
    assert!(client.with_fast_array_kinds(&l.driver.fast_array_kinds(), &l.driver.fast_array_checksums()).is_ok());
}

#[test]
fn hostile_fast_array_bunches_do_no_harm() {
    let (l, _) = level(0);
    let mut c = ClientWorld::new(std::slice::from_ref(&l.layout), &l.driver.checksums())
        .unwrap()
        .with_fast_array_kinds(&[slots()], &l.driver.fast_array_checksums())
        .unwrap();
    let fast = |class: u32, owner: u64| {
        Some(OpenHeader { class, kind: OpenKind::FastArray { owner: NetGuid(owner) }, autonomous: false })
    };
    let empty = BitWriter::new();
    // An unknown kind, a static GUID: the packet is refused.
    let p = crafted(1, |w| write_bunch(w, NetGuid(10), fast(5, 2).as_ref(), &empty));
    assert_eq!(c.receive(&p), Err(ReceiveError::Wire(WireError::Invalid("fast array kind"))));
    let p = crafted(1, |w| write_bunch(w, NetGuid(11), fast(0, 2).as_ref(), &empty));
    assert!(c.receive(&p).is_err());
    // No such owner: stepped over and asked for again.
    let p = crafted(1, |w| write_bunch(w, NetGuid(10), fast(0, 2).as_ref(), &empty));
    assert!(matches!(c.receive(&p), Ok(shadowrep::client::Receipt::Applied { skipped: 1, .. })));
    assert!(c.fast_array(NetGuid(10)).is_none());
    // An owner, then its fast array; a body that is not a delta is refused whole.
    let spawn = Some(OpenHeader::spawn(0));
    let p = crafted(2, |w| {
        write_bunch(w, NetGuid(2), spawn.as_ref(), &empty);
        write_bunch_after(w, NetGuid(2), NetGuid(10), fast(0, 2).as_ref(), &empty);
    });
    c.receive(&p).unwrap();
    assert_eq!(c.fast_array(NetGuid(10)).map(|r| r.len()), Some(0));
    let mut junk = BitWriter::new();
    junk.write_bits(0x5a5a, 16);
    let p = crafted(3, |w| write_bunch(w, NetGuid(10), None, &junk));
    assert!(c.receive(&p).is_err());
    // A fast array cannot own one.
    let p = crafted(3, |w| write_bunch(w, NetGuid(12), fast(0, 10).as_ref(), &empty));
    assert!(matches!(c.receive(&p), Ok(shadowrep::client::Receipt::Applied { skipped: 1, .. })));
    assert!(c.fast_array(NetGuid(12)).is_none());
    assert_eq!(c.fast_array(NetGuid(10)).map(|r| r.len()), Some(0), "untouched");
    // An actor's open under the fast array's GUID: one of the two opens was forged (a fast array
    // open at the server's next actor's GUID, say). Refused, the server's open would be refused
    // with every packet resending it (found by `fuzz/`'s `client_heal`); stepped over as a class
    // conflict: the fast array goes and the GUID is asked for again.
    let (conflicts, asked) = (c.stats().open_conflicts, c.stats().reopens_requested);
    let p = crafted(4, |w| write_bunch(w, NetGuid(10), spawn.as_ref(), &empty));
    assert!(matches!(c.receive(&p), Ok(shadowrep::client::Receipt::Applied { skipped: 1, .. })));
    assert!(c.fast_array(NetGuid(10)).is_none() && !c.has(NetGuid(10)), "neither copy");
    assert!(c.fast_arrays_of(NetGuid(2)).is_empty(), "gone from its owner's list");
    // Asked for again: the request made when its open was stepped over for want of its owner
    // still rides (a firm one: no bunch ends it), and stands for the conflict too.
    assert_eq!((c.stats().open_conflicts, c.stats().reopens_requested), (conflicts + 1, asked));
    let fb = shadowrep::wire::feedback::read_feedback(&c.feedback()).unwrap();
    assert!(fb.reopen.contains(&NetGuid(10)), "{:?}", fb.reopen);
    // Its owner takes a fast array at the GUID again.
    let p = crafted(5, |w| write_bunch(w, NetGuid(10), fast(0, 2).as_ref(), &empty));
    assert!(matches!(c.receive(&p), Ok(shadowrep::client::Receipt::Applied { skipped: 0, .. })));
    assert_eq!(c.fast_array(NetGuid(10)).map(|r| r.len()), Some(0));
    // A fast array opened under the GUID of an actor the client has: one of the two opens was
    // forged. Refused, the server's own open would be refused with every packet resending it
    // (found by `fuzz/`'s `client_receive`); it is stepped over as a class conflict is: the
    // copy goes and the actor is asked for again.
    let (conflicts, asked) = (c.stats().open_conflicts, c.stats().reopens_requested);
    let p = crafted(6, |w| write_bunch(w, NetGuid(2), fast(0, 2).as_ref(), &empty));
    assert!(matches!(c.receive(&p), Ok(shadowrep::client::Receipt::Applied { skipped: 1, .. })));
    assert!(!c.has(NetGuid(2)) && c.fast_array(NetGuid(10)).is_none(), "the copy and its fast array went");
    assert_eq!((c.stats().open_conflicts, c.stats().reopens_requested), (conflicts + 1, asked + 1));
    // A forged close of a fast array, then an actor's open under its GUID (or the other way
    // round): the client remembers what the GUID was when it closed, so the open is stepped over
    // as a conflict — a copy of the other kind would read the server's plain bunches wrongly.
    use shadowrep::wire::packet::write_close;
    let p = crafted(7, |w| {
        write_bunch(w, NetGuid(2), spawn.as_ref(), &empty);
        write_bunch_after(w, NetGuid(2), NetGuid(4), spawn.as_ref(), &empty);
        write_bunch_after(w, NetGuid(4), NetGuid(10), fast(0, 2).as_ref(), &empty);
    });
    c.receive(&p).unwrap();
    assert!(c.has(NetGuid(2)) && c.has(NetGuid(4)) && c.fast_array(NetGuid(10)).is_some());
    for (seq, closed, open) in [(8, 10, spawn.clone()), (10, 2, fast(0, 4))] {
        let conflicts = c.stats().open_conflicts;
        c.receive(&crafted(seq, |w| write_close(w, NetGuid(closed)))).unwrap();
        let p = crafted(seq + 1, |w| write_bunch(w, NetGuid(closed), open.as_ref(), &empty));
        assert!(matches!(c.receive(&p), Ok(shadowrep::client::Receipt::Applied { skipped: 1, .. })), "{closed}");
        assert!(!c.has(NetGuid(closed)) && c.fast_array(NetGuid(closed)).is_none(), "{closed}: stepped over");
        assert_eq!(c.stats().open_conflicts, conflicts + 1, "{closed}");
    }
}
