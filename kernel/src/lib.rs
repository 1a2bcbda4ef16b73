//! # shadowrep
//!
//! A data-oriented re-creation of Unreal Engine's replication. Follow one frame through the
//! modules named for its steps:
//!
//! 1. [`schema`]: class layouts (parents flattened into leaves with handles, planes, checksum);
//!    [`value`]: property values and their byte form;
//! 2. [`store`]: game code writes actor state into structure-of-arrays pages (typed setters mark
//!    push-based properties dirty);
//! 3. [`compare`]: a SIMD diff of live state against a per-driver shadow yields a
//!    [`compare::ChangeSet`]; [`history`] stamps when each property last changed;
//! 4. [`net`]: per connection, what to send (conditions, resends), shared serialization, packets
//!    under an MTU, reliability (sequence window, feedback, keep-alives);
//! 5. [`wire`]: the bit-level grammar of packets, bunches, records and feedback;
//! 6. [`client`]: validates and applies packets, fires notifies, writes feedback;
//! 7. [`session`]: a stateless handshake, session tokens and datagram framing for a transport
//!    such as UDP, and state digests that tell whether a client converged.
//!
//! [`fastarray`] is UE's `FFastArraySerializer`: an array replicated as per-connection deltas of
//! its dirty items. [`ids`] holds the identity and mask types, [`link`] a seeded lossy link for tests,
//! [`memory`] the huge-page advice behind the page arrays, and
//! [`mod@reference`] the straightforward UE-style compare path the kernel is tested and
//! benchmarked against.
//!
//! ```
//! use shadowrep::prelude::*;
//! use std::sync::Arc;
//!
//! let layout = ClassBuilder::new("Counter")
//!     .property(PropertyDecl::new("Count", PropType::U32))
//!     .build()
//!     .expect("a valid layout");
//! let mut store = ClassStore::new(Arc::new(layout));
//! let mut shadow = ShadowState::new(&mut store);
//! let a = store.spawn();
//! store.set(a, 0, &Value::U32(7)).unwrap();
//! store.begin_tick();
//! let mut changes = ChangeSet::new();
//! shadow.compare(&mut store, &CompareConfig::default(), &mut changes).unwrap();
//! assert_eq!(changes.changelist(store.layout(), a.index), vec![1, 0]);
//! ```

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod client;
pub mod compare;
pub mod fastarray;
pub mod history;
pub mod ids;
pub mod link;
pub mod memory;
pub mod net;
pub mod reference;
pub mod schema;
pub mod session;
pub mod store;
pub mod value;
pub mod wire;

/// The names most users need.
pub mod prelude {
    pub use crate::client::{ClientEvent, ClientWorld, Receipt, RpcEvent};
    pub use crate::compare::{ChangeSet, CompareConfig, Isa, Kernels, PushMode, ShadowState};
    pub use crate::ids::{ClassId, ConnectionId, NetGuid};
    pub use crate::net::{DriverConfig, NetDriver};
    pub use crate::schema::{
        ClassBuilder, ClassLayout, Condition, LayoutError, Notify, PropType, PropertyDecl, RpcDecl, StructType,
        VectorQuant,
    };
    pub use crate::store::{ActorId, ClassStore, StoreError};
    pub use crate::value::{ObjectRef, Value};
}
