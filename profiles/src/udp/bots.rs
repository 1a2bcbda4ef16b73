//! `shadowrep bots`: N headless clients in one process, each with its own UDP socket (so the
//! server sees N addresses), on one thread.
//!
//! ```text
//! every bot: hello (again every 200 ms until answered; at once with the cookie after a
//!            challenge) → welcome → ClientWorld
//! loop until --seconds:
//!   per bot: every datagram waiting on its socket (each dropped with probability --loss,
//!            seeded) → SessionClient::handle; events and notifies counted and cleared
//!            feedback when the world says it is due, at most once a 60 Hz frame as a game
//!            client's, and at least every 100 ms (so the server keeps hearing from it); a digest request every 200 ms; sends dropped with
//!            probability --loss too; now and then (every 0.2–0.8 s, not in the last second)
//!            the player aims or sprints: ShooterGame's ServerSetTargeting / ServerSetRunning
//!            on its own character (the actor it holds as autonomous proxy), reliable Server
//!            calls riding the next feedback, and another whenever the server's packets have
//!            not acknowledged them within a round trip and a half (`server_calls_resent`)
//!   a pass that received nothing sleeps 1 ms; once a second a line on stderr
//! a digest answer is conclusive when `ready` and the bot has exactly the packets up to the
//! one it names: the bot then compares it with the digest of its own world (its verdict is
//! the last conclusive comparison)
//! ```
//!
//! The report counts the calls made and those the server had not acknowledged at the end (none,
//! after the quiet last second, on a link that works); `shadowrep serve` counts those it took:
//! each reliable call exactly once, so the two agree.

use super::PerSecond;
use clap::Args;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use shadowrep::client::NetRole;
use shadowrep::client::Receipt;
use shadowrep::session::frame::DigestAnswer;
use shadowrep::session::{
    client_digest, random_u64, ticket, ClientIncoming, ClientState, DigestStatus, SessionClient, SessionKeys,
    MAX_DATAGRAM,
};
use shadowrep_benches::scenario::Kind;
use shadowrep_layouts::classes::ShooterCharacter;
use std::io::ErrorKind;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[derive(Args, Clone)]
pub struct BotsArgs {
    /// The server's address.
    #[arg(long)]
    connect: SocketAddr,
    /// Bots (one UDP socket and one session each).
    #[arg(long, default_value_t = 10, value_parser = crate::positive)]
    count: usize,
    /// Fraction of datagrams dropped at the socket, both ways (0..1, seeded).
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    /// Seconds to run.
    #[arg(long, default_value_t = 20.0)]
    seconds: f64,
    /// RNG seed of the losses.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Join sealed sessions: play the game's backend and issue each bot a join ticket under
    /// this key (64 hexadecimal digits, the server's `--ticket-key`), good for a minute.
    #[arg(long, value_parser = super::ticket_key_arg, value_name = "HEX")]
    ticket_key: Option<shadowrep::session::TicketKey>,
    /// With --ticket-key: the id of the server the tickets are for (its `--server-id`).
    #[arg(long, default_value_t = 1)]
    server_id: u64,
}

const HELLO_INTERVAL: Duration = Duration::from_millis(200);
const FEEDBACK_INTERVAL: Duration = Duration::from_millis(100);
/// A bot's frame: feedback due goes at most once a frame, as a game client's does (its world
/// counts its reliable calls' round trip in feedbacks; a bot polling every millisecond sent one
/// each pass while a call waited, a clock 30 times too fast).
const CLIENT_FRAME: Duration = Duration::from_micros(16_667);
const DIGEST_INTERVAL: Duration = Duration::from_millis(200);
/// The shortest and longest wait between a bot's calls, ms.
const CALL_INTERVAL_MS: (u64, u64) = (200, 800);
/// The last part of the run makes no calls, so those made are acknowledged by its end.
const CALLS_QUIET_TAIL: Duration = Duration::from_secs(1);

/// Counters over all bots.
#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    datagrams_in: u64,
    bytes_in: u64,
    packets_applied: u64,
    packets_refused: u64,
    dropped_in: u64,
    dropped_out: u64,
    notifies: u64,
    spawned: u64,
    destroyed: u64,
    feedback_sent: u64,
    digest_checks: u64,
    digest_inconclusive: u64,
    /// Server calls made, and refused by the client (too many waiting).
    calls_made: u64,
    calls_refused: u64,
}

impl Counters {
    fn minus(self, o: Counters) -> Counters {
        Counters {
            datagrams_in: self.datagrams_in - o.datagrams_in,
            bytes_in: self.bytes_in - o.bytes_in,
            packets_applied: self.packets_applied - o.packets_applied,
            packets_refused: self.packets_refused - o.packets_refused,
            dropped_in: self.dropped_in - o.dropped_in,
            dropped_out: self.dropped_out - o.dropped_out,
            notifies: self.notifies - o.notifies,
            spawned: self.spawned - o.spawned,
            destroyed: self.destroyed - o.destroyed,
            feedback_sent: self.feedback_sent - o.feedback_sent,
            digest_checks: self.digest_checks - o.digest_checks,
            digest_inconclusive: self.digest_inconclusive - o.digest_inconclusive,
            calls_made: self.calls_made - o.calls_made,
            calls_refused: self.calls_refused - o.calls_refused,
        }
    }
}

struct Bot {
    socket: UdpSocket,
    client: SessionClient,
    rng: ChaCha8Rng,
    last_hello: Option<Instant>,
    last_feedback: Instant,
    last_digest: Instant,
    next_digest_id: u32,
    /// The last conclusive comparison: (matched, actors the server named, actors held).
    verdict: Option<(bool, u32, u32)>,
    /// When the player next aims or sprints, and whether it aims and sprints now.
    next_call: Instant,
    aiming: bool,
    running: bool,
}

impl Bot {
    /// Sends `d` unless the loss drops it.
    fn send(&mut self, d: &[u8], loss: f64, c: &mut Counters) {
        if loss > 0.0 && self.rng.random_bool(loss) {
            c.dropped_out += 1;
        } else {
            // A send refused by the socket (the server is not up yet) is a loss too.
            let _ = self.socket.send(d);
        }
    }

    fn handle(&mut self, bytes: &[u8], loss: f64, c: &mut Counters, now: Instant) {
        match self.client.handle(bytes) {
            ClientIncoming::Challenge => {
                if let Some(h) = self.client.hello() {
                    self.last_hello = Some(now);
                    self.send(&h, loss, c);
                }
            }
            ClientIncoming::Packet(Ok(Receipt::Applied { .. })) => c.packets_applied += 1,
            ClientIncoming::Packet(Ok(Receipt::Dropped(_))) => {}
            ClientIncoming::Packet(Err(_)) => c.packets_refused += 1,
            ClientIncoming::DigestAnswer(a) => self.check(a, c),
            _ => {}
        }
        if let Some(w) = self.client.world_mut() {
            c.notifies += w.take_notifies().len() as u64;
            for e in w.take_events() {
                match e {
                    shadowrep::client::ClientEvent::Spawned { .. } => c.spawned += 1,
                    shadowrep::client::ClientEvent::Destroyed { .. } => c.destroyed += 1,
                    _ => {}
                }
            }
        }
    }

    fn check(&mut self, a: DigestAnswer, c: &mut Counters) {
        let Some(world) = self.client.world() else { return };
        if a.status != DigestStatus::Ready || world.highest_received().0 != a.seq {
            if a.status != DigestStatus::Live {
                c.digest_inconclusive += 1;
            }
            return;
        }
        let mine = client_digest(world);
        c.digest_checks += 1;
        self.verdict = Some((mine.hash == a.digest && mine.actors == a.actors, a.actors, mine.actors));
    }

    /// The player aims or stops, or sprints or stops: a Server call on its character, if the
    /// bot holds it yet.
    fn call(&mut self, c: &mut Counters) {
        let Some(world) = self.client.world_mut() else { return };
        let character = Kind::Character.index() as u32;
        let mine =
            world.actors().find(|&(g, class)| class == character && world.role(g) == Some(NetRole::AutonomousProxy));
        let Some((guid, _)) = mine else { return };
        let made = if self.rng.random_bool(0.5) {
            self.aiming = !self.aiming;
            ShooterCharacter::call_server_set_targeting(world, guid, self.aiming)
        } else {
            self.running = !self.running;
            ShooterCharacter::call_server_set_running(world, guid, self.running, false)
        };
        match made {
            Ok(()) => c.calls_made += 1,
            Err(_) => c.calls_refused += 1,
        }
    }

    fn connected(&self) -> bool {
        matches!(self.client.state(), ClientState::Connected { .. })
    }
}

pub fn bots(args: &BotsArgs, json: bool, session: &mut crate::Session) -> Result<(), String> {
    if !(0.0..1.0).contains(&args.loss) {
        return Err(format!("--loss must be within 0..1, got {}", args.loss));
    }
    if !(args.seconds > 0.0 && args.seconds.is_finite()) {
        return Err(format!("--seconds must be positive, got {}", args.seconds));
    }
    let layouts: Vec<_> = Kind::ALL.iter().map(|k| k.layout().clone()).collect();
    let start = Instant::now();
    let mut bots = Vec::with_capacity(args.count);
    for i in 0..args.count {
        let local: SocketAddr =
            if args.connect.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }.parse().expect("an address");
        let socket = UdpSocket::bind(local).map_err(|e| format!("bot {i}: cannot bind a socket: {e}"))?;
        socket.connect(args.connect).map_err(|e| format!("bot {i}: cannot connect to {}: {e}", args.connect))?;
        socket.set_nonblocking(true).map_err(|e| e.to_string())?;
        let client = match &args.ticket_key {
            None => SessionClient::new(layouts.clone(), random_u64()),
            Some(key) => {
                let keys = SessionKeys::generate().map_err(|e| e.to_string())?;
                let expires = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()) + 60;
                let t = ticket::issue(key, i as u64, args.server_id, expires, &keys).map_err(|e| e.to_string())?;
                SessionClient::with_ticket(layouts.clone(), random_u64(), t, &keys).map_err(|e| e.to_string())?
            }
        };
        bots.push(Bot {
            socket,
            client,
            rng: ChaCha8Rng::seed_from_u64(args.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(i as u64)),
            last_hello: None,
            last_feedback: start,
            last_digest: start,
            next_digest_id: 0,
            verdict: None,
            next_call: start,
            aiming: false,
            running: false,
        });
    }
    if !json {
        eprintln!(
            "bots: {} clients → {}, loss {}, {:.1} s{}",
            args.count,
            args.connect,
            args.loss,
            args.seconds,
            if args.ticket_key.is_some() { ", sealed sessions" } else { "" }
        );
    }
    let end = start + Duration::from_secs_f64(args.seconds);
    let mut buf = vec![0u8; MAX_DATAGRAM + 1];
    let mut c = Counters::default();
    let mut last = Counters::default();
    let mut report = PerSecond::new(start);
    let mut per_second = Vec::new();
    let mut prev_late_dup = (0u64, 0u64);
    let loss = args.loss;
    loop {
        let now = Instant::now();
        if now >= end {
            break;
        }
        let mut busy = false;
        for bot in &mut bots {
            loop {
                match bot.socket.recv(&mut buf) {
                    Ok(n) => {
                        busy = true;
                        c.datagrams_in += 1;
                        c.bytes_in += n as u64;
                        if loss > 0.0 && bot.rng.random_bool(loss) {
                            c.dropped_in += 1;
                            continue;
                        }
                        bot.handle(&buf[..n], loss, &mut c, now);
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    // Connection refused (nobody listens yet) and the like: try again later.
                    Err(_) => break,
                }
            }
            if let Some(h) = bot.client.hello() {
                if bot.last_hello.is_none_or(|t| now - t >= HELLO_INTERVAL) {
                    bot.last_hello = Some(now);
                    bot.send(&h, loss, &mut c);
                }
            } else if bot.connected() {
                if now >= bot.next_call && now + CALLS_QUIET_TAIL < end {
                    bot.call(&mut c);
                    bot.next_call =
                        now + Duration::from_millis(bot.rng.random_range(CALL_INTERVAL_MS.0..CALL_INTERVAL_MS.1));
                }
                let due = bot.client.world().is_some_and(|w| w.feedback_due());
                let since = now - bot.last_feedback;
                if due && since >= CLIENT_FRAME || since >= FEEDBACK_INTERVAL {
                    if let Some(f) = bot.client.feedback() {
                        bot.last_feedback = now;
                        c.feedback_sent += 1;
                        bot.send(&f, loss, &mut c);
                    }
                }
                if now - bot.last_digest >= DIGEST_INTERVAL {
                    bot.next_digest_id += 1;
                    if let Some(d) = bot.client.digest_request(bot.next_digest_id) {
                        bot.last_digest = now;
                        bot.send(&d, loss, &mut c);
                    }
                }
            }
        }
        if let Some(t) = report.due(Instant::now()) {
            let s = c.minus(last);
            last = c;
            let connected = bots.iter().filter(|b| b.connected()).count();
            let actors: usize = bots.iter().filter_map(|b| b.client.world()).map(|w| w.actor_count()).sum();
            let late: u64 = bots.iter().filter_map(|b| b.client.world()).map(|w| w.stats().late).sum();
            let dup: u64 = bots.iter().filter_map(|b| b.client.world()).map(|w| w.stats().duplicates).sum();
            let matched = bots.iter().filter(|b| b.verdict.is_some_and(|v| v.0)).count();
            let (s_late, s_dup) = (late - prev_late_dup.0, dup - prev_late_dup.1);
            prev_late_dup = (late, dup);
            if !json {
                eprintln!(
                    "  {t:5.1} s  connected {connected:3}/{}  received {:6} pkt {:8.1} KB  applied {:6}  notifies {:7}  \
                     actors known {:7} ({:.0}/bot)  late {s_late} dup {s_dup}  dropped {} in {} out  digests matched {matched}",
                    bots.len(),
                    s.datagrams_in,
                    s.bytes_in as f64 / 1e3,
                    s.packets_applied,
                    s.notifies,
                    actors,
                    actors as f64 / connected.max(1) as f64,
                    s.dropped_in,
                    s.dropped_out,
                );
            }
            per_second.push(json!({
                "connected": connected, "datagrams_received": s.datagrams_in, "bytes_received": s.bytes_in,
                "packets_applied": s.packets_applied, "notifies": s.notifies, "actors_known": actors,
                "late": s_late, "duplicates": s_dup, "dropped_in": s.dropped_in, "dropped_out": s.dropped_out,
                "digests_matched": matched,
            }));
        }
        if !busy {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let wall = start.elapsed().as_secs_f64();
    let worlds = || bots.iter().filter_map(|b| b.client.world());
    let connected = bots.iter().filter(|b| b.connected()).count();
    let welcomed = bots.iter().filter(|b| !matches!(b.client.state(), ClientState::Connecting { .. })).count();
    let refused: Vec<String> = bots
        .iter()
        .filter_map(|b| match b.client.state() {
            ClientState::Rejected(r) => Some(r.to_string()),
            ClientState::Failed(e) => Some(e.to_string()),
            _ => None,
        })
        .collect();
    let matched = bots.iter().filter(|b| b.verdict.is_some_and(|v| v.0)).count();
    let mismatched = bots.iter().filter(|b| b.verdict.is_some_and(|v| !v.0)).count();
    let unchecked = bots.len() - matched - mismatched;
    let converged = matched == bots.len();
    let late: u64 = worlds().map(|w| w.stats().late).sum();
    let duplicates: u64 = worlds().map(|w| w.stats().duplicates).sum();
    let actors: usize = worlds().map(|w| w.actor_count()).sum();
    let calls_unacknowledged: usize = worlds().map(|w| w.server_calls_unacknowledged()).sum();
    let calls_resent: u64 = worlds().map(|w| w.stats().server_calls_resent).sum();
    let session_drops: u64 = bots
        .iter()
        .map(|b| {
            let s = b.client.stats();
            s.malformed + s.bad_nonce + s.bad_token + s.unexpected + s.forged + s.replayed + s.unsealed
        })
        .sum();
    for bot in &mut bots {
        if let Some(d) = bot.client.disconnect() {
            let _ = bot.socket.send(&d);
        }
    }
    if json {
        let out = json!({
            "command": "bots",
            "bots": bots.len(),
            "seconds": wall,
            "loss": loss,
            "connected": connected,
            "handshakes_completed": welcomed,
            "sealed": args.ticket_key.is_some(),
            "refused": refused,
            "datagrams_received": c.datagrams_in,
            "bytes_received": c.bytes_in,
            "bytes_received_per_second": c.bytes_in as f64 / wall,
            "packets_applied": c.packets_applied,
            "packets_refused": c.packets_refused,
            "packets_dropped": c.dropped_in + c.dropped_out,
            "packets_dropped_in": c.dropped_in,
            "packets_dropped_out": c.dropped_out,
            "late_packets": late,
            "duplicate_packets": duplicates,
            "session_datagrams_dropped": session_drops,
            "notifies": c.notifies,
            "spawned": c.spawned,
            "destroyed": c.destroyed,
            "actors_known": actors,
            "feedback_sent": c.feedback_sent,
            "digest_checks": c.digest_checks,
            "digest_inconclusive": c.digest_inconclusive,
            "server_calls_made": c.calls_made,
            "server_calls_refused": c.calls_refused,
            "server_calls_unacknowledged": calls_unacknowledged,
            "server_calls_resent": calls_resent,
            "bots_matched": matched,
            "bots_mismatched": mismatched,
            "bots_unchecked": unchecked,
            "converged": converged,
            "per_second": per_second,
        });
        session.emit(out)?;
    } else {
        println!(
            "bots: {} bots, {wall:.1} s, {} connected; received {:.1} KB/s, {} packets applied, {} notifies, {} actors held \
             at the end; late {late}, duplicates {duplicates}, dropped by --loss {} in / {} out; Server calls: {} made, \
             {calls_resent} sent again, {calls_unacknowledged} unacknowledged at the end; digests: {matched} matched, {mismatched} differ, \
             {unchecked} never checked → {}",
            bots.len(),
            connected,
            c.bytes_in as f64 / wall / 1e3,
            c.packets_applied,
            c.notifies,
            actors,
            c.dropped_in,
            c.dropped_out,
            c.calls_made,
            if converged { "converged" } else { "NOT converged" }
        );
        for r in &refused {
            println!("  refused: {r}");
        }
        for (i, b) in bots.iter().enumerate() {
            if let Some((false, server, mine)) = b.verdict {
                println!("  bot {i}: digest differs (server: {server} actors, bot: {mine})");
            }
        }
    }
    if converged {
        Ok(())
    } else {
        Err(format!("{} of {} bots did not match the server's digest", bots.len() - matched, bots.len()))
    }
}
