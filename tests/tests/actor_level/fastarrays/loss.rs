//! Convergence under 30 % loss: random worlds of owners and their fast arrays — with relevancy,
//! ownership, dormancy, joins and arrays replaced — with the actor level and without it, every
//! client ending with exactly the arrays its conditions allow, holding the server's items.

use super::*;
use shadowrep::net::Dormancy;

/// One owner and its fast array in the convergence runs.
struct Owned {
    id: ActorId,
    guid: NetGuid,
    fa: NetGuid,
    condition: SubObjectCondition,
    owner: Option<usize>,
}

const CONDITIONS: [SubObjectCondition; 3] =
    [SubObjectCondition::None, SubObjectCondition::OwnerOnly, SubObjectCondition::SkipOwner];

fn random_items(l: &mut Level, fa: NetGuid, rng: &mut impl rand::Rng, n: usize) {
    let mut items = l.driver.fast_array_mut(fa).unwrap();
    for _ in 0..n {
        items.add(&slot(rng.random(), rng.random())).unwrap();
    }
}

fn random_id(l: &Level, fa: NetGuid, rng: &mut impl rand::Rng) -> Option<ReplicationId> {
    let items = l.driver.fast_array(fa).unwrap();
    let n = items.len();
    (n > 0).then(|| items.iter().nth(rng.random_range(0..n)).unwrap().0)
}

/// Each client holds exactly the fast arrays its conditions allow, with the server's items.
fn assert_fast_arrays_converged(l: &Level, owned: &[Owned], what: &str) {
    for c in 0..l.clients.len() {
        for o in owned {
            assert!(l.client(c).has(o.guid), "{what}, client {c}: owner {}", o.guid);
            let allowed = o.condition.allows(super::owner_flags(o.owner == Some(c)));
            let want = allowed.then(|| server_items(l, o.fa));
            assert_eq!(client_items(l, c, o.fa), want, "{what}, client {c}: fast array {}", o.fa);
            let want_list: &[NetGuid] = if allowed { &[o.fa] } else { &[] };
            assert_eq!(l.client(c).fast_arrays_of(o.guid), want_list, "{what}, client {c}: no stale arrays");
        }
    }
}

#[test]
fn clients_converge_under_30_percent_loss_with_fast_arrays_relevancy_ownership_dormancy_and_joins() {
    use rand::{Rng, SeedableRng};
    for seed in 0..6 {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let (mut l, kind) = level(2);
        let mut owned: Vec<Owned> = Vec::new();
        let spawn_owner = |l: &mut Level, rng: &mut rand_chacha::ChaCha8Rng, owned: &mut Vec<Owned>| {
            let (id, guid) = l.spawn([rng.random_range(0.0..2000.0), 0.0, 0.0], 1);
            let condition = CONDITIONS[owned.len() % CONDITIONS.len()];
            let fa = l.driver.add_fast_array(kind, guid, condition).unwrap();
            let n = rng.random_range(0..30);
            random_items(l, fa, rng, n);
            owned.push(Owned { id, guid, fa, condition, owner: None });
        };
        for _ in 0..6 {
            spawn_owner(&mut l, &mut rng, &mut owned);
        }
        for frame in 0..400 {
            if frame == 150 {
                l.add_client();
            }
            let k = rng.random_range(0..owned.len());
            let (id, fa) = (owned[k].id, owned[k].fa);
            match rng.random_range(0..24) {
                0..=4 => random_items(&mut l, fa, &mut rng, 1),
                5..=9 => {
                    if let Some(item) = random_id(&l, fa, &mut rng) {
                        l.driver.fast_array_mut(fa).unwrap().set(item, &slot(rng.random(), rng.random())).unwrap();
                    }
                }
                10..=11 => {
                    if let Some(item) = random_id(&l, fa, &mut rng) {
                        l.driver.fast_array_mut(fa).unwrap().remove(item).unwrap();
                    }
                }
                12 => l.driver.fast_array_mut(fa).unwrap().mark_array_dirty(),
                13 => l.move_to(id, [500_000.0, 0.0, 0.0]),
                14 => l.move_to(id, [rng.random_range(0.0..2000.0), 0.0, 0.0]),
                15 => {
                    let owner = rng.random_range(0..=l.clients.len());
                    let owner = (owner < l.clients.len()).then_some(owner);
                    let conn = owner.map(|c| l.clients[c].0);
                    l.driver.set_owner(l.class, &l.store, id, conn, true).unwrap();
                    owned[k].owner = owner;
                }
                16 => l.driver.set_net_dormancy(l.class, &l.store, id, Dormancy::DormantAll).unwrap(),
                17 => l.driver.set_net_dormancy(l.class, &l.store, id, Dormancy::Awake).unwrap(),
                18 => l.driver.flush_net_dormancy(l.class, &l.store, id).unwrap(),
                19 if owned.len() > 3 => {
                    l.store.despawn(id).unwrap();
                    owned.swap_remove(k);
                }
                20 => spawn_owner(&mut l, &mut rng, &mut owned),
                21 => {
                    l.driver.remove_fast_array(fa).unwrap();
                    let condition = owned[k].condition;
                    owned[k].fa = l.driver.add_fast_array(kind, owned[k].guid, condition).unwrap();
                    let n = rng.random_range(0..5);
                    random_items(&mut l, owned[k].fa, &mut rng, n);
                }
                _ => {}
            }
            l.step_lossy(&mut rng, 0.3);
        }
        // Everything near and awake; the link heals.
        for o in &owned {
            l.move_to(o.id, [100.0, 0.0, 0.0]);
            l.driver.set_net_dormancy(l.class, &l.store, o.id, Dormancy::Awake).unwrap();
        }
        for _ in 0..100 {
            l.step_lossy(&mut rng, 0.3);
        }
        l.run(40);
        assert_fast_arrays_converged(&l, &owned, &format!("seed {seed}"));
    }
}

#[test]
fn without_the_actor_level_clients_converge_under_30_percent_loss() {
    use rand::{Rng, SeedableRng};
    for seed in 0..4 {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let layout = thing();
        let mut store = ClassStore::new(layout.clone());
        let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
        let class = driver.register_class(&mut store).unwrap();
        let kind = driver.register_fast_array_kind(slots()).unwrap();
        let mut clients: Vec<(ConnectionId, ClientWorld)> = (0..2)
            .map(|_| {
                let conn = driver.add_connection(false);
                let world = ClientWorld::new(std::slice::from_ref(&layout), &driver.checksums())
                    .and_then(|w| w.with_fast_array_kinds(&[slots()], &driver.fast_array_checksums()))
                    .unwrap();
                (conn, world)
            })
            .collect();
        // (owner actor, its GUID, its fast array, condition, owning client)
        let mut owned: Vec<(ActorId, NetGuid, NetGuid, SubObjectCondition, Option<usize>)> = Vec::new();
        for frame in 0..300 {
            if owned.len() < 3 || rng.random_range(0..40) == 0 {
                let id = store.spawn();
                let guid = driver.assign_guid(class, &store, id).unwrap();
                let condition = CONDITIONS[owned.len() % CONDITIONS.len()];
                let fa = driver.add_fast_array(kind, guid, condition).unwrap();
                owned.push((id, guid, fa, condition, None));
            }
            let k = rng.random_range(0..owned.len());
            let (id, _, fa, _, _) = owned[k];
            let mut items = driver.fast_array_mut(fa).unwrap();
            let pick = |items: &shadowrep::net::FastArrayItems<'_>, rng: &mut rand_chacha::ChaCha8Rng| {
                let n = items.len();
                (n > 0).then(|| items.iter().nth(rng.random_range(0..n)).unwrap().0)
            };
            match rng.random_range(0..16) {
                0..=5 => drop(items.add(&slot(rng.random(), rng.random())).unwrap()),
                6..=9 => {
                    if let Some(i) = pick(&items, &mut rng) {
                        items.set(i, &slot(rng.random(), 3)).unwrap();
                    }
                }
                10..=11 => {
                    if let Some(i) = pick(&items, &mut rng) {
                        items.remove(i).unwrap();
                    }
                }
                12 => {
                    let owner = rng.random_range(0..3);
                    let owner = (owner < 2).then_some(owner);
                    driver.set_owner(class, &store, id, owner.map(|c| clients[c].0), true).unwrap();
                    owned[k].4 = owner;
                }
                13 if owned.len() > 3 && frame < 250 => {
                    store.despawn(id).unwrap();
                    owned.swap_remove(k);
                }
                _ => {}
            }
            let lossy = frame < 250;
            driver.tick(&mut [&mut store]).unwrap();
            for (conn, world) in &mut clients {
                for p in driver.take_packets(*conn).unwrap() {
                    if !lossy || !rng.random_bool(0.3) {
                        world.receive(&p).unwrap();
                    }
                }
                let fb = world.feedback();
                if !lossy || !rng.random_bool(0.3) {
                    driver.receive_feedback(*conn, &fb).unwrap();
                }
            }
        }
        for (c, (_, world)) in clients.iter().enumerate() {
            for &(_, guid, fa, condition, owner) in &owned {
                assert!(world.has(guid), "seed {seed}, client {c}: owner {guid}");
                let allowed = condition.allows(super::owner_flags(owner == Some(c)));
                let server: Items = driver.fast_array(fa).unwrap().iter().map(|(i, b)| (i.0, b.to_vec())).collect();
                let client = world.fast_array(fa).map(|r| r.iter().map(|(i, b)| (i.0, b.to_vec())).collect::<Items>());
                assert_eq!(client, allowed.then_some(server), "seed {seed}, client {c}: fast array {fa}");
            }
        }
    }
}
