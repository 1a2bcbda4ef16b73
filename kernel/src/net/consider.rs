//! The consider list's clock: when an actor is due for replication (UE's `NextUpdateTime`).
//!
//! ```text
//! due(now)          pending_net_update || now > next_update_time
//! considered        next = now + jitter·tick + interval (a pending actor keeps its time)
//!   interval        1 / NetUpdateFrequency;  adaptive (off by default, as in UE 5):
//!                   the optimal delta, which backs off towards 1 / MinNetUpdateFrequency while the
//!                   actor has nothing to send and recovers when it does
//! force_net_update  next = now − 0.01 (due on the next frame)
//! jitter            a hash of (NetGUID, frame) in [0, 1): the same whatever the sharding,
//!                   unlike UE's FRand
//! ```
//!
//! Times are seconds of server time as `f64` (UE's `double` `ElapsedTime`).

use crate::ids::{Frame, NetGuid};

/// UE's `NetServerMaxTickRate` default: 30 Hz.
pub const DEFAULT_TICK_RATE: f64 = 30.0;

/// Seconds without a real send after which adaptive frequency starts backing off (UE: 2 s).
pub const ADAPTIVE_BACKOFF_AFTER: f64 = 2.0;

/// Seconds over which adaptive frequency backs off completely (UE: 5 s).
pub const ADAPTIVE_BACKOFF_SPAN: f64 = 5.0;

/// Where a frame stands in server time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ServerTime {
    /// The frame.
    pub frame: Frame,
    /// Seconds of server time now.
    pub now: f64,
    /// Seconds per tick (1 / the tick rate).
    pub tick: f64,
}

/// How often an actor wants to replicate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UpdateFrequency {
    /// `NetUpdateFrequency` in Hz (UE's AActor default 100).
    pub net_update_frequency: f32,
    /// `MinNetUpdateFrequency` in Hz (UE's default 2).
    pub min_net_update_frequency: f32,
}

impl Default for UpdateFrequency {
    fn default() -> Self {
        Self { net_update_frequency: 100.0, min_net_update_frequency: 2.0 }
    }
}

impl UpdateFrequency {
    fn fastest(&self) -> f64 {
        1.0 / (self.net_update_frequency.max(1e-3) as f64)
    }

    /// The slowest interval: `1 / MinNetUpdateFrequency`, where a frequency of 0 means UE's 2 Hz
    /// (`ServerReplicateActors_BuildConsiderList` replaces 0 with 2 before scaling down).
    fn slowest(&self) -> f64 {
        let min = if self.min_net_update_frequency == 0.0 { 2.0 } else { self.min_net_update_frequency.max(1e-3) };
        self.fastest().max(1.0 / min as f64)
    }
}

/// One actor's consider-list clock.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ConsiderClock {
    /// Server time after which the actor is due.
    pub next_update_time: f64,
    /// Server time it last sent something (adaptive frequency).
    pub last_replicate_time: f64,
    /// The adaptive interval (0 before the first send: the fastest).
    pub optimal_delta: f64,
    /// Left over by a saturated frame: considered next frame whatever its time.
    pub pending_net_update: bool,
}

/// A jitter in `[0, 1)` from (GUID, frame): deterministic and independent of sharding.
pub fn jitter(guid: NetGuid, frame: Frame) -> f64 {
    let mut z = guid.0 ^ (frame.0 as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

impl ConsiderClock {
    /// Whether the actor is considered at server time `now`.
    pub fn due(&self, now: f64) -> bool {
        self.pending_net_update || now > self.next_update_time
    }

    /// The time after which the actor is due: its next update time, or −∞ while pending (so
    /// `now > due_at()` is [`Self::due`] for any finite `now`).
    pub fn due_at(&self) -> f64 {
        if self.pending_net_update {
            f64::NEG_INFINITY
        } else {
            self.next_update_time
        }
    }

    /// The actor was considered at `t`. Schedules the next time — unless it was only pending
    /// (left over by a saturated frame), which keeps the time already scheduled, as UE does.
    pub fn considered(&mut self, guid: NetGuid, t: &ServerTime, f: &UpdateFrequency, adaptive: bool) {
        let interval = if adaptive { self.adapt(t.now, f) } else { f.fastest() };
        if !self.pending_net_update {
            self.next_update_time = t.now + jitter(guid, t.frame) * t.tick + interval;
        }
        self.pending_net_update = false;
    }

    /// UE's adaptive rule at consider time (`ServerReplicateActors_BuildConsiderList`): first
    /// seen, the interval is the fastest; more than 2 s since the last real send backs it off
    /// towards the slowest over 5 s. Otherwise it is what the last sends made it
    /// ([`Self::replicated`]).
    fn adapt(&mut self, now: f64, f: &UpdateFrequency) -> f64 {
        if self.optimal_delta == 0.0 {
            self.optimal_delta = f.fastest();
            self.last_replicate_time = now;
        }
        let since = now - self.last_replicate_time;
        if since > ADAPTIVE_BACKOFF_AFTER {
            let alpha = ((since - ADAPTIVE_BACKOFF_AFTER) / ADAPTIVE_BACKOFF_SPAN).clamp(0.0, 1.0);
            self.optimal_delta = f.fastest() + (f.slowest() - f.fastest()) * alpha;
        }
        self.optimal_delta
    }

    /// UE's adaptive rule at send time (`ServerReplicateActors_ProcessPrioritizedActors`): after
    /// a frame in which `sends` connections were sent something of the actor (its
    /// `ReplicateActor` wrote a bunch), each send set the interval to 0.7 × the time since the
    /// last one, clamped to [fastest, slowest], and moved the last-send time to now — so a second
    /// send in the same frame found 0 s and left the fastest. It shapes the next schedule, not
    /// the one this frame's consider made.
    pub fn replicated(&mut self, now: f64, f: &UpdateFrequency, sends: u32) {
        if sends == 0 {
            return;
        }
        let since = now - self.last_replicate_time;
        self.optimal_delta = if sends > 1 { f.fastest() } else { (0.7 * since).clamp(f.fastest(), f.slowest()) };
        self.last_replicate_time = now;
    }

    /// UE's `ForceNetUpdate`: due on the next frame.
    pub fn force_net_update(&mut self, now: f64) {
        self.next_update_time = now - 0.01;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Frames (of one second at `rate` Hz) on which an actor of `hz` is considered.
    fn considered_frames(hz: f32, rate: f64, seconds: u32, guid: u64) -> Vec<u32> {
        let f = UpdateFrequency { net_update_frequency: hz, ..UpdateFrequency::default() };
        let tick = 1.0 / rate;
        let mut clock = ConsiderClock::default();
        let mut out = Vec::new();
        for frame in 1..=(seconds as f64 * rate) as u32 {
            let now = frame as f64 * tick;
            if clock.due(now) {
                out.push(frame);
                clock.considered(NetGuid(guid), &ServerTime { frame: Frame(frame), now, tick }, &f, false);
            }
        }
        out
    }

    #[test]
    fn ten_hertz_at_a_thirty_hertz_tick_is_considered_six_to_ten_times_a_second() {
        for guid in [2, 4, 1000, 123_456] {
            let frames = considered_frames(10.0, 30.0, 10, guid);
            for second in 0..10 {
                let n = frames.iter().filter(|&&f| (f - 1) / 30 == second).count();
                assert!((6..=10).contains(&n), "guid {guid}, second {second}: {n} times");
            }
            // Never two frames in a row, never more than the interval plus a tick apart.
            for w in frames.windows(2) {
                let gap = w[1] - w[0];
                assert!((3..=5).contains(&gap), "guid {guid}: a gap of {gap} frames");
            }
        }
        assert_eq!(considered_frames(10.0, 30.0, 3, 2), considered_frames(10.0, 30.0, 3, 2), "deterministic");
    }

    #[test]
    fn an_actor_faster_than_the_tick_skips_a_frame_exactly_when_its_jitter_says_so() {
        // UE's formula adds up to a tick of jitter: a 100 Hz actor at 30 Hz is considered the
        // next frame unless jitter · tick + 1/100 reaches a whole tick.
        let (rate, hz, guid) = (30.0, 100.0f32, 8);
        let frames = considered_frames(hz, rate, 4, guid);
        for w in frames.windows(2) {
            let skip = jitter(NetGuid(guid), Frame(w[0])) / rate + 1.0 / hz as f64 >= 1.0 / rate;
            assert_eq!(w[1] - w[0], if skip { 2 } else { 1 }, "after frame {}", w[0]);
        }
        assert!(frames.len() > 80 && frames.len() < 120, "{} of 120 frames", frames.len());
    }

    #[test]
    fn jitter_is_uniform_enough_and_depends_on_guid_and_frame() {
        let xs: Vec<f64> = (0..10_000).map(|i| jitter(NetGuid(2 * i + 2), Frame(7))).collect();
        assert!(xs.iter().all(|x| (0.0..1.0).contains(x)));
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        assert!((mean - 0.5).abs() < 0.02, "mean {mean}");
        assert_ne!(jitter(NetGuid(2), Frame(1)), jitter(NetGuid(2), Frame(2)));
    }

    #[test]
    fn force_and_pending_make_an_actor_due() {
        let mut c = ConsiderClock::default();
        let t = ServerTime { frame: Frame(1), now: 1.0, tick: 1.0 / 30.0 };
        c.considered(NetGuid(2), &t, &UpdateFrequency { net_update_frequency: 1.0, ..Default::default() }, false);
        assert!(!c.due(1.5));
        c.force_net_update(1.5);
        assert!(c.due(1.5));
        c.next_update_time = 100.0;
        c.pending_net_update = true;
        assert!(c.due(1.6));
    }

    #[test]
    fn adaptive_frequency_backs_off_in_silence_and_recovers() {
        let f = UpdateFrequency { net_update_frequency: 10.0, min_net_update_frequency: 2.0 };
        let tick = 1.0 / 30.0;
        let at = |frame, now| ServerTime { frame: Frame(frame), now, tick };
        let mut c = ConsiderClock::default();
        c.considered(NetGuid(2), &at(1, 0.0), &f, true);
        assert!((c.optimal_delta - 0.1).abs() < 1e-9, "starts at the fastest");
        // Silent for 2 + 5 seconds: all the way to 1 / MinNetUpdateFrequency.
        c.considered(NetGuid(2), &at(2, 7.0), &f, true);
        assert!((c.optimal_delta - 0.5).abs() < 1e-9, "{}", c.optimal_delta);
        // Halfway through the back-off span.
        let mut h = ConsiderClock::default();
        h.considered(NetGuid(2), &at(1, 0.0), &f, true);
        h.considered(NetGuid(2), &at(2, 4.5), &f, true);
        assert!((h.optimal_delta - 0.3).abs() < 1e-9, "{}", h.optimal_delta);
        // A send after 3 s of silence: the consider before it scheduled 0.1 + 0.4 × 0.2 = 0.18 s
        // (UE's back-off), and the send sets 0.7 × 3 s clamped to the slowest for the next one.
        let mut s = ConsiderClock::default();
        s.considered(NetGuid(2), &at(1, 0.0), &f, true);
        s.considered(NetGuid(2), &at(2, 3.0), &f, true);
        let scheduled = s.next_update_time - 3.0;
        assert!(scheduled >= 0.18 - 1e-9 && scheduled < 0.18 + tick, "{scheduled}");
        s.replicated(3.0, &f, 1);
        assert!((s.optimal_delta - 0.5).abs() < 1e-9, "{}", s.optimal_delta);
        // The next send a tenth of a second later pulls it back to the fastest; so does any frame
        // with sends to two connections (the second finds 0 s since the first).
        s.replicated(3.1, &f, 1);
        assert!((s.optimal_delta - 0.1).abs() < 1e-9, "{}", s.optimal_delta);
        s.replicated(4.0, &f, 1);
        assert!((s.optimal_delta - 0.5).abs() < 1e-9, "0.7 × 0.9 s, clamped: {}", s.optimal_delta);
        s.replicated(5.0, &f, 2);
        assert!((s.optimal_delta - 0.1).abs() < 1e-9, "{}", s.optimal_delta);
        // No send: nothing moves.
        s.replicated(9.0, &f, 0);
        assert_eq!((s.optimal_delta, s.last_replicate_time), (0.1, 5.0));
        // A MinNetUpdateFrequency of 0 backs off to UE's 2 Hz, not to forever.
        let zero = UpdateFrequency { net_update_frequency: 10.0, min_net_update_frequency: 0.0 };
        let mut z = ConsiderClock::default();
        z.considered(NetGuid(2), &at(1, 0.0), &zero, true);
        z.considered(NetGuid(2), &at(2, 7.0), &zero, true);
        assert!((z.optimal_delta - 0.5).abs() < 1e-9, "{}", z.optimal_delta);
    }
}
