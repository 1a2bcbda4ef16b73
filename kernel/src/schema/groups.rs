//! Leaf groups: how the 64 bits of a [`LeafMask`] cover a class's leaves.
//!
//! The net layer keeps one 64-bit mask per (connection, actor) of the leaves whose packet was
//! lost (16 bytes of pair state in all, Iris's figure), and every other per-actor and per-frame
//! leaf set it keeps is the same mask. A class of at most 64 leaves gives each leaf its own bit.
//! A wider class — a full UE character's replicated state is some 50 leaves before any game
//! property — groups consecutive leaves that the net layer always treats alike under one bit:
//!
//! ```text
//! leaves   0 1 2 3 | 4 | 5 6 7 8 9 | 10 | 11 12 ...      (a break: see below)
//! bits     0   1   | 2 | 3    4    | 5  | 6  ...         (a run split to use spare bits)
//! ```
//!
//! A group is sent, resent and turned on or off as one: a changed leaf sends its group's other
//! leaves too (their current values — what the client holds already, unless a packet was lost),
//! and a lost packet resends the whole group. The compare and the history stay per leaf, so a
//! frame's change and a connection's catch-up name exactly the groups with a changed leaf.
//!
//! Two neighbouring leaves share a group only when nothing tells them apart: the same condition,
//! neither a dynamic array (each array is its own group: it is written per connection, by
//! element), both object references or neither (a reference is exported before it is sent), and
//! the same parent when either parent is `Custom` or `Dynamic` (a game turns those on and off
//! per actor, by parent) or notifies on every receive (`Notify::Always`, `AlwaysWithOld`: a
//! neighbour's change must not fire it). That leaves runs ("segments"); a class with more than 64
//! segments does not fit and the net layer refuses it. Spare bits then split the largest groups,
//! at a parent boundary near the middle where there is one, so most groups are one parent or a
//! few.
//!
//! A group may be split between two packets, as a dynamic array always could: each bunch's
//! record names the groups it carried, a delivered bunch settles the initial values owed of a
//! group only if it carried the whole group, and a lost one that carried initial values owes
//! them again (`net::reliability::SentEntry::settles`).
//!
//! The groups follow from the layout alone, so the kernel, the UE-style reference and any other
//! driver of the same class agree on them; the client never sees them (the wire names leaves).

use super::{ClassLayout, Condition, LeafKind, Notify};
use crate::ids::LeafMask;
use crate::store::BitIter;
use std::ops::Range;

/// Bits of a [`LeafMask`].
pub const MASK_BITS: usize = 64;

/// The leaf groups of one class (see the [module docs](self)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeafGroups {
    /// Per leaf, its group.
    group_of: Vec<u16>,
    /// Per group, its first leaf; one more entry: the number of leaves.
    starts: Vec<u16>,
    /// Every group is one leaf (a class of at most 64 leaves).
    single: bool,
}

impl Default for LeafGroups {
    /// The groups of a class without leaves.
    fn default() -> Self {
        Self::from_starts(vec![0], 0)
    }
}

impl LeafGroups {
    /// The groups of `layout`: one per leaf up to 64 leaves, else its segments split to use up
    /// to 64 bits. More than 64 groups when the class has more than 64 segments
    /// ([`Self::fits`] is false then).
    pub fn new(layout: &ClassLayout) -> Self {
        let n = layout.leaves.len();
        if n <= MASK_BITS {
            return Self::from_starts((0..=n).collect(), n);
        }
        let mut starts: Vec<usize> = (0..n).filter(|&l| l == 0 || breaks(layout, l - 1, l)).collect();
        // Split the largest group (the first of equals) until every bit is used or every group
        // is one leaf: at the parent boundary nearest its middle, else at its middle.
        while starts.len() < MASK_BITS {
            let end = |i: usize| starts.get(i + 1).copied().unwrap_or(n);
            let Some(i) = (0..starts.len())
                .filter(|&i| end(i) - starts[i] > 1)
                .max_by_key(|&i| (end(i) - starts[i], usize::MAX - i))
            else {
                break;
            };
            let (lo, hi) = (starts[i], end(i));
            let mid = (lo + hi) / 2;
            let parent_cut = (lo + 1..hi)
                .filter(|&l| layout.leaves[l].parent != layout.leaves[l - 1].parent)
                .min_by_key(|&l| l.abs_diff(mid));
            starts.insert(i + 1, parent_cut.unwrap_or(mid));
        }
        starts.push(n);
        Self::from_starts(starts, n)
    }

    fn from_starts(starts: Vec<usize>, leaves: usize) -> Self {
        let mut group_of = vec![0u16; leaves];
        for (g, w) in starts.windows(2).enumerate() {
            group_of[w[0]..w[1]].fill(g as u16);
        }
        let single = starts.len() == leaves + 1;
        Self { group_of, starts: starts.into_iter().map(|s| s as u16).collect(), single }
    }

    /// Number of groups.
    pub fn len(&self) -> usize {
        self.starts.len() - 1
    }

    /// Whether the class has no leaves.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the groups fit a [`LeafMask`] (at most 64).
    pub fn fits(&self) -> bool {
        self.len() <= MASK_BITS
    }

    /// Whether every group is one leaf: bit `i` is leaf `i` (in a class that [fits](Self::fits)).
    pub fn is_single(&self) -> bool {
        self.single
    }

    /// The group of `leaf`, as a mask (empty past the class's leaves or the mask's bits).
    #[inline]
    pub fn bit(&self, leaf: usize) -> LeafMask {
        match self.group_of.get(leaf) {
            Some(&g) if usize::from(g) < MASK_BITS => LeafMask::leaf(usize::from(g)),
            _ => LeafMask::EMPTY,
        }
    }

    /// The leaves of group `bit`.
    #[inline]
    pub fn leaves(&self, bit: usize) -> Range<usize> {
        match (self.starts.get(bit), self.starts.get(bit + 1)) {
            (Some(&a), Some(&b)) => usize::from(a)..usize::from(b),
            _ => 0..0,
        }
    }

    /// The leaves of the groups in `mask`, ascending.
    #[inline]
    pub fn leaves_in(&self, mask: LeafMask) -> GroupLeaves<'_> {
        GroupLeaves { groups: self, bits: mask.iter(), current: 0..0 }
    }

    /// The groups holding any of `leaves`.
    pub fn of_leaves(&self, leaves: impl IntoIterator<Item = usize>) -> LeafMask {
        leaves.into_iter().fold(LeafMask::EMPTY, |m, l| m | self.bit(l))
    }

    /// Whether the groups of `leaves` hold no other leaf.
    pub fn alone(&self, leaves: Range<usize>) -> bool {
        let (Some(&first), Some(&last)) =
            (self.group_of.get(leaves.start), self.group_of.get(leaves.end.wrapping_sub(1)))
        else {
            return leaves.is_empty();
        };
        self.leaves(usize::from(first)).start == leaves.start && self.leaves(usize::from(last)).end == leaves.end
    }

    /// Whether `leaf`'s group is in `mask`.
    #[inline]
    pub fn contains(&self, mask: LeafMask, leaf: usize) -> bool {
        !(mask & self.bit(leaf)).is_empty()
    }

    /// Number of leaves in the groups of `mask`.
    #[inline]
    pub fn count(&self, mask: LeafMask) -> u32 {
        if self.single {
            mask.count()
        } else {
            mask.iter().map(|b| self.leaves(b).len() as u32).sum()
        }
    }

    /// Number of leaves of `mask`'s groups before `leaf` (which must be in one of them): its
    /// place among them.
    #[inline]
    pub fn rank(&self, mask: LeafMask, leaf: usize) -> u32 {
        if self.single {
            return mask.rank(leaf);
        }
        let g = self.group_of.get(leaf).map_or(0, |&g| usize::from(g));
        let below = if g >= MASK_BITS { mask } else { LeafMask(mask.0 & ((1u64 << g) - 1)) };
        self.count(below) + (leaf - self.leaves(g).start) as u32
    }
}

/// Whether leaves `a` and `b` (neighbours) must be in different groups.
fn breaks(layout: &ClassLayout, a: usize, b: usize) -> bool {
    let (la, lb) = (&layout.leaves[a], &layout.leaves[b]);
    let (pa, pb) = (&layout.parents[la.parent], &layout.parents[lb.parent]);
    // A parent whose groups hold no other: switched per actor (Custom, Dynamic), or notified on
    // every receive.
    let solitary = |p: &super::Parent| {
        matches!(p.condition, Condition::Custom | Condition::Dynamic)
            || matches!(p.notify, Notify::Always | Notify::AlwaysWithOld)
    };
    let object = |l: &super::Leaf| l.array.is_none() && l.kind == LeafKind::Object;
    la.array.is_some()
        || lb.array.is_some()
        || pa.condition != pb.condition
        || object(la) != object(lb)
        || (la.parent != lb.parent && (solitary(pa) || solitary(pb)))
}

/// The leaves of some groups ([`LeafGroups::leaves_in`]).
#[derive(Clone, Debug)]
pub struct GroupLeaves<'a> {
    groups: &'a LeafGroups,
    bits: BitIter,
    current: Range<usize>,
}

impl Iterator for GroupLeaves<'_> {
    type Item = usize;
    #[inline]
    fn next(&mut self) -> Option<usize> {
        loop {
            if let Some(l) = self.current.next() {
                return Some(l);
            }
            self.current = self.groups.leaves(self.bits.next()?);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{ClassBuilder, PropType, PropertyDecl, StructType};
    use proptest::prelude::*;

    fn layout(decls: Vec<PropertyDecl>) -> ClassLayout {
        decls.into_iter().fold(ClassBuilder::new("G"), |b, d| b.property(d)).build().expect("valid layout")
    }

    /// Parents of `kind`: 0 a u8, 1 a three-field struct, 2 an object reference, 3 a dynamic
    /// array; under condition `cond`.
    fn decl(i: usize, kind: u8, cond: u8) -> PropertyDecl {
        let ty = match kind {
            0 => PropType::U8,
            1 => PropType::Struct(
                StructType::new("S").field("A", PropType::U16).field("B", PropType::F32).field("C", PropType::Bool),
            ),
            2 => PropType::Object,
            _ => PropType::Array { element: Box::new(PropType::U8), max_len: 4 },
        };
        let c = [
            Condition::None,
            Condition::OwnerOnly,
            Condition::Custom,
            Condition::Dynamic,
            Condition::SkipOwner,
            Condition::InitialOnly,
            Condition::None,
            Condition::None,
        ];
        PropertyDecl::new(format!("P{i}"), ty).condition(c[cond as usize % c.len()])
    }

    #[test]
    fn a_class_of_at_most_64_leaves_gives_each_leaf_its_bit() {
        let l = layout((0..64).map(|i| decl(i, 0, 0)).collect());
        let g = &l.groups;
        assert!(g.is_single() && g.fits() && g.len() == 64);
        for leaf in 0..64 {
            assert_eq!(g.bit(leaf), LeafMask::leaf(leaf));
            assert_eq!(g.leaves(leaf), leaf..leaf + 1);
        }
        let m = LeafMask(0b1011_0000);
        assert_eq!(g.leaves_in(m).collect::<Vec<_>>(), vec![4, 5, 7]);
        assert_eq!((g.count(m), g.rank(m, 7)), (3, 2));
    }

    #[test]
    fn a_wide_class_of_one_condition_uses_every_bit_and_cuts_at_parents() {
        // 100 parents of three leaves: 300 leaves in 64 groups of whole parents.
        let l = layout((0..100).map(|i| decl(i, 1, 0)).collect());
        let g = &l.groups;
        assert!(!g.is_single() && g.fits());
        assert_eq!(g.len(), 64);
        for bit in 0..64 {
            let r = g.leaves(bit);
            assert!(r.len() == 3 || r.len() == 6, "group {bit}: {r:?} is not one parent or two");
            assert!(r.start.is_multiple_of(3), "group {bit}: {r:?} cuts a parent");
            assert!(g.alone(r.clone()));
            if r.len() == 6 {
                assert!(!g.alone(r.start..r.start + 3), "a parent sharing its group is not alone");
            }
        }
    }

    #[test]
    fn too_many_runs_do_not_fit() {
        let l = layout((0..70).map(|i| decl(i, 0, (i % 2) as u8)).collect());
        assert!(!l.groups.fits());
        assert_eq!(l.groups.len(), 70);
    }

    proptest! {
        #[test]
        fn groups_cover_the_leaves_in_order_and_keep_apart_what_the_net_layer_tells_apart(
            parents in proptest::collection::vec((0u8..4, 0u8..8, proptest::bool::weighted(0.1)), 1..90)
        ) {
            let l = layout(
                parents
                    .iter()
                    .enumerate()
                    .map(|(i, &(k, c, always))| {
                        let d = decl(i, k, c);
                        if always { d.notify(crate::schema::Notify::Always) } else { d }
                    })
                    .collect(),
            );
            let g = &l.groups;
            let n = l.leaves.len();
            // Contiguous, ascending, covering every leaf once.
            let all: Vec<usize> = (0..g.len()).flat_map(|b| g.leaves(b)).collect();
            prop_assert_eq!(all, (0..n).collect::<Vec<_>>());
            prop_assert_eq!(g.is_single(), n <= MASK_BITS);
            if n <= MASK_BITS {
                prop_assert_eq!(g.len(), n);
            }
            // Within a group, nothing the net layer tells apart.
            for b in 0..g.len() {
                let r = g.leaves(b);
                for leaf in r.start + 1..r.end {
                    prop_assert!(!breaks(&l, leaf - 1, leaf), "group {} joins leaves {} and {}", b, leaf - 1, leaf);
                }
            }
            if !g.fits() {
                // Only when every run is its own group already.
                for b in 1..g.len() {
                    let s = g.leaves(b).start;
                    prop_assert!(breaks(&l, s - 1, s));
                }
                return Ok(());
            }
            // Every bit used while a group could be split.
            prop_assert!(g.len() == MASK_BITS.min(n));
            // Masks: leaves, counts and ranks agree with the groups.
            let mask = LeafMask(parents.iter().enumerate().fold(0u64, |m, (i, &(k, c, _))| m ^ ((u64::from(k) * 7 + u64::from(c) + i as u64) << (i % 64))));
            let mask = mask & LeafMask(if g.len() == 64 { u64::MAX } else { (1u64 << g.len()) - 1 });
            let leaves: Vec<usize> = g.leaves_in(mask).collect();
            prop_assert_eq!(g.count(mask) as usize, leaves.len());
            for (i, &leaf) in leaves.iter().enumerate() {
                prop_assert!(g.contains(mask, leaf));
                prop_assert_eq!(g.rank(mask, leaf) as usize, i);
            }
            prop_assert_eq!(g.of_leaves(leaves.iter().copied()), mask);
            // Each parent: its groups hold only its leaves when it is Custom or Dynamic or
            // always notified.
            for p in &l.parents {
                let always = matches!(p.notify, crate::schema::Notify::Always);
                if always || matches!(p.condition, Condition::Custom | Condition::Dynamic) {
                    prop_assert!(g.alone(p.leaves.clone()));
                }
            }
        }
    }
}
