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
use shadowrep::schema::{PropType, StructType};
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
    let mut client = FastArrayReceiver::new(l);
    for d in &real {
        client.receive(d, &mut ()).unwrap();
    }
    let want: BTreeMap<_, _> = server.iter().map(|(id, b)| (id, b.to_vec())).collect();
    assert_eq!(items(&client), want);
}
