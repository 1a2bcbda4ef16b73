//! Why a client could not be built ([`ClientError`]: its layouts are not the server's) or
//! refused a packet ([`ReceiveError`]: nothing of it was applied).

use crate::wire::open::MAX_PATH_BYTES;
use crate::wire::WireError;
use std::fmt;

/// Why a client could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientError {
    /// The server registers a different number of classes.
    ClassCount {
        /// Server's count.
        server: usize,
        /// Client's count.
        client: usize,
    },
    /// No class with this id.
    UnknownClass(u32),
    /// A static actor's path is empty, too long, or loaded already.
    BadStaticPath(String),
    /// A class layout differs from the server's.
    ChecksumMismatch {
        /// Class id.
        class: usize,
        /// Server's checksum.
        server: u64,
        /// Client's checksum.
        client: u64,
    },
    /// A class layout is the server's, at another class id: the layouts were given in another
    /// order than the server registered them.
    ClassOrder {
        /// Class id the layout was given at.
        class: usize,
        /// The server's class id of that layout.
        server_class: usize,
    },
    /// The server registers a different number of fast array kinds.
    FastArrayKindCount {
        /// Server's count.
        server: usize,
        /// Client's count.
        client: usize,
    },
    /// A fast array item layout differs from the server's.
    FastArrayChecksumMismatch {
        /// Kind index.
        kind: usize,
        /// Server's checksum.
        server: u64,
        /// Client's checksum.
        client: u64,
    },
    /// A fast array item layout is the server's, at another kind index: the kinds were given in
    /// another order than the server registered them.
    FastArrayKindOrder {
        /// Kind index the layout was given at.
        kind: usize,
        /// The server's kind index of that layout.
        server_kind: usize,
    },
    /// The client has no actor with this GUID.
    UnknownActor(crate::ids::NetGuid),
    /// The actor's class declares no Server call of this name.
    UnknownServerRpc(String),
    /// A call's arguments do not fit its parameters.
    RpcArgs(crate::value::ValueError),
    /// A call's index and arguments take more than
    /// [`MAX_CLIENT_CALL_BITS`](crate::wire::feedback::MAX_CLIENT_CALL_BITS).
    RpcTooLarge(usize),
    /// [`MAX_OUTGOING_CALLS`](super::MAX_OUTGOING_CALLS) unreliable calls wait for the next
    /// feedback, or [`MAX_RELIABLE_RPCS`](crate::wire::rpc::MAX_RELIABLE_RPCS) reliable ones
    /// for the server's acknowledgement.
    TooManyCalls,
}

/// Where a client's checksums (of its classes, or of its fast array kinds) first differ from the
/// server's, each caller naming it with its own [`ClientError`].
pub(super) enum ChecksumsDiffer {
    /// The lists' lengths.
    Count,
    /// Entry `index` is the server's entry `server_index`: the same build, given in another
    /// order.
    Order { index: usize, server_index: usize },
    /// Entry `index` is none of the server's.
    Mismatch { index: usize, server: u64, client: u64 },
}

/// Checks the `client` checksums against the `server`'s, entry by entry.
pub(super) fn compare_checksums(
    client: impl ExactSizeIterator<Item = u64>,
    server: &[u64],
) -> Result<(), ChecksumsDiffer> {
    if client.len() != server.len() {
        return Err(ChecksumsDiffer::Count);
    }
    for (index, (client, &s)) in client.zip(server).enumerate() {
        if client != s {
            return Err(match server.iter().position(|&c| c == client) {
                Some(server_index) => ChecksumsDiffer::Order { index, server_index },
                None => ChecksumsDiffer::Mismatch { index, server: s, client },
            });
        }
    }
    Ok(())
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::ClassCount { server, client } => write!(f, "server has {server} classes, client {client}"),
            ClientError::UnknownClass(c) => write!(f, "no class with id {c}"),
            ClientError::BadStaticPath(p) => {
                write!(f, "static actor path `{p}` is empty, longer than {MAX_PATH_BYTES} bytes, or loaded already")
            }
            ClientError::ChecksumMismatch { class, server, client } => write!(
                f,
                "class {class}: layout checksum {client:#x} does not match the server's {server:#x}; the builds do not interoperate"
            ),
            ClientError::ClassOrder { class, server_class } => write!(
                f,
                "class {class}: the layout given is the server's class {server_class}; give the layouts in the order \
                 the server registered them (`NetDriver::layouts` lists them so)"
            ),
            ClientError::FastArrayKindCount { server, client } => {
                write!(f, "server has {server} fast array kinds, client {client}")
            }
            ClientError::FastArrayChecksumMismatch { kind, server, client } => write!(
                f,
                "fast array kind {kind}: item layout checksum {client:#x} does not match the server's {server:#x}"
            ),
            ClientError::FastArrayKindOrder { kind, server_kind } => write!(
                f,
                "fast array kind {kind}: the item layout given is the server's kind {server_kind}; give the kinds in \
                 the order the server registered them (`NetDriver::fast_array_kinds` lists them so)"
            ),
            ClientError::UnknownActor(g) => write!(f, "the client has no actor {g}"),
            ClientError::UnknownServerRpc(r) => write!(f, "the actor's class declares no Server call `{r}`"),
            ClientError::RpcArgs(e) => write!(f, "call arguments: {e}"),
            ClientError::RpcTooLarge(bits) => write!(
                f,
                "a call of {bits} bits: at most {} fit a feedback",
                crate::wire::feedback::MAX_CLIENT_CALL_BITS
            ),
            ClientError::TooManyCalls => write!(f, "too many calls wait to go (or for the server's acknowledgement)"),
        }
    }
}

impl std::error::Error for ClientError {}

/// Why a packet was refused (nothing was applied).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReceiveError {
    /// Malformed bits.
    Wire(WireError),
}

impl fmt::Display for ReceiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReceiveError::Wire(e) => write!(f, "malformed packet: {e}"),
        }
    }
}

impl std::error::Error for ReceiveError {}

impl From<WireError> for ReceiveError {
    fn from(e: WireError) -> Self {
        ReceiveError::Wire(e)
    }
}
