//! Why a driver call was refused: [`DriverError`], one variant per refusal a caller can reach,
//! each with its message. Re-exported from [`super`].

use super::fastarrays;
use super::{ClassId, ConnectionId, NetGuid};
use crate::compare::CompareError;
use crate::schema::Condition;
use crate::store::ActorId;
use crate::wire::packet::{MAX_MTU, MIN_MTU};
use crate::wire::WireError;
use std::fmt;

/// Why a driver call was refused.
#[derive(Clone, Debug, PartialEq)]
pub enum DriverError {
    /// `mtu` outside `512..=8192` bytes.
    MtuOutOfRange(usize),
    /// The per-pair state keeps one `u64` of leaf groups; this class needs more (more than 64
    /// runs of leaves that must be told apart: [`crate::schema::groups`]).
    TooManyLeaves {
        /// Class name.
        class: String,
        /// Its leaf count.
        leaves: usize,
        /// The leaf groups it needs at the least: runs of leaves treated alike
        /// ([`crate::schema::groups`]).
        groups: usize,
    },
    /// A record (or one array element) of this class may not fit one packet at this MTU.
    RecordTooLarge {
        /// Class name.
        class: String,
        /// Worst-case bits of its largest record.
        bits: usize,
    },
    /// The store is already registered with this driver.
    AlreadyRegistered(ClassId),
    /// No such class.
    UnknownClass(ClassId),
    /// No such connection.
    UnknownConnection(ConnectionId),
    /// A store that is not registered with this driver.
    UnknownStore,
    /// A call named class `class` with the store registered as class `registered_as` (the
    /// store of another class: a sub-object's class with its owner's store, say).
    WrongStore {
        /// The class the call named.
        class: ClassId,
        /// The class the store given is registered as.
        registered_as: ClassId,
    },
    /// `tick` was not given the store of this class.
    MissingStore(ClassId),
    /// The actor id is stale.
    StaleActor(ActorId),
    /// A parent index out of range.
    NoSuchParent(usize),
    /// A per-actor switch ([`super::NetDriver::set_custom_active`]) of a parent whose leaves
    /// share a leaf group with another parent's: in a class of more than 64 leaves, only
    /// `Custom` and `Dynamic` parents are sure to have groups of their own
    /// ([`crate::schema::groups`]).
    SharedLeafGroup {
        /// Class name.
        class: String,
        /// The parent's index.
        parent: usize,
    },
    /// A per-actor condition for a parent not declared [`Condition::Dynamic`]
    /// ([`super::NetDriver::set_dynamic_condition`]).
    NotDynamic(usize),
    /// A per-actor condition this driver does not take for a Dynamic parent: an initial-only
    /// one ([`super::NetDriver::set_dynamic_condition`]).
    BadDynamicCondition(Condition),
    /// The class keeps [`MAX_DYNAMIC_SETS`](super::condition::MAX_DYNAMIC_SETS) distinct sets
    /// of per-actor Dynamic conditions already.
    TooManyDynamicSets(ClassId),
    /// Feedback bytes did not decode (counted in the connection's statistics; nothing changed).
    Feedback(WireError),
    /// An actor-level setting was refused.
    ActorLevel(String),
    /// The call needs [`DriverConfig::actor_level`](super::DriverConfig::actor_level).
    ActorLevelOff,
    /// The parent is not a vector property, so it cannot be a class's location.
    NotALocation {
        /// Class name.
        class: String,
        /// The parent index.
        parent: usize,
    },
    /// The parent is not a (non-array) property of the kind spawn info needs.
    NotASpawnProperty {
        /// Class name.
        class: String,
        /// The parent index.
        parent: usize,
        /// The kind it should be.
        what: &'static str,
    },
    /// A static actor's path is empty, longer than [`crate::wire::open::MAX_PATH_BYTES`], or
    /// taken by another static actor.
    BadStaticPath(String),
    /// The actor already has a NetGUID (a tick or a call gave it a dynamic one): a static actor
    /// is registered before the first tick sees it.
    AlreadyReplicated(ActorId),
    /// No live actor has this GUID (a sub-object's owner).
    UnknownOwner(NetGuid),
    /// The call changes a sub-object ([`super::NetDriver::set_sub_object_condition`]), and this
    /// actor is not one.
    NotASubObject(ActorId),
    /// A sub-object's owner must be a dynamic actor, not a static one, itself nor another
    /// sub-object, and a sub-object cannot own sub-objects or fast arrays.
    SubObjectChain(NetGuid),
    /// A call that sets what a sub-object takes from its owner (its owner actor, owning
    /// connection, physics, net settings, replication) named the sub-object: set it on the owner.
    FollowsOwner {
        /// The sub-object.
        sub: NetGuid,
        /// Its owner.
        owner: NetGuid,
    },
    /// The sub-object is orphaned: its owner was despawned, so it replicates no more (clients
    /// dropped it with the owner) and nothing can be set on it or forced — despawn it from its
    /// store, as UE destroys an actor's components with it.
    Orphaned(NetGuid),
    /// No fast array kind with this index.
    UnknownFastArrayKind(fastarrays::FastArrayKind),
    /// A fast array's condition may not be initial-only ([`super::SubObjectCondition::InitialOnly`],
    /// [`super::SubObjectCondition::InitialOrOwner`]): its changes ride its owner's every bunch.
    InitialOnlyFastArray,
    /// No fast array has this GUID.
    UnknownFastArray(NetGuid),
    /// A view of this fast array ([`super::NetDriver::fast_array`]) is alive: drop it before
    /// taking another.
    FastArrayInView(NetGuid),
    /// A net setting (of [`NetSettings`](super::NetSettings), a connection's net speed) outside
    /// what replication can run with: a NaN, an infinite or non-positive update frequency, a
    /// negative priority or cull distance, a net speed of 0.
    BadNetSetting {
        /// The setting, as UE names it.
        setting: &'static str,
        /// The value refused.
        value: f64,
        /// What it may be.
        expected: &'static str,
    },
    /// The owner named for a sub-object or a fast array is torn off (or tearing off): it
    /// replicates nothing more, so nothing could replicate with it.
    TornOffOwner(NetGuid),
    /// The persistent level cannot be unloaded: every client has it.
    PersistentSublevel,
    /// An actor's sublevel is set before the tick that first replicates it (UE places an actor
    /// in its level when it spawns): this actor has been replicated.
    SublevelFixed(NetGuid),
    /// The class declares no call of that name.
    UnknownRpc {
        /// Class name.
        class: String,
        /// The name given.
        rpc: String,
    },
    /// A call's arguments do not fit its parameters.
    RpcArgs(crate::value::ValueError),
    /// A call's bunch would not fit an empty packet.
    RpcTooLarge {
        /// The call.
        rpc: String,
        /// Bits of its index and arguments.
        bits: usize,
    },
    /// The actor is torn off (or tearing off): it is its clients' own, and nothing reaches it.
    TornOff(NetGuid),
    /// A Server call: a client calls it ([`crate::client::ClientWorld::call_server_rpc`]).
    ServerRpc(String),
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DriverError::MtuOutOfRange(m) => write!(f, "mtu of {m} bytes is outside {MIN_MTU}..={MAX_MTU}"),
            DriverError::TooManyLeaves { class, leaves, groups } => write!(
                f,
                "class `{class}` has {leaves} leaves in {groups} runs that must be told apart (a \
                 change of condition or of reference-ness, a dynamic array, a Custom, Dynamic or \
                 always-notified parent each start one); the send state tells at most 64 apart"
            ),
            DriverError::RecordTooLarge { class, bits } => {
                write!(f, "class `{class}` has a record of up to {bits} bits, more than one packet holds")
            }
            DriverError::AlreadyRegistered(c) => write!(f, "this store is already registered as class {}", c.0),
            DriverError::UnknownClass(c) => write!(f, "no class with id {}", c.0),
            DriverError::UnknownConnection(c) => write!(f, "no connection with id {}", c.0),
            DriverError::UnknownStore => write!(f, "a store that is not registered with this driver"),
            DriverError::WrongStore { class, registered_as } => write!(
                f,
                "the store given is class {}'s, not class {}'s: give each call the store of the class it names",
                registered_as.0, class.0
            ),
            DriverError::MissingStore(c) => write!(f, "tick needs the store of class {} too", c.0),
            DriverError::StaleActor(id) => write!(f, "actor {}:{} does not exist", id.index, id.generation),
            DriverError::NoSuchParent(p) => write!(f, "no parent property with index {p}"),
            DriverError::SharedLeafGroup { class, parent } => write!(
                f,
                "parent {parent} of class `{class}` shares a leaf group with another parent (a class of \
                 more than 64 leaves groups them); declare it Custom to switch it per actor"
            ),
            DriverError::NotASubObject(id) => {
                write!(f, "actor {}:{} is not a registered sub-object", id.index, id.generation)
            }
            DriverError::NotDynamic(p) => write!(f, "parent {p} is not declared Dynamic: its condition is the class's"),
            DriverError::BadDynamicCondition(c) => {
                write!(f, "{c:?} cannot be a per-actor condition (initial-only conditions are the class's to declare)")
            }
            DriverError::TooManyDynamicSets(c) => write!(
                f,
                "class {} already keeps {} distinct sets of per-actor Dynamic conditions",
                c.0,
                super::condition::MAX_DYNAMIC_SETS
            ),
            DriverError::Feedback(e) => write!(f, "bad feedback: {e}"),
            DriverError::ActorLevel(why) => write!(f, "actor level: {why}"),
            DriverError::ActorLevelOff => write!(f, "this needs the actor level (DriverConfig::actor_level)"),
            DriverError::NotALocation { class, parent } => {
                write!(f, "parent {parent} of class `{class}` is not a (non-array) vector property")
            }
            DriverError::NotASpawnProperty { class, parent, what } => {
                write!(f, "parent {parent} of class `{class}` is not a (non-array) {what} property")
            }
            DriverError::BadStaticPath(why) => write!(f, "static actor path: {why}"),
            DriverError::UnknownOwner(g) => write!(f, "no live actor has GUID {g}"),
            DriverError::UnknownFastArrayKind(k) => write!(f, "no fast array kind {}", k.0),
            DriverError::InitialOnlyFastArray => {
                write!(f, "a fast array cannot be initial-only (InitialOnly, InitialOrOwner): its changes ride its owner's every bunch")
            }
            DriverError::UnknownFastArray(g) => write!(f, "no fast array has GUID {g}"),
            DriverError::FastArrayInView(g) => {
                write!(f, "fast array {g} is in a view already: drop that view before taking another")
            }
            DriverError::SubObjectChain(g) => {
                write!(
                    f,
                    "{g}: a sub-object's owner is a dynamic actor (not a static one, itself, nor a sub-object), and owns no sub-objects nor fast arrays"
                )
            }
            DriverError::FollowsOwner { sub, owner } => write!(
                f,
                "{sub} is a sub-object of {owner}: its owner, roles, physics, net settings and replication are its owner's (set them on {owner})"
            ),
            DriverError::Orphaned(sub) => write!(
                f,
                "{sub} is an orphaned sub-object: its owner was despawned, so it replicates no more (despawn it too)"
            ),
            DriverError::BadNetSetting { setting, value, expected } => {
                write!(f, "net setting {setting} = {value}: expected {expected}")
            }
            DriverError::TornOffOwner(g) => {
                write!(f, "{g} is torn off: nothing more replicates with it (a sub-object or fast array needs a live owner)")
            }
            DriverError::PersistentSublevel => write!(f, "the persistent level (sublevel 0) is loaded on every client"),
            DriverError::UnknownRpc { class, rpc } => write!(f, "class `{class}` declares no call `{rpc}`"),
            DriverError::RpcArgs(e) => write!(f, "call arguments: {e}"),
            DriverError::RpcTooLarge { rpc, bits } => {
                write!(f, "call `{rpc}` takes {bits} bits with its arguments, more than one packet holds")
            }
            DriverError::TornOff(g) => write!(f, "{g} is torn off: it is its clients' own, and no call reaches it"),
            DriverError::ServerRpc(rpc) => write!(f, "`{rpc}` is a Server call: a client calls it"),
            DriverError::SublevelFixed(g) => {
                write!(f, "{g} has been replicated: set an actor's sublevel before the tick that first sees it")
            }
            DriverError::AlreadyReplicated(id) => {
                write!(
                    f,
                    "actor {}:{} already has a NetGUID; register static actors before a tick sees them",
                    id.index, id.generation
                )
            }
        }
    }
}

impl std::error::Error for DriverError {}

/// Maps a compare refusal (a shadow watching another store) to the driver's error; the driver
/// finds each class's store by id, so this cannot happen through it.
impl From<CompareError> for DriverError {
    fn from(_: CompareError) -> Self {
        DriverError::UnknownStore
    }
}
