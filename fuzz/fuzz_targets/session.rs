//! The session layer's doors, coverage-guided: a sealed session open between a server and a
//! client (and a plain server beside it), then hostile datagrams, each one of:
//!
//! ```text
//! op 0  raw bytes to the sealed server, from the session's own address
//! op 1  raw bytes to the sealed client
//! op 2  raw bytes to the plain server (the handshake's doors), from another address
//! op 3  a rogue client's: the bytes given the session's token and sealed with the client's
//!       keys (a peer that holds the keys and sends anything), to the sealed server
//! op 4  a rogue server's, the same way, to the sealed client
//! ```
//!
//! Input: datagrams as in `split` (a `u16` length and its bytes), each led by its op byte.
//! Checks: no panic, bounded allocation (`-malloc_limit_mb`); raw bytes never open at either
//! end (the fuzzer has no key); and when no rogue datagram came, the session still works: a
//! packet of the server's opens at the client, the client's feedback at the server, and its
//! loaded sublevels too (the server's acknowledgement back at the client).
#![no_main]

use libfuzzer_sys::fuzz_target;
use shadowrep::net::{ConnectionId, SublevelId};
use shadowrep::schema::{ClassBuilder, PropType, PropertyDecl};
use shadowrep::session::{
    ticket, ClientIncoming, ClientState, Incoming, Sealer, ServerConfig, SessionClient, SessionKeys, SessionServer,
    TicketKey,
};
use shadowrep_fuzz::split;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

fuzz_target!(|data: &[u8]| {
    let layout = Arc::new(ClassBuilder::new("Thing").property(PropertyDecl::new("X", PropType::U32)).build().unwrap());
    let checksums = vec![layout.checksum];
    let key = TicketKey::from_bytes([9; 32]);
    let keys = SessionKeys { client_to_server: [1; 32], server_to_client: [2; 32] };
    let t = ticket::issue(&key, 1, 0, u64::MAX, &keys).unwrap();
    let t0 = Instant::now();
    let home = SocketAddr::from(([10, 0, 0, 1], 4000));
    let stranger = SocketAddr::from(([10, 0, 0, 2], 4000));
    let mut server = SessionServer::new(ServerConfig::new(checksums.clone()).sealed(key, 0), t0).expect("a valid session config");
    let mut client = SessionClient::with_ticket(vec![layout.clone()], 7, t, &keys).unwrap();
    let Incoming::Reply(ch) = server.handle(home, &client.hello().unwrap(), t0) else { panic!("challenge") };
    client.handle(&ch);
    let Incoming::Join(join) = server.handle(home, &client.hello().unwrap(), t0) else { panic!("join") };
    let conn = ConnectionId(0);
    let welcome = server.accept(join, conn, t0).unwrap();
    assert_eq!(client.handle(&welcome), ClientIncoming::Welcome);
    let ClientState::Connected { token, .. } = *client.state() else { panic!("connected") };
    let mut plain_server = SessionServer::new(ServerConfig::new(checksums), t0).expect("a valid session config");
    let (mut rogue_client, mut rogue_server) = (Sealer::client(&keys), Sealer::server(&keys));

    let mut rogue = false;
    for m in split(data).take(128) {
        let Some((&op, bytes)) = m.split_first() else { continue };
        match op % 5 {
            0 => {
                let r = server.handle(home, bytes, t0);
                assert!(
                    matches!(r, Incoming::Dropped(_) | Incoming::Reply(_)),
                    "raw bytes opened at the sealed server: {r:?}"
                );
                // Nor from elsewhere (where a datagram that opened would move the session).
                let r = server.handle(stranger, bytes, t0);
                assert!(
                    matches!(r, Incoming::Dropped(_) | Incoming::Reply(_)),
                    "raw bytes from another address opened at the sealed server: {r:?}"
                );
            }
            1 => {
                let r = client.handle(bytes);
                assert!(matches!(r, ClientIncoming::Dropped(_)), "raw bytes opened at the sealed client: {r:?}");
            }
            2 => {
                if let Incoming::Reply(r) = plain_server.handle(stranger, bytes, t0) {
                    assert!(r.len() <= bytes.len(), "a {} byte reply to {} bytes", r.len(), bytes.len());
                }
            }
            side => {
                let mut plain = bytes.to_vec();
                if plain.len() >= 9 {
                    plain[1..9].copy_from_slice(&token.to_le_bytes());
                }
                rogue = true;
                if side == 3 {
                    if let Some(sealed) = rogue_client.seal(&plain) {
                        let _ = server.handle(home, &sealed, t0);
                    }
                } else if let Some(sealed) = rogue_server.seal(&plain) {
                    let _ = client.handle(&sealed);
                }
            }
        }
    }
    if rogue {
        return;
    }
    // Nothing the fuzzer sent opened: the session goes on, where it was.
    let (to, p) = server.packet(conn, &[0]).expect("the session is open");
    assert_eq!(to, home, "the session moved");
    assert!(matches!(client.handle(&p), ClientIncoming::Packet(_)), "the server's packet no longer opens");
    let fb = client.feedback().expect("still connected");
    assert!(matches!(server.handle(home, &fb, t0), Incoming::Feedback { .. }), "the client's feedback no longer opens");
    // And the client's loaded sublevels reach the server, and its acknowledgement the client.
    client.set_sublevel_loaded(SublevelId(3), true).expect("one sublevel");
    let levels = client.levels().expect("an unacknowledged set");
    let Incoming::Levels { levels: got, ack, .. } = server.handle(home, &levels, t0) else {
        panic!("the client's levels no longer open")
    };
    assert_eq!(got, [SublevelId(3)]);
    assert!(matches!(client.handle(&ack), ClientIncoming::LevelsAcked(_)), "the server's ack no longer opens");
});
