//! A class of more than 64 leaves: the net layer's leaf masks name groups of leaves
//! (`shadowrep::schema::groups`), so a changed leaf sends its group — and nothing else.

use crate::helpers::*;
use shadowrep::schema::{ClassBuilder, PropType, PropertyDecl};
use shadowrep::value::Value;
use std::collections::{BTreeSet, HashMap};

#[test]
fn a_changed_leaf_of_a_wide_class_sends_its_group_and_nothing_else() {
    // 100 `u32` parents of one condition: 100 leaves in 64 groups, of one parent or two.
    let layout = build(
        (0..100).fold(ClassBuilder::new("Wide"), |b, i| b.property(PropertyDecl::new(format!("P{i}"), PropType::U32))),
    );
    let g = &layout.groups;
    assert_eq!(g.len(), 64);
    let pair = (0..64).find(|&b| g.leaves(b).len() == 2).expect("a group of two");
    let single = (0..64).find(|&b| g.leaves(b).len() == 1).expect("a group of one");
    let mut w = world_with(&layout, &[false, false]);
    let id = w.spawn(0);
    let guid = w.guid(0, id);
    let layouts = HashMap::from([(guid, layout.clone())]);
    let opened = run_and_collect(&mut w, 3, &layouts);
    assert_eq!(opened.len(), 0, "an actor at its defaults opens with no record");
    let mut want_values = vec![0u32; 100];
    for (k, bit) in [pair, single, 63, 0].into_iter().enumerate() {
        // One leaf of the group changes: the last one (of two, the second parent).
        let leaves = g.leaves(bit);
        let parent = layout.leaves[leaves.end - 1].parent;
        let v = 1000 + k as u32;
        set(&mut w, 0, id, parent, Value::U32(v));
        want_values[parent] = v;
        let sent = run_and_collect(&mut w, 2, &layouts);
        for ci in 0..2 {
            let handles: BTreeSet<u16> = sent.iter().filter(|s| s.0 == ci && s.1 == guid).map(|s| s.2).collect();
            let group: BTreeSet<u16> = leaves.clone().map(|l| layout.leaves[l].handle).collect();
            assert_eq!(handles, group, "client {ci}: a change of parent {parent} sends group {bit} ({leaves:?})");
        }
        for (ci, c) in w.clients.iter().enumerate() {
            assert_eq!(u32s(&c.world, guid, 100), want_values, "client {ci} after group {bit}");
        }
    }
}
