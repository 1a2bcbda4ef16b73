//! FastArray under loss and reordering: a server array with two connections over seeded lossy,
//! reordering links (feedback delayed and reordered too), mutated every frame with adds, changes,
//! removals and the occasional `mark_array_dirty`; while lossy, each delta must fit a 1200-byte
//! packet (`write_delta_within`). After the mutations stop and the links heal,
//! every client holds exactly the server's items.
//!
//! Two receivers are exercised: one behind a connection layer that drops late packets (as the
//! kernel's does) and reports them lost, and one fed every packet in arrival order, whose own
//! lateness check must refuse the stale ones (reported lost too) while applying the rest.

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use shadowrep::fastarray::{
    item_layout, BaseId, DeltaToken, FastArray, FastArrayError, FastArrayEvent, FastArrayReceiver, ReplicationId,
};
use shadowrep::schema::{ArrayLayout, PropType, StructType};
use shadowrep::wire::BitWriter;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

fn layout() -> Arc<ArrayLayout> {
    let s = StructType::new("Slot")
        .field("Item", PropType::Object)
        .field("Count", PropType::U16)
        .field("Durability", PropType::F32);
    Arc::new(item_layout("Inventory", PropType::Struct(s)).unwrap())
}

fn item(l: &ArrayLayout, rng: &mut ChaCha8Rng) -> Vec<u8> {
    let mut b = vec![0u8; l.stride];
    for el in &l.elements {
        for x in &mut b[el.offset..el.offset + el.kind.byte_size()] {
            *x = rng.random();
        }
    }
    b
}

/// A delta on its way, with its fate decided.
struct InFlight {
    seq: u32,
    token: DeltaToken,
    bytes: Vec<u8>,
    arrives: u32,
}

/// One connection: the server's base, the link both ways, and the client.
struct Conn {
    base: BaseId,
    client: FastArrayReceiver,
    /// Drops late packets itself (the connection layer) rather than leaving it to the receiver.
    seq_window: bool,
    highest_seq: Option<u32>,
    next_seq: u32,
    to_client: Vec<InFlight>,
    /// (arrival frame, token, delivered)
    to_server: Vec<(u32, DeltaToken, bool)>,
    events: Vec<FastArrayEvent>,
}

struct Link {
    loss: f64,
    jitter: u32,
    /// Bits a delta may take (a packet's room).
    budget: usize,
}

fn step(server: &mut FastArray, c: &mut Conn, link: &Link, frame: u32, rng: &mut ChaCha8Rng) {
    let mut w = BitWriter::new();
    if let Some(token) = server.write_delta_within(c.base, &mut w, link.budget).unwrap() {
        let seq = c.next_seq;
        c.next_seq += 1;
        if rng.random_bool(link.loss) {
            c.to_server.push((frame + 1 + rng.random_range(0..=link.jitter), token, false));
        } else {
            let arrives = frame + 1 + rng.random_range(0..=link.jitter);
            c.to_client.push(InFlight { seq, token, bytes: w.into_bytes(), arrives });
        }
    }
    // Arrivals in arrival order (ties in random order): a later packet may overtake.
    let mut arriving: Vec<InFlight> = Vec::new();
    c.to_client.retain_mut(|p| {
        if p.arrives <= frame {
            arriving.push(InFlight {
                seq: p.seq,
                token: p.token,
                bytes: std::mem::take(&mut p.bytes),
                arrives: p.arrives,
            });
            false
        } else {
            true
        }
    });
    arriving.sort_by_key(|p| (p.arrives, rng.random::<u32>()));
    for p in arriving {
        let late = c.seq_window && c.highest_seq.is_some_and(|h| p.seq <= h);
        let delivered = if late {
            false
        } else {
            c.highest_seq = Some(c.highest_seq.map_or(p.seq, |h| h.max(p.seq)));
            match c.client.receive(&p.bytes, &mut c.events) {
                Ok(()) => true,
                Err(FastArrayError::Late { .. }) => false,
                Err(e) => panic!("a server delta failed to apply: {e}"),
            }
        };
        c.to_server.push((frame + 1 + rng.random_range(0..=link.jitter), p.token, delivered));
    }
    // Feedback, also reordered.
    let mut feedback = Vec::new();
    c.to_server.retain(|&(at, token, delivered)| {
        if at <= frame {
            feedback.push((token, delivered));
            false
        } else {
            true
        }
    });
    for i in (1..feedback.len()).rev() {
        feedback.swap(i, rng.random_range(0..=i));
    }
    for (token, delivered) in feedback {
        if delivered {
            server.acked(c.base, token);
        } else {
            server.lost(c.base, token);
        }
    }
}

fn mutate(server: &mut FastArray, live: &mut Vec<ReplicationId>, rng: &mut ChaCha8Rng) {
    let l = server.layout().clone();
    for _ in 0..rng.random_range(0..6) {
        match rng.random_range(0..100) {
            0..30 if live.len() < 300 => live.push(server.add(&item(&l, rng)).unwrap()),
            30..50 if !live.is_empty() => {
                let id = live.swap_remove(rng.random_range(0..live.len()));
                server.remove(id).unwrap();
            }
            50..51 => server.mark_array_dirty(),
            _ if !live.is_empty() => {
                let id = live[rng.random_range(0..live.len())];
                let v = item(&l, rng);
                server.set(id, &v).unwrap();
            }
            _ => {}
        }
    }
}

fn items<'a>(it: impl Iterator<Item = (ReplicationId, &'a [u8])>) -> BTreeMap<ReplicationId, Vec<u8>> {
    it.map(|(id, b)| (id, b.to_vec())).collect()
}

/// Runs `frames` frames of mutation over lossy links, then heals them; returns the frames it
/// took to converge.
fn converge(seed: u64, start: usize, frames: u32, loss: f64, jitter: u32) -> u32 {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let l = layout();
    let mut server = FastArray::new(l.clone());
    let mut live: Vec<_> = (0..start).map(|_| server.add(&item(&l, &mut rng)).unwrap()).collect();
    let mut conns: Vec<Conn> = [true, false]
        .into_iter()
        .map(|seq_window| Conn {
            base: server.connect(),
            client: FastArrayReceiver::new(l.clone()),
            seq_window,
            highest_seq: None,
            next_seq: 0,
            to_client: Vec::new(),
            to_server: Vec::new(),
            events: Vec::new(),
        })
        .collect();
    let lossy = Link { loss, jitter, budget: 8 * 1200 };
    for frame in 0..frames {
        mutate(&mut server, &mut live, &mut rng);
        for c in &mut conns {
            step(&mut server, c, &lossy, frame, &mut rng);
        }
    }
    let healed = Link { loss: 0.0, jitter: 0, budget: usize::MAX };
    for extra in 0..2_000 {
        let frame = frames + extra;
        for c in &mut conns {
            step(&mut server, c, &healed, frame, &mut rng);
        }
        let idle = conns.iter().all(|c| c.to_client.is_empty() && c.to_server.is_empty());
        if idle && conns.iter().all(|c| server.is_synced(c.base)) {
            let want = items(server.iter());
            for c in &conns {
                assert_eq!(items(c.client.iter()), want, "seed {seed}: client (seq window {}) differs", c.seq_window);
                check_events(&c.events);
            }
            return extra;
        }
    }
    panic!("seed {seed}: no convergence in 2000 healed frames");
}

/// Events name each id consistently: no change or removal of an id never added, no add of an id
/// already held, nothing after its removal (ids are never reused).
fn check_events(events: &[FastArrayEvent]) {
    let mut held = HashSet::new();
    let mut removed = HashSet::new();
    for e in events {
        match *e {
            FastArrayEvent::Added(id) => assert!(!removed.contains(&id) && held.insert(id), "{e:?}"),
            FastArrayEvent::Changed(id) => assert!(held.contains(&id), "{e:?}"),
            FastArrayEvent::Removed(id, _) => assert!(held.remove(&id) && removed.insert(id), "{e:?}"),
            FastArrayEvent::Received { old_len } => panic!("a Vec records no receive ({old_len})"),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn clients_converge_to_the_server_under_loss_and_reordering(
        seed in any::<u64>(),
        start in 0usize..2_500,
        frames in 1u32..120,
        loss in 0.0f64..0.6,
        jitter in 0u32..6,
    ) {
        converge(seed, start, frames, loss, jitter);
    }
}

#[test]
fn a_first_send_over_a_lossy_link_still_delivers_every_item() {
    // 10 000 items, 30 % loss, heavy reordering: the first send spans many updates and resends.
    converge(7, 10_000, 40, 0.3, 5);
}

#[test]
fn late_packets_are_refused_by_the_receiver_itself() {
    // With jitter, the receiver without a sequence window sees late deltas; count the refusals.
    let l = layout();
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut server = FastArray::new(l.clone());
    let mut live: Vec<_> = (0..50).map(|_| server.add(&item(&l, &mut rng)).unwrap()).collect();
    let base = server.connect();
    let mut client = FastArrayReceiver::new(l.clone());
    let mut pending: Vec<(DeltaToken, Vec<u8>)> = Vec::new();
    let mut refused = 0;
    for _ in 0..200 {
        mutate(&mut server, &mut live, &mut rng);
        let mut w = BitWriter::new();
        if let Some(t) = server.write_delta(base, &mut w).unwrap() {
            pending.push((t, w.into_bytes()));
        }
        if pending.len() >= 3 {
            // Deliver the newest first, then the others (late unless no mark came between).
            pending.reverse();
            for (t, bytes) in pending.drain(..) {
                let ok = match client.receive(&bytes, &mut ()) {
                    Ok(()) => true,
                    Err(FastArrayError::Late { .. }) => {
                        refused += 1;
                        false
                    }
                    Err(e) => panic!("{e}"),
                };
                if ok {
                    server.acked(base, t);
                } else {
                    server.lost(base, t);
                }
            }
        }
    }
    assert!(refused > 50, "only {refused} late deltas refused");
    for (t, _) in pending.drain(..) {
        server.lost(base, t); // never delivered
    }
    for _ in 0..100 {
        let mut w = BitWriter::new();
        match server.write_delta(base, &mut w).unwrap() {
            Some(t) => {
                client.receive(w.bytes(), &mut ()).unwrap();
                server.acked(base, t);
            }
            None => break,
        }
    }
    assert!(server.is_synced(base));
    assert_eq!(items(client.iter()), items(server.iter()));
}
