//! A floor for one connection's actor-level frame: the least a per-connection loop must do with
//! battle_royale's sizes, timed on one thread, to tell how far the kernel's connections stage is
//! from what its structure allows.
//!
//! ```text
//! world       6 700 due actors of 168 bytes (the kernel's `DueActor`), sorted by key; a
//!             48-byte priority row and a GUID rank each
//! connection  ~490 channel rows of 40 bytes (sorted by key), ~350 relevant due actors, a viewer
//! per frame, per connection (100):
//!   candidates  one walk over the rows merged with the relevant actors: the due ones
//!   rank        UE's priority (time since sent × distance and direction factor) packed with
//!               the GUID rank and the candidate's index into a u64
//!   select      select_nth_unstable to 290, then sort those
//!   sends       until 3 333 bytes: a 10-bit GUID step and the actor's shared bits copied into
//!               a bit buffer, an entry for the acknowledgement, the row's times
//! ```
//!
//! Left out, all of which the kernel does: the relevancy query, packets (headers, splitting,
//! the window), reliability's entries as the client's feedback reads them, opens, closes,
//! conditions, resends, fast arrays, dormancy, leftovers, the rows' upkeep. So the kernel's
//! connections cannot cost less than this; README's actor-level log (session 29) compares them.
//!
//! `cargo run --release -p shadowrep-benches --example connection_floor`

use std::time::Instant;

/// A due record of the kernel's size (168 bytes).
#[derive(Clone, Copy)]
#[repr(C)]
struct Due {
    key: u64,
    guid: u64,
    changed: u64,
    shared: u32,
    bits: u32,
    pad: [u8; 136],
}

/// What ranking reads of a due actor (the kernel's `PriorityInput`, 48 bytes).
#[derive(Clone, Copy)]
#[repr(C)]
struct Prio {
    pos: [f32; 3],
    net_priority: f32,
    pad: [u8; 32],
}

/// A channel row (the kernel's `Channel`, 40 bytes).
#[derive(Clone, Copy, Default)]
struct Row {
    key: u64,
    sent_through: u32,
    relevant_time: f64,
    last_update: f64,
}

/// What a send leaves for the acknowledgement.
#[derive(Clone, Copy, Default)]
struct Entry {
    key: u64,
    leaves: u64,
    frame: u32,
}

struct Conn {
    rows: Vec<Row>,
    relevant: Vec<u32>,
    view: [f32; 3],
    dir: [f32; 3],
    out: Vec<u64>,
    bits: usize,
    entries: Vec<Entry>,
    cands: Vec<(u32, u32)>,
    order: Vec<u64>,
}

const DUE: usize = 6_700;
const CONNECTIONS: usize = 100;
const FRAMES: u32 = 300;
/// Candidates a saturated connection ranks (the kernel's first batch).
const RANKED: usize = 290;
/// A frame's budget at 100 000 B/s and 30 Hz.
const BUDGET_BITS: i64 = 3_333 * 8;
const NO_ROW: u32 = u32::MAX;

fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// UE's distance and direction factor (see `net::priority`).
fn factor(d2: f32, dot: f32) -> f32 {
    let behind = if d2 > 2000.0 * 2000.0 {
        0.2
    } else if d2 > 500.0 * 500.0 {
        0.4
    } else {
        1.0
    };
    let ahead = if d2 < 8000.0 * 8000.0 && dot * dot > 0.5 * d2 {
        2.0
    } else if d2 > 3162.0 * 3162.0 {
        0.4
    } else {
        1.0
    };
    if dot < 0.0 {
        behind
    } else {
        ahead
    }
}

fn write_bits(out: &mut Vec<u64>, bits: &mut usize, v: u64, n: usize) {
    let (w, o) = (*bits / 64, *bits % 64);
    if w + 1 >= out.len() {
        out.resize(w + 2, 0);
    }
    out[w] |= v << o;
    if o + n > 64 {
        out[w + 1] |= v >> (64 - o);
    }
    *bits += n;
}

/// Nanoseconds of each phase, summed over the timed connection-frames.
#[derive(Default)]
struct Phases([u128; 4]);

/// What every connection reads.
struct World {
    due: Vec<Due>,
    prio: Vec<Prio>,
    ranks: Vec<u32>,
    due_of_key: Vec<u32>,
    arena: Vec<u64>,
}

fn frame(c: &mut Conn, w: &World, f: u32, ph: &mut Phases) {
    let World { due, prio, ranks, due_of_key, arena } = w;
    let now = f as f64 / 30.0;
    let t0 = Instant::now();
    c.cands.clear();
    let mut rel = c.relevant.iter().copied().peekable();
    for (ri, row) in c.rows.iter().enumerate() {
        while let Some(d) = rel.next_if(|&d| due[d as usize].key < row.key) {
            c.cands.push((NO_ROW, d));
        }
        let d = due_of_key.get(row.key as usize).copied().unwrap_or(NO_ROW);
        if d != NO_ROW {
            rel.next_if_eq(&d);
            c.cands.push((ri as u32, d));
        }
    }
    c.cands.extend(rel.map(|d| (NO_ROW, d)));
    let t1 = Instant::now();
    c.order.clear();
    for (i, &(ri, d)) in c.cands.iter().enumerate() {
        let p = &prio[d as usize];
        let since = if ri != NO_ROW { (now - c.rows[ri as usize].last_update) as f32 } else { 1.0 };
        let o = [p.pos[0] - c.view[0], p.pos[1] - c.view[1], p.pos[2] - c.view[2]];
        let d2 = o[0] * o[0] + o[1] * o[1] + o[2] * o[2];
        let dot = o[0] * c.dir[0] + o[1] * c.dir[1] + o[2] * c.dir[2];
        let key = ((p.net_priority * since * factor(d2, dot)) as f64 * 65536.0 + 0.5) as u64 & 0xffff_ffff;
        c.order.push((!key) << 32 | u64::from(ranks[d as usize]) << 13 | i as u64);
    }
    let t2 = Instant::now();
    let take = RANKED.min(c.order.len());
    if take < c.order.len() {
        c.order.select_nth_unstable(take);
    }
    c.order[..take].sort_unstable();
    let t3 = Instant::now();
    c.out.clear();
    c.bits = 0;
    c.entries.clear();
    let mut budget = BUDGET_BITS;
    for &o in &c.order[..take] {
        let (ri, d) = c.cands[(o & 0x1fff) as usize];
        let du = &due[d as usize];
        let n = du.bits as usize;
        let src = &arena[du.shared as usize * 2..du.shared as usize * 2 + 2];
        write_bits(&mut c.out, &mut c.bits, du.guid & 0x3ff, 10);
        write_bits(&mut c.out, &mut c.bits, src[0], 64.min(n));
        if n > 64 {
            write_bits(&mut c.out, &mut c.bits, src[1], n - 64);
        }
        c.entries.push(Entry { key: du.key, leaves: du.changed, frame: f });
        if ri != NO_ROW {
            let r = &mut c.rows[ri as usize];
            (r.last_update, r.sent_through, r.relevant_time) = (now, f, now + 0.5);
        }
        budget -= (n + 10) as i64;
        if budget < 0 {
            break;
        }
    }
    let t4 = Instant::now();
    for (p, (a, b)) in ph.0.iter_mut().zip([(t0, t1), (t1, t2), (t2, t3), (t3, t4)]) {
        *p += (b - a).as_nanos();
    }
}

fn main() {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let due: Vec<Due> = (0..DUE)
        .map(|i| Due {
            key: i as u64 * 7,
            guid: next(&mut x) % 50_000,
            changed: next(&mut x) & 0xff,
            shared: i as u32,
            bits: 60 + (next(&mut x) % 40) as u32,
            pad: [0; 136],
        })
        .collect();
    let prio: Vec<Prio> = (0..DUE)
        .map(|_| Prio {
            pos: [(next(&mut x) % 20_000) as f32, (next(&mut x) % 20_000) as f32, 0.0],
            net_priority: 1.0,
            pad: [0; 32],
        })
        .collect();
    let mut by_guid: Vec<u32> = (0..DUE as u32).collect();
    by_guid.sort_by_key(|&i| (due[i as usize].guid, i));
    let mut ranks = vec![0u32; DUE];
    for (r, &i) in by_guid.iter().enumerate() {
        ranks[i as usize] = r as u32;
    }
    let arena: Vec<u64> = (0..DUE * 2).map(|_| next(&mut x)).collect();
    let mut due_of_key = vec![NO_ROW; DUE * 8];
    for (i, d) in due.iter().enumerate() {
        due_of_key[d.key as usize] = i as u32;
    }
    let mut conns: Vec<Conn> = (0..CONNECTIONS)
        .map(|_| {
            // Rows of actors over twice the due list's key range (some not due), ~350 relevant.
            let mut keys: Vec<u64> = (0..500).map(|_| next(&mut x) % (DUE as u64 * 7)).collect();
            keys.sort_unstable();
            keys.dedup();
            let mut relevant: Vec<u32> = (0..357).map(|_| (next(&mut x) % DUE as u64) as u32).collect();
            relevant.sort_unstable();
            relevant.dedup();
            Conn {
                rows: keys.iter().map(|&key| Row { key, ..Row::default() }).collect(),
                relevant,
                view: [(next(&mut x) % 20_000) as f32, (next(&mut x) % 20_000) as f32, 0.0],
                dir: [1.0, 0.0, 0.0],
                out: Vec::new(),
                bits: 0,
                entries: Vec::with_capacity(4096),
                cands: Vec::new(),
                order: Vec::new(),
            }
        })
        .collect();
    let w = World { due, prio, ranks, due_of_key, arena };
    let (mut times, mut ph) = (Vec::new(), Phases::default());
    let warm = FRAMES / 3;
    for f in 0..FRAMES {
        let t = Instant::now();
        let mut discard = Phases::default();
        for c in conns.iter_mut() {
            let phases = if f >= warm { &mut ph } else { &mut discard };
            frame(c, &w, f, phases);
        }
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    let pairs = ((FRAMES - warm) as usize * CONNECTIONS) as u128;
    let cands: usize = conns.iter().map(|c| c.cands.len()).sum();
    let sent: usize = conns.iter().map(|c| c.entries.len()).sum();
    // What the acknowledgements would read, folded so no write above is dead.
    let check = conns.iter().flat_map(|c| &c.entries).fold(0u64, |a, e| a ^ e.key ^ e.leaves ^ u64::from(e.frame));
    println!(
        "{} connections, per connection: {} rows, {} candidates, {} sent (entries' check {check:x})",
        CONNECTIONS,
        conns.iter().map(|c| c.rows.len()).sum::<usize>() / CONNECTIONS,
        cands / CONNECTIONS,
        sent / CONNECTIONS
    );
    println!(
        "per connection (ns): candidates {}, rank {}, select {}, sends {}; a frame's median {:.3} ms on one thread",
        ph.0[0] / pairs,
        ph.0[1] / pairs,
        ph.0[2] / pairs,
        ph.0[3] / pairs,
        times[times.len() / 2]
    );
}
