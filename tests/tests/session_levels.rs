//! Level visibility over a session (`shadowrep::session::levels`): the client's loaded
//! sublevels reach the server's driver as numbered sets, each applied once, acknowledged, sent
//! again until acknowledged, throttled, and refused when malformed — and a client that streams
//! a sublevel in gets its actors, and loses them when it streams it out.

use shadowrep::client::Receipt;
use shadowrep::net::{ActorLevelConfig, ConnectionId, DriverConfig, NetDriver, SublevelId, Viewer};
use shadowrep::prelude::*;
use shadowrep::session::client::ClientDropped;
use shadowrep::session::server::Dropped;
use shadowrep::session::{
    ClientIncoming, Datagram, Incoming, LevelError, ServerConfig, SessionClient, SessionServer, MAX_LEVELS,
    MIN_LEVELS_INTERVAL,
};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

const HALL: SublevelId = SublevelId(1);
const CELLAR: SublevelId = SublevelId(7);

fn lamp() -> Arc<ClassLayout> {
    Arc::new(ClassBuilder::new("Lamp").property(PropertyDecl::new("On", PropType::U32)).build().unwrap())
}

/// A server with the actor level, one lamp in the hall near the viewer of one session's
/// connection, and that session's client, welcomed.
struct Game {
    driver: NetDriver,
    store: ClassStore,
    server: SessionServer,
    client: SessionClient,
    conn: ConnectionId,
    guid: shadowrep::ids::NetGuid,
    from: SocketAddr,
    now: Instant,
}

impl Game {
    fn new() -> Self {
        let layout = lamp();
        let mut store = ClassStore::new(layout.clone());
        let cfg = DriverConfig { actor_level: Some(ActorLevelConfig::default()), ..DriverConfig::default() };
        let mut driver = NetDriver::new(cfg).unwrap();
        let class = driver.register_class(&mut store).unwrap();
        let now = Instant::now();
        let mut server = SessionServer::new(ServerConfig::new(driver.checksums()), now).unwrap();
        let mut client = SessionClient::new(vec![layout], 3);
        let from = SocketAddr::from(([127, 0, 0, 1], 7000));
        let Incoming::Reply(ch) = server.handle(from, &client.hello().unwrap(), now) else { panic!("no challenge") };
        client.handle(&ch);
        let Incoming::Join(join) = server.handle(from, &client.hello().unwrap(), now) else { panic!("no join") };
        let conn = driver.add_connection(false);
        let welcome = server.accept(join, conn, now).unwrap();
        assert_eq!(client.handle(&welcome), ClientIncoming::Welcome);
        let viewer = Viewer { real_viewer: None, view_target: None, location: [0.0; 3], direction: [1.0, 0.0, 0.0] };
        driver.set_viewers(conn, &[viewer]).unwrap();
        let id = store.spawn();
        store.set(id, 0, &Value::U32(1)).unwrap();
        driver.set_position(class, &store, id, [100.0, 0.0, 0.0]).unwrap();
        driver.set_sublevel(class, &store, id, HALL).unwrap();
        let guid = driver.assign_guid(class, &store, id).unwrap();
        Game { driver, store, server, client, conn, guid, from, now }
    }

    /// A tick, its packets through the session to the client, and the client's feedback back.
    fn tick(&mut self) {
        self.now += Duration::from_millis(33);
        self.driver.tick(&mut [&mut self.store]).unwrap();
        for p in self.driver.take_packets(self.conn).unwrap() {
            let (_, d) = self.server.packet(self.conn, &p).unwrap();
            assert!(matches!(self.client.handle(&d), ClientIncoming::Packet(Ok(Receipt::Applied { .. }))));
        }
        let fb = self.client.feedback().unwrap();
        let Incoming::Feedback { payload, .. } = self.server.handle(self.from, &fb, self.now) else { panic!() };
        self.driver.receive_feedback(self.conn, &payload).unwrap();
    }

    /// The server's handling of the client's levels datagram `d`, at the game's clock.
    fn at_server(&mut self, d: &[u8]) -> Incoming<'static> {
        match self.server.handle(self.from, d, self.now) {
            Incoming::Levels { conn, levels, ack } => Incoming::Levels { conn, levels, ack },
            Incoming::Reply(r) => Incoming::Reply(r),
            Incoming::Dropped(why) => Incoming::Dropped(why),
            other => panic!("a levels datagram gave {other:?}"),
        }
    }

    /// The client's levels datagram delivered, applied to the driver, and its ack delivered.
    fn tell_levels(&mut self) {
        let d = self.client.levels().expect("a set owed");
        let Incoming::Levels { conn, levels, ack } = self.at_server(&d) else { panic!("not passed on") };
        assert_eq!(conn, self.conn);
        self.driver.set_loaded_sublevels(conn, &levels).unwrap();
        assert!(matches!(self.client.handle(&ack), ClientIncoming::LevelsAcked(_)));
        assert_eq!(self.client.levels(), None, "acknowledged: nothing more to send");
    }

    fn has_lamp(&self) -> bool {
        self.client.world().unwrap().has(self.guid)
    }
}

#[test]
fn a_client_that_streams_a_sublevel_in_over_its_session_gets_its_actors_and_loses_them_when_it_streams_it_out() {
    let mut g = Game::new();
    g.tick();
    g.tick();
    assert!(!g.has_lamp(), "the hall is not loaded on the client");
    assert_eq!(g.client.levels(), None, "nothing loaded, nothing to say");
    assert_eq!(g.client.set_sublevel_loaded(HALL, true), Ok(true));
    g.tell_levels();
    assert!(g.driver.sublevel_loaded(g.conn, HALL).unwrap());
    for _ in 0..3 {
        g.tick();
    }
    assert!(g.has_lamp());
    assert_eq!(g.client.world().unwrap().value(g.guid, 0), Some(Value::U32(1)));

    g.now += MIN_LEVELS_INTERVAL;
    assert_eq!(g.client.set_sublevel_loaded(HALL, false), Ok(true));
    g.tell_levels();
    assert!(!g.driver.sublevel_loaded(g.conn, HALL).unwrap());
    for _ in 0..3 {
        g.tick();
    }
    assert!(!g.has_lamp(), "the server closed the lamp's channel: LevelUnloaded");
}

#[test]
fn a_lost_set_goes_again_and_a_repeated_one_is_acknowledged_but_applied_once() {
    let mut g = Game::new();
    g.client.set_sublevel_loaded(HALL, true).unwrap();
    g.client.set_sublevel_loaded(CELLAR, true).unwrap();
    let lost = g.client.levels().unwrap();
    // Lost on the way: the client sends its set again (the same set, the same number).
    let again = g.client.levels().unwrap();
    assert_eq!(again, lost);
    let Incoming::Levels { levels, ack, .. } = g.at_server(&again) else { panic!("not passed on") };
    assert_eq!(levels, [HALL, CELLAR]);
    assert_eq!(g.driver.set_loaded_sublevels(g.conn, &levels), Ok(2));
    // The ack is lost too: the next send is acknowledged again, and not passed on.
    let third = g.client.levels().unwrap();
    let Incoming::Reply(ack_again) = g.at_server(&third) else { panic!("a repeated set passed on") };
    assert_eq!(ack_again, ack);
    assert_eq!(g.server.stats().levels_repeated, 1);
    // The late first datagram changes nothing either.
    assert!(matches!(g.at_server(&lost), Incoming::Reply(_)));
    assert_eq!(g.client.handle(&ack), ClientIncoming::LevelsAcked(2));
    assert_eq!(g.client.levels(), None);
    assert!(g.driver.sublevel_loaded(g.conn, CELLAR).unwrap());
}

#[test]
fn a_new_set_sooner_than_the_floor_is_dropped_unacknowledged_and_gets_through_later() {
    let mut g = Game::new();
    g.client.set_sublevel_loaded(HALL, true).unwrap();
    g.tell_levels();
    g.client.set_sublevel_loaded(CELLAR, true).unwrap();
    let d = g.client.levels().unwrap();
    assert_eq!(g.at_server(&d), Incoming::Dropped(Dropped::Throttled));
    assert_eq!(g.server.stats().levels_throttled, 1);
    assert!(!g.driver.sublevel_loaded(g.conn, CELLAR).unwrap());
    g.now += MIN_LEVELS_INTERVAL;
    g.tell_levels();
    assert!(g.driver.sublevel_loaded(g.conn, CELLAR).unwrap() && g.driver.sublevel_loaded(g.conn, HALL).unwrap());
}

#[test]
fn a_newer_set_replaces_the_older_whole_and_an_older_ack_leaves_it_owed() {
    let mut g = Game::new();
    g.client.set_sublevel_loaded(HALL, true).unwrap();
    g.client.set_sublevel_loaded(CELLAR, true).unwrap();
    g.tell_levels();
    g.now += MIN_LEVELS_INTERVAL;
    g.client.set_sublevel_loaded(HALL, false).unwrap();
    let d = g.client.levels().unwrap();
    // A late ack of the old set (a duplicate on the path) does not silence the new one.
    let old_ack = Datagram::LevelsAck { token: token_of(&d), seq: 2 }.encode();
    assert_eq!(g.client.handle(&old_ack), ClientIncoming::LevelsAcked(2));
    assert_eq!(g.client.levels(), Some(d.clone()));
    let Incoming::Levels { levels, .. } = g.at_server(&d) else { panic!() };
    assert_eq!(levels, [CELLAR]);
    assert_eq!(g.driver.set_loaded_sublevels(g.conn, &levels), Ok(1), "the hall out, the cellar stays");
    assert!(!g.driver.sublevel_loaded(g.conn, HALL).unwrap());
}

/// The token a plain session datagram carries.
fn token_of(d: &[u8]) -> u64 {
    u64::from_le_bytes(d[1..9].try_into().unwrap())
}

#[test]
fn hostile_level_datagrams_are_dropped_and_counted() {
    let mut g = Game::new();
    g.client.set_sublevel_loaded(HALL, true).unwrap();
    let token = token_of(&g.client.levels().unwrap());
    // An ack of a number the client never sent.
    let forged = Datagram::LevelsAck { token, seq: 99 }.encode();
    assert_eq!(g.client.handle(&forged), ClientIncoming::Dropped(ClientDropped::Unexpected));
    assert!(g.client.levels().is_some(), "still owed");
    // Another session's token.
    let other = Datagram::LevelsAck { token: token ^ 1, seq: 1 }.encode();
    assert_eq!(g.client.handle(&other), ClientIncoming::Dropped(ClientDropped::BadToken));
    let other = Datagram::Levels { token: token ^ 1, seq: 5, levels: vec![HALL] }.encode();
    assert_eq!(g.at_server(&other), Incoming::Dropped(Dropped::BadToken));
    // Malformed lists: unordered, repeated, the persistent level, too long.
    let raw = |seq: u32, list: &[u16]| {
        let mut b = vec![0x15];
        b.extend_from_slice(&token.to_le_bytes());
        b.extend_from_slice(&seq.to_le_bytes());
        b.extend_from_slice(&(list.len() as u16).to_le_bytes());
        list.iter().for_each(|l| b.extend_from_slice(&l.to_le_bytes()));
        b
    };
    let too_many: Vec<u16> = (1..=MAX_LEVELS as u16 + 1).collect();
    for bad in [raw(5, &[7, 1]), raw(5, &[3, 3]), raw(5, &[0, 4]), raw(5, &too_many)] {
        assert_eq!(g.at_server(&bad), Incoming::Dropped(Dropped::Malformed));
    }
    assert_eq!(g.server.stats().malformed, 4);
    // None of it changed the driver, and the real set still goes through.
    assert!(!g.driver.sublevel_loaded(g.conn, HALL).unwrap());
    g.tell_levels();
    assert!(g.driver.sublevel_loaded(g.conn, HALL).unwrap());
    // Every ack is smaller than the datagram that caused it.
    let smallest = raw(9, &[]);
    let Incoming::Reply(ack) = g.at_server(&raw(1, &[])) else { panic!("a repeat is answered") };
    assert!(ack.len() < smallest.len());
}

#[test]
fn the_client_refuses_bad_changes_and_loses_nothing() {
    let mut c = SessionClient::new(vec![lamp()], 1);
    assert_eq!(c.set_sublevel_loaded(SublevelId::PERSISTENT, false), Err(LevelError::Persistent));
    for l in 1..=MAX_LEVELS as u16 {
        c.set_sublevel_loaded(SublevelId(l), true).unwrap();
    }
    assert_eq!(c.set_sublevel_loaded(SublevelId(60_000), true), Err(LevelError::TooMany));
    assert_eq!(c.loaded_sublevels().count(), MAX_LEVELS);
    assert!(!c.sublevel_loaded(SublevelId(60_000)) && c.sublevel_loaded(SublevelId(MAX_LEVELS as u16)));
    assert_eq!(c.levels(), None, "not connected");
}

#[test]
fn the_driver_refuses_level_sets_it_cannot_apply() {
    let mut g = Game::new();
    let removed = g.driver.add_connection(false);
    g.driver.remove_connection(removed).unwrap();
    assert!(g.driver.set_loaded_sublevels(removed, &[HALL]).is_err());
    let mut plain = NetDriver::new(DriverConfig::default()).unwrap();
    let conn = plain.add_connection(false);
    assert!(plain.set_loaded_sublevels(conn, &[HALL]).is_err(), "no actor level, no sublevels");
    // Duplicates and the persistent level in a set from the game count once, or not at all.
    assert_eq!(g.driver.set_loaded_sublevels(g.conn, &[CELLAR, SublevelId::PERSISTENT, CELLAR]), Ok(1));
    assert_eq!(g.driver.set_loaded_sublevels(g.conn, &[]), Ok(1));
    assert!(!g.driver.sublevel_loaded(g.conn, CELLAR).unwrap());
}

/// A plain levels datagram of `token` with `seq` and `list` as raw numbers (any order, any
/// count).
fn raw_levels(token: u64, seq: u32, list: &[u16]) -> Vec<u8> {
    let mut b = vec![0x15];
    b.extend_from_slice(&token.to_le_bytes());
    b.extend_from_slice(&seq.to_le_bytes());
    b.extend_from_slice(&(list.len() as u16).to_le_bytes());
    list.iter().for_each(|l| b.extend_from_slice(&l.to_le_bytes()));
    b
}

#[test]
fn sets_from_strangers_old_numbers_and_cut_or_padded_lists_change_nothing() {
    let mut g = Game::new();
    g.client.set_sublevel_loaded(HALL, true).unwrap();
    let token = token_of(&g.client.levels().unwrap());
    // From an address without a session: dropped, nothing sent back.
    let stranger = SocketAddr::from(([127, 0, 0, 1], 7001));
    assert_eq!(
        g.server.handle(stranger, &raw_levels(token, 1, &[1]), g.now),
        Incoming::Dropped(Dropped::UnknownAddress)
    );
    // Cut short, or with bytes after the list.
    let whole = raw_levels(token, 1, &[1, 7]);
    for n in 1..whole.len() {
        assert_eq!(g.at_server(&whole[..n]), Incoming::Dropped(Dropped::Malformed), "cut to {n} bytes");
    }
    let mut padded = whole.clone();
    padded.push(0);
    assert_eq!(g.at_server(&padded), Incoming::Dropped(Dropped::Malformed));
    assert!(g.driver.loaded_sublevels(g.conn).unwrap().is_empty());
    // The real set, then a repeat of its number with other content and an older number: both
    // acknowledged with the applied number, neither passed on.
    g.tell_levels();
    g.now += MIN_LEVELS_INTERVAL;
    let Incoming::Reply(ack) = g.at_server(&raw_levels(token, 1, &[2, 3])) else { panic!("a repeat passed on") };
    assert_eq!(ack, Datagram::LevelsAck { token, seq: 1 }.encode());
    let Incoming::Reply(_) = g.at_server(&raw_levels(token, 0, &[9])) else { panic!("number 0 passed on") };
    assert_eq!(g.driver.loaded_sublevels(g.conn).unwrap(), [HALL]);
    assert_eq!(g.server.stats().levels_repeated, 2);
    // Every answer is no larger than its cause, and only the session's own address gets one.
    assert!(ack.len() <= raw_levels(token, 1, &[]).len());
}

#[test]
fn the_numbers_wrap_and_a_wrapped_set_still_gets_through() {
    let mut g = Game::new();
    g.client.set_sublevel_loaded(HALL, true).unwrap();
    let token = token_of(&g.client.levels().unwrap());
    // A client that changed its set four billion times: its numbers go round past u32::MAX
    // (skipping 0, which means "nothing yet"), in steps no larger than half the circle.
    let mut applied = 0;
    for seq in [1, 0x4000_0000, 0x8000_0000, 0xc000_0000, u32::MAX, 1, 2] {
        g.now += MIN_LEVELS_INTERVAL;
        let Incoming::Levels { levels, ack, .. } = g.at_server(&raw_levels(token, seq, &[seq as u16 % 500 + 1])) else {
            panic!("set {seq:#x} after {applied:#x} not passed on")
        };
        assert_eq!(ack, Datagram::LevelsAck { token, seq }.encode());
        g.driver.set_loaded_sublevels(g.conn, &levels).unwrap();
        applied = seq;
    }
    // And a set from before the wrap is old now.
    g.now += MIN_LEVELS_INTERVAL;
    assert!(matches!(g.at_server(&raw_levels(token, u32::MAX, &[5])), Incoming::Reply(_)));
    assert_eq!(g.driver.loaded_sublevels(g.conn).unwrap(), [SublevelId(3)]);
}

#[test]
fn an_ack_the_client_cannot_have_caused_silences_nothing() {
    let mut g = Game::new();
    let token = token_of(&g.client.feedback().unwrap());
    // Nothing sent yet: even an ack of "nothing" (0) is not the server's.
    assert_eq!(
        g.client.handle(&Datagram::LevelsAck { token, seq: 0 }.encode()),
        ClientIncoming::Dropped(ClientDropped::Unexpected)
    );
    g.client.set_sublevel_loaded(HALL, true).unwrap();
    for seq in [0, 2, 0x7fff_ffff] {
        let forged = Datagram::LevelsAck { token, seq }.encode();
        assert_eq!(g.client.handle(&forged), ClientIncoming::Dropped(ClientDropped::Unexpected), "ack of {seq:#x}");
        assert!(g.client.levels().is_some(), "an ack of {seq:#x} silenced the set");
    }
    // Numbers more than half the circle ahead are behind (the numbers go round): old acks,
    // which change nothing either.
    for seq in [0x8000_0001, u32::MAX] {
        g.client.handle(&Datagram::LevelsAck { token, seq }.encode());
        assert!(g.client.levels().is_some(), "an ack of {seq:#x} silenced the set");
    }
    g.tell_levels();
    assert_eq!(g.driver.loaded_sublevels(g.conn).unwrap(), [HALL]);
}

#[test]
fn a_client_toggling_sublevels_over_a_lossy_link_ends_with_the_server_holding_its_set() {
    use rand::{Rng, SeedableRng};
    let levels = [HALL, SublevelId(2), SublevelId(3), CELLAR, SublevelId(300)];
    let mut throttled = 0;
    for seed in 0..6u64 {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut g = Game::new();
        // Datagrams on the way, each with the tick it arrives at: lost, late, doubled.
        let (mut up, mut down): (InFlight, InFlight) = (Vec::new(), Vec::new());
        let send = |rng: &mut rand_chacha::ChaCha8Rng, q: &mut InFlight, t: u32, d: Vec<u8>| {
            for _ in 0..rng.random_range(1..=2) {
                if !rng.random_bool(0.4) {
                    q.push((t + rng.random_range(0..4), d.clone()));
                }
            }
        };
        for t in 0..400u32 {
            // Toggling, in bursts, for the first 300 ticks; then still.
            if t < 300 {
                for _ in 0..rng.random_range(0..3) {
                    let l = levels[rng.random_range(0..levels.len())];
                    let loaded = !g.client.sublevel_loaded(l);
                    g.client.set_sublevel_loaded(l, loaded).unwrap();
                }
            }
            g.tick();
            if let Some(d) = g.client.levels() {
                send(&mut rng, &mut up, t, d);
            }
            let arrived: Vec<Vec<u8>> = take_due(&mut up, t);
            for d in arrived {
                match g.at_server(&d) {
                    Incoming::Levels { conn, levels, ack } => {
                        g.driver.set_loaded_sublevels(conn, &levels).unwrap();
                        send(&mut rng, &mut down, t, ack);
                    }
                    Incoming::Reply(ack) => send(&mut rng, &mut down, t, ack),
                    Incoming::Dropped(Dropped::Throttled) => throttled += 1,
                    other => panic!("seed {seed}: the client's own set gave {other:?}"),
                }
            }
            for ack in take_due(&mut down, t) {
                assert!(matches!(g.client.handle(&ack), ClientIncoming::LevelsAcked(_)), "seed {seed}");
            }
        }
        assert_eq!(g.client.levels(), None, "seed {seed}: still owed after 100 quiet ticks");
        let client: Vec<SublevelId> = g.client.loaded_sublevels().collect();
        assert_eq!(g.driver.loaded_sublevels(g.conn).unwrap(), client, "seed {seed}");
    }
    assert!(throttled > 0, "the floor never held a set back");
}

/// Datagrams on the way, each with the tick it arrives at.
type InFlight = Vec<(u32, Vec<u8>)>;

/// The datagrams of `q` due by tick `t`, in the order sent.
fn take_due(q: &mut InFlight, t: u32) -> Vec<Vec<u8>> {
    let (due, later): (Vec<_>, Vec<_>) = q.drain(..).partition(|&(at, _)| at <= t);
    *q = later;
    due.into_iter().map(|(_, d)| d).collect()
}

#[test]
fn a_flood_of_new_sets_is_passed_on_once_a_floor_and_answered_with_nothing_larger() {
    let mut g = Game::new();
    g.client.set_sublevel_loaded(HALL, true).unwrap();
    let token = token_of(&g.client.levels().unwrap());
    let (mut passed, mut replied) = (0, 0);
    // A thousand new sets, and each again, in one instant: one goes on, the rest of the new
    // ones get nothing, and the repeats an ack each, smaller than what they answer.
    for seq in 1..=1000u32 {
        for _ in 0..2 {
            let d = raw_levels(token, seq, &[seq as u16]);
            match g.at_server(&d) {
                Incoming::Levels { levels, .. } => {
                    passed += 1;
                    g.driver.set_loaded_sublevels(g.conn, &levels).unwrap();
                }
                Incoming::Reply(ack) => {
                    replied += 1;
                    assert!(ack.len() < d.len());
                }
                Incoming::Dropped(why) => assert_eq!(why, Dropped::Throttled),
                other => panic!("{other:?}"),
            }
        }
    }
    assert_eq!((passed, replied), (1, 1), "only the first set and its own repeat");
    assert_eq!(g.server.stats().levels_throttled, 1998);
    // Once the floor has passed, the newest set goes on.
    g.now += MIN_LEVELS_INTERVAL;
    let Incoming::Levels { levels, .. } = g.at_server(&raw_levels(token, 1000, &[1000])) else { panic!() };
    g.driver.set_loaded_sublevels(g.conn, &levels).unwrap();
    assert_eq!(g.driver.loaded_sublevels(g.conn).unwrap(), [SublevelId(1000)]);
}
