//! A random review of calls while ownership moves between connections (session 68's helper):
//! characters (with parts, registered as sub-objects under owner conditions) handed from client
//! to client, moved out of relevancy and back, made dormant and woken, over links that lose,
//! duplicate and reorder — every frame a few calls, each numbered by its argument (one counter
//! for the whole world) — then healed (perfect links, everything near and awake) and checked
//! against what UE and the README's "Remote procedure calls" promise:
//!
//! - a Client call (`Hint`, `Whisper`) reaches only the connection that owned its actor (a
//!   part's owner) when it was made; a Multicast call (`Ping`, `Shout`) only a connection with
//!   a channel of the actor when it was made or the frame's tick opened (calls are sent only
//!   down a channel, after the frame's actors);
//! - every call is delivered at most once per connection, on the actor it was made on;
//! - reliable calls (`Shout`, `Whisper`) arrive at each connection in call order per actor;
//! - a reliable call for a connection must arrive there when (a) its actor's channel there was
//!   open and acknowledged when it was made (the server numbers it; a numbered call reaches the
//!   client even if the channel closes after: README, session 66), or (b) the channel was there
//!   after the call's tick and stayed there, frame after frame, to the end (a call made while
//!   the open is unacknowledged waits for the acknowledgement; one whose channel closes first is
//!   dropped and counted: only (b) guarantees it).
//!
//! What the server says of its channels (`NetDriver::channel_info`: open rows, acknowledged or
//! not; dormant ones are not there) is read before each tick (when the frame's calls were made)
//! and after it.
//!
//! Sweeps (`rpc_ownership_sweep`): seeds 0..3000 at 30 % loss with three clients, 0..400
//! without dormancy, 0..200 with four clients and 600 frames, 0..600 at 50 % loss with three
//! clients pass. Found and fixed in session 68: a call on a part made just before its owner's
//! destruction was never sent (79 of seeds 0..1000 at 30 % loss;
//! `calls_on_a_part_made_just_before_its_owner_is_destroyed_are_delivered`), and a reliable
//! call on a part whose open the client set aside was dropped by the client (seeds 312 and 499
//! of 0..1000 at 50 % loss with two clients;
//! `a_reliable_call_on_a_sub_object_whose_open_the_client_set_aside_is_delivered`); and seed
//! 453 there (`the_rpc_world_of_seed_453_delivers_its_calls`): a part's open in the packet that
//! carried its owner's dormancy close was set aside, the client counting the owner gone though
//! it keeps a dormant copy, while the server counted the part's channel held — a reliable call
//! on it never delivered.
//! `RPC_WATCH=guid,client` shows both sides of a channel frame by frame.
//!
//! The world's play (its characters, changes and calls) is in `play.rs`; the finds, cut down to
//! one client on a hand-driven link, in `cases.rs`.

use super::common::{HINT, PING, SHOUT, WHISPER};
use shadowrep::client::{ClientWorld, RpcEvent};
use shadowrep::ids::{ClassId, ConnectionId, NetGuid};
use shadowrep::link::{Link, LinkConfig};
use shadowrep::net::{ActorLevelConfig, Dormancy, DriverConfig, NetDriver, NetSettings, SubObjectCondition, Viewer};
use shadowrep::schema::{ClassBuilder, PropType, PropertyDecl};
use shadowrep::store::{ActorId, ClassStore};
use shadowrep::value::Value;
use shadowrep_tests::random_world::{thing, with_calls, HEALTH, LOCATION};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

mod cases;
mod play;

use play::make_calls;
pub(super) use play::{change, Play, Play0};

pub(super) const NEAR: [f32; 3] = [100.0, 0.0, 0.0];
pub(super) const FAR: [f32; 3] = [1.0e6, 0.0, 0.0];

pub(super) fn part_layout() -> Arc<shadowrep::schema::ClassLayout> {
    Arc::new(with_calls(ClassBuilder::new("Part").property(PropertyDecl::new("Hp", PropType::U16))).build().unwrap())
}

pub(super) fn viewer() -> Viewer {
    Viewer { real_viewer: None, view_target: None, location: [0.0; 3], direction: [1.0, 0.0, 0.0] }
}

/// The server, its clients, their links (packets down, feedback up).
pub(super) struct World {
    pub(super) driver: NetDriver,
    pub(super) chars: ClassStore,
    pub(super) parts: ClassStore,
    pub(super) ch: ClassId,
    pub(super) pt: ClassId,
    pub(super) clients: Vec<(ConnectionId, ClientWorld)>,
    pub(super) down: Vec<Link>,
    pub(super) up: Vec<Link>,
    pub(super) refused: Vec<String>,
}

impl World {
    pub(super) fn new(clients: usize, seed: u64, loss: f64) -> World {
        let mut chars = ClassStore::new(thing());
        let mut parts = ClassStore::new(part_layout());
        // A short relevant timeout: a far character's channel closes a few frames on.
        let level = ActorLevelConfig { relevant_timeout: 0.3, ..ActorLevelConfig::default() };
        let cfg = DriverConfig { actor_level: Some(level), ..DriverConfig::default() };
        let mut driver = NetDriver::new(cfg).unwrap();
        let ch = driver.register_class(&mut chars).unwrap();
        let pt = driver.register_class(&mut parts).unwrap();
        driver.set_location_property(ch, LOCATION).unwrap();
        let mut s = NetSettings::default();
        s.frequency.net_update_frequency = 1.0e6;
        driver.set_class_settings(ch, s).unwrap();
        driver.set_class_settings(pt, s).unwrap();
        let mut w = World {
            driver,
            chars,
            parts,
            ch,
            pt,
            clients: Vec::new(),
            down: Vec::new(),
            up: Vec::new(),
            refused: Vec::new(),
        };
        for c in 0..clients as u64 {
            let conn = w.driver.add_connection(false);
            w.driver.set_viewers(conn, &[viewer()]).unwrap();
            let client = ClientWorld::new(&[thing(), part_layout()], &w.driver.checksums()).unwrap();
            w.clients.push((conn, client));
            w.down.push(Link::new(LinkConfig { loss, ..LinkConfig::lossy(loss, seed * 31 + c) }));
            w.up.push(Link::new(LinkConfig { loss, ..LinkConfig::lossy(loss, seed * 37 + 1000 + c) }));
        }
        w
    }

    /// One frame: the tick, packets down and feedback up through the links; each client's
    /// delivered calls.
    fn step(&mut self, frame: u32) -> Vec<Vec<RpcEvent>> {
        self.step_with(frame, |_, _| {})
    }

    /// [`Self::step`], with `look` shown each feedback datagram (and its connection) as it
    /// comes out of the link, before the server reads it.
    pub(super) fn step_with(&mut self, frame: u32, mut look: impl FnMut(ConnectionId, &[u8])) -> Vec<Vec<RpcEvent>> {
        self.driver.tick(&mut [&mut self.chars, &mut self.parts]).unwrap();
        let mut got = Vec::new();
        for (c, (conn, client)) in self.clients.iter_mut().enumerate() {
            for p in self.driver.take_packets(*conn).unwrap() {
                self.down[c].send(p);
            }
            for p in self.down[c].tick() {
                if let Err(e) = client.receive(&p) {
                    self.refused.push(format!("client {c} at frame {frame}: {e}"));
                }
            }
            if client.feedback_due() || frame.is_multiple_of(2) {
                self.up[c].send(client.feedback());
            }
            for fb in self.up[c].tick() {
                look(*conn, &fb);
                self.driver.receive_feedback(*conn, &fb).unwrap();
            }
            self.driver.heard_from(*conn).unwrap();
            got.push(client.take_rpcs());
        }
        got
    }

    /// Each client's open channels: actor and whether its open is acknowledged.
    fn channels(&self) -> Vec<HashMap<NetGuid, bool>> {
        self.clients
            .iter()
            .map(|(conn, _)| {
                self.driver.channel_info(*conn).unwrap().into_iter().map(|i| (i.guid, i.open_acked)).collect()
            })
            .collect()
    }
}

/// One call the game made.
pub(super) struct Call {
    frame: u32,
    guid: NetGuid,
    name: &'static str,
    /// The connection (client index) owning its actor when made.
    owner: Option<usize>,
    /// Per client: its channel of the actor before the tick (acknowledged or not), if any.
    before: Vec<Option<bool>>,
    /// Per client: whether the channel was there after the call's tick.
    after: Vec<bool>,
}

impl Call {
    fn reliable(&self) -> bool {
        self.name == SHOUT || self.name == WHISPER
    }

    fn client_call(&self) -> bool {
        self.name == HINT || self.name == WHISPER
    }

    /// Whether it is for client `c` at all (a Client call: its owner when made).
    fn for_client(&self, c: usize) -> bool {
        !self.client_call() || self.owner == Some(c)
    }
}

/// Debugging: `RPC_WATCH=guid,client` prints each frame that client's channel of the actor
/// before and after the tick (acknowledged or not) and whether the client holds it.
fn watch(w: &World, frame: u32, before: &[HashMap<NetGuid, bool>], after: &[HashMap<NetGuid, bool>]) {
    let Ok(v) = std::env::var("RPC_WATCH") else { return };
    let v: Vec<u64> = v.split(',').map(|x| x.parse().unwrap()).collect();
    let (g, c) = (NetGuid(v[0]), v[1] as usize);
    let client = &w.clients[c].1;
    eprintln!(
        "{frame}: c{c} {g}: before {:?} after {:?}, client has {} dormant {}",
        before[c].get(&g),
        after[c].get(&g),
        client.has(g),
        client.is_dormant(g)
    );
}

/// What a world exercised (summed over a sweep): calls made, deliveries, reliable calls owed by
/// each rule, Client calls delivered to an owner that had lost the actor by the delivery, and
/// calls delivered on parts.
#[derive(Clone, Copy, Debug, Default)]
struct Exercised {
    calls: usize,
    delivered: usize,
    owed_acked: usize,
    owed_stayed: usize,
    owed_unreliable: usize,
    to_former_owner: usize,
    on_parts: usize,
}

impl std::ops::AddAssign for Exercised {
    fn add_assign(&mut self, o: Exercised) {
        self.calls += o.calls;
        self.delivered += o.delivered;
        self.owed_acked += o.owed_acked;
        self.owed_stayed += o.owed_stayed;
        self.owed_unreliable += o.owed_unreliable;
        self.to_former_owner += o.to_former_owner;
        self.on_parts += o.on_parts;
    }
}

fn number(e: &RpcEvent) -> u32 {
    match e.args[..] {
        [Value::U32(n)] => n,
        _ => panic!("one u32 argument: {e:?}"),
    }
}

/// A random world of `clients` clients played `frames` frames (each a change and a few calls,
/// in either order), then healed — perfect links, everything near and awake — for 200 frames,
/// the first 50 with calls, and checked (the module's documentation says what).
fn rpc_ownership_world(seed: u64, clients: usize, frames: u32, play: Play) -> Result<Exercised, String> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut w = World::new(clients, seed, play.loss);
    let mut st = Play0 { chars: Vec::new(), calls: Vec::new(), known: Vec::new(), log: Vec::new() };
    let mut ex = Exercised::default();
    // Per client: the calls delivered, with the frame.
    let mut got: Vec<Vec<(u32, RpcEvent)>> = vec![Vec::new(); clients];
    // (client, actor): the last frame after whose tick the client had no channel of the actor.
    let mut last_absent: HashMap<(usize, NetGuid), u32> = HashMap::new();
    let heal = frames;
    let calls_end = frames + 50;
    let end = frames + 200;
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
        let first_new = st.calls.len();
        let calls_first = rng.random_bool(0.5);
        if calls_first && frame < calls_end {
            make_calls(&mut w, &mut rng, &mut st, frame);
        }
        if frame < heal {
            change(&mut w, &mut rng, &mut st, frame, play);
        }
        if !calls_first && frame < calls_end {
            make_calls(&mut w, &mut rng, &mut st, frame);
        }
        let before = w.channels();
        for call in &mut st.calls[first_new..] {
            call.before = before.iter().map(|m| m.get(&call.guid).copied()).collect();
        }
        let delivered = w.step(frame);
        let after = w.channels();
        watch(&w, frame, &before, &after);
        for call in &mut st.calls[first_new..] {
            call.after = after.iter().map(|m| m.contains_key(&call.guid)).collect();
        }
        for (c, m) in after.iter().enumerate() {
            for &g in &st.known {
                if !m.contains_key(&g) {
                    last_absent.insert((c, g), frame);
                }
            }
        }
        for (c, events) in delivered.into_iter().enumerate() {
            if !events.is_empty() {
                let ns: Vec<String> =
                    events.iter().map(|e| format!("{} {} on {}", e.name, number(e), e.guid)).collect();
                st.log.push(format!("{frame}: client {c} got {}", ns.join(", ")));
            }
            for e in &events {
                let call = st.calls.get(number(e) as usize);
                if call.is_some_and(|call| call.client_call() && st.owner_of(call.guid).is_some_and(|o| o != Some(c))) {
                    ex.to_former_owner += 1;
                }
            }
            got[c].extend(events.into_iter().map(|e| (frame, e)));
        }
    }
    let (calls, log) = (&st.calls, &st.log);
    ex.calls = calls.len();
    let what = |e: String| format!("seed {seed}, loss {}: {e}\n  {}", play.loss, log.join("\n  "));
    if !w.refused.is_empty() {
        return Err(what(format!("{} packets refused: {:?}", w.refused.len(), &w.refused[..w.refused.len().min(4)])));
    }
    for (c, got) in got.iter().enumerate() {
        let stats = w.driver.connection_stats(w.clients[c].0).unwrap();
        if stats.rpcs_overflowed > 0 {
            return Err(what(format!("client {c}: reliable calls overflowed: {stats:?}")));
        }
        ex.delivered += got.len();
        let mut seen = HashSet::new();
        // Per actor: the last reliable number delivered.
        let mut last: HashMap<NetGuid, u32> = HashMap::new();
        for (frame, e) in got {
            let n = number(e);
            let Some(call) = calls.get(n as usize) else {
                return Err(what(format!("client {c} at frame {frame}: a call never made: {e:?}")));
            };
            if e.name != call.name || e.guid != call.guid || e.reliable != call.reliable() {
                return Err(what(format!(
                    "client {c} at frame {frame}: {e:?} is not call {n} ({} on {})",
                    call.name, call.guid
                )));
            }
            if !seen.insert(n) {
                return Err(what(format!("client {c} at frame {frame}: {} {n} delivered twice", e.name)));
            }
            if e.class == 1 {
                ex.on_parts += 1;
            }
            if !call.for_client(c) {
                return Err(what(format!(
                    "client {c} at frame {frame}: {} {n} (frame {}) on {} owned by {:?} when made",
                    e.name, call.frame, call.guid, call.owner
                )));
            }
            if call.before[c].is_none() && !call.after[c] {
                return Err(what(format!(
                    "client {c} at frame {frame}: {} {n} (frame {}) on {}, which had no channel there",
                    e.name, call.frame, call.guid
                )));
            }
            if call.reliable() {
                if let Some(&prev) = last.get(&call.guid) {
                    if prev > n {
                        return Err(what(format!(
                            "client {c} at frame {frame}: {} {n} on {} after {prev}",
                            e.name, call.guid
                        )));
                    }
                }
                last.insert(call.guid, n);
            }
        }
        for (n, call) in calls.iter().enumerate() {
            if !call.for_client(c) {
                continue;
            }
            let acked = call.before[c] == Some(true);
            let stayed = call.after[c] && last_absent.get(&(c, call.guid)).is_none_or(|&f| f < call.frame);
            // Healed: an unreliable call on a channel open and acknowledged before and after its
            // tick goes (a perfect link, nothing saturated).
            let owed = if call.reliable() {
                ex.owed_acked += acked as usize;
                ex.owed_stayed += (stayed && !acked) as usize;
                acked || stayed
            } else {
                let owed = call.frame >= heal && acked && call.after[c];
                ex.owed_unreliable += owed as usize;
                owed
            };
            if owed && !seen.contains(&(n as u32)) {
                let why = if acked { "acknowledged when made" } else { "open from its tick on" };
                return Err(what(format!(
                    "client {c}: {} {n} (frame {}) on {} never delivered, its channel {why}; stats {stats:?}",
                    call.name, call.frame, call.guid
                )));
            }
        }
    }
    Ok(ex)
}

fn sweep(seeds: std::ops::Range<u64>, clients: usize, frames: u32, play: Play) {
    let mut failures = Vec::new();
    let mut ex = Exercised::default();
    for seed in seeds {
        match rpc_ownership_world(seed, clients, frames, play) {
            Ok(e) => ex += e,
            Err(e) => failures.push(e),
        }
    }
    eprintln!("{ex:?}");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn calls_follow_their_owner_through_ownership_moves_and_loss() {
    sweep(0..6, 3, 300, Play { loss: 0.3, dormancy: true });
}

#[test]
fn calls_follow_their_owner_through_ownership_moves_lossless() {
    sweep(0..3, 3, 300, Play { loss: 0.0, dormancy: true });
}

/// Seed 453 of the sweep at 50 % loss with two clients (see the module documentation): client 1
/// never got `Shout 121` on part 26, made in frame 90 while the server counted the part's copy
/// there acknowledged — the part's open, behind its owner's dormancy close in one packet, had
/// been set aside (`client/receive.rs`: a dormancy close no longer counts its actor gone).
#[test]
fn the_rpc_world_of_seed_453_delivers_its_calls() {
    rpc_ownership_world(453, 2, 300, Play { loss: 0.5, dormancy: true }).unwrap();
}

/// A wider sweep (`RPC_SEEDS=a..b RPC_LOSS=x`, `RPC_NODORM=1` without dormancy, `RPC_CLIENTS`,
/// `RPC_FRAMES`), for exploring.
#[test]
#[ignore = "a sweep for exploring"]
fn rpc_ownership_sweep() {
    let seeds = std::env::var("RPC_SEEDS").unwrap_or("0..200".into());
    let (a, b) = seeds.split_once("..").unwrap();
    let loss: f64 = std::env::var("RPC_LOSS").map_or(0.3, |l| l.parse().unwrap());
    let clients: usize = std::env::var("RPC_CLIENTS").map_or(3, |l| l.parse().unwrap());
    let frames: u32 = std::env::var("RPC_FRAMES").map_or(300, |l| l.parse().unwrap());
    let dormancy = std::env::var("RPC_NODORM").is_err();
    sweep(a.parse().unwrap()..b.parse().unwrap(), clients, frames, Play { loss, dormancy });
}
