//! Who and where the guest runs: supplementary groups (the ids are `creds.rs`'), `uname` and the machine's names, resource limits, `sysinfo`, `getrandom`.

use super::common::*;

table! {
    /// Identity, limits and system information.
    pub(super) TABLE: Files {
        74 sethostname "pd" |m, p, a| set_uts_name(p, a, &mut m.uts.hostname);
        75 setrlimit "dp" sys_setrlimit;
        76 getrlimit "dp" sys_old_getrlimit;
        80 getgroups "dp" |_, p, a| sys_getgroups(p, a, true);
        116 sysinfo "p" sys_sysinfo;
        121 setdomainname "pd" |m, p, a| set_uts_name(p, a, &mut m.uts.domainname);
        122 uname "p" sys_uname;
        136 personality "x" sys_personality;
        191 ugetrlimit "dp" sys_getrlimit;
        205 getgroups32 "dp" |_, p, a| sys_getgroups(p, a, false);
        340 prlimit64 "ddpp" sys_prlimit64;
        355 getrandom "pux" sys_getrandom;
    }
}

/// `getgroups(size, list)`: the supplementary groups (at first the host user's, as the ids are),
/// their number when `size` is 0, `EINVAL` when `size` is negative or too small. The
/// 16-bit call (`narrow`) reports an id above 65535 as the overflow group, 65534.
fn sys_getgroups(p: &mut Process, a: &[u32; 6], narrow: bool) -> SysResult {
    let size = a[0] as i32;
    let groups = p.groups.clone();
    let n = u32::try_from(groups.len()).map_err(|_| EINVAL)?;
    if size < 0 || (size != 0 && (size as u32) < n) {
        return Err(EINVAL);
    }
    if size == 0 {
        return Ok(n);
    }
    let bytes: Vec<u8> = if narrow {
        groups.iter().flat_map(|&g| u16::try_from(g).unwrap_or(65534).to_le_bytes()).collect()
    } else {
        groups.iter().flat_map(|&g| g.to_le_bytes()).collect()
    };
    p.aspace.write_bytes(a[1], &bytes).map_err(efault)?;
    Ok(n)
}

/// `uname`: Linux on i686, with the machine's node and domain names.
pub(super) fn sys_uname(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    // struct new_utsname: six 65-byte fields.
    let mut buf = [0u8; UTS_FIELD * 6];
    // One source with /proc/sys/kernel (see `special::sysctl`): the 2.6.12 model
    // reports a modern release too; UNAME26 changes the release shown here only.
    use crate::special::sysctl::{MACHINE, OSRELEASE, OSRELEASE26, OSTYPE, VERSION};
    let release = if p.personality & UNAME26 != 0 { OSRELEASE26 } else { OSRELEASE };
    let fields = [OSTYPE, &m.uts.hostname, release, VERSION, MACHINE, &m.uts.domainname];
    for (i, f) in fields.iter().enumerate() {
        let n = f.len().min(UTS_FIELD - 1);
        buf[i * UTS_FIELD..i * UTS_FIELD + n].copy_from_slice(&f[..n]);
    }
    p.aspace.write_bytes(a[0], &buf).map_err(efault)?;
    Ok(0)
}

/// `personality(persona)`: the caller's execution domain and flags, set to `persona`
/// unless it is `0xffffffff` (a query); the old value is returned. Linux keeps any
/// value; what morph models of it: `ADDR_NO_RANDOMIZE` (the next `exec` lays the program
/// out without ASLR), `READ_IMPLIES_EXEC` (`syscall::mm`), `UNAME26` (`uname`). The
/// others (`ADDR_COMPAT_LAYOUT`'s bottom-up `mmap`, `MMAP_PAGE_ZERO`, `ADDR_LIMIT_3GB`,
/// the execution domains) are kept and shown, without their effect.
fn sys_personality(_: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let old = p.personality;
    if a[0] != 0xffff_ffff {
        p.personality = a[0];
    }
    Ok(old)
}

/// The size of a `struct new_utsname` field (`__NEW_UTS_LEN` and a NUL).
const UTS_FIELD: usize = 65;

/// `sethostname(name, len)` and `setdomainname(name, len)`: the machine's name
/// becomes `len` bytes at `name` (kept as given, NULs included, as Linux keeps them;
/// `uname` shows it up to the first NUL), after Linux's checks in Linux's order:
/// `EPERM` without `CAP_SYS_ADMIN`, `EINVAL` for a length past 64 (or negative),
/// `EFAULT`.
fn set_uts_name(p: &mut Process, a: &[u32; 6], name: &mut Vec<u8>) -> SysResult {
    if !p.attrs.caps.has(crate::process::Caps::SYS_ADMIN) {
        return Err(EPERM);
    }
    let len = a[1] as i32;
    if !(0..UTS_FIELD as i32).contains(&len) {
        return Err(EINVAL);
    }
    let mut b = vec![0u8; len as usize];
    p.aspace.read_bytes(a[0], &mut b).map_err(efault)?;
    *name = b;
    Ok(0)
}

pub(super) fn sys_getrlimit(_: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    getrlimit32(p, a, u32::MAX)
}

/// The old `getrlimit` (76): as `ugetrlimit`, but a limit past `0x7fffffff` (infinity
/// included) reads as `0x7fffffff` (Linux's `old_getrlimit` for i386).
pub(super) fn sys_old_getrlimit(_: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    getrlimit32(p, a, i32::MAX as u32)
}

/// A limit as two 32-bit values, each at most `top`.
fn getrlimit32(p: &mut Process, a: &[u32; 6], top: u32) -> SysResult {
    let (cur, max) = *p.rlimits.get(a[0] as usize).ok_or(EINVAL)?;
    let clip = |v: u64| v.min(u64::from(top)) as u32;
    let mut b = clip(cur).to_le_bytes().to_vec();
    b.extend_from_slice(&clip(max).to_le_bytes());
    p.aspace.write_bytes(a[1], &b).map_err(efault)?;
    Ok(0)
}

/// `setrlimit`: 32-bit limits, `0xffffffff` infinity, checked as `prlimit64` checks them.
pub(super) fn sys_setrlimit(_: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let r = a[0] as usize;
    let old = *p.rlimits.get(r).ok_or(EINVAL)?;
    let wide = |v: u32| if v == u32::MAX { u64::MAX } else { u64::from(v) };
    let cur = wide(p.aspace.read_u32(a[1]).map_err(efault)?);
    let max = wide(p.aspace.read_u32(a[1].wrapping_add(4)).map_err(efault)?);
    if cur > max {
        return Err(EINVAL);
    }
    if (max > old.1 && ids()[1] != 0) || (r == RLIMIT_NOFILE && max > crate::files::NR_OPEN) {
        return Err(EPERM);
    }
    set_rlimit(p, r, (cur, max));
    Ok(0)
}

/// `RLIMIT_NOFILE`.
const RLIMIT_NOFILE: usize = 7;

/// Sets limit `r`; `RLIMIT_NOFILE`'s is the descriptor table's too.
fn set_rlimit(p: &mut Process, r: usize, lim: (u64, u64)) {
    p.rlimits[r] = lim;
    if r == RLIMIT_NOFILE {
        p.fds.set_limit(lim.0);
    }
}

pub(super) fn sys_prlimit64(_: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    if a[0] != 0 && a[0] != p.pid {
        return Err(ESRCH);
    }
    let r = a[1] as usize;
    let old = *p.rlimits.get(r).ok_or(EINVAL)?;
    if a[2] != 0 {
        let cur = p.aspace.read_u64(a[2]).map_err(efault)?;
        let max = p.aspace.read_u64(a[2] + 8).map_err(efault)?;
        if cur > max {
            return Err(EINVAL);
        }
        if (max > old.1 && ids()[1] != 0) || (r == RLIMIT_NOFILE && max > crate::files::NR_OPEN) {
            return Err(EPERM);
        }
        set_rlimit(p, r, (cur, max));
    }
    if a[3] != 0 {
        let mut b = old.0.to_le_bytes().to_vec();
        b.extend_from_slice(&old.1.to_le_bytes());
        p.aspace.write_bytes(a[3], &b).map_err(efault)?;
    }
    Ok(0)
}

pub(super) fn sys_sysinfo(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let mut b = [0u8; 64];
    let put = |b: &mut [u8; 64], off: usize, v: u32| b[off..off + 4].copy_from_slice(&v.to_le_bytes());
    put(&mut b, 0, m.started.elapsed().as_secs() as u32);
    let total = m.cfg.max_mem.min(u64::from(u32::MAX)) as u32;
    let used = (m.phys.stats().frames_in_use * u64::from(PAGE_SIZE)).min(u64::from(total)) as u32;
    put(&mut b, 16, total);
    put(&mut b, 20, total - used);
    b[40..42].copy_from_slice(&(m.other_processes() as u16 + 1).to_le_bytes());
    put(&mut b, 52, 1); // mem_unit
    p.aspace.write_bytes(a[0], &b).map_err(efault)?;
    Ok(0)
}

pub(super) fn sys_getrandom(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let len = a[1].min(1 << 25);
    let mut buf = vec![0u8; len as usize];
    m.rng.fill_bytes(&mut buf);
    p.aspace.write_bytes(a[0], &buf).map_err(efault)?;
    Ok(len)
}
