//! Sockets under morph, where native execution is no oracle: the loopback rule (the
//! refusals, their errno and their counter), bash's `/dev/tcp` against a host echo
//! server, and `AF_UNIX` names resolving inside the guest root. (Socket traffic between
//! guest processes is compared with native runs by `guests.rs`, with `guests/src/sockets.c`.)

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::os::unix::net::UnixListener;

use common::*;

#[test]
fn leaving_loopback_is_refused_and_counted() {
    let dir = scratch("net-refused");
    let stats = dir.join("stats.json");
    let prog = guests().join("sockets");
    let r = emulated(&["--timeout", "60", "--stats-json", stats.to_str().unwrap()], &prog, &["refused"], &dir, b"");
    assert_eq!(r.status, 0, "{r:?}");
    assert_eq!(
        r.stdout,
        "connect 10.1.2.3: -101\n\
         sendto 10.1.2.3: -101\n\
         bind 10.1.2.3: -99\n\
         connect 2001:db8::1: -101\n\
         socket AF_NETLINK uevent: -93\n\
         socket AF_PACKET: -97\n\
         socket raw IPv4: -1\n\
         connect 2001:db8::1 through socketcall: -101\n\
         connect 127.0.0.1:1: -111\n\
         IP_OPTIONS source route: -1\n\
         IPV6_RTHDR: -1\n\
         SO_BINDTODEVICE lo: -1\n\
         SO_BINDTOIFINDEX: -1\n\
         SO_MARK: -1\n\
         IP_TRANSPARENT: -1\n\
         an unknown option: -92\n\
         reading IP_OPTIONS: -92\n\
         sendmsg IP_RETOPTS: -1\n\
         sendmsg IP_PKTINFO: -19\n\
         allowed: 0 0 0 0 0 0\n",
        "ENETUNREACH for connect/sendto, EADDRNOTAVAIL for bind, EAFNOSUPPORT for other families, \
         EPROTONOSUPPORT for netlink protocols other than NETLINK_ROUTE, \
         EPERM for raw sockets and for options and control messages that route, mark or bind to a \
         device, ENODEV for an interface the machine does not have, ENOPROTOOPT for unknown \
         options; loopback is reachable and its options work"
    );
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(json["os"]["refused_net"], 18, "every refusal counted, loopback not: {}", json["os"]);
}

#[test]
fn guest_loopback_traffic_is_not_counted() {
    let dir = scratch("net-loopback");
    let stats = dir.join("stats.json");
    let prog = guests().join("sockets");
    let r = emulated(&["--timeout", "60", "--stats-json", stats.to_str().unwrap()], &prog, &[], &dir, b"");
    assert_eq!(r.status, 0, "{r:?}");
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(json["os"]["refused_net"], 0, "{}", json["os"]);
}

#[test]
fn bash_dev_tcp_talks_to_a_host_echo_server() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let (conn, _) = listener.accept().unwrap();
        let mut line = String::new();
        BufReader::new(&conn).read_line(&mut line).unwrap();
        (&conn).write_all(format!("echo: {line}").as_bytes()).unwrap();
        line
    });
    let root = sysroot();
    let dir = scratch("net-bash");
    let script = format!(r#"exec 3<>/dev/tcp/127.0.0.1/{port}; echo hi >&3; read line <&3; echo "got [$line]""#);
    let r = morph_raw(&["run", "--timeout", "60", "--root", root.to_str().unwrap(), "/bin/bash", "-c", &script], &dir);
    assert_eq!((r.stdout.as_str(), r.status), ("got [echo: hi]\n", 0), "{r:?}");
    assert_eq!(server.join().unwrap(), "hi\n");
}

#[test]
fn bash_dev_tcp_to_another_network_fails() {
    let root = sysroot();
    let dir = scratch("net-bash-refused");
    let r = morph_raw(
        &[
            "run",
            "--timeout",
            "60",
            "--root",
            root.to_str().unwrap(),
            "/bin/bash",
            "-c",
            "exec 3<>/dev/tcp/10.1.2.3/80",
        ],
        &dir,
    );
    assert_eq!(r.status, 1, "{r:?}");
    assert!(r.stderr.contains("Network is unreachable"), "{r:?}");
}

#[test]
fn unix_socket_names_resolve_inside_the_root() {
    let base = scratch("net-unix");
    let root = base.join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::copy(guests().join("sockets"), root.join("sockets")).unwrap();
    // A host socket outside the root, a link to it inside, and a socket inside.
    let outside_path = base.join("outside.sock");
    let outside = UnixListener::bind(&outside_path).unwrap();
    outside.set_nonblocking(true).unwrap();
    std::os::unix::fs::symlink(&outside_path, root.join("escape.sock")).unwrap();
    let inside = UnixListener::bind(root.join("inside.sock")).unwrap();
    let run = |path: &str| {
        let r = morph_raw(
            &["run", "--timeout", "60", "--root", root.to_str().unwrap(), "/sockets", "connect-unix", path],
            &base,
        );
        assert_eq!(r.status, 0, "{r:?}");
        r.stdout
    };
    assert_eq!(run("/inside.sock"), "connect /inside.sock: 0\n");
    assert!(inside.accept().is_ok());
    // The link resolves inside the root, where there is no such file; the host path is
    // just a guest path.
    assert_eq!(run("/escape.sock"), "connect /escape.sock: -2\n");
    let host_path = outside_path.to_str().unwrap();
    assert_eq!(run(host_path), format!("connect {host_path}: -2\n"));
    assert!(outside.accept().is_err(), "nothing reached the socket outside the root");
}

#[test]
fn abstract_names_are_the_machines_own() {
    use std::io::Read;
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixStream};
    use std::process::{Command, Stdio};
    let dir = scratch("net-abstract");
    let name = format!("morph-test-{}", std::process::id());
    // A host process listens on an abstract name.
    let host = UnixListener::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap()).unwrap();
    host.set_nonblocking(true).unwrap();
    let stats = dir.join("stats.json");
    let mut child = Command::new(morph())
        .args(["run", "--timeout", "60", "--stats-json", stats.to_str().unwrap(), "--"])
        .arg(guests().join("confine"))
        .args(["abstract", &name])
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 256];
    while !seen.contains("listen:") {
        let n = out.read(&mut buf).unwrap();
        assert!(n > 0, "guest ended early: {seen:?}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    // The guest could neither reach the host's name nor take it: its bind made its own.
    assert_eq!(seen, format!("connect @{name}: ECONNREFUSED\nbind @{name}: ok\nlisten: ok\n"));
    assert!(host.accept().is_err(), "the guest's connect reached the host's socket");
    // And the guest's listening name is not the host's: the host's socket still owns it
    // (a host client reaches the host's listener, not the guest).
    let c = UnixStream::connect_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap()).unwrap();
    drop(c);
    assert!(host.accept().is_ok());
    drop(child.stdin.take());
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(0));
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(json["os"]["refused_net"], 0, "{}", json["os"]);
}

#[test]
fn machine_names_are_the_machines_own_and_interfaces_cannot_be_set() {
    let dir = scratch("net-uts");
    let host_name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let host_domain = std::fs::read_to_string("/proc/sys/kernel/domainname").unwrap();
    let r = emulated(&["--timeout", "60"], &guests().join("netmore"), &["uts"], &dir, b"");
    assert_eq!(r.status, 0, "{r:?}");
    // The guest has the test's capabilities: naming the machine needs CAP_SYS_ADMIN.
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let eff = status.lines().find_map(|l| l.strip_prefix("CapEff:")).unwrap();
    let admin = u64::from_str_radix(eff.trim(), 16).unwrap() >> 21 & 1 == 1;
    let names = if admin {
        "sethostname guestbox: 0\n\
         setdomainname example.test: 0\n\
         child: guestbox example.test\n\
         sethostname 64 bytes: 0\n\
         nodename 0123456789012345678901234567890123456789012345678901234567890123\n"
    } else {
        "sethostname guestbox: error 1\n\
         setdomainname example.test: error 1\n\
         child: morph (none)\n\
         sethostname 64 bytes: error 1\n\
         nodename morph\n"
    };
    assert_eq!(
        r.stdout,
        format!("{names}SIOCSIFFLAGS lo: error 1\nSIOCSIFMTU lo: error 1\nSIOCSIFADDR lo: error 1\n"),
        "the names are the machine's, seen by every process; lo cannot be changed"
    );
    assert_eq!(std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap(), host_name, "the host kept its name");
    assert_eq!(std::fs::read_to_string("/proc/sys/kernel/domainname").unwrap(), host_domain);
}

#[test]
fn netlink_changes_are_refused_as_for_an_unprivileged_process() {
    let dir = scratch("net-netlink");
    let stats = dir.join("stats.json");
    let args = ["--timeout", "60", "--stats-json", stats.to_str().unwrap()];
    let r = emulated(&args, &guests().join("netlink"), &["change"], &dir, b"");
    assert_eq!(r.status, 0, "{r:?}");
    // What Linux answers a process without CAP_NET_ADMIN (measured in a network
    // namespace with lo up, as user nobody), but the two options morph does not model.
    let refused = |ty: u32, len: u32| {
        format!(
            " send: {len}\n  error -1 len {} flags 0x0 seq last pid ok; request len {len} type {ty}\n \
             nothing more: error 11\n",
            len + 20
        )
    };
    assert_eq!(
        r.stdout,
        format!(
            "== RTM_NEWLINK\n{}== RTM_DELLINK\n{}== RTM_NEWADDR\n{}\
             sendto port 12345: error 1\n\
             sendto group 1: error 1\n\
             connect to group 1: error 1\n\
             NETLINK_PKTINFO: error 92\n\
             SO_PASSCRED: error 92\n",
            refused(16, 32),
            refused(17, 32),
            refused(20, 24)
        ),
        "changes to links and addresses, other ports and groups: EPERM; unmodeled options: ENOPROTOOPT"
    );
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(json["os"]["refused_net"], 5, "{}", json["os"]);
}
