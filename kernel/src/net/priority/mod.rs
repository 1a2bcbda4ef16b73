//! UE's actor priority (`AActor::GetNetPriority`) and the per-connection send order.
//!
//! ```text
//! T = seconds since the actor was last sent to this connection (no channel yet: 1 s, UE's
//!     SpawnPrioritySeconds)
//! view target (or instigated by it)        T × 4, no distance terms
//! the viewer's own actor (real viewer)      T × 4, no distance terms (APlayerController's override)
//! else, D = actor − view, d² = |D|², dot = view direction · D:
//!   behind (dot < 0):  d² > 2000² → T × 0.2;  else d² > 500² → T × 0.4
//!   ahead within 45° (dot² > ½ d²) and d² < 8000²  → T × 2
//!   otherwise d² > 3162²                      → T × 0.4
//! priority = NetPriority × T; a connection's key = max over its viewers of round(65536 × p)
//! send order: keys descending, ties by NetGuid ascending (so every order is defined)
//! ```
//!
//! A class may override the formula, as a game's actor overrides `GetNetPriority`
//! ([`PriorityHook`], set with [`crate::net::NetDriver::set_priority_hook`]).
//!
//! A starved actor rises: T grows every frame it is not sent. [`select_top`] orders only what
//! a frame can carry — a partial selection (`select_nth_unstable_by`) then a sort of the chosen
//! few — never a full sort of everything relevant. A connection of the actor level holds its
//! candidates as one integer each (`SendOrder`): the key, the actor's rank by GUID among the
//! frame's due actors (ranked once a frame for every connection), and the candidate's index —
//! its keys computed eight candidates at a time (`priorities`), its chosen few sorted by
//! [`KeySort`] (an AVX-512 merge sort where it is the faster, `sort_unstable` elsewhere).

#[cfg(target_arch = "x86_64")]
mod avx512;
mod sort;

pub use sort::{KeySort, SortPath};

use crate::ids::NetGuid;
use crate::net::relevancy::{ActorRelevancy, Viewer, MAX_OWNER_DEPTH};
use std::cmp::Ordering;
use std::sync::Arc;

/// A class's own priority (UE's `GetNetPriority` override): given what UE's formula reads of
/// the actor (its owner chain followed), the seconds since its channel last replicated to the
/// connection and one viewer, it returns the priority for that viewer. `input.priority(t,
/// viewer)` is UE's own answer (`Super::GetNetPriority`), so a hook that scales or adds to it
/// keeps the time, distance and view-target terms. Called once per (candidate, viewer) the frame
/// ranks; a connection's key is the max over its viewers, and a NaN, negative or zero answer
/// ranks last (key 0).
///
/// As UE's virtual call does, the hook of the first class on the actor's owner-relevancy chain
/// that has one answers — the actor's own class first, then (under `net_use_owner_relevancy`)
/// its owner's, and so on; `input.actor` is the actor ranked, `input.source` the actor UE's
/// formula reads. (Where UE's `Super` would call a further override up the chain, `input.priority`
/// is UE's formula: a chain asks one hook.)
///
/// It runs inside [`crate::net::NetDriver::tick`], on the driver's worker threads: it must not
/// block, and should not panic — a panic unwinds through `tick`, and a driver whose tick did not
/// finish has connections whose frame was left half done (nothing written is lost, but their
/// decisions and pending lists are not updated): drop it, or expect a frame's worth of
/// disorder.
///
/// ```
/// use shadowrep::net::{PriorityHook, PriorityInput, Viewer};
/// use std::sync::Arc;
///
/// // Loot ranks three times higher than UE's formula puts it, and never below 0.5.
/// let hook: PriorityHook = Arc::new(|input: &PriorityInput, t: f32, viewer: &Viewer| {
///     (3.0 * input.priority(t, viewer)).max(0.5)
/// });
/// # let _ = hook;
/// ```
pub type PriorityHook = Arc<dyn Fn(&PriorityInput, f32, &Viewer) -> f32 + Send + Sync>;

/// UE's `CLOSEPROXIMITY`.
pub const CLOSE_PROXIMITY: f32 = 500.0;
/// UE's `NEARSIGHTTHRESHOLD`.
pub const NEAR_SIGHT: f32 = 2000.0;
/// UE's `MEDSIGHTTHRESHOLD`.
pub const MED_SIGHT: f32 = 3162.0;
/// UE's `FARSIGHTTHRESHOLD`.
pub const FAR_SIGHT: f32 = 8000.0;
/// UE's `SpawnPrioritySeconds`: the T of an actor without a channel.
pub const SPAWN_PRIORITY_SECONDS: f32 = 1.0;

/// An actor's priority for one viewer.
///
/// `view_target`: the actor is the viewer's view target or was instigated by it; `visible`: it
/// has a root component and is not hidden (UE applies the distance terms only then).
pub fn net_priority(
    location: [f32; 3],
    net_priority: f32,
    time_since_sent: f32,
    view_target: bool,
    visible: bool,
    viewer: &Viewer,
) -> f32 {
    let mut t = time_since_sent;
    if view_target {
        t *= 4.0;
    } else if visible {
        let d = [location[0] - viewer.location[0], location[1] - viewer.location[1], location[2] - viewer.location[2]];
        let d2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        let dir = viewer.direction;
        let dot = d[0] * dir[0] + d[1] * dir[1] + d[2] * dir[2];
        t *= distance_factor(d2, dot);
    }
    net_priority * t
}

/// UE's distance and direction factor for an actor `d2` away (squared) whose offset from the
/// viewer has `dot` along the view direction. Every comparison is made and the factor picked
/// by selects, not branches: which side of a viewer a candidate is on is a coin toss, which a
/// branch mispredicts half the time. (A factor of 1 leaves `T` bit for bit as UE's skipped
/// multiply does.)
#[inline]
fn distance_factor(d2: f32, dot: f32) -> f32 {
    let behind = pick(d2 > NEAR_SIGHT * NEAR_SIGHT, 0.2, pick(d2 > CLOSE_PROXIMITY * CLOSE_PROXIMITY, 0.4, 1.0));
    let ahead =
        pick(d2 < FAR_SIGHT * FAR_SIGHT && dot * dot > 0.5 * d2, 2.0, pick(d2 > MED_SIGHT * MED_SIGHT, 0.4, 1.0));
    pick(dot < 0.0, behind, ahead)
}

/// UE's `AActor::GetNetPriority` of an actor for one viewer, `t` seconds since its channel last
/// replicated: an actor with owner relevancy and an owner takes its owner's priority (followed
/// through `lookup`, which gives an actor's relevancy data and net priority by GUID, at most
/// [`crate::net::relevancy::MAX_OWNER_DEPTH`] links).
pub fn actor_priority<'a>(
    actor: &'a ActorRelevancy,
    priority: f32,
    t: f32,
    viewer: &Viewer,
    lookup: &impl Fn(NetGuid) -> Option<&'a (ActorRelevancy, f32)>,
) -> f32 {
    PriorityInput::resolve(actor, priority, lookup).priority(t, viewer)
}

/// What [`actor_priority`] reads of an actor, its owner chain already followed — the same for
/// every connection. The actor level resolves it once a frame per due actor, so ranking a
/// candidate reads one small row (no owner lookups, no wide actor record).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PriorityInput {
    /// The actor itself (the send order's tie-break).
    pub actor: NetGuid,
    /// The actor whose priority counts: this one, or its owner under owner relevancy (a
    /// viewer's view target gets × 4).
    pub source: NetGuid,
    /// The source's instigator, if any (`instigated`): one instigated by the view target gets
    /// × 4 too.
    pub instigator: NetGuid,
    /// Where the source is.
    pub location: [f32; 3],
    /// The source's `NetPriority`.
    pub net_priority: f32,
    /// The source has a root and is not hidden: the distance terms apply.
    pub visible: bool,
    /// The source has an instigator (`instigator` names it).
    pub instigated: bool,
}

impl PriorityInput {
    /// Follows `actor`'s owner chain under owner relevancy (see [`actor_priority`]).
    pub fn resolve<'a>(
        actor: &'a ActorRelevancy,
        priority: f32,
        lookup: &impl Fn(NetGuid) -> Option<&'a (ActorRelevancy, f32)>,
    ) -> Self {
        Self::resolve_hooked(actor, priority, lookup, |_| None::<()>).0
    }

    /// [`Self::resolve`], and the hook that answers for the actor ([`PriorityHook`]): `hook_of`'s
    /// answer for the first actor on the walked chain — the actor itself first — that has one.
    pub fn resolve_hooked<'a, H>(
        actor: &'a ActorRelevancy,
        priority: f32,
        lookup: &impl Fn(NetGuid) -> Option<&'a (ActorRelevancy, f32)>,
        hook_of: impl Fn(NetGuid) -> Option<H>,
    ) -> (Self, Option<H>) {
        let (mut a, mut p) = (actor, priority);
        let mut hook = hook_of(a.guid);
        for _ in 0..MAX_OWNER_DEPTH {
            match a.owner.filter(|_| a.use_owner_relevancy).and_then(lookup) {
                Some((owner, owner_priority)) => {
                    (a, p) = (owner, *owner_priority);
                    if hook.is_none() {
                        hook = hook_of(a.guid);
                    }
                }
                None => break,
            }
        }
        let input = Self {
            actor: actor.guid,
            source: a.guid,
            instigator: a.instigator.unwrap_or(NetGuid::NULL),
            location: a.location,
            net_priority: p,
            visible: a.has_root && !a.hidden,
            instigated: a.instigator.is_some(),
        };
        (input, hook)
    }

    /// The priority for one viewer, `t` seconds since the channel last replicated. The viewer's
    /// real viewer — its player controller — takes `APlayerController::GetNetPriority`'s × 4
    /// without distance terms, as the view target does.
    #[inline]
    pub fn priority(&self, t: f32, viewer: &Viewer) -> f32 {
        net_priority(self.location, self.net_priority, t, self.is_view_target(viewer), self.visible, viewer)
    }

    /// Whether `viewer` counts the actor as its view target (× 4, no distance terms): its view
    /// target is the source or the source's instigator, or its real viewer is the source.
    #[inline]
    pub fn is_view_target(&self, viewer: &Viewer) -> bool {
        viewer.view_target.is_some_and(|vt| self.source == vt || (self.instigated && self.instigator == vt))
            || viewer.real_viewer == Some(self.source)
    }
}

/// Candidates ranked side by side by [`priorities`].
pub(crate) const LANES: usize = 8;

/// [`PriorityInput::priority`] of `n` ≤ [`LANES`] inputs for one viewer (`input(k)`: the `k`-th
/// input and its `t`), computed side by side: the inputs gathered into arrays, then the same
/// operations in the same order for every lane, the view-target and visibility tests as
/// selects — bit for bit the scalar answers, in a loop the compiler keeps in vector registers
/// (a candidate's key was ~7 ns a call, the rank's largest share, battle_royale, AMD EPYC Zen 5).
/// Lanes from `n` on hold no answer.
#[inline]
pub(crate) fn priorities<'a>(
    n: usize,
    input: impl Fn(usize) -> (&'a PriorityInput, f32),
    viewer: &Viewer,
) -> [f32; LANES] {
    let (mut at, mut net, mut time) = ([[0.0f32; LANES]; 3], [0.0f32; LANES], [0.0f32; LANES]);
    let (mut target, mut visible) = ([false; LANES], [false; LANES]);
    for k in 0..n.min(LANES) {
        let (p, t) = input(k);
        for (axis, a) in at.iter_mut().enumerate() {
            a[k] = p.location[axis];
        }
        (net[k], time[k], target[k], visible[k]) = (p.net_priority, t, p.is_view_target(viewer), p.visible);
    }
    let [v0, v1, v2] = viewer.location;
    let [e0, e1, e2] = viewer.direction;
    let mut out = [0.0f32; LANES];
    for k in 0..LANES {
        let d = [at[0][k] - v0, at[1][k] - v1, at[2][k] - v2];
        let d2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        let dot = d[0] * e0 + d[1] * e1 + d[2] * e2;
        // `net_priority`'s branches as selects; a factor of 1 leaves T bit for bit.
        let factor = pick(target[k], 4.0, pick(visible[k], distance_factor(d2, dot), 1.0));
        out[k] = net[k] * (time[k] * factor);
    }
    out
}

/// `a` if `c`, else `b`, without a branch.
#[inline(always)]
fn pick(c: bool, a: f32, b: f32) -> f32 {
    f32::from_bits((c as u32).wrapping_neg() & a.to_bits() | (!c as u32).wrapping_neg() & b.to_bits())
}

/// The integer sort key of a priority: `round(65536 × p)`, saturating (NaN and negatives: 0).
///
/// One expression, no branch (a key is made for every candidate of every connection): with
/// `k = 65536 × p` (exact in `f64`), `as` saturates — NaN and any `k` below one half give 0,
/// any `k` past `u32::MAX` gives `u32::MAX` — and for the rest adding one half and truncating
/// rounds half up, as `k.round()` does for `k > 0` (no libm call).
#[inline]
pub fn priority_key(priority: f32) -> u32 {
    (priority as f64 * 65536.0 + 0.5) as u32
}

/// One candidate of a connection's frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// [`priority_key`] of its priority (max over the connection's viewers).
    pub key: u32,
    /// The actor.
    pub guid: NetGuid,
    /// The caller's index of the candidate (not part of the order).
    pub index: u32,
}

/// The send order: higher key first, then lower GUID.
pub fn send_order(a: &Candidate, b: &Candidate) -> Ordering {
    b.key.cmp(&a.key).then(a.guid.cmp(&b.guid))
}

/// Keeps the `n` first candidates in send order, sorted; the rest are dropped from the slice's
/// front part (the returned length). Costs O(len) to find them plus O(n log n) to order them.
pub fn select_top(candidates: &mut [Candidate], n: usize) -> &mut [Candidate] {
    // The order as one integer (the key inverted, then the GUID): the sort compares integers,
    // not a chained comparison.
    let key = |c: &Candidate| (u128::from(!c.key) << 64) | u128::from(c.guid.0);
    let n = first_sorted(candidates, n, key, |chosen| chosen.sort_unstable_by_key(key));
    &mut candidates[..n]
}

/// Puts the `n` smallest of `v` by `key` first, sorted by `sort` (a partial selection, then a
/// sort of the chosen few, which `sort` orders as `key` does); returns how many that was (fewer
/// when `v` is shorter).
fn first_sorted<T, K: Ord>(v: &mut [T], n: usize, key: impl Fn(&T) -> K, sort: impl FnOnce(&mut [T])) -> usize {
    let n = n.min(v.len());
    if n == 0 {
        return 0;
    }
    if n < v.len() {
        v.select_nth_unstable_by_key(n - 1, key);
    }
    sort(&mut v[..n]);
    n
}

/// Bits that hold every value below `n` (0 for `n` ≤ 1).
pub(crate) fn bits_below(n: usize) -> u32 {
    usize::BITS - n.saturating_sub(1).leading_zeros()
}

/// A connection's candidates in send order, selected a batch at a time ([`Self::select`]).
///
/// ```text
/// packed   one u64 each: !key (32 bits) | GUID rank among the frame's due actors | index
///          — the integers' order is the send order (the rank orders GUIDs, and no two
///          candidates share one); a sort of 8-byte integers
/// wide     Candidate records (key, GUID, index), ordered by select_top — when the rank and
///          index bits pass 32 (more than ~4 million due actors and candidates together)
/// ```
///
/// The packed sort moves half the bytes of the wide one and compares one integer: a
/// connection's select and sort of 320 of 570 candidates took 3.0 µs packed against 5.8 µs
/// wide (a probe with battle_royale's key distribution, AMD EPYC).
#[derive(Default)]
pub(crate) struct SendOrder {
    packed: Vec<u64>,
    wide: Vec<Candidate>,
    /// Bits of the candidate index in a packed entry; `None`: wide.
    index_bits: Option<u32>,
    /// Packed entries whose key reached the cutoff [`Self::fill`] was given: the first this many,
    /// in no order.
    front: Option<usize>,
    /// Sorts the chosen packed entries ([`sort`]).
    sorter: KeySort,
}

impl SendOrder {
    /// Fills the order with candidates `0..keys.len()` — candidate `i`'s key `keys[i]`, its
    /// actor's rank by GUID among the frame's due actors `rank(i)` (below `2^rank_bits`) and
    /// its actor `actor(i)` (asked only when the ranks and indices do not pack into 32 bits) —
    /// replacing what it held.
    ///
    /// With a `cutoff` (a guess of where this frame's first batch ends: the key at which the
    /// connection's last frame saturated), the candidates whose key reaches it are put first as
    /// they are written, so the first [`Self::select`] may take them as its batch without a
    /// selection over the whole list: they are exactly the first ones in send order, however
    /// good the guess.
    pub fn fill(
        &mut self,
        keys: &[u32],
        rank_bits: u32,
        rank: impl Fn(usize) -> u32,
        actor: impl Fn(usize) -> NetGuid,
        cutoff: Option<u32>,
    ) {
        self.packed.clear();
        self.wide.clear();
        self.front = None;
        let index_bits = bits_below(keys.len());
        self.index_bits = (index_bits + rank_bits <= 32).then_some(index_bits);
        let pack = |bits: u32, index: usize, key: u32| {
            let rank = rank(index);
            debug_assert!((index as u64) >> bits == 0, "index {index} past {bits} bits");
            debug_assert!((u64::from(rank) << bits) >> 32 == 0, "rank {rank} past the low half");
            let low = (u64::from(rank) << bits) | index as u64;
            (u64::from(!key) << 32) | low
        };
        // One test for the whole list, and a loop that writes a word per candidate.
        match (self.index_bits, cutoff) {
            (Some(bits), Some(cutoff)) => {
                // A partition as the words are written, without a branch: each word goes to both
                // ends, and the end it belongs to moves on (a slot left behind is written again).
                self.packed.resize(keys.len(), 0);
                let (mut lo, mut hi) = (0, keys.len());
                for (index, &key) in keys.iter().enumerate() {
                    let word = pack(bits, index, key);
                    let first = key >= cutoff;
                    self.packed[lo] = word;
                    self.packed[hi - 1] = word;
                    lo += usize::from(first);
                    hi -= usize::from(!first);
                }
                self.front = Some(lo);
            }
            (Some(bits), None) => {
                self.packed.extend(keys.iter().enumerate().map(|(index, &key)| pack(bits, index, key)))
            }
            (None, _) => self.wide.extend(keys.iter().enumerate().map(|(index, &key)| Candidate {
                key,
                guid: actor(index),
                index: index as u32,
            })),
        }
    }

    /// Candidates held.
    pub fn len(&self) -> usize {
        if self.index_bits.is_some() {
            self.packed.len()
        } else {
            self.wide.len()
        }
    }

    /// Puts the next candidates in send order from `start` on (those before `start` were
    /// selected already), about `n` of them; returns how many: `n`, or fewer at the end —
    /// or, for the first batch of an order filled with a cutoff, as many as reached it.
    ///
    /// The first batch of an order filled with a cutoff is the candidates that reached it when
    /// they are between half and twice `n` (sorted, and all of them: more or fewer than `n`);
    /// the first `n` of them when there are more; the first `n` of all when there are fewer.
    pub fn select(&mut self, start: usize, n: usize) -> usize {
        if self.index_bits.is_none() {
            return select_top(&mut self.wide[start..], n).len();
        }
        let sorter = &mut self.sorter;
        let rest = match self.front.take() {
            // Every key of the front part comes before every key behind it.
            Some(m) if start == 0 && m > 0 && m >= n / 2 => {
                if m <= n.saturating_mul(2) {
                    sorter.sort(&mut self.packed[..m]);
                    return m;
                }
                &mut self.packed[..m]
            }
            _ => &mut self.packed[start..],
        };
        first_sorted(rest, n, |&p| p, |chosen| sorter.sort(chosen))
    }

    /// The key and index of the `i`-th candidate (in send order once selected).
    #[inline]
    pub fn get(&self, i: usize) -> (u32, u32) {
        match self.index_bits {
            Some(bits) => {
                let p = self.packed[i];
                (!(p >> 32) as u32, (p & ((1u64 << bits) - 1)) as u32)
            }
            None => (self.wide[i].key, self.wide[i].index),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn viewer() -> Viewer {
        Viewer { real_viewer: None, view_target: None, location: [0.0; 3], direction: [1.0, 0.0, 0.0] }
    }

    fn p(at: [f32; 3]) -> f32 {
        net_priority(at, 1.0, 1.0, false, true, &viewer())
    }

    #[test]
    fn every_factor_of_ues_formula() {
        // Behind: beyond 2000 → 0.2, beyond 500 → 0.4, close → 1.
        assert_eq!(p([-2001.0, 0.0, 0.0]), 0.2);
        assert_eq!(p([-2000.0, 0.0, 0.0]), 0.4, "2000 exactly is not beyond");
        assert_eq!(p([-501.0, 0.0, 0.0]), 0.4);
        assert_eq!(p([-500.0, 0.0, 0.0]), 1.0);
        // Ahead within 45° and nearer than 8000 → 2; at 45° exactly or beyond 8000 it is not.
        assert_eq!(p([7999.0, 0.0, 0.0]), 2.0);
        assert_eq!(p([100.0, 99.0, 0.0]), 2.0);
        assert_eq!(p([100.0, 100.0, 0.0]), 1.0, "45° exactly is not within");
        assert_eq!(p([8000.0, 0.0, 0.0]), 0.4, "8000 exactly is not nearer, and beyond 3162");
        // Off to the side: beyond 3162 → 0.4.
        assert_eq!(p([0.0, 3163.0, 0.0]), 0.4);
        assert_eq!(p([0.0, 3162.0, 0.0]), 1.0);
        // The view target: ×4 wherever it is; invisible actors get no distance terms.
        assert_eq!(net_priority([-1.0e6, 0.0, 0.0], 1.0, 1.0, true, true, &viewer()), 4.0);
        assert_eq!(net_priority([-1.0e6, 0.0, 0.0], 1.0, 1.0, false, false, &viewer()), 1.0);
        // NetPriority and T scale it.
        assert_eq!(net_priority([7999.0, 0.0, 0.0], 3.0, 0.5, false, true, &viewer()), 3.0);
    }

    #[test]
    fn owner_relevancy_takes_the_owners_place_priority_and_view_target() {
        use std::collections::HashMap;
        let g = NetGuid;
        // Owner 2 far behind the viewer with priority 3; weapon 4 owned by it, right ahead;
        // projectile 6 owned by the weapon, instigated by 8; a cycle 10 ↔ 12.
        let owner = ActorRelevancy::at(g(2), [-5000.0, 0.0, 0.0]);
        // An actor right ahead of the viewer that follows its owner's relevancy.
        let follower = |guid, of| ActorRelevancy {
            owner: Some(g(of)),
            use_owner_relevancy: true,
            ..ActorRelevancy::at(g(guid), [100.0, 0.0, 0.0])
        };
        let weapon = follower(4, 2);
        let projectile = ActorRelevancy { instigator: Some(g(8)), ..follower(6, 4) };
        let loner = ActorRelevancy { use_owner_relevancy: false, instigator: Some(g(8)), ..follower(14, 2) };
        let (a, b) = (follower(10, 12), follower(12, 10));
        let table: HashMap<NetGuid, (ActorRelevancy, f32)> =
            [(g(2), (owner, 3.0)), (g(4), (weapon, 1.0)), (g(10), (a, 1.0)), (g(12), (b, 1.0))].into();
        let lookup = |x: NetGuid| table.get(&x);
        let v = viewer();
        // Behind beyond 2000: 0.2 × the owner's priority 3, whatever the weapon's own place.
        for follower in [&weapon, &projectile] {
            let input = PriorityInput::resolve(follower, 1.0, &lookup);
            assert_eq!((input.actor, input.source), (follower.guid, g(2)));
            assert_eq!(input.priority(1.0, &v), 3.0 * 0.2);
            assert_eq!(input.priority(1.0, &v), actor_priority(follower, 1.0, 1.0, &v, &lookup));
        }
        // Viewing the owner: × 4 for its followers; the projectile's own instigator no longer
        // counts (the owner's does, and it has none).
        let on = |vt| Viewer { view_target: Some(g(vt)), ..viewer() };
        assert_eq!(PriorityInput::resolve(&projectile, 1.0, &lookup).priority(1.0, &on(2)), 12.0);
        assert_eq!(PriorityInput::resolve(&projectile, 1.0, &lookup).priority(1.0, &on(8)), 3.0 * 0.2);
        // Without owner relevancy an actor keeps its own place, and its instigator counts.
        let own = PriorityInput::resolve(&loner, 1.5, &lookup);
        assert_eq!((own.source, own.priority(1.0, &v)), (g(14), 1.5 * 2.0));
        assert_eq!(own.priority(1.0, &on(8)), 1.5 * 4.0);
        let alone = PriorityInput::resolve(&owner, 3.0, &lookup);
        assert_eq!(alone.priority(1.0, &on(0)), 3.0 * 0.2, "a null view target matches no missing instigator");
        // A cycle ends after MAX_OWNER_DEPTH links (an even number: back where it started).
        assert_eq!(PriorityInput::resolve(&a, 1.0, &lookup).source, g(10));
    }

    #[test]
    fn the_viewers_own_controller_gets_four_times_without_distance_terms() {
        // APlayerController::GetNetPriority: × 4 when the viewer is the controller itself —
        // far behind the view point, where an actor's own terms would give × 0.2 — and its
        // owner-relevant followers take its place.
        let g = NetGuid;
        let pc = ActorRelevancy::at(g(2), [-5000.0, 0.0, 0.0]);
        let table: std::collections::HashMap<NetGuid, (ActorRelevancy, f32)> = [(g(2), (pc, 3.0))].into();
        let lookup = |x: NetGuid| table.get(&x);
        let own = Viewer { real_viewer: Some(g(2)), ..viewer() };
        assert_eq!(PriorityInput::resolve(&pc, 3.0, &lookup).priority(0.5, &own), 3.0 * 0.5 * 4.0);
        assert_eq!(PriorityInput::resolve(&pc, 3.0, &lookup).priority(0.5, &viewer()), 3.0 * 0.5 * 0.2);
        let follower = ActorRelevancy {
            owner: Some(g(2)),
            use_owner_relevancy: true,
            ..ActorRelevancy::at(g(4), [100.0, 0.0, 0.0])
        };
        assert_eq!(PriorityInput::resolve(&follower, 1.0, &lookup).priority(1.0, &own), 12.0);
    }

    /// Catches a lane of `priorities` that strays from UE's formula as `net_priority` computes it
    /// one actor at a time (a wrong factor, a threshold compared the other way, operations
    /// reordered so a bit differs, an input gathered from the wrong lane): the scalar answer is
    /// the oracle, on UE's thresholds ± one ulp, NaN and infinities.
    #[test]
    fn side_by_side_priorities_are_the_scalar_ones_bit_for_bit() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let g = |i: u64| NetGuid(2 * i);
        // Offsets on UE's thresholds (exactly at them, and a float either side), and anywhere.
        let edges = [0.0f32, CLOSE_PROXIMITY, NEAR_SIGHT, MED_SIGHT, FAR_SIGHT];
        let coordinate = |rng: &mut rand_chacha::ChaCha8Rng| match rng.random_range(0..8) {
            0 => edges[rng.random_range(0..edges.len())] * if rng.random() { 1.0 } else { -1.0 },
            1 => f32::from_bits(
                edges[rng.random_range(0..edges.len())].to_bits().wrapping_add(rng.random_range(0..3)).wrapping_sub(1),
            ),
            2 => [f32::NAN, f32::INFINITY, -f32::INFINITY, 1.0e30][rng.random_range(0..4)],
            _ => rng.random_range(-20_000.0..20_000.0),
        };
        for round in 0..20_000 {
            let viewer = Viewer {
                real_viewer: rng.random_bool(0.5).then(|| g(rng.random_range(1..6))),
                view_target: rng.random_bool(0.8).then(|| g(rng.random_range(1..6))),
                location: [coordinate(&mut rng), coordinate(&mut rng), coordinate(&mut rng)],
                direction: if round % 2 == 0 { [1.0, 0.0, 0.0] } else { [0.6, 0.8, 0.0] },
            };
            let inputs: Vec<(PriorityInput, f32)> = (0..rng.random_range(1..=LANES))
                .map(|_| {
                    let input = PriorityInput {
                        actor: g(rng.random_range(1..6)),
                        source: g(rng.random_range(1..6)),
                        instigator: g(rng.random_range(0..6)),
                        location: [coordinate(&mut rng), coordinate(&mut rng), coordinate(&mut rng)],
                        net_priority: [1.0, 3.0, 0.5, 0.0, -1.0, f32::NAN][rng.random_range(0..6)],
                        visible: rng.random_bool(0.8),
                        instigated: rng.random_bool(0.3),
                    };
                    (input, [1.0 / 30.0, 1.0, 0.25, 7.5, f32::INFINITY][rng.random_range(0..5)])
                })
                .collect();
            let side_by_side = priorities(inputs.len(), |k| (&inputs[k].0, inputs[k].1), &viewer);
            for (k, (input, t)) in inputs.iter().enumerate() {
                let want = input.priority(*t, &viewer);
                assert!(
                    side_by_side[k].to_bits() == want.to_bits() || want.is_nan() && side_by_side[k].is_nan(),
                    "lane {k}: {} against {want} for {input:?}, t {t}, {viewer:?}",
                    side_by_side[k]
                );
                assert_eq!(priority_key(0.0f32.max(side_by_side[k])), priority_key(0.0f32.max(want)));
            }
        }
    }

    #[test]
    fn keys_round_and_saturate() {
        assert_eq!(priority_key(1.0), 65536);
        assert_eq!(priority_key(0.2), 13107);
        assert_eq!(priority_key(-1.0), 0);
        assert_eq!(priority_key(f32::NAN), 0);
        assert_eq!(priority_key(1.0e30), u32::MAX);
    }

    /// Catches a branch-free key that rounds or saturates differently from the key as specified
    /// (truncating instead of rounding half up, a NaN or negative not ranking last, a huge
    /// priority wrapping): the oracle spells the key out with its branches and `f64::round`.
    #[test]
    fn the_branch_free_key_is_the_key_spelled_out() {
        // The key as it reads in words: 0 for NaN and anything not above 0, u32::MAX from there
        // up, round half up between.
        let spelled_out = |p: f32| {
            let k = p as f64 * 65536.0;
            if k.is_nan() || k <= 0.0 {
                0
            } else if k >= u32::MAX as f64 {
                u32::MAX
            } else {
                k.round() as u32
            }
        };
        let edges = [
            0.0,
            -0.0,
            f32::MIN_POSITIVE,
            -f32::MIN_POSITIVE,
            0.5 / 65536.0,
            0.49 / 65536.0,
            1.5 / 65536.0,
            2.5 / 65536.0,
            u32::MAX as f32 / 65536.0,
            65535.99,
            65536.0,
            f32::MAX,
            f32::MIN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -f32::NAN,
        ];
        for p in edges {
            assert_eq!(priority_key(p), spelled_out(p), "p = {p:e}");
        }
        // Every exponent, random mantissas and signs.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let p = f32::from_bits(x as u32);
            assert_eq!(priority_key(p), spelled_out(p), "p = {p:e} ({:#x})", p.to_bits());
        }
    }

    #[test]
    fn the_top_n_equal_the_first_n_of_a_full_sort() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for len in [0, 1, 2, 7, 64, 1000] {
            let all: Vec<Candidate> = (0..len)
                .map(|i| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    // Few distinct keys, so ties (broken by GUID) are common.
                    Candidate { key: (x % 5) as u32 * 1000, guid: NetGuid(2 * i as u64 + 2), index: i as u32 }
                })
                .collect();
            let mut sorted = all.clone();
            sorted.sort_by(send_order);
            for n in [0, 1, 3, len / 2, len, len + 5] {
                let mut work = all.clone();
                let top = select_top(&mut work, n).to_vec();
                assert_eq!(top, sorted[..n.min(len)].to_vec(), "len {len}, n {n}");
            }
        }
    }

    /// Catches a packed entry that orders candidates otherwise than `send_order` (a rank or index
    /// bit lost, a batch taken out of order) and a cutoff's first batch that is not the order's
    /// head (its partition inverted, a front part taken as a whole when it is not the first
    /// candidates): the oracle is `send_order`'s full sort.
    #[test]
    fn the_packed_order_is_the_send_order() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for (len, due) in [(0usize, 0usize), (1, 1), (2, 9), (37, 40), (570, 6_730), (1000, 1 << 20)] {
            // `len` candidates among `due` due actors: distinct GUIDs, few distinct keys.
            let mut guids: Vec<u64> = (0..due as u64).map(|i| 2 * (next() % (1 << 40)) + (i % 2)).collect();
            guids.sort_unstable();
            guids.dedup();
            let mut by_guid = guids.clone();
            let ranks: Vec<u32> = {
                // Due order is not GUID order: shuffle, then rank.
                for i in (1..by_guid.len()).rev() {
                    by_guid.swap(i, (next() % (i as u64 + 1)) as usize);
                }
                by_guid.iter().map(|g| guids.binary_search(g).unwrap() as u32).collect()
            };
            let mut picked: Vec<usize> = (0..by_guid.len()).collect();
            for i in (1..picked.len()).rev() {
                picked.swap(i, (next() % (i as u64 + 1)) as usize);
            }
            picked.truncate(len);
            let cands: Vec<Candidate> = picked
                .iter()
                .enumerate()
                .map(|(i, &d)| Candidate {
                    key: (next() % 6) as u32 * 4096,
                    guid: NetGuid(by_guid[d]),
                    index: i as u32,
                })
                .collect();
            let mut want = cands.clone();
            want.sort_by(send_order);
            // Cutoffs that put none, some or all of them first (a first batch taken whole, in
            // part, or not at all), and first batches small and large.
            let cutoffs = [None, Some(0), Some(2 * 4096), Some(4 * 4096 + 1), Some(5 * 4096), Some(u32::MAX)];
            for (rank_bits, cutoff, first) in (cutoffs.iter().flat_map(|&c| [(c, 3), (c, len / 2 + 1)]))
                .flat_map(|(c, first)| [(bits_below(by_guid.len()), c, first), (40, c, first)])
            {
                let mut order = SendOrder::default();
                // A list left from an earlier frame is replaced.
                order.fill(&[7], 1, |_| 0, |_| NetGuid(1), Some(7));
                let keys: Vec<u32> = cands.iter().map(|c| c.key).collect();
                order.fill(&keys, rank_bits, |i| ranks[picked[i]], |i| cands[i].guid, cutoff);
                assert_eq!(order.index_bits.is_some(), rank_bits + bits_below(cands.len()) <= 32);
                assert_eq!(order.len(), cands.len());
                // In batches, as the send loop takes them.
                let (mut start, mut batch, mut got) = (0, first, Vec::new());
                while start < order.len() {
                    let n = order.select(start, batch);
                    got.extend((start..start + n).map(|i| order.get(i)));
                    start += n;
                    batch *= 2;
                }
                let want: Vec<(u32, u32)> = want.iter().map(|c| (c.key, c.index)).collect();
                assert_eq!(got, want, "{len} candidates of {due} due, {rank_bits} rank bits, cutoff {cutoff:?}");
            }
        }
    }

    #[test]
    fn a_starved_actor_rises_over_time() {
        // Far behind (×0.2) against an actor dead ahead sent every frame (T = 1/30 s, ×2).
        let v = viewer();
        let hot = net_priority([1000.0, 0.0, 0.0], 1.0, 1.0 / 30.0, false, true, &v);
        let frames = (1..).find(|&f| net_priority([-5000.0, 0.0, 0.0], 1.0, f as f32 / 30.0, false, true, &v) > hot);
        assert_eq!(frames, Some(11), "after 11 frames unsent it outranks the hot actor");
    }

    #[test]
    fn the_first_hooked_class_on_the_owner_relevancy_chain_answers() {
        // a → b → c, each under owner relevancy; hooks named by the GUID whose class has one.
        let mut a = ActorRelevancy::at(NetGuid(1), [100.0, 0.0, 0.0]);
        let mut b = ActorRelevancy::at(NetGuid(2), [200.0, 0.0, 0.0]);
        let c = ActorRelevancy::at(NetGuid(3), [300.0, 0.0, 0.0]);
        (a.owner, a.use_owner_relevancy) = (Some(b.guid), true);
        (b.owner, b.use_owner_relevancy) = (Some(c.guid), true);
        let chain = [(b, 2.0), (c, 3.0)];
        let lookup = |g: NetGuid| chain.iter().find(|(r, _)| r.guid == g);
        let hooked = |set: &'static [u64]| move |g: NetGuid| set.contains(&g.0).then_some(g.0);
        // UE's formula reads the end of the chain whichever hook answers.
        let (input, hook) = PriorityInput::resolve_hooked(&a, 1.0, &lookup, hooked(&[1, 2, 3]));
        assert_eq!((input.actor, input.source, input.net_priority, hook), (NetGuid(1), NetGuid(3), 3.0, Some(1)));
        assert_eq!(input, PriorityInput::resolve(&a, 1.0, &lookup));
        assert_eq!(PriorityInput::resolve_hooked(&a, 1.0, &lookup, hooked(&[2, 3])).1, Some(2), "the nearest owner's");
        assert_eq!(PriorityInput::resolve_hooked(&a, 1.0, &lookup, hooked(&[3])).1, Some(3));
        assert_eq!(PriorityInput::resolve_hooked(&a, 1.0, &lookup, hooked(&[])).1, None);
        // Without owner relevancy the owner's class is not asked.
        let alone = ActorRelevancy { use_owner_relevancy: false, ..a };
        let (input, hook) = PriorityInput::resolve_hooked(&alone, 1.0, &lookup, hooked(&[2, 3]));
        assert_eq!((input.source, input.net_priority, hook), (NetGuid(1), 1.0, None));
    }
}
