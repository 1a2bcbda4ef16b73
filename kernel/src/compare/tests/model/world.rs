//! The model test's world: a store of one random class, its actors, the writes, marks, spawns and
//! despawns a game makes, and the drivers watching it, each a kernel shadow beside its model
//! (`expect`), asked for compares of random kinds and settings.

use super::expect::{Driver, Live, Request};
use super::*;
use crate::store::ActorId;

/// One run's store, its actors and the drivers watching it.
pub(super) struct World {
    class: Class,
    store: ClassStore,
    /// The actors alive, in no order.
    live: Vec<ActorId>,
    /// Per slot, the parents marked since the last `begin_tick` (a bit each): every driver's
    /// marks from the next tick on.
    pending: Vec<u128>,
    drivers: Vec<Driver>,
    tables: Vec<Kernels>,
    /// Whether a compare may validate push marks (half of them do).
    validate: bool,
    /// Whether each compare takes a random push mode instead of its driver's.
    mix_push: bool,
}

impl World {
    pub(super) fn new(class: Class, validate: bool, mix_push: bool) -> Self {
        let store = ClassStore::new(class.layout.clone());
        Self {
            class,
            store,
            live: Vec::new(),
            pending: Vec::new(),
            drivers: Vec::new(),
            tables: tables(),
            validate,
            mix_push,
        }
    }

    pub(super) fn live_actors(&self) -> usize {
        self.live.len()
    }

    pub(super) fn drivers(&self) -> usize {
        self.drivers.len()
    }

    /// A new driver: it sees every actor already alive as new.
    pub(super) fn add_driver(&mut self, push: PushMode) {
        let parents = self.class.layout.parents.len();
        self.drivers.push(Driver::new(&mut self.store, push, parents));
        self.fit_slots();
    }

    /// Driver `d` leaves (its watcher goes with its shadow).
    pub(super) fn remove_driver(&mut self, d: usize) {
        self.drivers.remove(d);
    }

    pub(super) fn spawn(&mut self, actors: usize) {
        for _ in 0..actors {
            let id = self.store.spawn();
            self.live.push(id);
        }
        self.fit_slots();
    }

    /// Hands the marks made since the last tick to every driver, as the store does.
    pub(super) fn begin_tick(&mut self) {
        self.store.begin_tick();
        for driver in &mut self.drivers {
            driver.model.add_marks(&self.pending);
        }
        self.pending.fill(0);
    }

    /// Sizes the pending marks and every model to the store's slots.
    fn fit_slots(&mut self) {
        let slots = self.store.generations().len();
        self.pending.resize(slots, 0);
        for driver in &mut self.drivers {
            driver.model.fit_slots(slots);
        }
    }

    /// Marks the store made: every driver's at the next tick.
    fn mark(&mut self, slot: usize, parents: u128) {
        self.pending[slot] |= parents;
    }

    /// `writes` random writes and marks, and sometimes a few despawns and spawns first.
    pub(super) fn writes(&mut self, rng: &mut ChaCha8Rng, writes: usize) {
        if rng.random_bool(0.4) {
            self.churn(rng);
        }
        for _ in 0..writes {
            if self.live.is_empty() {
                return;
            }
            let id = self.live[rng.random_range(0..self.live.len())];
            self.write(rng, id);
        }
    }

    /// Up to three despawns, then up to three spawns (which reuse the freed slots: a new actor
    /// where a driver's shadow holds the old one's values).
    fn churn(&mut self, rng: &mut ChaCha8Rng) {
        for _ in 0..rng.random_range(0..4) {
            if self.live.is_empty() {
                break;
            }
            let id = self.live.swap_remove(rng.random_range(0..self.live.len()));
            self.store.despawn(id).expect("a live actor despawns");
        }
        let spawns = rng.random_range(0..4);
        self.spawn(spawns);
    }

    /// One write of a random kind to a random parent of actor `id`, or a bulk write on its page.
    fn write(&mut self, rng: &mut ChaCha8Rng, id: ActorId) {
        let layout = self.class.layout.clone();
        let slot = id.index as usize;
        let parent = rng.random_range(0..layout.parents.len());
        let bit = 1u128 << parent;
        let kind = rng.random_range(0..12);
        let mut v = || value(&layout.parents[parent].ty, rng);
        match kind {
            0..=2 => {
                // Unmarked; the store marks a write to a dynamic array itself.
                self.store.set(id, parent, &v()).expect("a value of the parent's type");
                if layout.arrays.iter().any(|a| a.parent == parent) {
                    self.mark(slot, bit);
                }
            }
            3 | 4 => {
                // Written, then marked.
                self.store.set(id, parent, &v()).expect("a value of the parent's type");
                self.store.mark_dirty(id, parent).expect("a live actor");
                self.mark(slot, bit);
            }
            5 | 6 => {
                if self.store.set_and_mark(id, parent, &v()).expect("a value of the parent's type") {
                    self.mark(slot, bit);
                }
            }
            7 => {
                // A mark without a change.
                self.store.mark_dirty(id, parent).expect("a live actor");
                self.mark(slot, bit);
            }
            8 => {
                self.store.mark_all_dirty(id).expect("a live actor");
                self.mark(slot, self.class.all_parents());
            }
            _ => self.bulk_write(rng, id.page()),
        }
    }

    /// A bulk write of one byte plane on random lanes of `page` (free ones too), marked in bulk
    /// (on the occupied lanes, as the store does) or not at all.
    fn bulk_write(&mut self, rng: &mut ChaCha8Rng, page: usize) {
        let layout = self.class.layout.clone();
        let planes: Vec<usize> =
            (0..layout.planes.len()).filter(|&p| layout.planes[p].width != PlaneWidth::Bit).collect();
        if planes.is_empty() {
            return;
        }
        let plane = planes[rng.random_range(0..planes.len())];
        let parent = layout.leaves.iter().find(|l| l.planes.contains(&plane)).expect("every plane has its leaf").parent;
        // About one lane in eight.
        let lanes = rng.random::<u64>() & rng.random::<u64>() & rng.random::<u64>();
        for lane in BitIter(lanes) {
            let first = rng.random_range(0..3);
            write_plane_lane(&mut self.store, plane, page, lane, first);
        }
        if rng.random_bool(0.5) {
            self.store.mark_lanes_dirty(page, parent, lanes);
            for lane in BitIter(lanes & self.store.occupied()[page]) {
                self.mark(page * PAGE_LANES + lane, 1 << parent);
            }
        }
    }

    /// Driver `d` compares as `kind` with random settings, and its model checks what it did.
    pub(super) fn compare(&mut self, d: usize, kind: Kind, rng: &mut ChaCha8Rng, tag: &str) {
        let request = self.request(d, kind, rng);
        let driver = &mut self.drivers[d];
        driver.compare(&mut self.store, &request);
        let live = Live::read(&self.class, &self.store);
        driver.check(&self.class, &self.store, &request, &live, tag);
    }

    /// A compare of `kind` for driver `d`, with random settings and lanes.
    fn request(&self, d: usize, kind: Kind, rng: &mut ChaCha8Rng) -> Request {
        let push = if self.mix_push {
            [PushMode::Off, PushMode::Declared, PushMode::All, PushMode::All][rng.random_range(0..4)]
        } else {
            self.drivers[d].push
        };
        let cfg = CompareConfig {
            push,
            kernels: self.tables[rng.random_range(0..self.tables.len())],
            parallel: rng.random_bool(0.5),
            min_parallel_pages: if rng.random_bool(0.5) { 1 } else { PARALLEL_MIN_PAGES },
            validate_push: self.validate && rng.random_bool(0.5),
            dirty_stats: rng.random_bool(0.5),
        };
        let lanes = match kind {
            Kind::Whole => Vec::new(),
            Kind::Lanes | Kind::Selected => random_lanes(rng, self.store.page_count()),
        };
        // Pages with lanes left out of the list: `compare_selected` must leave them for their
        // turn, validating or not.
        let listed = match kind {
            Kind::Selected => {
                (0..lanes.len() as u32).filter(|&p| lanes[p as usize] != 0 && rng.random_bool(0.8)).collect()
            }
            Kind::Whole | Kind::Lanes => Vec::new(),
        };
        Request { kind, cfg, lanes, listed }
    }
}

/// Random lanes of the first 0 to `pages + 1` pages (pages past them: none; the one past the
/// store's: no actor), on each page none (three in ten) or a few lanes, half or all of them.
fn random_lanes(rng: &mut ChaCha8Rng, pages: usize) -> Vec<u64> {
    let mut lanes = vec![0u64; rng.random_range(0..=pages + 1)];
    let density = [0.05, 0.5, 1.0][rng.random_range(0..3)];
    for mask in &mut lanes {
        if rng.random_bool(0.7) {
            *mask = (0..PAGE_LANES).filter(|_| rng.random_bool(density)).fold(0, |m, lane| m | 1 << lane);
        }
    }
    lanes
}
