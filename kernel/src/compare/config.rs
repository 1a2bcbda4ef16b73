//! How a compare runs ([`CompareConfig`], [`PushMode`]) and why one is refused
//! ([`CompareError`]).

use super::Kernels;
#[cfg(doc)]
use super::ShadowState;

/// Default [`CompareConfig::min_parallel_pages`].
pub const PARALLEL_MIN_PAGES: usize = 256;

/// A parent considered for at most this many lanes is diffed lane by lane.
pub const SPARSE_LANES: u32 = 2;

/// Which properties the compare restricts to dirty-marked lanes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PushMode {
    /// Push model off: every property is compared for every actor (dynamic arrays still only when
    /// written, which the store always knows).
    Off,
    /// Properties declared push-based are compared only where marked; the rest always.
    #[default]
    Declared,
    /// Every property is treated as push-based (the game marks every change, e.g. through the
    /// generated setters): only dirty bits are visited.
    All,
}

/// How to run a compare.
#[derive(Clone, Copy, Debug)]
pub struct CompareConfig {
    /// Push model.
    pub push: PushMode,
    /// Diff routines (an ISA).
    pub kernels: Kernels,
    /// Shard pages across the current rayon pool.
    pub parallel: bool,
    /// Fewer pages than this are compared on the calling thread even when `parallel` (waking
    /// the pool costs more than the work); default [`PARALLEL_MIN_PAGES`]. (A driver frame that
    /// keeps the pool awake compares the actor level's due actors on it from 32 pages, or this
    /// if fewer: there is no wake-up to pay.)
    pub min_parallel_pages: usize,
    /// Push-model validation (UE's `net.PushModelValidateProperties`): push-ruled fixed leaves
    /// are also compared in unmarked lanes, against a validation shadow of their own, and every
    /// change found without a mark is recorded (read it with
    /// [`ShadowState::take_unmarked_changes`]). Replication is unchanged: an unmarked change is
    /// still not sent, exactly as with the switch off. Costs a second shadow and a visit of every
    /// page. Default off.
    pub validate_push: bool,
    /// Count, per parent, the lanes compared with a mark and the lanes whose value changed
    /// (read them with [`ShadowState::dirty_stats`]). Default off.
    pub dirty_stats: bool,
}

impl Default for CompareConfig {
    fn default() -> Self {
        Self {
            push: PushMode::Declared,
            kernels: Kernels::best(),
            parallel: true,
            min_parallel_pages: PARALLEL_MIN_PAGES,
            validate_push: false,
            dirty_stats: false,
        }
    }
}

/// Why a compare was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompareError {
    /// The shadow was created for another store.
    ForeignStore,
}

impl std::fmt::Display for CompareError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "this shadow state watches a different store")
    }
}

impl std::error::Error for CompareError {}
