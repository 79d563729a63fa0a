//! Clients whose connect fails before the run are counted, keep trying, and do not end the
//! run: a throwaway redis-server with `maxclients 3` refuses two of five clients.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{needs, Dir};
use loadrig::vocab::ErrorClass;

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A free loopback port (the kernel's choice, released for the server to take).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// One inline command's reply, the whole of it (INFO's bulk included).
fn ask(port: u16, command: &str) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    s.write_all(format!("{command}\r\n").as_bytes()).ok()?;
    let mut r = BufReader::new(s);
    let mut head = String::new();
    r.read_line(&mut head).ok()?;
    let Some(len) = head.strip_prefix('$') else {
        return Some(head.trim_end().to_string());
    };
    let mut body = vec![0; len.trim_end().parse::<usize>().ok()? + 2];
    std::io::Read::read_exact(&mut r, &mut body).ok()?;
    Some(String::from_utf8_lossy(&body).into_owned())
}

/// `redis-server` on a free port with room for `maxclients` connections; `None` (the test
/// is skipped, or fails under `LOADRIG_REQUIRE_ALL=1`) where it is not installed.
fn redis(dir: &Dir, maxclients: u32) -> Option<(Server, u16)> {
    let bin = needs::program(
        &["redis-server"],
        "Debian: apt-get install redis-server; scripts/services.sh up does",
    )?;
    let port = free_port();
    let child = Command::new(bin)
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--maxclients", &maxclients.to_string()])
        .args(["--save", "", "--appendonly", "no", "--dir"])
        .arg(dir.path())
        .stdout(Stdio::null())
        .spawn()
        .expect("start redis-server");
    let server = Server(child);
    let until = Instant::now() + Duration::from_secs(10);
    while ask(port, "PING").as_deref() != Some("+PONG") {
        assert!(Instant::now() < until, "redis-server did not answer");
        std::thread::sleep(Duration::from_millis(50));
    }
    Some((server, port))
}

/// A counter of INFO's `stats` section.
fn stat(port: u16, name: &str) -> u64 {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        // Right after the run the server may still be closing the rig's connections.
        if let Some(info) = ask(port, "INFO stats").filter(|i| i.contains(name)) {
            let line = info.lines().find(|l| l.starts_with(name)).unwrap();
            return line.split(':').nth(1).unwrap().trim().parse().unwrap();
        }
        assert!(Instant::now() < until, "INFO stats did not answer");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn refused_clients_are_counted_and_the_run_goes_on() {
    let d = Dir::new();
    let Some((_server, port)) = redis(&d, 3) else {
        return;
    };
    d.write(
        "kv.toml",
        "name = \"kv\"\ndescription = \"puts\"\n[[op]]\nname = \"put\"\n\
         kv.put = { key = \"k{seq}\", value = \"v\" }\n",
    );
    // Database 1: selecting it is the connect's round trip, which a full server refuses.
    let url = format!("redis://127.0.0.1:{port}/1");
    let out = d.ok(&[
        "run",
        "kv.toml",
        "--target",
        &url,
        "--clients",
        "5",
        "--duration",
        "2s",
        "--interval",
        "500ms",
        // The observer's own connection would take a slot and add its refusals to the
        // server's count this test matches exactly.
        "--observe",
        "off",
        "-o",
        "r.json",
    ]);
    let r = d.result("r.json");
    let connect = r.connect.expect("the connect phase is recorded");
    // Three of the five fit (the data load's session has closed by then; should the server
    // not have seen that close yet, a third client is refused).
    let failed = connect.failed_clients;
    assert!((2..=3).contains(&failed), "{failed} clients refused\n{out}");
    assert_eq!(
        connect.errors_by_class.into_iter().collect::<Vec<_>>(),
        vec![(ErrorClass::Connect, failed as u64)]
    );
    let first = connect.first_error.expect("the first failure's message");
    assert!(first.contains("max number of clients"), "{first}");
    // The others ran; the refused ones kept trying, each try a connect error.
    assert!(r.total.ok > 0);
    let tries = r
        .total
        .errors_by_class
        .get(&ErrorClass::Connect)
        .copied()
        .unwrap_or(0);
    assert_eq!(r.total.errors, tries, "{:?}", r.total.errors_by_class);
    assert!(tries > 0, "the refused clients tried again during the run");
    // Every refusal the server counted is in the result, once.
    assert_eq!(stat(port, "rejected_connections"), failed as u64 + tries);
    let v = r.validity.expect("validity");
    let said = format!("{failed} of 5 clients could not connect before the run");
    assert!(
        v.reasons.iter().any(|x| x.contains(&said)),
        "{:?}",
        v.reasons
    );
}
