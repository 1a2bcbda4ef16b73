//! A seeded fuzz of the session layer's doors: `Datagram::decode`, `SessionServer::handle` and
//! `SessionClient::handle`, on random bytes and on mutants of every kind of valid datagram
//! (bit flips, truncation, extension, overwritten bytes, huge counts). For every input: no
//! panic; no more than 64 KiB allocated on top of what was live (the global allocator is
//! capped around each call); the server never opens a session without a valid cookie and never
//! answers with more bytes than it got; a client never gets a world from bytes that are not
//! the server's welcome. A sealed pair (a session open between them) takes the same inputs
//! and mutants of its own sealed datagrams: none opens but the real ones, the first time.
//!
//! `SHADOWREP_FUZZ_MUTANTS=N` sets the number of inputs (default 200 000). This binary holds
//! one test, so the allocation cap sees nothing else.

use cap::Cap;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use shadowrep::net::SublevelId;
use shadowrep::schema::{ClassBuilder, PropType, PropertyDecl};
use shadowrep::session::frame::{DigestAnswer, Hello, MAX_DATAGRAM, PROTOCOL_VERSION};
use shadowrep::session::{
    ticket, ClientIncoming, Datagram, DigestStatus, DisconnectReason, Incoming, RejectReason, ServerConfig,
    SessionClient, SessionKeys, SessionServer, TicketKey,
};
use std::alloc;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

#[global_allocator]
static ALLOCATOR: Cap<alloc::System> = Cap::new(alloc::System, usize::MAX);

const ALLOCATION_BUDGET: usize = 64 << 10;

fn capped<T>(f: impl FnOnce() -> T) -> T {
    shadowrep_tests::capped(&ALLOCATOR, ALLOCATION_BUDGET, f)
}

fn seeds() -> Vec<Vec<u8>> {
    let payload = [0x11u8; 40];
    [
        Datagram::Hello(Hello { version: 1, nonce: 7, cookie: None, checksums: vec![1, 2], ticket: None }),
        Datagram::Hello(Hello { version: 1, nonce: 7, cookie: Some(3), checksums: vec![1; 40], ticket: None }),
        Datagram::Challenge { nonce: 7, cookie: 3 },
        Datagram::Welcome { nonce: 7, token: 5, tick_rate: 30, checksums: vec![1, 2] },
        Datagram::Reject { nonce: 7, reason: RejectReason::ClassCount { server: 2 }, server_version: 1 },
        Datagram::Packet { token: 5, payload: &payload },
        Datagram::Feedback { token: 5, payload: &payload },
        Datagram::DigestRequest { token: 5, id: 1 },
        Datagram::DigestAnswer {
            token: 5,
            answer: DigestAnswer { id: 1, status: DigestStatus::Ready, seq: 3, actors: 4, digest: 5 },
        },
        Datagram::Disconnect { token: 5, reason: DisconnectReason::Closed },
        Datagram::Levels { token: 5, seq: 2, levels: vec![SublevelId(1), SublevelId(4), SublevelId(900)] },
        Datagram::LevelsAck { token: 5, seq: 2 },
    ]
    .iter()
    .map(Datagram::encode)
    .collect()
}

fn mutate(rng: &mut ChaCha8Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    if rng.random_bool(0.2) {
        let n = rng.random_range(0..MAX_DATAGRAM + 16);
        let mut v = vec![0u8; n];
        rng.fill(&mut v[..]);
        if let Some(first) = v.first_mut() {
            *first = rng.random_range(0..0x18); // mostly real type bytes
        }
        return v;
    }
    let mut v = seeds[rng.random_range(0..seeds.len())].clone();
    for _ in 0..rng.random_range(1..4) {
        match rng.random_range(0..5) {
            0 if !v.is_empty() => {
                let i = rng.random_range(0..v.len());
                v[i] ^= 1 << rng.random_range(0..8);
            }
            1 => v.truncate(rng.random_range(0..=v.len())),
            2 => {
                let extra = rng.random_range(0..64);
                v.extend((0..extra).map(|_| rng.random::<u8>()));
            }
            3 if v.len() > 12 => {
                // A count field blown up (the checksum count of a hello or welcome).
                let i = rng.random_range(1..v.len() - 2);
                v[i] = 0xff;
                v[i + 1] = 0xff;
            }
            _ if !v.is_empty() => {
                let i = rng.random_range(0..v.len());
                v[i] = rng.random();
            }
            _ => {}
        }
    }
    v
}

#[test]
fn the_session_layer_survives_random_and_mutated_datagrams() {
    let n: usize = std::env::var("SHADOWREP_FUZZ_MUTANTS").ok().and_then(|s| s.parse().ok()).unwrap_or(200_000);
    let layout = Arc::new(ClassBuilder::new("Thing").property(PropertyDecl::new("X", PropType::U32)).build().unwrap());
    let t0 = Instant::now();
    let mut server = SessionServer::new(ServerConfig::new(vec![1, 2]), t0).expect("a valid session config");
    let mut client = SessionClient::new(vec![layout.clone()], 7);
    let seeds = seeds();
    let mut rng = ChaCha8Rng::seed_from_u64(10);
    let mut decoded = 0usize;

    // A sealed session, open: its real datagrams join the seeds (each opens once, as itself).
    let key = TicketKey::from_bytes([3; 32]);
    let keys = SessionKeys::generate().unwrap();
    let t = ticket::issue(&key, 1, 0, u64::MAX, &keys).unwrap();
    let mut sealed_server = SessionServer::new(ServerConfig::new(layout_checksums(&layout)).sealed(key, 0), t0)
        .expect("a valid session config");
    let mut sealed_client = SessionClient::with_ticket(vec![layout.clone()], 7, t.clone(), &keys).unwrap();
    let home = SocketAddr::from(([10, 9, 9, 9], 4000));
    let Incoming::Reply(ch) = sealed_server.handle(home, &sealed_client.hello().unwrap(), t0) else { panic!() };
    sealed_client.handle(&ch);
    let Incoming::Join(join) = sealed_server.handle(home, &sealed_client.hello().unwrap(), t0) else { panic!() };
    let conn = shadowrep::net::ConnectionId(0);
    let welcome = sealed_server.accept(join, conn, t0).unwrap();
    assert_eq!(sealed_client.handle(&welcome), ClientIncoming::Welcome);
    let mut seeds = seeds;
    seeds.push(sealed_client.feedback().unwrap());
    seeds.push(sealed_client.digest_request(4).unwrap());
    sealed_client.set_sublevel_loaded(SublevelId(3), true).unwrap();
    seeds.push(sealed_client.levels().unwrap());
    seeds.push(sealed_server.packet(conn, &[0x11; 40]).unwrap().1);
    seeds.push(welcome);
    seeds.push(
        Datagram::Hello(shadowrep::session::frame::Hello {
            version: PROTOCOL_VERSION,
            nonce: 8,
            cookie: Some(1),
            checksums: vec![1],
            ticket: Some(t),
        })
        .encode(),
    );
    // Each real sealed datagram, once: the first time it opens, then it is a replay.
    let mut opened = 0usize;
    for i in 0..n {
        let bytes = mutate(&mut rng, &seeds);
        match capped(|| sealed_server.handle(home, &bytes, t0)) {
            Incoming::Feedback { .. } | Incoming::DigestRequest { .. } | Incoming::Levels { .. } => opened += 1,
            Incoming::Disconnected { .. } => panic!("a forged disconnect ended the sealed session"),
            Incoming::Join(_) => panic!("a join from the sealed session's own address"),
            Incoming::Reply(r) => assert!(r.len() <= bytes.len()),
            Incoming::Dropped(_) => {}
        }
        // The same bytes from elsewhere: opened at home already (a replay now) or never to
        // open, they cannot move the sealed session to another address.
        let elsewhere = SocketAddr::from(([10, 8, (i >> 8) as u8, i as u8], 4000));
        match capped(|| sealed_server.handle(elsewhere, &bytes, t0)) {
            Incoming::Reply(r) => assert!(r.len() <= bytes.len()),
            Incoming::Dropped(_) => {}
            other => panic!("a datagram from another address was taken as the sealed session's: {other:?}"),
        }
        match capped(|| sealed_client.handle(&bytes)) {
            ClientIncoming::Packet(_) => opened += 1,
            ClientIncoming::DigestAnswer(_)
            | ClientIncoming::LevelsAcked(_)
            | ClientIncoming::Disconnected(_)
            | ClientIncoming::Welcome => {
                panic!("a forged datagram opened in the sealed session")
            }
            _ => {}
        }
        let from = SocketAddr::from(([10, 0, (i >> 8) as u8, i as u8], 4000));
        if capped(|| Datagram::decode(&bytes)).is_ok() {
            decoded += 1;
        }
        match capped(|| server.handle(from, &bytes, t0)) {
            Incoming::Reply(r) => assert!(r.len() <= bytes.len(), "a {} byte reply to {} bytes", r.len(), bytes.len()),
            Incoming::Join(j) => panic!("a join without a cookie this server gave: {j:?}"),
            Incoming::Feedback { .. }
            | Incoming::DigestRequest { .. }
            | Incoming::Levels { .. }
            | Incoming::Disconnected { .. } => {
                panic!("a session datagram accepted with no session open")
            }
            Incoming::Dropped(_) => {}
        }
        match capped(|| client.handle(&bytes)) {
            // The seeds' nonce is the client's: a mutated welcome or reject may still be one.
            ClientIncoming::Welcome | ClientIncoming::Rejected(_) | ClientIncoming::Failed(_) => {
                client = SessionClient::new(vec![layout.clone()], 7);
            }
            _ => {}
        }
    }
    assert!(server.is_empty());
    assert_eq!(server.stats().joins, 0);
    // Only the seeds themselves, unmutated, ever open — each at most once.
    assert!(opened <= 4, "{opened} sealed datagrams opened: a mutant passed the tag or a replay the window");
    assert!(sealed_client.world().is_some() && sealed_server.len() == 1);
    assert_eq!(sealed_server.addr_of(conn), Some(home), "the sealed session never moved");
    assert_eq!(sealed_server.stats().moved, 0);
    // Enough of the mutants decode that the validation past the type byte is exercised.
    assert!(decoded > n / 10, "only {decoded} of {n} inputs decoded");
}

/// The checksums a driver with `layout` as its one class would send.
fn layout_checksums(layout: &shadowrep::schema::ClassLayout) -> Vec<u64> {
    vec![layout.checksum]
}
