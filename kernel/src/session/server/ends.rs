//! How a session ends: the server says so ([`SessionServer::disconnect`]), or the client falls
//! silent past [`ServerConfig::idle_timeout`] ([`SessionServer::expire_with_notice`], which
//! frames the notice, or [`SessionServer::expire`]). (A client's own disconnect ends it in
//! `handle`.)
//!
//! [`ServerConfig::idle_timeout`]: super::ServerConfig::idle_timeout

use super::{Session, SessionServer};
use crate::ids::ConnectionId;
use crate::session::frame::{Datagram, DisconnectReason};
use std::net::SocketAddr;
use std::time::{Instant, SystemTime};

impl SessionServer {
    /// Ends `conn`'s session and returns the disconnect to send it.
    pub fn disconnect(&mut self, conn: ConnectionId, reason: DisconnectReason) -> Option<(SocketAddr, Vec<u8>)> {
        let addr = self.by_conn.get(&conn).copied()?;
        let s = self.sessions.get_mut(&addr)?;
        let token = s.token;
        let bytes = s.frame(&Datagram::Disconnect { token, reason });
        self.end(conn);
        Some((addr, bytes))
    }

    /// Forgets the taken tickets that have expired (a copy of one is refused by its expiry).
    pub(super) fn forget_expired_tickets(&mut self) {
        let unix = SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        self.forget_tickets_expired_at(unix);
    }

    /// [`Self::forget_expired_tickets`] at Unix time `unix` (seconds): a ticket expiring then
    /// or before is forgotten.
    fn forget_tickets_expired_at(&mut self, unix: u64) {
        if unix < self.first_expiry {
            return;
        }
        self.used.retain(|_, &mut (_, expires)| expires > unix);
        self.first_expiry = self.used.values().map(|&(_, expires)| expires).min().unwrap_or(u64::MAX);
    }

    /// The sessions not heard from for the idle timeout at `now`.
    fn idle(&self, now: Instant) -> Vec<ConnectionId> {
        let timeout = self.cfg.idle_timeout;
        self.sessions.values().filter(|s| now.saturating_duration_since(s.heard) > timeout).map(|s| s.conn).collect()
    }

    /// Ends `conn`'s session: its ticket (a sealed session's) may be taken again, from any
    /// address, until it expires — by the same player's client joining again, say, from
    /// another port.
    pub(super) fn end(&mut self, conn: ConnectionId) {
        let Some(addr) = self.by_conn.remove(&conn) else { return };
        let Some(s) = self.sessions.remove(&addr) else { return };
        if self.by_token.get(&s.token) == Some(&addr) {
            self.by_token.remove(&s.token);
        }
        self.hold_ticket(&s, None);
        self.stats.ended += 1;
    }

    /// Records that session `s`'s ticket (a sealed session's) is held at `holder` (`None`: by
    /// no live session).
    fn hold_ticket(&mut self, s: &Session, holder: Option<SocketAddr>) {
        if let Some(taken) = s.ticket.and_then(|(fingerprint, _)| self.used.get_mut(&fingerprint)) {
            taken.0 = holder;
        }
    }

    /// Moves the session at `from` to `to` (a sealed datagram of it opened from there).
    pub(super) fn move_session(&mut self, from: SocketAddr, to: SocketAddr) {
        let Some(s) = self.sessions.remove(&from) else { return };
        self.by_conn.insert(s.conn, to);
        self.by_token.insert(s.token, to);
        self.hold_ticket(&s, Some(to));
        self.sessions.insert(to, s);
        self.stats.moved += 1;
    }

    /// [`Self::expire`], telling each client why: the sessions not heard from for
    /// [`ServerConfig::idle_timeout`] end, and each comes back with the
    /// [`DisconnectReason::TimedOut`] datagram to send its address (a client that was only
    /// slow, or whose replies were lost, then knows to join again rather than talk to a server
    /// that drops its datagrams as from an unknown address).
    ///
    /// [`ServerConfig::idle_timeout`]: super::ServerConfig::idle_timeout
    pub fn expire_with_notice(&mut self, now: Instant) -> Vec<(ConnectionId, SocketAddr, Vec<u8>)> {
        self.forget_expired_tickets();
        self.idle(now)
            .into_iter()
            .filter_map(|c| self.disconnect(c, DisconnectReason::TimedOut).map(|(addr, bytes)| (c, addr, bytes)))
            .collect()
    }

    /// Ends every session not heard from for [`ServerConfig::idle_timeout`]; returns their
    /// connections (for `NetDriver::remove_connection`). Nothing is sent to them
    /// ([`Self::expire_with_notice`] frames the notice).
    ///
    /// [`ServerConfig::idle_timeout`]: super::ServerConfig::idle_timeout
    pub fn expire(&mut self, now: Instant) -> Vec<ConnectionId> {
        self.forget_expired_tickets();
        let gone = self.idle(now);
        for &c in &gone {
            self.end(c);
        }
        gone
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ServerConfig, SessionServer};
    use std::time::Instant;

    #[test]
    fn expired_tickets_are_forgotten_from_the_earliest_expiry_on_and_no_sooner() {
        let mut server = SessionServer::new(ServerConfig::new(vec![1]), Instant::now()).unwrap();
        for (k, expires) in [(1u8, 300u64), (2, 100), (3, 200)] {
            server.used.insert([k; 16], (None, expires));
            server.first_expiry = server.first_expiry.min(expires);
        }
        let held = |s: &SessionServer| {
            let mut k: Vec<u8> = s.used.keys().map(|f| f[0]).collect();
            k.sort_unstable();
            k
        };
        server.forget_tickets_expired_at(99);
        assert_eq!(held(&server), [1, 2, 3], "nothing expired yet");
        server.forget_tickets_expired_at(100);
        assert_eq!((held(&server), server.first_expiry), (vec![1, 3], 200), "at its expiry a ticket goes");
        server.forget_tickets_expired_at(250);
        assert_eq!((held(&server), server.first_expiry), (vec![1], 300), "the next earliest, once passed");
        server.forget_tickets_expired_at(1000);
        assert_eq!((held(&server), server.first_expiry), (vec![], u64::MAX));
    }
}
