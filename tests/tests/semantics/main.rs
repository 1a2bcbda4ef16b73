//! Replication semantics, end to end and at the client's door: the condition map per connection
//! (owner, autonomous proxy, simulated proxy, replay, physics), privacy of owner-only data,
//! notifies, dynamic arrays, unmapped object references, malformed input and layout checksums.
//!
//! One test binary; each numbered section of the checklist is a module.

mod helpers;

mod arrays;
mod checksums;
mod conditions;
mod defaults;
mod malformed;
mod notifies;
mod privacy;
mod split;
mod unmapped;
mod wide;
