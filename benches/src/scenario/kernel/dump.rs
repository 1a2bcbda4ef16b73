//! The frame dump (`shadowrep run --dump-frame K FILE.json`): frame K's inputs and decisions,
//! written row by row — every actor (GUID, class, position, net settings, owner, instigator,
//! hidden, last sent) and every connection (viewers, net speed, queued bits, the relevant set,
//! the send order with priorities and bits), as UE's `net.DumpRelevantActors` and the
//! replication graph's prioritized lists show a server's choices.

use super::{KernelServer, World};
use crate::scenario::Kind;
use shadowrep::ids::NetGuid;
use shadowrep::net::{Action, NetSettings};
use shadowrep::store::ActorId;
use shadowrep_layouts::classes::{Actor, Pickup, Projectile};
use std::io::Write;

/// A finite number as JSON (`null` otherwise).
fn num(x: f64) -> String {
    if x.is_finite() {
        format!("{x}")
    } else {
        "null".into()
    }
}

fn vec3(v: [f32; 3]) -> String {
    format!("[{},{},{}]", num(v[0] as f64), num(v[1] as f64), num(v[2] as f64))
}

fn guid(g: Option<NetGuid>) -> String {
    g.map_or_else(|| "null".into(), |g| g.0.to_string())
}

fn settings(s: &NetSettings) -> String {
    format!(
        concat!(
            "{{\"net_update_frequency\":{},\"min_net_update_frequency\":{},\"net_priority\":{},",
            "\"cull_distance_squared\":{},\"always_relevant\":{},\"only_relevant_to_owner\":{},",
            "\"use_owner_relevancy\":{},\"hidden\":{},\"has_root\":{},\"collision\":{},\"startup\":{}}}"
        ),
        num(s.frequency.net_update_frequency as f64),
        num(s.frequency.min_net_update_frequency as f64),
        num(s.net_priority as f64),
        num(s.cull_distance_squared as f64),
        s.always_relevant,
        s.only_relevant_to_owner,
        s.use_owner_relevancy,
        s.hidden,
        s.has_root,
        s.collision,
        s.startup
    )
}

/// Reads an actor's replicated location from its store (the frame's input).
fn location(world: &World, kind: Kind, id: ActorId) -> [f32; 3] {
    let store = world.store(kind);
    let read = match kind {
        Kind::Character | Kind::Loot => Actor::location(store, id).map(|v| v.0),
        Kind::Projectile => Projectile::location(store, id).map(|v| v.0),
        Kind::Pickup => Pickup::location(store, id).map(|v| v.0),
        // Where its owner is (the dump's reader finds it through the owner).
        Kind::Weapon => return [f32::NAN; 3],
    };
    read.unwrap_or([f32::NAN; 3])
}

/// What each field of the dump means and counts in (the dump's `units` object).
const UNITS: &str = concat!(
    "{\"position\":\"UE units (cm); a weapon's is null: it is where its owner is\",",
    "\"server_time\":\"seconds since the server started\",",
    "\"settings\":\"classes[]: the class defaults; actors[]: the actor's own (defaults or overrides)\",",
    "\"net_update_frequency\":\"Hz\",\"cull_distance_squared\":\"cm squared; relevant when strictly closer\",",
    "\"net_speed\":\"bytes per second\",",
    "\"queued_bits_before\":\"bits the connection owed before this frame's sends (UE's QueuedBits, drained by ",
    "elapsed time x net speed); negative is credit, floored at minus two ticks' allowance\",",
    "\"queued_bits_after\":\"the same after the frame's sends\",",
    "\"ready\":\"heard from within the ready timeout (1.5 s): replicated to at all\",",
    "\"saturated\":\"the frame stopped on the bandwidth budget; what was left waits with pending-net-update\",",
    "\"relevant\":\"NetGUIDs relevant to the connection this frame\",",
    "\"priority\":\"UE's GetNetPriority: time since last sent x net priority x distance and view factors, ",
    "x4 for the view target, the largest over the viewers\",",
    "\"priority_key\":\"the priority in 16.16 fixed point, the send order's key (descending; ties by NetGUID)\",",
    "\"action\":\"opened, replicated, opened_for_call (a saturated frame opened its channel for a call of the tick, ",
    "outside the budget, as UE's InternalProcessRemoteFunction does), closed, dormant or torn_off\",",
    "\"bits\":\"bits written for the action (an open, an update, a close)\",",
    "\"last_update\":\"server_time of the channel's last replication, s\",",
    "\"relevant_time\":\"server_time it was last found relevant, s (it closes relevant_timeout, 5 s, later)\"}"
);

/// The dump: written row by row (a 1M-actor frame is hundreds of MB), one actor or channel per
/// line.
pub(super) fn write_dump(s: &KernelServer, world: &World, frame: usize, out: &mut dyn Write) -> std::io::Result<()> {
    let d = &s.driver;
    let cfg = world.config();
    writeln!(
        out,
        "{{\"profile\":{},\"seed\":{},\"frame\":{frame},\"server_frame\":{},\"server_time\":{},\"tick_rate\":{},",
        serde_json::Value::from(cfg.name.as_str()),
        cfg.seed,
        d.frame().0,
        num(d.server_time()),
        num(cfg.tick_rate)
    )?;
    writeln!(out, "\"units\":{UNITS},")?;
    write!(out, "\"classes\":[")?;
    for (i, kind) in Kind::ALL.into_iter().enumerate() {
        let sep = if i == 0 { "" } else { "," };
        write!(
            out,
            "{sep}{{\"class_id\":{},\"name\":\"{}\",\"settings\":{}}}",
            s.class(kind).0,
            kind.class_name(),
            settings(&kind.net_settings())
        )?;
    }
    writeln!(out, "],\n\"actors\":[")?;
    let mut first = true;
    for kind in Kind::ALL {
        let class = s.class(kind);
        for id in world.store(kind).ids() {
            let (Some(g), Some(ns)) = (d.guid_of(class, id), d.net_settings(class, id)) else { continue };
            let (_, owner, instigator) = d.actor_place(class, id).unwrap_or(([0.0; 3], None, None));
            let sep = if first { "" } else { ",\n" };
            first = false;
            write!(
                out,
                "{sep}{{\"guid\":{},\"class\":\"{}\",\"position\":{},\"settings\":{},\"owner_actor\":{},\"instigator\":{},\"hidden\":{},\"replicates\":{},\"sublevel\":{}}}",
                g.0,
                kind.class_name(),
                vec3(location(world, kind, id)),
                settings(&ns),
                guid(owner),
                guid(instigator),
                ns.hidden,
                d.replicates(class, id).unwrap_or(true),
                d.sublevel(class, id).unwrap_or_default().0
            )?;
        }
    }
    writeln!(out, "\n],\n\"connections\":[")?;
    for (i, (&conn, viewer)) in s.conns.iter().zip(&s.viewers).enumerate() {
        let (net_speed, queued_after) = d.connection_budget(conn).map_err(std::io::Error::other)?;
        let loaded = d.loaded_sublevels(conn).map_err(std::io::Error::other)?;
        let loaded: Vec<String> = loaded.iter().map(|l| l.0.to_string()).collect();
        let decisions = d.decisions(conn).map_err(std::io::Error::other)?;
        let sep = if i == 0 { "" } else { ",\n" };
        write!(
            out,
            "{sep}{{\"connection\":{},\"viewers\":[{{\"real_viewer\":{},\"view_target\":{},\"location\":{},\"direction\":{}}}],\"net_speed\":{net_speed},\"queued_bits_after\":{},\"loaded_sublevels\":[{}]",
            conn.0,
            guid(viewer.real_viewer),
            guid(viewer.view_target),
            vec3(viewer.location),
            vec3(viewer.direction),
            num(queued_after),
            loaded.join(",")
        )?;
        match decisions {
            Some(dec) => {
                write!(
                    out,
                    ",\"queued_bits_before\":{},\"ready\":{},\"saturated\":{},\n \"relevant\":[",
                    num(dec.queued_bits),
                    dec.ready,
                    dec.saturated
                )?;
                for (k, g) in dec.relevant.iter().enumerate() {
                    write!(out, "{}{}", if k == 0 { "" } else { "," }, g.0)?;
                }
                write!(out, "],\n \"sends\":[")?;
                for (k, send) in dec.sends.iter().enumerate() {
                    let action = match send.action {
                        Action::Replicated { opened: true } => "opened",
                        Action::Replicated { opened: false } => "replicated",
                        Action::OpenedForCall => "opened_for_call",
                        Action::Closed => "closed",
                        Action::Dormant => "dormant",
                        Action::TornOff => "torn_off",
                    };
                    write!(
                        out,
                        "{}{{\"guid\":{},\"priority\":{},\"priority_key\":{},\"action\":\"{action}\",\"bits\":{}}}",
                        if k == 0 { "" } else { "," },
                        send.guid.0,
                        num(send.priority as f64 / 65536.0),
                        send.priority,
                        send.bits
                    )?;
                }
                write!(out, "]")?;
            }
            None => write!(out, ",\"relevant\":null,\"sends\":null")?,
        }
        write!(out, ",\n \"channels\":[")?;
        for (k, ch) in d.channel_info(conn).map_err(std::io::Error::other)?.iter().enumerate() {
            write!(
                out,
                "{}{{\"guid\":{},\"class_id\":{},\"open_acked\":{},\"last_update\":{},\"relevant_time\":{}}}",
                if k == 0 { "" } else { "," },
                ch.guid.0,
                ch.class.0,
                ch.open_acked,
                num(ch.last_update),
                num(ch.relevant_time)
            )?;
        }
        write!(out, "]}}")?;
    }
    writeln!(out, "\n]}}")?;
    out.flush()
}
