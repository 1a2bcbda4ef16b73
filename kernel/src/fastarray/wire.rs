//! The delta grammar: what one fast array delta looks like on the wire, its encoder, and the
//! decoder that validates it into a [`Delta`] before anything is applied.
//!
//! ```text
//! delta    := key  base:packed  deletes:count  changed:count
//!             { gap:packed }^deletes               deleted ids, ascending
//!             { gap:packed  item }^changed         changed ids, ascending, each with its item
//! key      := 0:bit  low:16                        the array key's low 16 bits; the receiver
//!                                                  takes the key nearest its newest applied one
//!           | 1:bit  key:packed                    the whole array key
//! base     := array key − base key                 (UE's BaseReplicationKey, as a difference)
//! count    := exp-Golomb: z zero bits, a one bit, z bits; value = (1 << z | bits) − 1;
//!             z ≤ 11 and value ≤ 2048              (0 → 1 bit, 1 → 3 bits, 2048 → 23 bits)
//! gap      := the first id itself, then id − previous id − 1     (ids are ≥ 1)
//! item     := every element leaf of the item layout, in order, as `write_leaf` writes it
//! ```
//!
//! The writer sends the short key only when the array key is less than [`SHORT_KEY_WINDOW`]
//! past the newest array key of a delta the connection acknowledged: the receiver's newest key
//! lies between the two, so the nearest key with those low bits is the right one. (Not past the
//! acknowledged cursor, which a range with nothing for the client moves on without a delta.)
//! One changed item with an id below 16 384 and a short key costs 1 + 16 + 8 + 1 + 3 + 16 = 45
//! bits besides its item.
//!
//! Decoding checks every count against its cap before allocating, grows buffers only as bits are
//! consumed (every entry takes at least 8), and rejects ids of 0, past `u32`, or both deleted and
//! changed; running out of bits is [`WireError::Truncated`]. Nothing panics.

use super::{ArrayKey, FastArrayError, ReplicationId, MAX_CHANGED_PER_DELTA, MAX_DELETED_PER_DELTA};
use crate::schema::ArrayLayout;
use crate::wire::{read_leaf, write_leaf, BitReader, BitWriter, WireError};

/// Bits of a short array key.
pub const SHORT_KEY_BITS: u32 = 16;
/// A short key is sent only while the array key is less than this past the newest key of an
/// acknowledged delta.
pub const SHORT_KEY_WINDOW: u64 = 1 << (SHORT_KEY_BITS - 1);
/// Most leading zeros of a count: 2048 + 1 takes 12 bits.
const COUNT_MAX_ZEROS: u32 = 11;
/// Most bits one id gap takes (a packed `u32`).
pub const ID_MAX_BITS: usize = 40;
/// Most bits a header takes: a long key (flag and a packed `u64`), the base difference, two
/// counts of at most 23 bits.
pub const HEADER_MAX_BITS: usize = 1 + 80 + 80 + 2 * (2 * COUNT_MAX_ZEROS as usize + 1);

/// Most bits one item's leaves take.
pub fn item_max_bits(layout: &ArrayLayout) -> usize {
    layout.elements.iter().map(|e| crate::wire::max_leaf_bits(e.kind)).sum()
}

/// The fixed part of a delta, as the writer knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeltaHeader {
    /// The server's array key when the delta was written.
    pub array_key: ArrayKey,
    /// The connection's cursor the delta starts after.
    pub base_key: ArrayKey,
    /// Send the array key's low bits only (see [`SHORT_KEY_WINDOW`]).
    pub short_key: bool,
}

/// One validated delta.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delta {
    /// The server's array key when it was written (orders deltas by writing time).
    pub array_key: ArrayKey,
    /// The cursor it starts after.
    pub base_key: ArrayKey,
    /// Deleted ids, ascending.
    pub deleted: Vec<ReplicationId>,
    /// Added or changed ids, ascending.
    pub changed: Vec<ReplicationId>,
    /// The changed items' bytes, one stride each, in the order of `changed`.
    pub items: Vec<u8>,
}

impl Delta {
    /// The changed items with their bytes.
    pub fn changed_items(&self) -> impl Iterator<Item = (ReplicationId, &[u8])> {
        let stride = if self.changed.is_empty() { 1 } else { self.items.len() / self.changed.len() };
        self.changed.iter().copied().zip(self.items.chunks_exact(stride.max(1)))
    }
}

/// Writes a count (≤ 2048) as exp-Golomb.
pub(crate) fn write_count(w: &mut BitWriter, n: usize) {
    let v = n as u64 + 1;
    let z = 63 - v.leading_zeros();
    w.write_bits(0, z);
    w.write_bool(true);
    w.write_bits(v, z);
}

/// Reads an exp-Golomb count, rejecting more than [`COUNT_MAX_ZEROS`] leading zeros.
fn read_count(r: &mut BitReader<'_>) -> Result<u64, WireError> {
    let mut z = 0;
    while !r.read_bool()? {
        z += 1;
        if z > COUNT_MAX_ZEROS {
            return Err(WireError::OutOfRange { value: 1 << z, max: 1 << (COUNT_MAX_ZEROS + 1) });
        }
    }
    Ok(((1u64 << z) | r.read_bits(z)?) - 1)
}

/// Writes ascending ids as gaps.
struct GapWriter(u64);

impl GapWriter {
    fn put(&mut self, w: &mut BitWriter, id: ReplicationId) {
        debug_assert!(id.0 as u64 >= self.0 && id.0 > 0, "ids ascending and ≥ 1");
        w.write_packed(id.0 as u64 - self.0);
        self.0 = id.0 as u64 + 1;
    }
}

/// Reads ids written by [`GapWriter`].
struct GapReader(u64);

impl GapReader {
    fn next(&mut self, r: &mut BitReader<'_>) -> Result<ReplicationId, WireError> {
        let id = self.0.checked_add(r.read_packed()?).ok_or(WireError::Invalid("replication id"))?;
        if id == 0 || id > u32::MAX as u64 {
            return Err(WireError::Invalid("replication id"));
        }
        self.0 = id + 1;
        Ok(ReplicationId(id as u32))
    }
}

/// Writes one delta. `deleted` and `changed` must be ascending by id and within the caps;
/// each changed item is one stride of bytes.
pub fn write_delta<'a>(
    w: &mut BitWriter,
    layout: &ArrayLayout,
    header: DeltaHeader,
    deleted: &[ReplicationId],
    changed: impl ExactSizeIterator<Item = (ReplicationId, &'a [u8])>,
) {
    debug_assert!(deleted.len() <= MAX_DELETED_PER_DELTA && changed.len() <= MAX_CHANGED_PER_DELTA);
    let key = header.array_key.0;
    if header.short_key {
        w.write_bool(false);
        w.write_bits(key, SHORT_KEY_BITS);
    } else {
        w.write_bool(true);
        w.write_packed(key);
    }
    w.write_packed(key - header.base_key.0);
    write_count(w, deleted.len());
    write_count(w, changed.len());
    let mut gaps = GapWriter(0);
    for &id in deleted {
        gaps.put(w, id);
    }
    let mut gaps = GapWriter(0);
    for (id, item) in changed {
        gaps.put(w, id);
        write_item(w, layout, item);
    }
}

/// Writes one item's element leaves.
pub fn write_item(w: &mut BitWriter, layout: &ArrayLayout, item: &[u8]) {
    for el in &layout.elements {
        write_leaf(w, el.kind, &item[el.offset..el.offset + el.kind.byte_size()]);
    }
}

/// The array key a short key names: the one with these low bits nearest `newest`.
fn widen_key(low: u64, newest: ArrayKey) -> Result<ArrayKey, WireError> {
    let diff = (low as u16).wrapping_sub(newest.0 as u16) as i16;
    newest.0.checked_add_signed(diff as i64).map(ArrayKey).ok_or(WireError::Invalid("array key"))
}

/// Reads and validates one delta. `newest` is the newest array key the receiver applied (it
/// widens a short key).
pub fn read_delta(r: &mut BitReader<'_>, layout: &ArrayLayout, newest: ArrayKey) -> Result<Delta, FastArrayError> {
    let array_key =
        if r.read_bool()? { ArrayKey(r.read_packed()?) } else { widen_key(r.read_bits(SHORT_KEY_BITS)?, newest)? };
    let back = r.read_packed()?;
    let base_key = ArrayKey(array_key.0.checked_sub(back).ok_or(WireError::Invalid("base key"))?);
    let deletes = read_count(r)?;
    if deletes > MAX_DELETED_PER_DELTA as u64 {
        return Err(FastArrayError::TooManyDeleted(deletes));
    }
    let changes = read_count(r)?;
    if changes > MAX_CHANGED_PER_DELTA as u64 {
        return Err(FastArrayError::TooManyChanged(changes));
    }
    // Every entry takes at least 8 bits (its gap), so capacity follows the input actually there.
    let room = r.remaining() / 8;
    let mut deleted = Vec::with_capacity((deletes as usize).min(room));
    let mut gaps = GapReader(0);
    for _ in 0..deletes {
        deleted.push(gaps.next(r)?);
    }
    let stride = layout.stride;
    let room = r.remaining() / 8;
    let mut changed = Vec::with_capacity((changes as usize).min(room));
    let mut items = Vec::with_capacity((changes as usize).min(room) * stride);
    let mut gaps = GapReader(0);
    for _ in 0..changes {
        changed.push(gaps.next(r)?);
        let at = items.len();
        items.resize(at + stride, 0);
        let item = &mut items[at..];
        for el in &layout.elements {
            read_leaf(r, el.kind, &mut item[el.offset..el.offset + el.kind.byte_size()])?;
        }
    }
    if sorted_overlap(&deleted, &changed) {
        return Err(WireError::Invalid("an id both deleted and changed").into());
    }
    Ok(Delta { array_key, base_key, deleted, changed, items })
}

/// Whether two ascending id lists share an id.
fn sorted_overlap(a: &[ReplicationId], b: &[ReplicationId]) -> bool {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => return true,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_round_trip_and_cost_what_the_grammar_says() {
        for (n, bits) in [(0usize, 1usize), (1, 3), (2, 3), (3, 5), (2046, 21), (2047, 23), (2048, 23)] {
            let mut w = BitWriter::new();
            write_count(&mut w, n);
            assert_eq!(w.len_bits(), bits, "count {n}");
            let bytes = w.into_bytes();
            assert_eq!(read_count(&mut BitReader::new(&bytes)), Ok(n as u64));
        }
    }

    #[test]
    fn a_count_past_eleven_zeros_is_rejected_before_reading_on() {
        let mut w = BitWriter::new();
        w.write_bits(0, COUNT_MAX_ZEROS + 1);
        w.write_bits(u64::MAX, 40);
        let bytes = w.into_bytes();
        assert!(matches!(read_count(&mut BitReader::new(&bytes)), Err(WireError::OutOfRange { .. })));
        // Eleven zeros is the largest count form: 4094 decodes (the caller rejects it by cap).
        let mut w = BitWriter::new();
        w.write_bits(0, COUNT_MAX_ZEROS);
        w.write_bool(true);
        w.write_bits(u64::MAX, COUNT_MAX_ZEROS);
        let bytes = w.into_bytes();
        assert_eq!(read_count(&mut BitReader::new(&bytes)), Ok(4094));
    }

    #[test]
    fn short_keys_widen_to_the_nearest_key() {
        assert_eq!(widen_key(5, ArrayKey(0)), Ok(ArrayKey(5)));
        assert_eq!(widen_key(0x0002, ArrayKey(0x1_fffe)), Ok(ArrayKey(0x2_0002)), "across a wrap");
        assert_eq!(widen_key(0xfffe, ArrayKey(0x2_0002)), Ok(ArrayKey(0x1_fffe)), "back across a wrap");
        let far = SHORT_KEY_WINDOW - 1;
        assert_eq!(widen_key(far, ArrayKey(0)), Ok(ArrayKey(far)), "the window's edge");
        assert!(widen_key(0xffff, ArrayKey(0)).is_err(), "below key 0");
    }

    #[test]
    fn overlap_finds_a_shared_id() {
        let ids = |v: &[u32]| v.iter().map(|&i| ReplicationId(i)).collect::<Vec<_>>();
        assert!(!sorted_overlap(&ids(&[1, 3, 5]), &ids(&[2, 4, 6])));
        assert!(sorted_overlap(&ids(&[1, 3, 5]), &ids(&[0, 5])));
    }
}
