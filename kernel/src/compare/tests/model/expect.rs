//! The model of one driver, and the check of each of its compares against it.
//!
//! The model is bookkeeping with no pages, planes or SIMD: per slot, the generation of the actor
//! last compared, the bytes of each leaf as its compares last took them and the parents marked and
//! not yet consumed; the validation shadow while validation is on; the dirty statistics. A compare
//! covers the lanes it is asked for (every lane, the selected ones, or the selected ones of the
//! listed pages): on each occupied one it considers a fixed leaf when its parent is polled or
//! marked and a dynamic array when marked, takes the live bytes of each leaf it considers and
//! reports the ones that differ; it consumes the marks of every lane it covers. After each compare
//! the kernel must agree with the model on all of it.

use super::*;

/// One compare as a driver asks for it.
pub(super) struct Request {
    pub(super) kind: Kind,
    pub(super) cfg: CompareConfig,
    /// `Lanes` and `Selected`: the lanes asked for, page by page (maybe one page past the store's).
    pub(super) lanes: Vec<u64>,
    /// `Selected`: the pages listed, ascending.
    pub(super) listed: Vec<u32>,
}

impl Request {
    /// Whether the compare covers slot `slot`: compares it if occupied, and consumes its marks.
    fn covers(&self, slot: usize) -> bool {
        let (page, lane) = (slot / PAGE_LANES, slot % PAGE_LANES);
        let selected = || self.lanes.get(page).is_some_and(|m| m >> lane & 1 != 0);
        match self.kind {
            Kind::Whole => true,
            Kind::Lanes => selected(),
            Kind::Selected => selected() && self.listed.binary_search(&(page as u32)).is_ok(),
        }
    }

    /// The compare's kind and settings, for a failure's message.
    fn describe(&self) -> String {
        let (cfg, k) = (&self.cfg, &self.cfg.kernels);
        format!(
            "{:?} compare, push {:?}, {:?}/{:?}/{:?}, parallel {} from {} pages, validate {}, stats {}",
            self.kind,
            cfg.push,
            k.isa,
            k.scan,
            k.next_page,
            cfg.parallel,
            cfg.min_parallel_pages,
            cfg.validate_push,
            cfg.dirty_stats
        )
    }
}

/// The store as a compare left it.
pub(super) struct Live {
    occupied: Vec<u64>,
    generations: Vec<u32>,
    /// Per slot, its bytes (a free slot's too: a validation shadow copies them).
    bytes: Vec<Slot>,
}

impl Live {
    pub(super) fn read(class: &Class, store: &ClassStore) -> Self {
        let generations = store.generations().to_vec();
        let bytes = (0..generations.len()).map(|slot| class.live_slot(store, slot)).collect();
        Self { occupied: store.occupied().to_vec(), generations, bytes }
    }

    fn pages(&self) -> usize {
        self.occupied.len()
    }

    fn is_occupied(&self, slot: usize) -> bool {
        self.occupied[slot / PAGE_LANES] >> (slot % PAGE_LANES) & 1 != 0
    }

    /// The occupied slots, ascending.
    fn slots(&self) -> impl Iterator<Item = usize> + '_ {
        self.occupied.iter().enumerate().flat_map(|(p, &lanes)| BitIter(lanes).map(move |lane| p * PAGE_LANES + lane))
    }
}

/// A driver: the kernel's shadow state, the change set it reuses from compare to compare (as a
/// game does), and its model.
pub(super) struct Driver {
    kernel: ShadowState,
    pub(super) push: PushMode,
    out: ChangeSet,
    pub(super) model: Model,
}

impl Driver {
    pub(super) fn new(store: &mut ClassStore, push: PushMode, parents: usize) -> Self {
        Self { kernel: ShadowState::new(store), push, out: ChangeSet::new(), model: Model::new(parents) }
    }

    pub(super) fn compare(&mut self, store: &mut ClassStore, request: &Request) {
        let (cfg, out) = (&request.cfg, &mut self.out);
        match request.kind {
            Kind::Whole => self.kernel.compare(store, cfg, out),
            Kind::Lanes => self.kernel.compare_lanes(store, cfg, Some(&request.lanes), out),
            Kind::Selected => self.kernel.compare_selected(store, cfg, &request.lanes, &request.listed, out),
        }
        .expect("a driver compares the store it watches");
    }

    /// Runs the compare just made on the model, and checks the kernel against it.
    pub(super) fn check(&mut self, class: &Class, store: &ClassStore, request: &Request, live: &Live, tag: &str) {
        let expected = self.model.compare(class, request, live);
        let tag = format!("{tag}, {}", request.describe());
        self.check_reported(class, live, &expected.masks, &tag);
        self.check_unmarked(expected.unmarked, &tag);
        self.check_shadow(class, live, &tag);
        self.check_marks(store, live, &tag);
        self.check_stats(&tag);
    }

    /// Every page's leaf masks, and its lanes (their OR).
    fn check_reported(&self, class: &Class, live: &Live, masks: &[u64], tag: &str) {
        let leaves = class.layout.leaves.len();
        for p in 0..live.pages() {
            let row = &masks[p * leaves..(p + 1) * leaves];
            for (l, &want) in row.iter().enumerate() {
                let got = self.out.leaf_mask(p, l).0;
                let path = &class.layout.leaves[l].path;
                assert!(got == want, "{tag}: page {p} leaf {l} ({path}) reported lanes {got:#x}, the model {want:#x}");
            }
            let want = row.iter().fold(0, |all, m| all | m);
            let got = self.out.page_lanes(p).0;
            assert!(got == want, "{tag}: page {p} reported lanes {got:#x}, the model {want:#x}");
        }
    }

    /// The changes validation found without a mark: exactly the model's, each once.
    fn check_unmarked(&mut self, mut want: Vec<(u32, usize)>, tag: &str) {
        let mut got: Vec<(u32, usize)> =
            self.kernel.take_unmarked_changes().iter().map(|u| (u.actor.index, u.parent)).collect();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want, "{tag}: unmarked changes (slot, parent)");
    }

    /// The kernel's shadow of every occupied lane, fixed leaves and dynamic arrays.
    fn check_shadow(&self, class: &Class, live: &Live, tag: &str) {
        for slot in live.slots() {
            let (p, lane) = (slot / PAGE_LANES, slot % PAGE_LANES);
            let arrays = &self.kernel.arrays[p];
            let got = class.read_slot(self.kernel.shadow.page(p), lane, |a| &arrays[a * PAGE_LANES + lane]);
            for (l, (leaf, at)) in class.layout.leaves.iter().zip(&class.at).enumerate() {
                let want = self.model.shadow[slot].leaf(at);
                assert_eq!(got.leaf(at), want, "{tag}: shadow of slot {slot} leaf {l} ({})", leaf.path);
            }
        }
    }

    /// The driver's marks on the occupied lanes, and the dirty state's own invariants: a marked
    /// parent has its bit in the page's parent bits (parents past 63 share bit 63), a page's
    /// summary bit says whether it holds a mark, and the list holds exactly the pages whose bit
    /// is set.
    fn check_marks(&self, store: &ClassStore, live: &Live, tag: &str) {
        let dirty = store.dirty(&self.kernel.watcher);
        for p in 0..live.pages() {
            let occupied = live.occupied[p];
            let mut any = 0;
            for (parent, &mask) in dirty.page_masks(p).iter().enumerate() {
                any |= mask;
                if mask != 0 {
                    assert!(
                        dirty.page_parents(p) >> parent.min(63) & 1 != 0,
                        "{tag}: page {p} parent {parent}: no parent bit"
                    );
                }
                let want = BitIter(occupied)
                    .filter(|&lane| self.model.marks[p * PAGE_LANES + lane] >> parent & 1 != 0)
                    .fold(0, |m, lane| m | 1 << lane);
                let got = mask & occupied;
                assert!(got == want, "{tag}: page {p} parent {parent} marked lanes {got:#x}, the model {want:#x}");
            }
            assert_eq!(dirty.page_dirty(p), any != 0, "{tag}: page {p}'s summary bit");
        }
        let mut list = dirty.dirty_pages().to_vec();
        list.sort_unstable();
        let want: Vec<u32> = (0..live.pages() as u32).filter(|&p| dirty.page_dirty(p as usize)).collect();
        assert_eq!(list, want, "{tag}: dirty list");
    }

    fn check_stats(&self, tag: &str) {
        let got: Vec<(u64, u64)> = self.kernel.dirty_stats().iter().map(|s| (s.marked, s.changed)).collect();
        assert_eq!(got, self.model.stats, "{tag}: dirty statistics (marked, changed) per parent");
    }
}

/// What one driver's compares must do (see the module docs).
pub(super) struct Model {
    /// Per slot, the generation of the actor last compared (`None`: a free slot then).
    seen: Vec<Option<u32>>,
    /// Per slot, the bytes as its compares last took them.
    shadow: Vec<Slot>,
    /// Per slot, the parents marked and not yet consumed (a bit each).
    marks: Vec<u128>,
    /// Per slot, the fixed leaves' bytes as validation last took them, while validation is on.
    validated: Option<Vec<Vec<u8>>>,
    /// Per parent, the lanes compared with a mark and the lanes changed, while statistics are on.
    stats: Vec<(u64, u64)>,
}

/// What a compare must report.
struct Expected {
    /// `masks[page * leaves + leaf]`: the lanes in which the leaf changed.
    masks: Vec<u64>,
    /// (slot, parent) of each change validation finds without a mark.
    unmarked: Vec<(u32, usize)>,
}

impl Model {
    fn new(parents: usize) -> Self {
        Self { seen: Vec::new(), shadow: Vec::new(), marks: Vec::new(), validated: None, stats: vec![(0, 0); parents] }
    }

    pub(super) fn fit_slots(&mut self, slots: usize) {
        self.seen.resize(slots, None);
        self.shadow.resize(slots, Slot::default());
        self.marks.resize(slots, 0);
    }

    /// A tick's marks arrive.
    pub(super) fn add_marks(&mut self, pending: &[u128]) {
        for (marks, new) in self.marks.iter_mut().zip(pending) {
            *marks |= new;
        }
    }

    /// Runs one compare: returns what it must report, and leaves the shadow, validation shadow,
    /// marks and statistics as it must leave them.
    fn compare(&mut self, class: &Class, request: &Request, live: &Live) -> Expected {
        let push = request.cfg.push;
        let push_ruled: Vec<bool> = (0..class.layout.parents.len()).map(|p| class.push_ruled(push, p)).collect();
        self.sync_slots(class, live);
        self.sync_validation(class, request.cfg.validate_push && class.validates(push), live);
        let leaves = class.layout.leaves.len();
        let mut expected = Expected { masks: vec![0; live.pages() * leaves], unmarked: Vec::new() };
        for slot in live.slots().filter(|&slot| request.covers(slot)) {
            let marks = self.marks[slot];
            if let Some(validated) = &mut self.validated {
                let changed = validate_slot(class, &push_ruled, &live.bytes[slot], &mut validated[slot]);
                let unmarked = parents(changed & !marks).map(|parent| (slot as u32, parent));
                expected.unmarked.extend(unmarked);
            }
            let page = slot / PAGE_LANES;
            let row = &mut expected.masks[page * leaves..(page + 1) * leaves];
            let changed = self.compare_slot(class, &push_ruled, slot, &live.bytes[slot], row);
            if request.cfg.dirty_stats {
                self.count(marks, changed);
            }
        }
        self.consume_marks(request);
        expected
    }

    /// An actor this driver has not compared yet (spawned since, maybe into a slot it knew, or
    /// alive before the driver joined) starts at the class defaults with every parent marked,
    /// and with a zeroed validation shadow.
    fn sync_slots(&mut self, class: &Class, live: &Live) {
        for slot in 0..live.generations.len() {
            let now = live.is_occupied(slot).then_some(live.generations[slot]);
            if now.is_some() && self.seen[slot] != now {
                self.shadow[slot].clone_from(&class.defaults);
                self.marks[slot] = class.all_parents();
                if let Some(validated) = self.validated.as_mut().and_then(|v| v.get_mut(slot)) {
                    validated.fill(0);
                }
            }
            self.seen[slot] = now;
        }
    }

    /// Validation switched on takes a copy of the live leaves, and slots added later start
    /// zeroed (new actors, marked on every parent); switched off, it drops the copy.
    fn sync_validation(&mut self, class: &Class, on: bool, live: &Live) {
        if !on {
            self.validated = None;
            return;
        }
        let validated = self.validated.get_or_insert_with(|| live.bytes.iter().map(|s| s.fixed.clone()).collect());
        validated.resize(live.bytes.len(), vec![0; class.fixed_bytes]);
    }

    /// The compare of one occupied lane: each leaf it considers takes its live bytes and reports a
    /// change where they differ (in `row`, the page's leaf masks). Returns the parents changed.
    fn compare_slot(&mut self, class: &Class, push_ruled: &[bool], slot: usize, live: &Slot, row: &mut [u64]) -> u128 {
        let marks = self.marks[slot];
        let shadow = &mut self.shadow[slot];
        let mut changed = 0;
        for (l, (leaf, at)) in class.layout.leaves.iter().zip(&class.at).enumerate() {
            let marked = marks >> leaf.parent & 1 != 0;
            // A dynamic array is compared where the store recorded a write, whatever the push
            // rules; a fixed leaf where marked, or everywhere when its parent is polled.
            let considered = marked || leaf.array.is_none() && !push_ruled[leaf.parent];
            if considered && shadow.leaf(at) != live.leaf(at) {
                shadow.take_leaf(at, live);
                row[l] |= 1 << (slot % PAGE_LANES);
                changed |= 1 << leaf.parent;
            }
        }
        changed
    }

    /// The dirty statistics of one compared lane.
    fn count(&mut self, marks: u128, changed: u128) {
        for (parent, (marked, changes)) in self.stats.iter_mut().enumerate() {
            *marked += (marks >> parent & 1) as u64;
            *changes += (changed >> parent & 1) as u64;
        }
    }

    /// A compare consumes the marks of every lane it covers, occupied or not.
    fn consume_marks(&mut self, request: &Request) {
        for (slot, marks) in self.marks.iter_mut().enumerate() {
            if request.covers(slot) {
                *marks = 0;
            }
        }
    }
}

/// Push validation of one compared lane: each push-ruled parent's fixed leaves against the
/// validation shadow, which takes their live bytes. Returns the parents changed there (those
/// without a mark are unmarked changes).
fn validate_slot(class: &Class, push_ruled: &[bool], live: &Slot, validated: &mut [u8]) -> u128 {
    let mut changed = 0;
    for (leaf, at) in class.layout.leaves.iter().zip(&class.at) {
        let LeafAt::Fixed(bytes) = at else { continue };
        if push_ruled[leaf.parent] && validated[bytes.clone()] != live.fixed[bytes.clone()] {
            validated[bytes.clone()].copy_from_slice(&live.fixed[bytes.clone()]);
            changed |= 1 << leaf.parent;
        }
    }
    changed
}

/// The parents whose bit is set in `bits`, ascending.
fn parents(bits: u128) -> impl Iterator<Item = usize> {
    BitIter(bits as u64).chain(BitIter((bits >> 64) as u64).map(|bit| bit + 64))
}
