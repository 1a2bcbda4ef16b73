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
mod tests;
