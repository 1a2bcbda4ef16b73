//! Workloads and measurement loops shared by the criterion benches (`benches/benches/*.rs`) and
//! the `shadowrep` command (`profiles/`).
//!
//! The library depends on neither criterion nor pprof (they are the benches' dev-dependencies),
//! so the command builds without them; the command's flamegraphs watch [`phase`]'s probe.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod fastarray;
pub mod phase;
pub mod replicate;
pub mod scenario;
pub mod workload;
