//! The level's static actors and objects on the client: loaded with the level (UE's placed
//! actors and assets exist on both ends before any packet), bound to the GUIDs the server's
//! opens and exports give them, unloaded with a streamed-out sublevel.

use super::*;

impl ClientWorld {
    /// Makes a static object's GUID known; false (and nothing done) if `guid` is not odd.
    pub fn register_static(&mut self, guid: NetGuid) -> bool {
        if !guid.is_static() {
            return false;
        }
        self.statics.insert(guid);
        self.resolve(guid);
        true
    }

    /// Loads a static actor with the level (UE: the map's placed actors exist on both ends
    /// before any packet): an actor of class `class` at `path`, with default values until the
    /// server opens it by that path and its properties arrive. Returns its id in the class's
    /// store.
    pub fn load_static_actor(&mut self, path: &str, class: u32) -> Result<ActorId, ClientError> {
        if path.is_empty() || path.len() > MAX_PATH_BYTES {
            return Err(ClientError::BadStaticPath(path.to_string()));
        }
        let c = self.classes.get_mut(class as usize).ok_or(ClientError::UnknownClass(class))?;
        if self.level.contains_key(path) || self.objects.contains_key(path) {
            return Err(ClientError::BadStaticPath(path.to_string()));
        }
        let id = c.store.spawn();
        // Loaded again: the level's own copy, no longer one to bring back; its export waits no
        // more (the actor's open binds it).
        self.gone_statics.remove(path);
        self.pending_exports.remove(path);
        self.level.insert(path.into(), (class, id, None));
        Ok(id)
    }

    /// Loads a static object that is not an actor — an asset or a class the game has at `path`
    /// (`NetDriver::register_static_object` on the server). When a reference to it first
    /// arrives, the server's export binds its GUID to `path` and the reference resolves;
    /// [`Self::static_object_path`] maps the GUID back. An export that came before the path was
    /// loaded (counted in [`ClientStats::unknown_statics`]; the server does not send it again)
    /// is kept — the first [`MAX_PENDING_EXPORTS`] such — and binds when the path is loaded,
    /// resolving the references that waited for it (null until then, as any unmapped
    /// reference). A path already loaded (object or actor) is refused.
    ///
    /// ```
    /// use shadowrep::client::ClientWorld;
    ///
    /// let mut client = ClientWorld::new(&[], &[]).unwrap();
    /// client.load_static_object("/Game/DamageTypes/Fire").unwrap();
    /// assert!(client.load_static_object("/Game/DamageTypes/Fire").is_err());
    /// assert_eq!(client.static_object("/Game/DamageTypes/Fire"), None, "bound by the server's export");
    /// ```
    pub fn load_static_object(&mut self, path: &str) -> Result<(), ClientError> {
        if path.is_empty()
            || path.len() > MAX_PATH_BYTES
            || self.level.contains_key(path)
            || self.objects.contains_key(path)
        {
            return Err(ClientError::BadStaticPath(path.to_string()));
        }
        // An export that came before: it binds now.
        let pending = self.pending_exports.remove(path);
        self.objects.insert(path.into(), pending);
        if let Some(guid) = pending {
            self.bind_object(guid, path);
        }
        Ok(())
    }

    /// The path of static object `guid`, once the server's export bound it
    /// ([`Self::load_static_object`]).
    pub fn static_object_path(&self, guid: NetGuid) -> Option<&str> {
        self.object_paths.get(&guid).map(|p| &**p)
    }

    /// The GUID the server's export bound to the static object loaded at `path`, if any yet.
    pub fn static_object(&self, path: &str) -> Option<NetGuid> {
        self.objects.get(path).copied().flatten()
    }

    /// Unloads the static actor loaded at `path` (its sublevel streamed out: UE unloads the
    /// level's actors on the client itself, then tells the server, whose channel closes follow
    /// — [`crate::net::NetDriver::set_sublevel_loaded`]). Its copy is despawned and its GUID
    /// forgotten, so loading `path` again gives a fresh copy that the server's next open of the
    /// actor binds and fills with its current state. False (nothing done) if `path` is not
    /// loaded.
    pub fn unload_static_actor(&mut self, path: &str) -> bool {
        let Some(&(class, id, bound)) = self.level.get(path) else { return false };
        match bound {
            Some(guid) => {
                self.destroy(guid);
                // Unloaded by the game, not destroyed by a close: nothing to bring back.
                self.gone_statics.remove(path);
                // The server learns of the unload a round trip later: the packets it sent before
                // may carry plain updates of the actor. Read past and dropped as an ignored
                // static actor's (UE's client drops bunches of a channel it cleaned up with the
                // level), not refused with the rest of their packet — which the server would
                // send again whole, the client asking for this actor, and asked already, for its
                // neighbour (a reopen for nothing). The server's LevelUnloaded close, or its
                // open once the level is loaded again, ends the record (`apply_one`).
                if self.ignored.insert(guid, class, MAX_IGNORED) {
                    self.stats.ignored_evicted += 1;
                }
            }
            None => {
                self.level.remove(path);
                let _ = self.classes[class as usize].store.despawn(id);
            }
        }
        true
    }
}
