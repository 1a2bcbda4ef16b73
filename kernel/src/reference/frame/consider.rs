//! The reference's consider list: every awake, due, replicating actor, compared property by
//! property — read from the store into its object and compared with its own shadow (push-based
//! properties and dynamic arrays only where marked) — and its next time scheduled, as UE's
//! `ServerReplicateActors_BuildConsiderList` and `FRepLayout::CompareProperties` do.

use super::{switched_on, ReferenceFrame, Serve};
use crate::compare::PushMode;
use crate::ids::Frame;
use crate::net::consider::ServerTime;
use crate::net::level::{clock_key, location, relevancy_of};
use crate::net::relevancy::MAX_OWNER_DEPTH;
use crate::net::{NetDriver, NetSettings};
use crate::schema::PAGE_LANES;
use crate::store::ClassStore;

impl ReferenceFrame {
    /// The consider list: due actors, each compared property by property and rescheduled.
    pub(super) fn consider(
        &mut self,
        driver: &NetDriver,
        stores: &mut [&mut ClassStore],
        order: &[usize],
        time: &ServerTime,
    ) -> Vec<(u32, u32)> {
        let adaptive = driver.level.as_ref().is_some_and(|l| l.cfg.adaptive_frequency);
        let push = driver.cfg.compare.push;
        let mut due = Vec::new();
        for (c, class) in driver.classes.iter().enumerate() {
            let layout = &class.layout;
            let store = &*stores[order[c]];
            let dirty = store.dirty(&self.watchers[c]);
            let parents = layout.parents.len();
            // Which parents' fixed leaves are compared only where marked (arrays always are).
            let uses_marks: Vec<bool> = layout
                .parents
                .iter()
                .map(|parent| match push {
                    PushMode::Off => false,
                    PushMode::Declared => parent.push,
                    PushMode::All => true,
                })
                .collect();
            let mut compared = vec![0u64; class.actors.len().div_ceil(PAGE_LANES)];
            let mut buf = [0u8; 256];
            for slot in self.active.slots(c) {
                let Some(a) = self.actors[c][slot].as_mut() else { continue };
                // Torn off (or a sub-object whose owner is gone): never replicated again; not
                // replicating.
                if !a.clock.due(time.now) || a.torn || !switched_on(driver, a.owner, Some(&class.actors[slot])) {
                    continue;
                }
                compared[slot / PAGE_LANES] |= 1 << (slot % PAGE_LANES);
                let (p, lane) = (slot / PAGE_LANES, slot % PAGE_LANES);
                let marked = |parent: usize| dirty.masks.get(p * parents + parent).is_some_and(|m| m >> lane & 1 != 0);
                for (li, leaf) in layout.leaves.iter().enumerate() {
                    let differs = match leaf.array {
                        Some(arr) => {
                            if !(a.fresh || marked(leaf.parent)) {
                                continue;
                            }
                            let now = store.array_bytes(slot as u32, arr);
                            let d = now != &a.shadow_arrays[arr][..];
                            if d {
                                // The shadow array keeps its memory, as UE's does.
                                let shadow = &mut a.shadow_arrays[arr];
                                shadow.clear();
                                shadow.extend_from_slice(now);
                            }
                            d
                        }
                        None => {
                            if uses_marks[leaf.parent] && !(a.fresh || marked(leaf.parent)) {
                                continue;
                            }
                            let n = leaf.kind.byte_size();
                            store.read_leaf(slot as u32, li, &mut buf[..n]);
                            let at = leaf.record_offset;
                            a.object[at..at + n].copy_from_slice(&buf[..n]);
                            let d = a.object[at..at + n] != a.shadow[at..at + n];
                            if d {
                                a.shadow[at..at + n].copy_from_slice(&buf[..n]);
                            }
                            d
                        }
                    };
                    if differs {
                        a.last_changed[li] = time.frame.0;
                    }
                }
                a.fresh = false;
                let settings: NetSettings = class.cols.settings[slot];
                let key = clock_key(a.guid, class.cols.owner_actor[slot], class.cols.sub_condition[slot]);
                a.clock.considered(key, time, &settings.frequency, adaptive);
                due.push((c as u32, slot as u32));
            }
            let (_, dirty) = stores[order[c]].split_for_compare(&self.watchers[c]);
            dirty.clear_lanes(&compared);
        }
        self.refresh_links(driver, stores, order, &due, time.frame);
        due
    }

    /// What relevancy and priority read of an actor (`RefActor::link`: UE's own fields, read
    /// through the actor's pointer where it asks), refreshed once a frame for the actors the
    /// frame can ask about: the due actors and the actors up their owner chains (the owner-only
    /// rule, owner relevancy and priority follow them, at most [`MAX_OWNER_DEPTH`] links). And
    /// which connections a tearing actor serves (`RefActor::serve`, read once its slot may hold
    /// another actor). Until session 72 every live actor's were refreshed each frame — ~3 % of
    /// the reference's instructions in battle_royale, where 6 700 of 50 000 actors are due, and a
    /// quarter of open_world's frame (68.6–69.6 → 50.3–50.5 ms), whose 990 000 sleepers UE never
    /// looks at.
    fn refresh_links(
        &mut self,
        driver: &NetDriver,
        stores: &[&mut ClassStore],
        order: &[usize],
        due: &[(u32, u32)],
        frame: Frame,
    ) {
        for &(c, s) in due {
            let mut at = Some((c, s));
            // (Every link of the chain, refreshed or not by an earlier one's walk: a chain is
            // walked as far from each actor as relevancy walks it.)
            for _ in 0..=MAX_OWNER_DEPTH {
                let Some((c, s)) = at else { break };
                let (class, slot) = (&driver.classes[c as usize], s as usize);
                let Some(a) = self.actors[c as usize].get_mut(slot).and_then(Option::as_mut) else { break };
                if a.linked != Some(frame) {
                    let store = &*stores[order[c as usize]];
                    let place = location(class, store, s);
                    a.link = (relevancy_of(class, s, place), class.cols.settings[slot].net_priority);
                    a.linked = Some(frame);
                }
                at = a.link.0.owner.and_then(|g| driver.guids.get(&g).copied());
            }
        }
        let tearing = driver.tearing.iter().map(|t| t.actor()).map(|(c, s, _)| (c, s));
        for (c, s) in tearing.chain(self.deferring.iter().copied()).collect::<Vec<_>>() {
            let class = &driver.classes[c as usize];
            let live = class.actors.get(s as usize).is_some_and(|net| net.alive);
            let entry = self.actors[c as usize].get_mut(s as usize).and_then(Option::as_mut);
            if let Some(a) = entry.filter(|a| live && class.actors[s as usize].guid == a.guid) {
                a.serve = Serve::of(class, s as usize);
            }
        }
    }
}

/// The reference's awake entries, per class a bit per slot: UE's `ActiveNetworkObjects`, the
/// set its consider list is built from — an actor dormant wherever it is held leaves it (UE:
/// `FNetworkObjectList::MarkDormant` on its last connection) and comes back when woken. A frame
/// walks the awake actors, not every actor in the world (open_world's 990 000 sleepers).
pub(super) struct ActiveList {
    bits: Vec<Vec<u64>>,
}

impl ActiveList {
    pub(super) fn new(classes: usize) -> Self {
        ActiveList { bits: vec![Vec::new(); classes] }
    }

    /// Room for `slots` slots of class `c`.
    pub(super) fn grow(&mut self, c: usize, slots: usize) {
        let words = &mut self.bits[c];
        words.resize(slots.div_ceil(64).max(words.len()), 0);
    }

    pub(super) fn set(&mut self, c: u32, slot: usize, awake: bool) {
        let word = &mut self.bits[c as usize][slot / 64];
        let bit = 1u64 << (slot % 64);
        *word = if awake { *word | bit } else { *word & !bit };
    }

    pub(super) fn contains(&self, c: usize, slot: usize) -> bool {
        self.bits[c].get(slot / 64).is_some_and(|w| w >> (slot % 64) & 1 != 0)
    }

    /// Class `c`'s awake slots, ascending.
    pub(super) fn slots(&self, c: usize) -> impl Iterator<Item = usize> + '_ {
        crate::net::relevancy::due_in(&self.bits[c]).map(|s| s as usize)
    }
}
