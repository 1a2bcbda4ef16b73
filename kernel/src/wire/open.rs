//! What a channel's open and close say (UE's `SerializeNewActor` and channel close reasons).
//!
//! ```text
//! open   := class:packed  kind:2 ( spawn role | path role | owner:packed | owner:packed )
//!                               0 spawn, 1 static, 2 sub-object, 3 fast array (class: its kind)
//! role   := autonomous:bit      the receiving client's role: 1 autonomous proxy, 0 simulated
//! spawn  := location:vector(Q100)  rotation:rotator  scaled:bit [scale:vector(Q10)]
//!           moving:bit [velocity:vector(Q1)]
//! path   := len:packed(≤ MAX_PATH_BYTES) byte{len}            UTF-8
//! close  := reason:2  [path]        the path only for a static actor destroyed (reason 0)
//! export := a bunch of GUID 1 (EXPORT_GUID) whose body is  0:bit  guid:packed(static)  path
//!           (a body starting with a 1 bit is a call: super::rpc)
//! ```
//!
//! A dynamic actor opens with its spawn info — UE's quantisation: location to two decimals,
//! rotation as three compressed 16-bit axes (a zero axis costs one bit), scale to one decimal and
//! velocity to whole units, each of the last two left out at its default (1 and 0) — and the client
//! creates it from that before applying any property. A static actor (placed in the level, odd
//! NetGUID) opens with its path instead: the client already has it and binds the GUID to it. A
//! close says why the channel ends: the actor is destroyed (or no longer relevant: the client
//! destroys its copy), went dormant, or was torn off (in both of those the client keeps it). A
//! sub-object (a component, a weapon) opens with its owner actor's GUID: the client creates it
//! on first sight, linked to that owner, and destroys it with the owner. A
//! destroyed static actor's close carries its path, so a client that never bound the GUID —
//! one that joined after the destruction — still finds the copy to destroy.
//!
//! An actor's open ends with the receiving client's role (UE's `RemoteRole` as that connection
//! gets it: autonomous for the owner of an actor whose owner holds an autonomous proxy,
//! simulated for everyone else — UE's downgrade for non-owners). It is the one bit of an open
//! that differs between connections: the rest is encoded once ([`EncodedOpen`]) and the bit
//! set per bunch. A role that changes on an open channel goes in the open sent again
//! ([`crate::net`]'s role records); a client applies the role of the newest open it reads.

use super::{read_leaf, write_leaf, BitReader, BitWriter, WireError};
use crate::ids::NetGuid;
use crate::schema::{LeafKind, VectorQuant};
use std::sync::Arc;

/// Longest static-actor path, in bytes (bounds the open header, and what a decode allocates).
pub const MAX_PATH_BYTES: usize = 128;

/// Where and how a dynamic actor appears (UE's spawn info).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpawnInfo {
    /// Location.
    pub location: [f32; 3],
    /// Rotation in degrees (pitch, yaw, roll).
    pub rotation: [f32; 3],
    /// Scale (1 on every axis by default).
    pub scale: [f32; 3],
    /// Velocity.
    pub velocity: [f32; 3],
}

impl Default for SpawnInfo {
    fn default() -> Self {
        Self { location: [0.0; 3], rotation: [0.0; 3], scale: [1.0; 3], velocity: [0.0; 3] }
    }
}

impl SpawnInfo {
    /// The values as a receiver decodes them (quantised as on the wire).
    pub fn quantized(&self) -> SpawnInfo {
        let mut w = BitWriter::new();
        write_spawn(&mut w, self);
        read_spawn(&mut BitReader::new(w.bytes())).expect("a spawn info just written reads back")
    }
}

/// How a channel opens: a dynamic actor spawned from its spawn info, or a static one bound by
/// its path.
#[derive(Clone, Debug, PartialEq)]
pub enum OpenKind {
    /// A dynamic actor.
    Spawn(SpawnInfo),
    /// A static actor, by its path in the level.
    Static(Arc<str>),
    /// A sub-object of the actor `owner` (its outer).
    SubObject {
        /// The owner actor.
        owner: NetGuid,
    },
    /// A fast array of the actor `owner` ([`crate::fastarray`]); the open's class is the fast
    /// array kind (its item layout), and the bunch bodies are deltas.
    FastArray {
        /// The owner actor.
        owner: NetGuid,
    },
}

/// Bits of an open's kind.
const KIND_BITS: u32 = 2;

/// A channel's open: the actor's class and how to create or find it.
#[derive(Clone, Debug, PartialEq)]
pub struct OpenHeader {
    /// Class id.
    pub class: u32,
    /// Spawn info or path.
    pub kind: OpenKind,
    /// An actor's open (spawn or static): the receiving client holds an autonomous proxy of
    /// it (else a simulated one). Not on the wire for sub-objects and fast arrays (false).
    pub autonomous: bool,
}

impl OpenKind {
    /// Whether an open of this kind carries the client's role: an actor's (spawned or static)
    /// does; a sub-object's and a fast array's do not.
    pub fn has_role(&self) -> bool {
        matches!(self, OpenKind::Spawn(_) | OpenKind::Static(_))
    }
}

/// An open in its wire form, encoded once and copied into every bunch part that carries it.
/// The role bit that ends an actor's open is kept apart: the same encoding serves every
/// connection, each with its own role ([`Self::set_autonomous`]).
#[derive(Clone, Debug, Default)]
pub struct EncodedOpen {
    header: BitWriter,
    /// The open carries a role bit (an actor's).
    role: bool,
    autonomous: bool,
}

impl EncodedOpen {
    /// Its bits.
    pub fn bits(&self) -> usize {
        self.header.len_bits() + usize::from(self.role)
    }

    /// Copies it into `w`.
    pub fn write(&self, w: &mut BitWriter) {
        self.write_as(w, self.autonomous);
    }

    /// [`Self::write`], giving the client the role `autonomous` instead of the one it holds
    /// (one encoding of an open serves every connection, each with its own role).
    pub fn write_as(&self, w: &mut BitWriter, autonomous: bool) {
        w.write_from(self.header.bytes(), 0, self.header.len_bits());
        if self.role {
            w.write_bool(autonomous);
        }
    }

    /// The role it gives the client: autonomous (an actor's open set so; else simulated).
    pub fn autonomous(&self) -> bool {
        self.autonomous
    }

    /// Replaces it with `other` (reusing the buffer).
    pub fn set(&mut self, other: &EncodedOpen) {
        self.header.clear();
        self.header.write_from(other.header.bytes(), 0, other.header.len_bits());
        self.role = other.role;
        self.autonomous = other.autonomous;
    }

    /// Sets the role it gives the client (an actor's open; nothing for the others).
    pub fn set_autonomous(&mut self, autonomous: bool) {
        self.autonomous = autonomous && self.role;
    }
}

impl OpenHeader {
    /// The wire form.
    pub fn encode(&self) -> EncodedOpen {
        let mut out = EncodedOpen::default();
        self.encode_into(&mut out);
        out
    }

    /// The wire form, into `out` (its buffer reused).
    pub fn encode_into(&self, out: &mut EncodedOpen) {
        out.header.clear();
        write_header(&mut out.header, self);
        out.role = self.kind.has_role();
        out.autonomous = self.autonomous && out.role;
    }

    /// A dynamic actor's open with the default spawn info (at the origin, unrotated, unit scale,
    /// at rest), for a simulated proxy.
    pub fn spawn(class: u32) -> OpenHeader {
        OpenHeader { class, kind: OpenKind::Spawn(SpawnInfo::default()), autonomous: false }
    }
}

/// The GUID of an export bunch: UE's "default object" GUID, never an actor's. Its body names
/// a static object's GUID and path, so a client can bind an object-reference property's target
/// it was never opened (a door an `Initial`-dormant static actor, say).
pub const EXPORT_GUID: NetGuid = NetGuid(1);

/// Writes an export's body.
pub fn write_export_body(w: &mut BitWriter, guid: NetGuid, path: &str) {
    w.write_bool(false); // not a call (super::rpc)
    w.write_packed(guid.0);
    write_path(w, path);
}

/// Reads an export's body after its first bit (0: an export; 1: a call, [`super::rpc`]), to
/// the bunch's end.
pub fn read_export_body(r: &mut BitReader<'_>) -> Result<(NetGuid, String), WireError> {
    let guid = NetGuid(r.read_packed()?);
    if !guid.is_static() || guid == EXPORT_GUID {
        return Err(WireError::Invalid("exported GUID"));
    }
    let path = read_path(r)?;
    Ok((guid, path))
}

/// Why a channel closes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CloseReason {
    /// The actor is destroyed, or no longer relevant: the client destroys its copy.
    #[default]
    Destroyed,
    /// The actor went dormant for this connection: the client keeps its copy.
    Dormant,
    /// The actor was torn off: the client keeps its copy and the server sends no more.
    TornOff,
    /// The connection unloaded the actor's sublevel (UE's `EChannelCloseReason::LevelUnloaded`):
    /// the client destroys a copy it still has, but a static actor's close carries no path — it
    /// never takes a level actor the client loaded again meanwhile.
    LevelUnloaded,
}

impl CloseReason {
    /// Whether the client destroys its copy on this close (destroyed, or its sublevel
    /// unloaded) — the owner's fast arrays with it.
    pub fn destroys_copy(self) -> bool {
        matches!(self, CloseReason::Destroyed | CloseReason::LevelUnloaded)
    }

    fn bits(self) -> u64 {
        match self {
            CloseReason::Destroyed => 0,
            CloseReason::Dormant => 1,
            CloseReason::TornOff => 2,
            CloseReason::LevelUnloaded => 3,
        }
    }
}

/// Bits of a close reason.
const REASON_BITS: u32 = 2;

fn vector_bytes(v: [f32; 3]) -> [u8; 12] {
    let mut b = [0u8; 12];
    for (i, c) in v.iter().enumerate() {
        b[i * 4..i * 4 + 4].copy_from_slice(&c.to_le_bytes());
    }
    b
}

fn bytes_vector(b: &[u8; 12]) -> [f32; 3] {
    let f = |i: usize| f32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    [f(0), f(4), f(8)]
}

fn write_vector(w: &mut BitWriter, kind: LeafKind, v: [f32; 3]) {
    write_leaf(w, kind, &vector_bytes(v));
}

fn read_vector(r: &mut BitReader<'_>, kind: LeafKind) -> Result<[f32; 3], WireError> {
    let mut b = [0u8; 12];
    read_leaf(r, kind, &mut b)?;
    Ok(bytes_vector(&b))
}

// UE's `SerializeNewActor` with its defaults: location and velocity one decimal
// (`net.QuantizeActorLocationOnSpawn`, `net.QuantizeActorVelocityOnSpawn` on: `FVector_NetQuantize10`),
// scale three full floats (`net.QuantizeActorScaleOnSpawn` off). (Until session 77: location two
// decimals, scale one — an actor spawned at scale 0.25 came out 0.3 on every client, for good —
// and velocity whole units.)
const LOCATION: LeafKind = LeafKind::Vector(VectorQuant::Q10);
const SCALE: LeafKind = LeafKind::Vector(VectorQuant::None);
const VELOCITY: LeafKind = LeafKind::Vector(VectorQuant::Q10);

fn write_spawn(w: &mut BitWriter, s: &SpawnInfo) {
    write_vector(w, LOCATION, s.location);
    write_vector(w, LeafKind::Rotator, s.rotation);
    let scaled = s.scale != [1.0; 3];
    w.write_bool(scaled);
    if scaled {
        write_vector(w, SCALE, s.scale);
    }
    let moving = s.velocity != [0.0; 3];
    w.write_bool(moving);
    if moving {
        write_vector(w, VELOCITY, s.velocity);
    }
}

fn read_spawn(r: &mut BitReader<'_>) -> Result<SpawnInfo, WireError> {
    let location = read_vector(r, LOCATION)?;
    let rotation = read_vector(r, LeafKind::Rotator)?;
    let scale = if r.read_bool()? { read_vector(r, SCALE)? } else { [1.0; 3] };
    let velocity = if r.read_bool()? { read_vector(r, VELOCITY)? } else { [0.0; 3] };
    Ok(SpawnInfo { location, rotation, scale, velocity })
}

fn write_path(w: &mut BitWriter, path: &str) {
    // Paths are checked at registration; a longer one is cut (never reached through the driver).
    let bytes = &path.as_bytes()[..path.len().min(MAX_PATH_BYTES)];
    w.write_packed(bytes.len() as u64);
    for &b in bytes {
        w.write_bits(b as u64, 8);
    }
}

fn read_path(r: &mut BitReader<'_>) -> Result<String, WireError> {
    let len = r.read_packed()?;
    if len > MAX_PATH_BYTES as u64 {
        return Err(WireError::OutOfRange { value: len, max: MAX_PATH_BYTES as u64 + 1 });
    }
    if len * 8 > r.remaining() as u64 {
        return Err(WireError::Truncated);
    }
    let bytes = (0..len).map(|_| r.read_bits(8).map(|b| b as u8)).collect::<Result<Vec<u8>, _>>()?;
    String::from_utf8(bytes).map_err(|_| WireError::Invalid("path is not UTF-8"))
}

fn path_bits(path: &str) -> usize {
    let n = path.len().min(MAX_PATH_BYTES);
    super::packet::packed_bits(n as u64) + 8 * n
}

/// Writes an open (after the bunch's open bit).
pub fn write_open(w: &mut BitWriter, open: &OpenHeader) {
    write_header(w, open);
    if open.kind.has_role() {
        w.write_bool(open.autonomous);
    }
}

/// An open without its role bit: what every connection's open of the actor shares.
fn write_header(w: &mut BitWriter, open: &OpenHeader) {
    w.write_packed(open.class as u64);
    match &open.kind {
        OpenKind::Spawn(s) => {
            w.write_bits(0, KIND_BITS);
            write_spawn(w, s);
        }
        OpenKind::Static(path) => {
            w.write_bits(1, KIND_BITS);
            write_path(w, path);
        }
        OpenKind::SubObject { owner } => {
            w.write_bits(2, KIND_BITS);
            w.write_packed(owner.0);
        }
        OpenKind::FastArray { owner } => {
            w.write_bits(3, KIND_BITS);
            w.write_packed(owner.0);
        }
    }
}

/// Reads an open (after the bunch's open bit).
pub fn read_open(r: &mut BitReader<'_>) -> Result<OpenHeader, WireError> {
    let class = u32::try_from(r.read_packed()?).map_err(|_| WireError::Invalid("class id"))?;
    let kind = match r.read_bits(KIND_BITS)? {
        0 => OpenKind::Spawn(read_spawn(r)?),
        1 => OpenKind::Static(read_path(r)?.into()),
        2 => OpenKind::SubObject { owner: NetGuid(r.read_packed()?) },
        _ => OpenKind::FastArray { owner: NetGuid(r.read_packed()?) },
    };
    let autonomous = kind.has_role() && r.read_bool()?;
    Ok(OpenHeader { class, kind, autonomous })
}

/// Bits [`write_open`] writes.
pub fn open_bits(open: &OpenHeader) -> usize {
    let mut w = BitWriter::new();
    write_open(&mut w, open);
    w.len_bits()
}

/// The most bits an open of class id `class` may take.
pub fn max_open_bits(class: u32) -> usize {
    let spawn = super::max_leaf_bits(LOCATION)
        + super::max_leaf_bits(LeafKind::Rotator)
        + 2
        + super::max_leaf_bits(SCALE)
        + super::max_leaf_bits(VELOCITY);
    let path = super::packet::packed_bits(MAX_PATH_BYTES as u64) + 8 * MAX_PATH_BYTES;
    let owner = super::packet::packed_bits(u64::MAX);
    // An actor's open ends with its role bit.
    super::packet::packed_bits(class as u64) + KIND_BITS as usize + (spawn.max(path) + 1).max(owner)
}

/// Writes a close's reason (after the bunch's close bit), and the path of a destroyed static
/// actor.
pub fn write_close_reason(w: &mut BitWriter, guid: NetGuid, reason: CloseReason, path: Option<&str>) {
    w.write_bits(reason.bits(), REASON_BITS);
    if guid.is_static() && reason == CloseReason::Destroyed {
        write_path(w, path.unwrap_or(""));
    }
}

/// Reads a close's reason, and the path a destroyed static actor's close carries.
pub fn read_close_reason(r: &mut BitReader<'_>, guid: NetGuid) -> Result<(CloseReason, Option<String>), WireError> {
    let reason = match r.read_bits(REASON_BITS)? {
        0 => CloseReason::Destroyed,
        1 => CloseReason::Dormant,
        2 => CloseReason::TornOff,
        _ => CloseReason::LevelUnloaded, // the two bits' last value
    };
    let path = (guid.is_static() && reason == CloseReason::Destroyed).then(|| read_path(r)).transpose()?;
    Ok((reason, path))
}

/// Bits [`write_close_reason`] writes.
pub fn close_reason_bits(guid: NetGuid, reason: CloseReason, path: Option<&str>) -> usize {
    let path = if guid.is_static() && reason == CloseReason::Destroyed { path_bits(path.unwrap_or("")) } else { 0 };
    REASON_BITS as usize + path
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(open: &OpenHeader) -> OpenHeader {
        let mut w = BitWriter::new();
        write_open(&mut w, open);
        assert_eq!(w.len_bits(), open_bits(open));
        assert!(w.len_bits() <= max_open_bits(open.class));
        let mut r = BitReader::new(w.bytes());
        let back = read_open(&mut r).unwrap();
        assert_eq!(r.position(), w.len_bits());
        back
    }

    #[test]
    fn spawn_info_round_trips_quantised_and_defaults_cost_a_bit() {
        let s = SpawnInfo {
            location: [1234.567, -89.123, 40.0],
            rotation: [0.0, 90.0, 0.0],
            scale: [1.0, 2.5, 1.0],
            velocity: [300.4, 0.0, -12.0],
        };
        let open = OpenHeader { class: 3, kind: OpenKind::Spawn(s), autonomous: false };
        let OpenKind::Spawn(back) = round_trip(&open).kind else { panic!("spawn") };
        assert_eq!(back, s.quantized());
        // UE's defaults: location and velocity at one decimal, scale whole.
        assert!((back.location[0] - 1234.6).abs() < 1e-3 && (back.rotation[1] - 90.0).abs() < 0.01);
        assert_eq!(back.velocity, [300.4, 0.0, -12.0]);
        assert_eq!(back.scale, s.scale);
        let plain = OpenHeader { class: 3, kind: OpenKind::Spawn(SpawnInfo::default()), autonomous: false };
        let defaults = open_bits(&plain);
        assert_eq!(round_trip(&plain), plain);
        assert!(defaults < open_bits(&open));
    }

    #[test]
    fn a_static_open_carries_its_path_and_bad_paths_are_errors() {
        let open = OpenHeader {
            class: 1,
            kind: OpenKind::Static("/Game/Map.Map:PersistentLevel.Door_12".into()),
            autonomous: false,
        };
        assert_eq!(round_trip(&open), open);
        let long =
            OpenHeader { class: 1, kind: OpenKind::Static("x".repeat(MAX_PATH_BYTES).into()), autonomous: false };
        assert_eq!(round_trip(&long), long);
        // Too long on the wire.
        let mut w = BitWriter::new();
        w.write_packed(1);
        w.write_bits(1, KIND_BITS);
        w.write_packed(MAX_PATH_BYTES as u64 + 1);
        assert!(matches!(read_open(&mut BitReader::new(w.bytes())), Err(WireError::OutOfRange { .. })));
        // Not UTF-8.
        let mut w = BitWriter::new();
        w.write_packed(1);
        w.write_bits(1, KIND_BITS);
        w.write_packed(1);
        w.write_bits(0xff, 8);
        assert_eq!(read_open(&mut BitReader::new(w.bytes())), Err(WireError::Invalid("path is not UTF-8")));
        // Every truncation.
        let mut w = BitWriter::new();
        write_open(&mut w, &open);
        for cut in 0..w.len_bits() {
            let mut r = BitReader::with_len(w.bytes(), cut);
            assert!(read_open(&mut r).is_err(), "cut at {cut}");
        }
    }

    /// The role bit: one encoding of an actor's open serves two connections with their own
    /// roles; a sub-object's open carries none, whatever it is asked to give (a regression would
    /// read its owner GUID one bit off, or cost every connection an encoding of its own).
    #[test]
    fn one_encoded_open_gives_each_connection_its_own_role() {
        let open = OpenHeader { class: 5, kind: OpenKind::Spawn(SpawnInfo::default()), autonomous: false };
        let shared = open.encode();
        for autonomous in [false, true] {
            let mut mine = EncodedOpen::default();
            mine.set(&shared);
            mine.set_autonomous(autonomous);
            assert_eq!(mine.bits(), open_bits(&open), "one bit whatever its value");
            let mut w = BitWriter::new();
            mine.write(&mut w);
            let back = read_open(&mut BitReader::new(w.bytes())).unwrap();
            assert_eq!(back, OpenHeader { autonomous, ..open.clone() });
        }
        let sub = OpenHeader { class: 2, kind: OpenKind::SubObject { owner: NetGuid(40) }, autonomous: true };
        let mut e = sub.encode();
        e.set_autonomous(true);
        assert_eq!(e.bits(), open_bits(&OpenHeader { autonomous: false, ..sub.clone() }));
        let mut w = BitWriter::new();
        e.write(&mut w);
        assert!(!read_open(&mut BitReader::new(w.bytes())).unwrap().autonomous);
    }

    #[test]
    fn sub_object_and_fast_array_opens_name_their_owner() {
        for open in [
            OpenHeader { class: 2, kind: OpenKind::SubObject { owner: NetGuid(40) }, autonomous: false },
            OpenHeader { class: 0, kind: OpenKind::FastArray { owner: NetGuid(u64::MAX) }, autonomous: false },
        ] {
            assert_eq!(round_trip(&open), open);
            assert!(open_bits(&open) <= max_open_bits(open.class));
            let mut w = BitWriter::new();
            write_open(&mut w, &open);
            for cut in 0..w.len_bits() {
                assert!(read_open(&mut BitReader::with_len(w.bytes(), cut)).is_err(), "cut at {cut}");
            }
        }
    }

    #[test]
    fn an_export_names_a_static_guid_and_its_path_and_nothing_else_passes() {
        let body = |guid: NetGuid| {
            let mut w = BitWriter::new();
            write_export_body(&mut w, guid, "/Game/Map.Door");
            w
        };
        // The body's first bit says export (0) or call (1); the decoder reads it first.
        let read = |w: &BitWriter, bits: usize| {
            let mut r = BitReader::with_len(w.bytes(), bits);
            assert!(!r.read_bool()?, "an export's first bit is 0");
            read_export_body(&mut r)
        };
        let w = body(NetGuid(7));
        assert_eq!(read(&w, w.len_bits()), Ok((NetGuid(7), "/Game/Map.Door".into())));
        for bad in [NetGuid(8), NetGuid(0), EXPORT_GUID] {
            let w = body(bad);
            assert_eq!(read(&w, w.len_bits()), Err(WireError::Invalid("exported GUID")));
        }
        let w = body(NetGuid(7));
        for cut in 0..w.len_bits() {
            assert!(read(&w, cut).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn close_reasons_round_trip_and_a_destroyed_static_carries_its_path() {
        for (guid, reason) in [
            (NetGuid(4), CloseReason::Destroyed),
            (NetGuid(4), CloseReason::Dormant),
            (NetGuid(4), CloseReason::TornOff),
            (NetGuid(5), CloseReason::Destroyed),
            (NetGuid(5), CloseReason::Dormant),
            (NetGuid(4), CloseReason::LevelUnloaded),
            (NetGuid(5), CloseReason::LevelUnloaded),
        ] {
            let mut w = BitWriter::new();
            write_close_reason(&mut w, guid, reason, Some("/Game/Map.Lamp"));
            assert_eq!(w.len_bits(), close_reason_bits(guid, reason, Some("/Game/Map.Lamp")));
            let (r2, path) = read_close_reason(&mut BitReader::new(w.bytes()), guid).unwrap();
            assert_eq!(r2, reason);
            assert_eq!(path.is_some(), guid.is_static() && reason == CloseReason::Destroyed);
        }
    }
}
