//! How much one hostile packet costs a client against how many references wait for their
//! target (`unmapped`, up to `MAX_UNMAPPED`) after earlier packets filled the list: the worst
//! 8 KiB packets of null references, of opens and of closes, timed once each.
//! Then the worst packets against the client's other per-packet lists: the closes of one owner's
//! sub-objects (thousands, opened by earlier packets), and packets of many bunches whose actors
//! open with another class (conflicts) or were torn off (tear-offs undone).
//! `cargo run --release -p shadowrep-benches --example client_flood`. The work bound itself is
//! asserted by counting, not timing (`shadowrep`'s `client::tests`).

use shadowrep::client::{ClientWorld, Receipt};
use shadowrep::ids::{NetGuid, Seq};
use shadowrep::schema::{ClassBuilder, ClassLayout, PropType, PropertyDecl};
use shadowrep::wire::bunch::{end_array, handle_bits, write_array_head};
use shadowrep::wire::open::{CloseReason, OpenHeader, OpenKind};
use shadowrep::wire::packet::{begin_packet, end_packet, write_bunch_after, write_close_after, MAX_MTU};
use shadowrep::wire::BitWriter;
use std::sync::Arc;

/// Elements the probe's array may hold (8 bytes each, within the schema's byte cap).
const REFS: u16 = 8000;

fn layout() -> Arc<ClassLayout> {
    Arc::new(
        ClassBuilder::new("Ref")
            .property(PropertyDecl::new("Target", PropType::Object))
            .property(PropertyDecl::new("Refs", PropType::Array { element: Box::new(PropType::Object), max_len: REFS }))
            .build()
            .expect("valid layout"),
    )
}

/// A hand-made packet: its bits and the GUID of its last bunch.
struct Craft {
    w: BitWriter,
    prev: NetGuid,
}

impl Craft {
    fn new(seq: u32) -> Self {
        let mut w = BitWriter::new();
        begin_packet(&mut w, Seq(seq));
        Self { w, prev: NetGuid(0) }
    }

    /// Bytes written so far, with room for the end bit.
    fn len(&self) -> usize {
        self.w.len_bits().div_ceil(8) + 1
    }

    fn bunch(&mut self, guid: NetGuid, open: bool, body: &BitWriter) {
        write_bunch_after(&mut self.w, self.prev, guid, open.then(|| OpenHeader::spawn(0)).as_ref(), body);
        self.prev = guid;
    }

    fn close(&mut self, guid: NetGuid) {
        self.close_for(guid, CloseReason::Destroyed);
    }

    fn close_for(&mut self, guid: NetGuid, reason: CloseReason) {
        write_close_after(&mut self.w, self.prev, guid, reason, None);
        self.prev = guid;
    }

    fn open_as(&mut self, guid: NetGuid, open: &OpenHeader) {
        write_bunch_after(&mut self.w, self.prev, guid, Some(open), &BitWriter::new());
        self.prev = guid;
    }

    fn finish(mut self) -> Vec<u8> {
        end_packet(&mut self.w);
        let bytes = self.w.into_bytes();
        assert!(bytes.len() <= MAX_MTU, "{} bytes", bytes.len());
        bytes
    }
}

/// An array record of `targets` (element `e` refers to `targets[e]`).
fn refs_record(layout: &ClassLayout, targets: &[u64]) -> BitWriter {
    let mut body = BitWriter::new();
    write_array_head(&mut body, handle_bits(layout), 2, targets.len());
    for (e, t) in targets.iter().enumerate() {
        body.write_packed(e as u64 + 1);
        body.write_packed(*t);
    }
    end_array(&mut body);
    body
}

/// The first dynamic GUID no filler nor target uses.
const TARGETS: u64 = 1 << 40;

/// A client whose `unmapped` holds `n` forged references, from actors 2, 4, … (1024 each), each
/// waiting for its own never-opened target; returns it and the next sequence number.
fn filled(layout: &Arc<ClassLayout>, n: usize) -> (ClientWorld, u32) {
    let mut c = ClientWorld::new(std::slice::from_ref(layout), &[layout.checksum]).expect("same layout");
    let mut seq = 1;
    let mut owner = 2u64;
    let mut next_target = TARGETS;
    while c.unmapped_count() < n {
        let k = (n - c.unmapped_count()).min(1024);
        let targets: Vec<u64> = (0..k)
            .map(|_| {
                next_target += 2;
                next_target
            })
            .collect();
        let mut p = Craft::new(seq);
        p.bunch(NetGuid(owner), true, &refs_record(layout, &targets));
        assert_eq!(c.receive(&p.finish()), Ok(Receipt::Applied { bunches: 1, skipped: 0 }));
        seq += 1;
        owner += 2;
    }
    assert_eq!(c.unmapped_count(), n);
    (c, seq)
}

/// Worst packets: one bunch of an actor with nothing waiting whose array record carries as many
/// null references as fit (each element may replace a waiting reference); opens of as many new
/// actors as fit (each may be a waiting reference's target); closes of as many actors as fit
/// (each drops the references it owns).
fn worst_packets(layout: &ClassLayout, seq: u32, fresh: u64) -> (Vec<u8>, Vec<u8>, Vec<u8>, usize, usize, usize) {
    // Records: element e null, as many as fit in the largest packet.
    let mut n = REFS as usize;
    let records = loop {
        let mut p = Craft::new(seq);
        p.bunch(NetGuid(fresh), true, &refs_record(layout, &vec![0; n]));
        if p.len() <= MAX_MTU {
            break p.finish();
        }
        n -= 64;
    };
    let records_n = n;
    // Spawns: opens with no records, of GUIDs that are nobody's target.
    let mut p = Craft::new(seq + 1);
    let mut spawns = 0;
    let mut g = fresh + 2;
    while p.len() + 40 < MAX_MTU {
        p.bunch(NetGuid(g), true, &BitWriter::new());
        g += 2;
        spawns += 1;
    }
    let spawns_packet = p.finish();
    // Closes of those actors.
    let mut p = Craft::new(seq + 2);
    let mut closes = 0;
    let mut g = fresh + 2;
    while p.len() + 16 < MAX_MTU && closes < spawns {
        p.close(NetGuid(g));
        g += 2;
        closes += 1;
    }
    (records, spawns_packet, p.finish(), records_n, spawns, closes)
}

/// Times receiving `p` (which must apply).
fn timed(c: &mut ClientWorld, p: &[u8]) -> std::time::Duration {
    let t = std::time::Instant::now();
    let r = c.receive(p);
    let e = t.elapsed();
    assert!(matches!(r, Ok(Receipt::Applied { .. })), "{r:?}");
    e
}

/// Sends `n` items, 1024 a packet, from packet `seq` on — `f` writes item `i` into its packet —
/// and returns the next packet's number.
fn batches(c: &mut ClientWorld, mut seq: u32, n: u64, f: impl Fn(&mut Craft, u64)) -> u32 {
    for first in (0..n).step_by(1024) {
        let mut p = Craft::new(seq);
        for i in first..(first + 1024).min(n) {
            f(&mut p, i);
        }
        timed(c, &p.finish());
        seq += 1;
    }
    seq
}

/// Owner 2 with `n` sub-objects (opened 1024 a packet), then one 8 KiB packet of as many of
/// their closes as fit, last opened first. Returns the closes, their bytes and the time.
fn sub_object_closes(layout: &Arc<ClassLayout>, n: u64) -> (usize, usize, std::time::Duration) {
    let mut c = ClientWorld::new(std::slice::from_ref(layout), &[layout.checksum]).expect("same layout");
    let owner = NetGuid(2);
    let mut p = Craft::new(1);
    p.bunch(owner, true, &BitWriter::new());
    timed(&mut c, &p.finish());
    let sub = |i: u64| NetGuid(4 + 2 * i);
    let open = OpenHeader { class: 0, kind: OpenKind::SubObject { owner }, autonomous: false };
    let seq = batches(&mut c, 2, n, |p, i| p.open_as(sub(i), &open));
    assert_eq!(c.sub_objects(owner).len() as u64, n);
    let mut p = Craft::new(seq);
    let mut closes = 0;
    while p.len() + 16 < MAX_MTU && closes < n {
        // From the last opened: retaining from the front finds each late.
        p.close(sub(n - 1 - closes));
        closes += 1;
    }
    let bytes = p.finish();
    let t = timed(&mut c, &bytes);
    assert_eq!(c.sub_objects(owner).len() as u64, n - closes);
    (closes as usize, bytes.len(), t)
}

/// `n` actors of class 0 (1024 opened a packet), then one packet as full as 8 KiB allows: the
/// first half of it opens of the first actors with class 1 (each a conflict), the rest plain
/// bunches of the other actors (each checked against the conflicts so far). Returns the
/// conflicting opens, the plain bunches, the bytes and the time.
fn conflicts(layouts: &[Arc<ClassLayout>], n: u64) -> (usize, usize, usize, std::time::Duration) {
    let sums: Vec<u64> = layouts.iter().map(|l| l.checksum).collect();
    let mut c = ClientWorld::new(layouts, &sums).expect("same layouts");
    let actor = |i: u64| NetGuid(2 + 2 * i);
    let seq = batches(&mut c, 1, n, |p, i| p.bunch(actor(i), true, &BitWriter::new()));
    let mut p = Craft::new(seq);
    let (mut opens, mut plains) = (0, 0);
    let other = OpenHeader::spawn(1);
    while p.len() < MAX_MTU / 2 {
        p.open_as(actor(opens), &other);
        opens += 1;
    }
    while p.len() + 16 < MAX_MTU && opens + plains < n {
        p.bunch(actor(opens + plains), false, &BitWriter::new());
        plains += 1;
    }
    let bytes = p.finish();
    let t = timed(&mut c, &bytes);
    assert_eq!(c.stats().open_conflicts, opens);
    (opens as usize, plains as usize, bytes.len(), t)
}

/// `n` actors opened, then torn off (each close in one packet), then one packet of as many plain
/// bunches of them as fit: each proves its tear-off forged and is checked against those so far.
/// Returns the bunches, the bytes and the time.
fn untorn(layout: &Arc<ClassLayout>, n: u64) -> (usize, usize, std::time::Duration) {
    let mut c = ClientWorld::new(std::slice::from_ref(layout), &[layout.checksum]).expect("same layout");
    let actor = |i: u64| NetGuid(2 + 2 * i);
    let seq = batches(&mut c, 1, n, |p, i| p.bunch(actor(i), true, &BitWriter::new()));
    let seq = batches(&mut c, seq, n, |p, i| p.close_for(actor(i), CloseReason::TornOff));
    let mut p = Craft::new(seq);
    let mut plains = 0;
    while p.len() + 16 < MAX_MTU && plains < n {
        p.bunch(actor(plains), false, &BitWriter::new());
        plains += 1;
    }
    let bytes = p.finish();
    let t = timed(&mut c, &bytes);
    assert_eq!(c.stats().tear_offs_undone, plains);
    (plains as usize, bytes.len(), t)
}

/// Measures the worst packets' cost against how full `unmapped` is, then against an owner's
/// sub-objects, and with many conflicting opens or undone tear-offs in one packet.
fn main() {
    let layout = layout();
    for n in [0usize, 1024, 4096, 16384] {
        let (mut c, seq) = filled(&layout, n);
        let (records, spawns, closes, rn, sn, cn) = worst_packets(&layout, seq, 2 * TARGETS);
        let mut times = Vec::new();
        for p in [&records, &spawns, &closes] {
            let t = std::time::Instant::now();
            let r = c.receive(p);
            times.push(t.elapsed());
            assert!(matches!(r, Ok(Receipt::Applied { .. })), "{r:?}");
        }
        assert_eq!(c.unmapped_count(), n);
        println!(
            "unmapped {n:>5}: {rn} null refs in {} B: {:>9.3?}; {sn} spawns in {} B: {:>9.3?}; {cn} closes in {} B: {:>9.3?}",
            records.len(),
            times[0],
            spawns.len(),
            times[1],
            closes.len(),
            times[2]
        );
    }
    for n in [1024u64, 4096, 16384, 65536] {
        let (cn, bytes, t) = sub_object_closes(&layout, n);
        println!("sub-objects {n:>5}: {cn} of their closes in {bytes} B: {t:>9.3?}");
    }
    let second = Arc::new(
        ClassBuilder::new("Other")
            .property(PropertyDecl::new("Target", PropType::Object))
            .build()
            .expect("valid layout"),
    );
    let (on, pn, bytes, t) = conflicts(&[layout.clone(), second], 8192);
    println!("conflicts: {on} conflicting opens and {pn} plain bunches in {bytes} B: {t:>9.3?}");
    let (pn, bytes, t) = untorn(&layout, 8192);
    println!("tear-offs undone: {pn} plain bunches in {bytes} B: {t:>9.3?}");
}
