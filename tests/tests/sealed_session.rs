//! Sealed sessions (`shadowrep::session::{ticket, seal}`): a join ticket from the game's
//! backend opens a session whose datagrams only its two ends can read or write. Someone who
//! reads the traffic — and so the token — can neither inject a packet or feedback (plain or
//! sealed), nor alter one, nor replay one; tickets are checked at the door (missing, another
//! deployment's, expired, or offered to a server that does not seal).

use shadowrep::client::Receipt;
use shadowrep::net::{ConnectionId, DriverConfig, NetDriver};
use shadowrep::prelude::*;
use shadowrep::session::client::ClientDropped;
use shadowrep::session::server::{Dropped, JoinRequest};
use shadowrep::session::{
    ticket, ClientIncoming, Datagram, Incoming, RejectReason, ServerConfig, SessionClient, SessionKeys, SessionServer,
    TicketKey, TicketRefusal,
};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

fn crate_layout() -> Arc<ClassLayout> {
    Arc::new(
        ClassBuilder::new("Crate")
            .property(PropertyDecl::new("Gold", PropType::U32))
            .property(PropertyDecl::new("Open", PropType::Bool))
            .build()
            .expect("a valid layout"),
    )
}

/// The game server id the tests' tickets are issued for.
const SERVER: u64 = 4;

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// What the backend hands a player: a ticket good for a minute, and its keys.
fn issue(key: &TicketKey, player: u64, expires: u64) -> (Vec<u8>, SessionKeys) {
    let keys = SessionKeys::generate().unwrap();
    (ticket::issue(key, player, SERVER, expires, &keys).unwrap(), keys)
}

/// A server whose sessions are sealed with `key`, its driver and store, one crate actor.
struct World {
    server: SessionServer,
    driver: NetDriver,
    store: ClassStore,
    actor: ActorId,
}

impl World {
    fn new(key: &TicketKey) -> Self {
        let mut store = ClassStore::new(crate_layout());
        let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
        let class = driver.register_class(&mut store).unwrap();
        let actor = store.spawn();
        store.set(actor, 0, &Value::U32(10)).unwrap();
        driver.assign_guid(class, &store, actor).unwrap();
        let server =
            SessionServer::new(ServerConfig::new(driver.checksums()).sealed(key.clone(), SERVER), Instant::now())
                .expect("a valid session config");
        Self { server, driver, store, actor }
    }

    /// The server's datagrams for `conn` this tick.
    fn tick(&mut self, conn: ConnectionId) -> Vec<Vec<u8>> {
        self.driver.tick(&mut [&mut self.store]).unwrap();
        let packets = self.driver.take_packets(conn).unwrap();
        packets.iter().map(|p| self.server.packet(conn, p).unwrap().1).collect()
    }
}

/// The handshake of `client` from `from`; returns the join the server saw.
fn handshake(w: &mut World, client: &mut SessionClient, from: SocketAddr) -> (ConnectionId, JoinRequest) {
    let now = Instant::now();
    let Incoming::Reply(challenge) = w.server.handle(from, &client.hello().unwrap(), now) else {
        panic!("no challenge")
    };
    assert_eq!(client.handle(&challenge), ClientIncoming::Challenge);
    let Incoming::Join(join) = w.server.handle(from, &client.hello().unwrap(), now) else { panic!("no join") };
    let conn = w.driver.add_connection(false);
    let welcome = w.server.accept(join, conn, now).unwrap();
    assert_eq!(welcome[0], 0x84, "the welcome is sealed");
    assert_eq!(client.handle(&welcome), ClientIncoming::Welcome);
    (conn, join)
}

/// What [`open_session`] made: a sealed server's world, its ticket key (for more tickets), the
/// client's ticket and its keys (to join with it again), the client, its connection and the
/// join the server saw.
struct Opened {
    w: World,
    key: TicketKey,
    ticket: (Vec<u8>, SessionKeys),
    client: SessionClient,
    conn: ConnectionId,
    join: JoinRequest,
}

/// A sealed server's world and a client welcomed into it from `port` (nonce 5): a fresh key, a
/// ticket for `player`.
fn open_session(player: u64, port: u16) -> Opened {
    let key = TicketKey::generate().unwrap();
    let mut w = World::new(&key);
    let ticket = issue(&key, player, unix_now() + 60);
    let mut client = SessionClient::with_ticket(vec![crate_layout()], 5, ticket.0.clone(), &ticket.1).unwrap();
    let (conn, join) = handshake(&mut w, &mut client, addr(port));
    Opened { w, key, ticket, client, conn, join }
}

fn gold(client: &SessionClient) -> Option<Value> {
    let world = client.world()?;
    let (guid, _) = world.actors().next()?;
    world.value(guid, 0)
}

#[test]
fn a_sealed_session_carries_packets_and_feedback_only_its_ends_can_read() {
    let Opened { mut w, mut client, conn, join, .. } = open_session(77, 6000);
    assert_eq!(join.ticket.map(|c| c.player), Some(77), "the game learns whose session it is");

    w.store.set(w.actor, 0, &Value::U32(0x5eed_5eed)).unwrap();
    for d in w.tick(conn) {
        assert_eq!(d[0], 0x90, "a sealed packet");
        assert!(!d.windows(4).any(|b| b == 0x5eed_5eedu32.to_le_bytes()), "the value does not show");
        assert!(matches!(client.handle(&d), ClientIncoming::Packet(Ok(Receipt::Applied { .. }))));
    }
    assert_eq!(gold(&client), Some(Value::U32(0x5eed_5eed)));
    let fb = client.feedback().unwrap();
    assert_eq!(fb[0], 0x91, "sealed feedback");
    let Incoming::Feedback { conn: c, payload } = w.server.handle(addr(6000), &fb, Instant::now()) else {
        panic!("feedback expected")
    };
    assert_eq!(c, conn);
    w.driver.receive_feedback(conn, &payload).unwrap();
    assert_eq!(w.driver.in_flight(conn), 0);

    // Digest requests and answers, and the disconnect, ride sealed too.
    let req = client.digest_request(3).unwrap();
    let asked = Instant::now();
    assert_eq!(w.server.handle(addr(6000), &req, asked), Incoming::DigestRequest { conn, id: 3 });
    let (_, answer) = w.server.digest_answer(conn, 3, shadowrep::session::DigestStatus::Live, None).unwrap();
    assert!(matches!(client.handle(&answer), ClientIncoming::DigestAnswer(a) if a.id == 3));
    // Sealed or not, one request per MIN_DIGEST_INTERVAL goes on to the game.
    let again = client.digest_request(4).unwrap();
    let dropped = shadowrep::session::server::Dropped::Throttled;
    assert_eq!(w.server.handle(addr(6000), &again, asked), Incoming::Dropped(dropped));
    let later = asked + shadowrep::session::MIN_DIGEST_INTERVAL;
    let last = client.digest_request(5).unwrap();
    assert_eq!(w.server.handle(addr(6000), &last, later), Incoming::DigestRequest { conn, id: 5 });

    // Level visibility too: the set and its ack sealed, a replay of either dropped, the same
    // set plain (with the session's token, as one who reads the traffic would forge it) too.
    client.set_sublevel_loaded(shadowrep::net::SublevelId(4), true).unwrap();
    let levels = client.levels().unwrap();
    assert_eq!(levels[0], 0x95, "a sealed levels datagram");
    let token = u64::from_le_bytes(levels[1..9].try_into().unwrap());
    let plain = Datagram::Levels { token, seq: 9, levels: vec![shadowrep::net::SublevelId(2)] }.encode();
    assert_eq!(w.server.handle(addr(6000), &plain, later), Incoming::Dropped(Dropped::Unsealed));
    let Incoming::Levels { conn: c, levels: set, ack } = w.server.handle(addr(6000), &levels, later) else {
        panic!("levels expected")
    };
    assert_eq!((c, set), (conn, vec![shadowrep::net::SublevelId(4)]));
    assert_eq!(ack[0], 0x96, "a sealed ack");
    assert_eq!(w.server.handle(addr(6000), &levels, later), Incoming::Dropped(Dropped::Replayed));
    let plain_ack = Datagram::LevelsAck { token, seq: 1 }.encode();
    assert_eq!(client.handle(&plain_ack), ClientIncoming::Dropped(ClientDropped::Unsealed));
    assert!(client.levels().is_some(), "a forged ack silences nothing");
    assert_eq!(client.handle(&ack), ClientIncoming::LevelsAcked(1));
    assert_eq!(client.handle(&ack), ClientIncoming::Dropped(ClientDropped::Replayed));
    assert_eq!(client.levels(), None);

    let bye = client.disconnect().unwrap();
    assert_eq!(w.server.handle(addr(6000), &bye, Instant::now()), Incoming::Disconnected { conn });
}

#[test]
fn a_forger_who_reads_the_traffic_can_neither_inject_alter_nor_replay() {
    let Opened { mut w, mut client, conn, .. } = open_session(1, 6001);
    let first = w.tick(conn);
    for d in &first {
        assert!(matches!(client.handle(d), ClientIncoming::Packet(Ok(_))));
    }
    let fb = open_feedback(&mut w, &client.feedback().unwrap());
    w.driver.receive_feedback(conn, &fb).unwrap();
    assert_eq!(gold(&client), Some(Value::U32(10)));

    // The forger reads the token off any datagram (it rides in clear) and knows how the kernel
    // writes a packet: here, the server's own packet for another value, as a plain datagram.
    let token = u64::from_le_bytes(first[0][1..9].try_into().unwrap());
    w.store.set(w.actor, 0, &Value::U32(666)).unwrap();
    w.driver.tick(&mut [&mut w.store]).unwrap();
    let evil = w.driver.take_packets(conn).unwrap();
    for p in &evil {
        let plain = Datagram::Packet { token, payload: p }.encode();
        assert_eq!(client.handle(&plain), ClientIncoming::Dropped(ClientDropped::Unsealed));
    }
    assert_eq!(gold(&client), Some(Value::U32(10)), "nothing plain reaches the world");
    // A plain welcome (a downgrade) is refused the same way by a sealed client still connecting.
    let mut fresh = SessionClient::with_ticket(
        vec![crate_layout()],
        9,
        vec![0; ticket::TICKET_BYTES],
        &SessionKeys::generate().unwrap(),
    )
    .unwrap();
    let welcome = Datagram::Welcome { nonce: 9, token, tick_rate: 30, checksums: w.driver.checksums() }.encode();
    assert_eq!(fresh.handle(&welcome), ClientIncoming::Dropped(ClientDropped::Unsealed));
    assert!(fresh.world().is_none());

    // Sealed, but not with the session's key: every byte of a real one altered, a made-up tag.
    let real = w.server.packet(conn, &evil[0]).unwrap().1;
    for i in 0..real.len() {
        let mut bad = real.clone();
        bad[i] ^= 0x10;
        let r = client.handle(&bad);
        assert!(
            matches!(
                r,
                ClientIncoming::Dropped(ClientDropped::Forged | ClientDropped::Malformed | ClientDropped::BadToken)
            ),
            "byte {i}: {r:?}"
        );
    }
    assert_eq!(gold(&client), Some(Value::U32(10)));
    // The real one opens; again, it is a replay.
    assert!(matches!(client.handle(&real), ClientIncoming::Packet(Ok(_))));
    assert_eq!(client.handle(&real), ClientIncoming::Dropped(ClientDropped::Replayed));
    let st = client.stats();
    assert_eq!((st.unsealed, st.replayed, fresh.stats().unsealed), (evil.len() as u64, 1, 1));
    assert!(st.forged > real.len() as u64 / 2, "most altered bytes fail the tag ({} of {})", st.forged, real.len());

    // The server side: plain feedback or a plain disconnect with the token are dropped, and so
    // are an altered or replayed sealed one; the session lives on.
    let now = Instant::now();
    let plain_bye = Datagram::Disconnect { token, reason: shadowrep::session::DisconnectReason::Closed }.encode();
    assert_eq!(w.server.handle(addr(6001), &plain_bye, now), Incoming::Dropped(Dropped::Unsealed));
    let fb = client.feedback().unwrap();
    let plain_fb = Datagram::Feedback { token, payload: &[0x42] }.encode();
    assert_eq!(w.server.handle(addr(6001), &plain_fb, now), Incoming::Dropped(Dropped::Unsealed));
    let mut bad = fb.clone();
    *bad.last_mut().unwrap() ^= 1;
    assert_eq!(w.server.handle(addr(6001), &bad, now), Incoming::Dropped(Dropped::Forged));
    assert!(matches!(w.server.handle(addr(6001), &fb, now), Incoming::Feedback { .. }));
    assert_eq!(w.server.handle(addr(6001), &fb, now), Incoming::Dropped(Dropped::Replayed));
    let st = w.server.stats();
    assert_eq!((st.unsealed, st.forged, st.replayed, w.server.len()), (2, 1, 1, 1));
}

/// The feedback bytes inside a sealed feedback datagram, through the server.
fn open_feedback(w: &mut World, fb: &[u8]) -> Vec<u8> {
    let from = w.server.sessions().next().unwrap().1;
    match w.server.handle(from, fb, Instant::now()) {
        Incoming::Feedback { payload, .. } => payload.into_owned(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn tickets_are_checked_at_the_door() {
    let key = TicketKey::generate().unwrap();
    let mut w = World::new(&key);
    let layouts = vec![crate_layout()];
    let now = Instant::now();
    let rejected = |server: &mut SessionServer, client: &mut SessionClient, from: SocketAddr| {
        let mut r = None;
        for _ in 0..2 {
            match server.handle(from, &client.hello().unwrap(), now) {
                Incoming::Reply(b) => match client.handle(&b) {
                    ClientIncoming::Challenge => continue,
                    ClientIncoming::Rejected(why) => r = Some(why),
                    other => panic!("{other:?}"),
                },
                other => panic!("{other:?}"),
            }
            break;
        }
        r
    };
    // No ticket: refused at the first hello.
    let mut plain = SessionClient::new(layouts.clone(), 1);
    assert_eq!(rejected(&mut w.server, &mut plain, addr(1)), Some(RejectReason::Ticket(TicketRefusal::Missing)));
    // Another deployment's ticket, and an expired one: refused once the cookie came back.
    let (other, keys) = issue(&TicketKey::generate().unwrap(), 2, unix_now() + 60);
    let mut c = SessionClient::with_ticket(layouts.clone(), 2, other, &keys).unwrap();
    assert_eq!(rejected(&mut w.server, &mut c, addr(2)), Some(RejectReason::Ticket(TicketRefusal::Forged)));
    let (old, keys) = issue(&key, 3, unix_now().saturating_sub(1));
    let mut c = SessionClient::with_ticket(layouts.clone(), 3, old, &keys).unwrap();
    assert_eq!(rejected(&mut w.server, &mut c, addr(3)), Some(RejectReason::Ticket(TicketRefusal::Expired)));
    // A ticket for another server of the deployment (a copied hello taken elsewhere).
    let keys = SessionKeys::generate().unwrap();
    let elsewhere = ticket::issue(&key, 6, SERVER + 1, unix_now() + 60, &keys).unwrap();
    let mut c = SessionClient::with_ticket(layouts.clone(), 6, elsewhere, &keys).unwrap();
    assert_eq!(rejected(&mut w.server, &mut c, addr(6)), Some(RejectReason::Ticket(TicketRefusal::OtherServer)));
    // A ticket with a byte changed is another deployment's as far as the server can tell.
    let (mut t, keys) = issue(&key, 4, unix_now() + 60);
    t[40] ^= 1;
    let mut c = SessionClient::with_ticket(layouts.clone(), 4, t, &keys).unwrap();
    assert_eq!(rejected(&mut w.server, &mut c, addr(4)), Some(RejectReason::Ticket(TicketRefusal::Forged)));
    assert!(w.server.is_empty());
    // A sealed client at a server that does not seal is told so, not left on a plain session.
    let mut open_server =
        SessionServer::new(ServerConfig::new(w.driver.checksums()), now).expect("a valid session config");
    let (t, keys) = issue(&key, 5, unix_now() + 60);
    let mut c = SessionClient::with_ticket(layouts, 5, t, &keys).unwrap();
    assert_eq!(rejected(&mut open_server, &mut c, addr(5)), Some(RejectReason::Ticket(TicketRefusal::NotSealed)));
    assert_eq!(RejectReason::Ticket(TicketRefusal::Expired).to_string(), "the join ticket has expired");
}

#[test]
fn a_copied_ticket_opens_no_second_session_and_keeps_none_alive() {
    let key = TicketKey::generate().unwrap();
    let mut w = World::new(&key);
    let (t, keys) = issue(&key, 8, unix_now() + 60);
    let mut real = SessionClient::with_ticket(vec![crate_layout()], 5, t.clone(), &keys).unwrap();
    let t0 = Instant::now();
    let Incoming::Reply(ch) = w.server.handle(addr(7000), &real.hello().unwrap(), t0) else { panic!() };
    real.handle(&ch);
    let echo = real.hello().unwrap();
    let Incoming::Join(join) = w.server.handle(addr(7000), &echo, t0) else { panic!() };
    let conn = w.driver.add_connection(false);
    let welcome = w.server.accept(join, conn, t0).unwrap();
    assert_eq!(real.handle(&welcome), ClientIncoming::Welcome);

    // The eavesdropper replays the hello it saw — ticket and nonce — from its own address.
    let Incoming::Reply(ch) = w.server.handle(addr(7001), &echo, t0) else { panic!() };
    let Ok(Datagram::Challenge { cookie, .. }) = Datagram::decode(&ch) else { panic!() };
    let mut copied = Datagram::decode(&echo).unwrap();
    if let Datagram::Hello(h) = &mut copied {
        h.cookie = Some(cookie);
    }
    let Incoming::Reply(r) = w.server.handle(addr(7001), &copied.encode(), t0) else { panic!("a reply") };
    assert!(matches!(
        Datagram::decode(&r),
        Ok(Datagram::Reject { reason: RejectReason::Ticket(TicketRefusal::InUse), nonce: 5, .. })
    ));
    assert_eq!(w.server.len(), 1, "no second session on one ticket");
    // Two hellos with one ticket from two addresses, both past the cookie before either is
    // accepted: the second accept finds the ticket taken.
    let (t2, keys2) = issue(&key, 9, unix_now() + 60);
    let mut joins = Vec::new();
    for (port, nonce) in [(7100, 21), (7101, 22)] {
        let mut c = SessionClient::with_ticket(vec![crate_layout()], nonce, t2.clone(), &keys2).unwrap();
        let Incoming::Reply(ch) = w.server.handle(addr(port), &c.hello().unwrap(), t0) else { panic!() };
        c.handle(&ch);
        let Incoming::Join(j) = w.server.handle(addr(port), &c.hello().unwrap(), t0) else { panic!("a join") };
        joins.push(j);
    }
    assert!(w.server.accept(joins[0], ConnectionId(70), t0).is_some());
    assert_eq!(w.server.accept(joins[1], ConnectionId(71), t0), None, "the ticket is taken");
    w.server.disconnect(ConnectionId(70), shadowrep::session::DisconnectReason::Closed);

    // From the session's own address (spoofed), the echo gets the same welcome back — the same
    // bytes, no new keystream — and does not keep the session alive: only what opens does.
    for s in 1..=4 {
        let again = w.server.handle(addr(7000), &echo, t0 + Duration::from_secs(s));
        assert_eq!(again, Incoming::Reply(welcome.clone()));
    }
    let gone = w.server.expire(t0 + Duration::from_secs(6));
    assert_eq!(gone, vec![conn], "five idle seconds end it, hellos or not");

    // The ticket's owner may join again from its address: a new token, so a new welcome.
    let mut again = SessionClient::with_ticket(vec![crate_layout()], 5, t, &keys).unwrap();
    let (_, _) = handshake(&mut w, &mut again, addr(7000));
    let second = w.server.sessions().next().unwrap();
    assert_eq!(second.1, addr(7000));
    let a = w.server.packet(second.0, &[1, 2, 3]).unwrap().1;
    assert_ne!(a[1..9], welcome[1..9], "another session, another token");
}

#[test]
fn forged_handshake_replies_and_plain_endings_do_not_wedge_a_sealed_client() {
    let key = TicketKey::generate().unwrap();
    let mut w = World::new(&key);
    let (t, keys) = issue(&key, 3, unix_now() + 60);
    let mut client = SessionClient::with_ticket(vec![crate_layout()], 11, t, &keys).unwrap();
    let now = Instant::now();
    let Incoming::Reply(ch) = w.server.handle(addr(8000), &client.hello().unwrap(), now) else { panic!() };
    assert_eq!(client.handle(&ch), ClientIncoming::Challenge);
    // A forger on the path answers first with a cookie of its own: the server answers the
    // wrong cookie with a fresh challenge, and the handshake goes on.
    let forged = Datagram::Challenge { nonce: 11, cookie: 0xbad }.encode();
    assert_eq!(client.handle(&forged), ClientIncoming::Challenge);
    let Incoming::Reply(fresh) = w.server.handle(addr(8000), &client.hello().unwrap(), now) else {
        panic!("a fresh challenge")
    };
    assert_eq!(client.handle(&fresh), ClientIncoming::Challenge);
    let Incoming::Join(join) = w.server.handle(addr(8000), &client.hello().unwrap(), now) else { panic!("a join") };
    let conn = w.driver.add_connection(false);
    let welcome = w.server.accept(join, conn, now).unwrap();
    assert_eq!(client.handle(&welcome), ClientIncoming::Welcome);
    assert_eq!(w.server.stats().bad_cookies, 1);

    // A plain disconnect or digest answer with the session's token is a forger's.
    let token = u64::from_le_bytes(welcome[1..9].try_into().unwrap());
    let bye = Datagram::Disconnect { token, reason: shadowrep::session::DisconnectReason::Closed }.encode();
    assert_eq!(client.handle(&bye), ClientIncoming::Dropped(ClientDropped::Unsealed));
    let answer = shadowrep::session::frame::DigestAnswer {
        id: 1,
        status: shadowrep::session::DigestStatus::Ready,
        seq: 1,
        actors: 0,
        digest: 0,
    };
    let lie = Datagram::DigestAnswer { token, answer }.encode();
    assert_eq!(client.handle(&lie), ClientIncoming::Dropped(ClientDropped::Unsealed));
    assert!(client.world().is_some(), "still connected");
    for d in w.tick(conn) {
        assert!(matches!(client.handle(&d), ClientIncoming::Packet(Ok(_))));
    }
    assert_eq!(gold(&client), Some(Value::U32(10)));
    // A ticket of the wrong length is refused when the client is made, not dropped unanswered.
    assert!(SessionClient::with_ticket(vec![crate_layout()], 1, vec![0; 10], &keys).is_err());
}

#[test]
fn another_sessions_datagram_does_not_move_the_window() {
    // A first session on the ticket sends many packets, then ends.
    let Opened { mut w, ticket: (t, keys), conn, .. } = open_session(2, 9000);
    let old: Vec<Vec<u8>> = (0..300).map(|_| w.server.packet(conn, &[0]).unwrap().1).collect();
    w.server.disconnect(conn, shadowrep::session::DisconnectReason::Closed);
    // A second one from the same address (the same keys: the same ticket).
    let mut second = SessionClient::with_ticket(vec![crate_layout()], 6, t, &keys).unwrap();
    let (conn2, _) = handshake(&mut w, &mut second, addr(9000));
    // The first session's late packet, counter 300: another token, dropped before it is
    // opened — the window stays where the second session's own counters are.
    assert_eq!(second.handle(&old[299]), ClientIncoming::Dropped(ClientDropped::BadToken));
    for d in w.tick(conn2) {
        assert!(matches!(second.handle(&d), ClientIncoming::Packet(Ok(_))), "the session's own packets open");
    }
    assert_eq!(gold(&second), Some(Value::U32(10)));
}

/// A session's restarts, moves and tickets taken again (session 76).
#[path = "sealed_session/joins.rs"]
mod joins;
