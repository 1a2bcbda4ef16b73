//! Workloads and measurement loops shared by the criterion benches (`benches/benches/*.rs`) and
//! the `shadowrep` command (`profiles/`).
//!
//! The library depends on neither criterion nor (by default) pprof: criterion is the benches'
//! dev-dependency, pprof the optional feature `flamegraph` ([`flamegraph`]: the command's phase
//! flamegraphs, which watch [`phase`]'s probe), so the command builds lean.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod calls;
pub mod fastarray;
pub mod flamegraph;
pub mod phase;
pub mod replicate;
pub mod scenario;
pub mod workload;
