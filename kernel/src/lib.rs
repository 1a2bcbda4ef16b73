//! # shadowrep
//!
//! A data-oriented re-creation of Unreal Engine's property replication: class layouts
//! ([`schema`]), structure-of-arrays stores ([`store`]), a SIMD compare of live state against
//! per-driver shadows ([`compare`]), and the straightforward UE-style path it is tested and
//! benchmarked against ([`reference`]).
//!
//! One frame, in order:
//! 1. game code writes actor state through [`store::ClassStore`] (typed setters mark push-based
//!    properties dirty);
//! 2. [`store::ClassStore::begin_tick`] hands the marks to every watching driver;
//! 3. [`compare::ShadowState::compare`] diffs live against shadow and yields a
//!    [`compare::ChangeSet`].
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
pub mod history;
pub mod ids;
pub mod link;
pub mod net;
pub mod reference;
pub mod schema;
pub mod store;
pub mod value;
pub mod wire;

/// The names most users need.
pub mod prelude {
    pub use crate::client::{ClientWorld, Receipt};
    pub use crate::compare::{ChangeSet, CompareConfig, Isa, Kernels, PushMode, ShadowState};
    pub use crate::ids::{ClassId, ConnectionId, NetGuid};
    pub use crate::net::{DriverConfig, NetDriver};
    pub use crate::schema::{
        ClassBuilder, ClassLayout, Condition, LayoutError, Notify, PropType, PropertyDecl, StructType, VectorQuant,
    };
    pub use crate::store::{ActorId, ClassStore, StoreError};
    pub use crate::value::{ObjectRef, Value};
}
