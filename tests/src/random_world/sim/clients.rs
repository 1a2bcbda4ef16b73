//! Clients joining (the level's static actors loaded, a net speed, net groups, sublevels) and
//! streaming sublevels in and out.

use super::{slots, Sim};
use crate::random_world::{bag, thing};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use shadowrep::client::ClientWorld;
use shadowrep::ids::NetGuid;
use shadowrep::net::SublevelId;
use shadowrep::wire::feedback::{read_feedback, write_feedback, write_feedback_calls, Feedback};
use std::collections::VecDeque;

/// Client `world`'s `feedback`, now and then with a request to open again an actor or array some
/// client held once (`held_once`, fed from `world` too): late or forged, it names an actor the
/// client has, holds dormant or torn off, one gone, its slot reused — what a request riding
/// several feedbacks, or a forger, may name. Both sides get the same bytes.
pub(super) fn with_stale_reopen(
    world: &ClientWorld,
    feedback: Vec<u8>,
    (rng, held_once, added): (&mut ChaCha8Rng, &mut VecDeque<NetGuid>, &mut usize),
) -> Vec<u8> {
    use shadowrep::wire::feedback::MAX_REOPENS;
    if world.actor_count() > 0 && rng.random_bool(0.3) {
        // (Sorted: the client's map iterates in no fixed order, the world must be the same
        // every run.)
        let mut guids: Vec<NetGuid> = world.actors().map(|(g, _)| g).collect();
        guids.sort_unstable();
        let guid = guids[rng.random_range(0..guids.len())];
        let arrays = world.fast_arrays_of(guid);
        let pick =
            if arrays.is_empty() || rng.random_bool(0.5) { guid } else { arrays[rng.random_range(0..arrays.len())] };
        if !held_once.contains(&pick) {
            if held_once.len() == 64 {
                held_once.pop_front();
            }
            held_once.push_back(pick);
        }
    }
    if held_once.is_empty() || !rng.random_bool(0.1) {
        return feedback;
    }
    let mut f = read_feedback(&feedback).expect("a client's own feedback decodes");
    if f.reopen.len() >= MAX_REOPENS {
        return feedback;
    }
    f.reopen.push(held_once[rng.random_range(0..held_once.len())]);
    *added += 1;
    written(&f)
}

/// Feedback `f` written as a client writes it.
fn written(f: &Feedback) -> Vec<u8> {
    let mut w = shadowrep::wire::BitWriter::new();
    write_feedback(&mut w, f.highest, &f.received, &f.reopen);
    write_feedback_calls(&mut w, &f.calls);
    w.into_bytes()
}

/// Client feedback `feedback` with, now and then, a lie: a packet of the last eight it missed
/// claimed received. The server settles it as delivered and never sends its content again; the
/// client, lacking an open it was told it got, refuses the next plain bunch of that actor and
/// asks for it (README "Two bunch forms": a liar pays a refused packet and converges). One lie
/// in five claims packets past its newest received too — maybe past the newest sent (a forged
/// packet accepted: `Intake::Ahead`, settled as of the newest sent).
pub(super) fn with_lie(feedback: Vec<u8>, rng: &mut ChaCha8Rng, lies: &mut usize) -> Vec<u8> {
    if !rng.random_bool(0.05) {
        return feedback;
    }
    let mut f = read_feedback(&feedback).expect("a client's own feedback decodes");
    if rng.random_bool(0.2) {
        let ahead = rng.random_range(1..4);
        f.received.shift(ahead);
        f.received.set(0);
        f.highest = shadowrep::ids::Seq(f.highest.0 + ahead);
    } else {
        let Some(back) = (1..8).find(|&b| !f.received.get(b) && f.highest.0 > b) else { return feedback };
        f.received.set(back);
    }
    *lies += 1;
    written(&f)
}

impl Sim {
    /// A client joins (with the level's static actors loaded), a replay connection or not.
    pub(super) fn join(&mut self, replay: bool) {
        let conn = self.driver.add_connection(replay);
        let bag = bag(self.dynamic, self.defaults, self.wide);
        let layouts = if self.bags_first { [bag, thing()] } else { [thing(), bag] };
        let mut world = ClientWorld::new(&layouts, &self.driver.checksums())
            .and_then(|w| w.with_fast_array_kinds(&[slots()], &self.driver.fast_array_checksums()))
            .unwrap();
        for (path, _) in self.statics.iter().zip(&self.static_sublevels).filter(|s| *s.1 == SublevelId::PERSISTENT) {
            world.load_static_actor(path, self.thing.0).unwrap();
        }
        let speed = [4_000, 12_000, 100_000][self.rng.random_range(0..3)];
        self.driver.set_net_speed(conn, speed).unwrap();
        if self.net_groups {
            let groups = Self::game_groups(&mut self.groups_rng);
            self.driver.set_connection_net_groups(conn, groups).unwrap();
        }
        self.clients.push((conn, world));
        if self.sublevels {
            for l in 1..=2 {
                if self.rng.random_bool(0.5) {
                    self.stream(self.clients.len() - 1, SublevelId(l), true);
                }
            }
        }
    }

    /// Client `c` streams sublevel `l` in (its static actors loaded, then the server told) or
    /// out (unloaded, then told), as a game does.
    pub(super) fn stream(&mut self, c: usize, l: SublevelId, load: bool) {
        let (conn, world) = &mut self.clients[c];
        for (path, _) in self.statics.iter().zip(&self.static_sublevels).filter(|s| *s.1 == l) {
            if load {
                // (One a destroy's close took is loaded again: the server tells it again.)
                world.load_static_actor(path, self.thing.0).unwrap();
            } else {
                // (False for one a destroy's close took.)
                world.unload_static_actor(path);
            }
        }
        self.driver.set_sublevel_loaded(*conn, l, load).unwrap();
        self.sublevel_changes += 1;
    }
}
