//! Shards as a cluster's pods reach a database: each shard process in its own network
//! namespace, joined by a veth pair to a namespace where a throwaway Redis listens, all
//! started with one `--start-at`; the merged run holds exactly the shards' operations and
//! the union of their histograms, and Redis holds exactly one key per insert.
//!
//! Needs `ip netns` (root) and redis-server (`common::needs`: skipped where they are
//! missing, a failure under `LOADRIG_REQUIRE_ALL=1`). The namespaces (and the veths in them)
//! are removed whatever happens.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime};

use crate::common::netns::Namespaces;
use crate::common::{Dir, PUT_ONLY};
use loadrig::stats::new_hist;

const SHARDS: usize = 3;
const PORT: u16 = 6391;

#[test]
fn shards_in_their_own_network_namespaces_merge_exactly() {
    let tag = format!("lr{}", std::process::id() % 100_000);
    // The server's namespace and one per shard, shard i (10.213.0.i+2) reaching the server
    // at 10.213.0.1 over its own veth pair into the server's bridge, as a cluster network.
    let Some(mut net) = Namespaces::bridged(&tag, "10.213.0", SHARDS) else {
        return;
    };
    let d = Dir::new();
    net.start_redis(PORT, &d);
    let workload = d.write("put.toml", PUT_ONLY);
    let at = humantime::format_rfc3339_seconds(SystemTime::now() + Duration::from_secs(2));
    let at = at.to_string();
    let children: Vec<Child> = (0..SHARDS)
        .map(|i| {
            let target = format!("redis://10.213.0.1:{PORT}/0");
            Command::new("ip")
                .args(["netns", "exec", &net.names[i + 1]])
                .arg(env!("CARGO_BIN_EXE_loadrig"))
                .arg("run")
                .arg(&workload)
                .args(["-t", &target, "-c", "6", "--ops", "600", "--start-at", &at])
                .args(["--shard", &format!("{i}/{SHARDS}"), "-o"])
                .arg(d.join(&format!("s{i}.json")))
                .current_dir(d.path())
                .stdout(Stdio::null())
                .spawn()
                .expect("shard")
        })
        .collect();
    for mut c in children {
        assert!(c.wait().expect("shard ran").success());
    }
    let files: Vec<String> = (0..SHARDS).map(|i| format!("s{i}.json")).collect();
    let mut args = vec!["merge"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["-o", "merged.json"]);
    d.ok(&args);
    let merged = d.result("merged.json");
    assert_eq!(merged.total.ok, 600);
    assert_eq!(merged.total.errors, 0);
    let mut union = new_hist();
    for f in &files {
        let s = d.result(f);
        assert_eq!(s.total.ok, 200, "{f}");
        union.add(s.total.histogram.decode().unwrap()).unwrap();
    }
    assert_eq!(merged.total.histogram.decode().unwrap(), union);
    assert_eq!(merged.total.latency.p99_ns, union.value_at_quantile(0.99));
    // Every insert wrote its own key: the shards' {seq} numbers never met.
    assert_eq!(net.redis_cli(PORT, &["dbsize"]), "600");
}
