//! A sharded run collected across network namespaces, as a cluster's pods reach a collector
//! Service: the collector in a namespace of its own on 10.214.0.1 (beyond loopback, so over
//! TLS with a token), each shard in its own namespace behind a veth pair into the
//! collector's bridge. The collected run is `loadrig merge`'s of the shards' files.
//!
//! Needs `ip netns` (root), redis-server (what `Namespaces` checks for) and openssl
//! (`common::needs`: skipped where missing, a failure under `LOADRIG_REQUIRE_ALL=1`).

use std::process::{Child, Command, Stdio};

use crate::collect::{log, merge, same_as_merge, start_in, succeeded, wait_for, SLEEP};
use crate::common::netns::Namespaces;
use crate::common::{needs, Dir};

const SHARDS: usize = 3;
const PORT: u16 = 7071;

/// A throwaway CA (`ca.crt`) and the collector's certificate for IP 10.214.0.1, in `d`.
fn certificates(d: &Dir) {
    let sh = |script: &str| {
        let ok = Command::new("sh")
            .args(["-c", script])
            .current_dir(d.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("sh")
            .success();
        assert!(ok, "{script}");
    };
    sh(
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj '/CN=loadrig test CA' \
        -keyout ca.key -out ca.crt",
    );
    sh("openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj '/CN=10.214.0.1' -keyout col.key -out col.csr");
    d.write(
        "ext",
        "subjectAltName=IP:10.214.0.1\nextendedKeyUsage=serverAuth\n",
    );
    sh(
        "openssl x509 -req -in col.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 \
        -out col.crt -extfile ext",
    );
}

/// `loadrig ARGS` inside namespace `ns`, in `d`, its output into `NAME.out`.
fn in_ns(d: &Dir, ns: &str, name: &str, args: &[&str]) -> Child {
    let out = std::fs::File::create(d.join(&format!("{name}.out"))).unwrap();
    let err = out.try_clone().unwrap();
    Command::new("ip")
        .args(["netns", "exec", ns])
        .arg(env!("CARGO_BIN_EXE_loadrig"))
        .args(args)
        .current_dir(d.path())
        .env("NO_COLOR", "1")
        .env("LOADRIG_COLLECT_TOKEN", "not-this-one")
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .spawn()
        .expect("loadrig in a namespace")
}

#[test]
fn shards_in_their_own_namespaces_stream_to_a_collector_over_tls() {
    if needs::program(&["openssl"], "Debian: apt-get install openssl").is_none() {
        return;
    }
    let tag = format!("lq{}", std::process::id() % 100_000);
    // The collector's namespace (a bridge on 10.214.0.1) and one namespace per shard.
    let Some(net) = Namespaces::bridged(&tag, "10.214.0", SHARDS) else {
        return;
    };
    let d = Dir::new();
    certificates(&d);
    d.write("token", "the-run's-token\n");
    let listen = format!("10.214.0.1:{PORT}");
    #[rustfmt::skip]
    let col = in_ns(&d, net.server(), "collect", &[
        "collect", "--listen", &listen, "--shards", "3", "-o", "run.json",
        "--token-file", "token", "--tls-cert", "col.crt", "--tls-key", "col.key",
    ]);
    wait_for(d.path(), "collect", "listening on", 1);
    let at = start_in(2);
    let shards: Vec<Child> = (0..SHARDS)
        .map(|i| {
            let shard = format!("{i}/{SHARDS}");
            let out = format!("s{i}.json");
            #[rustfmt::skip]
            let args = [
                "run", "noop", "--target", SLEEP, "-c", "6", "-d", "2s", "--shard", &shard,
                "--start-at", &at, "--collect", &listen, "--collect-ca", "ca.crt",
                "--collect-token-file", "token", "-o", &out,
            ];
            in_ns(&d, &net.names[i + 1], &format!("s{i}"), &args)
        })
        .collect();
    for (i, s) in shards.into_iter().enumerate() {
        succeeded(s, d.path(), &format!("s{i}"));
    }
    succeeded(col, d.path(), "collect");
    let said = log(d.path(), "collect");
    for i in 0..SHARDS {
        let from = format!("shard {i} of 3 connected from 10.214.0.{}:", i + 2);
        assert!(said.contains(&from), "{said}");
    }
    assert!(
        !said.contains("the-run's-token"),
        "the token is never printed"
    );
    let collected = d.result("run.json");
    assert_eq!(collected.collect.as_ref().unwrap().finished, [0, 1, 2]);
    same_as_merge(
        &collected,
        &merge(&d, &["s0.json", "s1.json", "s2.json"], &[]),
    );
}
