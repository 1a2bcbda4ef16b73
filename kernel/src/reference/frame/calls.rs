//! The channels a saturated connection opens for the tick's calls, UE's way
//! (`InternalProcessRemoteFunction`): call by call, in call order, a call that finds no channel
//! of its actor creates one and replicates the actor, outside the budget — a reliable call, or
//! a multicast, reaching this connection; here for the leftovers of a saturated frame, as the
//! kernel's `net::channels` opens them (its `calls.rs` says why there).

use super::asked::Asker;
use super::connection::{ConnView, Listed};
use super::replicate::replicate;
use super::*;
use crate::net::send::FrameWrite;
use crate::schema::RpcTarget;

impl RefConn {
    /// Opens and replicates, in call order, the channels the tick's calls need among `rest` (the
    /// leftovers of this saturated frame): an actor with no channel (nor a dormant copy),
    /// relevant, not a sub-object, not tearing off.
    pub(super) fn open_for_calls(
        &mut self,
        v: &ConnView<'_>,
        asker: &mut Asker<'_>,
        (write, st): (&WriteCtx<'_>, &mut FrameWrite),
        rest: &[Listed],
    ) {
        let ConnView { driver, ci, time, .. } = *v;
        let me = self.conn.id;
        // The leftovers by GUID, made at the first call that finds no channel.
        let mut leftovers: Option<crate::ids::GuidMap<usize>> = None;
        for call in &write.calls.calls {
            let reaches = match call.target {
                RpcTarget::Multicast => true,
                _ => call.owner == Some(me),
            };
            if !reaches || !(call.reliable || call.target == RpcTarget::Multicast) {
                continue;
            }
            if self.channels.contains_key(&call.guid) || self.dormant.contains_key(&call.guid) {
                continue;
            }
            let map = leftovers.get_or_insert_with(|| rest.iter().enumerate().map(|(k, l)| (l.cand.guid, k)).collect());
            let Some(&k) = map.get(&call.guid) else { continue };
            let Listed { cand, class: c, slot: s, .. } = rest[k];
            let class = &driver.classes[c as usize];
            let net = &class.actors[s as usize];
            let sub_object = class.cols.sub_condition[s as usize].is_some();
            if sub_object || net.tearing || !asker.ask(cand.index as usize) {
                continue;
            }
            if net.fast {
                for &g in driver.fast_arrays_of(call.guid) {
                    write.fast.restart(Side::Reference, ci, g);
                }
            }
            self.next_epoch = self.next_epoch.wrapping_add(1);
            let mut ch = RefChannel::new((c, s), self.next_epoch, self.conn.rel.next_seq().back(1));
            // Marked relevant for a while, as UE's frame marks the channel a call opened before
            // it (the kernel's `net::channels` `calls.rs` says why).
            ch.relevant_time = relevant_until(time.now, call.guid, ci as u32, time.frame);
            ch.last_update = time.now;
            let before = write.bits_written(&self.conn);
            replicate(driver, write, &mut self.conn, st, &mut ch, v.actor(c, s), ci as u32, time.frame);
            if ch.ever_opened && class.cols.settings[s as usize].net_temporary {
                self.sent_temporaries.insert(call.guid);
            }
            self.channels.insert(call.guid, ch);
            let bits = (write.bits_written(&self.conn) - before) as u32;
            let action = Action::OpenedForCall;
            self.decisions.sends.push(SendDecision { guid: call.guid, priority: cand.key, action, bits });
        }
    }
}
