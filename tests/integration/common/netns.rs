//! Network namespaces for tests that reach a server over a link of their own, as a
//! cluster's pods reach a database (`ip netns`, which needs root). Everything made here is
//! removed, and the server stopped, when the [`Namespaces`] drop, whatever happens.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::needs::{self, needs};
use super::Dir;

/// `ip ARGS`, true when it succeeded.
pub fn ip(args: &[&str]) -> bool {
    Command::new("ip")
        .args(args)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The namespaces made (the server's first) and the server started in it.
pub struct Namespaces {
    pub names: Vec<String>,
    server: Option<Child>,
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        if let Some(mut s) = self.server.take() {
            let _ = s.kill();
            let _ = s.wait();
        }
        for n in &self.names {
            ip(&["netns", "del", n]);
        }
    }
}

impl Namespaces {
    /// The server's namespace `name` with its loopback up; `None` (the test is skipped, or
    /// fails under `LOADRIG_REQUIRE_ALL=1`) where `ip netns add` is not permitted or
    /// redis-server, which the tests here start in it, is missing.
    pub fn new(name: &str) -> Option<Namespaces> {
        needs::program(
            &["redis-server"],
            "Debian: apt-get install redis-server; scripts/services.sh up does",
        )?;
        needs(
            "`ip netns add`",
            "root and iproute2 (Debian: apt-get install iproute2), where the kernel lets \
             a process make network namespaces",
            ip(&["netns", "add", name]).then_some(()),
        )?;
        let ns = Namespaces {
            names: vec![name.to_string()],
            server: None,
        };
        assert!(ip(&["-n", name, "link", "set", "lo", "up"]));
        Some(ns)
    }

    /// A cluster's network: the server's namespace `{tag}s` with a bridge on `{net}.1/24`,
    /// and `clients` namespaces `{tag}c{i}`, client i at `{net}.{i+2}` over a veth pair of
    /// its own into the bridge (`net` is three octets, `10.213.0`). `None` as [`Self::new`].
    pub fn bridged(tag: &str, net: &str, clients: usize) -> Option<Namespaces> {
        let server = format!("{tag}s");
        let mut ns = Namespaces::new(&server)?;
        let bridge = format!("{net}.1/24");
        ns.run(&[
            vec!["-n", &server, "link", "add", "br0", "type", "bridge"],
            vec!["-n", &server, "addr", "add", &bridge, "dev", "br0"],
            vec!["-n", &server, "link", "set", "br0", "up"],
        ]);
        for i in 0..clients {
            let client = format!("{tag}c{i}");
            ns.add(&client);
            let (a, b) = (format!("{tag}a{i}"), format!("{tag}b{i}"));
            let addr = format!("{net}.{}/24", i + 2);
            ns.run(&[
                vec!["link", "add", &a, "type", "veth", "peer", "name", &b],
                vec!["link", "set", &a, "netns", &server],
                vec!["link", "set", &b, "netns", &client],
                vec!["-n", &server, "link", "set", &a, "master", "br0"],
                vec!["-n", &server, "link", "set", &a, "up"],
                vec!["-n", &client, "addr", "add", &addr, "dev", &b],
                vec!["-n", &client, "link", "set", &b, "up"],
            ]);
        }
        Some(ns)
    }

    /// Another namespace, with its loopback up.
    pub fn add(&mut self, name: &str) {
        assert!(ip(&["netns", "add", name]), "ip netns add {name}");
        self.names.push(name.to_string());
        assert!(ip(&["-n", name, "link", "set", "lo", "up"]));
    }

    /// Run each `ip` command; a failure fails the test.
    pub fn run(&self, commands: &[Vec<&str>]) {
        for args in commands {
            assert!(ip(args), "ip {args:?}");
        }
    }

    /// The server's namespace.
    pub fn server(&self) -> &str {
        &self.names[0]
    }

    /// A throwaway Redis on `port` of every address in the server's namespace, its files in
    /// `dir`; waits until it answers.
    pub fn start_redis(&mut self, port: u16, dir: &Dir) {
        let server = Command::new("ip")
            .args(["netns", "exec", self.server(), "redis-server", "--port"])
            .arg(port.to_string())
            .args(["--bind", "0.0.0.0", "--protected-mode", "no", "--save", ""])
            .args(["--appendonly", "no", "--dir"])
            .arg(dir.path())
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server");
        self.server = Some(server);
        let until = Instant::now() + Duration::from_secs(10);
        while self.redis_cli(port, &["ping"]) != "PONG" {
            assert!(Instant::now() < until, "redis-server did not answer");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `redis-cli -p PORT ARGS` inside the server's namespace, its answer trimmed.
    pub fn redis_cli(&self, port: u16, args: &[&str]) -> String {
        let out = Command::new("ip")
            .args(["netns", "exec", self.server(), "redis-cli", "-p"])
            .arg(port.to_string())
            .args(args)
            .output()
            .expect("redis-cli");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}
