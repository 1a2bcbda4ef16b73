//! A minimal UDP client of `udp_server`: handshake, then apply packets and send feedback;
//! once a second, what it holds.
//!
//! ```sh
//! cargo run --release -p shadowrep --example udp_client -- 127.0.0.1:7777 --seconds 5 [--sealed]
//! ```

mod udp_common;

use shadowrep::session::{random_u64, ticket, ClientIncoming, SessionClient, SessionKeys, TicketKey, MAX_DATAGRAM};
use std::net::UdpSocket;
use std::time::{Duration, Instant};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (addr, run_for, sealed) = udp_common::args(5);
    let socket = UdpSocket::bind("127.0.0.1:0")?;
    socket.connect(addr)?;
    socket.set_read_timeout(Some(Duration::from_millis(50)))?;
    // The layouts must be the server's, in its class-id order: the hello carries their
    // checksums and the server refuses a mismatch.
    let layouts = vec![udp_common::ball_layout()];
    let mut client = if sealed {
        // What a game's backend does when it sends a player to a server: two fresh keys, and a
        // ticket for this player on that server, good for a minute, sent with the keys over
        // the backend's own secure channel.
        let key = TicketKey::from_bytes(udp_common::DEMO_TICKET_KEY);
        let keys = SessionKeys::generate()?;
        let expires = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_secs() + 60;
        let t = ticket::issue(&key, random_u64(), udp_common::DEMO_SERVER_ID, expires, &keys)?;
        SessionClient::with_ticket(layouts, random_u64(), t, &keys)?
    } else {
        SessionClient::new(layouts, random_u64())
    };
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let start = Instant::now();
    let (mut last_send, mut last_report) = (start - Duration::from_secs(1), start);
    let mut notifies = 0;

    while start.elapsed() < run_for {
        // Say hello (again, every 200 ms, until welcomed), or send feedback when it is due —
        // and every 100 ms anyway, so the server keeps hearing from us.
        let due = client.world().is_some_and(|w| w.feedback_due());
        if let Some(hello) = client.hello() {
            if last_send.elapsed() >= Duration::from_millis(200) {
                socket.send(&hello)?;
                last_send = Instant::now();
            }
        } else if due || last_send.elapsed() >= Duration::from_millis(100) {
            if let Some(feedback) = client.feedback() {
                socket.send(&feedback)?;
                last_send = Instant::now();
            }
        }

        if let Ok(n) = socket.recv(&mut buf) {
            match client.handle(&buf[..n]) {
                ClientIncoming::Challenge => last_send = start - Duration::from_secs(1), // echo at once
                ClientIncoming::Welcome => println!("welcomed by {addr}"),
                ClientIncoming::Rejected(reason) => return Err(format!("refused: {reason}").into()),
                ClientIncoming::Disconnected(reason) => {
                    println!("the server ended the session: {reason:?}");
                    break;
                }
                _ => {}
            }
        }
        // The server sends a settled client a keep-alive every few frames: three silent seconds
        // mean it (or the path) is gone.
        if client.expire(Instant::now(), Duration::from_secs(3)) {
            println!("the server went silent: the session is closed");
            break;
        }
        if let Some(world) = client.world_mut() {
            notifies += world.take_notifies().len();
            world.take_events();
            if last_report.elapsed() >= Duration::from_secs(1) {
                last_report = Instant::now();
                let s = world.stats();
                println!(
                    "{} balls, {} packets applied, {notifies} bounce notifies",
                    world.actor_count(),
                    s.packets_applied
                );
            }
        }
    }
    if let Some(bye) = client.disconnect() {
        socket.send(&bye)?;
    }
    Ok(())
}
