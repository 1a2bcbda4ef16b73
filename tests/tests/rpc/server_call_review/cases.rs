//! When the server judges a Server call's ownership, cut down to one connection and hand-made
//! feedback: on the call's first arrival and again at its turn (a call that first arrived while
//! its connection did not own the actor stays refused, though ownership came before its turn),
//! what a call arriving between the game's despawn and the next tick names, and a held call
//! whose actor's slot serves a new actor by its turn.

use super::super::common::*;
use shadowrep::link::LinkConfig;

/// A reliable call first arriving while its connection does not own the actor, held behind a
/// missing number; ownership given; the missing number arrives: that one runs, the held one does
/// not (counted refused), and a resend of it is not judged again. The kernel's documented rule
/// (README, "Server calls"): ownership is judged when the call arrives *and* when its turn
/// comes. Judging at the turn alone — where a channel that holds an out-of-order reliable
/// bunch unprocessed would judge it — would run the held call too; the kernel is stricter (a
/// call never runs on ownership its connection lacked when the call came, as far as the server
/// can tell). Kept as documented; the review checks the same against every call's first
/// arrival.
#[test]
fn a_reliable_call_that_arrived_before_its_connection_owned_the_actor_stays_refused() {
    let (mut w, ids, guids) = owned_world(1, 2, LinkConfig::perfect(1));
    let g = guids[0];
    let (caller, other) = (w.clients[1].conn, 0);
    w.set_owner(0, ids[0], Some(other), true);
    w.step();
    w.driver.take_server_rpcs();
    let highest = w.clients[1].world.highest_received();
    // Number 1 first, while client 0 owns the actor: held behind number 0, judged not owned.
    w.driver.receive_feedback(caller, &calls_feedback(highest, &[client_call(g, USE, 1, 11)])).unwrap();
    assert!(w.driver.take_server_rpcs().is_empty());
    w.set_owner(0, ids[0], Some(1), true);
    w.driver.receive_feedback(caller, &calls_feedback(highest, &[client_call(g, USE, 0, 10)])).unwrap();
    assert_eq!(server_numbers(&w.driver.take_server_rpcs(), caller, USE), vec![10], "number 1 judged on arrival");
    assert_eq!(w.driver.connection_stats(caller).unwrap().server_rpcs_refused, 1);
    // The same call sent again (the client did not hear the acknowledgement) is a resend: not
    // judged again, not run.
    w.driver.receive_feedback(caller, &calls_feedback(highest, &[client_call(g, USE, 1, 11)])).unwrap();
    assert!(w.driver.take_server_rpcs().is_empty());
    // Number 2 arrives while the caller owns it: runs.
    w.driver.receive_feedback(caller, &calls_feedback(highest, &[client_call(g, USE, 2, 12)])).unwrap();
    assert_eq!(server_numbers(&w.driver.take_server_rpcs(), caller, USE), vec![12]);
}

/// The driver learns of a despawn at the tick (`receive_feedback` and `take_server_rpcs` see no
/// store): a call from the owner arriving between the game's `despawn` and the next tick is
/// delivered, naming the despawned actor's id — whose generation the store refuses, also after
/// the slot served a new actor, so the game cannot take it for the new one. After the tick the
/// actor is gone and the next call is refused.
#[test]
fn a_server_call_arriving_between_a_despawn_and_the_tick_names_the_despawned_id() {
    let (mut w, ids, guids) = owned_world(1, 1, LinkConfig::perfect(1));
    let (conn, g) = (w.clients[0].conn, guids[0]);
    w.stores[0].despawn(ids[0]).unwrap();
    let new = w.stores[0].spawn();
    assert_eq!(new.index, ids[0].index, "the slot serves a new actor");
    let highest = w.clients[0].world.highest_received();
    w.driver.receive_feedback(conn, &calls_feedback(highest, &[client_call(g, USE, 0, 1)])).unwrap();
    let got = w.driver.take_server_rpcs();
    assert!(!got.is_empty() && got.iter().all(|e| e.id == ids[0] && e.id != new), "{got:?}");
    assert!(got.iter().all(|e| w.stores[0].get(e.id, 0).is_err()), "the store refuses the despawned id");
    w.step();
    w.driver.take_server_rpcs();
    w.driver.receive_feedback(conn, &calls_feedback(highest, &[client_call(g, USE, 1, 3)])).unwrap();
    assert!(w.driver.take_server_rpcs().is_empty(), "gone after the tick");
}

/// A reliable call held behind a missing number while its connection owns the actor; the actor
/// despawned, its slot serving a new actor the same connection owns; the missing number comes:
/// neither call runs — the held one's actor is gone, whatever now lives in its slot.
#[test]
fn a_held_call_does_not_run_on_the_actor_that_took_its_actors_slot() {
    let (mut w, ids, guids) = owned_world(1, 1, LinkConfig::perfect(1));
    let (conn, g) = (w.clients[0].conn, guids[0]);
    let highest = w.clients[0].world.highest_received();
    w.driver.receive_feedback(conn, &calls_feedback(highest, &[client_call(g, USE, 1, 11)])).unwrap();
    assert!(w.driver.take_server_rpcs().is_empty(), "held behind number 0");
    w.stores[0].despawn(ids[0]).unwrap();
    for _ in 0..3 {
        w.step();
    }
    let new = w.spawn(0);
    assert_eq!(new.index, ids[0].index, "the slot serves a new actor");
    w.set_owner(0, new, Some(0), true);
    for _ in 0..3 {
        w.step();
    }
    assert_ne!(w.guid(0, new), g);
    w.driver.take_server_rpcs();
    w.driver.receive_feedback(conn, &calls_feedback(highest, &[client_call(g, USE, 0, 10)])).unwrap();
    let got = w.driver.take_server_rpcs();
    assert!(got.is_empty(), "{got:?}");
    assert_eq!(w.driver.connection_stats(conn).unwrap().server_rpcs_refused, 2);
}
