//! The FastArray inventory workload and the two ratios the `open_world` profile reports.
//!
//! An inventory of `items` slots `{ Item: object, Count: u16, Durability: f32, Slot: u16 }` is a
//! [`FastArray`] with one connection, fully sent and acknowledged. Each measured step changes one
//! random item:
//!
//! - **fast array**: `item_mut` (the mark) + `write_delta` (find and encode) + `acked`;
//! - **full compare**: the same item written into a plain array, then every leaf of every element
//!   compared against a shadow copy, changed leaves copied back (UE's element-wise compare of a
//!   plain dynamic array walks its element commands leaf by leaf the same way) — the baseline of
//!   `fast_array_compare_ratio`. Two cheaper floors are measured beside it: one `memcmp` per
//!   element row, and one `memcmp` of the whole array.
//!
//! ```text
//! fast_array_bytes_ratio   = bits of a one-item delta / bits of the whole array sent once
//! fast_array_compare_ratio = time of a one-item delta / time of a full element-wise compare
//! ```
//!
//! The full array's bits are what the first send to a new connection costs (every item, in the
//! same delta grammar, over successive updates).

use crate::workload::median;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use shadowrep::fastarray::{item_layout, BaseId, FastArray, ReplicationId};
use shadowrep::schema::{ArrayLayout, PropType, StructType};
use shadowrep::wire::BitWriter;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

/// The inventory item layout.
pub fn inventory_layout() -> Arc<ArrayLayout> {
    let s = StructType::new("InventorySlot")
        .field("Item", PropType::Object)
        .field("Count", PropType::U16)
        .field("Durability", PropType::F32)
        .field("Slot", PropType::U16);
    Arc::new(item_layout("Inventory", PropType::Struct(s)).expect("a valid item layout"))
}

/// A fully replicated inventory and its plain-array twin with a shadow copy.
pub struct InventoryWorkload {
    /// The server's fast array.
    pub server: FastArray,
    /// Its one connection.
    pub base: BaseId,
    layout: Arc<ArrayLayout>,
    /// The plain array: the same items in the same order.
    live: Vec<u8>,
    /// The plain array's shadow.
    shadow: Vec<u8>,
    /// Bits of the first send (every item).
    full_bits: usize,
    /// Updates the first send took.
    first_send_updates: usize,
    writer: BitWriter,
    rng: ChaCha8Rng,
}

impl InventoryWorkload {
    /// `items` items, sent to the connection and acknowledged.
    pub fn new(items: usize, seed: u64) -> Self {
        let layout = inventory_layout();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut server = FastArray::new(layout.clone());
        let mut live = Vec::with_capacity(items * layout.stride);
        for slot in 0..items {
            let mut item = vec![0u8; layout.stride];
            let guid = 2 * (1000 + rng.random_range(0..4000u64)); // a dynamic item definition
            put(&layout, &mut item, 0, &guid.to_le_bytes());
            put(&layout, &mut item, 1, &rng.random_range(1..100u16).to_le_bytes());
            put(&layout, &mut item, 2, &rng.random_range(0.0..1.0f32).to_le_bytes());
            put(&layout, &mut item, 3, &(slot as u16).to_le_bytes());
            server.add(&item).expect("below the item cap");
            live.extend_from_slice(&item);
        }
        let base = server.connect();
        let mut writer = BitWriter::new();
        let (mut full_bits, mut first_send_updates) = (0, 0);
        while let Some(token) = server.write_delta(base, &mut writer).expect("connected") {
            full_bits += writer.len_bits();
            first_send_updates += 1;
            writer.clear();
            server.acked(base, token);
        }
        let shadow = live.clone();
        Self { server, base, layout, live, shadow, full_bits, first_send_updates, writer, rng }
    }

    /// Bits the first send of the whole array took.
    pub fn full_array_bits(&self) -> usize {
        self.full_bits
    }

    /// Updates the first send took (at most 2048 items each).
    pub fn first_send_updates(&self) -> usize {
        self.first_send_updates
    }

    /// Changes one random item's count and durability, then finds, encodes and acknowledges its
    /// delta; returns the delta's bits.
    pub fn one_item_delta(&mut self) -> usize {
        let id = ReplicationId(self.rng.random_range(1..=self.server.len() as u32));
        let (count, durability) = (self.rng.random::<u16>(), self.rng.random::<f32>());
        let item = self.server.item_mut(id).expect("a live id");
        put(&self.layout, item, 1, &count.to_le_bytes());
        put(&self.layout, item, 2, &durability.to_le_bytes());
        self.writer.clear();
        let token = self.server.write_delta(self.base, &mut self.writer).expect("connected").expect("one change");
        self.server.acked(self.base, token);
        self.writer.len_bits()
    }

    /// Changes the count of one random item of the plain array; returns the stride.
    fn change_one_row(&mut self) -> usize {
        let stride = self.layout.stride;
        let row = self.rng.random_range(0..self.live.len() / stride);
        let count = self.rng.random::<u16>();
        put(&self.layout, &mut self.live[row * stride..(row + 1) * stride], 1, &count.to_le_bytes());
        stride
    }

    /// Changes one random item of the plain array, then compares every leaf of every element
    /// with the shadow, copying changed leaves; returns the changed leaves.
    pub fn full_compare(&mut self) -> usize {
        let stride = self.change_one_row();
        let mut changed = 0;
        for (live, shadow) in self.live.chunks_exact(stride).zip(self.shadow.chunks_exact_mut(stride)) {
            for el in &self.layout.elements {
                let r = el.offset..el.offset + el.kind.byte_size();
                if live[r.clone()] != shadow[r.clone()] {
                    shadow[r.clone()].copy_from_slice(&live[r]);
                    changed += 1;
                }
            }
        }
        changed
    }

    /// Compares the plain array with its shadow element by element as whole rows (one `memcmp`
    /// per element, leaves only inside a differing row); returns the differing rows.
    pub fn row_compare(&mut self) -> usize {
        let stride = self.change_one_row();
        let mut changed = 0;
        for (live, shadow) in self.live.chunks_exact(stride).zip(self.shadow.chunks_exact_mut(stride)) {
            if live != shadow {
                shadow.copy_from_slice(live);
                changed += 1;
            }
        }
        changed
    }

    /// Compares the plain array with its shadow as one block of bytes (a lower bound of any
    /// compare that reads every item); returns whether they are equal.
    pub fn block_compare(&self) -> bool {
        self.live == self.shadow
    }
}

/// Writes element leaf `leaf`'s bytes into `item`.
fn put(layout: &ArrayLayout, item: &mut [u8], leaf: usize, bytes: &[u8]) {
    let el = &layout.elements[leaf];
    item[el.offset..el.offset + el.kind.byte_size()].copy_from_slice(&bytes[..el.kind.byte_size()]);
}

/// What [`measure_ratios`] found.
#[derive(Clone, Debug)]
pub struct FastArrayRatios {
    /// Items in the inventory.
    pub items: usize,
    /// Bits of the item's leaves.
    pub item_bits: usize,
    /// Median bits of a one-item delta.
    pub one_item_delta_bits: usize,
    /// Most bits of a measured one-item delta.
    pub max_one_item_delta_bits: usize,
    /// Bits of the whole array sent once.
    pub full_array_bits: usize,
    /// Updates the first send took.
    pub first_send_updates: usize,
    /// `one_item_delta_bits / full_array_bits`.
    pub fast_array_bytes_ratio: f64,
    /// Median nanoseconds of one one-item delta (mark, find, encode, acknowledge).
    pub delta_ns: f64,
    /// Median nanoseconds of one full element-wise compare.
    pub full_compare_ns: f64,
    /// `delta_ns / full_compare_ns`.
    pub fast_array_compare_ratio: f64,
    /// Median nanoseconds of comparing the whole plain array with its shadow as one block
    /// (`memcmp`): a floor no element-wise compare beats.
    pub block_compare_ns: f64,
    /// Median nanoseconds of [`InventoryWorkload::row_compare`] (one `memcmp` per element).
    pub row_compare_ns: f64,
}

/// Measures both ratios on an inventory of `items` over `rounds` timed rounds (each a batch of
/// deltas and a batch of compares; medians are reported).
pub fn measure_ratios(items: usize, rounds: usize) -> FastArrayRatios {
    const DELTAS_PER_ROUND: usize = 256;
    const COMPARES_PER_ROUND: usize = 4;
    let mut w = InventoryWorkload::new(items, 42);
    let item_bits = item_bits(&w.layout, &w.live[..w.layout.stride]);
    let (mut bits, mut delta_ns, mut compare_ns) = (Vec::new(), Vec::new(), Vec::new());
    let (mut block_ns, mut row_ns) = (Vec::new(), Vec::new());
    for _ in 0..rounds.max(1) {
        let t = Instant::now();
        for _ in 0..DELTAS_PER_ROUND {
            bits.push(black_box(w.one_item_delta()));
        }
        delta_ns.push(t.elapsed().as_nanos() as f64 / DELTAS_PER_ROUND as f64);
        let t = Instant::now();
        for _ in 0..COMPARES_PER_ROUND {
            black_box(w.full_compare());
        }
        compare_ns.push(t.elapsed().as_nanos() as f64 / COMPARES_PER_ROUND as f64);
        let t = Instant::now();
        for _ in 0..COMPARES_PER_ROUND {
            black_box(black_box(&w).block_compare());
        }
        block_ns.push(t.elapsed().as_nanos() as f64 / COMPARES_PER_ROUND as f64);
        let t = Instant::now();
        for _ in 0..COMPARES_PER_ROUND {
            black_box(w.row_compare());
        }
        row_ns.push(t.elapsed().as_nanos() as f64 / COMPARES_PER_ROUND as f64);
    }
    let max_bits = bits.iter().copied().max().unwrap_or(0);
    let one = median(bits);
    let (delta_ns, full_compare_ns) = (median(delta_ns), median(compare_ns));
    FastArrayRatios {
        items,
        item_bits,
        one_item_delta_bits: one,
        max_one_item_delta_bits: max_bits,
        full_array_bits: w.full_array_bits(),
        first_send_updates: w.first_send_updates(),
        fast_array_bytes_ratio: one as f64 / w.full_array_bits().max(1) as f64,
        delta_ns,
        full_compare_ns,
        fast_array_compare_ratio: delta_ns / full_compare_ns.max(f64::MIN_POSITIVE),
        block_compare_ns: median(block_ns),
        row_compare_ns: median(row_ns),
    }
}

/// Bits one item's leaves take on the wire.
fn item_bits(layout: &ArrayLayout, item: &[u8]) -> usize {
    let mut w = BitWriter::new();
    shadowrep::fastarray::wire::write_item(&mut w, layout, item);
    w.len_bits()
}
