//! The compare's unit tests: new actors, bitwise equality, push rules, arrays, several drivers,
//! lane selections (with validation too), foreign stores, bulk writes beside arrays, reused
//! slots, reused change sets, the tuner's tables; the batched push frame's in `push`; every
//! compare kind against a model, on random classes, actors, writes and drivers, in `model`.

use super::*;
use crate::schema::{ClassBuilder, PropType, PropertyDecl, StructType};

mod model;
mod push;

fn store(push: bool) -> ClassStore {
    let layout = ClassBuilder::new("T")
        .property(PropertyDecl::new("Hp", PropType::F32).push(push))
        .property(PropertyDecl::new("Inv", PropType::array(PropType::U32)).push(push))
        .build()
        .unwrap();
    ClassStore::new(Arc::new(layout))
}

fn frame(store: &mut ClassStore, shadow: &mut ShadowState, push: PushMode) -> ChangeSet {
    let mut out = ChangeSet::new();
    store.begin_tick();
    let cfg = CompareConfig { push, ..CompareConfig::default() };
    shadow.compare(store, &cfg, &mut out).unwrap();
    out
}

#[test]
fn new_actors_send_what_differs_from_defaults_then_nothing() {
    let mut s = store(false);
    let mut sh = ShadowState::new(&mut s);
    let a = s.spawn();
    let b = s.spawn();
    s.set(a, 0, &Value::F32(3.0)).unwrap();
    let c = frame(&mut s, &mut sh, PushMode::Declared);
    assert_eq!(c.changelist(s.layout(), a.index), vec![1, 0]);
    assert!(c.changelist(s.layout(), b.index).is_empty());
    assert_eq!(c.changed_actors(), 1);
    let c = frame(&mut s, &mut sh, PushMode::Declared);
    assert_eq!(c.changed_actors(), 0);
}

#[test]
fn equality_is_bitwise() {
    let mut s = store(false);
    let mut sh = ShadowState::new(&mut s);
    let a = s.spawn();
    frame(&mut s, &mut sh, PushMode::Off);
    s.set(a, 0, &Value::F32(-0.0)).unwrap();
    assert_eq!(frame(&mut s, &mut sh, PushMode::Off).changed_actors(), 1, "-0.0 differs from 0.0");
    s.set(a, 0, &Value::F32(f32::NAN)).unwrap();
    assert_eq!(frame(&mut s, &mut sh, PushMode::Off).changed_actors(), 1);
    s.set(a, 0, &Value::F32(f32::NAN)).unwrap();
    assert_eq!(frame(&mut s, &mut sh, PushMode::Off).changed_actors(), 0, "the same NaN is no change");
}

#[test]
fn push_properties_are_compared_only_when_marked() {
    let mut s = store(true);
    let mut sh = ShadowState::new(&mut s);
    let a = s.spawn();
    frame(&mut s, &mut sh, PushMode::Declared);
    s.set(a, 0, &Value::F32(1.0)).unwrap();
    assert_eq!(frame(&mut s, &mut sh, PushMode::Declared).changed_actors(), 0, "unmarked push change is not seen");
    s.mark_dirty(a, 0).unwrap();
    let c = frame(&mut s, &mut sh, PushMode::Declared);
    assert_eq!(c.changelist(s.layout(), a.index), vec![1, 0]);
    // Polled mode compares it regardless of marks.
    s.set(a, 0, &Value::F32(2.0)).unwrap();
    assert_eq!(frame(&mut s, &mut sh, PushMode::Off).changed_actors(), 1);
    // A mark without a change sends nothing.
    s.mark_dirty(a, 0).unwrap();
    assert_eq!(frame(&mut s, &mut sh, PushMode::Declared).changed_actors(), 0);
}

#[test]
fn arrays_report_growth_shrink_and_element_changes() {
    let mut s = store(false);
    let mut sh = ShadowState::new(&mut s);
    let a = s.spawn();
    frame(&mut s, &mut sh, PushMode::Off);
    let arr = |v: &[u32]| Value::Array(v.iter().map(|&x| Value::U32(x)).collect());
    s.set(a, 1, &arr(&[5, 6])).unwrap();
    assert_eq!(frame(&mut s, &mut sh, PushMode::Off).changelist(s.layout(), a.index), vec![2, 2, 1, 2, 0, 0]);
    s.set(a, 1, &arr(&[5, 7, 8])).unwrap();
    assert_eq!(frame(&mut s, &mut sh, PushMode::Off).changelist(s.layout(), a.index), vec![2, 2, 2, 3, 0, 0]);
    s.set(a, 1, &arr(&[5])).unwrap();
    let c = frame(&mut s, &mut sh, PushMode::Off);
    assert_eq!(c.changelist(s.layout(), a.index), vec![2, 0, 0, 0], "a pure shrink still reaches the changelist");
    assert_eq!(c.array_changes(0).next().map(|a| a.new_len), Some(1));
    s.set(a, 1, &arr(&[5])).unwrap();
    assert_eq!(frame(&mut s, &mut sh, PushMode::Off).changed_actors(), 0, "rewriting the same array is no change");
}

#[test]
fn two_drivers_see_the_same_marks_and_keep_their_own_shadows() {
    let mut s = store(true);
    let mut game = ShadowState::new(&mut s);
    let mut replay = ShadowState::new(&mut s);
    let a = s.spawn();
    s.set_and_mark(a, 0, &Value::F32(4.0)).unwrap();
    assert_eq!(frame(&mut s, &mut game, PushMode::Declared).changed_actors(), 1);
    // The replay driver compares later; the marks were handed to it at the same tick start.
    let mut out = ChangeSet::new();
    replay.compare(&mut s, &CompareConfig::default(), &mut out).unwrap();
    assert_eq!(out.changelist(s.layout(), a.index), vec![1, 0]);
    assert_eq!(replay.value(a.index, 0), Some(Value::F32(4.0)));
}

#[test]
fn a_shadow_created_after_actors_exist_finds_everything_they_changed() {
    for push in [false, true] {
        let mut s = store(push);
        let a = s.spawn();
        let b = s.spawn();
        s.set_and_mark(a, 0, &Value::F32(4.0)).unwrap();
        s.begin_tick();
        // A driver that starts watching now sees every live actor as new: its first compare
        // reports whatever differs from the defaults, marks or not.
        let mut late = ShadowState::new(&mut s);
        let c = frame(&mut s, &mut late, PushMode::Declared);
        assert_eq!(c.changelist(s.layout(), a.index), vec![1, 0], "push {push}");
        assert_eq!(c.changelist(s.layout(), b.index), Vec::<u16>::new(), "push {push}: defaults are no change");
        assert_eq!(late.value(a.index, 0), Some(Value::F32(4.0)));
    }
}

#[test]
fn a_lane_selection_compares_only_those_lanes_and_the_rest_is_found_later() {
    use rand::{Rng, SeedableRng};
    for (seed, push) in [(1u64, false), (2, true), (3, false), (4, true)] {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut s = store(push);
        let mut sh = ShadowState::new(&mut s);
        let ids: Vec<_> = (0..150).map(|_| s.spawn()).collect();
        // What each actor's Hp and Inv were when it was last compared (a new actor: defaults).
        let mut seen: Vec<(f32, Vec<u32>)> = vec![(0.0, Vec::new()); ids.len()];
        for round in 0..40 {
            // Dense rounds change most actors (the dense path's whole-plane copy), sparse
            // rounds a few.
            let p_change = if round % 3 == 0 { 0.9 } else { 0.1 };
            for &a in &ids {
                if rng.random_bool(p_change) {
                    s.set_and_mark(a, 0, &Value::F32(rng.random_range(0..4) as f32)).unwrap();
                }
                if rng.random_bool(p_change / 2.0) {
                    let v: Vec<Value> =
                        (0..rng.random_range(0..3)).map(|_| Value::U32(rng.random_range(0..3))).collect();
                    s.set_and_mark(a, 1, &Value::Array(v)).unwrap();
                }
            }
            let pick = if round % 5 == 4 { 1.0 } else { 0.5 };
            let mut lanes = vec![0u64; ids.len().div_ceil(PAGE_LANES)];
            for &a in &ids {
                if rng.random_bool(pick) {
                    lanes[a.index as usize / PAGE_LANES] |= 1 << (a.index as usize % PAGE_LANES);
                }
            }
            s.begin_tick();
            let mut out = ChangeSet::new();
            let cfg = CompareConfig { push: PushMode::Declared, ..CompareConfig::default() };
            // Odd rounds give the page list themselves (the actor level's way) and leave one
            // page with selected lanes out of it: its lanes are not compared and keep their marks.
            let listed: Vec<u32> = (0..lanes.len() as u32).filter(|&p| lanes[p as usize] != 0).collect();
            let skipped = (round % 2 == 1 && !listed.is_empty()).then(|| listed[rng.random_range(0..listed.len())]);
            if round % 2 == 1 {
                let pages: Vec<u32> = listed.iter().copied().filter(|&p| Some(p) != skipped).collect();
                sh.compare_selected(&mut s, &cfg, &lanes, &pages, &mut out).unwrap();
            } else {
                sh.compare_lanes(&mut s, &cfg, Some(&lanes), &mut out).unwrap();
            }
            for (i, &a) in ids.iter().enumerate() {
                let page = (i / PAGE_LANES) as u32;
                let selected = lanes[i / PAGE_LANES] >> (i % PAGE_LANES) & 1 != 0 && Some(page) != skipped;
                let list = out.changelist(s.layout(), a.index);
                if !selected {
                    assert!(list.is_empty(), "seed {seed} round {round}: unselected actor {i} reported");
                    continue;
                }
                let Value::F32(hp) = s.get(a, 0).unwrap() else { unreachable!() };
                let Value::Array(inv) = s.get(a, 1).unwrap() else { unreachable!() };
                let inv: Vec<u32> = inv.iter().map(|v| if let Value::U32(x) = v { *x } else { 0 }).collect();
                let hp_changed = hp.to_bits() != seen[i].0.to_bits();
                let inv_changed = inv != seen[i].1;
                // Handles in order: 1 (Hp) first if it changed, then 2 (Inv) with its count.
                let hp_listed = list.first() == Some(&1);
                let inv_listed = list.get(hp_listed as usize) == Some(&2);
                assert_eq!(hp_listed, hp_changed, "seed {seed} round {round} actor {i}: Hp");
                assert_eq!(inv_listed, inv_changed, "seed {seed} round {round} actor {i}: Inv");
                assert_eq!(sh.value(a.index, 0), Some(Value::F32(hp)), "the shadow caught up");
                seen[i] = (hp, inv);
            }
        }
    }
}

#[test]
fn a_shadow_refuses_another_store() {
    let mut s1 = store(false);
    let mut s2 = store(false);
    let mut sh = ShadowState::new(&mut s1);
    let mut out = ChangeSet::new();
    assert_eq!(sh.compare(&mut s2, &CompareConfig::default(), &mut out), Err(CompareError::ForeignStore));
}

/// A polled leaf that shares its struct with a dynamic array, written by a bulk system
/// (`plane_mut`, no mark): the array part needs the store's write mark, the fixed part does not.
#[test]
fn a_bulk_write_beside_an_array_is_found_without_a_mark() {
    let inner = StructType::new("S").field("A", PropType::F32).field("Inv", PropType::array(PropType::U32));
    for (push_decl, mode, expect_seen) in [
        (false, PushMode::Off, true),
        (false, PushMode::Declared, true),
        (true, PushMode::Off, true),
        (true, PushMode::Declared, false),
        (false, PushMode::All, false),
    ] {
        let layout = ClassBuilder::new("T")
            .property(PropertyDecl::new("S", PropType::Struct(inner.clone())).push(push_decl))
            .build()
            .unwrap();
        let mut s = ClassStore::new(Arc::new(layout));
        let mut sh = ShadowState::new(&mut s);
        let a = s.spawn();
        frame(&mut s, &mut sh, mode);
        let leaf = s.layout().leaf_index("S.A").unwrap();
        let plane = s.layout().leaves[leaf].planes.start;
        s.plane_mut::<f32>(plane).unwrap().page(0)[a.lane()] = 5.0;
        let c = frame(&mut s, &mut sh, mode);
        let handle = s.layout().leaves[leaf].handle;
        let expected = if expect_seen { vec![handle, 0] } else { vec![] };
        assert_eq!(c.changelist(s.layout(), a.index), expected, "push {push_decl} mode {mode:?}");
        // Marked in bulk, the push-based case finds it too.
        s.mark_lanes_dirty(0, 0, 1 << a.lane());
        let c = frame(&mut s, &mut sh, mode);
        let expected = if expect_seen { vec![] } else { vec![handle, 0] };
        assert_eq!(c.changelist(s.layout(), a.index), expected, "marked: push {push_decl} mode {mode:?}");
    }
}

#[test]
fn a_reused_slot_is_a_new_actor() {
    let mut s = store(false);
    let mut sh = ShadowState::new(&mut s);
    let a = s.spawn();
    s.set(a, 0, &Value::F32(9.0)).unwrap();
    frame(&mut s, &mut sh, PushMode::Off);
    s.despawn(a).unwrap();
    let b = s.spawn();
    s.set(b, 0, &Value::F32(9.0)).unwrap();
    // Same slot, same value as the old actor: still sent, because b is new.
    let c = frame(&mut s, &mut sh, PushMode::Off);
    assert_eq!(c.changelist(s.layout(), b.index), vec![1, 0]);
}

/// One change set reused frame after frame, as a driver reuses it: a push frame (a listed
/// compare) clears only the pages the frame before wrote, and nothing of them is left over; a
/// spawn between frames is still seen although steady frames skip the look at every page.
#[test]
fn a_reused_change_set_keeps_nothing_of_the_frame_before() {
    let mut s = store(true);
    let mut sh = ShadowState::new(&mut s);
    let ids: Vec<_> = (0..4 * PAGE_LANES).map(|_| s.spawn()).collect();
    let mut out = ChangeSet::new();
    let step = |s: &mut ClassStore, sh: &mut ShadowState, out: &mut ChangeSet, push| {
        s.begin_tick();
        sh.compare(s, &CompareConfig { push, ..CompareConfig::default() }, out).unwrap();
    };
    step(&mut s, &mut sh, &mut out, PushMode::Declared);
    let (first, last) = (ids[3], ids[3 * PAGE_LANES + 5]);
    s.set_and_mark(first, 0, &Value::F32(1.0)).unwrap();
    s.set_and_mark(first, 1, &Value::Array(vec![Value::U32(7)])).unwrap();
    step(&mut s, &mut sh, &mut out, PushMode::Declared);
    assert_eq!(out.changed_actors(), 1);
    assert_eq!(out.changelist(s.layout(), first.index), vec![1, 2, 1, 1, 0, 0]);
    s.set_and_mark(last, 0, &Value::F32(2.0)).unwrap();
    step(&mut s, &mut sh, &mut out, PushMode::Declared);
    assert_eq!(out.changed_actors(), 1, "the first page's changes are gone");
    assert!(out.changelist(s.layout(), first.index).is_empty());
    assert_eq!(out.array_changes(0).len(), 0, "and its array changes");
    assert_eq!(out.changelist(s.layout(), last.index), vec![1, 0]);
    // A full compare after a listed one, and a listed one after a full one.
    step(&mut s, &mut sh, &mut out, PushMode::Off);
    assert_eq!(out.changed_actors(), 0);
    s.set_and_mark(first, 0, &Value::F32(3.0)).unwrap();
    step(&mut s, &mut sh, &mut out, PushMode::Declared);
    assert_eq!(out.changelist(s.layout(), first.index), vec![1, 0]);
    assert!(out.changelist(s.layout(), last.index).is_empty());
    // A spawn after steady frames, into a page the compare knows (a freed slot): its first
    // compare sends what differs from defaults.
    s.despawn(ids[10]).unwrap();
    let born = s.spawn();
    assert_eq!(born.index, ids[10].index);
    s.set(born, 0, &Value::F32(4.0)).unwrap();
    step(&mut s, &mut sh, &mut out, PushMode::Declared);
    assert_eq!(out.changelist(s.layout(), born.index), vec![1, 0]);
    assert_eq!(out.changed_actors(), 1);
}

/// A change set reused from frame to frame (as the driver reuses its own) reports exactly what a
/// fresh one does: a frame whose only change is an array must not repeat a leaf an earlier frame
/// changed in the same page (the page's masks are zeroed at its first change, on every path).
#[test]
fn a_reused_change_set_reports_what_a_fresh_one_does() {
    for (push, mode) in [(false, PushMode::Off), (false, PushMode::Declared), (true, PushMode::All)] {
        let mut s = store(push);
        let mut reused_shadow = ShadowState::new(&mut s);
        let mut fresh_shadow = ShadowState::new(&mut s);
        let (a, b) = (s.spawn(), s.spawn());
        let mut reused = ChangeSet::new();
        let cfg = CompareConfig { push: mode, ..CompareConfig::default() };
        let steps: [&dyn Fn(&mut ClassStore); 3] = [
            &|s| s.set(a, 0, &Value::F32(2.0)).unwrap(),
            &|s| s.set(a, 1, &Value::Array(vec![Value::U32(5)])).unwrap(),
            &|s| s.set(b, 1, &Value::Array(vec![Value::U32(6), Value::U32(7)])).unwrap(),
        ];
        for (i, step) in steps.iter().enumerate() {
            step(&mut s);
            if push {
                s.mark_all_dirty(a).unwrap();
                s.mark_all_dirty(b).unwrap();
            }
            s.begin_tick();
            reused_shadow.compare(&mut s, &cfg, &mut reused).unwrap();
            let mut fresh = ChangeSet::new();
            fresh_shadow.compare(&mut s, &cfg, &mut fresh).unwrap();
            for id in [a, b] {
                assert_eq!(
                    reused.changelist(s.layout(), id.index),
                    fresh.changelist(s.layout(), id.index),
                    "{mode:?}, frame {i}, slot {}",
                    id.index
                );
            }
        }
    }
}

#[test]
fn large_full_frames_try_every_table_keep_one_and_find_what_the_scalar_table_finds() {
    let layout = ClassBuilder::new("Big")
        .property(PropertyDecl::new("Location", PropType::Vector(crate::schema::VectorQuant::None)))
        .property(PropertyDecl::new("Hp", PropType::F32))
        .property(PropertyDecl::new("Ammo", PropType::U8))
        .build()
        .unwrap();
    let mut s = ClassStore::new(Arc::new(layout));
    let ids: Vec<_> = (0..tune::TUNE_MIN_PAGES * PAGE_LANES).map(|_| s.spawn()).collect();
    let mut tuned = ShadowState::new(&mut s);
    let mut scalar = ShadowState::new(&mut s);
    let mut push = ShadowState::new(&mut s);
    let best = CompareConfig { push: PushMode::Off, parallel: false, ..CompareConfig::default() };
    let by_scalar = CompareConfig { kernels: Kernels::for_isa(Isa::Scalar).unwrap(), ..best };
    let all_push = CompareConfig { push: PushMode::All, ..best };
    // Each vector table with each page scan and each next-page rule.
    let tables = [Isa::Avx512, Isa::Avx2, Isa::Wide].into_iter().filter(|i| i.available()).count()
        * PageScan::ALL.len()
        * NextPage::ALL.len();
    let (mut a, mut b) = (ChangeSet::new(), ChangeSet::new());
    // The warm-up, a round of trial frames (each running every table in turn), and three frames
    // on the table kept.
    assert!(tables >= 6);
    let trials = tune::TRIALS;
    for f in 0..1 + trials + 3 {
        assert_eq!(tuned.tuned_isa().is_some(), f > trials, "frame {f}");
        assert_eq!(tuned.tuned_scan().is_some(), f > trials, "frame {f}");
        assert_eq!(tuned.tuned_next_page().is_some(), f > trials, "frame {f}");
        for (i, &id) in ids.iter().enumerate().filter(|(i, _)| (i * 7 + f * 13) % 29 == 0) {
            s.set_and_mark(
                id,
                i % 3,
                &match i % 3 {
                    0 => Value::Vector([f as f32, i as f32, 1.0]),
                    1 => Value::F32(f as f32 + 0.5),
                    _ => Value::U8((f + i) as u8),
                },
            )
            .unwrap();
        }
        s.begin_tick();
        tuned.compare(&mut s, &best, &mut a).unwrap();
        scalar.compare(&mut s, &by_scalar, &mut b).unwrap();
        push.compare(&mut s, &all_push, &mut ChangeSet::new()).unwrap();
        assert!(a.changed_actors() > 0);
        assert_eq!(a.changed_actors(), b.changed_actors(), "frame {f}");
        for id in &ids {
            let (x, y) = (a.changelist(s.layout(), id.index), b.changelist(s.layout(), id.index));
            assert_eq!(x, y, "frame {f}, actor {}: a trial table found other changes than the scalar table", id.index);
        }
    }
    let kept = tuned.tuned_isa().expect("every table was tried");
    assert!(matches!(kept, Isa::Avx512 | Isa::Avx2 | Isa::Wide), "{kept:?}");
    assert_eq!(scalar.tuned_isa(), None, "a named table is used as given");
    assert_eq!(push.tuned_isa(), None, "push frames walk only marked pages: never a trial");
}

/// A frame's walk reuses one buffer of plane masks from page to page: a page must report only its
/// own planes' changes, whatever the page before it changed (a plane a scan names as equal gets
/// no lane diff, so its mask must be cleared, not left from the last page). Every table, with
/// each page scan and each next-page rule.
#[test]
fn a_page_reports_only_its_own_planes_whatever_the_page_before_it_changed() {
    let layout = ClassBuilder::new("Two")
        .property(PropertyDecl::new("Hp", PropType::F32))
        .property(PropertyDecl::new("Ammo", PropType::U8))
        .build()
        .unwrap();
    let tables = Isa::ALL
        .into_iter()
        .filter_map(Kernels::for_isa)
        .flat_map(|k| PageScan::ALL.map(|scan| k.with_scan(scan)))
        .flat_map(|k| NextPage::ALL.map(|next| k.with_next_page(next)));
    for kernels in tables {
        let name = (kernels.isa, kernels.scan, kernels.next_page);
        let mut s = ClassStore::new(Arc::new(layout.clone()));
        let ids: Vec<_> = (0..3 * PAGE_LANES).map(|_| s.spawn()).collect();
        let mut sh = ShadowState::new(&mut s);
        let cfg = CompareConfig { push: PushMode::Off, kernels, parallel: false, ..CompareConfig::default() };
        let mut out = ChangeSet::new();
        s.begin_tick();
        sh.compare(&mut s, &cfg, &mut out).unwrap();
        // Unmarked writes: the walk's own path, no job. Page 0 changes Hp in lane 5, page 1 only
        // Ammo in lane 9, page 2 Hp in lane 3.
        s.set(ids[5], 0, &Value::F32(1.0)).unwrap();
        s.set(ids[PAGE_LANES + 9], 1, &Value::U8(7)).unwrap();
        s.set(ids[2 * PAGE_LANES + 3], 0, &Value::F32(2.0)).unwrap();
        s.begin_tick();
        sh.compare(&mut s, &cfg, &mut out).unwrap();
        assert_eq!(out.changed_actors(), 3, "{name:?}");
        assert_eq!(out.changelist(s.layout(), ids[5].index), vec![1, 0], "{name:?}");
        assert_eq!(out.changelist(s.layout(), ids[PAGE_LANES + 9].index), vec![2, 0], "{name:?}");
        assert!(out.changelist(s.layout(), ids[PAGE_LANES + 5].index).is_empty(), "{name:?}: page 0's Hp mask leaked");
        assert_eq!(out.changelist(s.layout(), ids[2 * PAGE_LANES + 3].index), vec![1, 0], "{name:?}");
        assert!(
            out.changelist(s.layout(), ids[2 * PAGE_LANES + 9].index).is_empty(),
            "{name:?}: page 1's Ammo mask leaked"
        );
    }
}

#[test]
fn a_validating_selected_compare_leaves_unlisted_pages_for_their_turn() {
    // Validation walks every page; lanes selected on a page the caller did not list must not be
    // compared there (their marks stay, so their change would be lost), with or without it.
    // (Found by a model test in review, session 65: validation compared them.)
    let layout = ClassBuilder::new("T")
        .property(PropertyDecl::new("Hp", PropType::F32).push(true))
        .property(PropertyDecl::new("Pos", PropType::F32))
        .build()
        .unwrap();
    let mut s = ClassStore::new(Arc::new(layout));
    let mut shadow = ShadowState::new(&mut s);
    let ids: Vec<_> = (0..2 * PAGE_LANES).map(|_| s.spawn()).collect();
    let mut out = ChangeSet::new();
    for validate_push in [false, true] {
        let cfg = CompareConfig { validate_push, parallel: false, ..CompareConfig::default() };
        s.begin_tick();
        shadow.compare(&mut s, &cfg, &mut out).unwrap();
        let b = ids[PAGE_LANES + 1]; // page 1, lane 1
        let v = Value::F32(if validate_push { 7.0 } else { 3.0 });
        s.set_and_mark(b, 0, &v).unwrap();
        s.set(b, 1, &v).unwrap();
        // Lane 1 selected on both pages, only page 0 listed.
        let lanes = [0b10u64, 0b10];
        s.begin_tick();
        shadow.compare_selected(&mut s, &cfg, &lanes, &[0], &mut out).unwrap();
        assert!(
            out.changelist(s.layout(), b.index).is_empty(),
            "validate_push {validate_push}: unlisted page compared"
        );
        s.begin_tick();
        shadow.compare_selected(&mut s, &cfg, &lanes, &[1], &mut out).unwrap();
        assert_eq!(out.changelist(s.layout(), b.index), vec![1, 2, 0], "validate_push {validate_push}: change lost");
    }
}
