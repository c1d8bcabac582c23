//! The machine's socket namespace: the guest spelling of `AF_UNIX` names bound to paths,
//! the machine's abstract namespace, and the open files in flight in `SCM_RIGHTS`
//! messages (the socket calls are in [`crate::syscall`]'s net family).

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::os::fd::{AsRawFd, OwnedFd};
use std::rc::{Rc, Weak};

use crate::files::NameHold;
use crate::host;
use crate::linux::{AF_UNIX, EINVAL};
use crate::process::{FileKind, NetlinkPorts, OpenFile};
use crate::vfs::Errno;

/// Machine-wide socket state.
#[derive(Default)]
pub(crate) struct Net {
    /// Host names of the `AF_UNIX` sockets guests bound to paths → the guest's spelling.
    pub(crate) unix_names: HashMap<Vec<u8>, Vec<u8>>,
    /// The machine's abstract namespace: every abstract `AF_UNIX` name a guest uses is
    /// this prefix (random, made at the first use) plus the guest's name on the host,
    /// or, for a name too long for that, [`LONG_MARK`] in place of the prefix's last
    /// byte and the name's number in `abstract_long`.
    pub(crate) abstract_prefix: Option<Vec<u8>>,
    /// The abstract names too long to follow the prefix on the host, by number, each
    /// with the holds of the sockets bound (or connected) to it: a name's number stays
    /// the same while any socket holds it, and the name is forgotten once none does (at
    /// the next new long name; numbers are never given again, so an address that
    /// outlives every socket of its name is never read as another name).
    abstract_long: HashMap<usize, (Vec<u8>, Weak<NameHold>)>,
    /// `abstract_long` inverted.
    abstract_long_ids: HashMap<Vec<u8>, usize>,
    /// The number the next new long name gets.
    abstract_next: usize,
    /// The next name an autobind tries (five hex digits, as Linux's).
    pub(crate) autobind_next: u32,
    /// Open files sent with `SCM_RIGHTS` and not received yet, oldest first.
    in_flight: VecDeque<InFlight>,
    /// The port ids of the machine's netlink sockets (shared with each of them).
    pub(crate) netlink_ports: Rc<RefCell<NetlinkPorts>>,
}

/// An open file a guest sent with `SCM_RIGHTS`. The host holds the file in the message;
/// morph holds no descriptor of its own (a message that is never received must not keep
/// a pipe open), only what it needs to give the receiver the same guest view.
struct InFlight {
    /// The sender's open file, while some guest still has it: the receiver shares it.
    file: Weak<OpenFile>,
    /// Else: the object's (device, inode), to know the received descriptor, and the
    /// guest's view of the file, for a new open file around it.
    id: Option<(u64, u64)>,
    nonblock: bool,
    host_nonblock: bool,
    open_flags: u32,
    /// What the file was, when that is plain data (not a `/proc` snapshot).
    kind: Option<FileKind>,
    /// A socket's holds on long abstract names: a socket in flight is still bound.
    names: Vec<Rc<NameHold>>,
}

/// How many sent open files morph remembers; beyond, the oldest is forgotten and its
/// receiver gets a fresh wrapping of the host descriptor (the host's flags then show).
const IN_FLIGHT_MAX: usize = 256;

/// Length of the machine's abstract-name prefix: `morph-`, 16 hex digits, `/`.
const ABSTRACT_PREFIX_LEN: usize = 23;

/// `sizeof(struct sockaddr_un)`: the longest `AF_UNIX` address.
pub(crate) const SOCKADDR_UN_MAX: usize = 110;

/// The last byte of the prefix of a long abstract name's host name (the prefix of the
/// others ends in `/`, so the two kinds never meet).
const LONG_MARK: u8 = b'#';

impl Net {
    /// The machine's abstract-name prefix (made at the first use, from the host's
    /// entropy: it must differ between machines, and drawing it from the machine's
    /// seeded RNG would change what guests see).
    pub(crate) fn make_abstract_prefix(&mut self) -> &[u8] {
        self.abstract_prefix.get_or_insert_with(|| {
            let mut r = [0u8; 8];
            if host::getrandom(&mut r) != Ok(8) {
                // No entropy: the pid and the time still tell machines apart.
                let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
                let v = (u64::from(host::getpid() as u32) << 32) ^ t.as_nanos() as u64;
                r = v.to_le_bytes();
            }
            let p = format!("morph-{:016x}/", u64::from_le_bytes(r)).into_bytes();
            debug_assert_eq!(p.len(), ABSTRACT_PREFIX_LEN);
            p
        })
    }

    /// The host address of the guest's abstract name `name` (without its leading NUL):
    /// the name inside the machine's namespace. A name too long to follow the prefix
    /// (Linux takes up to 107 bytes after the NUL) is given a number, and the host name
    /// is the prefix, marked, and the number in hex; `EINVAL` past 107 bytes.
    pub(crate) fn abstract_host(&mut self, name: &[u8]) -> Result<Vec<u8>, Errno> {
        if 3 + name.len() > SOCKADDR_UN_MAX {
            return Err(EINVAL);
        }
        let mut b = AF_UNIX.to_le_bytes().to_vec();
        b.push(0);
        b.extend_from_slice(self.make_abstract_prefix());
        if b.len() + name.len() <= SOCKADDR_UN_MAX {
            b.extend_from_slice(name);
            return Ok(b);
        }
        let id = match self.abstract_long_ids.get(name) {
            Some(&id) => id,
            None => {
                self.forget_unheld();
                let id = self.abstract_next;
                self.abstract_next += 1;
                self.abstract_long.insert(id, (name.to_vec(), Weak::new()));
                self.abstract_long_ids.insert(name.to_vec(), id);
                id
            }
        };
        if let Some(last) = b.last_mut() {
            *last = LONG_MARK;
        }
        b.extend_from_slice(format!("{id:x}").as_bytes());
        Ok(b)
    }

    /// The guest's abstract name (without its leading NUL) behind a host abstract name
    /// (without its leading NUL), if it is one of the machine's.
    pub(crate) fn abstract_guest(&self, host: &[u8]) -> Option<Vec<u8>> {
        let pre = self.abstract_prefix.as_deref()?;
        let (_, stem) = pre.split_last()?;
        let rest = host.strip_prefix(stem)?;
        match rest.split_first()? {
            (b'/', name) => Some(name.to_vec()),
            (&LONG_MARK, id) => {
                let id = usize::from_str_radix(std::str::from_utf8(id).ok()?, 16).ok()?;
                self.abstract_long.get(&id).map(|(name, _)| name.clone())
            }
            _ => None,
        }
    }

    /// A hold on the number of the long abstract name `name` (without its leading NUL),
    /// for a socket just bound or connected to it (see [`Net::abstract_host`], which
    /// numbered it); `None` for a name that needs no number.
    pub(crate) fn abstract_hold(&mut self, name: &[u8]) -> Option<Rc<NameHold>> {
        let &id = self.abstract_long_ids.get(name)?;
        let (_, weak) = self.abstract_long.get_mut(&id)?;
        Some(weak.upgrade().unwrap_or_else(|| {
            let hold = Rc::new(NameHold { id });
            *weak = Rc::downgrade(&hold);
            hold
        }))
    }

    /// Forgets the long abstract names no socket holds any more.
    fn forget_unheld(&mut self) {
        let ids = &mut self.abstract_long_ids;
        self.abstract_long.retain(|_, (name, hold)| {
            let held = hold.strong_count() > 0;
            if !held {
                ids.remove(name);
            }
            held
        });
    }

    /// Remembers an open file a guest just sent.
    pub(crate) fn sent(&mut self, f: &Rc<OpenFile>) {
        if self.in_flight.len() == IN_FLIGHT_MAX {
            self.in_flight.pop_front();
        }
        self.in_flight.push_back(InFlight {
            file: Rc::downgrade(f),
            id: object_id(f.as_raw_fd()),
            nonblock: f.guest_nonblock(),
            host_nonblock: f.host_nonblock,
            open_flags: f.open_flags,
            kind: match &f.kind {
                FileKind::Host => Some(FileKind::Host),
                FileKind::Device(n) => Some(FileKind::Device(n)),
                FileKind::Random(n) => Some(FileKind::Random(n)),
                _ => None,
            },
            names: f.socket.names.borrow().clone(),
        });
    }

    /// The open file behind a host descriptor received with `SCM_RIGHTS`: the one the
    /// sender had, if a guest still has it (the receiver then shares the open file
    /// description and its guest flags, as Linux passes the `struct file` itself), else
    /// a new one with the guest view it had when it was sent; a descriptor morph did not
    /// see sent is wrapped as an inherited one ([`OpenFile::inherited`]).
    pub(crate) fn adopt(&mut self, fd: OwnedFd) -> Rc<OpenFile> {
        let id = object_id(fd.as_raw_fd());
        let found = self.in_flight.iter().position(|e| match e.file.upgrade() {
            Some(f) => same_file(f.as_raw_fd(), fd.as_raw_fd()),
            None => id.is_some() && e.id == id,
        });
        let Some(e) = found.and_then(|i| self.in_flight.remove(i)) else {
            // From a host process, as if inherited: a pipe or terminal is opened again
            // non-blocking, a socket is used with `MSG_DONTWAIT`.
            return Rc::new(OpenFile::inherited(fd));
        };
        if let Some(f) = e.file.upgrade() {
            return f; // the received descriptor is a duplicate: closed here
        }
        let mut f = if e.host_nonblock { OpenFile::nonblocking(fd, e.nonblock) } else { OpenFile::new(fd) };
        f.nonblock.set(e.nonblock);
        f.open_flags = e.open_flags;
        if let Some(k) = e.kind {
            f.kind = k;
        }
        *f.socket.names.borrow_mut() = e.names;
        Rc::new(f)
    }
}

/// The (device, inode) of the object behind a host descriptor.
pub(crate) fn object_id(raw: i32) -> Option<(u64, u64)> {
    host::fstat(raw).ok().map(|st| (st.st_dev, st.st_ino))
}

/// Whether two of morph's host descriptors are the same open file description.
pub(crate) fn same_file(a: i32, b: i32) -> bool {
    if let Some(same) = host::same_open_file(a, b) {
        return same;
    }
    // Without kcmp: the same object (a socket or a pipe end is opened only once).
    object_id(a).is_some() && object_id(a) == object_id(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_abstract_names_map_to_short_host_names_and_back() {
        let mut net = Net::default();
        for len in [0, 1, 84, 85, 100, 107] {
            let name: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            let host = net.abstract_host(&name).unwrap();
            assert!(host.len() <= SOCKADDR_UN_MAX, "{len}");
            assert_eq!(host[2], 0);
            assert_eq!(net.abstract_guest(&host[3..]), Some(name.clone()), "{len}");
            assert_eq!(net.abstract_host(&name).unwrap(), host, "the same name, the same host name");
        }
        // Names that differ only past what fits are different names.
        let (a, b) = ([b'x'; 100], [[b'x'; 99].as_slice(), b"y"].concat());
        assert_ne!(net.abstract_host(&a).unwrap(), net.abstract_host(&b).unwrap());
        assert_eq!(net.abstract_host(&[b'x'; 108]), Err(EINVAL));
        assert_eq!(net.abstract_guest(b"someone-else"), None, "a host process's name");
    }

    #[test]
    fn long_abstract_names_are_forgotten_once_no_socket_holds_them() {
        let mut net = Net::default();
        let (a, b, c) = ([b'a'; 100], [b'b'; 100], [b'c'; 100]);
        let ha = net.abstract_host(&a).unwrap();
        let hold = net.abstract_hold(&a).expect("a long name");
        assert!(net.abstract_hold(b"short").is_none());
        let hb = net.abstract_host(&b).unwrap(); // never held
        assert_eq!(net.abstract_guest(&ha[3..]), Some(a.to_vec()));
        net.abstract_host(&c).unwrap(); // forgets b, keeps a
        assert_eq!(net.abstract_guest(&hb[3..]), None);
        assert_eq!(net.abstract_host(&a).unwrap(), ha, "held: the same number");
        drop(hold);
        assert_eq!(net.abstract_host(&a).unwrap(), ha, "known until a new name comes");
        net.abstract_host(&b).unwrap();
        assert_eq!(net.abstract_guest(&ha[3..]), None, "forgotten");
        assert_ne!(net.abstract_host(&a).unwrap(), ha, "numbers are not given twice");
        assert!(net.abstract_long.len() <= 3);
    }
}
