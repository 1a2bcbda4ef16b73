//! The random world's play: its characters and their parts (sub-objects under owner
//! conditions), each frame's random change (`change`: spawn, hand on, move out of relevancy
//! and back, make dormant or wake, add, change or remove parts, despawn) and the few calls
//! made on them (`make_calls`), each numbered by its argument. The server call review plays
//! the same world.
//!
//! (`pub(crate)`: what the root re-exports for `server_call_review`, as `pub(super)` there.)

use super::*;

const NAMES: [&str; 4] = [PING, SHOUT, HINT, WHISPER];

/// The part conditions the world draws: every connection, the owner's alone, all but the
/// owner's (so a part's channel opens and closes as its owner's ownership moves).
const CONDS: [SubObjectCondition; 3] =
    [SubObjectCondition::None, SubObjectCondition::OwnerOnly, SubObjectCondition::SkipOwner];

pub(crate) struct Part {
    pub(crate) id: ActorId,
    pub(crate) guid: NetGuid,
    cond: SubObjectCondition,
}

pub(crate) struct Char {
    pub(crate) id: ActorId,
    pub(crate) guid: NetGuid,
    pub(crate) owner: Option<usize>,
    pub(crate) parts: Vec<Part>,
}

/// What the random world does.
#[derive(Clone, Copy)]
pub(crate) struct Play {
    pub(crate) loss: f64,
    pub(crate) dormancy: bool,
}

/// The world's state beside the server's: characters, calls, the history.
pub(crate) struct Play0 {
    pub(crate) chars: Vec<Char>,
    pub(crate) calls: Vec<Call>,
    /// Every character's and part's GUID ever.
    pub(crate) known: Vec<NetGuid>,
    pub(crate) log: Vec<String>,
}

impl Play0 {
    /// The owner (client index) of actor `guid` now: a character's, or its part's owner's.
    pub(super) fn owner_of(&self, guid: NetGuid) -> Option<Option<usize>> {
        self.chars.iter().find(|ch| ch.guid == guid || ch.parts.iter().any(|p| p.guid == guid)).map(|ch| ch.owner)
    }
}

/// One random change of the world in `frame`.
pub(crate) fn change(w: &mut World, rng: &mut impl rand::Rng, st: &mut Play0, frame: u32, play: Play) {
    let clients = w.clients.len();
    let chars = &mut st.chars;
    let log = &mut st.log;
    let op = rng.random_range(0..30);
    let k = (!chars.is_empty()).then(|| rng.random_range(0..chars.len()));
    match (op, k) {
        (0..=2, _) if chars.len() < 5 || k.is_none() => {
            let id = w.chars.spawn();
            let at = if rng.random_bool(0.8) { NEAR } else { FAR };
            w.chars.set(id, LOCATION, &Value::Vector(at)).unwrap();
            w.chars.set(id, HEALTH, &Value::U32(1)).unwrap();
            let guid = w.driver.assign_guid(w.ch, &w.chars, id).unwrap();
            let owner = rng.random_bool(0.8).then(|| rng.random_range(0..clients));
            w.driver.set_owner(w.ch, &w.chars, id, owner.map(|o| w.clients[o].0), rng.random_bool(0.5)).unwrap();
            let mut ch = Char { id, guid, owner, parts: Vec::new() };
            log.push(format!("{frame}: spawn {guid} owner {owner:?} at {}", at[0]));
            st.known.push(guid);
            for _ in 0..rng.random_range(0..3) {
                let cond = CONDS[rng.random_range(0..CONDS.len())];
                let pid = w.parts.spawn();
                let pg = w.driver.register_sub_object(w.pt, &w.parts, pid, guid, cond).unwrap();
                log.push(format!("{frame}: part {pg} of {guid} {cond:?}"));
                st.known.push(pg);
                ch.parts.push(Part { id: pid, guid: pg, cond });
            }
            chars.push(ch);
        }
        // Handed on: to another client (or nobody).
        (3..=10, Some(k)) => {
            let o = rng.random_bool(0.85).then(|| rng.random_range(0..clients));
            let ch = &mut chars[k];
            ch.owner = o;
            w.driver.set_owner(w.ch, &w.chars, ch.id, o.map(|o| w.clients[o].0), rng.random_bool(0.5)).unwrap();
            log.push(format!("{frame}: {} to {o:?}", ch.guid));
        }
        (11..=13, Some(k)) => {
            let at = if rng.random_bool(0.5) { FAR } else { NEAR };
            w.chars.set(chars[k].id, LOCATION, &Value::Vector(at)).unwrap();
            log.push(format!("{frame}: {} at {}", chars[k].guid, at[0]));
        }
        (14..=15, Some(k)) if play.dormancy => {
            let d = if rng.random_bool(0.5) { Dormancy::DormantAll } else { Dormancy::Awake };
            w.driver.set_net_dormancy(w.ch, &w.chars, chars[k].id, d).unwrap();
            log.push(format!("{frame}: {} {d:?}", chars[k].guid));
        }
        (16, Some(k)) if chars[k].parts.len() < 3 => {
            let cond = CONDS[rng.random_range(0..CONDS.len())];
            let pid = w.parts.spawn();
            let pg = w.driver.register_sub_object(w.pt, &w.parts, pid, chars[k].guid, cond).unwrap();
            log.push(format!("{frame}: part {pg} of {} {cond:?}", chars[k].guid));
            st.known.push(pg);
            chars[k].parts.push(Part { id: pid, guid: pg, cond });
        }
        (17, Some(k)) if !chars[k].parts.is_empty() => {
            let i = rng.random_range(0..chars[k].parts.len());
            let cond = CONDS[rng.random_range(0..CONDS.len())];
            let p = &mut chars[k].parts[i];
            p.cond = cond;
            w.driver.set_sub_object_condition(w.pt, &w.parts, p.id, cond).unwrap();
            log.push(format!("{frame}: part {} now {cond:?}", p.guid));
        }
        (18, Some(k)) if !chars[k].parts.is_empty() => {
            let i = rng.random_range(0..chars[k].parts.len());
            let p = chars[k].parts.remove(i);
            w.parts.despawn(p.id).unwrap();
            log.push(format!("{frame}: part {} despawned", p.guid));
        }
        (19, Some(k)) if chars.len() > 1 => {
            let ch = chars.swap_remove(k);
            w.chars.despawn(ch.id).unwrap();
            for p in &ch.parts {
                w.parts.despawn(p.id).unwrap();
            }
            log.push(format!("{frame}: {} despawned", ch.guid));
        }
        _ => {}
    }
}

/// A few calls on random characters and parts in `frame`, each numbered by its argument.
pub(super) fn make_calls(w: &mut World, rng: &mut impl rand::Rng, st: &mut Play0, frame: u32) {
    let clients = w.clients.len();
    let mut made = Vec::new();
    for _ in 0..rng.random_range(0..4) {
        if st.chars.is_empty() {
            break;
        }
        let ch = &st.chars[rng.random_range(0..st.chars.len())];
        let name = NAMES[rng.random_range(0..NAMES.len())];
        let on_part = !ch.parts.is_empty() && rng.random_bool(0.4);
        let n = st.calls.len() as u32;
        let (guid, res) = if on_part {
            let p = &ch.parts[rng.random_range(0..ch.parts.len())];
            (p.guid, w.driver.call_rpc(w.pt, &w.parts, p.id, name, &[Value::U32(n)]))
        } else {
            (ch.guid, w.driver.call_rpc(w.ch, &w.chars, ch.id, name, &[Value::U32(n)]))
        };
        res.unwrap();
        assert_eq!(w.driver.owning_connection(w.ch, ch.id), ch.owner.map(|o| w.clients[o].0));
        made.push(format!("{name} {n} on {guid}"));
        st.calls.push(Call {
            frame,
            guid,
            name,
            owner: ch.owner,
            before: vec![None; clients],
            after: vec![false; clients],
        });
    }
    if !made.is_empty() {
        st.log.push(format!("{frame}: {}", made.join(", ")));
    }
}
