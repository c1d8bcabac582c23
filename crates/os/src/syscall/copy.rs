//! Copies the kernel makes between two descriptors: `sendfile`, `copy_file_range`,
//! `splice`, `tee` and `vmsplice`.
//!
//! `sendfile`'s output may be a pipe, a socket or a device as well as a file, so its
//! bytes take morph's own paths, [`CHUNK`] bytes at a time (a large count needs no
//! large buffer): read from the input as `pread` reads it (a file's bytes after the
//! stores of its shared mappings are written back, `/dev/urandom`'s from the machine's
//! RNG, a socket's peeked and taken only once written), written as `write` writes (a
//! full pipe or socket blocks the guest in the scheduler, or says `EAGAIN` to a
//! non-blocking one; a cached file's pages take the new bytes). Which objects it takes,
//! and in which order it refuses the others, are Linux 6's (`do_sendfile`): the input
//! must be readable and able to feed a pipe (`splice_read`), and seekable unless the
//! output is a pipe; the output must be writable, not `O_APPEND`, and able to take a
//! pipe's bytes (`splice_write`). Like Linux's, a transfer stops short at the end of
//! the input or where the output has no more room once something was copied.
//!
//! `copy_file_range` copies between two regular files, which never block, so the host
//! copies (its checks are Linux's: `EXDEV` across file systems, `EBADF` for an
//! `O_APPEND` output, `EINVAL` for overlapping ranges of one file, and so on, and a file
//! system that shares extents may share them); the page cache is kept coherent around
//! it as around `pread` and `pwrite`.
//!
//! `splice`, `tee` and `vmsplice` move bytes through pipes, and a guest's pipe is a host
//! pipe (see `io.rs`): the host's own calls move them, on the host descriptors behind
//! the guest's, so which objects they take, in which order they refuse the others, and
//! how many bytes one call moves (a pipe's slots, a file's pages) are the host kernel's,
//! that is Linux's. morph adds what the host cannot know: the host is never asked to
//! wait (`SPLICE_F_NONBLOCK` always; morph's pipes and sockets are non-blocking on the
//! host), and when it moved nothing for want of data or room the guest waits in the
//! scheduler, or gets `EAGAIN`, as Linux decides from the guest's flags and the guest's
//! `O_NONBLOCK` of each end (see [`splice_wait`]); a file's page cache is kept coherent as
//! around `pread` and `pwrite`; morph's own objects are stood in for by host objects that
//! Linux treats alike (see [`splice_source`]); and `vmsplice` gives the pipe copies of
//! the guest's bytes, never morph's memory (see `host::vmsplice_copies`).

use super::common::*;
use super::file::{grew, sync_before_read, wrote};
use super::wait;

table! {
    /// In-kernel copies.
    pub(super) TABLE: Files {
        187 sendfile "ffpu" |m, p, a| sendfile(m, p, a, false);
        239 sendfile64 "ffpu" |m, p, a| sendfile(m, p, a, true);
        313 splice "fpfpux" sys_splice;
        315 tee "ffux" sys_tee;
        316 vmsplice "fpux" sys_vmsplice;
        377 copy_file_range "fpfpuu" sys_copy_file_range;
    }
}

/// How many bytes `sendfile` moves at a time.
const CHUNK: u64 = 64 * 1024;

/// The largest offset the 32-bit `sendfile` reaches (Linux's `MAX_NON_LFS`).
const MAX_NON_LFS: i64 = i32::MAX as i64;

/// How `sendfile` reads its input.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Feed {
    /// `pread` of the host descriptor: a regular file, `/dev/zero`, `/dev/full`.
    Positional,
    /// The machine's RNG (`/dev/urandom`, `/dev/random`).
    Random,
    /// A socket: peeked, then as much taken as was written.
    Socket,
    /// Nothing Linux splices from (a pipe, a directory, a `/proc` file, `/dev/null`,
    /// an eventfd, a terminal): `EINVAL` once there is something to copy.
    None,
}

/// What Linux's checks need to know of a `sendfile` input: how it is read, whether it
/// can seek (`FMODE_LSEEK`) and whether it can be read at an offset (`FMODE_PREAD`).
struct Input {
    feed: Feed,
    seekable: bool,
    positional: bool,
}

fn input_of(e: &FdEntry) -> Input {
    let any = |feed| Input { feed, seekable: true, positional: true };
    let stream = |feed| Input { feed, seekable: false, positional: false };
    match &e.host.kind {
        FileKind::Dir(_) | FileKind::Snapshot(_) | FileKind::Link(_) => any(Feed::None),
        FileKind::Random(_) => any(Feed::Random),
        FileKind::Device("zero" | "full") => any(Feed::Positional),
        FileKind::Device("tty") | FileKind::Pty(_) => stream(Feed::None),
        FileKind::Device(_) => any(Feed::None),
        FileKind::Host => {
            let raw = e.host.as_raw_fd();
            match host_stat_fd(raw).map_or(0, |st| st.st_mode & libc::S_IFMT) {
                libc::S_IFREG | libc::S_IFBLK => any(Feed::Positional),
                libc::S_IFSOCK => stream(Feed::Socket),
                libc::S_IFIFO => stream(Feed::None),
                libc::S_IFCHR if host::isatty(raw) => stream(Feed::None),
                // A directory or a device: seekable, but nothing to splice from. An
                // eventfd, timerfd or epoll instance (no file type): seekable, not at an
                // offset.
                0 => Input { feed: Feed::None, seekable: true, positional: false },
                _ => any(Feed::None),
            }
        }
    }
}

/// The access mode of a guest descriptor's open file description, `None` for an
/// `O_PATH` one (which reads and writes nothing: `EBADF`).
fn access_mode(e: &FdEntry) -> Result<Option<i32>, Errno> {
    let fl = host::getfl(e.host.as_raw_fd())?;
    Ok((fl & libc::O_PATH == 0).then_some(fl & libc::O_ACCMODE))
}

/// `sendfile(out_fd, in_fd, offset, count)` with a 32-bit signed `off_t *offset`, or
/// with `wide` `sendfile64`'s `loff_t *`. With an offset the input is read there and
/// keeps its position, and the offset moves past what was copied; without one the
/// input's position is used and advanced. The offset is read before anything else and
/// written back whatever the result (unchanged after a failure), as Linux does.
fn sendfile(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6], wide: bool) -> SysResult {
    let ptr = a[2];
    let mut pos = match ptr {
        0 => None,
        _ if wide => Some(p.aspace.read_u64(ptr).map_err(efault)? as i64),
        _ => Some(i64::from(p.aspace.read_u32(ptr).map_err(efault)? as i32)),
    };
    // Only an offset the guest passes is limited to 2 GiB by the 32-bit call.
    let max = if pos.is_some() && !wide { MAX_NON_LFS } else { i64::MAX };
    let r = sendfile_at(m, p, a[0], a[1], &mut pos, u64::from(a[3]), max);
    if let Some(pos) = pos {
        let stored = if wide { p.aspace.write_u64(ptr, pos as u64) } else { p.aspace.write_u32(ptr, pos as u32) };
        stored.map_err(efault)?;
    }
    r
}

/// The transfer of `sendfile`: at `*pos` if given (moved past what was copied), else at
/// the input's position; offsets end at `max`.
fn sendfile_at(
    m: &mut FileCtx<'_>,
    p: &mut Process,
    out_fd: u32,
    in_fd: u32,
    pos: &mut Option<i64>,
    count: u64,
    max: i64,
) -> SysResult {
    let ein = p.fds.get(in_fd).ok_or(EBADF)?.clone();
    if matches!(access_mode(&ein)?, None | Some(libc::O_WRONLY)) {
        return Err(EBADF);
    }
    let input = input_of(&ein);
    let start = match *pos {
        Some(_) if !input.positional => return Err(ESPIPE),
        Some(at) => at,
        None if input.feed == Feed::Positional => host::lseek(ein.host.as_raw_fd(), 0, libc::SEEK_CUR)? as i64,
        // A stream has no position (Linux reads its unused `f_pos`, 0).
        None => 0,
    };
    if start < 0 || start.checked_add(count as i64).is_none() {
        return Err(EINVAL);
    }
    let mut count = count.min(u64::from(super::file::MAX_RW));
    let eout = p.fds.get(out_fd).ok_or(EBADF)?.clone();
    let out_fl = host::getfl(eout.host.as_raw_fd())?;
    if out_fl & libc::O_PATH != 0 || out_fl & libc::O_ACCMODE == libc::O_RDONLY {
        return Err(EBADF);
    }
    if start.saturating_add(count as i64) > max {
        if start >= max {
            return Err(EOVERFLOW);
        }
        count = (max - start) as u64;
    }
    let out_type = host_stat_fd(eout.host.as_raw_fd()).map_or(0, |st| st.st_mode & libc::S_IFMT);
    let to_pipe = out_type == libc::S_IFIFO;
    // Into anything but a pipe Linux splices through a pipe of its own, and only from a
    // seekable input (it must not lose what it read and could not write).
    if !to_pipe && (out_fl & libc::O_APPEND != 0 || !input.seekable) {
        return Err(EINVAL);
    }
    if count == 0 {
        return Ok(0);
    }
    let takes = match &eout.host.kind {
        FileKind::Device(n) => *n != "full",
        FileKind::Random(_) => true,
        // A file, a pipe, a socket or a terminal; an eventfd or timerfd (no file type)
        // takes no spliced bytes.
        _ => out_type != 0,
    };
    if input.feed == Feed::None || !takes {
        return Err(EINVAL);
    }
    if input.feed == Feed::Socket {
        wait::ready_or_block(p, in_fd, libc::POLLIN)?;
    }
    wait::ready_or_block(p, out_fd, libc::POLLOUT)?;
    if input.feed == Feed::Positional {
        sync_before_read(m.cache, m.phys, p, in_fd);
    }
    let r = transfer(m, p, (&ein, input.feed, start), (&eout, out_fd), count);
    if let Ok(n) = r {
        match pos {
            Some(at) => *at = start + i64::from(n),
            None if input.feed == Feed::Positional => {
                host::lseek(ein.host.as_raw_fd(), start + i64::from(n), libc::SEEK_SET)?;
            }
            None => {}
        }
    }
    r
}

/// Moves up to `count` bytes from the input (entry, feed, offset) to the output (entry,
/// guest descriptor), a chunk at a time; stops at a short read or write. An error
/// before anything was copied is the result (a full pipe or socket blocks a blocking
/// guest: nothing was taken from the input, and the call runs again when there is
/// room); after, the count so far.
fn transfer(
    m: &mut FileCtx<'_>,
    p: &mut Process,
    (ein, feed, start): (&FdEntry, Feed, i64),
    (eout, out_fd): (&FdEntry, u32),
    count: u64,
) -> SysResult {
    let (rin, rout) = (ein.host.as_raw_fd(), eout.host.as_raw_fd());
    let mut buf = vec![0u8; count.min(CHUNK) as usize];
    let mut done = 0u64;
    while done < count {
        let want = (count - done).min(CHUNK) as usize;
        let got = match feed {
            Feed::Positional => host::pread(rin, &mut buf[..want], start + done as i64),
            Feed::Random => {
                m.rng.fill_bytes(&mut buf[..want]);
                Ok(want)
            }
            Feed::Socket => host::recv(rin, &mut buf[..want], libc::MSG_PEEK | libc::MSG_DONTWAIT),
            Feed::None => Err(EINVAL),
        };
        let got = match got {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if done == 0 => return Err(e),
            Err(_) => break,
        };
        let r = if eout.host.dontwait {
            host::send(rout, &buf[..got], libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL)
        } else {
            host::write(rout, &buf[..got])
        };
        let put = match r {
            Ok(n) => n,
            // A full pipe or socket, a reader gone (the guest's SIGPIPE): as for write.
            Err(e) if done == 0 => return wait::wrote_or_block(p, out_fd, Err(e)),
            Err(_) => break,
        };
        wrote(m.cache, m.phys, p, out_fd, None, put as u32);
        if feed == Feed::Socket {
            // Take what was written (it is queued: it was just peeked).
            let _ = host::recv(rin, &mut buf[..put], libc::MSG_DONTWAIT);
        }
        done += put as u64;
        if put < got || got < want {
            break;
        }
    }
    if done > 0 {
        grew(m, p, out_fd);
    }
    Ok(done as u32)
}

/// `copy_file_range(fd_in, off_in, fd_out, off_out, len, flags)`: both descriptors
/// must be open (`EBADF`), the offsets readable (`EFAULT`) and the flags 0 (`EINVAL`),
/// in that order; the rest is the host's copy between the host descriptors (see the
/// module documentation). An offset given is moved past what was copied, else the
/// descriptor's position is (by the host, which shares it). morph's own directories
/// are `EISDIR` as Linux's are, and its `/proc` files `EXDEV` as procfs's are.
fn sys_copy_file_range(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let (in_fd, out_fd) = (a[0], a[2]);
    let ein = p.fds.get(in_fd).ok_or(EBADF)?.clone();
    let eout = p.fds.get(out_fd).ok_or(EBADF)?.clone();
    let offset = |ptr: u32| -> Result<Option<i64>, Errno> {
        if ptr == 0 { Ok(None) } else { p.aspace.read_u64(ptr).map(|v| Some(v as i64)).map_err(efault) }
    };
    let (off_in, off_out) = (offset(a[1])?, offset(a[3])?);
    if a[5] != 0 {
        return Err(EINVAL);
    }
    if matches!(ein.host.kind, FileKind::Dir(_)) || matches!(eout.host.kind, FileKind::Dir(_)) {
        return Err(EISDIR);
    }
    let (rin, rout) = (ein.host.as_raw_fd(), eout.host.as_raw_fd());
    if matches!(ein.host.kind, FileKind::Snapshot(_)) || matches!(eout.host.kind, FileKind::Snapshot(_)) {
        // A `/proc` file (a memfd here) is procfs's on Linux, which copies to or from
        // no other file system: the host's checks that come first (with nothing to
        // copy), then `EXDEV`.
        host::copy_file_range(rin, off_in, rout, off_out, 0)?;
        return Err(EXDEV);
    }
    // Where the copy lands, for the page cache.
    let at = match off_out {
        Some(at) => at,
        None => host::lseek(rout, 0, libc::SEEK_CUR).map_or(0, |v| v as i64),
    };
    sync_before_read(m.cache, m.phys, p, in_fd);
    let n = host::copy_file_range(rin, off_in, rout, off_out, a[4] as usize)? as u32;
    if n > 0 {
        wrote(m.cache, m.phys, p, out_fd, Some(at as u64), n);
        grew(m, p, out_fd);
        // Linux stores the offsets only after a copy, and fails if it cannot.
        if let Some(off) = off_in {
            p.aspace.write_u64(a[1], (off + i64::from(n)) as u64).map_err(efault)?;
        }
        if let Some(off) = off_out {
            p.aspace.write_u64(a[3], (off + i64::from(n)) as u64).map_err(efault)?;
        }
    }
    Ok(n)
}

// ----- splice, tee, vmsplice ---------------------------------------------------------

const SPLICE_F_NONBLOCK: u32 = 2;
const SPLICE_F_MORE: u32 = 4;
/// `SPLICE_F_MOVE | SPLICE_F_NONBLOCK | SPLICE_F_MORE | SPLICE_F_GIFT`: `MOVE` and `GIFT`
/// are hints, passed on to the host as they are.
const SPLICE_F_ALL: u32 = 0xf;

/// Whether a guest descriptor is a pipe or a FIFO (Linux's `get_pipe_info`).
fn is_pipe(e: &FdEntry) -> bool {
    matches!(e.host.kind, FileKind::Host)
        && host_stat_fd(e.host.as_raw_fd()).is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFIFO)
}

/// Whether a guest descriptor is a Unix stream socket, whose `splice_read` also takes
/// `SPLICE_F_NONBLOCK` (and a non-blocking output pipe) as "do not wait"; every other
/// object splices according to its own `O_NONBLOCK` alone.
fn is_unix_stream(e: &FdEntry) -> bool {
    let raw = e.host.as_raw_fd();
    host::getsockopt_int(raw, libc::SOL_SOCKET, libc::SO_DOMAIN) == Some(libc::AF_UNIX)
        && host::getsockopt_int(raw, libc::SOL_SOCKET, libc::SO_TYPE) == Some(libc::SOCK_STREAM)
}

/// The host object a `splice` reads from in place of guest descriptor `e`, for
/// morph's own objects (`None`: its own host descriptor). A directory of morph's, or
/// a `/proc/<pid>` file (Linux's have no `splice_read`), is stood in for by the root
/// directory, which Linux refuses at the same point (`EINVAL`, after the output pipe's
/// checks and the offset's); `/dev/urandom` open for reading, when the output is a
/// pipe, by a new memfd holding as many bytes of the machine's RNG as the pipe can take
/// (read at the start whatever the offset, which Linux leaves as it is, as it leaves
/// the device's position). A machine-wide `/proc` file (which Linux splices from) is
/// its memfd, made now.
fn splice_source(
    m: &mut FileCtx<'_>,
    p: &Process,
    e: &FdEntry,
    out: Option<i32>,
    len: u32,
) -> Result<Option<OwnedFd>, Errno> {
    let dir = |m: &FileCtx<'_>| m.vfs.open(b"/", b"/", libc::O_RDONLY | libc::O_DIRECTORY, 0).map(Some);
    match &e.host.kind {
        FileKind::Dir(_) => dir(m),
        FileKind::Snapshot(s) if !matches!(s.file, special::ProcFile::Machine(_)) => dir(m),
        FileKind::Snapshot(s) => {
            s.fill(m.sys(), p);
            Ok(None)
        }
        FileKind::Random(_) => {
            let Some(out) = out else { return Ok(None) };
            if matches!(access_mode(e)?, None | Some(libc::O_WRONLY)) {
                return Ok(None); // the host refuses the device itself (EBADF)
            }
            let n = len.min(host::pipe_size(out).unwrap_or(1 << 16));
            let mut bytes = vec![0u8; n as usize];
            m.rng.fill_bytes(&mut bytes);
            let fd = host::memfd_create(c"morph-urandom", libc::MFD_CLOEXEC)?;
            let mut done = 0;
            while done < bytes.len() {
                done += host::pwrite(fd.as_raw_fd(), &bytes[done..], done as i64)?;
            }
            Ok(Some(fd))
        }
        _ => Ok(None),
    }
}

/// One end of a transfer the host found nothing to do for: its host descriptor, the
/// readiness it lacks (`POLLIN` for an input, `POLLOUT` for an output) and whether the
/// guest's call, as Linux decides it, fails rather than waits for it.
type End = (i32, i16, bool);

/// The guest's answer when the host moved nothing for want of data or room (it is
/// never asked to wait): for the first end not ready, `EAGAIN` if the guest's call
/// does not wait for it, else the guest waits for it in the scheduler and the call runs
/// again (restarted after a handler with `SA_RESTART`, else `EINTR`, as Linux's
/// `-ERESTARTSYS`). Both ends ready (a socket's low-water mark, a peer gone meanwhile):
/// the call looks again shortly, as a write does.
fn splice_wait(p: &mut Process, ends: &[End]) -> SysResult {
    for &(fd, events, nonblock) in ends {
        let pfd = libc::pollfd { fd, events, revents: 0 };
        if !host::poll_now(&[pfd]) {
            return if nonblock { Err(EAGAIN) } else { wait::block_on(p, vec![pfd], None, true) };
        }
    }
    if ends.iter().any(|e| e.2) {
        return Err(EAGAIN);
    }
    let pfds = ends.iter().map(|&(fd, events, _)| libc::pollfd { fd, events, revents: 0 }).collect();
    let retry = std::time::Instant::now() + std::time::Duration::from_millis(1);
    wait::block_on(p, pfds, Some(retry), true)
}

/// `splice(fd_in, off_in, fd_out, off_out, len, flags)`: Linux's order (`do_splice`):
/// a zero length moves nothing (whatever else is wrong), unknown flags are `EINVAL`,
/// descriptors `EBADF`, an offset for a pipe `ESPIPE`, offsets are read (`EFAULT`, the
/// output's first); the rest is the host's splice (see the module documentation). The
/// offsets are written back after a transfer (output first), `EFAULT` if they cannot be.
fn sys_splice(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let (in_fd, in_ptr, out_fd, out_ptr, len, flags) = (a[0], a[1], a[2], a[3], a[4], a[5]);
    if len == 0 {
        return Ok(0);
    }
    if flags & !SPLICE_F_ALL != 0 {
        return Err(EINVAL);
    }
    let ein = p.fds.get(in_fd).ok_or(EBADF)?.clone();
    let eout = p.fds.get(out_fd).ok_or(EBADF)?.clone();
    let (in_pipe, out_pipe) = (is_pipe(&ein), is_pipe(&eout));
    if (in_pipe && in_ptr != 0) || (out_pipe && out_ptr != 0) {
        return Err(ESPIPE);
    }
    let offset = |ptr: u32| -> Result<Option<i64>, Errno> {
        if ptr == 0 { Ok(None) } else { p.aspace.read_u64(ptr).map(|v| Some(v as i64)).map_err(efault) }
    };
    let off_out = offset(out_ptr)?;
    let off_in = offset(in_ptr)?;
    let (rin, rout) = (ein.host.as_raw_fd(), eout.host.as_raw_fd());
    let source = splice_source(m, p, &ein, out_pipe.then_some(rout), len)?;
    // A stand-in memfd of RNG bytes is read from its start when the guest's offset is
    // one Linux takes (the guest's is left as it is); a bad one is the host's to refuse.
    let rng = matches!(ein.host.kind, FileKind::Random(_)) && source.is_some();
    let mut host_in = match off_in {
        Some(at) if rng && at >= 0 && at.checked_add(i64::from(len)).is_some() => Some(0),
        o => o,
    };
    let mut host_out = off_out;
    let src = source.as_ref().map_or(rin, |s| s.as_raw_fd());
    sync_before_read(m.cache, m.phys, p, in_fd);
    let nonblock = |e: &FdEntry| e.host.guest_nonblock();
    // Linux: a pipe end waits unless `SPLICE_F_NONBLOCK` or the O_NONBLOCK of a pipe
    // end (between two pipes either's); the other end waits by its own O_NONBLOCK (a
    // Unix stream socket's read also by the pipes').
    let pipes_nb = flags & SPLICE_F_NONBLOCK != 0 || (in_pipe && nonblock(&ein)) || (out_pipe && nonblock(&eout));
    let in_nb = if in_pipe { pipes_nb } else { nonblock(&ein) || (is_unix_stream(&ein) && pipes_nb) };
    let out_nb = if out_pipe { pipes_nb } else { nonblock(&eout) };
    let ends = [(src, libc::POLLIN, in_nb), (rout, libc::POLLOUT, out_nb)];
    // An end whose host description blocks (a socket morph did not make, a terminal
    // opened blocking) is used only once ready, as `read` and `write` use it: its
    // splice then takes what is there and does not wait. Into a socket morph did not
    // make the bytes go through `splice_to_shared_socket` (its send could wait).
    let blocks = |e: &FdEntry| e.host.pollable && !e.host.host_nonblock && !e.host.guest_nonblock();
    let ready = |fd, events| host::poll_now(&[libc::pollfd { fd, events, revents: 0 }]);
    if (out_pipe && blocks(&ein) && !ready(rin, libc::POLLIN))
        || (in_pipe && blocks(&eout) && !eout.host.dontwait && !ready(rout, libc::POLLOUT))
    {
        return splice_wait(p, &ends);
    }
    let at = off_out.map(|o| o as u64);
    let r = if eout.host.dontwait && in_pipe {
        splice_to_shared_socket(rin, rout, len, flags & SPLICE_F_MORE != 0)
    } else {
        host::splice(src, host_in.as_mut(), rout, host_out.as_mut(), len as usize, flags | SPLICE_F_NONBLOCK)
    };
    let n = match r {
        Ok(n) => n as u32,
        Err(EAGAIN) => return splice_wait(p, &ends),
        Err(EPIPE) => return wait::wrote_or_block(p, out_fd, Err(EPIPE)),
        Err(e) => return Err(e),
    };
    if n > 0 {
        wrote(m.cache, m.phys, p, out_fd, at, n);
        grew(m, p, out_fd);
    }
    if let Some(o) = host_out {
        p.aspace.write_u64(out_ptr, o as u64).map_err(efault)?;
    }
    if let Some(o) = if rng { off_in } else { host_in } {
        p.aspace.write_u64(in_ptr, o as u64).map_err(efault)?;
    }
    Ok(n)
}

/// `splice` from a pipe into a socket morph did not make, whose host description keeps
/// its blocking mode (the host's splice could wait in the socket's send): the pipe's
/// bytes are looked at with `tee` into a pipe of morph's own, sent with `MSG_DONTWAIT`,
/// and as many taken from the pipe as the socket took.
fn splice_to_shared_socket(rin: i32, rout: i32, len: u32, more: bool) -> Result<usize, Errno> {
    let (r, w) = host::pipe2(libc::O_NONBLOCK | libc::O_CLOEXEC)?;
    let got = host::tee(rin, w.as_raw_fd(), len as usize, SPLICE_F_NONBLOCK)?;
    if got == 0 {
        return Ok(0);
    }
    let mut buf = vec![0u8; got];
    let got = host::read(r.as_raw_fd(), &mut buf)?;
    let more = if more { libc::MSG_MORE } else { 0 };
    let n = host::send(rout, &buf[..got], libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL | more)?;
    // They are in the pipe (just duplicated from it), so this takes exactly them.
    host::read(rin, &mut buf[..n])?;
    Ok(n)
}

/// `tee(fd_in, fd_out, len, flags)`: unknown flags `EINVAL`, a zero length 0, then the
/// host's tee between the host pipes (its checks are Linux's: `EBADF`, `EINVAL` unless
/// both are pipes and not the same one). Either end's `O_NONBLOCK` makes it fail
/// rather than wait, as in Linux.
fn sys_tee(_: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let (in_fd, out_fd, len, flags) = (a[0], a[1], a[2], a[3]);
    if flags & !SPLICE_F_ALL != 0 {
        return Err(EINVAL);
    }
    if len == 0 {
        return Ok(0);
    }
    let ein = p.fds.get(in_fd).ok_or(EBADF)?.clone();
    let eout = p.fds.get(out_fd).ok_or(EBADF)?.clone();
    let (rin, rout) = (ein.host.as_raw_fd(), eout.host.as_raw_fd());
    match host::tee(rin, rout, len as usize, flags | SPLICE_F_NONBLOCK) {
        Ok(n) => Ok(n as u32),
        Err(EAGAIN) => {
            let nb = flags & SPLICE_F_NONBLOCK != 0 || ein.host.guest_nonblock() || eout.host.guest_nonblock();
            splice_wait(p, &[(rin, libc::POLLIN, nb), (rout, libc::POLLOUT, nb)])
        }
        Err(EPIPE) => wait::wrote_or_block(p, out_fd, Err(EPIPE)),
        Err(e) => Err(e),
    }
}

/// `vmsplice(fd, iov, nr_segs, flags)`: guest memory into a pipe (a descriptor open
/// for writing) or a pipe into guest memory (one open only for reading). Linux's order:
/// unknown flags `EINVAL`, the descriptor `EBADF`, the iovecs (`EINVAL`, `EFAULT`), no
/// bytes 0, not a pipe `EBADF`; then the host's vmsplice. Only `SPLICE_F_NONBLOCK`
/// keeps it from waiting (Linux's ignores the pipe's `O_NONBLOCK`). Into a pipe the
/// host gets copies of the guest's bytes (see `host::vmsplice_copies`): Linux's pipe
/// refers to the caller's pages, so a store made to them before the reader reads shows
/// there, which the man page tells callers not to rely on; out of a pipe it is a copy
/// in Linux too.
fn sys_vmsplice(_: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let (fd, iov, nr, flags) = (a[0], a[1], a[2], a[3]);
    if flags & !SPLICE_F_ALL != 0 {
        return Err(EINVAL);
    }
    let e = p.fds.get(fd).ok_or(EBADF)?.clone();
    let to_pipe = match access_mode(&e)? {
        Some(libc::O_WRONLY | libc::O_RDWR) => true,
        Some(libc::O_RDONLY) => false,
        _ => return Err(EBADF), // O_PATH, or neither reading nor writing
    };
    let (v, valid) = super::file::iovecs_valid(p, iov, nr, !to_pipe)?;
    let total = v.iter().map(|b| b.len() as u64).sum::<u64>().min(u64::from(super::file::MAX_RW)) as u32;
    if total == 0 {
        return Ok(0);
    }
    if !is_pipe(&e) {
        return Err(EBADF);
    }
    let raw = e.host.as_raw_fd();
    let host_flags = flags | SPLICE_F_NONBLOCK;
    let r = if to_pipe {
        let (segs, tail) = guest_copies(p, &v, valid, total, host::pipe_size(raw).unwrap_or(1 << 16))?;
        host::vmsplice_copies(raw, &segs, tail, host_flags)
    } else {
        host::vmsplice_in_place(raw, &v, host_flags)
    };
    match r {
        Err(EAGAIN) => {
            let events = if to_pipe { libc::POLLOUT } else { libc::POLLIN };
            splice_wait(p, &[(raw, events, flags & SPLICE_F_NONBLOCK != 0)])
        }
        Err(EPIPE) => wait::wrote_or_block(p, fd, Err(EPIPE)),
        r => r,
    }
}

/// Copies of guest bytes, each with its guest address, and the guest range after them
/// that the guest may not read, if any (see [`guest_copies`]).
type Copies = (Vec<(u32, Vec<u8>)>, Option<InPlace>);

/// The guest bytes `vmsplice` puts into a pipe that can take `cap` bytes: copies of the
/// iovecs' first bytes, as many as the pipe can take and the guest may read (`valid`
/// of `total`), each with its guest address; and if the guest's fault comes first, the
/// guest range from it (where the host stops, as Linux does).
fn guest_copies(p: &Process, v: &[InPlace], valid: u32, total: u32, cap: u32) -> Result<Copies, Errno> {
    let faulted = valid < total && valid <= cap;
    let mut left = valid.min(cap);
    let mut segs = Vec::new();
    for b in v {
        let (va, len) = (b.va(&p.aspace), b.len() as u32);
        if len == 0 {
            continue;
        }
        let take = len.min(left);
        if take > 0 {
            let mut bytes = vec![0u8; take as usize];
            p.aspace.read_bytes(va, &mut bytes).map_err(efault)?;
            segs.push((va, bytes));
            left -= take;
        }
        if take < len {
            let tail = faulted.then(|| InPlace::window(&p.aspace, va.wrapping_add(take), len - take));
            return Ok((segs, tail));
        }
    }
    Ok((segs, None))
}
