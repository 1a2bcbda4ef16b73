//! A connection's bandwidth budget (UE's `QueuedBits` and `IsNetReady`).
//!
//! ```text
//! each tick     queued −= net_speed × 8 × Δ            (Δ at most 1 / min(tick rate, MaxNetTickRate))
//!               queued  = max(queued, −2 × that allowance)   (at most two ticks of credit)
//! each packet   queued += (its bytes + packet overhead) × 8
//! net ready     queued + bits written but not yet counted ≤ 0
//!               (the payload so far, and the overhead of each packet finished)
//! ```
//!
//! A saturated connection stops its frame; what was left is considered next frame. Replay
//! connections are never saturated (UE's `IsReplay` → ready).
//!
//! The packet overhead is UE's `PacketOverhead`, which `FlushNet` charges with every packet:
//! for `UIpConnection`, the IPv4 and UDP headers (20 + 8 bytes). Without it a connection of
//! small packets went over its net speed by a third (a quiet 30 Hz frame of ~70 bytes), and
//! a busy one saturated later than UE's would.
//!
//! The cap on Δ is UE's `BandwidthDeltaTime` (`UNetConnection::Tick`: the frame time clamped to
//! `1 / DesiredTickRate`, the smaller of the server's tick rate and `MaxNetTickRate`), so a hitch
//! does not bank a burst. (This module once took Δ as *at least* 1/120 s, which at tick rates
//! above 120 Hz granted more than the net speed.)

use super::DriverError;

/// UE 5's default `ConfiguredInternetSpeed` / `MaxClientRate`: bytes per second.
pub const DEFAULT_NET_SPEED: u32 = 100_000;

/// Refuses a net speed of 0 bytes a second: such a connection would never drain what it was
/// sent ([`DriverError::BadNetSetting`]).
pub(crate) fn check_net_speed(bytes_per_second: u32) -> Result<(), DriverError> {
    if bytes_per_second == 0 {
        return Err(DriverError::BadNetSetting {
            setting: "net speed",
            value: 0.0,
            expected: "at least 1 byte per second",
        });
    }
    Ok(())
}

/// Bytes each packet costs beyond its payload (UE's `PacketOverhead` of a `UIpConnection`:
/// an IPv4 header of 20 bytes and a UDP header of 8).
pub const DEFAULT_PACKET_OVERHEAD: u32 = 28;

/// UE's `MaxNetTickRate`: a tick counts at most 1/120 s of allowance, whatever the tick rate.
pub const MAX_NET_TICK_RATE: f64 = 120.0;

/// The bandwidth state of one connection.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Budget {
    /// Bytes per second the connection may receive.
    pub net_speed: u32,
    /// Bits sent beyond the allowance so far (negative: credit).
    pub queued_bits: f64,
    /// Never saturated.
    pub replay: bool,
    /// Bytes each packet costs beyond its payload ([`DEFAULT_PACKET_OVERHEAD`]).
    pub packet_overhead: u32,
}

impl Budget {
    /// A budget of `net_speed` bytes per second, each packet costing
    /// [`DEFAULT_PACKET_OVERHEAD`] bytes beyond its payload.
    pub fn new(net_speed: u32, replay: bool) -> Self {
        Self { net_speed, queued_bits: 0.0, replay, packet_overhead: DEFAULT_PACKET_OVERHEAD }
    }

    /// A new tick of `delta` seconds on a server ticking `tick_rate` times a second: the
    /// allowance (of at most one tick's time) drains the queue, down to two ticks of credit.
    pub fn tick(&mut self, delta: f64, tick_rate: f64) {
        let desired = if tick_rate > 0.0 { tick_rate.min(MAX_NET_TICK_RATE) } else { MAX_NET_TICK_RATE };
        let a = self.net_speed as f64 * 8.0 * delta.clamp(0.0, 1.0 / desired);
        self.queued_bits = (self.queued_bits - a).max(-2.0 * a);
    }

    /// Whether the connection may send more, with `pending_bits` written and not yet counted.
    pub fn ready(&self, pending_bits: f64) -> bool {
        self.replay || self.queued_bits + pending_bits <= 0.0
    }

    /// The most bits that may be written and not yet counted with the connection still net
    /// ready — [`Self::ready`] as one integer compare, for a loop that asks after every send
    /// while nothing is counted (`bits ≤ limit` ⇔ `ready(bits)`; negative: none may).
    ///
    /// Exact: for a whole number of bits `p`, `queued + p ≤ 0` ⇔ `p ≤ ⌊−queued⌋`, and the
    /// floating sum cannot round across zero.
    pub fn ready_limit(&self) -> i64 {
        if self.replay {
            i64::MAX
        } else if self.queued_bits.is_nan() {
            // `ready` says no to everything then (a comparison with NaN is false).
            i64::MIN
        } else {
            // (Saturating: an infinite or huge queue gives i64::MIN or MAX, as `ready` answers.)
            (-self.queued_bits).floor() as i64
        }
    }

    /// Bits a frame's writing so far counts for [`Self::ready`]: `payload_bits` written, and the
    /// overhead of the `finished` packets among them (UE's `FlushNet` charges a packet as it
    /// goes; the open packet is charged its overhead once finished).
    pub fn pending_bits(&self, payload_bits: usize, finished: usize) -> usize {
        payload_bits + finished * self.packet_overhead as usize * 8
    }

    /// Counts `packets` packets of `bytes` payload in all, sent.
    pub fn sent(&mut self, bytes: usize, packets: usize) {
        self.queued_bits += (bytes + packets * self.packet_overhead as usize) as f64 * 8.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tick_drains_the_queue_and_banks_at_most_two_ticks() {
        let mut b = Budget::new(DEFAULT_NET_SPEED, false);
        let tick = 1.0 / 30.0;
        let per_tick = 100_000.0 * 8.0 * tick;
        b.tick(tick, 30.0);
        assert!((b.queued_bits + per_tick).abs() < 1e-6, "one tick of credit");
        for _ in 0..10 {
            b.tick(tick, 30.0);
        }
        assert!((b.queued_bits + 2.0 * per_tick).abs() < 1e-6, "never more than two ticks of credit");
        // Sending three ticks' worth saturates it.
        b.sent((3.0 * per_tick / 8.0) as usize, 0);
        assert!(!b.ready(0.0));
        b.tick(tick, 30.0);
        assert!(b.ready(0.0), "one tick later it may send again");
        assert!(!b.ready(per_tick), "but not another tick's worth");
    }

    #[test]
    fn a_frame_at_100_kb_per_second_carries_about_3_3_kb() {
        let mut b = Budget::new(DEFAULT_NET_SPEED, false);
        let tick = 1.0 / 30.0;
        let mut sent = 0usize;
        for _ in 0..300 {
            b.tick(tick, 30.0);
            while b.ready(0.0) {
                b.sent(1000, 0);
                sent += 1000;
            }
        }
        let per_second = sent as f64 / 10.0;
        assert!((per_second - 100_000.0).abs() < 4_000.0, "{per_second} bytes per second");
    }

    /// Bytes a budget of 6 000 B/s lets through in `seconds` of ticks at `rate`, each tick
    /// `delta` long (a connection that sends whenever it may).
    fn sent_over(rate: f64, delta: f64, seconds: f64) -> f64 {
        let mut b = Budget::new(6000, false);
        let mut sent = 0usize;
        for _ in 0..(seconds * rate).round() as usize {
            b.tick(delta, rate);
            while b.ready(0.0) {
                b.sent(10, 0);
                sent += 10;
            }
        }
        sent as f64
    }

    #[test]
    fn a_fast_tick_rate_gets_the_net_speed_and_no_more() {
        // 240 Hz: each tick is 1/240 s of allowance (a floor of 1/120 s granted twice the speed).
        let per_second = sent_over(240.0, 1.0 / 240.0, 10.0) / 10.0;
        assert!((per_second - 6000.0).abs() < 100.0, "{per_second} bytes per second at 240 Hz");
        let per_second = sent_over(30.0, 1.0 / 30.0, 10.0) / 10.0;
        assert!((per_second - 6000.0).abs() < 100.0, "{per_second} bytes per second at 30 Hz");
    }

    #[test]
    fn a_hitch_banks_no_burst() {
        // Ticks of 0.5 s on a 30 Hz server: each counts one tick's allowance (UE's cap on
        // BandwidthDeltaTime), not half a second's.
        let sent = sent_over(30.0, 0.5, 1.0);
        let one_tick = 6000.0 / 30.0;
        assert!(sent <= 30.0 * one_tick + 10.0, "{sent} bytes in 30 hitched ticks");
        assert!(sent >= 30.0 * one_tick - 10.0, "{sent} bytes in 30 hitched ticks");
    }

    #[test]
    fn the_ready_limit_answers_as_ready_does() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(58);
        let mut next = move || rng.random::<u64>();
        let mut budget = Budget::new(DEFAULT_NET_SPEED, false);
        for i in 0..20_000 {
            // Queues around zero, with fractions, whole and huge ones among them.
            budget.queued_bits = match i % 5 {
                0 => (next() % 20_000) as f64 / 3.0 - 3_333.0,
                1 => (next() % 2_000) as f64 - 1_000.0,
                2 => -((next() % 100) as f64) - 0.5,
                3 => ((next() % (1 << 40)) as f64 - (1u64 << 39) as f64) / 7.0,
                // The edges: zero of both signs, infinities, huge values, NaN.
                _ => [0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, 1e300, -1e300, f64::NAN][i / 5 % 7],
            };
            let limit = budget.ready_limit();
            for bits in [0, 1, limit.max(0), limit.max(0).saturating_add(1), (next() % 8_000) as i64] {
                assert_eq!(budget.ready(bits as f64), bits <= limit, "queued {} bits {bits}", budget.queued_bits);
            }
        }
        assert_eq!(Budget::new(1, true).ready_limit(), i64::MAX, "a replay is never saturated");
    }

    #[test]
    fn replays_are_never_saturated() {
        let mut b = Budget::new(1, true);
        b.sent(1 << 20, 1);
        assert!(b.ready(1e9));
    }
}
