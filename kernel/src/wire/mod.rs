//! The wire format: a bit writer and reader, and UE's encodings of every leaf kind.
//!
//! ```text
//! bool            1 bit
//! u8/i8/enum      8 bits / the enum's bit width
//! u16..i64, f32,  raw little-endian bits of the width
//!   f64
//! packed int      7-bit groups, low bit of each byte = "more follows" (UE SerializeIntPacked)
//! ranged int      ceil(log2(max)) bits for a value < max (UE SerializeInt)
//! vector Q1/10/100  bits = clamp(ceil_log2(1 + max|round(c × scale)|), 1, MAX) − 1 as a ranged int
//!                 < MAX, then each component + (1 << (bits+1)) as a ranged int < 1 << (bits+2)
//!                 (MAX = 20 / 24 / 30 bits); a component out of range is clamped
//! vector Normal   each component as 16-bit fixed point in [−1, 1]
//! vector None     three raw f32
//! rotator         per axis: 1 bit "non-zero", then the angle as 16 bits of a turn
//! name            packed int (a name-table index)
//! object          NetGUID as a packed int: 0 null, odd static, even dynamic
//! opaque          its bytes
//! ```
//!
//! Values travel in their byte form ([`crate::value`]): the encoder reads a leaf's bytes, the
//! decoder writes them. Decoding never panics: running out of bits is [`WireError::Truncated`].

use std::fmt;

pub mod bunch;
pub mod feedback;
pub mod open;
pub mod packet;
pub mod rpc;

mod bits;
mod leaf;

pub use bits::{ranged_bits, BitReader, BitWriter};
pub use leaf::{compress_axis, decompress_axis, max_leaf_bits, quantize_leaf, read_leaf, write_leaf};

/// Why bits could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireError {
    /// The input ended inside a value.
    Truncated,
    /// A packed int ran longer than its type allows.
    PackedOverflow,
    /// A ranged int was not below its maximum.
    OutOfRange {
        /// The value read.
        value: u64,
        /// The exclusive maximum.
        max: u64,
    },
    /// A value that no encoder produces (the text says which).
    Invalid(&'static str),
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Truncated => write!(f, "input ended inside a value"),
            WireError::PackedOverflow => write!(f, "packed integer longer than 64 bits"),
            WireError::OutOfRange { value, max } => write!(f, "value {value} not below its maximum {max}"),
            WireError::Invalid(what) => write!(f, "invalid {what}"),
        }
    }
}

impl std::error::Error for WireError {}
