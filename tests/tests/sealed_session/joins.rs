//! Sealed sessions across a restart, a new address and a ticket taken again: a client restarted
//! on its address ends its session only with a new ticket of its player, a session follows its
//! client to a new address (and nobody else), an ended session's ticket may join again, and
//! the list of taken tickets is capped.

use super::*;

/// What a sealed server answers a fresh client's hello with its cookie.
#[derive(Debug, PartialEq)]
enum Answer {
    Join(JoinRequest),
    Rejected(RejectReason),
    /// The hello ended the session at its address (a restart).
    Ended(ConnectionId),
}

/// A fresh client with ticket `t` says hello from `from`, echoes the cookie: the client and what
/// the server answered the echo.
fn hello_with_cookie(
    w: &mut World,
    from: SocketAddr,
    nonce: u64,
    (t, keys): &(Vec<u8>, SessionKeys),
) -> (SessionClient, Answer) {
    let now = Instant::now();
    let mut c = SessionClient::with_ticket(vec![crate_layout()], nonce, t.clone(), keys).unwrap();
    let Incoming::Reply(ch) = w.server.handle(from, &c.hello().unwrap(), now) else { panic!("a challenge") };
    assert_eq!(c.handle(&ch), ClientIncoming::Challenge);
    let answer = match w.server.handle(from, &c.hello().unwrap(), now) {
        Incoming::Join(j) => Answer::Join(j),
        Incoming::Disconnected { conn } => Answer::Ended(conn),
        Incoming::Reply(r) => match Datagram::decode(&r) {
            Ok(Datagram::Reject { reason, .. }) => Answer::Rejected(reason),
            other => panic!("a hello answered with {other:?}"),
        },
        other => panic!("a hello answered with {other:?}"),
    };
    (c, answer)
}

#[test]
fn a_sealed_session_follows_its_client_to_a_new_address_and_nobody_else() {
    let Opened { mut w, mut client, conn, .. } = open_session(12, 6100);
    let t0 = Instant::now();
    // The client's NAT gives it a new port: its next sealed datagram opens, and the session
    // (with the server's next packets) moves there.
    let fb = client.feedback().unwrap();
    assert!(matches!(w.server.handle(addr(6101), &fb, t0), Incoming::Feedback { conn: c, .. } if c == conn));
    assert_eq!(w.server.addr_of(conn), Some(addr(6101)));
    assert_eq!(w.server.stats().moved, 1);
    w.store.set(w.actor, 0, &Value::U32(31)).unwrap();
    for d in w.tick(conn) {
        assert!(matches!(client.handle(&d), ClientIncoming::Packet(Ok(Receipt::Applied { .. }))));
    }
    assert_eq!(w.server.packet(conn, &[1]).map(|(to, _)| to), Some(addr(6101)));
    assert_eq!(gold(&client), Some(Value::U32(31)));

    // A replay of that datagram from a third address is not the client: the session stays.
    assert_eq!(w.server.handle(addr(6102), &fb, t0), Incoming::Dropped(Dropped::Replayed));
    // Nor is an altered one, nor a plain one with the session's token.
    let mut altered = client.feedback().unwrap();
    let last = altered.len() - 1;
    altered[last] ^= 1;
    assert_eq!(w.server.handle(addr(6102), &altered, t0), Incoming::Dropped(Dropped::Forged));
    let token = u64::from_le_bytes(fb[1..9].try_into().unwrap());
    let plain = Datagram::Feedback { token, payload: &[0] }.encode();
    assert_eq!(w.server.handle(addr(6102), &plain, t0), Incoming::Dropped(Dropped::UnknownAddress));
    assert_eq!(w.server.addr_of(conn), Some(addr(6101)));
    assert_eq!(w.server.stats().moved, 1);

    // Back at the first port (the mapping flapped): the session follows again; the ticket
    // is held at the session's address only, so a copy from the port it left is refused.
    let fb = client.feedback().unwrap();
    assert!(matches!(w.server.handle(addr(6100), &fb, t0), Incoming::Feedback { .. }));
    assert_eq!((w.server.addr_of(conn), w.server.len(), w.server.stats().moved), (Some(addr(6100)), 1, 2));
}

#[test]
fn a_restarted_sealed_client_joins_again_with_a_new_ticket_and_an_ended_ticket_from_anywhere() {
    let Opened { mut w, key, ticket: (t, keys), conn, .. } = open_session(40, 6200);
    let t0 = Instant::now();
    // The session's own ticket again (a copier who receives at the address holds it too), or
    // another player's, cannot end it.
    let (_, same) = hello_with_cookie(&mut w, addr(6200), 6, &(t.clone(), keys));
    assert_eq!(same, Answer::Rejected(RejectReason::AddressInUse));
    let (_, other) = hello_with_cookie(&mut w, addr(6200), 7, &issue(&key, 41, unix_now() + 60));
    assert_eq!(other, Answer::Rejected(RejectReason::AddressInUse));
    assert_eq!((w.server.len(), w.server.stats().restarts), (1, 0));
    // A new ticket of the session's player ends it; the client's next hello joins.
    let fresh = issue(&key, 40, unix_now() + 60);
    let (mut second, ended) = hello_with_cookie(&mut w, addr(6200), 8, &fresh);
    assert_eq!(ended, Answer::Ended(conn));
    assert_eq!((w.server.len(), w.server.stats().restarts), (0, 1));
    w.driver.remove_connection(conn).unwrap();
    let Incoming::Join(join) = w.server.handle(addr(6200), &second.hello().unwrap(), t0) else { panic!("a join") };
    let conn2 = w.driver.add_connection(false);
    let welcome = w.server.accept(join, conn2, t0).unwrap();
    assert_eq!(second.handle(&welcome), ClientIncoming::Welcome);
    w.store.set(w.actor, 0, &Value::U32(77)).unwrap();
    for d in w.tick(conn2) {
        assert!(matches!(second.handle(&d), ClientIncoming::Packet(Ok(Receipt::Applied { .. }))));
    }
    assert_eq!(gold(&second), Some(Value::U32(77)));
    // The first ticket's session ended: it may join again, from another port.
    let (_, rejoin) = hello_with_cookie(&mut w, addr(6201), 9, &(t, keys));
    assert!(matches!(rejoin, Answer::Join(_)), "{rejoin:?}");
    // The second's ticket is held while its session lives.
    let (_, copy) = hello_with_cookie(&mut w, addr(6202), 10, &fresh);
    assert_eq!(copy, Answer::Rejected(RejectReason::Ticket(TicketRefusal::InUse)));
}

#[test]
fn a_moved_session_holds_its_ticket_at_its_new_address_only() {
    let Opened { mut w, key, ticket: (t, keys), mut client, conn, .. } = open_session(13, 6300);
    let t0 = Instant::now();
    let fb = client.feedback().unwrap();
    assert!(matches!(w.server.handle(addr(6301), &fb, t0), Incoming::Feedback { .. }));
    assert_eq!(w.server.addr_of(conn), Some(addr(6301)));
    // Whoever holds the port the session left (another host behind the NAT, given the old
    // mapping) and a copy of the ticket opens no second session on it.
    let (_, copied) = hello_with_cookie(&mut w, addr(6300), 6, &(t, keys));
    assert_eq!(copied, Answer::Rejected(RejectReason::Ticket(TicketRefusal::InUse)));
    assert_eq!(w.server.len(), 1);
    // Ended, the session's token names nothing: a late datagram of it from a third address is
    // from an unknown address, though another session lives where it was.
    let late = client.feedback().unwrap();
    w.server.disconnect(conn, shadowrep::session::DisconnectReason::Closed);
    let (t2, keys2) = issue(&key, 14, unix_now() + 60);
    let mut next = SessionClient::with_ticket(vec![crate_layout()], 7, t2, &keys2).unwrap();
    handshake(&mut w, &mut next, addr(6301));
    assert_eq!(w.server.handle(addr(6302), &late, t0), Incoming::Dropped(Dropped::UnknownAddress));
}

#[test]
fn the_list_of_taken_tickets_is_capped_and_forgets_the_expired() {
    use shadowrep::session::server::MAX_USED_TICKETS;
    let key = TicketKey::generate().unwrap();
    let mut w = World::new(&key);
    let t0 = Instant::now();
    // A hello past the cookie from `from` with ticket `t`: the join, or the reject's reason.
    let hello =
        |w: &mut World, from, nonce, ticket: &(Vec<u8>, SessionKeys)| match hello_with_cookie(w, from, nonce, ticket).1
        {
            Answer::Join(j) => Ok(j),
            Answer::Rejected(reason) => Err(reason),
            Answer::Ended(conn) => panic!("ended {conn:?}"),
        };
    let from = |i: usize| SocketAddr::from(([10, (i >> 16) as u8, (i >> 8) as u8, i as u8], 7000));
    // A session of ticket `claims` from `from(i)` on connection `i`, ended at once: the ticket
    // stays on the list until it expires.
    let take = |w: &mut World, i: usize, claims: ticket::TicketClaims| {
        let join = JoinRequest { addr: from(i), nonce: 1, ticket: Some(claims) };
        w.server.accept(join, ConnectionId(i as u32), t0).expect("room on the list");
        w.server.disconnect(ConnectionId(i as u32), shadowrep::session::DisconnectReason::Closed);
    };
    // The claims of a ticket that expired a minute ago, opened as if two minutes ago: the
    // server's clock (the wall clock) finds it expired at once, with no waiting.
    let expired = |player: u64| {
        let (t, _) = issue(&key, player, unix_now() - 60);
        ticket::open(&key, &t, SystemTime::now() - Duration::from_secs(120)).unwrap()
    };
    // A ticket taken and its session ended: it stays on the list until it expires.
    let known = issue(&key, 1, unix_now() + 60);
    let j = hello(&mut w, from(0), 1, &known).unwrap();
    w.server.accept(j, ConnectionId(0), t0).unwrap();
    w.server.disconnect(ConnectionId(0), shadowrep::session::DisconnectReason::Closed);
    // Its hello again, while the list has room: a join, accepted below once the list is full.
    let known_join = hello(&mut w, from(1), 2, &known).unwrap();
    // A new ticket's hello while the list has room, accepted once the list is full again.
    let late = hello(&mut w, from(2), 3, &issue(&key, 2, unix_now() + 60)).unwrap();
    // Fill the list but one with tickets good for a minute, the last place with an expired one.
    for i in 10..10 + MAX_USED_TICKETS - 2 {
        let (t, _) = issue(&key, 100 + i as u64, unix_now() + 60);
        take(&mut w, i, ticket::open(&key, &t, SystemTime::now()).unwrap());
    }
    take(&mut w, 3, expired(3));
    // Full, but a new ticket's hello forgets the expired one and finds room (it takes none).
    let admitted = hello(&mut w, from(4), 4, &issue(&key, 4, unix_now() + 60));
    assert!(admitted.is_ok(), "the hello forgets the expired tickets: {:?}", admitted.err());
    // Full again with another expired ticket: the accept forgets it and finds room.
    take(&mut w, 5, expired(5));
    assert!(w.server.accept(late, ConnectionId(2), t0).is_some(), "the accept forgets the expired tickets");
    // Full of live tickets: a new ticket is refused at the hello and at the accept; a ticket on
    // the list still joins.
    assert_eq!(hello(&mut w, from(6), 6, &issue(&key, 6, unix_now() + 60)).err(), Some(RejectReason::Full));
    assert!(w.server.accept(admitted.unwrap(), ConnectionId(4), t0).is_none(), "no room on the list");
    // (Its hello was refused Full too, until session 76's mutation pass found it.)
    assert!(hello(&mut w, from(7), 7, &known).is_ok(), "a ticket on the full list passes the hello");
    assert!(w.server.accept(known_join, ConnectionId(1), t0).is_some(), "already on the list");
}
