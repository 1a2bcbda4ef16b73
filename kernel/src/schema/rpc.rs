//! Remote procedure calls a class declares: UE's `UFUNCTION(Client)`, `UFUNCTION(NetMulticast)`
//! and `UFUNCTION(Server)`, reliable or not, with typed parameters.
//!
//! ```text
//! RpcDecl::client("ClientHitConfirmed").reliable().param(PropertyDecl::new("Damage", PropType::U16))
//!   → RpcLayout { target: Client, reliable: true, params: a layout "Class.ClientHitConfirmed" }
//! ```
//!
//! A call's parameters are laid out as a class of their own ([`RpcLayout::params`]: one parent
//! per parameter, in declaration order), so they take every property type — structs, static and
//! dynamic arrays, object references — and travel in the records of the wire a bunch uses, with
//! the parameters left at their zero value left out ([`crate::wire::rpc`]). A subclass inherits
//! its base's calls (the base's indices first, as its handles).
//!
//! Calls are numbered in their class by declaration ([`ClassLayout::rpcs`] index); both sides
//! must declare the same ones — the class checksum covers them.

use super::{ClassBuilder, ClassLayout, Condition, LayoutError, Notify, PropertyDecl};
use std::sync::Arc;

/// Most calls a class may declare (the wire's call index is a ranged integer of the class's width).
pub const MAX_RPCS: usize = 256;

/// Who a call reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RpcTarget {
    /// UE's `Client` RPC: the connection owning the actor
    /// ([`crate::net::NetDriver::set_owner`]), if its channel of the actor is open there.
    Client,
    /// UE's `NetMulticast` RPC: every connection with the actor's channel open (replay
    /// connections included).
    Multicast,
    /// UE's `Server` RPC: called by a client on an actor its connection owns, run on the server
    /// ([`crate::client::ClientWorld::call_server_rpc`], [`crate::net::NetDriver::take_server_rpcs`]).
    Server,
}

/// A declared call: its name, who it reaches, whether it is reliable, and its parameters.
#[derive(Clone, Debug)]
pub struct RpcDecl {
    name: String,
    target: RpcTarget,
    reliable: bool,
    params: Vec<PropertyDecl>,
}

impl RpcDecl {
    /// A `Client` call (the owning connection), unreliable until [`Self::reliable`].
    pub fn client(name: impl Into<String>) -> Self {
        Self { name: name.into(), target: RpcTarget::Client, reliable: false, params: Vec::new() }
    }

    /// A `NetMulticast` call (every connection with the actor's channel open), unreliable until
    /// [`Self::reliable`].
    pub fn multicast(name: impl Into<String>) -> Self {
        Self { name: name.into(), target: RpcTarget::Multicast, reliable: false, params: Vec::new() }
    }

    /// A `Server` call (a client calls it on an actor its connection owns), unreliable until
    /// [`Self::reliable`].
    pub fn server(name: impl Into<String>) -> Self {
        Self { name: name.into(), target: RpcTarget::Server, reliable: false, params: Vec::new() }
    }

    /// Reliable (UE's `Reliable`): delivered once, in call order among the connection's reliable
    /// calls, sent again until acknowledged. Unreliable calls are sent once or not at all.
    pub fn reliable(mut self) -> Self {
        self.reliable = true;
        self
    }

    /// Declares a parameter (a plain property: no condition, notify or push).
    pub fn param(mut self, decl: PropertyDecl) -> Self {
        self.params.push(decl);
        self
    }
}

/// A declared call as built into its class.
#[derive(Clone, Debug)]
pub struct RpcLayout {
    /// Its name.
    pub name: String,
    /// Who it reaches.
    pub target: RpcTarget,
    /// Reliable.
    pub reliable: bool,
    /// Its parameters as a layout (one parent per parameter, in order), named `Class.Call`.
    pub params: Arc<ClassLayout>,
}

/// Builds the calls of class `class` (after its base's `inherited` ones).
pub(super) fn build_rpcs(
    class: &str,
    inherited: &[RpcLayout],
    decls: &[RpcDecl],
) -> Result<Vec<RpcLayout>, LayoutError> {
    let mut out = inherited.to_vec();
    for d in decls {
        if d.name.is_empty() {
            return Err(LayoutError::EmptyName);
        }
        if out.iter().any(|r| r.name == d.name) {
            return Err(LayoutError::DuplicateRpc(d.name.clone()));
        }
        let mut params = ClassBuilder::new(format!("{class}.{}", d.name));
        for p in &d.params {
            if p.condition != Condition::None || p.notify != Notify::None || p.push {
                return Err(LayoutError::BadRpcParam {
                    rpc: d.name.clone(),
                    param: p.name.clone(),
                    why: "a parameter has no condition, notify or push".into(),
                });
            }
            params = params.property(p.clone());
        }
        let params = params.build().map_err(|e| LayoutError::BadRpcParam {
            rpc: d.name.clone(),
            param: String::new(),
            why: e.to_string(),
        })?;
        out.push(RpcLayout { name: d.name.clone(), target: d.target, reliable: d.reliable, params: Arc::new(params) });
    }
    if out.len() > MAX_RPCS {
        return Err(LayoutError::TooManyRpcs { class: class.to_string(), rpcs: out.len() });
    }
    Ok(out)
}

impl ClassLayout {
    /// The index of the call named `name`.
    pub fn rpc_index(&self, name: &str) -> Option<usize> {
        self.rpcs.iter().position(|r| r.name == name)
    }
}

/// Bits of a call's index in class `layout`'s call bunches: ⌈log₂ calls⌉ (none for a class with
/// one call).
pub fn rpc_index_bits(layout: &ClassLayout) -> u32 {
    let n = layout.rpcs.len().max(1) as u32;
    u32::BITS - (n - 1).leading_zeros()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::PropType;

    #[test]
    fn calls_build_with_their_parameters_and_subclasses_inherit_them() {
        let base = ClassBuilder::new("Pawn")
            .property(PropertyDecl::new("Hp", PropType::U16))
            .rpc(RpcDecl::client("ClientHit").reliable().param(PropertyDecl::new("Damage", PropType::U16)))
            .build()
            .unwrap();
        assert_eq!(base.rpcs.len(), 1);
        assert!(base.rpcs[0].reliable);
        assert_eq!(base.rpcs[0].params.name, "Pawn.ClientHit");
        assert_eq!(base.rpcs[0].params.parents.len(), 1);
        assert_eq!(rpc_index_bits(&base), 0);
        let sub = ClassBuilder::extends("Hero", &base)
            .rpc(RpcDecl::multicast("PlayEffect"))
            .rpc(RpcDecl::multicast("Emote").param(PropertyDecl::new("Id", PropType::U8)))
            .build()
            .unwrap();
        assert_eq!(sub.rpc_index("ClientHit"), Some(0));
        assert_eq!(sub.rpc_index("Emote"), Some(2));
        assert_eq!(sub.rpc_index("Nope"), None);
        assert_eq!(rpc_index_bits(&sub), 2);
        assert_ne!(
            base.checksum,
            ClassBuilder::new("Pawn").property(PropertyDecl::new("Hp", PropType::U16)).build().unwrap().checksum
        );
    }

    #[test]
    fn bad_declarations_are_refused() {
        let dup = ClassBuilder::new("A").rpc(RpcDecl::client("X")).rpc(RpcDecl::multicast("X")).build();
        assert_eq!(dup.unwrap_err(), LayoutError::DuplicateRpc("X".into()));
        let cond = ClassBuilder::new("A")
            .rpc(RpcDecl::client("X").param(PropertyDecl::new("P", PropType::U8).condition(Condition::OwnerOnly)))
            .build();
        assert!(matches!(cond, Err(LayoutError::BadRpcParam { .. })));
        let dup_param = ClassBuilder::new("A")
            .rpc(
                RpcDecl::client("X")
                    .param(PropertyDecl::new("P", PropType::U8))
                    .param(PropertyDecl::new("P", PropType::U8)),
            )
            .build();
        let err = dup_param.unwrap_err();
        assert!(matches!(err, LayoutError::BadRpcParam { .. }), "{err:?}");
        assert!(err.to_string().contains("`P`"), "{err}");
        let mut many = ClassBuilder::new("A");
        for i in 0..=MAX_RPCS {
            many = many.rpc(RpcDecl::multicast(format!("R{i}")));
        }
        assert!(matches!(many.build(), Err(LayoutError::TooManyRpcs { rpcs: 257, .. })));
        assert_eq!(ClassBuilder::new("A").rpc(RpcDecl::client("")).build().unwrap_err(), LayoutError::EmptyName);
    }
}
