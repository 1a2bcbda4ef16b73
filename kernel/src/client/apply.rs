//! Applying a validated packet to the actor table: exports bind static actors loaded with the
//! level, closes destroy an actor (or keep it, for dormancy and tear-off), bunches spawn or bind
//! their actor and write its records; a reference to an object the client lacks waits, unmapped,
//! until its target arrives; notifies fire by their declared mode.

use super::closed::Was;
use super::unmapped::Slot;
use super::{ClientEvent, ClientWorld, NotifyEvent, TearOff, MAX_MAPPED, MAX_UNMAPPED};
use crate::ids::{NetGuid, NetRole, Seq};
use crate::schema::{LeafKind, Notify};
use crate::store::value_bits_eq;
use crate::store::ActorId;
use crate::value::Value;
use crate::wire::bunch::{Close, RecordValue};
use crate::wire::open::{CloseReason, OpenHeader, OpenKind};

impl ClientWorld {
    /// Binds a static actor the client loaded at `path` to `guid` (an export: the server's
    /// references name it), and writes the references that waited for it. An export of a path
    /// the client did not load, or already bound to another GUID, changes nothing.
    pub(super) fn bind_export(&mut self, guid: NetGuid, path: &str) {
        if self.actors.contains_key(&guid) {
            return;
        }
        if let Some(bound) = self.objects.get_mut(path) {
            match *bound {
                None => {
                    *bound = Some(guid);
                    self.bind_object(guid, path);
                }
                // A server gives a path one GUID and exports it once: another one is a forger's.
                Some(g) if g != guid => self.stats.object_export_conflicts += 1,
                Some(_) => {}
            }
            return;
        }
        let Some(entry) = self.level.get_mut(path).filter(|e| e.2.is_none()) else {
            self.stats.unknown_statics += 1;
            // Kept for a static object loaded later (a level actor's path bound already, or a
            // path taken: not kept).
            if !self.level.contains_key(path) && !self.pending_exports.contains_key(path) {
                if self.pending_exports.len() < super::MAX_PENDING_EXPORTS {
                    self.pending_exports.insert(path.into(), guid);
                } else {
                    self.stats.pending_exports_dropped += 1;
                }
            }
            return;
        };
        entry.2 = Some(guid);
        let (class, id) = (entry.0, entry.1);
        self.bound.insert(guid, path.into());
        self.actors.insert(guid, (class, id));
        self.events.push(ClientEvent::Bound { guid, class });
        self.resolve(guid);
    }

    /// Binds static object `path` to `guid` (the first export of the path: the server exports an
    /// object once, so a later export naming another GUID, a forger's, changes nothing —
    /// [`ClientStats::object_export_conflicts`]).
    ///
    /// [`ClientStats::object_export_conflicts`]: super::ClientStats::object_export_conflicts
    pub(super) fn bind_object(&mut self, guid: NetGuid, path: &str) {
        // A GUID bound to another path before: that path is unbound (one GUID, one path).
        if let Some(other) = self.object_paths.insert(guid, path.into()) {
            if let Some(b) = self.objects.get_mut(&other) {
                *b = None;
            }
        }
        self.statics.insert(guid);
        self.resolve(guid);
    }

    /// Takes static GUID `guid` off the level actor it was bound to (an open of that actor's path
    /// named another GUID: one of the two was forged, the newest binds). The level copy stays for
    /// the new GUID; the old one's references wait as for a destroyed actor, its sub-objects and
    /// fast arrays (a forger's) go.
    fn unbind_static(&mut self, guid: NetGuid) {
        for g in self.subs.take_owned(guid) {
            self.destroy(g);
        }
        for array in self.fast.remove_owned(guid) {
            self.forget_references(array);
        }
        self.actors.remove(&guid);
        if let Some(path) = self.bound.remove(&guid) {
            if let Some(entry) = self.level.get_mut(&path) {
                entry.2 = None;
            }
        }
        self.dormant.remove(&guid);
        self.torn.remove(&guid);
        self.autonomous.remove(&guid);
        self.forget_references(guid);
        self.park_references_to(guid);
        self.stats.statics_rebound += 1;
    }

    /// The references that named `guid`, gone from this client, wait for it again (nulled until
    /// it comes back). At most half the waiting list for references to gone actors (which may
    /// never come back): the other half stays for objects on their way. Beyond, a reference
    /// keeps the GUID, and the actor's return fires no notify for it.
    fn park_references_to(&mut self, guid: NetGuid) {
        for slot in self.mapped.take_target(guid) {
            if self.unmapped.len() < MAX_UNMAPPED / 2 && self.unmapped.insert(slot, guid, MAX_UNMAPPED) {
                self.write_reference(slot, NetGuid(0));
            } else {
                self.stats.mapped_dropped += 1;
            }
        }
    }

    /// Applies a channel's close, carried by packet `seq`. Closing an actor the client never got
    /// (its open was lost) is no error; a destroyed static actor is found by its path if its
    /// GUID was never bound.
    pub(super) fn close(&mut self, guid: NetGuid, close: Close, seq: Seq) {
        match close.reason {
            // A torn-off copy is the client's own: the server's destruction of the actor does
            // not reach it (a static actor's close goes to every client, those that tore it off
            // while its tear-off still waited for another among them).
            CloseReason::Destroyed if self.torn.contains_key(&guid) => {}
            CloseReason::Destroyed => {
                self.remember_closed(guid);
                if self.fast.remove(guid) {
                    self.forget_references(guid);
                    // A fast array removed from its owner (or no longer for this connection).
                } else if self.actors.contains_key(&guid) {
                    // A bound static actor's level entry goes with it (`destroy`).
                    self.destroy(guid);
                } else if let Some(path) = close.path.as_deref() {
                    // A static actor this client never bound (it joined after the destruction,
                    // or the actor never opened here): only a path bound to nobody is taken.
                    if let Some((class, id, None)) = self.level.get(path).copied() {
                        self.level.remove(path);
                        let _ = self.classes[class as usize].store.despawn(id);
                        self.events.push(ClientEvent::Destroyed { guid });
                    }
                }
            }
            // The server's answer to this client's unloading the actor's sublevel: a copy the
            // game has not unloaded itself goes as a destroyed one (a static actor's is brought
            // back by the server's next open of it, should the close be forged); a GUID bound to
            // nothing changes nothing — above all no level actor loaded again since.
            CloseReason::LevelUnloaded if self.torn.contains_key(&guid) => {}
            CloseReason::LevelUnloaded => {
                self.remember_closed(guid);
                if self.fast.remove(guid) {
                    self.forget_references(guid);
                } else if self.actors.contains_key(&guid) {
                    self.destroy(guid);
                }
            }
            CloseReason::Dormant => {
                if self.actors.contains_key(&guid) && self.dormant.insert(guid) {
                    self.events.push(ClientEvent::Dormant { guid });
                }
            }
            CloseReason::TornOff => {
                if self.actors.contains_key(&guid) && !self.torn.contains_key(&guid) {
                    self.dormant.remove(&guid);
                    // Its references and its fast arrays' (they stay with it, no longer
                    // replicated) wait no more.
                    let mut dropped = self.forget_references(guid);
                    for array in self.fast_arrays_of(guid).to_vec() {
                        dropped += self.forget_references(array);
                    }
                    let dropped_refs = dropped > 0;
                    self.torn.insert(guid, TearOff { at: seq, dropped_refs });
                    self.events.push(ClientEvent::TornOff { guid });
                }
            }
        }
    }

    /// Records what dynamic object `guid`, closing, was — and, for an actor, its sub-objects and
    /// fast arrays, which go with it ([`super::closed`]).
    fn remember_closed(&mut self, guid: NetGuid) {
        if let Some(kind) = self.fast.kind_of(guid) {
            self.closed.insert(guid, Was::FastArray(kind));
            return;
        }
        if !self.actors.contains_key(&guid) {
            return;
        }
        for g in std::iter::once(guid).chain(self.subs.of(guid)) {
            if let Some(&(class, _)) = self.actors.get(&g).filter(|_| g.is_dynamic()) {
                self.closed.insert(g, Was::Actor(class));
                self.rpcs.closed_now.push(g);
            }
        }
        for array in self.fast_arrays_of(guid).to_vec() {
            if let Some(kind) = self.fast.kind_of(array) {
                self.closed.insert(array, Was::FastArray(kind));
            }
        }
    }

    /// Removes actor `guid` and everything kept about it, and its sub-objects with it (one level:
    /// a sub-object owns none). References to them are written as null and wait for them again
    /// (no notify, as UE's `MoveMappedObjectToUnmapped`): if one comes back, theirs fire.
    pub(super) fn destroy(&mut self, guid: NetGuid) {
        let subs = self.subs.take_owned(guid);
        for array in self.fast.remove_owned(guid) {
            self.forget_references(array);
        }
        for g in std::iter::once(guid).chain(subs) {
            if let Some((class, id)) = self.actors.remove(&g) {
                let _ = self.classes[class as usize].store.despawn(id);
                self.forget_references(g);
                self.park_references_to(g);
                self.spawn.remove(&g);
                self.dormant.remove(&g);
                self.torn.remove(&g);
                self.autonomous.remove(&g);
                if let Some(path) = self.bound.remove(&g) {
                    if let Some((class, _, _)) = self.level.remove(&path) {
                        self.gone_statics.insert(path, (class, g));
                    }
                }
                self.events.push(ClientEvent::Destroyed { guid: g });
            }
            self.subs.remove(g);
        }
    }

    pub(super) fn apply_bunch(&mut self, class: u32, b: crate::wire::bunch::Bunch) {
        let guid = b.guid;
        let mut spawned = false;
        self.dormant.remove(&guid);
        if let Some(OpenHeader { kind: OpenKind::Static(path), .. }) = &b.open {
            // A server gives a loaded path one GUID: a binding of the path to another GUID, or
            // of the GUID to another path, was forged (or this open is) — the newest binds.
            if self.level.contains_key(path) && self.bound.get(&guid) != Some(path) {
                if let Some(other) = self.level.get(path).and_then(|e| e.2) {
                    self.unbind_static(other);
                }
                if self.bound.contains_key(&guid) {
                    self.unbind_static(guid);
                }
            }
        }
        let id = match (self.actors.get(&guid), &b.open) {
            (Some(&(_, id)), _) => id,
            (None, Some(OpenHeader { kind: OpenKind::Static(path), .. })) => {
                // Checked before anything was applied: the path names a loaded actor of this
                // class; an export earlier in the packet may have bound it to another GUID since.
                if let Some(entry) = self.level.get_mut(path) {
                    entry.2 = Some(guid);
                    let id = entry.1;
                    self.bound.insert(guid, path.clone());
                    self.actors.insert(guid, (class, id));
                    self.events.push(ClientEvent::Bound { guid, class });
                    spawned = true;
                    id
                } else if self.gone_statics.get(path) == Some(&(class, guid)) {
                    // Destroyed by a close the server did not send (see `gone_statics`): a
                    // fresh copy, which this bunch's initial values fill.
                    self.gone_statics.remove(path);
                    let id = self.classes[class as usize].store.spawn();
                    self.level.insert(path.clone(), (class, id, Some(guid)));
                    self.bound.insert(guid, path.clone());
                    self.actors.insert(guid, (class, id));
                    self.stats.statics_restored += 1;
                    self.events.push(ClientEvent::Spawned { guid, class });
                    spawned = true;
                    id
                } else {
                    self.stats.unknown_statics += 1;
                    return;
                }
            }
            (None, open) => {
                let id = self.classes[class as usize].store.spawn();
                match open {
                    Some(OpenHeader { kind: OpenKind::Spawn(info), .. }) => {
                        self.spawn.insert(guid, *info);
                    }
                    Some(OpenHeader { kind: OpenKind::SubObject { owner }, .. }) => {
                        self.subs.insert(guid, *owner);
                    }
                    _ => {}
                }
                self.actors.insert(guid, (class, id));
                self.events.push(ClientEvent::Spawned { guid, class });
                spawned = true;
                id
            }
        };
        // An actor's open says the client's role (each open: a changed role comes in the open
        // sent again).
        if let Some(open) = b.open.as_ref().filter(|o| o.kind.has_role()) {
            let changed = if open.autonomous { self.autonomous.insert(guid) } else { self.autonomous.remove(&guid) };
            if changed && !spawned && !self.torn.contains_key(&guid) {
                let role = if open.autonomous { NetRole::AutonomousProxy } else { NetRole::SimulatedProxy };
                self.events.push(ClientEvent::RoleChanged { guid, role });
            }
        }
        let layout = self.classes[class as usize].layout.clone();
        let mut touched: Vec<(usize, Value)> = Vec::new();
        for r in &b.records {
            let Some(leaf_index) = r.handle.checked_sub(1).map(usize::from) else { continue };
            let leaf = &layout.leaves[leaf_index];
            let store = &mut self.classes[class as usize].store;
            // The value before, for a parent with a notify (the only ones `fire_touched` keeps).
            let notified = layout.parents[leaf.parent].notify != Notify::None;
            if notified && !touched.iter().any(|t| t.0 == leaf.parent) {
                if let Ok(old) = store.get(id, leaf.parent) {
                    touched.push((leaf.parent, old));
                }
            }
            match &r.value {
                RecordValue::Leaf(bytes) => {
                    self.unmapped.remove(Slot { owner: guid, leaf: leaf_index, element: None });
                    // A reference is mapped into a copy; any other leaf is written as it came.
                    let mut bytes = std::borrow::Cow::Borrowed(&bytes[..]);
                    if leaf.kind == LeafKind::Object {
                        self.mapped.remove(Slot { owner: guid, leaf: leaf_index, element: None });
                        self.map_reference(guid, leaf_index, None, bytes.to_mut());
                    }
                    let _ = self.classes[class as usize].store.write_leaf_bytes(id, leaf_index, &bytes);
                }
                RecordValue::Array { count, elements } => {
                    let Some(a) = leaf.array else { continue };
                    let array = &layout.arrays[a];
                    let per = array.elements.len().max(1);
                    let count = *count as usize;
                    self.unmapped.remove_elements_from(guid, leaf_index, count);
                    let refs = array.elements.iter().any(|e| e.kind == LeafKind::Object);
                    if refs {
                        self.mapped.remove_elements_from(guid, leaf_index, count);
                    }
                    let mut writes = Vec::with_capacity(elements.len());
                    for (nested, bytes) in elements {
                        let (e, i) = ((*nested as usize - 1) / per, (*nested as usize - 1) % per);
                        self.unmapped.remove(Slot { owner: guid, leaf: leaf_index, element: Some((e, i)) });
                        // A reference is mapped into a copy; any other element is written as it
                        // came.
                        let mut bytes = std::borrow::Cow::Borrowed(&bytes[..]);
                        if array.elements[i].kind == LeafKind::Object {
                            self.mapped.remove(Slot { owner: guid, leaf: leaf_index, element: Some((e, i)) });
                            self.map_reference(guid, leaf_index, Some((e, i)), bytes.to_mut());
                        }
                        writes.push((e, i, bytes));
                    }
                    if let Ok(buf) = self.classes[class as usize].store.array_bytes_mut(id, a) {
                        buf.resize(count * array.stride, 0);
                        for (e, i, bytes) in writes {
                            let at = e * array.stride + array.elements[i].offset;
                            buf[at..at + bytes.len()].copy_from_slice(&bytes);
                        }
                    }
                }
            }
        }
        self.fire_touched(guid, class, id, touched);
        if self.receive_events && !b.records.is_empty() {
            self.events.push(ClientEvent::Received { guid });
        }
        if spawned {
            self.resolve(guid);
        }
    }

    /// An object reference to an object the client lacks (an actor not opened yet, a static
    /// object neither registered nor exported yet) is written as null and remembered; one to an
    /// actor it has is remembered by its target, for when that actor is destroyed.
    pub(super) fn map_reference(
        &mut self,
        owner: NetGuid,
        leaf: usize,
        element: Option<(usize, usize)>,
        bytes: &mut [u8],
    ) {
        let g = guid_of(bytes);
        let slot = Slot { owner, leaf, element };
        if g.is_null() {
            return;
        }
        if self.actors.contains_key(&g) {
            if !self.mapped.insert(slot, g, MAX_MAPPED) {
                self.stats.mapped_dropped += 1;
            }
        } else if !self.statics.contains(&g) {
            if !self.unmapped.insert(slot, g, MAX_UNMAPPED) {
                self.stats.unmapped_dropped += 1;
            }
            bytes[..8].fill(0);
        }
    }

    /// Writes reference `target` into `slot` (nothing if its owner or element is gone).
    fn write_reference(&mut self, slot: Slot, target: NetGuid) {
        let Some(&(class, id)) = self.actors.get(&slot.owner) else {
            self.write_item_reference(slot, target);
            return;
        };
        let c = &mut self.classes[class as usize];
        let bytes = target.0.to_le_bytes();
        let layout = &c.layout;
        let Some(leaf) = layout.leaves.get(slot.leaf) else { return };
        match (slot.element, leaf.array) {
            (None, _) => {
                let _ = c.store.write_leaf_bytes(id, slot.leaf, &bytes);
            }
            (Some((e, k)), Some(a)) => {
                let array = &layout.arrays[a];
                let at = e * array.stride + array.elements[k].offset;
                if let Ok(buf) = c.store.array_bytes_mut(id, a) {
                    if at + 8 <= buf.len() {
                        buf[at..at + 8].copy_from_slice(&bytes);
                    }
                }
            }
            _ => {}
        }
    }

    /// Actor `target` arrived: writes every reference waiting for it, then fires each property's
    /// notify once (a fast array item's change callback once) — UE queues a property's OnRep once (`AddUnique`) however many of its
    /// references resolve — with its value read once before the property's writes and once
    /// after (not at all without a notify). Per reference, a read of the whole property and a
    /// notify each had let one open cost the references waiting for it times their arrays'
    /// lengths, in time and in notify memory.
    pub(super) fn resolve(&mut self, target: NetGuid) {
        let mut slots = self.unmapped.take_target(target);
        // By owner, then leaf: a property's slots are next to each other.
        slots.sort_unstable();
        let mut i = 0;
        while i < slots.len() {
            let owner = slots[i].owner;
            let Some(&(class, id)) = self.actors.get(&owner) else {
                // A fast array's item: its references written, then its change callback, once.
                let item = slots[i].leaf;
                let end = i + slots[i..].iter().take_while(|u| u.owner == owner && u.leaf == item).count();
                self.write_resolved(&slots[i..end], target);
                self.item_references_resolved(owner, item);
                i = end;
                continue;
            };
            // The owner's slots, by leaf: each notified property's value read once before.
            let end = i + slots[i..].iter().take_while(|u| u.owner == owner).count();
            let c = &self.classes[class as usize];
            let mut touched: Vec<(usize, Value)> = Vec::new();
            for u in &slots[i..end] {
                let Some(parent) = c.layout.leaves.get(u.leaf).map(|l| l.parent) else { continue };
                if c.layout.parents[parent].notify != Notify::None && touched.last().is_none_or(|t| t.0 != parent) {
                    if let Ok(old) = c.store.get(id, parent) {
                        touched.push((parent, old));
                    }
                }
            }
            self.write_resolved(&slots[i..end], target);
            self.fire_touched(owner, class, id, touched);
            i = end;
        }
    }

    /// Writes `target` into `slots` (they waited for it), each remembered by its target now.
    fn write_resolved(&mut self, slots: &[Slot], target: NetGuid) {
        for &u in slots {
            self.write_reference(u, target);
            if !self.mapped.insert(u, target, MAX_MAPPED) {
                self.stats.mapped_dropped += 1;
            }
        }
    }

    /// Forgets every reference `owner` (an actor or a fast array) holds, waiting or written;
    /// returns how many were waiting.
    pub(super) fn forget_references(&mut self, owner: NetGuid) -> usize {
        self.mapped.remove_owner(owner);
        self.unmapped.remove_owner(owner)
    }

    /// Fires the notifies of actor `guid`'s `touched` parents (each with its value before), one
    /// per property by its declared mode: a static array's elements are one property — UE
    /// queues a property's OnRep once (`AddUnique`) — whose notify names element 0 and carries
    /// every element, before and after, as a [`Value::Array`].
    fn fire_touched(&mut self, guid: NetGuid, class: u32, id: ActorId, mut touched: Vec<(usize, Value)>) {
        let c = &self.classes[class as usize];
        let parents = &c.layout.parents;
        touched.retain(|t| parents[t.0].notify != Notify::None);
        touched.sort_by_key(|t| t.0);
        let mut touched = touched.into_iter().peekable();
        while let Some((parent, old)) = touched.next() {
            let first = parent - parents[parent].array_index as usize;
            let dim = static_array_dim(parents, first);
            let notify = parents[first].notify;
            if dim == 1 {
                if let Ok(new) = c.store.get(id, parent) {
                    fire(&mut self.notifies, notify, (guid, class), parent, old, new);
                }
                continue;
            }
            let mut olds = vec![(parent, old)];
            while let Some(t) = touched.next_if(|t| t.0 < first + dim) {
                olds.push(t);
            }
            let (mut before, mut after) = (Vec::with_capacity(dim), Vec::with_capacity(dim));
            for e in first..first + dim {
                let Ok(now) = c.store.get(id, e) else { continue };
                let was = olds.iter().position(|t| t.0 == e).map(|k| olds.swap_remove(k).1);
                before.push(was.unwrap_or_else(|| now.clone()));
                after.push(now);
            }
            fire(&mut self.notifies, notify, (guid, class), first, Value::Array(before), Value::Array(after));
        }
    }
}

/// Elements of the static array whose element 0 is parent `first` (1 for any other property).
fn static_array_dim(parents: &[crate::schema::Parent], first: usize) -> usize {
    1 + parents[first + 1..].iter().enumerate().take_while(|(j, p)| p.array_index as usize == j + 1).count()
}

/// Fires a notify of actor (GUID, class) by its declared mode.
fn fire(
    out: &mut Vec<NotifyEvent>,
    mode: Notify,
    (guid, class): (NetGuid, u32),
    parent: usize,
    old: Value,
    new: Value,
) {
    let changed = !value_bits_eq(&old, &new);
    let (fires, with_old) = match mode {
        Notify::None => (false, false),
        Notify::OnChanged => (changed, false),
        Notify::OnChangedWithOld => (changed, true),
        Notify::Always => (true, false),
        Notify::AlwaysWithOld => (true, true),
    };
    if fires {
        out.push(NotifyEvent { guid, class, parent, old: with_old.then_some(old), new });
    }
}

fn guid_of(bytes: &[u8]) -> NetGuid {
    let mut a = [0u8; 8];
    let n = bytes.len().min(8);
    a[..n].copy_from_slice(&bytes[..n]);
    NetGuid(u64::from_le_bytes(a))
}
