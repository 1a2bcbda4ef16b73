//! naia 0.25 on shadowrep's "Counter" workload.
//!
//! One process: a naia server + N naia clients over naia's in-memory transport
//! (`transport_local`, the transport naia's own benches use), driven by naia's
//! simulated clock (`test_time` / `TestClock`) so every loop iteration is exactly
//! one server tick of the protocol's tick interval (default 50 ms), independent
//! of how fast this 2-core machine runs the loop.
//!
//! Bytes are counted by wrapping the server's transport `PacketSender`: every
//! datagram payload naia hands to its transport (the exact bytes the UDP
//! transport would `send_to`) is counted per destination client address.
//! That includes naia's packet headers, piggybacked acks, heartbeats and pings.
//! It excludes IP/UDP headers (28 B per datagram on IPv4; packet counts are
//! reported so they can be added).
mod world;

use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::Arc,
    time::Duration,
};

use parking_lot::Mutex;

use naia_client::{
    transport::local::{LocalAddrCell, LocalClientSocket, Socket as ClientSocket},
    Client, ClientConfig,
};
use naia_server::{
    transport::{
        local::{LocalServerSocket, Socket as LocalSocket},
        ListenResult, PacketSender, SendError, Socket,
    },
    ConnectEvent, RoomKey, Server, ServerConfig, UserKey,
};
use naia_shared::{
    transport::local::{LocalTransportHub, FAKE_SERVER_ADDR},
    Instant, Message, Property, Protocol, Replicate, TestClock,
};

use world::{Ent, World};

// ---------------------------------------------------------------- protocol

#[derive(Message)]
pub struct Auth;

#[derive(Replicate)]
pub struct Counter {
    pub count: Property<u32>,
}

fn protocol() -> Protocol {
    Protocol::builder()
        .add_default_channels()
        .add_message::<Auth>()
        .add_component::<Counter>()
        .build()
}

// ---------------------------------------------------------------- byte counting

#[derive(Default, Clone, Copy)]
struct Tally {
    bytes: u64,
    packets: u64,
    max_packet: u64,
}

type Stats = Arc<Mutex<HashMap<SocketAddr, Tally>>>;

struct CountingSocket {
    inner: Box<dyn Socket>,
    stats: Stats,
}

impl Socket for CountingSocket {
    fn listen(self: Box<Self>) -> ListenResult {
        let (auth_s, auth_r, sender, receiver) = self.inner.listen();
        (
            auth_s,
            auth_r,
            Box::new(CountingSender {
                inner: sender,
                stats: self.stats.clone(),
            }),
            receiver,
        )
    }
}

#[derive(Clone)]
struct CountingSender {
    inner: Box<dyn PacketSender>,
    stats: Stats,
}

impl PacketSender for CountingSender {
    fn send(&self, address: &SocketAddr, payload: &[u8]) -> Result<(), SendError> {
        {
            let mut s = self.stats.lock();
            let t = s.entry(*address).or_default();
            t.bytes += payload.len() as u64;
            t.packets += 1;
            t.max_packet = t.max_packet.max(payload.len() as u64);
        }
        self.inner.send(address, payload)
    }
}

// ---------------------------------------------------------------- rng

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9E3779B97F4A7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

// ---------------------------------------------------------------- args

struct Args {
    entities: usize,
    clients: usize,
    changed: f64,
    warmup: usize,
    ticks: usize,
    bandwidth: Option<u32>,
    seed: u64,
    settle: usize,
    json: bool,
}

fn parse_args() -> Args {
    let mut a = Args {
        entities: 10_000,
        clients: 16,
        changed: 0.1,
        warmup: 50,
        ticks: 200,
        bandwidth: None,
        seed: 1,
        settle: 100,
        json: false,
    };
    let v: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < v.len() {
        let val = || v.get(i + 1).expect("missing value").clone();
        match v[i].as_str() {
            "--entities" | "--actors" => { a.entities = val().parse().unwrap(); i += 1 }
            "--clients" | "--connections" => { a.clients = val().parse().unwrap(); i += 1 }
            "--changed" => { a.changed = val().parse().unwrap(); i += 1 }
            "--warmup" => { a.warmup = val().parse().unwrap(); i += 1 }
            "--ticks" => { a.ticks = val().parse().unwrap(); i += 1 }
            "--bandwidth" => {
                let s = val();
                a.bandwidth = if s == "default" { None } else { Some(s.parse().unwrap()) };
                i += 1
            }
            "--seed" => { a.seed = val().parse().unwrap(); i += 1 }
            "--settle" => { a.settle = val().parse().unwrap(); i += 1 }
            "--json" => a.json = true,
            other => panic!("unknown arg {other}"),
        }
        i += 1;
    }
    a
}

// ---------------------------------------------------------------- harness

struct Harness {
    hub: LocalTransportHub,
    server: Server<Ent>,
    sworld: World,
    clients: Vec<(Client<Ent>, World)>,
    stats: Stats,
    tick_ms: u64,
    server_ticks: u64,
    room: Option<RoomKey>,
    users: Vec<UserKey>,
}

impl Harness {
    /// One loop iteration == one server tick (simulated clock advanced by the tick interval).
    /// `mutate` runs right after the server's tick event, before `send_all_packets`.
    fn step(&mut self, mutate: &mut dyn FnMut(&mut Server<Ent>, &mut World)) -> u64 {
        TestClock::advance(self.tick_ms);
        let now = Instant::now();
        self.hub.process_time_queues();

        // clients: receive what the server sent last tick, apply, send acks/heartbeats
        for (c, w) in self.clients.iter_mut() {
            c.receive_all_packets();
            c.process_all_packets(w.proxy_mut(), &now);
            let _ = c.take_world_events();
            let _ = c.take_tick_events(&now);
            c.send_all_packets(w.proxy());
        }

        // server
        self.server.receive_all_packets();
        self.server.process_all_packets(self.sworld.proxy_mut(), &now);
        let mut events = self.server.take_world_events();
        for (_kind, auths) in events.take_auths() {
            for (uk, _) in auths {
                self.server.accept_connection(&uk);
            }
        }
        for uk in events.read::<ConnectEvent>() {
            if self.room.is_none() {
                self.room = Some(self.server.create_room().key());
            }
            self.server.room_mut(self.room.as_ref().unwrap()).add_user(&uk);
            self.users.push(uk);
        }
        let mut ticks = self.server.take_tick_events(&now);
        let n_ticks = ticks.read::<naia_server::TickEvent>().count() as u64;
        self.server_ticks += n_ticks;
        if n_ticks > 0 {
            mutate(&mut self.server, &mut self.sworld);
        }
        self.server.send_all_packets(self.sworld.proxy());
        n_ticks
    }

    fn take_stats(&mut self) -> HashMap<SocketAddr, Tally> {
        std::mem::take(&mut *self.stats.lock())
    }
}

fn counts_sum(w: &World) -> (usize, u64) {
    let mut n = 0;
    let mut s = 0u64;
    for (id, _) in w.entities.iter() {
        if let Some(c) = w.get::<Counter>(&Ent(*id)) {
            n += 1;
            s += *c.count as u64;
        }
    }
    (n, s)
}

fn sorted_counts(w: &World) -> Vec<u32> {
    let mut v: Vec<u32> = w
        .entities
        .keys()
        .filter_map(|id| w.get::<Counter>(&Ent(*id)).map(|c| *c.count))
        .collect();
    v.sort_unstable();
    v
}

fn main() {
    let args = parse_args();
    TestClock::init(0);

    let proto = protocol();
    let tick_ms = proto.tick_interval.as_millis() as u64;

    let server_addr: SocketAddr = FAKE_SERVER_ADDR.parse().unwrap();
    let hub = LocalTransportHub::new(server_addr);
    hub.enable_packet_recording();

    let mut sconf = ServerConfig::default();
    let mut cconf = ClientConfig::default();
    if let Some(bw) = args.bandwidth {
        sconf.connection.bandwidth.target_bytes_per_sec = bw;
        cconf.connection.bandwidth.target_bytes_per_sec = bw;
    }
    let server_bw = sconf.connection.bandwidth.target_bytes_per_sec;

    let stats: Stats = Arc::new(Mutex::new(HashMap::new()));
    let mut server: Server<Ent> = Server::new(sconf, proto.clone());
    let inner: Box<dyn Socket> = Box::new(LocalSocket::new(LocalServerSocket::new(hub.clone()), None));
    let counting: Box<dyn Socket> = Box::new(CountingSocket { inner, stats: stats.clone() });
    server.listen(counting);

    let mut clients = Vec::new();
    for _ in 0..args.clients {
        let mut c: Client<Ent> = Client::new(cconf.clone(), proto.clone());
        let (caddr, areq, aresp, dtx, drx) = hub.register_client();
        let cell = LocalAddrCell::new();
        cell.set_sync(hub.server_addr());
        let inner = LocalClientSocket::new_with_tokens(
            caddr,
            hub.server_addr(),
            areq,
            aresp,
            dtx,
            drx,
            cell,
            Arc::new(Mutex::new(None)),
            Arc::new(Mutex::new(None)),
        );
        c.auth(Auth);
        c.connect(ClientSocket::new(inner, None));
        clients.push((c, World::default()));
    }

    let mut h = Harness {
        hub,
        server,
        sworld: World::default(),
        clients,
        stats,
        tick_ms,
        server_ticks: 0,
        room: None,
        users: Vec::new(),
    };

    // ---- connect
    let mut guard = 0;
    while h.users.len() < args.clients || !h.clients.iter().all(|(c, _)| c.connection_status().is_connected()) {
        h.step(&mut |_, _| {});
        guard += 1;
        assert!(guard < 2000, "clients did not connect");
    }
    eprintln!("connected {} clients after {} ticks", args.clients, guard);

    // ---- spawn
    let room = h.room.unwrap();
    let mut ents: Vec<Ent> = Vec::with_capacity(args.entities);
    for i in 0..args.entities {
        let e = h
            .server
            .spawn_entity(h.sworld.proxy_mut())
            .insert_component(Counter::new_complete(i as u32))
            .id();
        h.server.room_mut(&room).add_entity(&e);
        ents.push(e);
    }
    let expect_sum = |w: &World| counts_sum(w);
    let (_, mut server_sum) = expect_sum(&h.sworld);

    // ---- initial sync (not measured)
    let t0 = std::time::Instant::now();
    let mut sync_ticks = 0;
    loop {
        h.step(&mut |_, _| {});
        sync_ticks += 1;
        let done = h
            .clients
            .iter()
            .all(|(_, w)| counts_sum(w) == (args.entities, server_sum));
        if done {
            break;
        }
        assert!(sync_ticks < 100_000, "initial sync never completed");
    }
    // idle settle ticks: let the server receive acks for every spawn (spawns that were
    // delivered but not acked inside naia's 33-packet ack window get resent until acked;
    // until then naia does not send updates for that entity)
    for _ in 0..args.settle {
        h.step(&mut |_, _| {});
    }
    let _ = h.take_stats();
    let _ = h.hub.take_recorded_packets();
    eprintln!(
        "initial sync: {} ticks ({:.1} s simulated, {:.1} s wall)",
        sync_ticks,
        sync_ticks as f64 * tick_ms as f64 / 1000.0,
        t0.elapsed().as_secs_f64()
    );

    // ---- steady state
    let k = ((args.changed * args.entities as f64).round() as usize).min(args.entities);
    let mut rng = Rng(args.seed);
    let mut idx: Vec<usize> = (0..args.entities).collect();
    let total = args.warmup + args.ticks;

    let mut per_tick_client: Vec<u64> = Vec::new(); // bytes per (tick, client)
    let mut per_tick_mean: Vec<f64> = Vec::new();
    let mut sum_bytes = 0u64;
    let mut sum_packets = 0u64;
    let mut max_packet = 0u64;
    let mut rec_s2c = 0u64;
    let mut rec_c2s = 0u64;
    let mut rec_c2s_pk = 0u64;
    let mut lag_ticks_hist: HashMap<usize, usize> = HashMap::new();
    let mut pending: Vec<u64> = Vec::new(); // server sum after each tick's mutation
    let mut client_behind_ticks = 0usize; // (tick, client) pairs where client not yet caught up 1 tick later
    let mut missing_ticks = 0;
    let wall = std::time::Instant::now();

    for t in 0..total {
        let mut mutated = 0usize;
        let n = h.step(&mut |srv, w| {
            for j in 0..k {
                let r = j + rng.below(args.entities - j);
                idx.swap(j, r);
                let e = ents[idx[j]];
                if let Some(mut c) = srv.entity_mut(w.proxy_mut(), &e).component::<Counter>() {
                    *c.count += 1;
                    mutated += 1;
                }
            }
        });
        if n != 1 {
            missing_ticks += 1;
        }

        // Note: the clients' processing inside step() applies packets sent in the PREVIOUS
        // iteration, so after this step clients should reflect the server state of tick t-1.
        if let Some(&prev_sum) = pending.last() {
            if t > args.warmup {
                for (_, w) in &h.clients {
                    let (_, s) = counts_sum(w);
                    if s != prev_sum {
                        client_behind_ticks += 1;
                    }
                    // lag = how many server ticks behind the newest server state this client is
                    let lag = pending.iter().rev().position(|&p| p == s).unwrap_or(usize::MAX);
                    *lag_ticks_hist.entry(lag).or_default() += 1;
                }
            }
        }
        server_sum += mutated as u64;
        pending.push(server_sum);

        let st = h.take_stats();
        let rec = h.hub.take_recorded_packets();
        if std::env::var_os("NAIA_BENCH_PROGRESS").is_some() {
            let b: u64 = st.values().map(|x| x.bytes).sum();
            let p: u64 = st.values().map(|x| x.packets).sum();
            let behind = h.clients.iter().filter(|(_, w)| counts_sum(w).1 != server_sum).count();
            eprintln!(
                "tick {t}/{total} wall {:.1}s bytes/client {:.0} packets/client {:.1} clients_not_at_latest {}",
                wall.elapsed().as_secs_f64(),
                b as f64 / args.clients as f64,
                p as f64 / args.clients as f64,
                behind
            );
        }
        if t >= args.warmup {
            let mut tick_total = 0u64;
            for (_, tally) in st.iter() {
                per_tick_client.push(tally.bytes);
                tick_total += tally.bytes;
                sum_packets += tally.packets;
                max_packet = max_packet.max(tally.max_packet);
            }
            // clients that got nothing this tick
            for _ in st.len()..args.clients {
                per_tick_client.push(0);
            }
            sum_bytes += tick_total;
            per_tick_mean.push(tick_total as f64 / args.clients as f64);
            for (s2c, b) in rec {
                if s2c {
                    rec_s2c += b.len() as u64;
                } else {
                    rec_c2s += b.len() as u64;
                    rec_c2s_pk += 1;
                }
            }
        }
    }
    let measure_wall = wall.elapsed().as_secs_f64();

    // ---- drain: no more changes; count how many ticks until every client equals the server
    let mut drain = 0;
    loop {
        let all = h.clients.iter().all(|(_, w)| counts_sum(w) == (args.entities, server_sum));
        if all || drain >= 2000 {
            break;
        }
        h.step(&mut |_, _| {});
        drain += 1;
    }
    let server_sorted = sorted_counts(&h.sworld);
    let all_equal = h.clients.iter().all(|(_, w)| sorted_counts(w) == server_sorted);
    let mut lag_hist: Vec<(usize, usize)> = lag_ticks_hist.into_iter().collect();
    lag_hist.sort();
    let lag_str = lag_hist.iter().map(|(l, n)| format!("\"{}\":{}", if *l == usize::MAX { "none".to_string() } else { l.to_string() }, n)).collect::<Vec<_>>().join(",");

    let ticks = args.ticks as f64;
    let mean = sum_bytes as f64 / ticks / args.clients as f64;
    let min_c = *per_tick_client.iter().min().unwrap_or(&0);
    let max_c = *per_tick_client.iter().max().unwrap_or(&0);
    let min_t = per_tick_mean.iter().cloned().fold(f64::INFINITY, f64::min);
    let max_t = per_tick_mean.iter().cloned().fold(0.0, f64::max);
    let pk = sum_packets as f64 / ticks / args.clients as f64;
    let expected_changes_per_tick = k;

    let out = format!(
        "{{\"naia_version\":\"0.25.0\",\"transport\":\"naia transport_local (in-memory), payload bytes counted at server PacketSender\",\
\"entities\":{},\"clients\":{},\"changed\":{},\"changes_per_tick\":{},\"tick_interval_ms\":{},\
\"server_bandwidth_target_bytes_per_sec\":{},\"warmup_ticks\":{},\"measured_ticks\":{},\
\"bytes_per_client_per_tick_mean\":{:.1},\"bytes_per_client_per_tick_min\":{},\"bytes_per_client_per_tick_max\":{},\
\"tick_mean_over_clients_min\":{:.1},\"tick_mean_over_clients_max\":{:.1},\
\"packets_per_client_per_tick\":{:.2},\"max_packet_bytes\":{},\
\"with_ipv4_udp_headers_bytes_per_client_per_tick\":{:.1},\
\"hub_recorder_server_to_client_bytes_per_client_per_tick\":{:.1},\
\"client_to_server_bytes_per_client_per_tick\":{:.1},\"client_to_server_packets_per_client_per_tick\":{:.2},\
\"client_tick_pairs_not_caught_up_one_tick_later\":{},\"iterations_without_exactly_one_server_tick\":{},\
\"client_lag_ticks_histogram\":{{{}}},\"drain_ticks_after_last_change\":{},\"final_all_clients_equal_server\":{},\"initial_sync_ticks\":{},\"settle_ticks\":{},\"measure_wall_s\":{:.1}}}",
        args.entities, args.clients, args.changed, expected_changes_per_tick, tick_ms,
        server_bw, args.warmup, args.ticks,
        mean, min_c, max_c, min_t, max_t, pk, max_packet,
        mean + 28.0 * pk,
        rec_s2c as f64 / ticks / args.clients as f64,
        rec_c2s as f64 / ticks / args.clients as f64,
        rec_c2s_pk as f64 / ticks / args.clients as f64,
        client_behind_ticks, missing_ticks, lag_str, drain, all_equal, sync_ticks, args.settle, measure_wall
    );
    let _ = Duration::from_millis(0);
    if args.json {
        println!("{out}");
    } else {
        println!("{}", out.replace(",\"", ",\n\"").replace("{", "{\n"));
    }
    if !all_equal {
        std::process::exit(1);
    }
}
