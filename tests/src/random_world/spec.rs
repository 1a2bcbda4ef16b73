//! What a random world is made of ([`Spec`]): its seed and clients, its link's loss, and the
//! features the game exercises — each with dice of its own, so a world without one is the same as
//! before the feature existed.

/// One random world: its seed, its clients (the last a replay connection), the share of packets
/// its link loses, whether the sub-objects' class is registered before the owners', whether the
/// game uses dormancy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spec {
    pub seed: u64,
    pub connections: usize,
    pub loss: f64,
    pub bags_first: bool,
    pub dormancy: bool,
    pub sublevels: bool,
    pub priority_hooks: bool,
    pub net_groups: bool,
    pub dynamic_conditions: bool,
    pub class_defaults: bool,
    pub net_temporary: bool,
    pub initial_only: bool,
    pub sub_conditions: bool,
    pub replicates: bool,
    pub wide: bool,
    pub rpcs: bool,
    pub owner_chains: bool,
    pub remove_fast_arrays: bool,
    pub late_feedback: bool,
    pub interleaved_feedback: bool,
    pub replayed_feedback: bool,
    pub lying_feedback: bool,
    pub stale_reopens: bool,
    pub fresh_calls: bool,
    /// Bytes each packet costs the budget beyond its payload
    /// ([`shadowrep::net::ActorLevelConfig::packet_overhead`]; UE's 28 unless set).
    pub packet_overhead: u32,
}

impl Spec {
    /// World `seed` with `connections` clients over a perfect link, owners' class first, no
    /// dormancy.
    pub fn new(seed: u64, connections: usize) -> Spec {
        Spec {
            seed,
            connections,
            loss: 0.0,
            bags_first: false,
            dormancy: false,
            sublevels: false,
            priority_hooks: false,
            net_groups: false,
            dynamic_conditions: false,
            class_defaults: false,
            net_temporary: false,
            initial_only: false,
            sub_conditions: false,
            replicates: false,
            wide: false,
            rpcs: false,
            owner_chains: false,
            remove_fast_arrays: false,
            late_feedback: false,
            interleaved_feedback: false,
            replayed_feedback: false,
            lying_feedback: false,
            stale_reopens: false,
            fresh_calls: false,
            packet_overhead: shadowrep::net::budget::DEFAULT_PACKET_OVERHEAD,
        }
    }

    /// The same with `bytes` of overhead a packet (UE's 28 for IPv4 and UDP unless set).
    pub fn packet_overhead(self, bytes: u32) -> Spec {
        Spec { packet_overhead: bytes, ..self }
    }

    /// The same where a client's feedback now and then arrives after the game's calls of the
    /// next frame, not right after the tick (a real server reads its sockets whenever it
    /// likes): its acknowledgements then meet the game's changes — a slot reused, a channel
    /// ended, an actor woken — before the tick sees them. Dice of their own.
    pub fn late_feedback(self) -> Spec {
        Spec { late_feedback: true, ..self }
    }

    /// The same as [`Spec::late_feedback`] where each held feedback arrives at a point of its
    /// own among the game's next calls — before any, between two kinds of call (moves, owners,
    /// settings, replication switches, streamed statics, joins and leaves, silences and net
    /// speeds, tear-offs, despawns and spawns, dormancy, sublevels, viewers, inventories, hooks,
    /// groups, conditions, calls), or after all — not only after every one: a reopen request may
    /// meet a wake but not the despawn that follows it, an acknowledgement a slot reused but not
    /// the spawn into it. Dice of their own.
    pub fn interleaved_feedback(self) -> Spec {
        Spec { late_feedback: true, interleaved_feedback: true, ..self }
    }

    /// The same where the link now and then delivers a client's earlier feedback again, before
    /// or after its newest (a datagram duplicated or reordered): nothing it settles is new, but
    /// its reopen requests and its Server calls come again. Dice of their own.
    pub fn replayed_feedback(self) -> Spec {
        Spec { replayed_feedback: true, ..self }
    }

    /// The same where clients now and then lie: a feedback claims a packet it missed received
    /// (a hostile client's, or a broken one's). Both sides settle it as delivered; the liar,
    /// lacking what it claimed, refuses packets (allowed in these worlds alone) and asks again.
    /// Dice of their own.
    pub fn lying_feedback(self) -> Spec {
        Spec { lying_feedback: true, ..self }
    }

    /// The same where a client's feedback now and then asks again for an actor or an array some
    /// client held once — held still, dormant, torn off, or gone with its slot reused: a request
    /// riding several feedbacks that arrives late, or a forger's. Dice of their own.
    pub fn stale_reopens(self) -> Spec {
        Spec { stale_reopens: true, ..self }
    }

    /// The same where the game now and then spawns an actor and at once, before any tick gave it
    /// a NetGUID, makes it dormant, flushes it or tears it off (the call gives it its GUID).
    /// Dice of their own.
    pub fn fresh_calls(self) -> Spec {
        Spec { fresh_calls: true, ..self }
    }

    /// The same where the game now and then removes an inventory (a fast array) from its live
    /// owner (`NetDriver::remove_fast_array`), from dice of their own: a client that may hold it
    /// gets its close — on both sides, each by its own state of the array.
    pub fn remove_fast_arrays(self) -> Spec {
        Spec { remove_fast_arrays: true, ..self }
    }

    /// The same over a link that loses `loss` of the packets (and now and then goes dark for a
    /// client).
    pub fn loss(self, loss: f64) -> Spec {
        Spec { loss, ..self }
    }

    /// The same with the sub-objects' class registered before their owners'.
    pub fn bags_first(self) -> Spec {
        Spec { bags_first: true, ..self }
    }

    /// The same with the game putting actors to sleep and waking them, on a wider map.
    pub fn dormancy(self) -> Spec {
        Spec { dormancy: true, ..self }
    }

    /// The same with actors in sublevels the clients stream in and out.
    pub fn sublevels(self) -> Spec {
        Spec { sublevels: true, ..self }
    }

    /// The same with the classes' own priorities ([`shadowrep::net::PriorityHook`]) set and
    /// taken back as the world runs: the things' from frame 20 to 180 (scaling, replacing and
    /// spoiling UE's answer — negative, NaN — and asking the viewer), the bags' from frame 60 on
    /// (a bag under owner relevancy whose owner is a thing asks its own class's first).
    pub fn priority_hooks(self) -> Spec {
        Spec { priority_hooks: true, ..self }
    }

    /// The same with sub-objects and fast arrays under `NetGroup` conditions: half the
    /// sub-objects and three in ten fast arrays in some of the game's groups 0 to 2 (and now and
    /// then the owner's and the replays'), the connections in some of them, and every fifth
    /// frame a connection's groups and a sub-object's changing.
    pub fn net_groups(self) -> Spec {
        Spec { net_groups: true, ..self }
    }

    /// The same with the bags' class carrying a Dynamic parent, `Mood`: every third frame a few
    /// bags (sub-objects among them) get a new value of it and a new condition of their own for
    /// it (`set_dynamic_condition`: any but the initial-only ones, or the class's rule again),
    /// and a fast array a new condition (`set_fast_array_condition`), from dice of its own.
    pub fn dynamic_conditions(self) -> Spec {
        Spec { dynamic_conditions: true, ..self }
    }

    /// The same with the bags' class declaring class defaults for most of its fixed properties
    /// (`PropertyDecl::default_value`): a new bag holds them on the server and on every client,
    /// its open sends what differs, and the reference's objects start from them too.
    pub fn class_defaults(self) -> Spec {
        Spec { class_defaults: true, ..self }
    }

    /// The same with the bags' class past 64 leaves (twenty eight-byte ledgers more, under
    /// four conditions), a few of each played bag's ledger bytes changing each frame from dice
    /// of their own: masks of leaf groups planned, sent, lost and resent alike.
    pub fn wide(self) -> Spec {
        Spec { wide: true, ..self }
    }

    /// The same with a quarter of the actors temporary (UE's `bNetTemporary`,
    /// `NetSettings::net_temporary`), drawn from dice of their own at spawn and at each change
    /// of an actor's settings (so the flag comes and goes): a connection sends one its open,
    /// and nothing more unless that open is lost.
    pub fn net_temporary(self) -> Spec {
        Spec { net_temporary: true, ..self }
    }

    /// The same with some sub-objects initial-only (UE's `COND_InitialOnly`,
    /// `SubObjectCondition::InitialOnly`), drawn from dice of their own as each is registered: a
    /// connection gets one with its owner's initial bunch only.
    pub fn initial_only(self) -> Spec {
        Spec { initial_only: true, ..self }
    }

    /// The same with some sub-objects under UE's other conditions (`SimulatedOrPhysics`,
    /// `SimulatedOnlyNoReplay`, `SimulatedOrPhysicsNoReplay`, `InitialOrOwner`), drawn from dice of
    /// their own as each is registered: the owners' physics, autonomy and ownership changes of
    /// the world move them in and out of connections.
    pub fn sub_conditions(self) -> Spec {
        Spec { sub_conditions: true, ..self }
    }

    /// The same with the game switching actors' replication off and on as the world runs (UE's
    /// `SetReplicates`, `NetDriver::set_replicates`), from dice of their own: an actor switched
    /// off is left as it was on every client until switched on again.
    pub fn replicates(self) -> Spec {
        Spec { replicates: true, ..self }
    }

    /// The same with the game calling its actors' remote procedures, of every kind, a few each
    /// frame: the calls ride the same packets (and budget) in both, and each client gets every
    /// actor's calls in call order, none twice.
    pub fn rpcs(self) -> Spec {
        Spec { rpcs: true, ..self }
    }

    /// The same with owning connections following owner chains
    /// (`ActorLevelConfig::owner_chain_connections`): a thing or bag whose owner actor a player
    /// owns is that player's, its owner-only parents and roles moving as the chains do.
    pub fn owner_chains(self) -> Spec {
        Spec { owner_chains: true, ..self }
    }
}
