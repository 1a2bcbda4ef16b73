//! A seeded fuzz of the two doors the network can knock on: `ClientWorld::receive` and
//! `NetDriver::receive_feedback`.
//!
//! Mutants are made from captured, valid traffic: bit flips, truncation, splices of two packets,
//! huge packed integers over count and length fields, repeated slices, overwritten bytes. For
//! every mutant: no panic; no more than 1 MiB allocated on top of what was live (the global
//! allocator is capped around each call); a refused or dropped packet leaves every observable
//! client value unchanged; and afterwards the real packets still apply exactly.
//!
//! `SHADOWREP_FUZZ_MUTANTS=N` sets the number of packet mutants (default 100 000; the README
//! lists a long run). This binary holds one test, so the allocation cap sees nothing else.

use cap::Cap;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use shadowrep::client::{ClientWorld, Receipt, ReceiveError, SeqVerdict};
use shadowrep::ids::NetGuid;
use shadowrep::schema::ClassLayout;
use shadowrep::store::ClassStore;
use shadowrep::wire::bunch::PLAIN_FOR_MISSING;
use shadowrep::wire::feedback::{read_feedback, MAX_REOPENS};
use shadowrep::wire::WireError;
use shadowrep_tests::{mixed_layouts, mixed_world};
use std::alloc;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

#[global_allocator]
static ALLOCATOR: Cap<alloc::System> = Cap::new(alloc::System, usize::MAX);

/// Extra bytes one call may allocate.
const ALLOCATION_BUDGET: usize = 1 << 20;

fn capped<T>(f: impl FnOnce() -> T) -> T {
    shadowrep_tests::capped(&ALLOCATOR, ALLOCATION_BUDGET, f)
}

/// One server run: the packets and feedbacks of client 0, frame by frame.
struct Recording {
    layouts: Vec<Arc<ClassLayout>>,
    packets: Vec<Vec<u8>>,
    feedbacks: Vec<Vec<u8>>,
    guids: Vec<NetGuid>,
}

fn record() -> Recording {
    let mut w = mixed_world(11);
    let (mut packets, mut feedbacks) = (Vec::new(), Vec::new());
    let mut guids = std::collections::BTreeSet::new();
    for frame in 0..16 {
        w.mutate(0.7);
        if frame % 5 == 4 {
            w.despawn(1);
            w.spawn(frame % 2);
        }
        w.call_some(frame);
        for &(s, id) in &w.actors.clone() {
            guids.insert(w.guid(s, id));
        }
        let mut stores: Vec<&mut ClassStore> = w.stores.iter_mut().collect();
        w.driver.tick(&mut stores).expect("tick");
        let c = &mut w.clients[0];
        for p in w.driver.take_packets(c.conn).expect("connection") {
            c.world.receive(&p).expect("a server packet applies");
            packets.push(p);
        }
        let fb = c.world.feedback();
        w.driver.receive_feedback(c.conn, &fb).expect("feedback");
        feedbacks.push(fb);
    }
    w.assert_converged();
    Recording { layouts: mixed_layouts(), packets, feedbacks, guids: guids.into_iter().collect() }
}

/// Whether `packet` opens `guid` with another class than client `c` has it with (decoded as far
/// as the layouts read it).
fn reopens_another_class(packet: &[u8], guid: NetGuid, c: &ClientWorld, layouts: &[Arc<ClassLayout>]) -> bool {
    let mut found = false;
    let _ = shadowrep::wire::bunch::decode_packet(packet, |g, open| {
        found |= g == guid && open.is_some_and(|o| Some(o.class) != c.class_of(guid));
        let known = open.map(|o| o.class).or(c.class_of(g));
        Ok(match known.and_then(|k| layouts.get(k as usize)) {
            Some(l) => shadowrep::wire::bunch::Resolve::Layout(l),
            None => shadowrep::wire::bunch::Resolve::Skip,
        })
    });
    found
}

/// Everything a game can observe of a client, hashed.
fn digest(c: &ClientWorld, guids: &[NetGuid], layouts: &[Arc<ClassLayout>]) -> u64 {
    let mut h = DefaultHasher::new();
    (actors_digest(c, guids, layouts), c.highest_received().0, c.stats().rpcs_delivered).hash(&mut h);
    h.finish()
}

/// [`digest`] without the sequence window and the calls delivered: the actors, their values and
/// the waiting references.
fn actors_digest(c: &ClientWorld, guids: &[NetGuid], layouts: &[Arc<ClassLayout>]) -> u64 {
    let mut h = DefaultHasher::new();
    (c.actor_count(), c.unmapped_count()).hash(&mut h);
    let mut buf = [0u8; 64];
    for &g in guids {
        let Some(class) = c.class_of(g) else {
            (g, "absent").hash(&mut h);
            continue;
        };
        let layout = &layouts[class as usize];
        for (li, leaf) in layout.leaves.iter().enumerate() {
            match leaf.array {
                None => {
                    let n = leaf.kind.byte_size();
                    assert!(c.leaf_bytes(g, li, &mut buf[..n]), "the client lists {g}");
                    buf[..n].hash(&mut h);
                }
                Some(a) => c.array_bytes(g, a).hash(&mut h),
            }
        }
    }
    h.finish()
}

fn client(layouts: &[Arc<ClassLayout>], packets: &[Vec<u8>]) -> ClientWorld {
    let checksums: Vec<u64> = layouts.iter().map(|l| l.checksum).collect();
    let mut c = ClientWorld::new(layouts, &checksums).expect("same layouts");
    for p in packets {
        c.receive(p).expect("a server packet applies");
    }
    c.take_notifies();
    c
}

/// One mutant of `base`, using `other` for splices.
fn mutate(rng: &mut ChaCha8Rng, base: &[u8], other: &[u8]) -> Vec<u8> {
    let mut m = base.to_vec();
    for _ in 0..rng.random_range(1..=3) {
        let len = m.len().max(1);
        match rng.random_range(0..6) {
            0 => {
                for _ in 0..rng.random_range(1..=8) {
                    let bit = rng.random_range(0..len * 8);
                    if let Some(b) = m.get_mut(bit / 8) {
                        *b ^= 1 << (bit % 8);
                    }
                }
            }
            1 => m.truncate(rng.random_range(0..len)),
            2 => {
                let (i, j) = (rng.random_range(0..=m.len()), rng.random_range(0..=other.len()));
                m.truncate(i);
                m.extend_from_slice(&other[j..]);
            }
            3 => {
                // A huge packed integer: continuation bytes, then a last group.
                let at = rng.random_range(0..=m.len());
                let n = rng.random_range(1..=10);
                let mut huge = vec![0xffu8; n];
                huge.push(rng.random::<u8>() & 0xfe);
                if rng.random_bool(0.5) {
                    let end = (at + huge.len()).min(m.len());
                    m.splice(at..end, huge);
                } else {
                    m.splice(at..at, huge);
                }
            }
            4 => {
                let i = rng.random_range(0..len);
                let j = rng.random_range(i..=len).min(m.len());
                let slice = m.get(i..j).unwrap_or(&[]).to_vec();
                for _ in 0..rng.random_range(1..=40) {
                    m.splice(j.min(m.len())..j.min(m.len()), slice.iter().copied());
                }
            }
            _ => {
                let i = rng.random_range(0..len);
                if let Some(b) = m.get_mut(i) {
                    *b = rng.random();
                }
            }
        }
    }
    m
}

fn mutants() -> usize {
    std::env::var("SHADOWREP_FUZZ_MUTANTS").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000)
}

#[test]
fn hostile_packets_and_feedback_neither_panic_nor_bloat_nor_change_what_they_should_not() {
    let rec = record();
    let (layouts, packets, guids) = (&rec.layouts, &rec.packets, &rec.guids);
    let mut rng = ChaCha8Rng::seed_from_u64(0xf022);
    let total = mutants();
    let per = total.div_ceil(packets.len());
    let (mut refused, mut dropped, mut applied) = (0usize, 0usize, 0usize);
    let mut reference = client(layouts, &[]);
    for k in 0..packets.len() {
        let mut c = client(layouts, &packets[..k]);
        let clean = digest(&c, guids, layouts);
        let (clean_reopens, clean_late) = (c.stats().reopens_requested, c.stats().late_conflicts);
        let (clean_actors, clean_highest) = (actors_digest(&c, guids, layouts), c.highest_received());
        for _ in 0..per {
            let other = &packets[rng.random_range(0..packets.len())];
            let m = mutate(&mut rng, &packets[k], other);
            let result = capped(|| c.receive(&m));
            match result {
                Err(_) | Ok(Receipt::Dropped(_)) => {
                    if result.is_err() {
                        refused += 1;
                    } else {
                        dropped += 1;
                    }
                    if c.stats().restored == 0 && c.stats().late_conflicts > clean_late {
                        // A late packet whose number came with other bytes: its reliable calls
                        // go to the window (the server counts them delivered with the number);
                        // the actors and the window stay as they were.
                        assert_eq!(actors_digest(&c, guids, layouts), clean_actors, "packet {k}: {result:?}");
                        assert_eq!(c.highest_received(), clean_highest, "packet {k}: {result:?}");
                    } else if c.stats().restored == 0 {
                        assert_eq!(digest(&c, guids, layouts), clean, "packet {k}: {result:?} but the client changed");
                    } else {
                        // A refused packet with the newest number but other bytes: the client
                        // forgets that number (it is reported missing, its content resent), and
                        // changes nothing else.
                        assert!(result.is_err() && c.highest_received() != clean_highest, "packet {k}: {result:?}");
                        assert_eq!(actors_digest(&c, guids, layouts), clean_actors, "packet {k}: {result:?}");
                    }
                    // A refused packet asks for one actor at most: one it lacks whose plain bunch
                    // could not be read past, or one it has whose update the packet broke off in
                    // (read with a class a forger gave its copy, the server's resends would break
                    // off too) — once (the server answers at most once per round trip).
                    let asked = c.stats().reopens_requested - clean_reopens;
                    let plain_missing = result == Err(ReceiveError::Wire(WireError::Invalid(PLAIN_FOR_MISSING)));
                    if c.stats().late_conflicts > clean_late {
                        // A late packet whose number came with other bytes: the dynamic actors
                        // it names are asked for again (the client cannot tell which of the two
                        // was forged), within one feedback's reopens; nothing else changes.
                        assert_eq!(result, Ok(Receipt::Dropped(SeqVerdict::Late)), "packet {k}");
                        assert!(asked <= MAX_REOPENS as u64, "packet {k}: asked for {asked}");
                    } else {
                        assert!(
                            asked == 0 || (result.is_err() && asked == 1),
                            "packet {k}: {result:?} asked for {asked}"
                        );
                    }
                    if asked == 1 && result.is_err() {
                        let fb = read_feedback(&c.feedback()).expect("the client's feedback decodes");
                        let &[g] = fb.reopen.as_slice() else { panic!("packet {k}: asked for {:?}", fb.reopen) };
                        // A plain bunch the client could not read: for an actor it lacks — or
                        // has with another class than an open earlier in the packet names (a
                        // forged open stepped over as a class conflict: the server's reopen heals
                        // it).
                        let conflict = plain_missing && reopens_another_class(&m, g, &c, layouts);
                        assert_eq!(c.has(g), !plain_missing || conflict, "packet {k}: {result:?} asked for {g}");
                    }
                    if asked > 0 || c.stats().restored > 0 || c.stats().late_conflicts > clean_late {
                        c = client(layouts, &packets[..k]);
                    }
                }
                Ok(Receipt::Applied { .. }) => {
                    // A mutant can be a valid packet (a flipped value); start again from the
                    // clean state.
                    applied += 1;
                    c = client(layouts, &packets[..k]);
                }
            }
            c.take_notifies();
        }
        // The real packet still applies exactly, after every mutant of it.
        assert!(matches!(c.receive(&packets[k]), Ok(Receipt::Applied { skipped: 0, .. })), "packet {k}");
        reference.receive(&packets[k]).expect("reference");
        assert_eq!(digest(&c, guids, layouts), digest(&reference, guids, layouts), "packet {k} applied differently");
    }
    eprintln!(
        "{} packet mutants of {} captured packets: {refused} refused, {dropped} dropped, {applied} applied",
        per * packets.len(),
        packets.len()
    );
    assert!(refused > total / 4 && applied > 0, "the mutants reach both sides of the validator");

    // Feedback: mutants of captured feedback, fed to a live server between real feedbacks; the
    // world still converges afterwards.
    let mut w = mixed_world(11);
    let feedbacks = &rec.feedbacks;
    let (mut errors, mut accepted) = (0usize, 0usize);
    for frame in 0..40 {
        w.mutate(0.5);
        w.step();
        let conn = w.clients[0].conn;
        for _ in 0..total / 40 / 4 {
            let base = &feedbacks[rng.random_range(0..feedbacks.len())];
            let other = &feedbacks[rng.random_range(0..feedbacks.len())];
            let m = mutate(&mut rng, base, other);
            match capped(|| w.driver.receive_feedback(conn, &m)) {
                Ok(_) => accepted += 1,
                Err(_) => errors += 1,
            }
        }
        if frame == 39 {
            let stats = w.driver.connection_stats(conn).expect("connection");
            eprintln!("{} feedback mutants: {errors} refused, {accepted} decoded; {stats:?}", errors + accepted);
        }
    }
    for _ in 0..20 {
        w.step();
    }
    w.assert_converged();
    assert!(errors > 0 && accepted > 0);
}
