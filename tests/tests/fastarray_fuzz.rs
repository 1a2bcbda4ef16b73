//! Hostile bytes at `FastArrayReceiver::receive`: random bytes and mutants of real deltas (bit
//! flips, truncations, overwritten bytes, huge counts). For every input: no panic; at most 1 MiB
//! allocated on top of what was live (the global allocator is capped around each call, so a
//! count is never trusted for an allocation); a refused delta leaves the client unchanged; and
//! afterwards the real deltas still apply exactly.
//!
//! This binary holds one test, so the allocation cap sees nothing else.

use cap::Cap;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use shadowrep::fastarray::{item_layout, FastArray, FastArrayReceiver, ReplicationId};
use shadowrep::schema::{ArrayLayout, PropType, StructType};
use shadowrep::wire::BitWriter;
use std::alloc;
use std::collections::BTreeMap;
use std::sync::Arc;

#[global_allocator]
static ALLOCATOR: Cap<alloc::System> = Cap::new(alloc::System, usize::MAX);

/// Extra bytes one call may allocate.
const ALLOCATION_BUDGET: usize = 1 << 20;

fn capped<T>(f: impl FnOnce() -> T) -> T {
    shadowrep_tests::capped(&ALLOCATOR, ALLOCATION_BUDGET, f)
}

fn items(c: &FastArrayReceiver) -> BTreeMap<ReplicationId, Vec<u8>> {
    c.iter().map(|(id, b)| (id, b.to_vec())).collect()
}

#[test]
fn hostile_deltas_never_panic_never_balloon_and_change_nothing_when_refused() {
    // A 256-byte opaque item: 2048 claimed changes would be 512 KiB of items each, if trusted.
    let s = StructType::new("Blob")
        .field("Tag", PropType::U8)
        .field("Body", PropType::Opaque { name: "B".into(), size: 255 });
    let l = Arc::new(item_layout("Blobs", PropType::Struct(s)).unwrap());
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut server = FastArray::new(l.clone());
    let base = server.connect();
    let mut ids = Vec::new();
    let mut real = Vec::new();
    for round in 0..40 {
        for _ in 0..rng.random_range(1..8) {
            let mut b = vec![0u8; l.stride];
            rng.fill(&mut b[..]);
            ids.push(server.add(&b).unwrap());
        }
        if round % 3 == 0 && ids.len() > 2 {
            server.remove(ids.swap_remove(0)).unwrap();
            let id = ids[1];
            server.item_mut(id).unwrap()[0] ^= 1;
        }
        let mut w = BitWriter::new();
        if let Some(t) = server.write_delta(base, &mut w).unwrap() {
            server.acked(base, t);
            real.push(w.into_bytes());
        }
    }
    let mutants = std::env::var("SHADOWREP_FUZZ_MUTANTS").ok().and_then(|s| s.parse().ok()).unwrap_or(20_000usize);
    let mut client = FastArrayReceiver::new(l.clone());
    let mut refused = 0;
    for i in 0..mutants {
        let src = &real[i % real.len()];
        let mut m = match i % 5 {
            0 => (0..rng.random_range(0..64)).map(|_| rng.random()).collect(),
            1 => src[..rng.random_range(0..src.len())].to_vec(),
            2 => {
                let mut m = src.clone();
                for _ in 0..rng.random_range(1..4) {
                    let bit = rng.random_range(0..m.len() * 8);
                    m[bit / 8] ^= 1 << (bit % 8);
                }
                m
            }
            3 => {
                // Huge counts: a long key, base 0, then ten zero bits (count ≈ 2048) twice.
                let mut w = BitWriter::new();
                w.write_bool(true);
                w.write_packed(rng.random_range(0..1 << 20));
                w.write_packed(0);
                for _ in 0..2 {
                    w.write_bits(0, 10);
                    w.write_bool(true);
                    w.write_bits(rng.random_range(0..1 << 10), 10);
                }
                let mut b = w.into_bytes();
                b.extend((0..rng.random_range(0..40)).map(|_| rng.random::<u8>()));
                b
            }
            _ => {
                let mut m = src.clone();
                let at = rng.random_range(0..m.len());
                m[at] = rng.random();
                m
            }
        };
        m.truncate(4096);
        let before = items(&client);
        let newest = client.newest_key();
        let mut events = Vec::new();
        let r = capped(|| client.receive(&m, &mut events));
        if r.is_err() {
            refused += 1;
            assert!(events.is_empty(), "mutant {i}: events from a refused delta");
            assert_eq!(items(&client), before, "mutant {i}: a refused delta changed the client");
            assert_eq!(client.newest_key(), newest);
        }
        if i % 1000 == 999 {
            // A mutant may have been accepted (it is then a valid delta); start over clean.
            client = FastArrayReceiver::new(l.clone());
        }
    }
    assert!(refused > mutants / 2, "only {refused} of {mutants} refused");
    // The real deltas still apply exactly.
    let mut client = FastArrayReceiver::new(l.clone());
    for d in &real {
        client.receive(d, &mut ()).unwrap();
    }
    let want: BTreeMap<_, _> = server.iter().map(|(id, b)| (id, b.to_vec())).collect();
    assert_eq!(items(&client), want);
    hostile_packets_with_fast_arrays(&l, mutants / 10);
}

/// The same through the driver's packets: a client with the kind receives mutants of real
/// packets carrying fast array opens and deltas (beside an actor's bunches). No panic, the cap,
/// and a refused packet leaves every fast array copy as it was.
fn hostile_packets_with_fast_arrays(l: &Arc<ArrayLayout>, mutants: usize) {
    use shadowrep::client::ClientWorld;
    use shadowrep::net::{DriverConfig, NetDriver, SubObjectCondition};
    use shadowrep::schema::{ClassBuilder, PropertyDecl};
    use shadowrep::store::ClassStore;
    let class =
        Arc::new(ClassBuilder::new("Owner").property(PropertyDecl::new("Health", PropType::U32)).build().unwrap());
    let mut store = ClassStore::new(class.clone());
    let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
    let c = driver.register_class(&mut store).unwrap();
    let kind = driver.register_fast_array_kind(l.clone()).unwrap();
    let conn = driver.add_connection(false);
    let new_client = |driver: &NetDriver| {
        ClientWorld::new(std::slice::from_ref(&class), &driver.checksums())
            .and_then(|w| w.with_fast_array_kinds(std::slice::from_ref(l), &driver.fast_array_checksums()))
            .unwrap()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let mut arrays = Vec::new();
    for _ in 0..3 {
        let id = store.spawn();
        let owner = driver.assign_guid(c, &store, id).unwrap();
        arrays.push(driver.add_fast_array(kind, owner, SubObjectCondition::None).unwrap());
    }
    let mut client = new_client(&driver);
    let mut real = Vec::new();
    for _ in 0..12 {
        for &fa in &arrays {
            let mut items = driver.fast_array_mut(fa).unwrap();
            for _ in 0..rng.random_range(0..3) {
                let mut b = vec![0u8; l.stride];
                rng.fill(&mut b[..]);
                items.add(&b).unwrap();
            }
            let first: Option<ReplicationId> = items.iter().next().map(|(id, _)| id);
            if let Some(id) = first.filter(|_| rng.random_bool(0.3)) {
                items.remove(id).unwrap();
            }
        }
        driver.tick(&mut [&mut store]).unwrap();
        for p in driver.take_packets(conn).unwrap() {
            client.receive(&p).unwrap();
            real.push(p);
        }
        driver.receive_feedback(conn, &client.feedback()).unwrap();
    }
    assert!(arrays.iter().all(|&fa| client.fast_array(fa).is_some()), "the recording opened every array");
    let copies = |c: &ClientWorld| -> Vec<Option<BTreeMap<ReplicationId, Vec<u8>>>> {
        arrays.iter().map(|&fa| c.fast_array(fa).map(items)).collect()
    };
    let (mut refused, mut client) = (0, new_client(&driver));
    let mut applied = 0;
    for i in 0..mutants {
        if i % 200 == 0 {
            // Start over with the first half of the real traffic applied.
            client = new_client(&driver);
            applied = real.len() / 2;
            for p in &real[..applied] {
                client.receive(p).unwrap();
            }
        }
        let src = &real[applied + i % (real.len() - applied)];
        let other = &real[rng.random_range(0..real.len())];
        let mut m = src.clone();
        match i % 4 {
            0 => m.truncate(rng.random_range(1..m.len().max(2))),
            1 => {
                for _ in 0..rng.random_range(1..4) {
                    let bit = rng.random_range(0..m.len() * 8);
                    m[bit / 8] ^= 1 << (bit % 8);
                }
            }
            2 => {
                let at = rng.random_range(0..m.len());
                m.truncate(at);
                m.extend_from_slice(&other[rng.random_range(0..other.len())..]);
            }
            _ => {
                let at = rng.random_range(0..m.len());
                m[at] = rng.random();
            }
        }
        let before = copies(&client);
        let r = capped(|| client.receive(&m));
        if r.is_err() {
            refused += 1;
            assert_eq!(copies(&client), before, "packet mutant {i}: a refused packet changed a fast array");
        }
    }
    assert!(mutants == 0 || refused > 0, "no packet mutant was refused");
}
