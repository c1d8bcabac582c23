//! Credentials: a thread's user and group ids read and changed as Linux's
//! `kernel/sys.c` does (`setuid`, `setreuid`, `setresuid`, `setfsuid` and the group
//! ones, each also in its 16-bit form), and the capability sets that go with them
//! (`capget`, `capset`, at the end; the sets are [`crate::process::Caps`], which the
//! user-id calls adjust as Linux does). The ids live per thread in
//! [`crate::process::Creds`]; glibc makes a change every thread's (its `SIGSETXID`
//! round), as on Linux.
//!
//! What the ids govern in morph: what the guest reads back (these calls, `/proc`'s
//! `status`, the `uid` of the signals it sends), what its children and new threads
//! inherit, which id changes are permitted, and which processes its signals may reach
//! (`Caps::may_signal`). Files are opened, read and written by the host process (inside
//! the guest root), so the host's permission checks apply whatever ids the guest has
//! taken: a guest that gives up root keeps root's access to files.

use super::common::*;
use crate::process::{Caps, Creds, Pid};

table! {
    /// User and group ids.
    pub(super) TABLE: Files {
        23 setuid "d" |_, p, a| set_id(p, Which::User, Set::One(wide(a[0], true)));
        24 getuid "" |_, p, _| Ok(narrow(p.attrs.creds.uid));
        46 setgid "d" |_, p, a| set_id(p, Which::Group, Set::One(wide(a[0], true)));
        47 getgid "" |_, p, _| Ok(narrow(p.attrs.creds.gid));
        49 geteuid "" |_, p, _| Ok(narrow(p.attrs.creds.euid));
        50 getegid "" |_, p, _| Ok(narrow(p.attrs.creds.egid));
        70 setreuid "dd" |_, p, a| set_id(p, Which::User, Set::Re(wide(a[0], true), wide(a[1], true)));
        71 setregid "dd" |_, p, a| set_id(p, Which::Group, Set::Re(wide(a[0], true), wide(a[1], true)));
        81 setgroups "dp" |_, p, a| set_groups(p, a, true);
        138 setfsuid "d" |_, p, a| Ok(set_fs(p, Which::User, wide(a[0], true)));
        139 setfsgid "d" |_, p, a| Ok(set_fs(p, Which::Group, wide(a[0], true)));
        164 setresuid "ddd" |_, p, a| set_id(p, Which::User, res(a, true));
        165 getresuid "ppp" |_, p, a| get_res(p, a, Which::User, true);
        170 setresgid "ddd" |_, p, a| set_id(p, Which::Group, res(a, true));
        171 getresgid "ppp" |_, p, a| get_res(p, a, Which::Group, true);
        184 capget "pp" sys_capget;
        185 capset "pp" sys_capset;
        199 getuid32 "" |_, p, _| Ok(p.attrs.creds.uid);
        200 getgid32 "" |_, p, _| Ok(p.attrs.creds.gid);
        201 geteuid32 "" |_, p, _| Ok(p.attrs.creds.euid);
        202 getegid32 "" |_, p, _| Ok(p.attrs.creds.egid);
        203 setreuid32 "dd" |_, p, a| set_id(p, Which::User, Set::Re(a[0], a[1]));
        204 setregid32 "dd" |_, p, a| set_id(p, Which::Group, Set::Re(a[0], a[1]));
        206 setgroups32 "dp" |_, p, a| set_groups(p, a, false);
        208 setresuid32 "ddd" |_, p, a| set_id(p, Which::User, res(a, false));
        209 getresuid32 "ppp" |_, p, a| get_res(p, a, Which::User, false);
        210 setresgid32 "ddd" |_, p, a| set_id(p, Which::Group, res(a, false));
        211 getresgid32 "ppp" |_, p, a| get_res(p, a, Which::Group, false);
        213 setuid32 "d" |_, p, a| set_id(p, Which::User, Set::One(a[0]));
        214 setgid32 "d" |_, p, a| set_id(p, Which::Group, Set::One(a[0]));
        215 setfsuid32 "d" |_, p, a| Ok(set_fs(p, Which::User, a[0]));
        216 setfsgid32 "d" |_, p, a| Ok(set_fs(p, Which::Group, a[0]));
    }
}

/// "No change" in the calls that take it, and the one id that is never valid.
const NONE: u32 = u32::MAX;

/// The id the 16-bit calls report for one that does not fit (Linux's `overflowuid`
/// and `overflowgid`).
const OVERFLOW_ID: u32 = 65534;

/// A 16-bit call's argument as an id: `(u16)-1` is -1 (Linux's `low2highuid`).
fn wide(v: u32, narrow: bool) -> u32 {
    let v = if narrow { v & 0xffff } else { v };
    if narrow && v == 0xffff { NONE } else { v }
}

/// An id as a 16-bit call reports it (Linux's `high2lowuid`).
fn narrow(id: u32) -> u32 {
    if id > 0xffff { OVERFLOW_ID } else { id }
}

#[derive(Clone, Copy)]
enum Which {
    User,
    Group,
}

impl Which {
    /// The capability that lets a thread set any id of this kind.
    fn cap(self) -> u32 {
        match self {
            Which::User => Caps::SETUID,
            Which::Group => Caps::SETGID,
        }
    }
}

/// The ids one call asks for (`NONE`: unchanged, where the call allows it).
#[derive(Clone, Copy)]
enum Set {
    /// `setuid`/`setgid`.
    One(u32),
    /// `setreuid`/`setregid`: real and effective.
    Re(u32, u32),
    /// `setresuid`/`setresgid`: real, effective and saved.
    Res(u32, u32, u32),
}

fn res(a: &[u32; 6], narrow: bool) -> Set {
    Set::Res(wide(a[0], narrow), wide(a[1], narrow), wide(a[2], narrow))
}

/// The real, effective, saved and file-system ids of one kind.
fn ids_of(c: &Creds, w: Which) -> [u32; 4] {
    match w {
        Which::User => [c.uid, c.euid, c.suid, c.fsuid],
        Which::Group => [c.gid, c.egid, c.sgid, c.fsgid],
    }
}

fn store(c: &mut Creds, w: Which, [r, e, s, f]: [u32; 4]) {
    match w {
        Which::User => (c.uid, c.euid, c.suid, c.fsuid) = (r, e, s, f),
        Which::Group => (c.gid, c.egid, c.sgid, c.fsgid) = (r, e, s, f),
    }
}

/// The ids after a change asked by `set`, by a thread with ids `old` that is
/// `privileged` or not, as `kernel/sys.c` decides them (the file-system id follows the
/// effective one).
fn changed(old: [u32; 4], set: Set, privileged: bool) -> Result<[u32; 4], Errno> {
    let [r, e, s, _] = old;
    let is_old = |v: u32| v == r || v == e || v == s;
    match set {
        Set::One(id) => {
            if id == NONE {
                return Err(EINVAL);
            }
            if privileged {
                Ok([id, id, id, id])
            } else if id == r || id == s {
                Ok([r, id, s, id])
            } else {
                Err(EPERM)
            }
        }
        Set::Re(nr, ne) => {
            // Unprivileged: the real id may become the effective one, the effective id
            // the real or saved one.
            if !privileged && ((nr != NONE && nr != r && nr != e) || (ne != NONE && !is_old(ne))) {
                return Err(EPERM);
            }
            let new_r = if nr == NONE { r } else { nr };
            let new_e = if ne == NONE { e } else { ne };
            // The saved id takes the new effective one when the real id is set, or the
            // effective one set to something other than the old real id.
            let new_s = if nr != NONE || (ne != NONE && ne != r) { new_e } else { s };
            Ok([new_r, new_e, new_s, new_e])
        }
        Set::Res(nr, ne, ns) => {
            if !privileged && [nr, ne, ns].iter().any(|&v| v != NONE && !is_old(v)) {
                return Err(EPERM);
            }
            let pick = |v: u32, old: u32| if v == NONE { old } else { v };
            let new_e = pick(ne, e);
            Ok([pick(nr, r), new_e, pick(ns, s), new_e])
        }
    }
}

fn set_id(p: &mut Process, w: Which, set: Set) -> SysResult {
    let old = p.attrs.creds;
    let capable = p.attrs.caps.has(w.cap());
    let c = &mut p.attrs.creds;
    let new = changed(ids_of(c, w), set, capable)?;
    store(c, w, new);
    if let Which::User = w {
        p.attrs.caps.fix_setuid(&old, &p.attrs.creds);
    }
    Ok(0)
}

/// `setfsuid`/`setfsgid`: the old file-system id, whether or not it changed (never an
/// error): it changes to a valid id that is one of the thread's ids, or to any valid id
/// for a privileged thread.
fn set_fs(p: &mut Process, w: Which, id: u32) -> u32 {
    let capable = p.attrs.caps.has(w.cap());
    let c = &mut p.attrs.creds;
    let [r, e, s, f] = ids_of(c, w);
    if id != NONE && (capable || [r, e, s, f].contains(&id)) {
        store(c, w, [r, e, s, id]);
        if let Which::User = w {
            p.attrs.caps.fix_setfsuid(f, id);
        }
    }
    f
}

/// Linux's `NGROUPS_MAX` (`/proc/sys/kernel/ngroups_max`).
use crate::special::sysctl::NGROUPS_MAX;

/// `setgroups(size, list)`: the supplementary groups, for a privileged caller (`EPERM`
/// otherwise, checked before the size: `EINVAL` beyond `NGROUPS_MAX`), read as 16-bit ids
/// by the old call (`(u16)-1` is -1), kept sorted.
fn set_groups(p: &mut Process, a: &[u32; 6], narrow_ids: bool) -> SysResult {
    let n = a[0];
    if !p.attrs.caps.has(Caps::SETGID) {
        return Err(EPERM);
    }
    if n > NGROUPS_MAX {
        return Err(EINVAL);
    }
    let width = if narrow_ids { 2 } else { 4 };
    let mut bytes = vec![0u8; (n * width) as usize];
    p.aspace.read_bytes(a[1], &mut bytes).map_err(efault)?;
    let mut groups: Vec<u32> = bytes
        .chunks_exact(width as usize)
        .map(|c| match c {
            [a, b] => wide(u32::from(u16::from_le_bytes([*a, *b])), true),
            _ => u32::from_le_bytes([c[0], c[1], c[2], c[3]]),
        })
        .collect();
    // An invalid id (-1) is refused; Linux keeps the list sorted.
    if groups.contains(&NONE) {
        return Err(EINVAL);
    }
    groups.sort_unstable();
    p.groups = groups.into();
    Ok(0)
}

/// `getresuid`/`getresgid`: the real, effective and saved ids to three pointers, each
/// 16 bits wide in the old calls.
fn get_res(p: &mut Process, a: &[u32; 6], w: Which, narrow_ids: bool) -> SysResult {
    let ids = ids_of(&p.attrs.creds, w);
    for (i, &ptr) in a[..3].iter().enumerate() {
        let r = if narrow_ids {
            p.aspace.write_bytes(ptr, &(narrow(ids[i]) as u16).to_le_bytes())
        } else {
            p.aspace.write_bytes(ptr, &ids[i].to_le_bytes())
        };
        r.map_err(efault)?;
    }
    Ok(0)
}

// ----- capabilities ----------------------------------------------------------------------
//
// Capabilities: `capget` and `capset`, on the per-thread sets of
// `crate::process::Caps` (the host process's for the first thread, changed by the
// user-id calls and `execve` as Linux changes them, and by `capset`, which may only
// drop what the thread holds).

/// `_LINUX_CAPABILITY_VERSION_1`: 32-bit sets, one `__user_cap_data_struct`.
const VERSION_1: u32 = 0x1998_0330;
/// `_LINUX_CAPABILITY_VERSION_2` (deprecated) and `_3`: 64-bit sets, two structs.
const VERSION_2: u32 = 0x2007_1026;
const VERSION_3: u32 = 0x2008_0522;
/// `CAP_SETPCAP`: lets `capset` add to the inheritable set what is not permitted.
const CAP_SETPCAP: u32 = 8;
/// Every capability the kernel knows (`CAP_VALID_MASK`, up to `CAP_CHECKPOINT_RESTORE`,
/// 40: [`Caps::LAST`]): `capset` ignores the bits past it.
const VALID: u64 = (1 << (Caps::LAST + 1)) - 1;

/// The header's version (`cap_validate_magic`): how many 32-bit words of each set the
/// data holds; an unknown version is `EINVAL` with the kernel's preferred one (3)
/// written back.
fn words(p: &mut Process, header: u32) -> Result<usize, Errno> {
    match p.aspace.read_u32(header).map_err(efault)? {
        VERSION_1 => Ok(1),
        VERSION_2 | VERSION_3 => Ok(2),
        _ => {
            p.aspace.write_u32(header, VERSION_3).map_err(efault)?;
            Err(EINVAL)
        }
    }
}

/// `capget(header, data)`: the effective, permitted and inheritable sets of thread
/// `header->pid` (0: the caller; any thread may be asked about). A null `data` only
/// checks the version (and succeeds when it is unknown, having written the preferred
/// one: how libcap asks for it). Errors in Linux's order: the header (`EFAULT`), the
/// version (`EINVAL`), a negative pid (`EINVAL`), no such thread (`ESRCH`), the data
/// (`EFAULT`).
fn sys_capget(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let words = words(p, a[0]);
    if a[1] == 0 {
        return match words {
            Ok(_) | Err(EINVAL) => Ok(0),
            Err(e) => Err(e),
        };
    }
    let words = words?;
    let pid = p.aspace.read_u32(a[0] + 4).map_err(efault)? as i32;
    if pid < 0 {
        return Err(EINVAL);
    }
    let caps = if pid == 0 || pid as Pid == p.tid {
        p.attrs.caps
    } else {
        let tid = pid as Pid;
        let sys = m.sys();
        let q = std::iter::once(&*p).chain(sys.procs.values()).find(|q| q.tids().any(|t| t == tid)).ok_or(ESRCH)?;
        q.thread_attrs(tid).ok_or(ESRCH)?.caps
    };
    let mut b = Vec::with_capacity(12 * words);
    for w in 0..words {
        for set in [caps.effective, caps.permitted, caps.inheritable] {
            b.extend_from_slice(&((set >> (32 * w)) as u32).to_le_bytes());
        }
    }
    p.aspace.write_bytes(a[1], &b).map_err(efault)?;
    Ok(0)
}

/// `capset(header, data)`: new sets for the calling thread (pid 0 or its own id, else
/// `EPERM`), as Linux's `cap_capset` allows them: the inheritable set within the old
/// inheritable and permitted ones (unless `CAP_SETPCAP` is effective) and within the
/// old inheritable and bounding ones, the permitted set within the old one, the
/// effective set within the new permitted one (`EPERM` otherwise). A version-1 header
/// sets the upper 32 capabilities' bits to 0; bits past the last capability are
/// ignored. Errors in Linux's order: the version
/// (`EINVAL`), the pid (`EPERM`), the data (`EFAULT`), the sets (`EPERM`).
fn sys_capset(_: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let words = words(p, a[0])?;
    let pid = p.aspace.read_u32(a[0] + 4).map_err(efault)?;
    if pid != 0 && pid != p.tid {
        return Err(EPERM);
    }
    let mut b = vec![0u8; 12 * words];
    p.aspace.read_bytes(a[1], &mut b).map_err(efault)?;
    let word = |i: usize| u64::from(le_u32(&b, 4 * i));
    let set = |k: usize| if words == 2 { (word(k) | word(3 + k) << 32) & VALID } else { word(k) };
    let (effective, permitted, inheritable) = (set(0), set(1), set(2));
    let old = p.attrs.caps;
    let within = |new: u64, allowed: u64| new & !allowed == 0;
    if (!old.has(CAP_SETPCAP) && !within(inheritable, old.inheritable | old.permitted))
        || !within(inheritable, old.inheritable | old.bounding)
        || !within(permitted, old.permitted)
        || !within(effective, permitted)
    {
        return Err(EPERM);
    }
    p.attrs.caps = Caps { effective, permitted, inheritable, ..old };
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: [u32; 4] = [0, 0, 0, 0];

    #[test]
    fn setuid_by_root_sets_every_id_and_by_a_user_only_the_effective_one() {
        assert_eq!(changed(ROOT, Set::One(1000), true), Ok([1000; 4]));
        assert_eq!(changed([1000, 0, 0, 0], Set::One(1000), false), Ok([1000, 1000, 0, 1000]));
        assert_eq!(changed([1000, 1000, 0, 1000], Set::One(0), false), Ok([1000, 0, 0, 0]));
        assert_eq!(changed([1000; 4], Set::One(0), false), Err(EPERM));
        assert_eq!(changed(ROOT, Set::One(NONE), true), Err(EINVAL));
    }

    #[test]
    fn setreuid_moves_the_saved_id_as_linux_does() {
        // seteuid(1000) as root (glibc's seteuid is setresuid, but setreuid(-1, 1000)
        // sets the saved id: 1000 is not the old real id).
        assert_eq!(changed(ROOT, Set::Re(NONE, 1000), true), Ok([0, 1000, 1000, 1000]));
        // Setting the effective id back to the real one keeps the saved id.
        assert_eq!(changed([1000, 2000, 2000, 2000], Set::Re(NONE, 1000), false), Ok([1000, 1000, 2000, 1000]));
        // Swapping real and effective.
        assert_eq!(changed([1000, 2000, 2000, 2000], Set::Re(2000, 1000), false), Ok([2000, 1000, 1000, 1000]));
        assert_eq!(changed([1000, 1000, 1000, 1000], Set::Re(NONE, 3000), false), Err(EPERM));
        assert_eq!(changed([1000, 2000, 3000, 2000], Set::Re(3000, NONE), false), Err(EPERM));
    }

    #[test]
    fn setresuid_takes_any_of_the_old_ids_unprivileged() {
        assert_eq!(changed([1, 2, 3, 2], Set::Res(3, 1, 2), false), Ok([3, 1, 2, 1]));
        assert_eq!(changed([1, 2, 3, 2], Set::Res(NONE, NONE, NONE), false), Ok([1, 2, 3, 2]));
        assert_eq!(changed([1, 2, 3, 2], Set::Res(4, NONE, NONE), false), Err(EPERM));
        assert_eq!(changed(ROOT, Set::Res(4, 5, 6), true), Ok([4, 5, 6, 5]));
    }

    #[test]
    fn sixteen_bit_ids_widen_and_narrow_as_linux_s() {
        assert_eq!(wide(0xffff, true), NONE);
        assert_eq!(wide(0x1_0005, true), 5);
        assert_eq!(wide(0xffff, false), 0xffff);
        assert_eq!(narrow(70000), OVERFLOW_ID);
        assert_eq!(narrow(1000), 1000);
    }
}
