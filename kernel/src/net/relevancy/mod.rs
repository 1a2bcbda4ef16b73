//! UE's actor relevancy rules (`AActor::IsNetRelevantFor`), one actor and one viewer at a time.
//!
//! ```text
//! in UE's order, first match wins:
//! 1. relevant if always relevant, owned by the view target or the real viewer (the owner chain
//!    is walked), the view target itself, or instigated by the view target
//! 2. net-use-owner-relevancy with an owner → the owner's answer
//! 3. only relevant to owner → not relevant (1 already said yes to the owner)
//! 4. hidden and (no root component or collision disabled) → not relevant
//! 5. no root component → not relevant
//! 6. relevant iff dist²(view location, actor location) < net cull distance squared (strictly)
//! ```
//!
//! This is the rule as UE states it, written for clarity: the UE-style reference frame calls it
//! per actor, and the kernel's data-oriented path (grid broad phase, SIMD distance sweeps over
//! columns, issue 7's spatial layer) must agree with it. A connection's answer is the
//! OR over its viewers (split-screen children count for their parent), after UE's owner-only
//! filter ([`relevant_to_connection`]). Attachment to a parent component (UE's rule between 3 and
//! 4) has no rule here: a sub-object rides its owner's channel ([`crate::net::lifecycle`]), and
//! an attached actor that should follow its parent declares owner relevancy.
//!
//! Owner and instigator chains are followed through a lookup the caller provides, at most
//! [`MAX_OWNER_DEPTH`] links from the actor asked about — owner relevancy's steps up the chain
//! included, so no answer depends on a link further than that (the actor level's index holds
//! exactly those links; a lookup of every actor gives the same answers): a cycle (a
//! misconfigured game) or a longer chain ends as "not owned" and, under owner relevancy, "not
//! relevant".

use crate::ids::NetGuid;
use std::sync::Arc;

mod index;
pub(crate) mod radix;
pub(crate) use index::{due_flags, due_in, has_due, set_due, DueActor, RelevancyIndex, Scratch, DUE_HOT_BYTES};

/// A class's own relevancy rule (UE's `IsNetRelevantFor` override): `Some(answer)` decides,
/// `None` leaves it to UE's rules. Called once per (actor, viewer) the frame asks about.
pub type RelevancyHook = Arc<dyn Fn(&ActorRelevancy, &Viewer) -> Option<bool> + Send + Sync>;

/// UE's default `NetCullDistanceSquared` (15 000 units).
pub const DEFAULT_CULL_DISTANCE_SQUARED: f32 = 225_000_000.0;

/// Owner links followed before giving up (a cycle, or an absurd chain).
pub const MAX_OWNER_DEPTH: usize = 16;

/// What relevancy reads of one actor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ActorRelevancy {
    /// The actor.
    pub guid: NetGuid,
    /// Its owner (UE's `Owner`), if any.
    pub owner: Option<NetGuid>,
    /// Its instigator, if any.
    pub instigator: Option<NetGuid>,
    /// Where it is.
    pub location: [f32; 3],
    /// `NetCullDistanceSquared`.
    pub cull_distance_squared: f32,
    /// `bAlwaysRelevant`.
    pub always_relevant: bool,
    /// `bOnlyRelevantToOwner`.
    pub only_relevant_to_owner: bool,
    /// `bNetUseOwnerRelevancy`.
    pub use_owner_relevancy: bool,
    /// `bHidden`.
    pub hidden: bool,
    /// Has a root component (UE: a scene component; actors without one are relevant only by
    /// rule 1 or 2).
    pub has_root: bool,
    /// Its root collides (a hidden actor that collides stays relevant, as in UE).
    pub collision: bool,
}

impl ActorRelevancy {
    /// An actor with UE's defaults at `location`: a root with collision, visible, not owned.
    pub fn at(guid: NetGuid, location: [f32; 3]) -> Self {
        Self {
            guid,
            owner: None,
            instigator: None,
            location,
            cull_distance_squared: DEFAULT_CULL_DISTANCE_SQUARED,
            always_relevant: false,
            only_relevant_to_owner: false,
            use_owner_relevancy: false,
            hidden: false,
            has_root: true,
            collision: true,
        }
    }
}

/// One viewer of a connection.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Viewer {
    /// The connection's own actor (UE's `RealViewer`, usually the player controller).
    pub real_viewer: Option<NetGuid>,
    /// The actor it views through (UE's `ViewTarget`, usually the pawn).
    pub view_target: Option<NetGuid>,
    /// Where it views from.
    pub location: [f32; 3],
    /// Unit view direction.
    pub direction: [f32; 3],
}

/// Whether `actor` is relevant to `viewer`, by UE's rules in UE's order. `lookup` finds the
/// actors named by owner links (owner relevancy here asks no class hook: see
/// [`relevant_to_connection`]).
pub fn is_net_relevant_for<'a>(
    actor: &ActorRelevancy,
    viewer: &Viewer,
    lookup: &impl Fn(NetGuid) -> Option<&'a ActorRelevancy>,
) -> bool {
    relevant(actor, viewer, lookup, &|_| None, 0)
}

fn relevant<'a, 'h>(
    actor: &ActorRelevancy,
    viewer: &Viewer,
    lookup: &impl Fn(NetGuid) -> Option<&'a ActorRelevancy>,
    hook_of: &impl Fn(NetGuid) -> Option<&'h RelevancyHook>,
    depth: usize,
) -> bool {
    // `actor` is `depth` links up the chain of the actor asked about: its own chain is walked
    // only as far as that one's may be.
    let links = MAX_OWNER_DEPTH - depth;
    let owner_of = |g: NetGuid| lookup(g).and_then(|a| a.owner);
    let owned_by = |o: Option<NetGuid>| o.is_some_and(|o| chain_within(actor.guid, actor.owner, o, &owner_of, links));
    // `owned_by` counts the actor itself, so "this == view target" is in the first test.
    if actor.always_relevant
        || owned_by(viewer.view_target)
        || owned_by(viewer.real_viewer)
        || (viewer.view_target.is_some() && actor.instigator == viewer.view_target)
    {
        return true;
    }
    if actor.use_owner_relevancy {
        if let Some(owner) = actor.owner {
            if links == 0 {
                // Its owner is a link too far (a cycle, or an absurd chain).
                return false;
            }
            if let Some(owner) = lookup(owner) {
                return match hook_of(owner.guid).and_then(|h| h(owner, viewer)) {
                    Some(answer) => answer,
                    None => relevant(owner, viewer, lookup, hook_of, depth + 1),
                };
            }
        }
    }
    if actor.only_relevant_to_owner {
        return false;
    }
    if actor.hidden && (!actor.has_root || !actor.collision) {
        return false;
    }
    if !actor.has_root {
        return false;
    }
    within_cull_distance(actor.location, actor.cull_distance_squared, viewer.location)
}

/// UE's `IsOwnedBy`: `owner` is the actor itself or on its owner chain.
pub fn owned_by<'a>(
    actor: &ActorRelevancy,
    owner: Option<NetGuid>,
    lookup: &impl Fn(NetGuid) -> Option<&'a ActorRelevancy>,
) -> bool {
    owner.is_some_and(|o| on_owner_chain(actor.guid, actor.owner, o, &|g| lookup(g).and_then(|a| a.owner)))
}

/// Whether `target` is actor `guid` itself or one of the [`MAX_OWNER_DEPTH`] links of the owner
/// chain that starts at `first`, `owner_of` naming each link's owner: [`owned_by`]'s walk, for
/// any store of the links.
pub(crate) fn on_owner_chain(
    guid: NetGuid,
    first: Option<NetGuid>,
    target: NetGuid,
    owner_of: &impl Fn(NetGuid) -> Option<NetGuid>,
) -> bool {
    chain_within(guid, first, target, owner_of, MAX_OWNER_DEPTH)
}

/// [`on_owner_chain`] over at most `links` links.
fn chain_within(
    guid: NetGuid,
    first: Option<NetGuid>,
    target: NetGuid,
    owner_of: &impl Fn(NetGuid) -> Option<NetGuid>,
    links: usize,
) -> bool {
    if guid == target {
        return true;
    }
    let mut link = first;
    for _ in 0..links {
        match link {
            Some(g) if g == target => return true,
            Some(g) => link = owner_of(g),
            None => return false,
        }
    }
    false
}

/// [`owned_by_viewers`]' question for any store of the links (see [`on_owner_chain`]).
pub(crate) fn chain_viewed(
    guid: NetGuid,
    first: Option<NetGuid>,
    viewers: &[Viewer],
    owner_of: &impl Fn(NetGuid) -> Option<NetGuid>,
) -> bool {
    let mut ends = viewers.iter().flat_map(|v| [v.real_viewer, v.view_target]).flatten();
    ends.any(|t| on_owner_chain(guid, first, t, owner_of))
}

/// UE's `IsActorRelevantToConnection`: relevant to any of the connection's viewers (split-screen
/// children count for it). `owned_by_connection`: the game made the connection the actor's owner
/// ([`crate::net::NetDriver::set_owner`]), which counts as owned by its real viewer (rule 1).
///
/// An owner-only actor that the connection does not own — neither by `owned_by_connection` nor
/// by a viewer's real viewer or view target on its owner chain — is not relevant whatever the
/// rules say: UE skips it in `ServerReplicateActors_PrioritizeActors`
/// (`IsActorOwnedByAndRelevantToConnection`) before asking them, so rule 1 (always relevant,
/// instigated by the view target, the view target itself) cannot send it to another client.
pub fn relevant_to_connection<'a, 'h>(
    actor: &ActorRelevancy,
    owned_by_connection: bool,
    viewers: &[Viewer],
    hook: Option<&RelevancyHook>,
    lookup: &impl Fn(NetGuid) -> Option<&'a ActorRelevancy>,
    hook_of: &impl Fn(NetGuid) -> Option<&'h RelevancyHook>,
) -> bool {
    if owned_by_connection && !viewers.is_empty() {
        return true;
    }
    if actor.only_relevant_to_owner && !owned_by_viewers(actor, viewers, lookup) {
        return false;
    }
    viewers.iter().any(|v| match hook.and_then(|h| h(actor, v)) {
        Some(answer) => answer,
        None => relevant(actor, v, lookup, hook_of, 0),
    })
}

/// Whether a viewer's real viewer or view target is `actor` or on its owner chain (UE's
/// `IsActorOwnedByAndRelevantToConnection`, the owner-only filter; with `owned_by_connection`
/// of [`relevant_to_connection`] it is "the connection owns the actor").
pub fn owned_by_viewers<'a>(
    actor: &ActorRelevancy,
    viewers: &[Viewer],
    lookup: &impl Fn(NetGuid) -> Option<&'a ActorRelevancy>,
) -> bool {
    chain_viewed(actor.guid, actor.owner, viewers, &|g| lookup(g).and_then(|a| a.owner))
}

/// The distance rule: strictly inside the cull distance (NaN anywhere: not relevant).
pub fn within_cull_distance(location: [f32; 3], cull_distance_squared: f32, view: [f32; 3]) -> bool {
    let d = [location[0] - view[0], location[1] - view[1], location[2] - view[2]];
    d[0] * d[0] + d[1] * d[1] + d[2] * d[2] < cull_distance_squared
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn viewer(at: [f32; 3]) -> Viewer {
        Viewer {
            real_viewer: Some(NetGuid(100)),
            view_target: Some(NetGuid(102)),
            location: at,
            direction: [1.0, 0.0, 0.0],
        }
    }

    fn check(actor: &ActorRelevancy, others: &[ActorRelevancy], v: &Viewer) -> bool {
        let map: HashMap<NetGuid, ActorRelevancy> = others.iter().map(|a| (a.guid, *a)).collect();
        is_net_relevant_for(actor, v, &|g| map.get(&g))
    }

    #[test]
    fn cull_distance_is_strictly_less_than() {
        let v = viewer([0.0; 3]);
        let mut a = ActorRelevancy::at(NetGuid(2), [15_000.0, 0.0, 0.0]);
        assert!(!check(&a, &[], &v), "exactly at the cull distance is not relevant");
        a.location = [14_999.0, 0.0, 0.0];
        assert!(check(&a, &[], &v));
        a.location = [0.0, 3.0, 4.0];
        a.cull_distance_squared = 25.0;
        assert!(!check(&a, &[], &v), "3-4-5 exactly on the edge");
        a.cull_distance_squared = 25.0001;
        assert!(check(&a, &[], &v));
        a.location = [f32::NAN, 0.0, 0.0];
        assert!(!check(&a, &[], &v));
    }

    #[test]
    fn rule_one_beats_everything_after_it() {
        let far = [1.0e9, 0.0, 0.0];
        let v = viewer([0.0; 3]);
        let base = ActorRelevancy {
            only_relevant_to_owner: true,
            hidden: true,
            has_root: false,
            ..ActorRelevancy::at(NetGuid(2), far)
        };
        assert!(!check(&base, &[], &v));
        assert!(check(&ActorRelevancy { always_relevant: true, ..base }, &[], &v));
        assert!(check(&ActorRelevancy { guid: NetGuid(102), ..base }, &[], &v), "the view target itself");
        assert!(
            check(&ActorRelevancy { instigator: Some(NetGuid(102)), ..base }, &[], &v),
            "instigated by the view target"
        );
        assert!(check(&ActorRelevancy { owner: Some(NetGuid(100)), ..base }, &[], &v), "owned by the real viewer");
        assert!(check(&ActorRelevancy { guid: NetGuid(100), ..base }, &[], &v), "the real viewer itself");
        // Owned through a chain: weapon → pawn (102, the view target).
        let pawn = ActorRelevancy::at(NetGuid(102), far);
        let holster = ActorRelevancy { owner: Some(NetGuid(102)), ..ActorRelevancy::at(NetGuid(4), far) };
        let weapon = ActorRelevancy { owner: Some(NetGuid(4)), ..base };
        assert!(check(&weapon, &[pawn, holster], &v));
        // No view target: an actor without an instigator is not "instigated by it".
        let blind = Viewer { view_target: None, real_viewer: None, ..v };
        assert!(!check(&ActorRelevancy { instigator: None, ..base }, &[], &blind));
    }

    #[test]
    fn owner_relevancy_and_owner_only() {
        let v = viewer([0.0; 3]);
        let near = [10.0, 0.0, 0.0];
        let far = [1.0e9, 0.0, 0.0];
        let owner_near = ActorRelevancy::at(NetGuid(6), near);
        let owner_far = ActorRelevancy::at(NetGuid(8), far);
        let follower = |owner, at| ActorRelevancy {
            use_owner_relevancy: true,
            owner: Some(NetGuid(owner)),
            ..ActorRelevancy::at(NetGuid(2), at)
        };
        assert!(check(&follower(6, far), &[owner_near], &v), "far, but its owner is near");
        assert!(!check(&follower(8, near), &[owner_far], &v), "near, but its owner is far");
        // An owner the lookup does not know: the rule does not apply; the distance decides.
        assert!(check(&follower(10, near), &[], &v));
        let private = ActorRelevancy { only_relevant_to_owner: true, ..ActorRelevancy::at(NetGuid(2), near) };
        assert!(!check(&private, &[], &v), "owner-only and not owned by this viewer");
        assert!(check(&ActorRelevancy { owner: Some(NetGuid(100)), ..private }, &[], &v));
    }

    #[test]
    fn an_owner_only_actor_reaches_no_connection_that_does_not_own_it_whatever_rule_one_says() {
        // UE's PrioritizeActors skips an owner-only actor its connection does not own before it
        // asks IsNetRelevantFor, whose rule 1 would say yes to each of these.
        let v = viewer([0.0; 3]);
        let none = |_: NetGuid| None;
        let private =
            ActorRelevancy { only_relevant_to_owner: true, ..ActorRelevancy::at(NetGuid(2), [10.0, 0.0, 0.0]) };
        for (yes_by_rule_one, why) in [
            (ActorRelevancy { always_relevant: true, ..private }, "always relevant"),
            (ActorRelevancy { instigator: Some(NetGuid(102)), ..private }, "instigated by the view target"),
        ] {
            assert!(is_net_relevant_for(&yes_by_rule_one, &v, &none), "{why}: rule 1 alone says yes");
            assert!(!relevant_to_connection(&yes_by_rule_one, false, &[v], None, &none, &|_| None), "{why}, not owned");
            assert!(
                relevant_to_connection(&yes_by_rule_one, true, &[v], None, &none, &|_| None),
                "{why}, owned by the connection"
            );
        }
        // Owned through a viewer's real viewer or view target (the actor itself counts).
        let owned = ActorRelevancy { owner: Some(NetGuid(100)), ..private };
        assert!(relevant_to_connection(&owned, false, &[v], None, &none, &|_| None));
        assert!(relevant_to_connection(
            &ActorRelevancy { guid: NetGuid(102), ..private },
            false,
            &[v],
            None,
            &none,
            &|_| None
        ));
        // A class hook that says yes is not asked either.
        let hook: RelevancyHook = Arc::new(|_, _| Some(true));
        assert!(!relevant_to_connection(&private, false, &[v], Some(&hook), &none, &|_| None));
    }

    #[test]
    fn hidden_actors_and_actors_without_a_root() {
        let v = viewer([0.0; 3]);
        let a = ActorRelevancy::at(NetGuid(2), [1.0, 0.0, 0.0]);
        assert!(check(&ActorRelevancy { hidden: true, ..a }, &[], &v), "hidden but colliding: relevant");
        assert!(!check(&ActorRelevancy { hidden: true, collision: false, ..a }, &[], &v));
        assert!(!check(&ActorRelevancy { has_root: false, ..a }, &[], &v));
        assert!(check(&ActorRelevancy { has_root: false, always_relevant: true, ..a }, &[], &v));
    }

    #[test]
    fn owner_cycles_end_as_not_owned() {
        let v = viewer([0.0; 3]);
        let far = [1.0e9, 0.0, 0.0];
        let a = ActorRelevancy {
            owner: Some(NetGuid(4)),
            use_owner_relevancy: true,
            ..ActorRelevancy::at(NetGuid(2), far)
        };
        let b = ActorRelevancy {
            owner: Some(NetGuid(2)),
            use_owner_relevancy: true,
            ..ActorRelevancy::at(NetGuid(4), far)
        };
        assert!(!check(&a, &[a, b], &v), "a cycle neither hangs nor counts as owned");
    }

    /// No answer depends on an owner further than `MAX_OWNER_DEPTH` links from the actor asked
    /// about, owner relevancy's steps included: a lookup that knows only those links (the actor
    /// level's index) answers as one that knows every actor (the reference). The chain's last
    /// link — the viewer's view target or not, near or far — moves along it.
    #[test]
    fn answers_depend_on_no_link_beyond_the_owner_depth() {
        let far = [1.0e9, 0.0, 0.0];
        let near = [10.0, 0.0, 0.0];
        for len in 1..=MAX_OWNER_DEPTH + 3 {
            for (follow, end_near, end_viewed) in (0..8).map(|k| (k & 1 != 0, k & 2 != 0, k & 4 != 0)) {
                // Actor 2 owned by 4, by 6, …: `len` links; each link follows its owner if
                // `follow`; the end is the viewer's view target if `end_viewed`.
                let guid = |i: usize| NetGuid(2 + 2 * i as u64);
                let chain: Vec<ActorRelevancy> = (0..=len)
                    .map(|i| ActorRelevancy {
                        owner: (i < len).then(|| guid(i + 1)),
                        use_owner_relevancy: follow,
                        ..ActorRelevancy::at(guid(i), if i == len && end_near { near } else { far })
                    })
                    .collect();
                let v = Viewer {
                    real_viewer: None,
                    view_target: end_viewed.then(|| guid(len)),
                    location: [0.0; 3],
                    direction: [1.0, 0.0, 0.0],
                };
                let all: HashMap<NetGuid, ActorRelevancy> = chain.iter().map(|a| (a.guid, *a)).collect();
                let known: HashMap<NetGuid, ActorRelevancy> =
                    chain.iter().take(MAX_OWNER_DEPTH + 1).map(|a| (a.guid, *a)).collect();
                let whole = is_net_relevant_for(&chain[0], &v, &|g| all.get(&g));
                let held = is_net_relevant_for(&chain[0], &v, &|g| known.get(&g));
                assert_eq!(whole, held, "{len} links, follow {follow}, end near {end_near}, viewed {end_viewed}");
                if len <= MAX_OWNER_DEPTH {
                    assert_eq!(whole, end_viewed || follow && end_near, "{len} links within reach");
                } else {
                    assert!(!whole, "{len} links: beyond reach");
                }
            }
        }
    }
}
