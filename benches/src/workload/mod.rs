//! Seeded workloads shared by the criterion benches and the `shadowrep` command.
//!
//! A [`CompareWorkload`] holds `N` actors of one sample class twice — in the kernel's
//! [`ClassStore`] and in the UE-style [`RefWorld`] — with identical values, and mutates the same
//! actors of both each frame: a changed actor moves (its movement parents get new values) and one in
//! ten also changes health or a flag, as game actors do. [`run_compare`] times the kernel, the
//! reference and `memcmp` (on one thread, and split in two halves on two threads) over the same
//! frames and reports medians; after every compare, outside
//! the timed region, each actor's kernel changelist must equal the reference's.

mod classes;
mod scaling;

pub use classes::register_class;
pub use scaling::{
    copy_floor, flush_bytes, gather, last_level_cache_bytes, run_push_scaling, ScalingOptions, ScalingReport,
};

use crate::phase::{within, ExtraFrames, Phase, PhaseProbe};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use scaling::stream;
use shadowrep::compare::{
    tune, ChangeSet, CompareConfig, Isa, Kernels, NextPage, PageScan, PropertyDirtyStats, PushMode, ShadowState,
};
use shadowrep::reference::{RefChanges, RefWorld};
use shadowrep::schema::{ClassLayout, PropType, PAGE_LANES};
use shadowrep::store::{ActorId, ClassStore};
use shadowrep::value::{ObjectRef, Value};
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

/// `N` actors of one class in the kernel store and (optionally) in the reference world.
pub struct CompareWorkload {
    /// Class layout.
    pub layout: Arc<ClassLayout>,
    /// Kernel store.
    pub store: ClassStore,
    /// Actor ids, index `i` is reference object `i`.
    pub ids: Vec<ActorId>,
    /// The reference world, when built.
    pub reference: Option<RefWorld>,
    rng: ChaCha8Rng,
    order: Vec<u32>,
    hot: Vec<usize>,
    occasional: Vec<usize>,
    /// The one hot parent is a count: index at spawn, +1 per change.
    counting: bool,
    /// (slot, parent) marked dirty by the last [`Self::mutate`] with `mark`.
    marked: Vec<(u32, usize)>,
}

impl CompareWorkload {
    /// Spawns `actors` actors of `class` (a sample class, or one of
    /// [`register_class`]) with seeded random values.
    pub fn new(class: &str, actors: usize, seed: u64, with_reference: bool) -> Result<Self, String> {
        let classes::WorkloadClass { layout, hot, occasional, counting } = classes::WorkloadClass::by_name(class)?;
        let mut store = ClassStore::new(layout.clone());
        let mut reference = with_reference.then(|| RefWorld::new(layout.clone()));
        let ids: Vec<ActorId> = (0..actors).map(|_| store.spawn()).collect();
        if let Some(r) = reference.as_mut() {
            for _ in 0..actors {
                r.spawn();
            }
        }
        let mut w = Self {
            layout,
            store,
            ids,
            reference,
            rng: ChaCha8Rng::seed_from_u64(seed),
            order: (0..actors as u32).collect(),
            hot,
            occasional,
            counting,
            marked: Vec::new(),
        };
        for i in 0..actors {
            w.set_actor(i, true, false, true);
        }
        Ok(w)
    }

    /// Number of actors.
    pub fn actors(&self) -> usize {
        self.ids.len()
    }

    /// Whether a full compare of this world with `kernels` first tries the diff tables on its
    /// frames ([`tune`]: `best`, and a world of at least `TUNE_MIN_PAGES` pages): such frames are
    /// left untimed until the compare has kept one.
    pub fn tunes(&self, kernels: Kernels) -> bool {
        kernels.tuned() && self.store.live().len() >= tune::TUNE_MIN_PAGES
    }

    /// A push frame's start as the `compare` command times it: the cache made cold by streaming
    /// `flush` (a buffer past the last-level cache), then `fraction` of the actors changed and
    /// marked, and the tick begun. Returns the marked lanes' offsets ([`Self::marked_offsets`]),
    /// for [`time_gather`].
    pub fn start_push_frame(&mut self, flush: &mut [u64], fraction: f64) -> Vec<usize> {
        stream(flush);
        self.mutate(fraction, true);
        self.store.begin_tick();
        self.marked_offsets()
    }

    /// Byte offsets in the store's pages (the shadow's pages lie out the same) of every plane
    /// lane the last marking [`Self::mutate`] marked: one per plane of each leaf of each marked
    /// (actor, parent) — what a push compare must touch, at least.
    pub fn marked_offsets(&self) -> Vec<usize> {
        let stride = self.layout.page_bytes;
        let mut out = Vec::with_capacity(self.marked.len() * 8);
        for &(slot, parent) in &self.marked {
            let (page, lane) = (slot as usize / PAGE_LANES, slot as usize % PAGE_LANES);
            for leaf in self.layout.leaves.iter().filter(|l| l.parent == parent) {
                for plane in &self.layout.planes[leaf.planes.clone()] {
                    out.push(page * stride + plane.page_offset + lane * plane.width.read_stride());
                }
            }
        }
        out
    }

    /// Changes `fraction` of the actors (distinct, chosen at random); with `mark`, also marks what
    /// changed dirty (push model). Returns how many actors changed.
    pub fn mutate(&mut self, fraction: f64, mark: bool) -> usize {
        let n = self.ids.len();
        let k = ((fraction.clamp(0.0, 1.0) * n as f64).round() as usize).min(n);
        self.marked.clear();
        // Partial Fisher-Yates: the first k of `order` become a uniform sample.
        for i in 0..k {
            let j = self.rng.random_range(i..n);
            self.order.swap(i, j);
        }
        for i in 0..k {
            let actor = self.order[i] as usize;
            let occasional = self.rng.random_range(0..10) == 0;
            self.change_actor(actor, occasional, mark);
        }
        k
    }

    /// [`Self::mutate`] of the kernel's store alone, the reference world left as it is (it no
    /// longer mirrors the store: for kernel-only measurements, whose profiles should not hold
    /// the reference's writes).
    pub fn mutate_store(&mut self, fraction: f64, mark: bool) -> usize {
        let reference = self.reference.take();
        let k = self.mutate(fraction, mark);
        self.reference = reference;
        k
    }

    fn change_actor(&mut self, actor: usize, occasional: bool, mark: bool) {
        self.set_actor(actor, occasional, mark, false);
    }

    /// [`Self::change_actor`]; `initial`: the actor's first values (a counter's index).
    fn set_actor(&mut self, actor: usize, occasional: bool, mark: bool, initial: bool) {
        let id = self.ids[actor];
        let mut parents = self.hot.clone();
        if occasional && !self.occasional.is_empty() {
            parents.push(self.occasional[self.rng.random_range(0..self.occasional.len())]);
        }
        for parent in parents {
            let v = match self.store.get(id, parent) {
                Ok(Value::U32(n)) if self.counting && !initial => Value::U32(n.wrapping_add(1)),
                // A counter's first value: its index.
                _ if self.counting => Value::U32(actor as u32),
                _ => random_value(&self.layout.parents[parent].ty, &mut self.rng, &[]),
            };
            // Values come from the layout's own types and ids stay live, so these writes cannot
            // fail; if they did, kernel and reference would silently diverge.
            self.store.set(id, parent, &v).expect("a value of the property's own type");
            if mark {
                self.store.mark_dirty(id, parent).expect("a live actor");
                self.marked.push((id.index, parent));
            }
            if let Some(r) = self.reference.as_mut() {
                r.set(actor, parent, &v).expect("a value of the property's own type");
                if mark {
                    r.mark_dirty(actor, parent);
                }
            }
        }
    }
}

/// A random value of type `ty` (movement-like magnitudes for vectors and rotators); object
/// references are drawn from `objects` (GUIDs of live actors) or null. The integration tests use
/// it too.
pub fn random_value(ty: &PropType, rng: &mut ChaCha8Rng, objects: &[u64]) -> Value {
    let mut f = |scale: f32| (rng.random::<f32>() - 0.5) * 2.0 * scale;
    match ty {
        PropType::Bool => Value::Bool(rng.random()),
        PropType::U8 => Value::U8(rng.random()),
        PropType::I8 => Value::I8(rng.random()),
        PropType::U16 => Value::U16(rng.random()),
        PropType::I16 => Value::I16(rng.random()),
        PropType::U32 | PropType::PackedU32 => Value::U32(rng.random()),
        PropType::I32 => Value::I32(rng.random()),
        PropType::U64 => Value::U64(rng.random()),
        PropType::I64 => Value::I64(rng.random()),
        PropType::F32 => Value::F32(f(100.0)),
        PropType::F64 => Value::F64(f(100.0) as f64),
        PropType::Enum { bits } => Value::Enum((rng.random::<u16>() % (1u16 << bits)) as u8),
        PropType::Vector(_) => Value::Vector([f(10000.0), f(10000.0), f(1000.0)]),
        PropType::Rotator => Value::Rotator([f(90.0), f(180.0), f(180.0)]),
        PropType::Name => Value::Name(rng.random_range(0..1000)),
        PropType::Object => {
            let i = rng.random_range(0..=objects.len());
            Value::Object(ObjectRef(objects.get(i).copied().unwrap_or(0)))
        }
        PropType::Opaque { size, .. } => Value::Opaque((0..*size).map(|_| rng.random()).collect()),
        PropType::Struct(s) => Value::Struct(s.fields.iter().map(|(_, t)| random_value(t, rng, objects)).collect()),
        PropType::Array { element, max_len } => {
            let n = rng.random_range(0..(*max_len).min(8)) as usize;
            Value::Array((0..n).map(|_| random_value(element, rng, objects)).collect())
        }
    }
}

/// What `shadowrep compare` measures.
#[derive(Clone, Debug)]
pub struct CompareOptions {
    /// Class name.
    pub class: String,
    /// Actors.
    pub actors: usize,
    /// Fraction of actors changed per frame.
    pub changed: f64,
    /// Threads for the kernel (the reference is single-threaded, as UE's is).
    pub threads: usize,
    /// Timed frames (the median is reported).
    pub frames: usize,
    /// Diff routines.
    pub kernels: Kernels,
    /// RNG seed.
    pub seed: u64,
}

/// Medians of one `compare` run, in nanoseconds per frame.
#[derive(Clone, Debug)]
pub struct CompareReport {
    /// The diff table the timed full frames ran: the one asked for, or with [`Kernels::best`] the
    /// one the compare kept after trying each on its first large frames (untimed here).
    pub isa: Isa,
    /// The page scan the timed full frames ran (asked for, or kept with the table).
    pub scan: PageScan,
    /// Whether the timed full frames prefetched a changed page's next page (asked for, or kept
    /// with the table).
    pub next_page: NextPage,
    /// With [`Kernels::best`]: every candidate table the compare tried (`isa:scan:next-page`),
    /// fastest first, with the median of its time per page over the baseline's in the trial
    /// frames ([`ShadowState::tune_scores`]); empty for a named table.
    pub tune_scores: Vec<(String, f64)>,
    /// Kernel, push model off, at the requested fraction.
    pub kernel_ns: u64,
    /// Reference, push model off, same frames.
    pub reference_ns: u64,
    /// `memcmp` of the same live and shadow bytes (equal, so it reads all of them).
    pub memcmp_ns: u64,
    /// The same `memcmp` on two threads, each comparing one half of the bytes (the two-core
    /// memory-speed bar).
    pub memcmp_2t_ns: u64,
    /// Kernel with every property push-based, 1 % of actors marked.
    pub push_1pct_ns: u64,
    /// Bytes of live state the kernel reads (the shadow is the same size).
    pub live_bytes: usize,
    /// Actors with a change in the last timed frame (kernel; every changelist equalled the
    /// reference's).
    pub changed_actors: usize,
    /// Median over frames of reference / kernel, each pair timed in the same frame.
    pub speedup_vs_reference: f64,
    /// Median over frames of memcmp / kernel.
    pub fraction_of_memcmp: f64,
    /// Median over frames of the two-thread memcmp / kernel.
    pub fraction_of_memcmp_2t: f64,
    /// Median over push frames of push / the full compare of the same frame.
    pub push_ratio: f64,
    /// A plain gather of the lanes each push frame marked — one byte of every plane lane, live
    /// and shadow — timed from a cold cache as the push frame is (a buffer twice the last-level
    /// cache streamed before each; the live lanes warmed again first, as the game's writes leave
    /// them for the push frame): the latency floor of a push frame.
    pub push_gather_ns: u64,
    /// Median over push frames of push / the gather of the same frame's marked lanes.
    pub push_vs_gather: f64,
    /// Per parent of the class, over the timed push frames: lanes compared with a mark, and lanes
    /// whose value changed (the push compare counts them, inside its timed region).
    pub dirty_stats: Vec<PropertyDirtyStats>,
}

/// An example's `--flag value` pairs from its command line, in order (an error for a flag given
/// without its value); [`flag_value`] parses one.
pub fn flag_pairs() -> Result<Vec<(String, String)>, String> {
    let mut args = std::env::args().skip(1);
    let mut pairs = Vec::new();
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        pairs.push((flag, value));
    }
    Ok(pairs)
}

/// `value` of `flag` parsed, or an error naming both.
pub fn flag_value<T: std::str::FromStr>(flag: &str, value: &str) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    value.parse().map_err(|e| format!("{flag} {value}: {e}"))
}

/// Median of measurements (0 for none).
pub fn median<T: PartialOrd + Copy + Default>(mut v: Vec<T>) -> T {
    v.sort_unstable_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn ratio(a: u64, b: u64) -> f64 {
    a as f64 / b.max(1) as f64
}

fn timed(f: impl FnOnce()) -> u64 {
    let t = Instant::now();
    f();
    t.elapsed().as_nanos() as u64
}

/// A push frame's gather floor as the `compare` command times it (`push_gather_ns`), in
/// nanoseconds: the cache made cold again by streaming `flush`, the marked lanes' live lines
/// warmed (the game's writes had left them warm for the push compare), then a gather of
/// `offsets` in `live` and `shadow` timed.
pub fn time_gather(flush: &mut [u64], live: &[u8], shadow: &[u8], offsets: &[usize]) -> u64 {
    stream(flush);
    gather(live, live, offsets);
    timed(|| {
        gather(live, shadow, offsets);
    })
}

/// Times a fallible step; its error is returned, not dropped.
fn timed_try<E>(f: impl FnOnce() -> Result<(), E>) -> Result<u64, E> {
    let mut result = Ok(());
    let ns = timed(|| result = f());
    result.map(|()| ns)
}

/// Every actor's kernel changelist must equal the reference's (object `i` is actor `i`).
fn check_changelists(w: &CompareWorkload, kernel: &ChangeSet, reference: &RefChanges) -> Result<(), String> {
    for (i, id) in w.ids.iter().enumerate() {
        let k = kernel.changelist(&w.layout, id.index);
        if k.as_slice() != reference.changelist(i) {
            return Err(format!("kernel and reference disagree on actor {i}: {k:?} vs {:?}", reference.changelist(i)));
        }
    }
    Ok(())
}

/// Runs the compare measurement; `progress` is told what is happening (for a terminal), `probe`
/// when the kernel's and the reference's timed compares start and end (and it may ask for more
/// of them after the timed frames: extra frames at the same change rate, neither timed nor
/// checked).
pub fn run_compare(
    opts: &CompareOptions,
    progress: &mut dyn FnMut(&str),
    probe: &mut dyn PhaseProbe,
) -> Result<CompareReport, String> {
    progress(&format!("spawning {} {} actors", opts.actors, opts.class));
    let mut w = CompareWorkload::new(&opts.class, opts.actors, opts.seed, true)?;
    let pool = rayon::ThreadPoolBuilder::new().num_threads(opts.threads.max(1)).build().map_err(|e| e.to_string())?;
    let pool_2t = rayon::ThreadPoolBuilder::new().num_threads(2).build().map_err(|e| e.to_string())?;
    let full = CompareConfig {
        push: PushMode::Off,
        kernels: opts.kernels,
        parallel: opts.threads > 1,
        ..CompareConfig::default()
    };
    // Timed push frames run as a game's would, without the dirty statistics (a diagnostic: it reads
    // every listed page's masks again, ~130 µs of a 1M-actor push frame); the statistics come from
    // push frames of their own after the timed ones.
    let push = CompareConfig { push: PushMode::All, ..full };
    let push_stats = CompareConfig { dirty_stats: true, ..push };
    let mut full_shadow = ShadowState::new(&mut w.store);
    let mut push_shadow = ShadowState::new(&mut w.store);
    let mut changes = ChangeSet::new();
    let mut ref_changes = RefChanges::default();
    // One thread: the compare runs on the calling thread, as a game thread would run it (handing
    // it to a one-thread pool only adds two thread wake-ups to every timed frame).
    let single = opts.threads <= 1;
    let compare = |w: &mut CompareWorkload, s: &mut ShadowState, cfg: &CompareConfig, out: &mut ChangeSet| {
        if single { s.compare(&mut w.store, cfg, out) } else { pool.install(|| s.compare(&mut w.store, cfg, out)) }
            .map_err(|e| e.to_string())
    };

    // Initial replication: everything differs from defaults once.
    progress("initial compare");
    w.store.begin_tick();
    compare(&mut w, &mut full_shadow, &full, &mut changes)?;
    compare(&mut w, &mut push_shadow, &push, &mut changes)?;
    if let Some(r) = w.reference.as_mut() {
        r.compare(PushMode::Off, &mut ref_changes);
        check_changelists(&w, &changes, &ref_changes)?;
    }

    let (mut kernel, mut reference, mut memcmp, mut memcmp_2t) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut speedups, mut fractions, mut fractions_2t, mut push_ratios) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut changed_actors = 0;
    // Frame 0 warms caches and the thread pool. With `Kernels::best()` a large world's compare
    // then tries each diff table with each page scan and each next-page rule on its next frames
    // (`shadowrep::compare::tune`: a warm-up and `TRIALS` trial frames, each running every
    // candidate in short runs of pages): those are not timed either, so the timed frames run the
    // table it kept. Past 200 frames timing starts whatever the compare says.
    let settles = w.tunes(opts.kernels);
    let (mut frame, mut timed_frames) = (0, 0);
    while timed_frames < opts.frames {
        let timing = frame > 0 && (!settles || full_shadow.tuned_isa().is_some() || frame > 200);
        frame += 1;
        progress(&format!(
            "frame {}/{} at {:.1} % changed{}",
            timed_frames,
            opts.frames,
            opts.changed * 100.0,
            if timing { "" } else { " (untimed: warm-up, diff tables tried)" }
        ));
        w.mutate(opts.changed, false);
        w.store.begin_tick();
        let k = within(probe, Phase::Kernel, || timed_try(|| compare(&mut w, &mut full_shadow, &full, &mut changes)))?;
        let r = match w.reference.as_mut() {
            Some(world) => within(probe, Phase::Reference, || timed(|| world.compare(PushMode::Off, &mut ref_changes))),
            None => 0,
        };
        check_changelists(&w, &changes, &ref_changes)?;
        changed_actors = changes.changed_actors();
        let (live, shadow) = (w.store.live().bytes(), full_shadow.pages().bytes());
        let mut equal = false;
        let m = timed(|| equal = black_box(live) == black_box(shadow));
        if !equal {
            return Err("after a push-off compare the shadow must equal live".into());
        }
        let half = live.len() / 2;
        let ((l1, l2), (s1, s2)) = (live.split_at(half), shadow.split_at(half));
        let mut halves = (false, false);
        let m2 = timed(|| {
            halves =
                pool_2t.install(|| rayon::join(|| black_box(l1) == black_box(s1), || black_box(l2) == black_box(s2)))
        });
        if halves != (true, true) {
            return Err("the two-thread memcmp must find the same equal bytes".into());
        }
        if timing {
            timed_frames += 1;
            kernel.push(k);
            reference.push(r);
            memcmp.push(m);
            memcmp_2t.push(m2);
            speedups.push(ratio(r, k));
            fractions.push(ratio(m, k));
            fractions_2t.push(ratio(m2, k));
        }
    }

    let (mut push_times, mut gathers, mut vs_gather) = (Vec::new(), Vec::new(), Vec::new());
    // Push frame and gather start from the same cold cache: a buffer twice the last-level cache
    // is streamed before each. (Streaming the world's pages once, as the full compare does, left
    // the push shadow's lanes in a 480 MB L3 for the gather, while the push frame, after the
    // reference's pass over its gigabyte of objects, found every line in memory.)
    let mut flush = vec![0u64; flush_bytes() / 8];
    for frame in 0..2 * opts.frames + 1 {
        // Frames 1..=frames are timed; the next `frames` collect the dirty statistics.
        let stats = frame > opts.frames;
        if frame == opts.frames + 1 {
            push_shadow.reset_dirty_stats();
        }
        progress(&format!(
            "push frame {}/{} at 1 % dirty{}",
            frame.min(opts.frames),
            opts.frames,
            if stats { " (dirty statistics, untimed)" } else { "" }
        ));
        let offsets = w.start_push_frame(&mut flush, 0.01);
        let t = timed_try(|| compare(&mut w, &mut push_shadow, if stats { &push_stats } else { &push }, &mut changes))?;
        let f = timed_try(|| compare(&mut w, &mut full_shadow, &full, &mut changes))?;
        let g = time_gather(&mut flush, w.store.live().bytes(), push_shadow.pages().bytes(), &offsets);
        if frame > 0 && !stats {
            push_times.push(t);
            push_ratios.push(ratio(t, f));
            gathers.push(g);
            vs_gather.push(ratio(t, g));
        }
        // `changes` now holds the polled compare of this frame, which the reference must match.
        if let Some(r) = w.reference.as_mut() {
            r.compare(PushMode::Off, &mut ref_changes);
            check_changelists(&w, &changes, &ref_changes)?;
        }
    }
    // A profiler that wants more of its phase gets extra frames of it (only the side it
    // watches compares; nothing is timed or checked).
    let mut extra = ExtraFrames::new();
    while extra.another(probe) {
        if extra.frames() % 100 == 1 {
            progress(&format!("profiling: extra frame {}", extra.frames()));
        }
        w.mutate(opts.changed, false);
        w.store.begin_tick();
        if probe.watches(Phase::Kernel) {
            within(probe, Phase::Kernel, || compare(&mut w, &mut full_shadow, &full, &mut changes))?;
        }
        if let Some(world) = w.reference.as_mut().filter(|_| probe.watches(Phase::Reference)) {
            within(probe, Phase::Reference, || world.compare(PushMode::Off, &mut ref_changes));
        }
    }
    Ok(CompareReport {
        isa: full_shadow.tuned_isa().unwrap_or(opts.kernels.isa),
        scan: full_shadow.tuned_scan().unwrap_or(opts.kernels.scan),
        next_page: full_shadow.tuned_next_page().unwrap_or(opts.kernels.next_page),
        tune_scores: full_shadow.tune_scores().iter().map(|&(k, r)| (k.name(), r)).collect(),
        kernel_ns: median(kernel),
        reference_ns: median(reference),
        memcmp_ns: median(memcmp),
        memcmp_2t_ns: median(memcmp_2t),
        push_1pct_ns: median(push_times),
        live_bytes: w.store.live().bytes().len(),
        changed_actors,
        speedup_vs_reference: median(speedups),
        fraction_of_memcmp: median(fractions),
        fraction_of_memcmp_2t: median(fractions_2t),
        push_ratio: median(push_ratios),
        push_gather_ns: median(gathers),
        push_vs_gather: median(vs_gather),
        dirty_stats: push_shadow.dirty_stats().to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every sample class's workload really changes its actors: a class whose chosen properties
    /// cannot change (an object reference with no actor to point at) would time empty frames.
    #[test]
    fn every_sample_class_changes_when_mutated() {
        for &class in shadowrep_layouts::class_names() {
            let mut w = CompareWorkload::new(class, 200, 3, false).expect("a sample class");
            let before = w.store.live().bytes().to_vec();
            assert_eq!(w.mutate(1.0, false), 200);
            let after = w.store.live().bytes();
            let changed = before
                .chunks(w.layout.page_bytes)
                .zip(after.chunks(w.layout.page_bytes))
                .filter(|(a, b)| a != b)
                .count();
            assert_eq!(changed, before.len() / w.layout.page_bytes, "{class}: every page has a changed actor");
        }
    }
}
