//! A minimal UDP server: 200 bouncing balls at 30 Hz, any number of clients.
//!
//! ```sh
//! cargo run --release -p shadowrep --example udp_server -- 127.0.0.1:7777 --seconds 10
//! cargo run --release -p shadowrep --example udp_client -- 127.0.0.1:7777 --seconds 5
//! ```
//!
//! With `--sealed` on both, the session is sealed: the client brings a join ticket (here it
//! issues its own under the demo key, as a game's backend would) and every datagram from the
//! welcome on is encrypted and authenticated.
//!
//! One thread: wait for datagrams until the next tick (the session layer answers the handshake
//! and hands over feedback), move the balls, tick the driver, send each session its packets.

mod udp_common;

use shadowrep::net::{DriverConfig, NetDriver};
use shadowrep::prelude::*;
use shadowrep::session::{
    DigestStatus, DisconnectReason, Incoming, ServerConfig, SessionServer, TicketKey, MAX_DATAGRAM,
};
use std::net::UdpSocket;
use std::time::{Duration, Instant};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (addr, run_for, sealed) = udp_common::args(10);
    let mut balls = ClassStore::new(udp_common::ball_layout());
    let mut driver = NetDriver::new(DriverConfig::default())?;
    driver.register_class(&mut balls)?;
    let ids: Vec<ActorId> = (0..200).map(|_| balls.spawn()).collect();

    let socket = UdpSocket::bind(addr)?;
    let start = Instant::now();
    let mut cfg = ServerConfig::for_driver(&driver);
    if sealed {
        cfg = cfg.sealed(TicketKey::from_bytes(udp_common::DEMO_TICKET_KEY), udp_common::DEMO_SERVER_ID);
    }
    let mut sessions = SessionServer::new(cfg, start)?;
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let tick = Duration::from_secs_f64(1.0 / 30.0);
    let mut next_tick = start;
    println!("serving 200 balls on {} for {:?}", socket.local_addr()?, run_for);

    while start.elapsed() < run_for {
        // Datagrams until the next tick is due.
        let now = Instant::now();
        if now < next_tick {
            socket.set_read_timeout(Some(next_tick - now))?;
            let Ok((n, from)) = socket.recv_from(&mut buf) else { continue };
            match sessions.handle(from, &buf[..n], Instant::now()) {
                Incoming::Reply(bytes) => drop(socket.send_to(&bytes, from)),
                // The connection is opened only for a session that will be made.
                Incoming::Join(join) => {
                    match sessions.accept_with(join, Instant::now(), || Some(driver.add_connection(false))) {
                        Ok((conn, welcome)) => {
                            drop(socket.send_to(&welcome, from));
                            println!("{from} joined as connection {}", conn.0);
                        }
                        Err(reject) => drop(socket.send_to(&reject, from)),
                    }
                }
                Incoming::Feedback { conn, payload } => {
                    // Feedback from the network may be malformed: the driver refuses it.
                    let _ = driver.receive_feedback(conn, &payload);
                }
                Incoming::DigestRequest { conn, id } => {
                    // This world never freezes: its digest would be stale by the time it arrives.
                    if let Some((to, bytes)) = sessions.digest_answer(conn, id, DigestStatus::Live, None) {
                        drop(socket.send_to(&bytes, to));
                    }
                }
                Incoming::Levels { conn, levels, ack } => {
                    // The sublevels the client streamed in, applied by a streaming world's
                    // driver, then acknowledged ("applied"). This world has no actor level, so
                    // the driver refuses the set, and the client is not told it was applied.
                    if driver.set_loaded_sublevels(conn, &levels).is_ok() {
                        drop(socket.send_to(&ack, from));
                    }
                }
                Incoming::Disconnected { conn } => {
                    driver.remove_connection(conn)?;
                    println!("connection {} left", conn.0);
                }
                Incoming::Dropped(_) => {}
            }
            continue;
        }

        // One frame: the game moves the balls, the driver replicates.
        let t = start.elapsed().as_secs_f32();
        for (i, &id) in ids.iter().enumerate() {
            let phase = t + i as f32 * 0.1;
            let height = (phase * 3.0).sin().abs() * 500.0;
            balls.set(id, 0, &Value::Vector([i as f32 * 100.0, 0.0, height]))?;
            if height < 15.0 {
                balls.set(id, 1, &Value::U32((phase * 3.0 / std::f32::consts::PI) as u32))?;
            }
        }
        driver.tick(&mut [&mut balls])?;
        // Connections the driver ended itself (a client that acknowledged none of its reliable
        // calls for too long, UE's reliable buffer overflow) are gone already: end their
        // sessions, telling the clients why.
        for failed in driver.take_failed_connections() {
            if let Some((to, bytes)) = sessions.disconnect(failed.conn, DisconnectReason::ReliableOverflow) {
                drop(socket.send_to(&bytes, to));
            }
        }
        let conns: Vec<_> = sessions.sessions().map(|(conn, _)| conn).collect();
        for conn in conns {
            for packet in driver.take_packets(conn)? {
                if let Some((to, bytes)) = sessions.packet(conn, &packet) {
                    drop(socket.send_to(&bytes, to));
                }
            }
        }
        // Clients not heard from for the idle timeout: told so, and their connections removed.
        for (conn, to, bytes) in sessions.expire_with_notice(Instant::now()) {
            drop(socket.send_to(&bytes, to));
            driver.remove_connection(conn)?;
        }
        next_tick += tick;
    }
    println!("done: {:?}", sessions.stats());
    Ok(())
}
