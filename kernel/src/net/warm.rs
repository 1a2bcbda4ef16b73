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
//! frame-synchronous server's cores wait for the frame anyway.
//!
//! Liveness: a companion never blocks, and it ends when the frame's guard drops or after
//! `limit`, whichever is first. Only one frame at a time keeps the pool warm (a second driver
//! ticking at once runs cold): a companion that started nested inside another job's wait holds
//! that job until it ends, so two frames' companions could otherwise each hold the job the other
//! frame waits for; the limit bounds any such hold with work that is not a frame's.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Frames keeping the pool warm now (at most one; see the module docs).
static WARM_FRAMES: AtomicUsize = AtomicUsize::new(0);

/// A frame's hold on the pool's other workers: they stay awake until this is dropped.
pub(super) struct Warm {
    done: Arc<AtomicBool>,
}

impl Warm {
    /// Keeps every other worker of the current pool awake until the guard drops, or for at most
    /// `limit`. `None` (nothing started) on a thread outside any pool, in a pool of one thread,
    /// or while another frame keeps the pool warm.
    pub fn start(limit: Duration) -> Option<Warm> {
        let owner = rayon::current_thread_index()?;
        if rayon::current_num_threads() < 2 {
            return None;
        }
        if WARM_FRAMES.fetch_add(1, Ordering::AcqRel) != 0 {
            WARM_FRAMES.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        rayon::spawn_broadcast(move |ctx| {
            if ctx.index() != owner {
                stay_awake(&flag, limit);
            }
        });
        Some(Warm { done })
    }
}

impl Drop for Warm {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Release);
        WARM_FRAMES.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Runs the pool's work, or spins, until `done` or for `limit`.
fn stay_awake(done: &AtomicBool, limit: Duration) {
    let start = Instant::now();
    while !done.load(Ordering::Acquire) {
        if rayon::yield_now() != Some(rayon::Yield::Executed) {
            if start.elapsed() >= limit {
                return;
            }
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_companions_run_the_frames_work_and_end_with_it() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        pool.install(|| {
            // (Another test's frame may hold the pool-wide turn for a moment.)
            let warm = std::iter::repeat_with(|| Warm::start(Duration::from_secs(60)))
                .take(10_000)
                .find_map(|w| {
                    w.or_else(|| {
                        std::thread::sleep(Duration::from_millis(1));
                        None
                    })
                })
                .expect("a worker of a three-thread pool gets its turn");
            // A second frame at once runs cold.
            assert!(Warm::start(Duration::from_secs(60)).is_none());
            // The companions take part in the frame's phases (a join whose halves each wait for
            // the other would hang if no other worker ran one).
            let (a, b) = rayon::join(|| (0..1000u64).sum::<u64>(), || (0..1000u64).map(|x| x * 2).sum::<u64>());
            assert_eq!((a, b), (499_500, 999_000));
            drop(warm);
        });
        // The companions ended with the frames: the pool's threads take new work.
        assert_eq!(pool.install(|| rayon::join(|| 1, || 2)), (1, 2));
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
}
