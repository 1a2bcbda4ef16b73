//! Owning connections derived from owner chains ([`ActorLevelConfig::owner_chain_connections`]):
//! an actor the game gave no owning connection of its own takes the one of the first actor up
//! its owner chain that has one, as UE's `AActor::GetNetConnection` walks `Owner` until a player
//! controller answers — a weapon owned by a pawn its player owns is that player's, for its
//! owner-only properties, its autonomous role, its sub-objects' owner conditions and the Server
//! calls its player may make on it.
//!
//! ```text
//! set_owner(pawn, conn)          explicit: pawn → conn
//! set_owner_actor(rifle, pawn)   link: pawn's children ∋ rifle
//!                                rifle's owner = walk(rifle) = conn (rifle → pawn: explicit)
//! set_owner(pawn, conn2)         the pawn and every descendant whose walk passes it are
//!                                derived again: rifle → conn2 (its owner-only leaves go
//!                                inactive for conn, come back for conn2: the role machinery
//!                                of `set_owner`)
//! despawn(pawn)                  its children's walks end there: the rifle is owned by nobody
//! ```
//!
//! The derivation is eager: every call that changes a link or an explicit owner derives the
//! actors below it again at once (at most [`MAX_OWNER_DEPTH`] links down, as a walk is at most
//! that long), so everything that reads an actor's owner — planning, relevancy's rule 1, the
//! Server calls arriving between ticks — reads an answer already made, as with an explicit
//! owner. Each actor's autonomy stays its own (UE's `RemoteRole`): the connection
//! that comes to own an actor set autonomous holds its autonomous proxy, explicit or derived.
//!
//! [`ActorLevelConfig::owner_chain_connections`]: crate::net::ActorLevelConfig::owner_chain_connections

use super::super::relevancy::MAX_OWNER_DEPTH;
use super::super::{NetDriver, NetGuid};
use std::collections::{HashMap, HashSet};

/// What the derivation keeps: the owners the game gave (`set_owner`) and, per owner, the actors
/// that name it their owner actor (`set_owner_actor`), so a change finds what it reaches.
#[derive(Default)]
pub(crate) struct OwnerChains {
    /// Actor → the connection slot the game made its owner.
    pub(super) explicit: HashMap<NetGuid, u32>,
    /// Owner actor → the actors that named it (entries may be stale: checked against the owner
    /// column when walked, dropped when either side is retired).
    pub(super) children: HashMap<NetGuid, Vec<NetGuid>>,
}

impl OwnerChains {
    /// The game made `guid`'s owner the connection in `slot` (`None`: nobody).
    pub(crate) fn set_explicit(&mut self, guid: NetGuid, slot: Option<u32>) {
        match slot {
            Some(s) => self.explicit.insert(guid, s),
            None => self.explicit.remove(&guid),
        };
    }

    /// The connection slot the game made `guid`'s owner, if any.
    pub(crate) fn explicit(&self, guid: NetGuid) -> Option<u32> {
        self.explicit.get(&guid).copied()
    }

    /// `guid` named `new` its owner actor instead of `old`.
    pub(crate) fn relink(&mut self, guid: NetGuid, old: Option<NetGuid>, new: Option<NetGuid>) {
        if let Some(old) = old {
            self.unlink(guid, old);
        }
        if let Some(new) = new {
            self.children.entry(new).or_default().push(guid);
        }
    }

    fn unlink(&mut self, guid: NetGuid, owner: NetGuid) {
        if let Some(list) = self.children.get_mut(&owner) {
            if let Some(i) = list.iter().position(|&g| g == guid) {
                list.swap_remove(i);
            }
            if list.is_empty() {
                self.children.remove(&owner);
            }
        }
    }

    /// The connection slot `removed` is gone: nothing names it.
    pub(crate) fn forget_connection(&mut self, removed: u32) {
        self.explicit.retain(|_, &mut s| s != removed);
    }
}

impl NetDriver {
    /// The owning connection UE's walk gives the actor `guid`: its own, else the first explicit
    /// one up its owner chain within [`MAX_OWNER_DEPTH`] links (a cycle, or a longer chain,
    /// ends with nobody, as relevancy's walks do).
    pub(super) fn chain_owner(&self, chains: &OwnerChains, guid: NetGuid) -> Option<u32> {
        let owner_actor =
            |g: NetGuid| self.guids.get(&g).and_then(|&(c, s)| self.classes[c as usize].cols.owner_actor[s as usize]);
        let mut at = guid;
        for _ in 0..=MAX_OWNER_DEPTH {
            if let Some(s) = chains.explicit(at) {
                return Some(s);
            }
            at = owner_actor(at)?;
        }
        None
    }

    /// Derives the owner of the actor in `slot` again and, when it moved, changes it as
    /// `set_owner` would (its sub-objects with it).
    fn derive_owner(&mut self, chains: &OwnerChains, class: u32, slot: u32) {
        let a = self.classes[class as usize].actors[slot as usize];
        let owner = self.chain_owner(chains, a.guid);
        if a.alive && a.owner != owner {
            self.apply_owner(class, slot, owner, a.autonomous);
        }
    }

    /// Derives the owner of `guid` (when `itself`) and of every actor below it again: its
    /// children, theirs, and the children of its sub-objects (an actor may name a sub-object its
    /// owner), down to [`MAX_OWNER_DEPTH`] links — an actor further down walks no further up
    /// than that. A no-op without [`ActorLevelConfig::owner_chain_connections`].
    ///
    /// [`ActorLevelConfig::owner_chain_connections`]: crate::net::ActorLevelConfig::owner_chain_connections
    pub(in crate::net) fn derive_owners_from(&mut self, guid: NetGuid, itself: bool) {
        self.derive_owners_below(&[guid], itself);
    }

    /// [`Self::derive_owners_from`] for several roots in one walk: an actor below two of them
    /// is derived once (a derivation reads the explicit owners and the owner links alone, never
    /// another derived owner, so the order does not matter) — a retirement's orphans
    /// ([`Self::unchain_retired`]), a removed connection's actors.
    pub(in crate::net) fn derive_owners_below(&mut self, roots: &[NetGuid], itself: bool) {
        let Some(chains) = self.chains.take() else { return };
        if itself {
            for root in roots {
                if let Some(&(c, s)) = self.guids.get(root) {
                    self.derive_owner(&chains, c, s);
                }
            }
        }
        let mut seen: HashSet<NetGuid> = roots.iter().copied().collect();
        let mut stack: Vec<(NetGuid, usize)> = roots.iter().map(|&g| (g, 0)).collect();
        while let Some((at, depth)) = stack.pop() {
            let subs = self.sub_slots(at).into_iter().map(|(_, _, g)| (g, depth + 1));
            for (parent, links) in std::iter::once((at, depth)).chain(subs).collect::<Vec<_>>() {
                if links >= MAX_OWNER_DEPTH {
                    continue;
                }
                for &child in chains.children.get(&parent).map_or(&[][..], |v| &v[..]) {
                    let Some(&(c, s)) = self.guids.get(&child) else { continue };
                    let cols = &self.classes[c as usize].cols;
                    let named =
                        cols.owner_actor[s as usize] == Some(parent) && cols.sub_condition[s as usize].is_none();
                    if named && seen.insert(child) {
                        self.derive_owner(&chains, c, s);
                        stack.push((child, links + 1));
                    }
                }
            }
        }
        self.chains = Some(chains);
    }

    /// The actor `guid` in `slot` is being retired: it leaves the chains, and the actors below
    /// it — its children, its sub-objects (an orphan the game keeps is an actor of its own, its
    /// owner actor gone) and their children — are returned, to derive again once it is gone
    /// ([`Self::derive_owners_below`]).
    /// Without owner chains a retirement (by the thousand a frame) pays one test.
    pub(in crate::net) fn unchain_retired(&mut self, class: u32, slot: u32, guid: NetGuid) -> Vec<NetGuid> {
        let Some(mut chains) = self.chains.take() else { return Vec::new() };
        chains.explicit.remove(&guid);
        if let Some(owner) = self.classes[class as usize].cols.owner_actor.get(slot as usize).copied().flatten() {
            chains.unlink(guid, owner);
        }
        let mut below = chains.children.remove(&guid).unwrap_or_default();
        for (_, _, sub) in self.sub_slots(guid) {
            below.push(sub);
            below.extend(chains.children.get(&sub).into_iter().flatten().copied());
        }
        self.chains = Some(chains);
        below
    }

    /// A sub-object takes its owner's connection from now on: an owner the game gave it before
    /// goes, and so does the owner actor it had named (`old_link`; a sub-object's is its owner,
    /// which the chains reach through the owner's sub-objects).
    pub(in crate::net) fn unchain_sub_object(&mut self, guid: NetGuid, old_link: Option<NetGuid>) {
        if let Some(chains) = self.chains.as_mut() {
            chains.explicit.remove(&guid);
            if let Some(old) = old_link {
                chains.unlink(guid, old);
            }
        }
    }
}
