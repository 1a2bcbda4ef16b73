//! Sharing a frame phase's connections among the pool's threads.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

/// `task(i, &mut items[i])` for every item, shared among the pool's threads by [`share_out`];
/// the results in item order.
pub(super) fn share_mut<C: Send, R: Send>(items: &mut [C], task: impl Fn(usize, &mut C) -> R + Sync) -> Vec<R> {
    let slots: Vec<Mutex<Option<&mut C>>> = items.iter_mut().map(|c| Mutex::new(Some(c))).collect();
    let mut done = share_out(slots.len(), rayon::current_num_threads(), |i| {
        let item = slots[i].lock().unwrap_or_else(PoisonError::into_inner).take();
        item.map(|c| task(i, c))
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// Runs `task` once for each of `0..items`, on up to `threads` threads of the pool; returns the
/// results with their items, in no particular order.
///
/// The items are cut into one contiguous run per thread, each taken in order by its own
/// counter; a thread done with its run helps with the next ones, from where their owners are.
/// So each thread works through neighbouring items (battle_royale's connections in index order
/// share cells of the grid; taken turn about from one counter, their relevancy queries cost 13 %
/// more), and the threads finish within one item of each other. With `par_iter` the worker done
/// first waited on the other's last stolen piece (~0.1 ms a frame of battle_royale), fell
/// asleep, and its wake-up on a loaded VM ended the phase late by as much again.
fn share_out<T: Send>(items: usize, threads: usize, task: impl Fn(usize) -> Option<T> + Sync) -> Vec<(usize, T)> {
    let threads = threads.clamp(1, items.max(1));
    let bounds: Vec<usize> = (0..=threads).map(|k| k * items / threads).collect();
    let next: Vec<AtomicUsize> = bounds[..threads].iter().map(|&b| AtomicUsize::new(b)).collect();
    let work = |first: usize| {
        let mut done = Vec::new();
        for run in (first..threads).chain(0..first) {
            loop {
                let i = next[run].fetch_add(1, Ordering::Relaxed);
                if i >= bounds[run + 1] {
                    break;
                }
                if let Some(t) = task(i) {
                    done.push((i, t));
                }
            }
        }
        done
    };
    fan_out(0..threads, &work)
}

/// `work(k)` for each `k` of `ks`, forked over the pool; the results concatenated.
fn fan_out<T: Send>(ks: std::ops::Range<usize>, work: &(impl Fn(usize) -> Vec<T> + Sync)) -> Vec<T> {
    if ks.len() <= 1 {
        return ks.map(work).next().unwrap_or_default();
    }
    let mid = ks.start + ks.len() / 2;
    let (mut a, b) = rayon::join(|| fan_out(ks.start..mid, work), || fan_out(mid..ks.end, work));
    a.extend(b);
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_runs_once_whatever_the_threads() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        for items in [0, 1, 2, 3, 7, 100] {
            for threads in [0, 1, 2, 3, 8, 200] {
                let runs: Vec<AtomicUsize> = (0..items).map(|_| AtomicUsize::new(0)).collect();
                let mut done = pool.install(|| {
                    share_out(items, threads, |i| {
                        runs[i].fetch_add(1, Ordering::Relaxed);
                        // Every third item yields nothing: it is left out of the results.
                        (i % 3 != 2).then_some(i * 10)
                    })
                });
                assert!(runs.iter().all(|r| r.load(Ordering::Relaxed) == 1), "{items} items, {threads} threads");
                done.sort_unstable();
                let want: Vec<(usize, usize)> = (0..items).filter(|i| i % 3 != 2).map(|i| (i, i * 10)).collect();
                assert_eq!(done, want, "{items} items, {threads} threads");
            }
        }
    }

    #[test]
    fn share_mut_hands_each_item_to_its_task_and_keeps_the_order() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let mut items: Vec<u64> = (0..37).collect();
        let out = pool.install(|| {
            share_mut(&mut items, |i, x| {
                *x += 100;
                (i, *x)
            })
        });
        assert_eq!(out, (0..37).map(|i| (i, i as u64 + 100)).collect::<Vec<_>>());
        assert_eq!(items, (100..137).collect::<Vec<u64>>());
    }

    #[test]
    fn share_mut_works_from_outside_any_pool() {
        // A plain thread: the work goes to the global pool, and the caller waits for it.
        let out = std::thread::spawn(|| {
            let mut items = vec![1u32; 50];
            share_mut(&mut items, |i, x| *x + i as u32)
        })
        .join()
        .unwrap();
        assert_eq!(out, (1..51).collect::<Vec<u32>>());
    }
}
