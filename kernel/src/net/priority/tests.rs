//! The priority formula, its factors and order, the send order's packing and hooks.

use super::*;

fn viewer() -> Viewer {
    Viewer { real_viewer: None, view_target: None, location: [0.0; 3], direction: [1.0, 0.0, 0.0] }
}

fn p(at: [f32; 3]) -> f32 {
    net_priority(at, 1.0, 1.0, false, true, &viewer())
}

#[test]
fn every_factor_of_ues_formula() {
    // Behind: beyond 2000 → 0.2, beyond 500 → 0.4, close → 1.
    assert_eq!(p([-2001.0, 0.0, 0.0]), 0.2);
    assert_eq!(p([-2000.0, 0.0, 0.0]), 0.4, "2000 exactly is not beyond");
    assert_eq!(p([-501.0, 0.0, 0.0]), 0.4);
    assert_eq!(p([-500.0, 0.0, 0.0]), 1.0);
    // Ahead within 45° and nearer than 8000 → 2; at 45° exactly or beyond 8000 it is not.
    assert_eq!(p([7999.0, 0.0, 0.0]), 2.0);
    assert_eq!(p([100.0, 99.0, 0.0]), 2.0);
    assert_eq!(p([100.0, 100.0, 0.0]), 1.0, "45° exactly is not within");
    assert_eq!(p([8000.0, 0.0, 0.0]), 0.4, "8000 exactly is not nearer, and beyond 3162");
    // Off to the side: beyond 3162 → 0.4.
    assert_eq!(p([0.0, 3163.0, 0.0]), 0.4);
    assert_eq!(p([0.0, 3162.0, 0.0]), 1.0);
    // The view target: ×4 wherever it is; invisible actors get no distance terms.
    assert_eq!(net_priority([-1.0e6, 0.0, 0.0], 1.0, 1.0, true, true, &viewer()), 4.0);
    assert_eq!(net_priority([-1.0e6, 0.0, 0.0], 1.0, 1.0, false, false, &viewer()), 1.0);
    // NetPriority and T scale it.
    assert_eq!(net_priority([7999.0, 0.0, 0.0], 3.0, 0.5, false, true, &viewer()), 3.0);
}

#[test]
fn owner_relevancy_takes_the_owners_place_priority_and_view_target() {
    use std::collections::HashMap;
    let g = NetGuid;
    // Owner 2 far behind the viewer with priority 3; weapon 4 owned by it, right ahead;
    // projectile 6 owned by the weapon, instigated by 8; a cycle 10 ↔ 12.
    let owner = ActorRelevancy::at(g(2), [-5000.0, 0.0, 0.0]);
    // An actor right ahead of the viewer that follows its owner's relevancy.
    let follower = |guid, of| ActorRelevancy {
        owner: Some(g(of)),
        use_owner_relevancy: true,
        ..ActorRelevancy::at(g(guid), [100.0, 0.0, 0.0])
    };
    let weapon = follower(4, 2);
    let projectile = ActorRelevancy { instigator: Some(g(8)), ..follower(6, 4) };
    let loner = ActorRelevancy { use_owner_relevancy: false, instigator: Some(g(8)), ..follower(14, 2) };
    let (a, b) = (follower(10, 12), follower(12, 10));
    let table: HashMap<NetGuid, (ActorRelevancy, f32)> =
        [(g(2), (owner, 3.0)), (g(4), (weapon, 1.0)), (g(10), (a, 1.0)), (g(12), (b, 1.0))].into();
    let lookup = |x: NetGuid| table.get(&x);
    let v = viewer();
    // Behind beyond 2000: 0.2 × the owner's priority 3, whatever the weapon's own place.
    for follower in [&weapon, &projectile] {
        let input = PriorityInput::resolve(follower, 1.0, &lookup);
        assert_eq!((input.actor, input.source), (follower.guid, g(2)));
        assert_eq!(input.priority(1.0, &v), 3.0 * 0.2);
        assert_eq!(input.priority(1.0, &v), actor_priority(follower, 1.0, 1.0, &v, &lookup));
    }
    // Viewing the owner: × 4 for its followers; the projectile's own instigator no longer
    // counts (the owner's does, and it has none).
    let on = |vt| Viewer { view_target: Some(g(vt)), ..viewer() };
    assert_eq!(PriorityInput::resolve(&projectile, 1.0, &lookup).priority(1.0, &on(2)), 12.0);
    assert_eq!(PriorityInput::resolve(&projectile, 1.0, &lookup).priority(1.0, &on(8)), 3.0 * 0.2);
    // Without owner relevancy an actor keeps its own place, and its instigator counts.
    let own = PriorityInput::resolve(&loner, 1.5, &lookup);
    assert_eq!((own.source, own.priority(1.0, &v)), (g(14), 1.5 * 2.0));
    assert_eq!(own.priority(1.0, &on(8)), 1.5 * 4.0);
    let alone = PriorityInput::resolve(&owner, 3.0, &lookup);
    assert_eq!(alone.priority(1.0, &on(0)), 3.0 * 0.2, "a null view target matches no missing instigator");
    // A cycle ends after MAX_OWNER_DEPTH links (an even number: back where it started).
    assert_eq!(PriorityInput::resolve(&a, 1.0, &lookup).source, g(10));
}

#[test]
fn the_viewers_own_controller_gets_four_times_without_distance_terms() {
    // APlayerController::GetNetPriority: × 4 when the viewer is the controller itself —
    // far behind the view point, where an actor's own terms would give × 0.2 — and its
    // owner-relevant followers take its place.
    let g = NetGuid;
    let pc = ActorRelevancy::at(g(2), [-5000.0, 0.0, 0.0]);
    let table: std::collections::HashMap<NetGuid, (ActorRelevancy, f32)> = [(g(2), (pc, 3.0))].into();
    let lookup = |x: NetGuid| table.get(&x);
    let own = Viewer { real_viewer: Some(g(2)), ..viewer() };
    assert_eq!(PriorityInput::resolve(&pc, 3.0, &lookup).priority(0.5, &own), 3.0 * 0.5 * 4.0);
    assert_eq!(PriorityInput::resolve(&pc, 3.0, &lookup).priority(0.5, &viewer()), 3.0 * 0.5 * 0.2);
    let follower =
        ActorRelevancy { owner: Some(g(2)), use_owner_relevancy: true, ..ActorRelevancy::at(g(4), [100.0, 0.0, 0.0]) };
    assert_eq!(PriorityInput::resolve(&follower, 1.0, &lookup).priority(1.0, &own), 12.0);
}

/// Catches a lane of `priorities` that strays from UE's formula as `net_priority` computes it
/// one actor at a time (a wrong factor, a threshold compared the other way, operations
/// reordered so a bit differs, an input gathered from the wrong lane): the scalar answer is
/// the oracle, on UE's thresholds ± one ulp, NaN and infinities.
#[test]
fn side_by_side_priorities_are_the_scalar_ones_bit_for_bit() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let g = |i: u64| NetGuid(2 * i);
    // Offsets on UE's thresholds (exactly at them, and a float either side), and anywhere.
    let edges = [0.0f32, CLOSE_PROXIMITY, NEAR_SIGHT, MED_SIGHT, FAR_SIGHT];
    let coordinate = |rng: &mut rand_chacha::ChaCha8Rng| match rng.random_range(0..8) {
        0 => edges[rng.random_range(0..edges.len())] * if rng.random() { 1.0 } else { -1.0 },
        1 => f32::from_bits(
            edges[rng.random_range(0..edges.len())].to_bits().wrapping_add(rng.random_range(0..3)).wrapping_sub(1),
        ),
        2 => [f32::NAN, f32::INFINITY, -f32::INFINITY, 1.0e30][rng.random_range(0..4)],
        _ => rng.random_range(-20_000.0..20_000.0),
    };
    for round in 0..20_000 {
        let viewer = Viewer {
            real_viewer: rng.random_bool(0.5).then(|| g(rng.random_range(1..6))),
            view_target: rng.random_bool(0.8).then(|| g(rng.random_range(1..6))),
            location: [coordinate(&mut rng), coordinate(&mut rng), coordinate(&mut rng)],
            direction: if round % 2 == 0 { [1.0, 0.0, 0.0] } else { [0.6, 0.8, 0.0] },
        };
        let inputs: Vec<(PriorityInput, f32)> = (0..rng.random_range(1..=LANES))
            .map(|_| {
                let input = PriorityInput {
                    actor: g(rng.random_range(1..6)),
                    source: g(rng.random_range(1..6)),
                    instigator: g(rng.random_range(0..6)),
                    location: [coordinate(&mut rng), coordinate(&mut rng), coordinate(&mut rng)],
                    net_priority: [1.0, 3.0, 0.5, 0.0, -1.0, f32::NAN][rng.random_range(0..6)],
                    visible: rng.random_bool(0.8),
                    instigated: rng.random_bool(0.3),
                };
                (input, [1.0 / 30.0, 1.0, 0.25, 7.5, f32::INFINITY][rng.random_range(0..5)])
            })
            .collect();
        let side_by_side = priorities(inputs.len(), |k| (&inputs[k].0, inputs[k].1), &viewer);
        for (k, (input, t)) in inputs.iter().enumerate() {
            let want = input.priority(*t, &viewer);
            assert!(
                side_by_side[k].to_bits() == want.to_bits() || want.is_nan() && side_by_side[k].is_nan(),
                "lane {k}: {} against {want} for {input:?}, t {t}, {viewer:?}",
                side_by_side[k]
            );
            assert_eq!(priority_key(0.0f32.max(side_by_side[k])), priority_key(0.0f32.max(want)));
        }
    }
}

#[test]
fn keys_round_and_saturate() {
    assert_eq!(priority_key(1.0), 65536);
    assert_eq!(priority_key(0.2), 13107);
    assert_eq!(priority_key(-1.0), 0);
    assert_eq!(priority_key(f32::NAN), 0);
    assert_eq!(priority_key(1.0e30), u32::MAX);
}

/// Catches a branch-free key that rounds or saturates differently from the key as specified
/// (truncating instead of rounding half up, a NaN or negative not ranking last, a huge
/// priority wrapping): the oracle spells the key out with its branches and `f64::round`.
#[test]
fn the_branch_free_key_is_the_key_spelled_out() {
    // The key as it reads in words: 0 for NaN and anything not above 0, u32::MAX from there
    // up, round half up between.
    let spelled_out = |p: f32| {
        let k = p as f64 * 65536.0;
        if k.is_nan() || k <= 0.0 {
            0
        } else if k >= u32::MAX as f64 {
            u32::MAX
        } else {
            k.round() as u32
        }
    };
    let edges = [
        0.0,
        -0.0,
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        0.5 / 65536.0,
        0.49 / 65536.0,
        1.5 / 65536.0,
        2.5 / 65536.0,
        u32::MAX as f32 / 65536.0,
        65535.99,
        65536.0,
        f32::MAX,
        f32::MIN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
    ];
    for p in edges {
        assert_eq!(priority_key(p), spelled_out(p), "p = {p:e}");
    }
    // Every exponent, random mantissas and signs.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..200_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let p = f32::from_bits(x as u32);
        assert_eq!(priority_key(p), spelled_out(p), "p = {p:e} ({:#x})", p.to_bits());
    }
}

#[test]
fn the_top_n_equal_the_first_n_of_a_full_sort() {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for len in [0, 1, 2, 7, 64, 1000] {
        let all: Vec<Candidate> = (0..len)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Few distinct keys, so ties (broken by GUID) are common.
                Candidate { key: (x % 5) as u32 * 1000, guid: NetGuid(2 * i as u64 + 2), index: i as u32 }
            })
            .collect();
        let mut sorted = all.clone();
        sorted.sort_by(send_order);
        for n in [0, 1, 3, len / 2, len, len + 5] {
            let mut work = all.clone();
            let top = select_top(&mut work, n).to_vec();
            assert_eq!(top, sorted[..n.min(len)].to_vec(), "len {len}, n {n}");
        }
    }
}

/// Catches a packed entry that orders candidates otherwise than `send_order` (a rank or index
/// bit lost, a batch taken out of order) and a cutoff's first batch that is not the order's
/// head (its partition inverted, a front part taken as a whole when it is not the first
/// candidates): the oracle is `send_order`'s full sort.
#[test]
fn the_packed_order_is_the_send_order() {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for (len, due) in [(0usize, 0usize), (1, 1), (2, 9), (37, 40), (570, 6_730), (1000, 1 << 20)] {
        // `len` candidates among `due` due actors: distinct GUIDs, few distinct keys.
        let mut guids: Vec<u64> = (0..due as u64).map(|i| 2 * (next() % (1 << 40)) + (i % 2)).collect();
        guids.sort_unstable();
        guids.dedup();
        let mut by_guid = guids.clone();
        let ranks: Vec<u32> = {
            // Due order is not GUID order: shuffle, then rank.
            for i in (1..by_guid.len()).rev() {
                by_guid.swap(i, (next() % (i as u64 + 1)) as usize);
            }
            by_guid.iter().map(|g| guids.binary_search(g).unwrap() as u32).collect()
        };
        let mut picked: Vec<usize> = (0..by_guid.len()).collect();
        for i in (1..picked.len()).rev() {
            picked.swap(i, (next() % (i as u64 + 1)) as usize);
        }
        picked.truncate(len);
        let cands: Vec<Candidate> = picked
            .iter()
            .enumerate()
            .map(|(i, &d)| Candidate { key: (next() % 6) as u32 * 4096, guid: NetGuid(by_guid[d]), index: i as u32 })
            .collect();
        let mut want = cands.clone();
        want.sort_by(send_order);
        // Cutoffs that put none, some or all of them first (a first batch taken whole, in
        // part, or not at all), and first batches small and large.
        let cutoffs = [None, Some(0), Some(2 * 4096), Some(4 * 4096 + 1), Some(5 * 4096), Some(u32::MAX)];
        for (rank_bits, cutoff, first) in (cutoffs.iter().flat_map(|&c| [(c, 3), (c, len / 2 + 1)]))
            .flat_map(|(c, first)| [(bits_below(by_guid.len()), c, first), (40, c, first)])
        {
            let mut order = SendOrder::default();
            // A list left from an earlier frame is replaced.
            order.fill(&[7], 1, |_| 0, |_| NetGuid(1), Some(7));
            let keys: Vec<u32> = cands.iter().map(|c| c.key).collect();
            order.fill(&keys, rank_bits, |i| ranks[picked[i]], |i| cands[i].guid, cutoff);
            assert_eq!(order.index_bits.is_some(), rank_bits + bits_below(cands.len()) <= 32);
            assert_eq!(order.len(), cands.len());
            // In batches, as the send loop takes them.
            let (mut start, mut batch, mut got) = (0, first, Vec::new());
            while start < order.len() {
                let n = order.select(start, batch);
                got.extend((start..start + n).map(|i| order.get(i)));
                start += n;
                batch *= 2;
            }
            let want: Vec<(u32, u32)> = want.iter().map(|c| (c.key, c.index)).collect();
            assert_eq!(got, want, "{len} candidates of {due} due, {rank_bits} rank bits, cutoff {cutoff:?}");
        }
    }
}

#[test]
fn a_starved_actor_rises_over_time() {
    // Far behind (×0.2) against an actor dead ahead sent every frame (T = 1/30 s, ×2).
    let v = viewer();
    let hot = net_priority([1000.0, 0.0, 0.0], 1.0, 1.0 / 30.0, false, true, &v);
    let frames = (1..).find(|&f| net_priority([-5000.0, 0.0, 0.0], 1.0, f as f32 / 30.0, false, true, &v) > hot);
    assert_eq!(frames, Some(11), "after 11 frames unsent it outranks the hot actor");
}

#[test]
fn the_first_hooked_class_on_the_owner_relevancy_chain_answers() {
    // a → b → c, each under owner relevancy; hooks named by the GUID whose class has one.
    let mut a = ActorRelevancy::at(NetGuid(1), [100.0, 0.0, 0.0]);
    let mut b = ActorRelevancy::at(NetGuid(2), [200.0, 0.0, 0.0]);
    let c = ActorRelevancy::at(NetGuid(3), [300.0, 0.0, 0.0]);
    (a.owner, a.use_owner_relevancy) = (Some(b.guid), true);
    (b.owner, b.use_owner_relevancy) = (Some(c.guid), true);
    let chain = [(b, 2.0), (c, 3.0)];
    let lookup = |g: NetGuid| chain.iter().find(|(r, _)| r.guid == g);
    let hooked = |set: &'static [u64]| move |g: NetGuid| set.contains(&g.0).then_some(g.0);
    // UE's formula reads the end of the chain whichever hook answers.
    let (input, hook) = PriorityInput::resolve_hooked(&a, 1.0, &lookup, hooked(&[1, 2, 3]));
    assert_eq!((input.actor, input.source, input.net_priority, hook), (NetGuid(1), NetGuid(3), 3.0, Some(1)));
    assert_eq!(input, PriorityInput::resolve(&a, 1.0, &lookup));
    assert_eq!(PriorityInput::resolve_hooked(&a, 1.0, &lookup, hooked(&[2, 3])).1, Some(2), "the nearest owner's");
    assert_eq!(PriorityInput::resolve_hooked(&a, 1.0, &lookup, hooked(&[3])).1, Some(3));
    assert_eq!(PriorityInput::resolve_hooked(&a, 1.0, &lookup, hooked(&[])).1, None);
    // Without owner relevancy the owner's class is not asked.
    let alone = ActorRelevancy { use_owner_relevancy: false, ..a };
    let (input, hook) = PriorityInput::resolve_hooked(&alone, 1.0, &lookup, hooked(&[2, 3]));
    assert_eq!((input.source, input.net_priority, hook), (NetGuid(1), 1.0, None));
}
