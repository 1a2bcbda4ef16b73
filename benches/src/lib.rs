//! Workloads, measurement loops and the flamegraph profiler shared by the criterion benches
//! (`benches/benches/*.rs`) and the `shadowrep` command (`profiles/`).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod fastarray;
pub mod profiler;
pub mod replicate;
pub mod scenario;
pub mod workload;
