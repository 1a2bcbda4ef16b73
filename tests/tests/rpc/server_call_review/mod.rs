//! A random review of Server calls (client to server) while ownership moves (a helper's, after
//! session 68), in the RPC ownership review's worlds (`super::ownership_review`: characters with
//! parts under owner conditions, handed from client to client, sent out of relevancy and back,
//! made dormant and woken, over links that lose, duplicate and reorder; then healed — perfect
//! links, everything near and awake), with two more events: a character torn off now and then,
//! and a client that leaves and joins again (its connection removed, a new one added in its
//! slot, with a new client and links). Every frame each client makes a few Server calls,
//! reliable (`ServerUse`) and unreliable (`ServerFire`), each numbered by its argument (one
//! counter for the world), on actors it holds: mostly ones its connection owns, some it owned
//! until a few frames ago (the move not heard yet), some another connection owns (a confused or
//! hostile client), some gone on the server (despawned or torn off). The feedback datagrams
//! coming out of the up links are read, so the frame each call first reached the server is
//! known. Checked against the README's "Server calls" rule — the server runs a call only from
//! the connection that owns the actor (`set_owner`; a part's owner's) **when the call arrives**
//! (its first copy: `wire::rpc::ReliableWindow::accept` keeps that copy's judgement, a resend is
//! stale) **and still owns it, live and not torn off, when its turn comes** (`net/rpc/server.rs`:
//! `receive_calls` tags each call on arrival, `deliver_server_call` asks again):
//!
//! - every call delivered (`take_server_rpcs`) is one a client made, from the connection it was
//!   made on, on that actor (GUID, class and store id), with its reliability, at most once;
//! - that connection owned the live actor in the frame the call's first copy arrived and in the
//!   frame it was delivered (ownership changes only between ticks here, so a frame's feedback
//!   is judged against one owner per actor);
//! - reliable calls from one connection are delivered in call order (one window per connection:
//!   across its actors, so per actor too);
//! - a reliable call is delivered if its connection owned the actor from the frame it was made,
//!   or from its first arrival, to the end (the actor live, the connection kept); so is an
//!   unreliable one made after the heal;
//! - each live connection's `server_rpcs_delivered` counts exactly its calls delivered, none
//!   was left without room, and once healed every reliable call was acknowledged (a refused one
//!   uses its number: the stream goes on).
//!
//! Mutants of `net/rpc/server.rs` each fail the default seeds: no ownership check at the turn
//! (a call held while its connection owned the actor runs for it after the actor moved), none
//! on arrival, an unreliable call taken twice.
//!
//! Sweeps (`server_call_sweep`, 300 frames + 200 healed), all passing: seeds 0..1000 at 30 %
//! loss and 0..500 at 50 % loss with three clients (with and without the tear-offs and
//! reconnections), 0..200 with four clients and 600 frames, 0..500 at 50 % loss with two
//! clients, 0..300 without dormancy. Nothing found against the rule. `cases` pins the rule's
//! timing (a call that first arrived before its connection owned the actor stays refused — a
//! documented rule, stricter than judging at the turn alone) and what a call arriving
//! between the game's despawn and the next tick names (the despawned id, which the store
//! refuses); and that a held call does not run on the actor that took its actor's slot.

use super::common::{FIRE, USE};
use super::ownership_review::{change, part_layout, viewer, Play, Play0, World, NEAR};
use shadowrep::client::ClientError;
use shadowrep::client::ClientWorld;
use shadowrep::ids::{ClassId, ConnectionId, NetGuid};
use shadowrep::link::Link;
use shadowrep::link::LinkConfig;
use shadowrep::net::{Dormancy, ServerRpcEvent};
use shadowrep::store::ActorId;
use shadowrep::value::Value;
use shadowrep_tests::random_world::{thing, LOCATION};
use std::collections::{HashMap, HashSet};

mod cases;

/// One Server call a client made.
struct Call {
    frame: u32,
    client: usize,
    /// The client's connection then (a client that reconnects has a new one).
    conn: ConnectionId,
    guid: NetGuid,
    reliable: bool,
    /// Why the client called it: its connection owned the actor, owned it a few frames ago,
    /// or never did.
    kind: Kind,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Owned,
    JustMoved,
    Foreign,
    /// Gone on the server (despawned or torn off; the client has not heard yet, or keeps it).
    Gone,
}

/// What a world exercised (summed over a sweep).
#[derive(Clone, Copy, Debug, Default)]
struct Exercised {
    calls: usize,
    /// Calls the client refused (`TooManyCalls`: too many waiting).
    too_many: usize,
    delivered: usize,
    delivered_not_owned_when_made: usize,
    delivered_on_parts: usize,
    refused_by_server: u64,
    owed_reliable: usize,
    owed_unreliable: usize,
    just_moved: usize,
    foreign: usize,
    gone: usize,
    reconnects: usize,
}

impl std::ops::AddAssign for Exercised {
    fn add_assign(&mut self, o: Exercised) {
        self.calls += o.calls;
        self.too_many += o.too_many;
        self.delivered += o.delivered;
        self.delivered_not_owned_when_made += o.delivered_not_owned_when_made;
        self.delivered_on_parts += o.delivered_on_parts;
        self.refused_by_server += o.refused_by_server;
        self.owed_reliable += o.owed_reliable;
        self.owed_unreliable += o.owed_unreliable;
        self.just_moved += o.just_moved;
        self.foreign += o.foreign;
        self.gone += o.gone;
        self.reconnects += o.reconnects;
    }
}

/// The review's state beside the world's: the calls made, each client's numbers (its `n`th
/// reliable and unreliable call: what its feedback's call numbers name), each frame's owners.
struct Review {
    calls: Vec<Call>,
    /// Per connection: the world's call numbers of its reliable calls and of its unreliable
    /// ones, in the order its client made them (index = the call's number in its stream).
    streams: HashMap<ConnectionId, [Vec<u32>; 2]>,
    /// Per frame: each live actor's (character's or part's) owning connection, as the server
    /// had it when the frame's feedback arrived.
    owners: Vec<HashMap<NetGuid, Option<ConnectionId>>>,
    /// The frame each call's first copy reached the server.
    arrived: HashMap<u32, u32>,
    /// Per client: the characters it owned until a recent frame (the frame it lost them).
    lost: Vec<HashMap<NetGuid, u32>>,
    /// Every actor's class and id in its store (a slot is used again after a despawn: the
    /// event must name the actor the call was made on).
    ids: HashMap<NetGuid, (ClassId, ActorId)>,
    too_many: usize,
    reconnects: usize,
}

/// Each live character's and part's owning connection now.
fn owners(w: &World, st: &Play0) -> HashMap<NetGuid, Option<ConnectionId>> {
    let mut m = HashMap::new();
    for ch in &st.chars {
        let owner = ch.owner.map(|o| w.clients[o].0);
        m.insert(ch.guid, owner);
        for p in &ch.parts {
            m.insert(p.guid, owner);
        }
    }
    m
}

/// Client `c` leaves and joins again: its connection removed (the actors it owned owned by
/// nobody), a new one added — in the removed one's slot — with a new client and new links.
fn reconnect(w: &mut World, st: &mut Play0, rv: &mut Review, c: usize, seed: u64, frame: u32, loss: f64) {
    let old = w.clients[c].0;
    w.driver.remove_connection(old).unwrap();
    for ch in st.chars.iter_mut().filter(|ch| ch.owner == Some(c)) {
        ch.owner = None;
    }
    let conn = w.driver.add_connection(false);
    w.driver.set_viewers(conn, &[viewer()]).unwrap();
    let client = ClientWorld::new(&[thing(), part_layout()], &w.driver.checksums()).unwrap();
    w.clients[c] = (conn, client);
    let s = seed * 1009 + u64::from(frame) * 7 + c as u64;
    w.down[c] = Link::new(LinkConfig { loss, ..LinkConfig::lossy(loss, s) });
    w.up[c] = Link::new(LinkConfig { loss, ..LinkConfig::lossy(loss, s + 3) });
    rv.streams.insert(conn, [Vec::new(), Vec::new()]);
    rv.lost[c].clear();
    rv.reconnects += 1;
    st.log.push(format!("{frame}: client {c} reconnects: {old:?} removed, {conn:?} added"));
}

/// A few Server calls by each client in `frame`, on actors it holds.
fn make_calls(w: &mut World, rng: &mut impl rand::Rng, st: &mut Play0, rv: &mut Review, frame: u32) {
    let now = owners(w, st);
    let mut made = Vec::new();
    for c in 0..w.clients.len() {
        let (conn, client) = (w.clients[c].0, &mut w.clients[c].1);
        let mut held: Vec<NetGuid> = client.actors().map(|(g, _)| g).collect();
        held.sort_unstable_by_key(|g| g.0); // a seed plays the same each time
        let pick = |rng: &mut dyn rand::RngCore, of: &dyn Fn(&NetGuid) -> bool| {
            let v: Vec<NetGuid> = held.iter().copied().filter(|g| of(g)).collect();
            (!v.is_empty()).then(|| v[rand::Rng::random_range(rng, 0..v.len())])
        };
        // A part goes with its character: "just moved" holds for its parts as well.
        let char_of = |g: &NetGuid| {
            st.chars.iter().find(|ch| ch.guid == *g || ch.parts.iter().any(|p| p.guid == *g)).map(|ch| ch.guid)
        };
        for _ in 0..rng.random_range(0..4) {
            let r = rng.random_range(0..10);
            let owned = |g: &NetGuid| now.get(g) == Some(&Some(conn));
            let moved = |g: &NetGuid| {
                !owned(g) && char_of(g).is_some_and(|ch| rv.lost[c].get(&ch).is_some_and(|&f| frame <= f + 6))
            };
            let (kind, guid) = match r {
                0..=5 => (Kind::Owned, pick(rng, &owned)),
                6..=7 => (Kind::JustMoved, pick(rng, &moved)),
                8 => (Kind::Foreign, pick(rng, &|g| !owned(g) && now.contains_key(g))),
                _ => (Kind::Gone, pick(rng, &|g| !now.contains_key(g))),
            };
            let Some(guid) = guid else { continue };
            let reliable = rng.random_bool(0.5);
            let n = rv.calls.len() as u32;
            let name = if reliable { USE } else { FIRE };
            match client.call_server_rpc(guid, name, &[Value::U32(n)]) {
                Ok(()) => {}
                Err(ClientError::TooManyCalls) => {
                    rv.too_many += 1;
                    continue;
                }
                Err(e) => panic!("client {c}: {name} on {guid}: {e:?}"),
            }
            rv.streams.get_mut(&conn).unwrap()[usize::from(!reliable)].push(n);
            rv.calls.push(Call { frame, client: c, conn, guid, reliable, kind });
            made.push(format!("c{c} {name} {n} on {guid} ({kind:?})"));
        }
    }
    if !made.is_empty() {
        st.log.push(format!("{frame}: {}", made.join(", ")));
    }
}

/// One frame: the tick, packets down, feedback up — each feedback datagram read as it comes
/// out of the link, noting the calls it carries that reach the server first — and the Server
/// calls the server delivered.
fn step(w: &mut World, rv: &mut Review, frame: u32) -> Vec<ServerRpcEvent> {
    w.step_with(frame, |conn, fb| {
        let calls = shadowrep::wire::feedback::read_feedback(fb).unwrap().calls;
        for call in calls {
            let stream = &rv.streams[&conn][usize::from(!call.reliable)];
            let n = stream[usize::from(call.seq.unwrap())];
            assert_eq!(rv.calls[n as usize].guid, call.target, "the review's numbering");
            rv.arrived.entry(n).or_insert(frame);
        }
    });
    w.driver.take_server_rpcs()
}

fn number(e: &ServerRpcEvent) -> u32 {
    match e.args[..] {
        [Value::U32(n)] => n,
        _ => panic!("one u32 argument: {e:?}"),
    }
}

/// A random world of `clients` clients played `frames` frames (a change and each client's
/// calls, in either order), then healed for 200 frames, the first 50 with calls, and checked
/// (the module's documentation says what).
fn server_call_world(
    seed: u64,
    clients: usize,
    frames: u32,
    play: Play,
    reconnects: bool,
) -> Result<Exercised, String> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x5e5e);
    let mut w = World::new(clients, seed, play.loss);
    let mut st = Play0 { chars: Vec::new(), calls: Vec::new(), known: Vec::new(), log: Vec::new() };
    let mut rv = Review {
        calls: Vec::new(),
        streams: w.clients.iter().map(|(conn, _)| (*conn, [Vec::new(), Vec::new()])).collect(),
        owners: Vec::new(),
        arrived: HashMap::new(),
        lost: vec![HashMap::new(); clients],
        ids: HashMap::new(),
        too_many: 0,
        reconnects: 0,
    };
    let mut got: Vec<(u32, ServerRpcEvent)> = Vec::new();
    let (heal, calls_end, end) = (frames, frames + 50, frames + 200);
    for frame in 0..end {
        if frame == heal {
            for l in w.down.iter_mut().chain(w.up.iter_mut()) {
                l.set_config(LinkConfig::perfect(1));
            }
            for ch in &st.chars {
                w.driver.set_net_dormancy(w.ch, &w.chars, ch.id, Dormancy::Awake).unwrap();
                w.chars.set(ch.id, LOCATION, &Value::Vector(NEAR)).unwrap();
            }
            st.log.push(format!("{frame}: heal"));
        }
        let calls_first = rng.random_bool(0.5);
        if calls_first && frame < calls_end {
            make_calls(&mut w, &mut rng, &mut st, &mut rv, frame);
        }
        if frame < heal {
            let was: HashMap<NetGuid, Option<usize>> = st.chars.iter().map(|ch| (ch.guid, ch.owner)).collect();
            change(&mut w, &mut rng, &mut st, frame, play);
            // Now and then a character torn off (its parts with it): no Server call on it runs
            // after; it leaves the review's characters (the store keeps it).
            if st.chars.len() > 1 && rng.random_range(0..60) == 0 {
                let ch = st.chars.swap_remove(rng.random_range(0..st.chars.len()));
                w.driver.tear_off(w.ch, &w.chars, ch.id).unwrap();
                st.log.push(format!("{frame}: {} torn off", ch.guid));
            }
            for ch in &st.chars {
                if let Some(Some(o)) = was.get(&ch.guid).filter(|&&o| o != ch.owner) {
                    rv.lost[*o].insert(ch.guid, frame);
                }
            }
            if reconnects && rng.random_range(0..100) == 0 {
                let c = rng.random_range(0..clients);
                reconnect(&mut w, &mut st, &mut rv, c, seed, frame, play.loss);
            }
        }
        if !calls_first && frame < calls_end {
            make_calls(&mut w, &mut rng, &mut st, &mut rv, frame);
        }
        rv.owners.push(owners(&w, &st));
        for ch in &st.chars {
            rv.ids.insert(ch.guid, (w.ch, ch.id));
            rv.ids.extend(ch.parts.iter().map(|p| (p.guid, (w.pt, p.id))));
        }
        let events = step(&mut w, &mut rv, frame);
        if !events.is_empty() {
            let ns: Vec<String> =
                events.iter().map(|e| format!("{:?} {} {} on {}", e.conn, e.name, number(e), e.guid)).collect();
            st.log.push(format!("{frame}: server got {}", ns.join(", ")));
        }
        got.extend(events.into_iter().map(|e| (frame, e)));
    }
    check(&w, &st, &rv, &got, seed, play)
}

fn check(
    w: &World,
    st: &Play0,
    rv: &Review,
    got: &[(u32, ServerRpcEvent)],
    seed: u64,
    play: Play,
) -> Result<Exercised, String> {
    let what = |e: String| format!("seed {seed}, loss {}: {e}\n  {}", play.loss, st.log.join("\n  "));
    let mut ex =
        Exercised { calls: rv.calls.len(), too_many: rv.too_many, reconnects: rv.reconnects, ..Exercised::default() };
    if !w.refused.is_empty() {
        return Err(what(format!("{} packets refused: {:?}", w.refused.len(), &w.refused[..w.refused.len().min(4)])));
    }
    let mut seen = HashSet::new();
    // Per connection: the last reliable call delivered, and the calls delivered.
    let mut last: HashMap<ConnectionId, u32> = HashMap::new();
    let mut per_conn: HashMap<ConnectionId, u64> = HashMap::new();
    for (frame, e) in got {
        let n = number(e);
        let Some(call) = rv.calls.get(n as usize) else {
            return Err(what(format!("frame {frame}: a call never made: {e:?}")));
        };
        let (c, conn) = (call.client, e.conn);
        *per_conn.entry(conn).or_default() += 1;
        let name = if call.reliable { USE } else { FIRE };
        if conn != call.conn
            || e.guid != call.guid
            || e.name != name
            || e.reliable != call.reliable
            || rv.ids.get(&e.guid) != Some(&(e.class, e.id))
        {
            return Err(what(format!(
                "frame {frame}: {e:?} is not call {n} (c{} {name} on {})",
                call.client, call.guid
            )));
        }
        if !seen.insert(n) {
            return Err(what(format!("frame {frame}: {name} {n} delivered twice")));
        }
        let owner_at = |f: u32| rv.owners[f as usize].get(&call.guid).copied();
        let Some(&arrived) = rv.arrived.get(&n) else {
            return Err(what(format!("frame {frame}: {name} {n} delivered, never seen arriving")));
        };
        for (when, f) in [("arrived", arrived), ("was delivered", *frame)] {
            if owner_at(f) != Some(Some(conn)) {
                return Err(what(format!(
                    "c{c}: {name} {n} on {} (made frame {}) delivered in frame {frame}, but when it {when} \
                     (frame {f}) the actor's owner was {:?} (None: gone)",
                    call.guid,
                    call.frame,
                    owner_at(f)
                )));
            }
        }
        if call.reliable {
            if let Some(&prev) = last.get(&conn) {
                if prev > n {
                    return Err(what(format!("c{c}: reliable {n} delivered in frame {frame} after {prev}")));
                }
            }
            last.insert(conn, n);
        }
        ex.delivered += 1;
        ex.delivered_not_owned_when_made += (owner_at(call.frame) != Some(Some(conn))) as usize;
        ex.delivered_on_parts += (e.class == w.pt) as usize;
    }
    let end = rv.owners.len() as u32;
    for (n, call) in rv.calls.iter().enumerate() {
        ex.just_moved += (call.kind == Kind::JustMoved) as usize;
        ex.foreign += (call.kind == Kind::Foreign) as usize;
        ex.gone += (call.kind == Kind::Gone) as usize;
        let owned_from =
            |from: u32| (from..end).all(|f| rv.owners[f as usize].get(&call.guid) == Some(&Some(call.conn)));
        // Owned from the call on, or from its first copy's arrival on (the rule's two checks
        // both pass whenever its turn comes).
        let arrived = rv.arrived.get(&(n as u32));
        let owned = owned_from(call.frame) || arrived.is_some_and(|&a| owned_from(a));
        let owed = owned && (call.reliable || call.frame >= end - 200);
        if !owed {
            continue;
        }
        if call.reliable {
            ex.owed_reliable += 1;
        } else {
            ex.owed_unreliable += 1;
        }
        if !seen.contains(&(n as u32)) {
            let name = if call.reliable { USE } else { FIRE };
            let stats = w.driver.connection_stats(call.conn).unwrap();
            return Err(what(format!(
                "c{}: {name} {n} on {} (frame {}, {:?}) never delivered, though its connection owned the \
                 actor from then (or its arrival) on; first arrived {:?}; stats {stats:?}",
                call.client,
                call.guid,
                call.frame,
                call.kind,
                rv.arrived.get(&(n as u32))
            )));
        }
    }
    for (c, (conn, client)) in w.clients.iter().enumerate() {
        let stats = w.driver.connection_stats(*conn).unwrap();
        ex.refused_by_server += stats.server_rpcs_refused;
        let delivered = per_conn.get(conn).copied().unwrap_or(0);
        if stats.server_rpcs_delivered != delivered || stats.server_rpcs_no_room != 0 {
            return Err(what(format!("c{c}: {delivered} calls delivered, stats {stats:?}")));
        }
        if client.server_calls_unacknowledged() != 0 {
            return Err(what(format!(
                "c{c}: {} reliable calls unacknowledged after the heal",
                client.server_calls_unacknowledged()
            )));
        }
    }
    Ok(ex)
}

fn sweep(seeds: std::ops::Range<u64>, clients: usize, frames: u32, play: Play, reconnects: bool) -> Exercised {
    let mut failures = Vec::new();
    let mut ex = Exercised::default();
    for seed in seeds {
        match server_call_world(seed, clients, frames, play, reconnects) {
            Ok(e) => ex += e,
            Err(e) => failures.push(e),
        }
    }
    eprintln!("{ex:?}");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    ex
}

#[test]
fn server_calls_run_only_for_their_owner_through_ownership_moves_and_loss() {
    let ex = sweep(0..5, 3, 300, Play { loss: 0.3, dormancy: true }, true);
    // The worlds exercise what the checks are about.
    assert!(ex.delivered > 500 && ex.owed_reliable > 200 && ex.owed_unreliable > 50, "{ex:?}");
    assert!(ex.refused_by_server > 100 && ex.just_moved > 50 && ex.foreign > 100 && ex.gone > 50, "{ex:?}");
    assert!(ex.reconnects > 3, "{ex:?}");
}

#[test]
fn server_calls_run_only_for_their_owner_lossless() {
    sweep(0..3, 3, 300, Play { loss: 0.0, dormancy: true }, true);
}

/// A wider sweep (`SRV_SEEDS=a..b SRV_LOSS=x`, `SRV_NODORM=1` without dormancy,
/// `SRV_NORECONNECT=1` without reconnections, `SRV_CLIENTS`, `SRV_FRAMES`), for exploring.
#[test]
#[ignore = "a sweep for exploring"]
fn server_call_sweep() {
    let seeds = std::env::var("SRV_SEEDS").unwrap_or("0..200".into());
    let (a, b) = seeds.split_once("..").unwrap();
    let loss: f64 = std::env::var("SRV_LOSS").map_or(0.3, |l| l.parse().unwrap());
    let clients: usize = std::env::var("SRV_CLIENTS").map_or(3, |l| l.parse().unwrap());
    let frames: u32 = std::env::var("SRV_FRAMES").map_or(300, |l| l.parse().unwrap());
    let dormancy = std::env::var("SRV_NODORM").is_err();
    let reconnects = std::env::var("SRV_NORECONNECT").is_err();
    sweep(a.parse().unwrap()..b.parse().unwrap(), clients, frames, Play { loss, dormancy }, reconnects);
}
