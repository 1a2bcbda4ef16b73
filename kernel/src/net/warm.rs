//! Keeping the pool's other workers awake through a frame.
//!
//! A frame has several parallel phases (the due selection, the compare, the consider step, the
//! relevancy index beside the shared encodings, the connections) with serial work between them.
//! A rayon worker with nothing to do sleeps within microseconds, and waking it is a futex and,
//! on a virtual machine, an inter-processor interrupt: measured on a two-core VM (Intel Xeon,
//! session 61), a `rayon::join` of two 20 µs halves after 10–1000 µs of serial work took 51–69 µs
//! — the second half started 19–34 µs late — against 20 µs with the other worker kept awake.
//! Every phase of a frame paid that wake-up on the frame's critical path.
//!
//! [`Warm::start`] hands every other worker of the current pool a companion job that stays
//! awake until the frame ends (the guard is dropped): it runs whatever work the pool has
//! (`rayon::yield_now`), and spins when there is none, so a phase's work is stolen as soon as
//! it is pushed. The cost is the other cores' time while the frame's serial steps run — a
//! frame-synchronous server's cores wait for the frame anyway (on a host with more busy threads
//! than cores, the spinning takes time from them).
//!
//! Liveness: a companion waits on nothing itself; it ends when the frame's guard drops, or
//! when it finds `limit` passed — it looks at the clock between the jobs it runs, so a long job
//! it took from the pool delays that. A worker takes its companion before it steals anything, so
//! a companion never sits below a job of its own frame; but a worker that waits inside some
//! other job (another driver's cold frame, the game's own rayon work) may take it there and hold
//! that job until the frame ends or the limit passes. Hence one frame at a time, process-wide,
//! keeps workers warm (a second frame at once, in any pool, runs cold): two frames' companions
//! could otherwise each sit on a job the other frame waits for, and only the limits would part
//! them.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Frames keeping workers warm now, process-wide (at most one; see the module docs).
static WARM_FRAMES: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread started a frame's companions and its own copy of the broadcast (which it
    /// skips) has not run yet. A worker runs its copy only when it looks for work — a thread
    /// made a worker by `use_current_thread` does so only while it waits in a join or a scope —
    /// so a thread whose frames never wait would pile up a copy a frame; it starts no more until
    /// the last one ran.
    static OWN_COPY_PENDING: Cell<bool> = const { Cell::new(false) };
}

/// What a frame and its companions share.
#[derive(Default)]
struct Shared {
    /// The frame ended: the companions stop.
    done: AtomicBool,
    /// Companions running now.
    running: AtomicUsize,
}

/// A frame's hold on the pool's other workers: they stay awake until this is dropped.
pub(super) struct Warm {
    shared: Arc<Shared>,
}

impl Warm {
    /// Keeps every other worker of the current pool awake until the guard drops, or for at most
    /// `limit`. `None` (nothing started) on a thread outside any pool, in a pool of one thread,
    /// while another frame keeps workers warm, or while this thread's copy of its last start is
    /// still queued.
    pub fn start(limit: Duration) -> Option<Warm> {
        let owner = rayon::current_thread_index()?;
        if rayon::current_num_threads() < 2 || OWN_COPY_PENDING.get() {
            return None;
        }
        if WARM_FRAMES.fetch_add(1, Ordering::AcqRel) != 0 {
            WARM_FRAMES.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        // The guard first: whatever happens below, dropping it gives the turn back.
        let warm = Warm { shared: Arc::default() };
        let shared = warm.shared.clone();
        OWN_COPY_PENDING.set(true);
        rayon::spawn_broadcast(move |ctx| {
            if ctx.index() == owner {
                OWN_COPY_PENDING.set(false);
            } else {
                shared.running.fetch_add(1, Ordering::AcqRel);
                stay_awake(&shared.done, limit);
                shared.running.fetch_sub(1, Ordering::AcqRel);
            }
        });
        Some(warm)
    }

    /// Companions running now.
    #[cfg(test)]
    fn running(&self) -> usize {
        self.shared.running.load(Ordering::Acquire)
    }
}

impl Drop for Warm {
    fn drop(&mut self) {
        self.shared.done.store(true, Ordering::Release);
        WARM_FRAMES.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Runs the pool's work, or spins, until `done` or until it finds `limit` passed (between jobs).
fn stay_awake(done: &AtomicBool, limit: Duration) {
    let start = Instant::now();
    while !done.load(Ordering::Acquire) && start.elapsed() < limit {
        if rayon::yield_now() != Some(rayon::Yield::Executed) {
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Waits up to ten seconds for `ok`.
    fn eventually(mut ok: impl FnMut() -> bool) -> bool {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if ok() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    }

    /// A frame's companions, started once no other test's frame holds the process-wide turn.
    fn start_when_free() -> Warm {
        let mut warm = None;
        assert!(eventually(|| {
            warm = warm.take().or_else(|| Warm::start(Duration::from_secs(60)));
            warm.is_some()
        }));
        warm.expect("started")
    }

    #[test]
    fn every_other_worker_runs_a_companion_until_the_frame_ends() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        pool.install(|| {
            let warm = start_when_free();
            // A second frame at once runs cold.
            assert!(Warm::start(Duration::from_secs(60)).is_none());
            // Both other workers keep a companion while the frame holds them, and run its work.
            assert!(eventually(|| warm.running() == 2), "{} companions", warm.running());
            let (a, b) = rayon::join(|| (0..1000u64).sum::<u64>(), || (0..1000u64).map(|x| x * 2).sum::<u64>());
            assert_eq!((a, b), (499_500, 999_000));
            assert_eq!(warm.running(), 2);
            let shared = warm.shared.clone();
            drop(warm);
            assert!(eventually(|| shared.running.load(Ordering::Acquire) == 0), "the companions end with the frame");
        });
        // The pool's threads take new work.
        assert_eq!(pool.install(|| rayon::join(|| 1, || 2)), (1, 2));
    }

    #[test]
    fn a_thread_starts_no_more_while_its_own_copy_waits_in_its_queue() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        pool.install(|| {
            drop(start_when_free());
            // This thread has not looked for work since: its copy is queued, and a frame that
            // never waits would queue one each frame.
            assert!(Warm::start(Duration::from_secs(60)).is_none());
            // Looking for work runs it; then a frame may start again.
            assert!(eventually(|| {
                rayon::yield_now();
                Warm::start(Duration::from_secs(60)).is_some()
            }));
        });
    }

    #[test]
    fn nothing_starts_outside_a_pool_or_in_a_pool_of_one() {
        assert!(std::thread::spawn(|| Warm::start(Duration::from_secs(1)).is_none()).join().unwrap());
        let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        assert!(one.install(|| Warm::start(Duration::from_secs(1)).is_none()));
    }

    #[test]
    fn a_companion_gives_up_after_its_limit() {
        let done = AtomicBool::new(false);
        let t = Instant::now();
        stay_awake(&done, Duration::from_millis(20));
        assert!(t.elapsed() >= Duration::from_millis(20));
    }

    #[test]
    fn a_companion_busy_with_the_pools_work_still_ends_at_its_limit() {
        // Work is always there to take (a job queues two more while fewer than 64 wait; the
        // stream dries up after five seconds): the limit is looked at between jobs, not only
        // when the pool is idle.
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let queued = Arc::new(AtomicUsize::new(0));
        let begun = Instant::now();
        fn job(queued: Arc<AtomicUsize>, begun: Instant) {
            queued.fetch_sub(1, Ordering::AcqRel);
            for _ in 0..2 {
                if begun.elapsed() < Duration::from_secs(5) && queued.load(Ordering::Acquire) < 64 {
                    queued.fetch_add(1, Ordering::AcqRel);
                    let q = queued.clone();
                    rayon::spawn(move || job(q, begun));
                }
            }
        }
        let ended = pool.install(|| {
            queued.fetch_add(1, Ordering::AcqRel);
            let q = queued.clone();
            rayon::spawn(move || job(q, begun));
            let done = AtomicBool::new(false);
            let t = Instant::now();
            stay_awake(&done, Duration::from_millis(20));
            t.elapsed()
        });
        assert!(ended >= Duration::from_millis(20) && ended < Duration::from_secs(2), "{ended:?}");
    }
}
