//! The body of one server frame: [`NetDriver::tick`] (in `mod.rs`, where it picks the thread)
//! runs `tick_body` — the stores matched to their classes, dormancy, gather, then the actor level
//! or, without it, shared encoding and each connection planned and written. Also what a frame did
//! ([`TickStats`], [`Stages`]) and what its compares found.

use super::connection::Connection;
use super::{plan, send, ClassId, DriverError, Frame, NetDriver};
use crate::store::ClassStore;

/// What one tick did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TickStats {
    /// Frame number.
    pub frame: Frame,
    /// Actors that changed.
    pub changed_actors: usize,
    /// (connection, actor) bunches written.
    pub bunches: usize,
    /// Packets written.
    pub packets: usize,
    /// Bytes written, over every connection.
    pub bytes: usize,
    /// Fixed-leaf records encoded into the shared arena.
    pub shared_records: usize,
    /// Actor level: actors on the consider list.
    pub due_actors: usize,
    /// Actor level: (connection, due actor) pairs relevant this frame.
    pub relevant_pairs: usize,
    /// Actor level: (connection, actor) pairs replicated this frame (opened or updated, even with
    /// nothing owed).
    pub sent_pairs: usize,
    /// Actor level: connections whose budget ran out before their candidates did.
    pub saturated_connections: usize,
    /// Where the frame's time went.
    pub stages: Stages,
}

/// Nanoseconds per step of a frame. The per-connection steps (`relevancy_query`, `priority`,
/// `write`) are summed over connections (CPU time: on N threads the wall time is about 1/N).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stages {
    /// Compare, slot tracking and history, every class.
    pub gather: u64,
    /// Actor level: the consider list.
    pub consider: u64,
    /// Actor level: dormancy's own work (connections looking for sleeping actors they have not
    /// met, before gather; actors falling asleep, after the connections).
    pub dormancy: u64,
    /// Actor level: building the relevancy index (grid, links).
    pub relevancy_index: u64,
    /// Shared serialization.
    pub share: u64,
    /// Every connection's step, wall time (without the actor level: planning and packets).
    pub connections: u64,
    /// Actor level, summed over connections: the relevant set of the viewers.
    pub relevancy_query: u64,
    /// Actor level, summed over connections: candidates and priority keys.
    pub priority: u64,
    /// Actor level, summed over connections: the send loop (relevancy rechecks, opens, closes,
    /// planning, packets).
    pub write: u64,
}

impl NetDriver {
    pub(super) fn tick_body(&mut self, stores: &mut [&mut ClassStore]) -> Result<TickStats, DriverError> {
        // Find each class's store before touching anything (store ids are unique and stores
        // cannot be cloned, so no class can be given twice).
        let mut order = vec![usize::MAX; self.classes.len()];
        for (i, s) in stores.iter().enumerate() {
            let &c = self.by_store.get(&s.id()).ok_or(DriverError::UnknownStore)?;
            order[c as usize] = i;
        }
        if let Some(missing) = order.iter().position(|&i| i == usize::MAX) {
            return Err(DriverError::MissingStore(ClassId(missing as u32)));
        }
        self.frame = Frame(self.frame.0 + 1);
        let frame = self.frame;
        self.rpcs.frame = super::rpc::FrameCalls::new(std::mem::take(&mut self.rpcs.next));
        self.subs.orphaned.retain(|o| o.frame.0 + 1 >= frame.0);
        self.finish_tear_offs();
        self.stats = TickStats { frame: self.frame, ..TickStats::default() };
        if let Some(level) = self.level.as_mut() {
            level.begin_frame(self.frame);
            let t = std::time::Instant::now();
            self.wake_for_viewers();
            self.stats.stages.dormancy = t.elapsed().as_nanos() as u64;
        }
        let t = std::time::Instant::now();
        self.gather(stores, &order)?;
        self.stats.stages.gather = t.elapsed().as_nanos() as u64;
        for g in self.fast.drop_orphans(&self.guids, &self.classes) {
            self.conns.iter_mut().for_each(|c| c.quiet.forget(g));
        }
        if self.level.is_some() {
            let stores: Vec<&ClassStore> = order.iter().map(|&si| &*stores[si]).collect();
            self.tick_level(&stores);
            return Ok(self.stats);
        }
        self.collect_changed();
        self.stats.changed_actors = self.changed.len();
        let parallel = self.cfg.parallel && self.parallel_worth_it();
        let stores: Vec<&ClassStore> = order.iter().map(|&si| &*stores[si]).collect();
        let t = std::time::Instant::now();
        if self.cfg.shared_serialization {
            self.stats.shared_records =
                self.arena.encode(&self.changed, &self.classes, &stores, (self.frame, self.cfg.parallel));
        } else {
            self.arena.clear();
        }
        self.stats.stages.share = t.elapsed().as_nanos() as u64;
        let t = std::time::Instant::now();
        self.plan_and_write(&stores, parallel);
        self.park_inactive_losses();
        self.prune_proxy_roles();
        self.stats.stages.connections = t.elapsed().as_nanos() as u64;
        Ok(self.stats)
    }

    /// Whether this frame's per-connection work is big enough to pay for waking the pool (an idle
    /// frame should cost next to nothing).
    fn parallel_worth_it(&self) -> bool {
        let pending: usize = self.conns.iter().map(|c| c.pending.len() + c.closes.queued.len()).sum();
        // A frame's calls go to connections as its changed actors do.
        (self.changed.len() + self.rpcs.frame.calls.len()) * self.conns.len() + pending >= self.cfg.min_parallel_items
    }

    /// Per connection, one after the other on a worker: its closes, then what to send (a
    /// connection whose window is full is planned too — it is the only moment this frame's
    /// changes are visited for it; writing then hands everything back to the pairs as resends),
    /// each send written as soon as it is planned, one bunch per actor into packets of at most
    /// `mtu` bytes. Planning and writing together keep a pair's state in the cache between the
    /// two (planned for every connection first, a large world's pair states were gone by the time
    /// they were written; planned for one connection first, its list of sends was).
    fn plan_and_write(&mut self, stores: &[&ClassStore], parallel: bool) {
        let (frame, changed) = (self.frame, (&self.changed[..], &self.changed_actors[..]));
        self.rpcs.frame.resolve(&self.guids);
        let ctx = send::WriteCtx {
            classes: &self.classes,
            stores,
            arena: self.cfg.shared_serialization.then_some(&self.arena),
            keep_alive_frames: self.cfg.keep_alive_frames,
            statics: &self.statics,
            outers: &self.subs.outer,
            guids: &self.guids,
            fast: &self.fast,
            marks_opens: false,
            calls: &self.rpcs.frame,
        };
        let classes = &self.classes;
        let write = |(ci, conn): (usize, &mut Connection)| {
            let mut st = ctx.begin(conn);
            if conn.removed {
                return send::Written::default();
            }
            ctx.write_closes(conn, &mut st);
            let mut cursor = 0;
            plan::plan_connection(ci as u32, conn, classes, changed, frame, |conn, item| {
                ctx.write_planned(conn, &mut st, &mut cursor, item)
            });
            ctx.end_connection(ci as u32, conn, st)
        };
        let written: Vec<send::Written> = if parallel {
            super::share::share_mut(&mut self.conns, |ci, c| write((ci, c)))
        } else {
            self.conns.iter_mut().enumerate().map(write).collect()
        };
        for w in written {
            self.stats.bunches += w.bunches;
            self.stats.packets += w.packets;
            self.stats.bytes += w.bytes;
        }
    }

    /// Push-model validation's findings since the last call, over every class, leaving none:
    /// changes of push-based properties made without a dirty mark (not replicated, exactly as
    /// with validation off). Empty unless `DriverConfig::compare.validate_push` is on.
    pub fn take_unmarked_changes(&mut self) -> Vec<crate::compare::UnmarkedChange> {
        self.classes.iter_mut().flat_map(|c| c.shadow.take_unmarked_changes()).collect()
    }

    /// Unmarked changes found, over every class, while a class held
    /// [`crate::compare::MAX_UNMARKED_CHANGES`] untaken: counted, not kept.
    pub fn unmarked_changes_dropped(&self) -> u64 {
        self.classes.iter().map(|c| c.shadow.unmarked_changes_dropped()).sum()
    }

    /// Class `class`'s per-property dirty statistics (counted while
    /// `DriverConfig::compare.dirty_stats` is on).
    pub fn dirty_stats(&self, class: ClassId) -> Result<&[crate::compare::PropertyDirtyStats], DriverError> {
        let c = self.classes.get(class.0 as usize).ok_or(DriverError::UnknownClass(class))?;
        Ok(c.shadow.dirty_stats())
    }
}
