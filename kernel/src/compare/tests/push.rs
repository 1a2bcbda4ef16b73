//! The batched push frame (`compare::push`) against the page walk: the same changes, dirty
//! statistics and visits whatever mix of quiet and busy pages, wide rows of leaf masks, and the
//! neighbours a probe's window holds.

use super::super::*;
use crate::schema::{ClassBuilder, PropType, PropertyDecl, StructType};

#[test]
fn a_push_frame_reports_the_same_on_the_batch_and_on_the_page_walk() {
    // Every property push-ruled: a whole compare hands quiet pages to the batch (`push`); a
    // compare of a lane selection (here every lane) walks every page, serially or on the pool.
    // All must report the same changes, the same dirty statistics and what they visited,
    // whatever mix of quiet and busy pages a frame has.
    let layout = ClassBuilder::new("T")
        .property(PropertyDecl::new("Hp", PropType::F32).push(true))
        .property(PropertyDecl::new("Alive", PropType::Bool).push(true))
        .property(PropertyDecl::new("Pos", PropType::Vector(Default::default())).push(true))
        .property(PropertyDecl::new("Inv", PropType::array(PropType::U32)).push(true))
        .property(PropertyDecl::new("Bag", PropType::array(PropType::U16)).push(true))
        .build()
        .unwrap();
    let mut s = ClassStore::new(Arc::new(layout));
    let serial = CompareConfig { push: PushMode::All, dirty_stats: true, parallel: false, ..CompareConfig::default() };
    let pool = CompareConfig { parallel: true, min_parallel_pages: 1, ..serial };
    let (mut a, mut b, mut c) = (ShadowState::new(&mut s), ShadowState::new(&mut s), ShadowState::new(&mut s));
    let ids: Vec<_> = (0..640).map(|_| s.spawn()).collect();
    let (mut ca, mut cb, mut cc) = (ChangeSet::new(), ChangeSet::new(), ChangeSet::new());
    let every_lane = vec![!0u64; 640 / PAGE_LANES];
    for frame in 0..6u32 {
        // A few actors a page on most pages, many on page 3, an array write on page 5.
        for (i, &id) in ids.iter().enumerate() {
            let page = i / PAGE_LANES;
            let busy = page == 3 && i % 3 == 0;
            if busy || (i * 7 + frame as usize).is_multiple_of(29) {
                let x = (i as u32 + frame) % 5;
                s.set_and_mark(id, 0, &Value::F32(x as f32)).unwrap();
                s.set_and_mark(id, 1, &Value::Bool(x.is_multiple_of(2))).unwrap();
                if x == 1 {
                    s.set_and_mark(id, 2, &Value::Vector([x as f32, 0.0, frame as f32])).unwrap();
                }
            }
            if page == 5 && i % 9 == frame as usize {
                s.set(id, 3, &Value::Array(vec![Value::U32(frame)])).unwrap();
            }
            // A quiet page with both arrays written in four lanes (the batch's array probes, in
            // the walk's order: by leaf, then slot): lengths that grow and shrink, elements kept or changed, and
            // rewrites of elements the array already holds.
            if page == 7 && (i % 16) as u32 == frame % 3 {
                let n = (frame as usize + i) % 4;
                let inv = (0..n).map(|e| Value::U32(if e == 1 { frame } else { e as u32 })).collect();
                s.set(id, 3, &Value::Array(inv)).unwrap();
                let bag = (0..(n + 1) % 3).map(|e| Value::U16(e as u16 + (frame / 3) as u16)).collect();
                s.set(id, 4, &Value::Array(bag)).unwrap();
            }
        }
        s.begin_tick();
        a.compare(&mut s, &serial, &mut ca).unwrap();
        b.compare_lanes(&mut s, &serial, Some(&every_lane), &mut cb).unwrap();
        c.compare_lanes(&mut s, &pool, Some(&every_lane), &mut cc).unwrap();
        for id in &ids {
            let expected = ca.changelist(s.layout(), id.index);
            assert_eq!(expected, cb.changelist(s.layout(), id.index), "frame {frame}");
            assert_eq!(expected, cc.changelist(s.layout(), id.index), "frame {frame}");
        }
        assert_eq!(ca.changed_actors(), cb.changed_actors());
        for p in 0..640 / PAGE_LANES {
            assert_eq!(
                ca.array_changes(p).collect::<Vec<_>>(),
                cb.array_changes(p).collect::<Vec<_>>(),
                "frame {frame}, page {p}: the walk's changes, in its order"
            );
        }
        assert_eq!(a.dirty_stats(), b.dirty_stats(), "frame {frame}");
        assert_eq!(a.dirty_stats(), c.dirty_stats(), "frame {frame}");
        assert_eq!(a.last_visit(), b.last_visit(), "frame {frame}");
        assert_eq!(a.last_visit(), c.last_visit(), "frame {frame}");
        assert!(ca.changed_actors() > 0 || frame == 0);
    }
    assert!(a.dirty_stats().iter().all(|p| p.changed > 0 && p.marked >= p.changed));
}

#[test]
fn a_push_frame_of_a_class_with_many_leaves_reports_the_same_on_the_batch_and_on_the_page_walk() {
    // A page's row of leaf masks wider than a word of leaves (80 leaves under 40 parents), some
    // changes past the 64th leaf: the batch's rows must land whole where the page walk's do.
    let pair = StructType::new("Pair").field("A", PropType::U8).field("B", PropType::U8);
    let mut builder = ClassBuilder::new("Many");
    for i in 0..40 {
        builder = builder.property(PropertyDecl::new(format!("P{i}"), PropType::Struct(pair.clone())).push(true));
    }
    let mut s = ClassStore::new(Arc::new(builder.build().unwrap()));
    assert!(s.layout().leaves.len() > 64 && s.layout().parents.len() <= 64);
    let cfg = CompareConfig { push: PushMode::All, parallel: false, ..CompareConfig::default() };
    let (mut a, mut b) = (ShadowState::new(&mut s), ShadowState::new(&mut s));
    let ids: Vec<_> = (0..320).map(|_| s.spawn()).collect();
    let (mut ca, mut cb) = (ChangeSet::new(), ChangeSet::new());
    let every_lane = vec![!0u64; 320 / PAGE_LANES];
    for frame in 0..5u32 {
        for (i, &id) in ids.iter().enumerate() {
            if (i * 7 + frame as usize).is_multiple_of(23) {
                // Two properties an actor, one of them among the last leaves (past the 64th).
                for parent in [i % 32, 32 + i % 8] {
                    let v = (i as u32 + frame) as u8;
                    let value = Value::Struct(vec![Value::U8(v), Value::U8(v.wrapping_mul(3))]);
                    s.set_and_mark(id, parent, &value).unwrap();
                }
            }
        }
        s.begin_tick();
        a.compare(&mut s, &cfg, &mut ca).unwrap();
        b.compare_lanes(&mut s, &cfg, Some(&every_lane), &mut cb).unwrap();
        for id in &ids {
            assert_eq!(ca.changelist(s.layout(), id.index), cb.changelist(s.layout(), id.index), "frame {frame}");
        }
        assert!(ca.changed_actors() > 0);
    }
}

#[test]
fn a_push_frame_leaves_an_unmarked_neighbour_for_its_own_mark() {
    // The batch compares and copies each marked lane through a 16-byte window that holds its
    // neighbours' bytes too: they must go back to the shadow unchanged, in every plane width,
    // so a neighbour changed without a mark is still found when its mark comes.
    let layout = ClassBuilder::new("T")
        .property(PropertyDecl::new("Flag", PropType::Bool).push(true))
        .property(PropertyDecl::new("Byte", PropType::U8).push(true))
        .property(PropertyDecl::new("Short", PropType::U16).push(true))
        .property(PropertyDecl::new("Hp", PropType::F32).push(true))
        .property(PropertyDecl::new("Big", PropType::U64).push(true))
        .property(PropertyDecl::new("Pos", PropType::Vector(crate::schema::VectorQuant::None)).push(true))
        .build()
        .unwrap();
    let mut s = ClassStore::new(Arc::new(layout));
    let mut shadow = ShadowState::new(&mut s);
    let ids: Vec<_> = (0..2 * PAGE_LANES).map(|_| s.spawn()).collect();
    let cfg = CompareConfig { push: PushMode::All, parallel: false, ..CompareConfig::default() };
    let mut changes = ChangeSet::new();
    s.begin_tick();
    shadow.compare(&mut s, &cfg, &mut changes).unwrap();
    let value = |parent: usize, i: usize| match parent {
        0 => Value::Bool(true),
        1 => Value::U8(i as u8 | 1),
        2 => Value::U16(i as u16 | 0x100),
        3 => Value::F32(i as f32 + 0.5),
        4 => Value::U64(i as u64 | 1 << 40),
        _ => Value::Vector([i as f32, 1.0, 2.0]),
    };
    // Every actor changes every property; only every sixteenth is marked (four lanes a page: a
    // quiet page, for the batch).
    for (i, &id) in ids.iter().enumerate() {
        for parent in 0..6 {
            s.set(id, parent, &value(parent, i)).unwrap();
            if i % 16 == 0 {
                s.mark_dirty(id, parent).unwrap();
            }
        }
    }
    let all: Vec<u16> = (1..=6).chain([0]).collect();
    for round in 0..4 {
        s.begin_tick();
        shadow.compare(&mut s, &cfg, &mut changes).unwrap();
        assert!(
            shadow.batch.walk.is_empty() && shadow.last_visit().lanes > 0,
            "round {round}: every page to the batch"
        );
        for (i, id) in ids.iter().enumerate() {
            let expected = if i % 16 == round { all.clone() } else { Vec::new() };
            assert_eq!(changes.changelist(s.layout(), id.index), expected, "round {round}, actor {i}");
        }
        // The next lanes marked, without another write: their changes must still be there.
        for (_, &id) in ids.iter().enumerate().filter(|(i, _)| i % 16 == round + 1) {
            for parent in 0..6 {
                s.mark_dirty(id, parent).unwrap();
            }
        }
    }
    // And what the batch copied is whole: marked again without a write, those lanes are equal
    // (only the lanes marked after the last round report their change).
    for (_, &id) in ids.iter().enumerate().filter(|(i, _)| i % 16 < 4) {
        for parent in 0..6 {
            s.mark_dirty(id, parent).unwrap();
        }
    }
    s.begin_tick();
    shadow.compare(&mut s, &cfg, &mut changes).unwrap();
    for (i, id) in ids.iter().enumerate() {
        let expected = if i % 16 == 4 { all.clone() } else { Vec::new() };
        assert_eq!(changes.changelist(s.layout(), id.index), expected, "marked again: actor {i}");
    }
}

/// A struct with two dynamic arrays, both written in two lanes of a quiet page: the batch lists
/// its array probes by leaf, then lane, so its array changes come in the page walk's order (by
/// leaf, then slot), the order `ChangeSet::array_changes` promises — not lane by lane.
#[test]
fn a_structs_two_arrays_report_their_changes_by_leaf_then_slot_on_the_batch() {
    let kit =
        StructType::new("Kit").field("A", PropType::array(PropType::U32)).field("B", PropType::array(PropType::U16));
    let layout =
        ClassBuilder::new("T").property(PropertyDecl::new("Kit", PropType::Struct(kit)).push(true)).build().unwrap();
    let mut s = ClassStore::new(Arc::new(layout));
    let serial = CompareConfig { push: PushMode::All, parallel: false, ..CompareConfig::default() };
    let (mut batch, mut walk) = (ShadowState::new(&mut s), ShadowState::new(&mut s));
    let ids: Vec<_> = (0..4).map(|_| s.spawn()).collect();
    let (mut cb, mut cw) = (ChangeSet::new(), ChangeSet::new());
    let every_lane = vec![!0u64; 1];
    for frame in 0..2u32 {
        for id in &ids[1..3] {
            let a = Value::Array(vec![Value::U32(id.index + frame)]);
            let kit = Value::Struct(vec![a, Value::Array(vec![Value::U16(frame as u16 + 7)])]);
            s.set(*id, 0, &kit).unwrap();
        }
        s.begin_tick();
        batch.compare(&mut s, &serial, &mut cb).unwrap();
        walk.compare_lanes(&mut s, &serial, Some(&every_lane), &mut cw).unwrap();
        let (a, b) = (s.layout().leaf_index("Kit.A").unwrap(), s.layout().leaf_index("Kit.B").unwrap());
        let order = |c: &ChangeSet| c.array_changes(0).map(|ch| (ch.leaf as usize, ch.slot)).collect::<Vec<_>>();
        let expected = vec![(a, ids[1].index), (a, ids[2].index), (b, ids[1].index), (b, ids[2].index)];
        assert_eq!(order(&cw), expected, "frame {frame}: the page walk");
        assert_eq!(order(&cb), expected, "frame {frame}: the batch");
    }
}
