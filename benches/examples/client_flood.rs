//! How much one hostile packet costs a client against how many references wait for their
//! target (`unmapped`, up to `MAX_UNMAPPED`) after earlier packets filled the list: the worst
//! 8 KiB packets of null references, of opens and of closes, timed once each.
//! `cargo run --release -p shadowrep-benches --example client_flood`. The work bound itself is
//! asserted by counting, not timing (`shadowrep`'s `client::tests`).

use shadowrep::client::{ClientWorld, Receipt};
use shadowrep::ids::{NetGuid, Seq};
use shadowrep::schema::{ClassBuilder, ClassLayout, PropType, PropertyDecl};
use shadowrep::wire::bunch::{end_array, handle_bits, write_array_head};
use shadowrep::wire::open::{CloseReason, OpenHeader};
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
        write_close_after(&mut self.w, self.prev, guid, CloseReason::Destroyed, None);
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

/// Measures the worst packets' cost against how full `unmapped` is.
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
}
