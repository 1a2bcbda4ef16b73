//! Remote procedure calls at the actor level: a call reaches the connections with the actor's
//! channel open — relevancy, dormancy and reopened channels decide — and a saturated connection
//! still gets reliable calls, not unreliable ones.

use super::*;
use shadowrep::client::RpcEvent;
use shadowrep::net::Dormancy;
use shadowrep_tests::random_world::CALLS;

const PING: &str = CALLS[0];
const SHOUT: &str = CALLS[1];

fn call(l: &mut Level, id: ActorId, name: &str, n: u32) {
    l.driver.call_rpc(l.class, &l.store, id, name, &[Value::U32(n)]).expect("a valid call");
}

/// Client `c`'s calls since the last look: (name, number).
fn calls(l: &mut Level, c: usize) -> Vec<(String, u32)> {
    let take = |e: RpcEvent| match e.args[..] {
        [Value::U32(n)] => (e.name, n),
        _ => panic!("one u32 argument"),
    };
    l.clients[c].1.take_rpcs().into_iter().map(take).collect()
}

fn dropped(l: &Level, c: usize) -> u64 {
    l.driver.connection_stats(l.clients[c].0).unwrap().rpcs_dropped
}

/// Calls not for client `c`: their actor had no open channel there.
fn without_channel(l: &Level, c: usize) -> u64 {
    l.driver.connection_stats(l.clients[c].0).unwrap().rpcs_without_channel
}

#[test]
fn a_call_reaches_the_connections_its_actor_is_relevant_to() {
    let mut l = Level::new(every_frame(), 2);
    always_due(&mut l);
    // Client 1 looks from beyond the cull distance.
    l.driver.set_viewers(l.clients[1].0, &[viewer([1.0e6, 0.0, 0.0], None)]).unwrap();
    let (id, _) = l.spawn([100.0, 0.0, 0.0], 1);
    l.run(3);
    call(&mut l, id, SHOUT, 1);
    call(&mut l, id, PING, 2);
    l.step();
    assert_eq!(calls(&mut l, 0), vec![(SHOUT.into(), 1), (PING.into(), 2)]);
    assert_eq!((calls(&mut l, 1), without_channel(&l, 1), dropped(&l, 1)), (vec![], 2, 0));
    // The viewer comes close: the channel opens, and the next calls reach it.
    l.driver.set_viewers(l.clients[1].0, &[viewer([0.0; 3], None)]).unwrap();
    l.step();
    call(&mut l, id, SHOUT, 3);
    call(&mut l, id, PING, 4);
    l.run(3);
    assert_eq!(calls(&mut l, 1), vec![(SHOUT.into(), 3), (PING.into(), 4)]);
    assert_eq!((without_channel(&l, 1), dropped(&l, 1)), (2, 0));
}

#[test]
fn a_dormant_actors_calls_are_dropped_until_it_wakes() {
    let mut l = Level::new(every_frame(), 1);
    always_due(&mut l);
    let (id, guid) = l.spawn([100.0, 0.0, 0.0], 1);
    l.driver.set_net_dormancy(l.class, &l.store, id, Dormancy::DormantAll).unwrap();
    l.run(4);
    assert!(l.client(0).is_dormant(guid));
    call(&mut l, id, SHOUT, 1);
    call(&mut l, id, PING, 2);
    l.step();
    let not_sent = (without_channel(&l, 0), dropped(&l, 0));
    assert_eq!((calls(&mut l, 0), not_sent), (vec![], (2, 0)), "UE sends no call down a dormant channel");
    l.driver.set_net_dormancy(l.class, &l.store, id, Dormancy::Awake).unwrap();
    l.step();
    call(&mut l, id, SHOUT, 3);
    l.run(3);
    assert_eq!(calls(&mut l, 0), vec![(SHOUT.into(), 3)]);
}

#[test]
fn a_saturated_connection_gets_reliable_calls_and_not_unreliable_ones() {
    let mut l = Level::new(every_frame(), 1);
    always_due(&mut l);
    let (id, _) = l.spawn([100.0, 0.0, 0.0], 1);
    l.run(3);
    // Many more actors than a slow connection carries in a frame.
    for i in 0..400 {
        l.spawn([200.0 + i as f32, 0.0, 0.0], i);
    }
    l.driver.set_net_speed(l.clients[0].0, 2_000).unwrap();
    l.step();
    assert!(l.decisions(0).saturated);
    call(&mut l, id, SHOUT, 1);
    call(&mut l, id, PING, 2);
    l.step();
    assert!(l.decisions(0).saturated);
    assert_eq!(calls(&mut l, 0), vec![(SHOUT.into(), 1)]);
    assert_eq!((dropped(&l, 0), without_channel(&l, 0)), (1, 0));
}
