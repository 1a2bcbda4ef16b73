//! Remote procedure calls, server to client (`shadowrep::net`'s `rpc`, `shadowrep::client`'s
//! `rpcs`): who a call reaches, reliable calls once and in order through loss, duplication and
//! reordering, unreliable ones at most once, a reliable call held until its channel's open is
//! acknowledged, a stream that outlives a destroyed target, hostile call bunches, and the
//! errors a game can meet.
//!
//! One test binary; each topic is a module, the shared worlds and hand-made calls in `common`.

// Mutation pass (docs/mutation-pass-rpc.md): tests that kill mutants the suite let live. That
// document names them; each sits with its topic's tests.

mod common;

mod acknowledgements;
mod client_calls;
mod hostile;
mod hostile_clients;
mod limits;
mod ownership_review;
mod review;
mod server_call_review;
mod server_calls;
mod static_args;
