//! A simulated lossy link: seeded loss, duplication, reordering and latency, counted in frames.
//!
//! One [`Link`] carries datagrams one way. Each [`Link::send`] decides the datagram's fate from the
//! link's own seeded generator: dropped with probability `loss`; otherwise delivered after
//! `latency` frames plus up to `jitter` more, and with probability `reorder` held back a few frames
//! more so later datagrams overtake it; with probability `duplicate` a second copy travels with an
//! independent delay. [`Link::tick`] advances one frame and returns what arrives, in arrival order.
//! The same seed and the same calls give the same deliveries.

/// How a link misbehaves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkConfig {
    /// Probability a datagram is lost.
    pub loss: f64,
    /// Probability a datagram is delivered twice.
    pub duplicate: f64,
    /// Probability a datagram is held back so later ones overtake it.
    pub reorder: f64,
    /// Frames every datagram takes.
    pub latency: u32,
    /// Extra frames, uniform in `0..=jitter`.
    pub jitter: u32,
    /// Generator seed.
    pub seed: u64,
}

impl LinkConfig {
    /// A perfect link with the given latency.
    pub fn perfect(latency: u32) -> Self {
        Self { loss: 0.0, duplicate: 0.0, reorder: 0.0, latency, jitter: 0, seed: 1 }
    }

    /// A link that loses `loss` of its datagrams and also duplicates, reorders and jitters.
    pub fn lossy(loss: f64, seed: u64) -> Self {
        Self { loss, duplicate: 0.05, reorder: 0.1, latency: 2, jitter: 2, seed }
    }
}

/// One direction of a simulated connection.
#[derive(Clone, Debug)]
pub struct Link {
    cfg: LinkConfig,
    state: u64,
    now: u64,
    order: u64,
    queue: Vec<(u64, u64, Vec<u8>)>,
    sent: u64,
    lost: u64,
}

impl Link {
    /// A link with `cfg`.
    pub fn new(cfg: LinkConfig) -> Self {
        Self { state: cfg.seed ^ 0x9e37_79b9_7f4a_7c15, cfg, now: 0, order: 0, queue: Vec::new(), sent: 0, lost: 0 }
    }

    /// Changes how the link behaves from now on (datagrams in flight keep their fate).
    pub fn set_config(&mut self, cfg: LinkConfig) {
        self.cfg = LinkConfig { seed: self.cfg.seed, ..cfg };
    }

    /// SplitMix64: small, seeded, good enough for fault injection.
    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && ((self.next() >> 11) as f64 / (1u64 << 53) as f64) < p
    }

    fn delay(&mut self) -> u64 {
        let mut d = self.cfg.latency as u64;
        if self.cfg.jitter > 0 {
            d += self.next() % (self.cfg.jitter as u64 + 1);
        }
        if self.chance(self.cfg.reorder) {
            d += 1 + self.next() % 3;
        }
        d
    }

    /// Sends one datagram.
    pub fn send(&mut self, bytes: Vec<u8>) {
        self.sent += 1;
        if self.chance(self.cfg.loss) {
            self.lost += 1;
            return;
        }
        if self.chance(self.cfg.duplicate) {
            let at = self.now + self.delay();
            self.order += 1;
            self.queue.push((at, self.order, bytes.clone()));
        }
        let at = self.now + self.delay();
        self.order += 1;
        self.queue.push((at, self.order, bytes));
    }

    /// Advances one frame; returns the datagrams that arrive, in arrival order.
    pub fn tick(&mut self) -> Vec<Vec<u8>> {
        self.now += 1;
        let now = self.now;
        let mut due: Vec<(u64, u64, Vec<u8>)> = Vec::new();
        let mut i = 0;
        while i < self.queue.len() {
            if self.queue[i].0 <= now {
                due.push(self.queue.swap_remove(i));
            } else {
                i += 1;
            }
        }
        due.sort_by_key(|d| (d.0, d.1));
        due.into_iter().map(|d| d.2).collect()
    }

    /// Datagrams in flight.
    pub fn in_flight(&self) -> usize {
        self.queue.len()
    }

    /// (sent, lost) so far.
    pub fn counts(&self) -> (u64, u64) {
        (self.sent, self.lost)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_perfect_link_delivers_everything_in_order_after_its_latency() {
        let mut l = Link::new(LinkConfig::perfect(2));
        l.send(vec![1]);
        l.send(vec![2]);
        assert!(l.tick().is_empty());
        assert_eq!(l.tick(), vec![vec![1], vec![2]]);
        assert_eq!(l.in_flight(), 0);
    }

    #[test]
    fn a_lossy_link_loses_duplicates_and_reorders_reproducibly() {
        let run = || {
            let mut l = Link::new(LinkConfig::lossy(0.3, 9));
            let mut got = Vec::new();
            for i in 0..2000u32 {
                l.send(i.to_le_bytes().to_vec());
                got.extend(l.tick());
            }
            for _ in 0..20 {
                got.extend(l.tick());
            }
            (got, l.counts())
        };
        let (a, (sent, lost)) = run();
        assert_eq!(a, run().0, "same seed, same deliveries");
        assert!((500..700).contains(&lost), "about 30 % lost: {lost} of {sent}");
        let ids: Vec<u32> = a.iter().map(|b| u32::from_le_bytes(b[..4].try_into().unwrap())).collect();
        assert!(ids.windows(2).any(|w| w[1] < w[0]), "some reordering");
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert!(sorted.len() < ids.len(), "some duplicates");
    }
}
