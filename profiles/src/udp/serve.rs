//! `shadowrep serve`: a profile's world at its tick rate over a real UDP socket.
//!
//! ```text
//! bind the socket; build the world (LiveGame)
//! until --seconds have passed, one thread:
//!   until the next tick is due: receive datagrams (a read timeout = the time left)
//!     SessionServer::handle → challenge / reject replies, joins (a player each), feedback
//!     (NetDriver::receive_feedback), digest requests, disconnects
//!   at --freeze seconds before the end: the game stops changing; ticks go on
//!   tick: LiveGame::frame, then every session's packets, framed with its token
//!   sessions not heard from for 5 s end; once a second a line on stderr
//! at the end every session gets a disconnect
//! ```
//!
//! A digest request is answered `live` until the freeze, `busy` while the driver owes that
//! client something (`NetDriver::is_settled`: packets in flight, resends, opens or closes
//! queued), and with the digest of what it should hold (`session::digest`) otherwise.

use super::game::LiveGame;
use super::PerSecond;
use clap::Args;
use serde_json::json;
use shadowrep::session::{
    DigestStatus, DisconnectReason, Incoming, RejectReason, ServerConfig, SessionServer, MAX_DATAGRAM,
};
use shadowrep_benches::scenario::Profile;
use std::io::ErrorKind;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

#[derive(Args, Clone)]
pub struct ServeArgs {
    /// The profile whose world runs: battle_royale or mmo (open_world's level actors are
    /// loaded by each client from the level, which bots do not have).
    #[arg(long, default_value = "battle_royale")]
    profile: String,
    /// Address to listen on.
    #[arg(long)]
    bind: SocketAddr,
    /// Seconds to run; then every client is told the server stops.
    #[arg(long, default_value_t = 30.0)]
    seconds: f64,
    /// Seconds at the end during which the world is frozen so the links drain and digest
    /// requests are answered (default: half of --seconds, at most 7). Channels of actors that
    /// stopped being relevant before the freeze close up to 5 s into it (UE's relevancy
    /// timeout), so a freeze of 6 s or more ends with every connection settled.
    #[arg(long)]
    freeze: Option<f64>,
    /// The profile's world scaled by this factor (actors, players and area; the same density):
    /// 0.1 of battle_royale is ~5 000 actors and 10 players.
    #[arg(long, default_value_t = 0.1)]
    scale: f64,
    /// Players in the world (clients take them over as they join; the rest play by
    /// themselves). Default: the scaled profile's.
    #[arg(long, value_parser = crate::positive)]
    players: Option<usize>,
    /// RNG seed of the world.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Worker threads for the driver (default: every core).
    #[arg(long, value_parser = crate::positive)]
    threads: Option<usize>,
    /// Seal every session (`session::seal`): clients must bring a join ticket issued under
    /// this key (64 hexadecimal digits; `bots --ticket-key` issues them).
    #[arg(long, value_parser = super::ticket_key_arg, value_name = "HEX")]
    ticket_key: Option<shadowrep::session::TicketKey>,
    /// With --ticket-key: this server's id; tickets issued for another are refused.
    #[arg(long, default_value_t = 1)]
    server_id: u64,
}

/// Counters of one second (or the whole run).
#[derive(Clone, Copy, Debug, Default)]
struct Second {
    ticks: u64,
    late_ticks: u64,
    tick_ns_max: u64,
    tick_ns_sum: u64,
    datagrams_in: u64,
    bytes_in: u64,
    packets_out: u64,
    bytes_out: u64,
    digests: u64,
    feedback_refused: u64,
    levels_applied: u64,
    levels_refused: u64,
    send_errors: u64,
    /// Connections the driver ended (a reliable-call overflow), their sessions ended.
    failed: u64,
}

pub fn serve(args: &ServeArgs, json: bool, run: &mut crate::Session) -> Result<(), String> {
    let profile = Profile::by_name(&args.profile).ok_or_else(|| {
        let known: Vec<&str> = Profile::ALL.iter().map(|p| p.name()).collect();
        format!("unknown profile `{}` (known: {})", args.profile, known.join(", "))
    })?;
    if profile == Profile::OpenWorld {
        return Err("open_world cannot be served: its level actors are loaded by each client from the level, \
                    which bots do not have (use battle_royale or mmo)"
            .into());
    }
    if !(args.scale > 0.0 && args.scale <= 1.0) {
        return Err(format!("--scale must be within (0, 1], got {}", args.scale));
    }
    if !(args.seconds > 0.0 && args.seconds.is_finite()) {
        return Err(format!("--seconds must be positive, got {}", args.seconds));
    }
    let freeze = args.freeze.unwrap_or((args.seconds / 2.0).min(7.0));
    if !(0.0..args.seconds).contains(&freeze) {
        return Err(format!("--freeze must be within 0..{} (--seconds), got {freeze}", args.seconds));
    }
    let mut cfg = profile.config(args.seed).scaled(args.scale);
    if let Some(p) = args.players {
        cfg.connections = p;
    }
    crate::check_memory("this world", cfg.all_actors() as f64 * 600.0 + cfg.connections as f64 * 100_000.0)?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = args.threads.unwrap_or(cores);
    crate::build_pool(threads)?;

    let socket = UdpSocket::bind(args.bind).map_err(|e| format!("cannot bind {}: {e}", args.bind))?;
    let local = socket.local_addr().map_err(|e| e.to_string())?;
    let mut game = LiveGame::new(&cfg, threads > 1)?;
    let (players, _) = game.players();
    let tick_rate = cfg.tick_rate;
    // The driver's checksums and its actor level's tick rate, told to clients in the welcome.
    let mut scfg = ServerConfig::for_driver(game.driver());
    scfg.max_sessions = players;
    if let Some(key) = &args.ticket_key {
        scfg = scfg.sealed(key.clone(), args.server_id);
    }
    let start = Instant::now();
    let mut session = SessionServer::new(scfg, start).map_err(|e| e.to_string())?;
    if !json {
        eprintln!(
            "serve {}: {} actors, {players} players, {tick_rate} Hz, listening on {local}; {:.1} s, frozen for the last {freeze:.1} s{}",
            profile.name(),
            game.actors(),
            args.seconds,
            if args.ticket_key.is_some() { "; sessions sealed" } else { "" },
        );
    }

    let period = Duration::from_secs_f64(1.0 / tick_rate);
    let end = start + Duration::from_secs_f64(args.seconds);
    let freeze_at = end - Duration::from_secs_f64(freeze);
    let mut next_tick = start;
    let mut buf = vec![0u8; MAX_DATAGRAM + 1];
    let mut second = Second::default();
    let mut total = Second::default();
    let mut report = PerSecond::new(start);
    let mut seconds_json = Vec::new();
    loop {
        let now = Instant::now();
        if now >= end {
            break;
        }
        if now < next_tick {
            let wait = (next_tick - now).max(Duration::from_millis(1));
            socket.set_read_timeout(Some(wait)).map_err(|e| e.to_string())?;
            match socket.recv_from(&mut buf) {
                Ok((n, from)) => {
                    second.datagrams_in += 1;
                    second.bytes_in += n as u64;
                    let bytes = &buf[..n];
                    receive(&socket, &mut session, &mut game, &mut second, from, bytes, Instant::now())?;
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                // An ICMP error for an earlier send (a bot that left): nothing to read.
                Err(_) => {}
            }
            continue;
        }
        if !game.frozen() && now >= freeze_at {
            game.freeze();
            if !json {
                eprintln!("  {:5.1} s  world frozen: answering digest requests", (now - start).as_secs_f64());
            }
        }
        let t = Instant::now();
        game.frame()?;
        let tick_ns = t.elapsed().as_nanos() as u64;
        second.ticks += 1;
        second.tick_ns_sum += tick_ns;
        second.tick_ns_max = second.tick_ns_max.max(tick_ns);
        let conns: Vec<_> = session.sessions().map(|(c, _)| c).collect();
        for conn in conns {
            let Ok(packets) = game.driver().packets(conn) else { continue };
            for p in packets {
                if let Some((addr, d)) = session.packet(conn, p) {
                    second.packets_out += 1;
                    second.bytes_out += d.len() as u64;
                    if socket.send_to(&d, addr).is_err() {
                        second.send_errors += 1;
                    }
                }
            }
        }
        for conn in session.expire(Instant::now()) {
            game.detach(conn)?;
        }
        for conn in game.take_failed() {
            second.failed += 1;
            if let Some((addr, d)) = session.disconnect(conn, DisconnectReason::ReliableOverflow) {
                let _ = socket.send_to(&d, addr);
            }
        }
        next_tick += period;
        let after = Instant::now();
        if after > next_tick + period {
            // More than a tick behind: start again from now rather than run a burst of ticks.
            second.late_ticks += 1;
            next_tick = after;
        }
        if let Some(elapsed) = report.due(after) {
            let (_, attached) = game.players();
            let ticks = second.ticks.max(1) as f64;
            if !json {
                eprintln!(
                    "  {elapsed:5.1} s  clients {attached:3}  ticks {:3} (late {})  frame {:6.2} ms mean {:6.2} max  \
                     out {:5} pkt {:7.1} KB  in {:5} dgram  digests {}",
                    second.ticks,
                    second.late_ticks,
                    second.tick_ns_sum as f64 / ticks / 1e6,
                    second.tick_ns_max as f64 / 1e6,
                    second.packets_out,
                    second.bytes_out as f64 / 1e3,
                    second.datagrams_in,
                    second.digests
                );
            }
            seconds_json.push(json!({
                "clients": attached, "ticks": second.ticks, "late_ticks": second.late_ticks,
                "frame_ms_mean": second.tick_ns_sum as f64 / ticks / 1e6, "frame_ms_max": second.tick_ns_max as f64 / 1e6,
                "packets_out": second.packets_out, "bytes_out": second.bytes_out, "datagrams_in": second.datagrams_in,
            }));
            total = add(total, second);
            second = Second::default();
        }
    }
    total = add(total, second);
    let conns: Vec<_> = session.sessions().map(|(c, _)| c).collect();
    for conn in conns {
        if let Some((addr, d)) = session.disconnect(conn, DisconnectReason::Closed) {
            let _ = socket.send_to(&d, addr);
        }
    }
    let st = session.stats();
    let calls = game.server_calls();
    let wall = start.elapsed().as_secs_f64();
    if json {
        let out = json!({
            "command": "serve",
            "profile": profile.name(),
            "scale": args.scale,
            "actors": game.actors(),
            "players": players,
            "tick_rate": tick_rate,
            "seconds": wall,
            "freeze_seconds": freeze,
            "ticks": total.ticks,
            "late_ticks": total.late_ticks,
            "frame_ms_mean": total.tick_ns_sum as f64 / total.ticks.max(1) as f64 / 1e6,
            "frame_ms_max": total.tick_ns_max as f64 / 1e6,
            "packets_out": total.packets_out,
            "bytes_out_per_second": total.bytes_out as f64 / wall,
            "datagrams_in": total.datagrams_in,
            "bytes_in_per_second": total.bytes_in as f64 / wall,
            "digests_answered": total.digests,
            "feedback_refused": total.feedback_refused,
            "levels_applied": total.levels_applied,
            "levels_refused": total.levels_refused,
            "send_errors": total.send_errors,
            "connections_failed": total.failed,
            "server_calls": {
                "taken": calls.taken, "applied": calls.applied, "while_frozen": calls.frozen,
            },
            "sessions": {
                "joins": st.joins, "challenges": st.challenges, "rejects": st.rejects,
                "welcomes_repeated": st.welcomes_repeated, "ended": st.ended,
                "dropped_malformed": st.malformed, "dropped_bad_cookie": st.bad_cookies,
                "dropped_unknown_address": st.unknown_address, "dropped_bad_token": st.bad_token,
                "dropped_unexpected": st.unexpected, "sealed": args.ticket_key.is_some(),
                "dropped_forged": st.forged, "dropped_replayed": st.replayed, "dropped_unsealed": st.unsealed,
                "dropped_digests_throttled": st.digests_throttled,
            },
            "per_second": seconds_json,
        });
        run.emit(out)?;
    } else {
        println!(
            "serve {}: {:.1} s, {} ticks ({} late), frame {:.2} ms mean / {:.2} ms max; {} packets out ({:.1} KB/s); \
             {} joins, {} challenges, {} rejects; dropped: {} malformed, {} bad cookie, {} unknown address, {} bad token, \
             {} forged, {} replayed, {} unsealed, {} digest requests throttled; {} digests answered; \
             Server calls: {} taken, {} applied, {} while frozen",
            profile.name(),
            wall,
            total.ticks,
            total.late_ticks,
            total.tick_ns_sum as f64 / total.ticks.max(1) as f64 / 1e6,
            total.tick_ns_max as f64 / 1e6,
            total.packets_out,
            total.bytes_out as f64 / wall / 1e3,
            st.joins,
            st.challenges,
            st.rejects,
            st.malformed,
            st.bad_cookies,
            st.unknown_address,
            st.bad_token,
            st.forged,
            st.replayed,
            st.unsealed,
            st.digests_throttled,
            total.digests,
            calls.taken,
            calls.applied,
            calls.frozen
        );
    }
    Ok(())
}

fn add(a: Second, b: Second) -> Second {
    Second {
        ticks: a.ticks + b.ticks,
        late_ticks: a.late_ticks + b.late_ticks,
        tick_ns_max: a.tick_ns_max.max(b.tick_ns_max),
        tick_ns_sum: a.tick_ns_sum + b.tick_ns_sum,
        datagrams_in: a.datagrams_in + b.datagrams_in,
        bytes_in: a.bytes_in + b.bytes_in,
        packets_out: a.packets_out + b.packets_out,
        bytes_out: a.bytes_out + b.bytes_out,
        digests: a.digests + b.digests,
        feedback_refused: a.feedback_refused + b.feedback_refused,
        levels_applied: a.levels_applied + b.levels_applied,
        levels_refused: a.levels_refused + b.levels_refused,
        send_errors: a.send_errors + b.send_errors,
        failed: a.failed + b.failed,
    }
}

/// One datagram through the session layer into the game.
fn receive(
    socket: &UdpSocket,
    session: &mut SessionServer,
    game: &mut LiveGame,
    second: &mut Second,
    from: SocketAddr,
    bytes: &[u8],
    now: Instant,
) -> Result<(), String> {
    let send = |d: &[u8], to: SocketAddr, second: &mut Second| {
        if socket.send_to(d, to).is_err() {
            second.send_errors += 1;
        }
    };
    match session.handle(from, bytes, now) {
        Incoming::Reply(d) => send(&d, from, second),
        Incoming::Join(join) => match game.attach()? {
            Some(conn) => match session.accept(join, conn, now) {
                Some(welcome) => send(&welcome, from, second),
                None => game.detach(conn)?,
            },
            None => {
                let reject = session.refuse(join, RejectReason::Full);
                send(&reject, from, second);
            }
        },
        Incoming::Feedback { conn, payload } => {
            let driver = game.driver_mut();
            if driver.heard_from(conn).is_err() || driver.receive_feedback(conn, &payload).is_err() {
                second.feedback_refused += 1;
            }
        }
        Incoming::DigestRequest { conn, id } => {
            let _ = game.driver_mut().heard_from(conn);
            let (status, digest) = if !game.frozen() {
                (DigestStatus::Live, None)
            } else if !game.driver().is_settled(conn).unwrap_or(false) {
                (DigestStatus::Busy, None)
            } else {
                second.digests += 1;
                (DigestStatus::Ready, Some(game.digest(conn)?))
            };
            if let Some((addr, d)) = session.digest_answer(conn, id, status, digest) {
                send(&d, addr, second);
            }
        }
        Incoming::Levels { conn, levels, ack } => {
            // The profiles' worlds are one level: a set naming sublevels changes nothing they
            // hold, but is applied and acknowledged as a streaming world's would be. The ack
            // says "applied": a set the driver refuses (its connection gone) gets none.
            let driver = game.driver_mut();
            let _ = driver.heard_from(conn);
            if driver.set_loaded_sublevels(conn, &levels).is_ok() {
                second.levels_applied += 1;
                send(&ack, from, second);
            } else {
                second.levels_refused += 1;
            }
        }
        Incoming::Disconnected { conn } => game.detach(conn)?,
        Incoming::Dropped(_) => {}
    }
    Ok(())
}
