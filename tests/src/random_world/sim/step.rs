//! A frame of the world ([`Sim::step`]): the kernel ticks, then the reference; each client's
//! packets, compared byte for byte with the reference's, go down the lossy link; its feedback
//! goes up to both sides — at once, or held and arriving among the game's next calls
//! ([`Sim::arrive`]), now and then with an earlier one delivered again.

use super::{Sim, AFTER_THE_CALLS};
use rand::Rng;
use shadowrep::ids::ConnectionId;

impl Sim {
    /// One frame: the kernel ticks, then the reference; packets go down the link to the clients,
    /// their feedback up to both. A client refusing a packet is an error: the kernel sent what a
    /// client cannot read.
    pub(in crate::random_world) fn step(&mut self) -> Result<(), String> {
        let frame = self.frames;
        // Feedback held over from the last step and not yet arrived among the game's calls
        // arrives now, after them.
        self.arrive(AFTER_THE_CALLS);
        if let Some(failure) = self.failure.take() {
            return Err(failure);
        }
        self.driver.tick(&mut [&mut self.things, &mut self.bags]).map_err(|e| format!("frame {frame}: kernel: {e}"))?;
        let tick = self
            .reference
            .tick(&self.driver, &mut [&mut self.bags, &mut self.things])
            .map_err(|e| format!("frame {frame}: reference: {e}"))?;
        if tick.missed_slots > 0 {
            return Err(format!(
                "frame {frame}: reference: {} slots changed outside the driver's log",
                tick.missed_slots
            ));
        }
        self.frames += 1;
        self.most_asleep = self.most_asleep.max(self.driver.asleep_actors());
        if self.loss > 0.0 && (self.frames == 40 || self.link.random_bool(0.01)) {
            let c = self.clients[self.link.random_range(0..self.clients.len())].0;
            let until = self.frames + self.link.random_range(90..180);
            self.dark.insert(c, until);
        }
        // (Delivered once every client's packets are compared and received: feedback changes no
        // packet already written.)
        let mut now = Vec::new();
        for (conn, world) in &mut self.clients {
            let dark = self.dark.get(conn).is_some_and(|&until| self.frames < until);
            let packets = self.driver.take_packets(*conn).unwrap();
            // Byte for byte what the reference wrote: the same decisions write the same values.
            let reference: Vec<&[u8]> = self.reference.packets(*conn).collect();
            if let Some(i) = (0..packets.len().max(reference.len()))
                .find(|&i| packets.get(i).map(Vec::as_slice) != reference.get(i).copied())
            {
                let mut layouts = [self.things.layout(), self.bags.layout()];
                if self.bags_first {
                    layouts.swap(0, 1);
                }
                let what = match (packets.get(i), reference.get(i)) {
                    (Some(k), Some(r)) => super::differ::describe(k, r, &layouts, world),
                    (k, r) => format!(
                        "kernel {} bytes, reference {} bytes",
                        k.map_or(0, |k| k.len()),
                        r.map_or(0, |r| r.len())
                    ),
                };
                return Err(format!(
                    "frame {frame}: connection {conn:?}: packet {i} differs from the reference's: {what}"
                ));
            }
            for p in packets {
                if dark || self.loss > 0.0 && self.link.random_bool(self.loss) {
                    self.dropped += 1;
                    continue;
                }
                match world.receive(&p) {
                    Err(_) if self.lying_feedback => self.refused += 1,
                    r => {
                        r.map_err(|e| format!("frame {frame}: connection {conn:?} refused a packet: {e}"))?;
                    }
                }
            }
            // A silent client's answers wait (past the ready timeout the server stops sending
            // to it), then come all at once.
            if self.silent.get(conn).is_some_and(|&until| self.frames < until) {
                continue;
            }
            let mut feedback = world.feedback();
            if self.stale_reopens {
                feedback = super::clients::with_stale_reopen(
                    world,
                    feedback,
                    (&mut self.reopen_rng, &mut self.held_once, &mut self.stale_requests),
                );
            }
            if self.lying_feedback {
                feedback = super::clients::with_lie(feedback, &mut self.lie_rng, &mut self.lies);
            }
            if self.late_feedback && self.late_rng.random_bool(0.5) {
                let cut = if self.interleaved_feedback {
                    self.cut_rng.random_range(0..=AFTER_THE_CALLS)
                } else {
                    AFTER_THE_CALLS
                };
                self.held_feedback.push((*conn, feedback, cut));
                continue;
            }
            now.push((*conn, feedback));
        }
        for (conn, feedback) in now {
            self.deliver(conn, feedback, frame)?;
        }
        Ok(())
    }

    /// The held feedback whose point among the game's calls is `point` arrives (a client that
    /// left meanwhile: its datagram finds no connection, and is dropped). A failure is kept for
    /// the step to report; nothing more arrives after one.
    pub(in crate::random_world) fn arrive(&mut self, point: u8) {
        if self.held_feedback.is_empty() || self.failure.is_some() {
            return;
        }
        let (now, later): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.held_feedback).into_iter().partition(|h| h.2 <= point);
        self.held_feedback = later;
        for (conn, feedback, _) in now {
            if !self.clients.iter().any(|&(c, _)| c == conn) {
                continue;
            }
            self.late_feedbacks += 1;
            self.among_calls += usize::from(point < AFTER_THE_CALLS);
            if let Err(e) = self.deliver(conn, feedback, self.frames) {
                self.failure = Some(e);
                return;
            }
        }
    }

    /// Client `conn`'s `feedback` to the kernel and the reference — with
    /// [`super::Spec::replayed_feedback`], now and then an earlier one of its feedbacks again,
    /// before or after it.
    fn deliver(&mut self, conn: ConnectionId, feedback: Vec<u8>, frame: u32) -> Result<(), String> {
        // (before, after): an earlier feedback delivered again on either side of this one.
        let (mut before, mut after) = (None, None);
        if self.replayed_feedback && self.replay_rng.random_bool(0.1) {
            let earlier: Vec<&Vec<u8>> = self.delivered.iter().filter(|(c, _)| *c == conn).map(|(_, f)| f).collect();
            if !earlier.is_empty() {
                let again = earlier[self.replay_rng.random_range(0..earlier.len())].clone();
                *(if self.replay_rng.random_bool(0.5) { &mut before } else { &mut after }) = Some(again);
                self.replays += 1;
            }
        }
        for f in before.iter().chain([&feedback]).chain(after.iter()) {
            self.driver.receive_feedback(conn, f).map_err(|e| format!("frame {frame}: kernel: {e}"))?;
            self.reference
                .receive_feedback(&self.driver, conn, f)
                .map_err(|e| format!("frame {frame}: reference: {e}"))?;
        }
        if self.replayed_feedback {
            if self.delivered.len() == 64 {
                self.delivered.pop_front();
            }
            self.delivered.push_back((conn, feedback));
        }
        Ok(())
    }
}
