//! A throwaway Redis Cluster for integration tests: `masters * (1 + replicas)` nodes started with
//! [`RedisServer::start_with`] (a fresh port per attempt whose bus port, port + 10000, is free
//! too), joined with `redis-cli --cluster create`, and waited on until every node reports
//! `cluster_state:ok` and knows every other node. Dropping it kills every node by PID.
//!
//! Include it beside `redis_server.rs`:
//! `#[path = "support/redis_server.rs"] mod redis_server;` and
//! `#[path = "support/redis_cluster.rs"] mod redis_cluster;`.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use crate::redis_server::{RedisServer, free_port_with_bus};
pub use crate::redis_server::{cli, field};

/// A running cluster owned by the test.
pub struct RedisCluster {
    /// Every node, masters first as created (a failover may change who is master).
    pub nodes: Vec<RedisServer>,
}

impl RedisCluster {
    /// Starts `masters` masters with `replicas` replicas each. Node timeout 1 s, so a killed
    /// master's replica is promoted within a few seconds.
    pub fn start(masters: usize, replicas: usize) -> RedisCluster {
        RedisCluster::start_with(masters, replicas, &[], None)
    }

    /// [`RedisCluster::start`] with `extra` arguments for every node (see
    /// [`RedisServer::start_with`]). With `tls_ca`, the nodes' bus runs on TLS
    /// (`--tls-cluster yes` in `extra`): the cluster is then created over TLS, on the nodes'
    /// TLS ports, trusting that CA.
    pub fn start_with(masters: usize, replicas: usize, extra: &[String], tls_ca: Option<&str>) -> RedisCluster {
        for attempt in 0..3 {
            let mut args: Vec<String> = [
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
                "--cluster-node-timeout",
                "1000",
                // A replica promoted after its master died serves at once, and the cluster
                // keeps answering the slots it still covers.
                "--cluster-require-full-coverage",
                "no",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            args.extend_from_slice(extra);
            let nodes: Vec<RedisServer> =
                (0..masters * (1 + replicas)).map(|_| RedisServer::start_with(&args, free_port_with_bus)).collect();
            let port = |n: &RedisServer| if tls_ca.is_some() { n.tls_port.expect("a TLS port") } else { n.port };
            let addrs: Vec<String> = nodes.iter().map(|n| format!("127.0.0.1:{}", port(n))).collect();
            let mut create = match tls_ca {
                Some(ca) => vec!["--tls", "--cacert", ca, "--cluster", "create"],
                None => vec!["--cluster", "create"],
            };
            create.extend(addrs.iter().map(String::as_str));
            let r = replicas.to_string();
            create.extend(["--cluster-replicas", &r, "--cluster-yes"]);
            let cluster = RedisCluster { nodes };
            if cli(port(&cluster.nodes[0]), &create).is_some() && cluster.wait_ok(Duration::from_secs(30)) {
                return cluster;
            }
            eprintln!("the cluster did not form (attempt {attempt}); starting over on fresh ports");
        }
        panic!("a {masters}-master Redis Cluster did not form in 3 attempts");
    }

    /// Waits until every node that answers says `cluster_state:ok`, with all 16384 slots served
    /// and none suspected failing; `false` past `limit`.
    pub fn wait_ok(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if self.is_ok() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }

    fn is_ok(&self) -> bool {
        // A node that does not answer (killed by a failover test) has no say. A replica must
        // have finished its first sync, or it could not win an election later.
        self.nodes.iter().all(|n| {
            let Some(info) = cli(n.port, &["cluster", "info"]) else { return true };
            let Some(repl) = cli(n.port, &["info", "replication"]) else { return true };
            field(&info, "cluster_state").as_deref() == Some("ok")
                && field(&info, "cluster_slots_ok").as_deref() == Some("16384")
                && field(&info, "cluster_slots_pfail").as_deref() == Some("0")
                && (field(&repl, "role").as_deref() == Some("master")
                    || field(&repl, "master_link_status").as_deref() == Some("up"))
        })
    }

    /// The seed URLs: every node.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }

    /// The ports of the nodes that are masters now.
    pub fn master_ports(&self) -> Vec<u16> {
        self.nodes
            .iter()
            .filter(|n| {
                cli(n.port, &["info", "replication"]).is_some_and(|i| field(&i, "role").as_deref() == Some("master"))
            })
            .map(|n| n.port)
            .collect()
    }

    /// How many times the node on `port` ran `cmd` ([`crate::redis_server::calls`]).
    pub fn calls(&self, port: u16, cmd: &str) -> u64 {
        crate::redis_server::calls(port, cmd)
    }
}

/// The node id and port of the master serving `slot`, and of another master.
pub fn owner_and_other(cluster: &RedisCluster, slot: u16) -> ((String, u16), (String, u16)) {
    let port = cluster.nodes[0].port;
    let nodes = cli(port, &["cluster", "nodes"]).unwrap();
    let masters: Vec<(String, u16, String)> = nodes
        .lines()
        .filter(|l| l.contains("master"))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let p = f[1].split(['@', ':']).nth(1).unwrap().parse().unwrap();
            (f[0].to_string(), p, f[8..].join(" "))
        })
        .collect();
    let serves = |ranges: &str| {
        ranges.split_whitespace().any(|r| {
            let (a, b) = r.split_once('-').unwrap_or((r, r));
            matches!((a.parse::<u16>(), b.parse::<u16>()), (Ok(a), Ok(b)) if a <= slot && slot <= b)
        })
    };
    let owner = masters.iter().find(|m| serves(&m.2)).expect("an owner");
    let other = masters.iter().find(|m| m.0 != owner.0).expect("another master");
    ((owner.0.clone(), owner.1), (other.0.clone(), other.1))
}

pub fn keyslot(cluster: &RedisCluster, key: &str) -> u16 {
    cli(cluster.nodes[0].port, &["cluster", "keyslot", key]).unwrap().trim().parse().unwrap()
}

/// `slot` (empty) marked importing on `to` and migrating on `from`.
pub fn begin_migration(slot: u16, (from_id, from): (&str, u16), (to_id, to): (&str, u16)) {
    cli(to, &["cluster", "setslot", &slot.to_string(), "importing", from_id]).expect("IMPORTING");
    cli(from, &["cluster", "setslot", &slot.to_string(), "migrating", to_id]).expect("MIGRATING");
}

/// The migration of `slot` to `to` finished as the cluster spec says: the importing node first
/// (it bumps its config epoch, so gossip cannot hand the slot back), then every other node.
pub fn end_migration(cluster: &RedisCluster, slot: u16, to_id: &str, to: u16) {
    cli(to, &["cluster", "setslot", &slot.to_string(), "node", to_id]).expect("SETSLOT NODE");
    for n in cluster.nodes.iter().filter(|n| n.port != to) {
        cli(n.port, &["cluster", "setslot", &slot.to_string(), "node", to_id]).expect("SETSLOT NODE");
    }
}

/// Returns once `rt`, a runtime bound to `store`, has its own connection to each of `masters`
/// masters: an async call on a bound runtime takes those connections (`cluster/local.rs`), and
/// each one comes up only after a call has reached its master, in the background. Warm-up calls
/// (prefix `warm`, a limit no test reaches) are made until then; a test that counts commands
/// or executions reads its counters after this returns.
pub fn own_connections_up(
    store: &std::sync::Arc<throttlekit::redis::RedisStore>,
    rt: &tokio::runtime::Runtime,
    masters: usize,
) {
    use throttlekit::{Limiter, Strategy};
    let warm = Limiter::builder(Strategy::fixed_window(1_000_000, 3_600_000).unwrap())
        .store(store.clone())
        .prefix("warm")
        .build();
    let deadline = Instant::now() + Duration::from_secs(10);
    rt.block_on(async {
        while store.local_cluster_connections() < masters {
            assert!(Instant::now() < deadline, "the runtime's own connections never came up");
            for i in 0..30 {
                warm.check(&format!("w{i}"), 1).await.expect("warm-up call");
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
}

/// A fault proxy in front of every node, each node announcing its proxy port: the cluster is
/// then reachable through the proxy only (its bus stays direct). Waits until every node's
/// `CLUSTER SLOTS` names proxy ports only.
pub fn behind_proxy(cluster: &RedisCluster) -> throttlekit_faultproxy::FaultProxy {
    let routes: Vec<(std::net::SocketAddr, std::net::SocketAddr)> = cluster
        .nodes
        .iter()
        .map(|n| ("127.0.0.1:0".parse().unwrap(), format!("127.0.0.1:{}", n.port).parse().unwrap()))
        .collect();
    let proxy = throttlekit_faultproxy::FaultProxy::start_routes(&routes).expect("the proxy");
    for (n, (listen, _)) in cluster.nodes.iter().zip(proxy.routes()) {
        cli(n.port, &["config", "set", "cluster-announce-ip", "127.0.0.1"]).expect("announce ip");
        cli(n.port, &["config", "set", "cluster-announce-port", &listen.port().to_string()]).expect("announce port");
    }
    let real: Vec<String> = cluster.nodes.iter().map(|n| format!("127.0.0.1:{}@", n.port)).collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let announced = cluster.nodes.iter().all(|n| {
            cli(n.port, &["cluster", "nodes"]).is_some_and(|nodes| !real.iter().any(|r| nodes.contains(r.as_str())))
        });
        if announced {
            return proxy;
        }
        assert!(Instant::now() < deadline, "the nodes never announced their proxy ports");
        std::thread::sleep(Duration::from_millis(100));
    }
}
