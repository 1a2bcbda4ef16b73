//! Sessions (`shadowrep::session`) without sockets: the handshake round trip, statelessness
//! before the cookie comes back (and replies no larger than their request), tokens, rejects
//! with their reasons, and state digests that agree on a converged client and differ on one
//! that missed something.

use shadowrep::client::Receipt;
use shadowrep::net::{ConnectionId, DriverConfig, NetDriver};
use shadowrep::prelude::*;
use shadowrep::session::frame::{Hello, MIN_HELLO_BYTES};
use shadowrep::session::server::Dropped;
use shadowrep::session::{
    client_digest, expected_digest, ClientIncoming, Datagram, DigestStatus, Incoming, RejectReason, ServerConfig,
    SessionClient, SessionServer, MIN_DIGEST_INTERVAL, PROTOCOL_VERSION,
};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

fn door() -> Arc<ClassLayout> {
    Arc::new(
        ClassBuilder::new("Door")
            .property(PropertyDecl::new("Open", PropType::Bool).notify(Notify::OnChanged))
            .property(PropertyDecl::new("Angle", PropType::F32))
            .property(PropertyDecl::new("Key", PropType::U32).condition(Condition::OwnerOnly))
            .property(PropertyDecl::new("Where", PropType::Vector(VectorQuant::Q100)))
            .build()
            .expect("a valid layout"),
    )
}

/// Whether `i` is a challenge for `nonce` (a hello with a bad cookie gets a fresh one, and no
/// session).
fn fresh_challenge(i: Incoming<'_>, nonce: u64) -> bool {
    matches!(i, Incoming::Reply(b) if matches!(Datagram::decode(&b), Ok(Datagram::Challenge { nonce: n, .. }) if n == nonce))
}

fn reply(i: Incoming<'_>) -> Vec<u8> {
    match i {
        Incoming::Reply(b) => b,
        other => panic!("expected a reply, got {other:?}"),
    }
}

/// Runs the handshake of `client` at `from` against `server`; returns the session's connection.
fn handshake(server: &mut SessionServer, client: &mut SessionClient, from: SocketAddr, conn: ConnectionId) {
    let now = Instant::now();
    let hello = client.hello().expect("connecting");
    let challenge = reply(server.handle(from, &hello, now));
    assert!(challenge.len() <= hello.len());
    assert_eq!(client.handle(&challenge), ClientIncoming::Challenge);
    let echo = client.hello().expect("still connecting");
    let Incoming::Join(join) = server.handle(from, &echo, now) else { panic!("no join") };
    let welcome = server.accept(join, conn, now).expect("room");
    assert_eq!(client.handle(&welcome), ClientIncoming::Welcome);
}

#[test]
fn handshake_round_trip_then_packets_and_feedback_ride_in_the_session() {
    let layout = door();
    let mut store = ClassStore::new(layout.clone());
    let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
    let class = driver.register_class(&mut store).unwrap();
    let mut server =
        SessionServer::new(ServerConfig::new(driver.checksums()), Instant::now()).expect("a valid session config");
    let mut client = SessionClient::new(vec![layout], 42);
    let conn = driver.add_connection(false);
    handshake(&mut server, &mut client, addr(5000), conn);
    assert_eq!(server.len(), 1);
    assert!(client.world().is_some());
    assert!(client.hello().is_none(), "a welcomed client says hello no more");

    let a = store.spawn();
    store.set(a, 0, &Value::Bool(true)).unwrap();
    let guid = driver.assign_guid(class, &store, a).unwrap();
    driver.tick(&mut [&mut store]).unwrap();
    for p in driver.take_packets(conn).unwrap() {
        let (to, d) = server.packet(conn, &p).expect("a session");
        assert_eq!(to, addr(5000));
        assert!(matches!(client.handle(&d), ClientIncoming::Packet(Ok(Receipt::Applied { .. }))));
    }
    assert_eq!(client.world().unwrap().value(guid, 0), Some(Value::Bool(true)));
    let fb = client.feedback().expect("connected");
    let Incoming::Feedback { conn: c, payload } = server.handle(addr(5000), &fb, Instant::now()) else {
        panic!("feedback expected")
    };
    assert_eq!(c, conn);
    driver.receive_feedback(conn, &payload).unwrap();
    assert_eq!(driver.in_flight(conn), 0);

    // The welcome lost: the echo again gets the same welcome, not a second session.
    let mut again = SessionClient::new(vec![door()], 42);
    let hello = again.hello().unwrap();
    let ch = reply(server.handle(addr(5000), &hello, Instant::now()));
    again.handle(&ch);
    let w = reply(server.handle(addr(5000), &again.hello().unwrap(), Instant::now()));
    assert_eq!(again.handle(&w), ClientIncoming::Welcome);
    assert_eq!((server.len(), server.stats().welcomes_repeated), (1, 1));

    // Disconnect ends the session both ways.
    let bye = client.disconnect().unwrap();
    assert_eq!(server.handle(addr(5000), &bye, Instant::now()), Incoming::Disconnected { conn });
    assert!(server.is_empty());
}

#[test]
fn nothing_is_kept_before_the_cookie_and_no_reply_is_larger_than_its_request() {
    let t0 = Instant::now();
    let mut server = SessionServer::new(ServerConfig::new(vec![door().checksum]), t0).expect("a valid session config");
    // A flood of hellos from spoofed addresses, good and bad: challenges and rejects only.
    for port in 1..2000u16 {
        let checksums = if port % 3 == 0 { vec![7] } else { vec![door().checksum] };
        let hello = Datagram::Hello(Hello {
            version: PROTOCOL_VERSION,
            nonce: port as u64,
            cookie: None,
            checksums,
            ticket: None,
        });
        let bytes = hello.encode();
        assert_eq!(bytes.len(), MIN_HELLO_BYTES);
        let r = reply(server.handle(addr(port), &bytes, t0));
        assert!(r.len() <= bytes.len(), "{} byte reply to a {} byte hello", r.len(), bytes.len());
    }
    assert!(server.is_empty());
    let st = server.stats();
    assert_eq!((st.challenges, st.rejects, st.joins), (1333, 666, 0));

    // A hello shorter than the minimum gets nothing at all.
    let mut short =
        Datagram::Hello(Hello { version: 1, nonce: 1, cookie: None, checksums: vec![], ticket: None }).encode();
    short.truncate(MIN_HELLO_BYTES - 1);
    assert_eq!(server.handle(addr(9), &short, t0), Incoming::Dropped(Dropped::Malformed));

    // A cookie works from its address only, for its nonce only, and for one to two periods.
    let mut client = SessionClient::new(vec![door()], 5);
    let ch = reply(server.handle(addr(1), &client.hello().unwrap(), t0));
    client.handle(&ch);
    let echo = client.hello().unwrap();
    assert!(fresh_challenge(server.handle(addr(2), &echo, t0), 5));
    let mut forged = Datagram::decode(&echo).unwrap();
    if let Datagram::Hello(h) = &mut forged {
        h.nonce += 1;
    }
    assert!(fresh_challenge(server.handle(addr(1), &forged.encode(), t0), 6));
    assert!(matches!(server.handle(addr(1), &echo, t0 + Duration::from_secs(15)), Incoming::Join(_)));
    assert!(fresh_challenge(server.handle(addr(1), &echo, t0 + Duration::from_secs(25)), 5));
    // Another server (another random key) does not take this one's cookies.
    let mut other = SessionServer::new(ServerConfig::new(vec![door().checksum]), t0).expect("a valid session config");
    assert!(fresh_challenge(other.handle(addr(1), &echo, t0), 5));
    assert!(server.is_empty() && other.is_empty());
    assert_eq!(server.stats().bad_cookies, 3);
}

#[test]
fn datagrams_with_a_wrong_token_or_from_an_unknown_address_are_dropped_and_counted() {
    let layout = door();
    let mut server =
        SessionServer::new(ServerConfig::new(vec![layout.checksum]), Instant::now()).expect("a valid session config");
    let mut client = SessionClient::new(vec![layout.clone()], 1);
    let conn = ConnectionId(0);
    handshake(&mut server, &mut client, addr(7000), conn);
    let fb = client.feedback().unwrap();
    let mut wrong = fb.clone();
    wrong[1] ^= 1; // the token's first byte
    let now = Instant::now();
    assert_eq!(server.handle(addr(7000), &wrong, now), Incoming::Dropped(Dropped::BadToken));
    assert_eq!(server.handle(addr(7001), &fb, now), Incoming::Dropped(Dropped::UnknownAddress));
    let st = server.stats();
    assert_eq!((st.bad_token, st.unknown_address), (1, 1));

    // The client side: a packet under another token never reaches the world.
    let (_, mut packet) = server.packet(conn, &[1]).unwrap();
    packet[3] ^= 0x40;
    assert_eq!(client.handle(&packet), ClientIncoming::Dropped(shadowrep::session::client::ClientDropped::BadToken));
    assert_eq!(client.stats().bad_token, 1);
    // A challenge for another nonce is not for this client.
    let mut other = SessionClient::new(vec![layout], 2);
    let ch = Datagram::Challenge { nonce: 3, cookie: 4 }.encode();
    assert_eq!(other.handle(&ch), ClientIncoming::Dropped(shadowrep::session::client::ClientDropped::BadNonce));
}

#[test]
fn a_session_holder_cannot_ask_for_digests_faster_than_the_floor() {
    // Each digest request passed on may cost the game a digest of everything the client holds
    // (a helper's review: nothing limited them): one per MIN_DIGEST_INTERVAL goes on, the rest
    // are dropped and counted.
    let layout = door();
    let t0 = Instant::now();
    let mut server = SessionServer::new(ServerConfig::new(vec![layout.checksum]), t0).expect("a valid session config");
    let mut client = SessionClient::new(vec![layout], 1);
    let conn = ConnectionId(0);
    handshake(&mut server, &mut client, addr(7000), conn);
    let passed = |server: &mut SessionServer, client: &mut SessionClient, at: Instant| {
        (0..50)
            .filter(|&id| {
                let request = client.digest_request(id).unwrap();
                match server.handle(addr(7000), &request, at) {
                    Incoming::DigestRequest { conn: c, id: i } => c == conn && i == id,
                    Incoming::Dropped(Dropped::Throttled) => false,
                    other => panic!("{other:?}"),
                }
            })
            .count()
    };
    assert_eq!(passed(&mut server, &mut client, t0), 1, "the first of a burst");
    let soon = t0 + MIN_DIGEST_INTERVAL / 2;
    assert_eq!(passed(&mut server, &mut client, soon), 0, "none within the interval");
    assert_eq!(passed(&mut server, &mut client, t0 + MIN_DIGEST_INTERVAL), 1, "one once it has passed");
    assert_eq!(server.stats().digests_throttled, 148);
    // Feedback is never throttled.
    let fb = client.feedback().unwrap();
    assert!(matches!(server.handle(addr(7000), &fb, soon), Incoming::Feedback { .. }));
}

#[test]
fn a_mismatch_of_version_classes_or_checksums_is_rejected_with_its_reason() {
    let layout = door();
    let t = Instant::now();
    let mut server =
        SessionServer::new(ServerConfig::new(vec![layout.checksum, 99]), t).expect("a valid session config");
    // Checksum of class 1 differs.
    let other = Arc::new(ClassBuilder::new("Other").property(PropertyDecl::new("X", PropType::U8)).build().unwrap());
    let mut client = SessionClient::new(vec![layout.clone(), other], 1);
    let r = reply(server.handle(addr(1), &client.hello().unwrap(), t));
    assert_eq!(client.handle(&r), ClientIncoming::Rejected(RejectReason::Checksum { class: 1 }));
    assert!(client.hello().is_none(), "a rejected client stops");
    let m = RejectReason::Checksum { class: 1 }.to_string();
    assert!(m.starts_with("layout checksum mismatch at class 1: the builds do not interoperate"), "{m}");
    assert!(m.contains("in another order than the server registered them"), "{m}");
    // Class count.
    let mut one = SessionClient::new(vec![layout.clone()], 2);
    let r = reply(server.handle(addr(2), &one.hello().unwrap(), t));
    assert_eq!(one.handle(&r), ClientIncoming::Rejected(RejectReason::ClassCount { server: 2 }));
    // Version.
    let hello = Datagram::Hello(Hello {
        version: PROTOCOL_VERSION + 1,
        nonce: 3,
        cookie: None,
        checksums: vec![],
        ticket: None,
    });
    let r = reply(server.handle(addr(3), &hello.encode(), t));
    assert!(matches!(Datagram::decode(&r), Ok(Datagram::Reject { reason: RejectReason::Version, nonce: 3, .. })));
    assert!(server.is_empty());
    // A server that is full says so.
    let mut cfg = ServerConfig::new(vec![layout.checksum]);
    cfg.max_sessions = 1;
    let mut small = SessionServer::new(cfg, t).expect("a valid session config");
    handshake(&mut small, &mut SessionClient::new(vec![layout.clone()], 1), addr(1), ConnectionId(0));
    let mut late = SessionClient::new(vec![layout], 9);
    let ch = reply(small.handle(addr(2), &late.hello().unwrap(), t));
    late.handle(&ch);
    let r = reply(small.handle(addr(2), &late.hello().unwrap(), t));
    assert_eq!(late.handle(&r), ClientIncoming::Rejected(RejectReason::Full));
}

/// A server, two clients (one owning the actor: it gets the OwnerOnly key), everything applied.
#[test]
fn digests_agree_on_converged_clients_and_differ_when_a_change_was_missed() {
    let layout = door();
    let mut store = ClassStore::new(layout.clone());
    let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
    let class = driver.register_class(&mut store).unwrap();
    let conns = [driver.add_connection(false), driver.add_connection(false)];
    let mut clients: Vec<ClientWorld> =
        (0..2).map(|_| ClientWorld::new(std::slice::from_ref(&layout), &driver.checksums()).unwrap()).collect();
    let doors: Vec<ActorId> = (0..5).map(|_| store.spawn()).collect();
    for (i, &d) in doors.iter().enumerate() {
        store.set(d, 0, &Value::Bool(i % 2 == 0)).unwrap();
        store.set(d, 1, &Value::F32(i as f32 * 1.5)).unwrap();
        store.set(d, 2, &Value::U32(1000 + i as u32)).unwrap();
        store.set(d, 3, &Value::Vector([i as f32 * 10.123_456, -3.333_33, 0.5])).unwrap();
    }
    driver.set_owner(class, &store, doors[0], Some(conns[0]), false).unwrap();
    let run = |driver: &mut NetDriver, store: &mut ClassStore, clients: &mut [ClientWorld], deliver: bool| {
        driver.tick(&mut [store]).unwrap();
        for (c, &conn) in clients.iter_mut().zip(&conns) {
            for p in driver.take_packets(conn).unwrap() {
                if deliver {
                    c.receive(&p).unwrap();
                }
            }
            if deliver {
                driver.receive_feedback(conn, &c.feedback()).unwrap();
            }
        }
    };
    run(&mut driver, &mut store, &mut clients, true);
    let expected =
        |driver: &NetDriver, store: &ClassStore, i: usize| expected_digest(driver, conns[i], &[store]).unwrap();
    for i in 0..2 {
        assert_eq!(driver.in_flight(conns[i]), 0);
        let mine = client_digest(&clients[i]);
        assert_eq!(mine.actors, 5);
        assert_eq!(expected(&driver, &store, i), mine, "client {i}");
    }
    // The owner holds the key, the other the default: their digests differ.
    assert_ne!(client_digest(&clients[0]), client_digest(&clients[1]));

    // A change that never arrives: the server's digest moves, the client's does not.
    store.set(doors[3], 1, &Value::F32(99.0)).unwrap();
    run(&mut driver, &mut store, &mut clients, false);
    assert_ne!(expected(&driver, &store, 1), client_digest(&clients[1]));
    // A client value changed behind the driver's back (a bad apply) shows too.
    let before = client_digest(&clients[0]);
    store.set(doors[3], 1, &Value::F32(4.5)).unwrap(); // back to what client 0 holds
    run(&mut driver, &mut store, &mut clients, false);
    assert_eq!(expected(&driver, &store, 0), before);

    // Roles go in: client 0 possesses door 1 (an autonomous proxy there, simulated at client 1);
    // until the role reaches it the two sides differ, then agree again.
    run(&mut driver, &mut store, &mut clients, true);
    driver.set_owner(class, &store, doors[1], Some(conns[0]), true).unwrap();
    assert_ne!(expected(&driver, &store, 0), client_digest(&clients[0]), "the possession is not sent yet");
    assert_eq!(expected(&driver, &store, 1), client_digest(&clients[1]), "nothing changed for client 1");
    run(&mut driver, &mut store, &mut clients, true);
    for (i, client) in clients.iter().enumerate() {
        assert_eq!(expected(&driver, &store, i), client_digest(client), "client {i} after the possession");
    }
    let before = client_digest(&clients[0]);

    // A status the wire carries: Ready answers name the last packet sent.
    let mut server =
        SessionServer::new(ServerConfig::new(driver.checksums()), Instant::now()).expect("a valid session config");
    let mut c = SessionClient::new(vec![layout], 1);
    handshake(&mut server, &mut c, addr(1), conns[0]);
    let (_, d) = server.digest_answer(conns[0], 7, DigestStatus::Ready, Some(before)).unwrap();
    match c.handle(&d) {
        ClientIncoming::DigestAnswer(a) => {
            assert_eq!((a.id, a.status, a.actors, a.digest), (7, DigestStatus::Ready, 5, before.hash))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_session_that_times_out_is_told_so() {
    use shadowrep::session::DisconnectReason;
    let t0 = Instant::now();
    let cfg = ServerConfig::new(vec![door().checksum]);
    let idle = cfg.idle_timeout;
    let mut server = SessionServer::new(cfg, t0).expect("a valid session config");
    let (mut quiet, mut talking) = (SessionClient::new(vec![door()], 7), SessionClient::new(vec![door()], 8));
    handshake(&mut server, &mut quiet, addr(6000), ConnectionId(1));
    handshake(&mut server, &mut talking, addr(6001), ConnectionId(2));
    // One client goes on talking; the other falls silent past the idle timeout.
    let later = Instant::now() + idle + Duration::from_millis(10);
    let fb = talking.feedback().expect("connected");
    assert!(matches!(server.handle(addr(6001), &fb, later), Incoming::Feedback { .. }));
    let told = server.expire_with_notice(later);
    assert_eq!(told.len(), 1, "the silent one only");
    let (conn, to, bytes) = &told[0];
    assert_eq!((*conn, *to), (ConnectionId(1), addr(6000)));
    assert_eq!(quiet.handle(bytes), ClientIncoming::Disconnected(DisconnectReason::TimedOut));
    assert_eq!((server.len(), server.stats().ended), (1, 1));
    // Its datagrams now find no session.
    assert!(server.expire_with_notice(later).is_empty());
}

#[test]
fn a_session_config_takes_the_drivers_rate_and_refuses_zeros() {
    use shadowrep::net::ActorLevelConfig;
    use shadowrep::session::server::ServerConfigError;
    let now = Instant::now();
    let level = ActorLevelConfig { tick_rate: 60.0, ..ActorLevelConfig::default() };
    let mut driver = NetDriver::new(DriverConfig { actor_level: Some(level), ..DriverConfig::default() }).unwrap();
    driver.register_class(&mut ClassStore::new(door())).unwrap();
    assert_eq!(driver.actor_level_tick_rate(), Some(60.0));
    let cfg = ServerConfig::for_driver(&driver);
    assert_eq!((cfg.tick_rate, cfg.checksums.clone()), (60, driver.checksums()));
    assert!(SessionServer::new(cfg.clone(), now).is_ok());
    // Without an actor level: the default 30.
    let plain = NetDriver::new(DriverConfig::default()).unwrap();
    assert_eq!((plain.actor_level_tick_rate(), ServerConfig::for_driver(&plain).tick_rate), (None, 30));
    let zero_rate = ServerConfig { tick_rate: 0, ..cfg.clone() };
    let e = SessionServer::new(zero_rate, now).err().expect("refused");
    assert_eq!(e, ServerConfigError::ZeroTickRate);
    assert!(e.to_string().contains("ServerConfig::for_driver"), "{e}");
    let zero_idle = ServerConfig { idle_timeout: Duration::ZERO, ..cfg };
    assert_eq!(SessionServer::new(zero_idle, now).err(), Some(ServerConfigError::ZeroIdleTimeout));
}

#[test]
fn a_client_restarted_at_its_address_joins_again_at_once() {
    let layout = door();
    let mut server =
        SessionServer::new(ServerConfig::new(vec![layout.checksum]), Instant::now()).expect("a valid session config");
    let mut old = SessionClient::new(vec![layout.clone()], 1);
    handshake(&mut server, &mut old, addr(7300), ConnectionId(3));
    let now = Instant::now();
    // The game restarted on the same port: a new nonce, the cookie proves the address.
    let mut new = SessionClient::new(vec![layout], 2);
    let challenge = reply(server.handle(addr(7300), &new.hello().unwrap(), now));
    assert_eq!(new.handle(&challenge), ClientIncoming::Challenge);
    let echo = new.hello().unwrap();
    assert_eq!(server.handle(addr(7300), &echo, now), Incoming::Disconnected { conn: ConnectionId(3) });
    assert_eq!((server.len(), server.stats().restarts, server.stats().ended), (0, 1, 1));
    // The old session's datagrams are nobody's now; the next hello joins.
    let stale = old.feedback().unwrap();
    assert_eq!(server.handle(addr(7300), &stale, now), Incoming::Dropped(Dropped::UnknownAddress));
    let Incoming::Join(join) = server.handle(addr(7300), &echo, now) else { panic!("a join") };
    let welcome = server.accept(join, ConnectionId(4), now).expect("room");
    assert_eq!(new.handle(&welcome), ClientIncoming::Welcome);
    assert_eq!(server.addr_of(ConnectionId(4)), Some(addr(7300)));
    // A hello without the cookie, or with one for another nonce, ends nothing.
    let third = SessionClient::new(vec![door()], 9);
    assert!(fresh_challenge(server.handle(addr(7300), &third.hello().unwrap(), now), 9));
    let mut forged = Datagram::decode(&echo).unwrap();
    if let Datagram::Hello(h) = &mut forged {
        h.nonce = 9;
    }
    assert!(fresh_challenge(server.handle(addr(7300), &forged.encode(), now), 9));
    assert_eq!((server.len(), server.stats().restarts), (1, 1));
}

#[test]
fn a_client_that_hears_nothing_for_its_timeout_closes_its_session() {
    let layout = door();
    let mut server =
        SessionServer::new(ServerConfig::new(vec![layout.checksum]), Instant::now()).expect("a valid session config");
    let mut client = SessionClient::new(vec![layout], 1);
    let conn = ConnectionId(0);
    let t0 = Instant::now();
    let timeout = Duration::from_secs(3);
    assert_eq!(client.silent_for(t0), None, "not connected");
    let challenge = reply(server.handle(addr(7400), &client.hello().unwrap(), t0));
    client.handle_at(&challenge, t0);
    let Incoming::Join(join) = server.handle(addr(7400), &client.hello().unwrap(), t0) else { panic!("a join") };
    let welcome = server.accept(join, conn, t0).unwrap();
    assert_eq!(client.handle_at(&welcome, t0), ClientIncoming::Welcome);
    assert_eq!(client.silent_for(t0 + Duration::from_secs(1)), Some(Duration::from_secs(1)));
    // A packet two seconds in restarts the count; a datagram that is not the server's does not.
    let (_, packet) = server.packet(conn, &[1]).unwrap();
    client.handle_at(&packet, t0 + Duration::from_secs(2));
    let mut forged = packet.clone();
    forged[1] ^= 1;
    client.handle_at(&forged, t0 + Duration::from_secs(4));
    assert!(!client.expire(t0 + Duration::from_secs(5), timeout), "three seconds: not past the timeout");
    assert!(client.world().is_some());
    assert!(client.expire(t0 + Duration::from_millis(5_001), timeout));
    let timed_out = shadowrep::session::DisconnectReason::TimedOut;
    assert!(matches!(client.state(), shadowrep::session::ClientState::Closed(r) if *r == timed_out));
    assert_eq!(client.feedback(), None, "closed: nothing more to send");
    assert_eq!(client.silent_for(t0 + Duration::from_secs(6)), None);
    assert!(!client.expire(t0 + Duration::from_secs(60), timeout), "closed once");
}

#[test]
fn accept_with_opens_the_games_connection_only_for_a_session_it_makes() {
    let layout = door();
    let mut cfg = ServerConfig::new(vec![layout.checksum]);
    cfg.max_sessions = 1;
    let mut server = SessionServer::new(cfg, Instant::now()).expect("a valid session config");
    let now = Instant::now();
    // Three clients past the cookie before any is accepted: room for one.
    let mut joins = Vec::new();
    for (port, nonce) in [(7500, 1), (7501, 2), (7502, 3)] {
        let mut c = SessionClient::new(vec![layout.clone()], nonce);
        c.handle(&reply(server.handle(addr(port), &c.hello().unwrap(), now)));
        let Incoming::Join(j) = server.handle(addr(port), &c.hello().unwrap(), now) else { panic!("a join") };
        joins.push((c, j));
    }
    let mut opened = Vec::new();
    let mut open = |n: u32| {
        opened.push(n);
        Some(ConnectionId(n))
    };
    // The game has no room for the first: refused Full, no session.
    let (_, j) = &joins[0];
    let Err(reject) = server.accept_with(*j, now, || None) else { panic!("refused") };
    assert!(matches!(Datagram::decode(&reject), Ok(Datagram::Reject { reason: RejectReason::Full, nonce: 1, .. })));
    assert!(server.is_empty());
    let (c, j) = &mut joins[1];
    let Ok((conn, welcome)) = server.accept_with(*j, now, || open(8)) else { panic!("accepted") };
    assert_eq!(conn, ConnectionId(8));
    assert_eq!(c.handle(&welcome), ClientIncoming::Welcome);
    // The server is full now: the third is refused before the game opens anything.
    let (_, j) = &joins[2];
    let Err(reject) = server.accept_with(*j, now, || open(9)) else { panic!("refused") };
    assert!(matches!(Datagram::decode(&reject), Ok(Datagram::Reject { reason: RejectReason::Full, nonce: 3, .. })));
    // And a second join from a session's address names why.
    let (_, j) = &joins[1];
    let Err(reject) = server.accept_with(*j, now, || open(10)) else { panic!("refused") };
    assert!(matches!(Datagram::decode(&reject), Ok(Datagram::Reject { reason: RejectReason::AddressInUse, .. })));
    assert_eq!(opened, [8], "the game opened one connection, the one that got a session");
    assert_eq!((server.len(), server.stats().joins), (1, 1));
    assert_eq!(server.stats().rejects, 3, "each refusal counted");
}

#[test]
fn a_digest_answer_or_a_levels_ack_counts_as_hearing_from_the_server() {
    let layout = door();
    let mut server =
        SessionServer::new(ServerConfig::new(vec![layout.checksum]), Instant::now()).expect("a valid session config");
    let mut client = SessionClient::new(vec![layout], 1);
    let (conn, from, t0) = (ConnectionId(0), addr(7600), Instant::now());
    let timeout = Duration::from_secs(3);
    let challenge = reply(server.handle(from, &client.hello().unwrap(), t0));
    client.handle_at(&challenge, t0);
    let Incoming::Join(join) = server.handle(from, &client.hello().unwrap(), t0) else { panic!("a join") };
    assert_eq!(client.handle_at(&server.accept(join, conn, t0).unwrap(), t0), ClientIncoming::Welcome);
    // A digest answer two seconds in restarts the count…
    let (_, answer) = server.digest_answer(conn, 1, DigestStatus::Live, None).unwrap();
    let at = t0 + Duration::from_secs(2);
    assert!(matches!(client.handle_at(&answer, at), ClientIncoming::DigestAnswer(_)));
    assert_eq!(client.silent_for(at + Duration::from_secs(1)), Some(Duration::from_secs(1)));
    assert!(!client.expire(t0 + Duration::from_secs(5), timeout), "heard at two seconds");
    // …and so does a levels ack, at four.
    client.set_sublevel_loaded(shadowrep::net::SublevelId(1), true).unwrap();
    let levels = client.levels().unwrap();
    let Incoming::Levels { ack, .. } = server.handle(from, &levels, t0) else { panic!("levels") };
    let at = t0 + Duration::from_secs(4);
    assert!(matches!(client.handle_at(&ack, at), ClientIncoming::LevelsAcked(_)));
    assert_eq!(client.silent_for(at + Duration::from_secs(1)), Some(Duration::from_secs(1)));
    assert!(!client.expire(t0 + Duration::from_secs(7), timeout), "heard at four seconds");
    assert!(client.expire(t0 + Duration::from_millis(7_001), timeout));
}

#[test]
fn a_sealed_datagram_naming_a_plain_sessions_token_is_from_an_unknown_address() {
    // Only sealed sessions follow their client to a new address: a plain session's token,
    // in a sealed header from another address, finds no session (it is not even tried).
    let layout = door();
    let mut server =
        SessionServer::new(ServerConfig::new(vec![layout.checksum]), Instant::now()).expect("a valid session config");
    let mut client = SessionClient::new(vec![layout.clone()], 1);
    let now = Instant::now();
    let challenge = reply(server.handle(addr(7700), &client.hello().unwrap(), now));
    client.handle(&challenge);
    let Incoming::Join(join) = server.handle(addr(7700), &client.hello().unwrap(), now) else { panic!("a join") };
    let welcome = server.accept(join, ConnectionId(1), now).unwrap();
    assert_eq!(client.handle(&welcome), ClientIncoming::Welcome);
    // The session's own feedback (kind, token, payload) with the sealed bit set, long enough
    // to be a sealed datagram, sent from another address.
    let mut sealed = client.feedback().unwrap();
    sealed[0] |= 0x80;
    sealed.extend_from_slice(&[0; 48]);
    let forged = server.stats().forged;
    assert_eq!(server.handle(addr(7701), &sealed, now), Incoming::Dropped(Dropped::UnknownAddress));
    assert_eq!((server.stats().forged, server.addr_of(ConnectionId(1))), (forged, Some(addr(7700))));
}
