//! The consider step of a frame: the selected (due) actors become the due list, one record each,
//! sorted by (class, slot), and their next update is scheduled.
//!
//! ```text
//! per class: its selected pages cut into runs of CONSIDER_RUN_PAGES; each run's due lanes
//!            counted from the selection → the run's place in the due list
//! every run of every class, one job each (on the pool when the frame has many due actors):
//!            clock considered, due time, last considered, location, the record written in place
//! per class, in order: the changed list (what shared serialization encodes), the slot → due
//!            index, the packed pair keys, sleepers, fast arrays, conditioned sub-objects
//! ```
//!
//! The jobs of all classes go to the pool together: a class at a time, a small class paid a
//! fork-join for one or two runs and a large one split unevenly (battle_royale, AMD EPYC: the
//! step took 0.24 ms on two threads against 0.28 ms on one; as one set of jobs, 0.19 → 0.15 ms
//! in ten alternating runs).

use super::{read_location, relevancy, ClassNet, Frame, LeafMask, NetDriver, NOT_SHARED};
use crate::net::actors::ActorNet;
use crate::net::consider::{ConsiderClock, ServerTime};
use crate::net::lifecycle::SubObjectCondition;
use crate::net::relevancy::DueActor;
use crate::net::settings::{Columns, NetSettings};
use crate::net::ChangedActor;
use crate::schema::PAGE_LANES;
use crate::store::{BitIter, ClassStore};
use rayon::prelude::*;

/// Pages per job of the consider step (a run of 1024 slots): small enough that a class of a few
/// thousand due actors splits over both cores of a small server (battle_royale, AMD EPYC: the
/// four classes' runs 183 → 130 µs against runs of 64 pages and the pool from 8192 due).
const CONSIDER_RUN_PAGES: usize = 16;

/// Due actors of a frame from which the consider step runs on the pool (a record costs 20–40 ns:
/// below this, waking the pool costs more than it saves).
const PARALLEL_CONSIDER_DUE: usize = 1024;

/// What a job reads of its class.
struct ClassView<'a> {
    ci: u32,
    selected: &'a [u64],
    actors: &'a [ActorNet],
    history: &'a crate::history::History,
    settings: &'a [NetSettings],
    owner_actor: &'a [Option<super::NetGuid>],
    instigator: &'a [Option<super::NetGuid>],
    dormancy: &'a [crate::net::dormancy::Dormancy],
    sub_condition: &'a [Option<SubObjectCondition>],
    location_leaf: Option<usize>,
    /// The class has a relevancy hook: every actor of it takes UE's rules one by one.
    rules_class: bool,
    store: &'a ClassStore,
}

/// One run of one class: its columns' part and its records' place in the due list.
struct Job<'a> {
    class: usize,
    run: usize,
    clock: &'a mut [ConsiderClock],
    due_at: &'a mut [f64],
    last: &'a mut [Frame],
    pos: &'a mut [[f32; 3]],
    out: &'a mut [DueActor],
}

impl NetDriver {
    /// The consider list: due actors (clock due or pending), their next time scheduled, and the
    /// frame's changed list narrowed to them (their changes since they were last considered).
    pub(super) fn consider(&mut self, stores: &[&ClassStore]) {
        let parallel = self.cfg.parallel;
        let level = self.level.as_mut().expect("actor level");
        let (time, adaptive) = (level.time, level.cfg.adaptive_frequency);
        // Last frame's entries of the index, found from the packed keys (not the wide records).
        for &key in &level.keys {
            let (c, slot) = crate::net::pairs::split_key(key);
            level.due_index[c as usize][slot as usize] = super::NOT_DUE;
        }
        level.due_index.resize(self.classes.len(), Vec::new());
        self.changed.clear();
        level.keys.clear();
        level.sleepy.clear();
        level.fast_arrays.clear();
        level.guid_rank.begin();
        level.conditioned = 0;
        level.owner_only = 0;
        level.tearing = 0;
        level.temporary = 0;
        level.initial_only = 0;
        let n = CONSIDER_RUN_PAGES * PAGE_LANES;
        // Each run's due lanes, counted from the selection: its records' place in the list. The
        // list is refilled in place: last frame's records are overwritten, and the vector grows
        // only past its longest frame (no record is moved after it is written: per-run lists
        // appended after the runs cost mmo's 115 000 records — 19.5 MB — 0.6–2.6 ms more).
        let counts: Vec<Vec<usize>> = (0..self.classes.len())
            .map(|ci| {
                let selected = level.selected.get(ci).map_or(&[][..], |v| &v[..]);
                let mut counts = vec![0usize; selected.len().div_ceil(CONSIDER_RUN_PAGES)];
                for &p in level.selected_pages.get(ci).map_or(&[][..], |v| &v[..]) {
                    counts[p as usize / CONSIDER_RUN_PAGES] += selected[p as usize].count_ones() as usize;
                }
                counts
            })
            .collect();
        let filled: usize = counts.iter().flatten().sum();
        if level.due.len() < filled {
            level.due.resize(filled, DueActor::placeholder());
        }
        level.due.truncate(filled);
        let mut views = Vec::with_capacity(self.classes.len());
        let mut jobs = Vec::new();
        let mut rest = &mut level.due[..];
        for (ci, c) in self.classes.iter_mut().enumerate() {
            let ClassNet { actors, history, cols, .. } = c;
            let Columns {
                clock,
                due_at,
                last_considered,
                position,
                settings,
                owner_actor,
                instigator,
                location_leaf,
                hook,
                dormancy,
                sub_condition,
                ..
            } = cols;
            views.push(ClassView {
                ci: ci as u32,
                selected: level.selected.get(ci).map_or(&[][..], |v| &v[..]),
                actors,
                history,
                settings,
                owner_actor,
                instigator,
                dormancy,
                sub_condition,
                location_leaf: *location_leaf,
                rules_class: hook.is_some(),
                store: stores[ci],
            });
            let columns = clock
                .chunks_mut(n)
                .zip(due_at.chunks_mut(n))
                .zip(last_considered.chunks_mut(n))
                .zip(position.chunks_mut(n))
                .zip(&counts[ci]);
            for (run, ((((clock, due_at), last), pos), &count)) in columns.enumerate() {
                let (out, tail) = std::mem::take(&mut rest).split_at_mut(count);
                rest = tail;
                if count > 0 {
                    jobs.push(Job { class: ci, run, clock, due_at, last, pos, out });
                }
            }
        }
        let guids = &self.guids;
        let run = |job: Job<'_>| consider_run(&views[job.class], job, &time, adaptive, guids);
        if parallel && filled >= PARALLEL_CONSIDER_DUE {
            jobs.into_par_iter().for_each(run);
        } else {
            jobs.into_iter().for_each(run);
        }
        // Per class, in the list's order: what the runs wrote, gathered where the frame reads it.
        let mut start = 0;
        for (ci, c) in self.classes.iter().enumerate() {
            let end = start + counts[ci].iter().sum::<usize>();
            let index = &mut level.due_index[ci];
            index.resize(c.actors.len(), super::NOT_DUE);
            for (i, d) in level.due[start..end].iter_mut().enumerate().map(|(i, d)| (start + i, d)) {
                // The arena encodes the changed fixed leaves and the shared arrays' changed
                // elements (`ClassNet::shared_arrays`); it keeps one key per entry of this list,
                // in this order.
                let shared = d.changed & (!c.array_leaves | c.shared_arrays);
                if !shared.is_empty() {
                    d.shared = self.changed.len() as u32;
                    self.changed.push(ChangedActor { class: d.class, slot: d.slot, leaves: shared });
                }
                index[d.slot as usize] = i as u32;
                level.guid_rank.note(d.rel.guid, i as u32);
                level.keys.push(crate::net::pairs::pair_key(d.class, d.slot));
                if d.sleepy {
                    level.sleepy.push(i as u32);
                }
                if d.actor.fast {
                    let first = level.fast_arrays.len() as u32;
                    level.fast_arrays.extend(self.fast.versions_of(d.actor.guid));
                    d.fast_arrays = (first, level.fast_arrays.len() as u32);
                }
                level.conditioned += d.condition.is_some_and(|c| c != SubObjectCondition::None) as usize;
                // (A sub-object of an owner-only owner counts: the candidates walk skips it where
                // its owner is not owned, and a plain frame would not.)
                let owners_owner_only =
                    d.owner_slot.is_some_and(|o| crate::net::actors::owner_only_at(&self.classes, o));
                level.owner_only += (d.rel.only_relevant_to_owner || owners_owner_only) as usize;
                level.tearing += d.actor.tearing as usize;
                level.temporary += d.temporary() as usize;
                level.initial_only += d.initial_only() as usize;
            }
            start = end;
        }
    }
}

/// One run of pages: each due actor's clock scheduled, its changes since it was last
/// considered, where it is, and what relevancy reads — its record written in its place.
fn consider_run(
    v: &ClassView<'_>,
    job: Job<'_>,
    time: &ServerTime,
    adaptive: bool,
    guids: &crate::ids::GuidMap<(u32, u32)>,
) {
    let Job { run, clock, due_at, last, pos, out, .. } = job;
    let first_page = run * CONSIDER_RUN_PAGES;
    let pages = v.selected.iter().skip(first_page).take(CONSIDER_RUN_PAGES);
    let mut records = out.iter_mut();
    for (q, &lanes) in pages.enumerate() {
        for lane in BitIter(lanes) {
            let i = q * PAGE_LANES + lane;
            let slot = first_page * PAGE_LANES + i;
            let a = v.actors[slot];
            let since = last[i];
            let last_changed = v.history.last_changed(slot as u32);
            let changed = last_changed > since;
            let s = &v.settings[slot];
            let (owner, instigator, condition) = (v.owner_actor[slot], v.instigator[slot], v.sub_condition[slot]);
            clock[i].considered(clock_key(a.guid, owner, condition), time, &s.frequency, adaptive);
            due_at[i] = clock[i].due_at();
            last[i] = time.frame;
            let leaves = if changed { v.history.changed_since(slot as u32, since) } else { LeafMask::EMPTY };
            let at = read_location(v.location_leaf, pos[i], v.store, slot as u32);
            pos[i] = at;
            let rules = s.needs_rules() || v.rules_class;
            let plain = !rules && owner.is_none() && instigator.is_none() && a.owner.is_none();
            *records.next().expect("a record per due lane of the run") = DueActor {
                class: v.ci,
                slot: slot as u32,
                rel: relevancy(a.guid, s, owner, instigator, at),
                net_priority: s.net_priority,
                flags: due_flags(s.startup_for(a.guid), s.net_temporary, s.only_relevant_to_owner),
                rules,
                since,
                changed: leaves,
                shared: NOT_SHARED,
                dormancy: v.dormancy[slot],
                // (A temporary actor never goes dormant where its open went: its channel is
                // skipped there, and it keeps itself awake.)
                sleepy: v.dormancy[slot].dormant() && plain && !a.tearing && !s.net_temporary,
                condition,
                owner_slot: condition.and(owner).and_then(|g| guids.get(&g).copied()),
                actor: a,
                last_changed,
                fast_arrays: (0, 0),
            };
        }
    }
    debug_assert!(records.next().is_none(), "as many records as due lanes");
}

/// A due record's [`DueActor::flags`].
fn due_flags(startup: bool, temporary: bool, owner_only: bool) -> u8 {
    use crate::net::relevancy::due_flags::{OWNER_ONLY, STARTUP, TEMPORARY};
    (u8::from(startup) * STARTUP) | (u8::from(temporary) * TEMPORARY) | (u8::from(owner_only) * OWNER_ONLY)
}

/// The due actors' ranks by GUID (see [`crate::net::priority::SendOrder`]): rank `r` of due
/// actor `d` is how many due actors have a smaller GUID.
#[derive(Default)]
pub(crate) struct GuidRanks {
    /// Parallel to the due list.
    pub ranks: Vec<u32>,
    /// Bits that hold every rank.
    pub bits: u32,
    pairs: Vec<(super::NetGuid, u32)>,
    scratch: Vec<(super::NetGuid, u32)>,
}

impl GuidRanks {
    /// Starts a frame's list.
    pub fn begin(&mut self) {
        self.pairs.clear();
    }

    /// Lists due actor `d` (the consider step, in due order, while its record is at hand: a
    /// pass over the wide records for their GUIDs alone took longer than the sort).
    pub fn note(&mut self, guid: super::NetGuid, d: u32) {
        self.pairs.push((guid, d));
    }

    /// Ranks the frame's due list, noted since the last call: a radix sort of (GUID, due
    /// index) over the bytes in which the GUIDs differ (three passes for GUIDs below 2²⁴), then
    /// each actor's place.
    pub fn rank(&mut self) {
        crate::net::relevancy::radix::sort_pairs(&mut self.pairs, &mut self.scratch, |g| g.0);
        let due = self.pairs.len();
        self.ranks.clear();
        self.ranks.resize(due, 0);
        for (r, &(_, d)) in self.pairs.iter().enumerate() {
            self.ranks[d as usize] = r as u32;
        }
        self.pairs.clear();
        self.bits = crate::net::priority::bits_below(due);
    }
}

/// The GUID an actor's consider clock draws its jitter from: a sub-object's owner's (with the
/// owner's frequency, copied when it was registered, it is due on the frames its owner is, and
/// goes out beside it — UE replicates sub-objects inside their owner's update), else its own.
pub(crate) fn clock_key(
    guid: super::NetGuid,
    owner: Option<super::NetGuid>,
    sub: Option<SubObjectCondition>,
) -> super::NetGuid {
    match (sub, owner) {
        (Some(_), Some(owner)) => owner,
        _ => guid,
    }
}
