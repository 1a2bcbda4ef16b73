//! What the numbers of the net layer mean: identity and mask newtypes.
//!
//! A `u64` can be a mask of a page's lanes, a mask of an actor's leaves or a NetGUID, a `u32` a frame, a packet sequence
//! number, a class or a connection. Each gets its own `#[repr(transparent)]` type so the compiler
//! keeps them apart (bevy_ecs's `TableRow` and `Tick` do the same), and the rules that go with
//! each — GUID parity, sequence wrap-around — live here and nowhere else.

use std::fmt;
use std::ops::{BitAnd, BitAndAssign, BitOr, BitOrAssign, Not};

/// Identifies a registered class (and so its store): the registration index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct ClassId(pub u32);

/// Identifies a connection on a server: the order it was added in, never given to another
/// (a removed connection's id stays dead; its internal slot is reused, so a peer that joins and
/// leaves without end costs nothing that lasts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct ConnectionId(pub u32);

/// A server frame number. Frame 0 is "before the first tick"; ticks count from 1.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, bytemuck::Zeroable)]
#[repr(transparent)]
pub struct Frame(pub u32);

/// The lanes of one page (64 actor slots), as a bit set: bit `i` is slot `page * 64 + i`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct LaneMask(pub u64);

impl LaneMask {
    /// No lanes.
    pub const EMPTY: LaneMask = LaneMask(0);

    /// Whether no lane is set.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether `lane` is set.
    pub fn contains(self, lane: usize) -> bool {
        lane < 64 && self.0 >> lane & 1 != 0
    }

    /// Number of lanes set.
    pub fn count(self) -> u32 {
        self.0.count_ones()
    }

    /// The lanes set, ascending.
    pub fn iter(self) -> crate::store::BitIter {
        crate::store::BitIter(self.0)
    }
}

/// The leaves of one actor, as a bit set: bit `i` is leaf index `i` (handle `i + 1`) in a class
/// of at most 64 leaves; in a wider one, bit `i` is the `i`-th group of leaves the net layer
/// treats alike ([`crate::schema::groups`]: the class's `LeafGroups` turn bits into leaves).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, bytemuck::Zeroable)]
#[repr(transparent)]
pub struct LeafMask(pub u64);

impl LeafMask {
    /// No leaves.
    pub const EMPTY: LeafMask = LeafMask(0);

    /// Just `leaf`.
    pub fn leaf(leaf: usize) -> LeafMask {
        LeafMask(1 << leaf)
    }

    /// Whether no leaf is set.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether `leaf` is set.
    pub fn contains(self, leaf: usize) -> bool {
        leaf < 64 && self.0 >> leaf & 1 != 0
    }

    /// Number of leaves set.
    pub fn count(self) -> u32 {
        self.0.count_ones()
    }

    /// Number of leaves set below `leaf` (the rank of `leaf` among the set leaves).
    pub fn rank(self, leaf: usize) -> u32 {
        (self.0 & ((1u64 << leaf) - 1)).count_ones()
    }

    /// The leaf indices set, ascending.
    pub fn iter(self) -> crate::store::BitIter {
        crate::store::BitIter(self.0)
    }
}

impl BitOr for LeafMask {
    type Output = LeafMask;
    fn bitor(self, rhs: LeafMask) -> LeafMask {
        LeafMask(self.0 | rhs.0)
    }
}

impl BitOrAssign for LeafMask {
    fn bitor_assign(&mut self, rhs: LeafMask) {
        self.0 |= rhs.0;
    }
}

impl BitAnd for LeafMask {
    type Output = LeafMask;
    fn bitand(self, rhs: LeafMask) -> LeafMask {
        LeafMask(self.0 & rhs.0)
    }
}

impl BitAndAssign for LeafMask {
    fn bitand_assign(&mut self, rhs: LeafMask) {
        self.0 &= rhs.0;
    }
}

impl Not for LeafMask {
    type Output = LeafMask;
    fn not(self) -> LeafMask {
        LeafMask(!self.0)
    }
}

/// A network GUID: how both ends name an object.
///
/// Parity is the rule, as in UE: dynamic objects (spawned at run time and announced by the
/// server) have even GUIDs from 2 upwards, never reused; static objects (loaded with the level,
/// known to both ends by name) have odd GUIDs; 0 is the null reference.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct NetGuid(pub u64);

impl NetGuid {
    /// The null reference.
    pub const NULL: NetGuid = NetGuid(0);
    /// The first dynamic GUID a server hands out.
    pub const FIRST_DYNAMIC: NetGuid = NetGuid(2);

    /// Whether this is the null reference.
    pub fn is_null(self) -> bool {
        self.0 == 0
    }

    /// A static object's GUID (odd).
    pub fn is_static(self) -> bool {
        self.0 % 2 == 1
    }

    /// A dynamic object's GUID (even, not null).
    pub fn is_dynamic(self) -> bool {
        self.0 != 0 && self.0.is_multiple_of(2)
    }

    /// The dynamic GUID after this one.
    pub fn next_dynamic(self) -> NetGuid {
        NetGuid(self.0 + 2)
    }
}

impl fmt::Display for NetGuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The role a client holds for an actor (UE's `ENetRole` as the client sees it after its swap
/// of `Role` and `RemoteRole`): [`crate::client::ClientWorld::role`], and
/// [`crate::net::NetDriver::client_role`] on the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NetRole {
    /// A copy the server moves (UE's `ROLE_SimulatedProxy`): every actor the client does not
    /// control.
    SimulatedProxy,
    /// The copy the client controls (UE's `ROLE_AutonomousProxy`): its pawn, its controller.
    AutonomousProxy,
    /// The client's own (UE's `ROLE_Authority`): a torn-off actor, no longer replicated.
    Authority,
}

/// A packet sequence number. Sequence numbers wrap around: they are compared by their wrapping
/// distance, never with `<`, and any two a peer compares are less than 2³¹ apart.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Seq(pub u32);

impl Seq {
    /// The sequence number after this one.
    pub fn next(self) -> Seq {
        Seq(self.0.wrapping_add(1))
    }

    /// The sequence number `n` before this one.
    pub fn back(self, n: u32) -> Seq {
        Seq(self.0.wrapping_sub(n))
    }

    /// How far `self` is ahead of `other` (negative: behind), by wrapping distance.
    pub fn ahead_of(self, other: Seq) -> i64 {
        self.0.wrapping_sub(other.0) as i32 as i64
    }
}

impl fmt::Display for Seq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Hashes the server's own NetGuids for its maps (GUID → class and slot, owners, paths): one
/// folded multiply instead of SipHash. The keys are assigned by the server (dynamic GUIDs count
/// up through the even numbers, static ones through the odd), so there is no attacker to collide
/// them; a lookup of a GUID named by a client only probes. The client's maps, keyed by what
/// arrives from the network, keep std's keyed SipHash.
#[derive(Clone, Copy, Debug, Default)]
pub struct GuidHasher(u64);

impl std::hash::Hasher for GuidHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, v: u64) {
        // A folded 64 × 64 → 128-bit multiply: every bit of the key reaches the low bits the
        // table indexes by (a plain multiply leaves them poor).
        let m = u128::from(self.0 ^ v) * 0x9e37_79b9_7f4a_7c15;
        self.0 = (m as u64) ^ ((m >> 64) as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A map keyed by the server's NetGuids ([`GuidHasher`]).
pub type GuidMap<V> = std::collections::HashMap<NetGuid, V, std::hash::BuildHasherDefault<GuidHasher>>;

/// A set of the server's NetGuids ([`GuidHasher`]).
pub type GuidSet = std::collections::HashSet<NetGuid, std::hash::BuildHasherDefault<GuidHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    /// The server's GUIDs count up in steps of two (dynamic: even; static: odd); a sparse set
    /// stands for any other: each spreads evenly over a table's low bits.
    #[test]
    fn guid_hashes_spread_over_the_low_bits() {
        use std::hash::{BuildHasher, BuildHasherDefault};
        let build = BuildHasherDefault::<GuidHasher>::default();
        let runs: [Box<dyn Fn(u64) -> u64>; 3] =
            [Box::new(|i| 2 + 2 * i), Box::new(|i| 3 + 2 * i), Box::new(|i| (i * 0x1_0000) | 1)];
        for (r, guid) in runs.iter().enumerate() {
            let mut buckets = vec![0u32; 1024];
            for i in 0..4096 {
                buckets[(build.hash_one(NetGuid(guid(i))) & 1023) as usize] += 1;
            }
            let empty = buckets.iter().filter(|&&b| b == 0).count();
            let most = buckets.iter().copied().max().unwrap_or(0);
            // Four per bucket on average: a fair hash leaves ~2 % empty and none above ~14.
            assert!(empty < 60 && most <= 16, "run {r}: {empty} empty buckets, at most {most} in one");
        }
    }

    #[test]
    fn guid_parity_decides_static_and_dynamic() {
        assert!(NetGuid::NULL.is_null() && !NetGuid::NULL.is_dynamic() && !NetGuid::NULL.is_static());
        assert!(NetGuid(3).is_static() && !NetGuid(3).is_dynamic());
        assert!(NetGuid::FIRST_DYNAMIC.is_dynamic() && NetGuid(4) == NetGuid(2).next_dynamic());
    }

    #[test]
    fn sequence_distance_wraps() {
        let a = Seq(u32::MAX);
        assert_eq!(a.next(), Seq(0));
        assert_eq!(Seq(0).ahead_of(a), 1);
        assert_eq!(a.ahead_of(Seq(0)), -1);
        assert_eq!(Seq(5).back(10), Seq(u32::MAX - 4));
        assert_eq!(Seq(1 << 31).ahead_of(Seq(0)), -(1 << 31), "half the space apart reads as behind");
    }

    #[test]
    fn leaf_masks_rank_and_iterate() {
        let m = LeafMask::leaf(1) | LeafMask::leaf(5) | LeafMask::leaf(63);
        assert_eq!(m.count(), 3);
        assert_eq!(m.rank(5), 1);
        assert_eq!(m.rank(63), 2);
        assert!(m.contains(63) && !m.contains(2) && !m.contains(64));
        assert_eq!(m.iter().collect::<Vec<_>>(), vec![1, 5, 63]);
        assert_eq!((m & !LeafMask::leaf(5)).count(), 2);
    }
}
