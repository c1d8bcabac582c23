//! Copies the kernel makes between two descriptors: `sendfile` and `copy_file_range`.
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

use super::common::*;
use super::file::{grew, sync_before_read, wrote};
use super::wait;

table! {
    /// In-kernel copies.
    pub(super) TABLE: Files {
        187 sendfile "ffpu" |m, p, a| sendfile(m, p, a, false);
        239 sendfile64 "ffpu" |m, p, a| sendfile(m, p, a, true);
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
        FileKind::Dir(_) | FileKind::Snapshot(_) => any(Feed::None),
        FileKind::Random(_) => any(Feed::Random),
        FileKind::Device("zero" | "full") => any(Feed::Positional),
        FileKind::Device("tty") => stream(Feed::None),
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
