//! Memory: `brk`, `mmap`, `mremap`, `munmap`, `mprotect`, `msync`, `madvise`, and the TLS
//! descriptor (`set_thread_area`).

use super::common::*;
use super::file::fill_snapshot;

table! {
    /// Memory.
    pub(super) TABLE: Files {
        45 brk "p" sys_brk;
        90 mmap "p" sys_old_mmap;
        91 munmap "pu" sys_munmap;
        125 mprotect "puP" sys_mprotect;
        144 msync "xux" sys_msync;
        150 mlock "pu" |_, p, a| mlock(p, a[0], a[1], false);
        151 munlock "pu" sys_munlock;
        152 mlockall "x" sys_mlockall;
        153 munlockall "" sys_munlockall;
        163 mremap "puuRp" sys_mremap;
        192 mmap2 "puPMfg" sys_mmap2;
        219 madvise "puD" sys_madvise;
        243 set_thread_area "p" sys_set_thread_area;
        244 get_thread_area "p" sys_get_thread_area;
        376 mlock2 "pux" sys_mlock2;
    }
}

pub(super) fn sys_brk(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let want = a[0];
    if want < p.brk_start {
        return Ok(p.brk);
    }
    let old_end = morph_mem::page_align_up(u64::from(p.brk)) as u32;
    let new_end = morph_mem::page_align_up(u64::from(want));
    if new_end > u64::from(p.aspace.mmap_base()) {
        return Ok(p.brk);
    }
    let new_end = new_end as u32;
    if new_end > old_end {
        if !p.aspace.is_free(old_end, new_end - old_end) {
            return Ok(p.brk);
        }
        let grow = |p: &mut Process| p.aspace.map_anon(old_end, new_end - old_end, Prot::RW, false, "[heap]");
        if reclaiming(m, p, (new_end - old_end) / PAGE_SIZE, grow).is_err() {
            return Ok(p.brk);
        }
    } else if new_end < old_end && p.aspace.unmap(new_end, old_end - new_end).is_err() {
        return Ok(p.brk);
    }
    p.brk = want;
    Ok(want)
}

#[allow(clippy::too_many_arguments)]
pub(super) fn do_mmap(
    m: &mut FileCtx<'_>,
    p: &mut Process,
    addr: u32,
    len: u32,
    prot: u32,
    flags: u32,
    fd: u32,
    off: u64,
) -> SysResult {
    if len == 0 {
        return Err(EINVAL);
    }
    let typ = flags & MAP_TYPE;
    if typ != MAP_SHARED && typ != MAP_PRIVATE && typ != 3 {
        return Err(EINVAL);
    }
    if off & u64::from(PAGE_SIZE - 1) != 0 {
        return Err(EINVAL);
    }
    let alen = morph_mem::page_align_up(u64::from(len));
    if alen > u64::from(crate::layout::TASK_SIZE) {
        return Err(ENOMEM);
    }
    let alen = alen as u32;
    let fixed = flags & (MAP_FIXED | MAP_FIXED_NOREPLACE) != 0;
    let start = if fixed {
        if addr & (PAGE_SIZE - 1) != 0 {
            return Err(EINVAL);
        }
        if u64::from(addr) + u64::from(alen) > u64::from(crate::layout::TASK_SIZE) || addr < MMAP_MIN_ADDR {
            return Err(ENOMEM);
        }
        if flags & MAP_FIXED_NOREPLACE != 0 && !p.aspace.is_free(addr, alen) {
            return Err(EEXIST);
        }
        addr
    } else {
        let hint = addr & !(PAGE_SIZE - 1);
        if hint >= MMAP_MIN_ADDR
            && u64::from(hint) + u64::from(alen) <= u64::from(p.aspace.mmap_base())
            && p.aspace.is_free(hint, alen)
        {
            hint
        } else {
            p.aspace.find_free_top_down(alen, MMAP_MIN_ADDR, p.aspace.mmap_base()).ok_or(ENOMEM)?
        }
    };
    // MAP_LOCKED: Linux's checks (`EPERM` if the caller may not lock at all, `EAGAIN`
    // past `RLIMIT_MEMLOCK`) come before the file's; the new pages are locked.
    let locked = flags & MAP_LOCKED != 0;
    if locked && !can_lock(p) {
        return Err(EPERM);
    }
    if locked && !lock_fits(p, u64::from(alen)) {
        return Err(EAGAIN);
    }
    let lock = |p: &mut Process| {
        if locked {
            p.aspace.lock_pages(start, start + alen);
        }
        Ok(start)
    };
    let shared = typ == MAP_SHARED;
    let prot = Prot(read_implies_exec(p, prot & 7));
    if flags & MAP_ANONYMOUS != 0 {
        reclaiming(m, p, alen / PAGE_SIZE, |p| p.aspace.map_anon(start, alen, prot, shared, "")).map_err(|_| ENOMEM)?;
        return lock(p);
    }
    let entry = p.fds.get(fd).ok_or(EBADF)?.clone();
    fill_snapshot(m.sys(), p, fd);
    let raw = entry.host.as_raw_fd();
    // An O_PATH descriptor's mode reads as -1: it maps nothing (EBADF, as on Linux).
    let (accmode, name) = entry.host.map_info.get_or_init(|| {
        (
            host::getfl(raw).map_or(-1, |fl| if fl & libc::O_PATH != 0 { -1 } else { fl & libc::O_ACCMODE }),
            String::from_utf8_lossy(crate::vfs::Vfs::shown(&m.vfs.guest_path_of(&entry.host).unwrap_or_default()))
                .as_ref()
                .into(),
        )
    });
    if *accmode == -1 {
        return Err(EBADF);
    }
    if *accmode == libc::O_WRONLY || (shared && prot.has(Prot::WRITE) && *accmode != libc::O_RDWR) {
        return Err(EACCES);
    }
    let file = std::fs::File::from(host::dup_cloexec(raw, 0)?);
    let id = match file.metadata() {
        Ok(md) if md.is_file() => morph_mem::FileId::of_metadata(&md),
        _ => return Err(ENODEV),
    };
    p.aspace.map_file(m.cache, start, alen, prot, shared, &file, id, off, name).map_err(|e| match e {
        MemError::Host { err, .. } if err.raw_os_error() == Some(EOVERFLOW) => EOVERFLOW,
        _ => ENOMEM,
    })?;
    lock(p)
}

/// Runs `f`, and again each time the page cache gave back idle pages (about `pages`
/// at a time, whole files) while it fails for want of memory under the machine's limit.
pub(super) fn reclaiming(
    m: &mut FileCtx<'_>,
    p: &mut Process,
    pages: u32,
    mut f: impl FnMut(&mut Process) -> Result<(), MemError>,
) -> Result<(), MemError> {
    let mut r = f(p);
    while matches!(r, Err(MemError::OutOfMemory { .. })) && m.cache.reclaim(m.phys, pages, None) > 0 {
        r = f(p);
    }
    r
}

pub(super) fn sys_mmap2(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    do_mmap(m, p, a[0], a[1], a[2], a[3], a[4], u64::from(a[5]) * u64::from(PAGE_SIZE))
}

pub(super) fn sys_old_mmap(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let mut w = [0u32; 6];
    for (i, v) in w.iter_mut().enumerate() {
        *v = p.aspace.read_u32(a[0] + 4 * i as u32).map_err(efault)?;
    }
    do_mmap(m, p, w[0], w[1], w[2], w[3], w[4], u64::from(w[5]))
}

pub(super) fn sys_mremap(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    const MREMAP_MAYMOVE: u32 = 1;
    const MREMAP_FIXED: u32 = 2;
    let (old, flags) = (a[0], a[3]);
    if old & (PAGE_SIZE - 1) != 0 || a[2] == 0 || flags & !(MREMAP_MAYMOVE | MREMAP_FIXED) != 0 {
        return Err(EINVAL);
    }
    if flags & MREMAP_FIXED != 0 {
        return Err(EINVAL); // MREMAP_FIXED is not supported: say so rather than misplace
    }
    let old_len = morph_mem::page_align_up(u64::from(a[1])) as u32;
    let new_len = morph_mem::page_align_up(u64::from(a[2]));
    if new_len > u64::from(crate::layout::TASK_SIZE) {
        return Err(ENOMEM);
    }
    let new_len = new_len as u32;
    let vma = p.aspace.vma_at(old).ok_or(EFAULT)?.clone();
    if old_len == 0 {
        // A second view of shared memory (Linux refuses it for a private mapping).
        if !vma.shared {
            return Err(EINVAL);
        }
        if flags & MREMAP_MAYMOVE == 0 {
            return Err(ENOMEM);
        }
        let dest = p.aspace.find_free_top_down(new_len, MMAP_MIN_ADDR, p.aspace.mmap_base()).ok_or(ENOMEM)?;
        p.aspace.alias_shared(m.cache, old, dest, new_len).map_err(|_| ENOMEM)?;
        return Ok(dest);
    }
    if u64::from(old) + u64::from(old_len) > u64::from(vma.end) {
        return Err(EFAULT);
    }
    if new_len <= old_len {
        p.aspace.unmap(old + new_len, old_len - new_len).map_err(|_| ENOMEM)?;
        return Ok(old);
    }
    let extra = new_len - old_len;
    // A locked mapping grows locked (Linux's `resize_is_valid`: `EAGAIN` past the limit).
    let locked = p.aspace.locked_within(u64::from(old), u64::from(old) + 1) != 0;
    if locked && !lock_fits(p, u64::from(extra)) {
        return Err(EAGAIN);
    }
    // Growing a file mapping would need the file itself; morph grows anonymous ones.
    if !matches!(vma.kind, morph_mem::MapKind::Anon) {
        return Err(ENOMEM);
    }
    // The new pages, promised as an anonymous `mmap`'s are (the page cache gives back
    // idle pages first if the limit is near).
    let grow_at = |m: &mut FileCtx<'_>, p: &mut Process, base: u32| -> Result<(), Errno> {
        let grow = |p: &mut Process| p.aspace.map_anon(base + old_len, extra, vma.prot, vma.shared, &vma.name);
        reclaiming(m, p, extra / PAGE_SIZE, grow).map_err(|_| ENOMEM)?;
        if locked {
            p.aspace.lock_pages(base + old_len, base + new_len);
        }
        Ok(())
    };
    if old + old_len == vma.end && p.aspace.is_free(old + old_len, extra) {
        grow_at(m, p, old)?;
        return Ok(old);
    }
    if flags & MREMAP_MAYMOVE == 0 {
        return Err(ENOMEM);
    }
    let dest = p.aspace.find_free_top_down(new_len, MMAP_MIN_ADDR, p.aspace.mmap_base()).ok_or(ENOMEM)?;
    // Grown first: a growth that fails leaves the mapping where it was.
    grow_at(m, p, dest)?;
    if p.aspace.move_pages(old, dest, old_len).is_err() {
        let _ = p.aspace.unmap(dest + old_len, extra);
        return Err(ENOMEM);
    }
    Ok(dest)
}

pub(super) fn sys_munmap(_: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    if a[0] & (PAGE_SIZE - 1) != 0
        || a[1] == 0
        || u64::from(a[0]) + u64::from(a[1]) > u64::from(crate::layout::TASK_SIZE)
    {
        return Err(EINVAL);
    }
    p.aspace.unmap(a[0], a[1]).map_err(|_| ENOMEM)?;
    Ok(0)
}

/// `prot` with `PROT_EXEC` added to a readable mapping under the `READ_IMPLIES_EXEC`
/// personality, as Linux's `mmap` and `mprotect` add it.
fn read_implies_exec(p: &Process, prot: u32) -> u32 {
    const PROT_READ: u32 = 1;
    const PROT_EXEC: u32 = 4;
    if p.personality & crate::linux::READ_IMPLIES_EXEC != 0 && prot & PROT_READ != 0 { prot | PROT_EXEC } else { prot }
}

pub(super) fn sys_mprotect(_: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    if a[0] & (PAGE_SIZE - 1) != 0 || a[2] & !7 != 0 {
        return Err(EINVAL);
    }
    if a[1] == 0 {
        return Ok(0);
    }
    p.aspace.protect(a[0], a[1], Prot(read_implies_exec(p, a[2]))).map_err(|k| match k {
        MemFaultKind::Protection => EACCES,
        MemFaultKind::Unmapped | MemFaultKind::BeyondEof | MemFaultKind::Limit => ENOMEM,
    })?;
    Ok(0)
}

pub(super) fn sys_msync(_: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    const MS_ASYNC: u32 = 1;
    const MS_INVALIDATE: u32 = 2;
    const MS_SYNC: u32 = 4;
    let (start, flags) = (a[0], a[2]);
    if start & (PAGE_SIZE - 1) != 0
        || flags & !(MS_ASYNC | MS_INVALIDATE | MS_SYNC) != 0
        || (flags & MS_ASYNC != 0 && flags & MS_SYNC != 0)
    {
        return Err(EINVAL);
    }
    let len = morph_mem::page_align_up(u64::from(a[1]));
    if u64::from(start) + len > 1 << 32 {
        return Err(ENOMEM);
    }
    if len == 0 {
        return Ok(0);
    }
    let len = u32::try_from(len).map_err(|_| ENOMEM)?;
    // Every flag writes back: the host's own page cache then holds the bytes, which is
    // all MS_SYNC promises other readers too.
    let mapped = p.aspace.is_mapped(start, len);
    p.aspace.write_back(start, len).map_err(|_| EIO)?;
    if mapped { Ok(0) } else { Err(ENOMEM) }
}

/// `madvise`. The advice that only hints (Linux may act on it or not, and the guest
/// cannot tell) is accepted after the range is checked: NORMAL, RANDOM, SEQUENTIAL,
/// WILLNEED, MERGEABLE, UNMERGEABLE, HUGEPAGE, NOHUGEPAGE, DONTDUMP, DODUMP, COLD,
/// PAGEOUT, and FREE on private anonymous memory (its pages may be kept, as Linux keeps
/// them until memory is short). DONTNEED gives private anonymous pages back: they read
/// as zeros again; on a private file mapping they show the file's bytes again (its
/// pages are mapped afresh from the page cache); shared memory keeps its bytes. The
/// advice that changes fork or removes backing store (REMOVE, DONTFORK, DOFORK,
/// WIPEONFORK, KEEPONFORK, POPULATE_*) gives EINVAL, as from a kernel without it. A hole in the range gives
/// ENOMEM after the mapped parts are advised, as Linux does.
pub(super) fn sys_madvise(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    const DONTNEED: u32 = 4;
    const FREE: u32 = 8;
    const HINTS: [u32; 13] = [0, 1, 2, 3, 12, 13, 14, 15, 16, 17, 20, 21, FREE];
    let (start, advice) = (a[0], a[2]);
    let len = morph_mem::page_align_up(u64::from(a[1]));
    if start & (PAGE_SIZE - 1) != 0 || u64::from(start) + len > 1 << 32 {
        return Err(EINVAL);
    }
    if advice != DONTNEED && !HINTS.contains(&advice) {
        return Err(EINVAL);
    }
    if len == 0 {
        return Ok(0);
    }
    let end = u64::from(start) + len;
    let parts: Vec<morph_mem::Vma> =
        p.aspace.vmas().filter(|v| u64::from(v.end) > u64::from(start) && u64::from(v.start) < end).cloned().collect();
    let covered: u64 = parts.iter().map(|v| u64::from(v.end).min(end) - u64::from(v.start.max(start))).sum();
    let private_anon = |v: &morph_mem::Vma| !v.shared && matches!(v.kind, morph_mem::MapKind::Anon);
    if advice == FREE && !parts.iter().all(private_anon) {
        return Err(EINVAL);
    }
    if advice == DONTNEED {
        for v in parts.iter().filter(|v| !v.shared) {
            let from = v.start.max(start);
            let n = (u64::from(v.end).min(end) - u64::from(from)) as u32;
            match &v.kind {
                morph_mem::MapKind::Anon => {
                    p.aspace.unmap(from, n).map_err(|_| ENOMEM)?;
                    p.aspace.map_anon(from, n, v.prot, false, &v.name).map_err(|_| ENOMEM)?;
                }
                // The private copies go: the pages are the file's again, as now.
                morph_mem::MapKind::File { page, file, .. } => {
                    let off = (u64::from(*page) + u64::from((from - v.start) / PAGE_SIZE)) * u64::from(PAGE_SIZE);
                    let id = morph_mem::FileId::of(file).map_err(|_| EIO)?;
                    p.aspace.map_file(m.cache, from, n, v.prot, false, file, id, off, &v.name).map_err(|_| ENOMEM)?;
                }
            }
        }
    }
    if covered < len { Err(ENOMEM) } else { Ok(0) }
}

// ----- mlock and its relatives -----------------------------------------------------
//
// Locking pages in memory is a residency promise morph keeps trivially for the guest
// (its memory is the host process's; nothing of it is paged out by morph). What is
// modeled is the accounting: the address space records its locked pages (Linux's
// `VM_LOCKED` VMAs, `AddressSpace::lock_pages`), which `RLIMIT_MEMLOCK` counts as a
// whole without `CAP_IPC_LOCK` (Linux's `locked_vm`: pages locked again are not
// counted twice), `munlock`, `munlockall`, `munmap` and a mapping over them release,
// `mremap` moves (and grows: `EAGAIN` past the limit), `fork` and `exec` drop, and
// `/proc/<pid>/status` shows (`VmLck`). `MAP_LOCKED` locks a new mapping. Not modeled:
// `MCL_FUTURE` locking later mappings (and applying the limit to them).

/// `CAP_IPC_LOCK`: locks past `RLIMIT_MEMLOCK`.
const CAP_IPC_LOCK: u32 = 14;
const RLIMIT_MEMLOCK: usize = 8;

/// Whether `p` may lock memory at all (Linux's `can_do_mlock`): a memory-lock limit
/// above 0, or `CAP_IPC_LOCK`.
fn can_lock(p: &Process) -> bool {
    p.rlimits[RLIMIT_MEMLOCK].0 != 0 || p.attrs.caps.has(CAP_IPC_LOCK)
}

/// Whether `p` may have `more` bytes locked beside what it has locked (Linux's
/// `mlock_future_ok`): within `RLIMIT_MEMLOCK`, or `CAP_IPC_LOCK`.
fn lock_fits(p: &Process, more: u64) -> bool {
    let limit = p.rlimits[RLIMIT_MEMLOCK].0 / u64::from(PAGE_SIZE);
    (p.aspace.locked_bytes() + more) / u64::from(PAGE_SIZE) <= limit || p.attrs.caps.has(CAP_IPC_LOCK)
}

/// The pages `[start, end)` a lock call names: its start rounded down to a page, its
/// length with the start's offset rounded up, in the 64-bit arithmetic of the kernel a
/// 32-bit process runs on (nothing wraps; a range past 4 GiB has unmapped pages).
fn lock_range(start: u32, len: u32) -> (u64, u64) {
    let off = u64::from(start & (PAGE_SIZE - 1));
    let first = u64::from(start & !(PAGE_SIZE - 1));
    (first, first + morph_mem::page_align_up(u64::from(len) + off))
}

/// The mappings over `[start, end)`, and whether a page of it is unmapped (Linux's
/// `apply_vma_lock_flags` then fails with `ENOMEM`, after it changed the mappings
/// before the hole): the mappings before the first hole.
fn locked_parts(p: &Process, start: u64, end: u64) -> (Vec<morph_mem::Vma>, bool) {
    if start == end {
        return (Vec::new(), false);
    }
    let mut parts = Vec::new();
    let mut at = start;
    for v in p.aspace.vmas().filter(|v| u64::from(v.end) > start && u64::from(v.start) < end) {
        if u64::from(v.start) > at {
            return (parts, true);
        }
        at = u64::from(v.end);
        parts.push(v.clone());
    }
    (parts, at < end)
}

/// Records (`lock`) or clears the lock of the pages of `parts` within `[start, end)`.
fn set_locked(p: &mut Process, parts: &[morph_mem::Vma], start: u64, end: u64, lock: bool) {
    for v in parts {
        // Within a mapping, so below 4 GiB.
        let (s, e) = (start.max(u64::from(v.start)) as u32, end.min(u64::from(v.end)) as u32);
        if lock { p.aspace.lock_pages(s, e) } else { p.aspace.unlock_pages(s, e) }
    }
}

/// Whether the pages of `v` before `end` (within a locked range) can all be brought in, as `mlock`
/// brings them (Linux's `__mm_populate`, whose failure is `ENOMEM`): not under
/// `PROT_NONE`, and for a file mapping, not past the page holding the file's end.
fn populates(v: &morph_mem::Vma, end: u64) -> bool {
    if v.prot.0 == 0 {
        return false;
    }
    let morph_mem::MapKind::File { page, file, .. } = &v.kind else { return true };
    let to = end.min(u64::from(v.end));
    let to_off = u64::from(*page) * u64::from(PAGE_SIZE) + (to - u64::from(v.start));
    file.metadata().is_ok_and(|md| to_off <= morph_mem::page_align_up(md.len()))
}

/// `mlock(start, len)` and `mlock2` (`on_fault`: `MLOCK_ONFAULT`, which brings nothing
/// in). Linux's checks in its order: may the caller lock at all (`EPERM`), the pages
/// it would have locked (those locked already, and those of the range not locked yet)
/// against `RLIMIT_MEMLOCK` unless `CAP_IPC_LOCK` (`ENOMEM`), a page unmapped
/// (`ENOMEM`, the mappings before it locked), a page that cannot be brought in
/// (`ENOMEM`, the range locked).
fn mlock(p: &mut Process, start: u32, len: u32, on_fault: bool) -> SysResult {
    if !can_lock(p) {
        return Err(EPERM);
    }
    let (first, end) = lock_range(start, len);
    let again = p.aspace.locked_within(first, end);
    if !lock_fits(p, (end - first) - again) {
        return Err(ENOMEM);
    }
    let (parts, hole) = locked_parts(p, first, end);
    set_locked(p, &parts, first, end, true);
    if hole {
        return Err(ENOMEM);
    }
    if !on_fault && !parts.iter().all(|v| populates(v, end)) {
        return Err(ENOMEM);
    }
    Ok(0)
}

fn sys_mlock2(_: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    const MLOCK_ONFAULT: u32 = 1;
    if a[2] & !MLOCK_ONFAULT != 0 {
        return Err(EINVAL);
    }
    mlock(p, a[0], a[1], a[2] & MLOCK_ONFAULT != 0)
}

/// `munlock(start, len)`: any caller; `ENOMEM` for an unmapped page in the range (the
/// mappings before it unlocked).
fn sys_munlock(_: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let (first, end) = lock_range(a[0], a[1]);
    let (parts, hole) = locked_parts(p, first, end);
    set_locked(p, &parts, first, end, false);
    if hole { Err(ENOMEM) } else { Ok(0) }
}

/// `munlockall()`: every page unlocked.
fn sys_munlockall(_: &mut FileCtx<'_>, p: &mut Process, _: &[u32; 6]) -> SysResult {
    p.aspace.unlock_pages(0, u32::MAX);
    Ok(0)
}

/// `mlockall(flags)`: `MCL_CURRENT`, `MCL_FUTURE`, `MCL_ONFAULT` (not alone). Linux's
/// checks in its order: the flags (`EINVAL`), may the caller lock at all (`EPERM`),
/// with `MCL_CURRENT` every mapped page against `RLIMIT_MEMLOCK` unless
/// `CAP_IPC_LOCK` (`ENOMEM`); then with `MCL_CURRENT` every mapping is locked. Pages
/// that cannot be brought in are no error here.
fn sys_mlockall(_: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    const MCL_CURRENT: u32 = 1;
    const MCL_FUTURE: u32 = 2;
    const MCL_ONFAULT: u32 = 4;
    let flags = a[0];
    if flags == 0 || flags & !(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) != 0 || flags == MCL_ONFAULT {
        return Err(EINVAL);
    }
    if !can_lock(p) {
        return Err(EPERM);
    }
    let limit = p.rlimits[RLIMIT_MEMLOCK].0 / u64::from(PAGE_SIZE);
    let total: u64 = p.aspace.vmas().map(|v| u64::from(v.end - v.start) / u64::from(PAGE_SIZE)).sum();
    if flags & MCL_CURRENT != 0 {
        if total > limit && !p.attrs.caps.has(CAP_IPC_LOCK) {
            return Err(ENOMEM);
        }
        let all: Vec<(u32, u32)> = p.aspace.vmas().map(|v| (v.start, v.end)).collect();
        for (s, e) in all {
            p.aspace.lock_pages(s, e);
        }
    }
    Ok(0)
}

pub(super) fn sys_set_thread_area(_: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    set_thread_area(p, a[0])
}

/// `get_thread_area(u_info)`: the TLS entry `u_info->entry_number` as a `struct
/// user_desc`, as Linux's `fill_user_desc` makes it from the descriptor (an unused
/// entry: not present, read-only); `EINVAL` outside the TLS entries.
pub(super) fn sys_get_thread_area(_: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    use morph_cpu::state::TLS_ENTRIES;
    let entry = p.aspace.read_u32(a[0]).map_err(efault)?;
    let i = (entry as usize).wrapping_sub(p.cpu.segs.tls_min);
    if i >= TLS_ENTRIES {
        return Err(EINVAL);
    }
    let d = p.cpu.tls[i];
    let typ = u32::from(d.access & 0xf);
    let f = u32::from(d.flags);
    let bits = (f >> 2 & 1) // seg_32bit: D/B
        | (typ >> 2) << 1 // contents
        | u32::from(typ & 2 == 0) << 3 // read_exec_only
        | (f >> 3 & 1) << 4 // limit_in_pages: G
        | u32::from(d.access & 0x80 == 0) << 5 // seg_not_present
        | (f & 1) << 6; // useable: AVL
    let mut b = [0u8; 16];
    for (k, v) in [entry, d.base, d.limit & 0xf_ffff, bits].into_iter().enumerate() {
        b[4 * k..4 * k + 4].copy_from_slice(&v.to_le_bytes());
    }
    p.aspace.write_bytes(a[0], &b).map_err(efault)?;
    Ok(0)
}

/// Installs the TLS descriptor (`struct user_desc`) at guest address `ptr`.
pub(crate) fn set_thread_area(p: &mut Process, ptr: u32) -> SysResult {
    install_tls(&mut p.cpu, &mut p.aspace, ptr)
}

/// Installs the TLS descriptor at `ptr` into `cpu`'s per-thread TLS entries (also for
/// a new thread: `clone`'s `CLONE_SETTLS`).
pub(crate) fn install_tls(cpu: &mut morph_cpu::Cpu, aspace: &mut morph_mem::AddressSpace, ptr: u32) -> SysResult {
    use morph_cpu::state::{TLS_ENTRIES, seg};
    let tls_min = cpu.segs.tls_min;
    let a = [ptr];
    let mut d = [0u8; 16];
    aspace.read_bytes(a[0], &mut d).map_err(efault)?;
    let w = |i: usize| u32::from_le_bytes([d[i], d[i + 1], d[i + 2], d[i + 3]]);
    let (entry, base, limit, flags) = (w(0), w(4), w(8), w(12));
    // `struct user_desc`'s bit fields.
    let bit = |i: u32| flags >> i & 1;
    let (seg_32bit, contents, read_exec_only) = (bit(0), flags >> 1 & 3, bit(3));
    let (limit_in_pages, seg_not_present, useable) = (bit(4), bit(5), bit(6));
    // Linux clears the entry for an "empty" descriptor (and an all-zero one), and
    // refuses any other but a present 32-bit data segment (`tls_desc_okay`).
    let zero = base == 0 && limit == 0 && flags & 0x7f == 0;
    let empty = base == 0 && limit == 0 && flags & 0x7f == (1 << 3) | (1 << 5);
    if !(zero || empty) && (seg_32bit == 0 || contents > 1 || seg_not_present != 0) {
        return Err(EINVAL);
    }
    let idx = if entry == u32::MAX {
        let free = cpu.tls.iter().position(|t| !t.in_use()).ok_or(ESRCH)?;
        let n = (tls_min + free) as u32;
        aspace.write_u32(a[0], n).map_err(efault)?;
        free
    } else {
        let i = (entry as usize).wrapping_sub(tls_min);
        if i >= TLS_ENTRIES {
            return Err(EINVAL);
        }
        i
    };
    let present = !(zero || empty);
    // The access byte and flags as Linux's `fill_ldt` builds them: P, DPL 3, S, the type
    // (writable unless read_exec_only, expand-down from `contents`, accessed); G, D/B, AVL.
    let access = if present { 0xf0 | ((read_exec_only ^ 1) << 1 | contents << 2 | 1) as u8 } else { 0 };
    let dflags = if present { (limit_in_pages << 3 | seg_32bit << 2 | useable) as u8 } else { 0 };
    cpu.tls[idx] = morph_cpu::TlsDescriptor { base, limit, access, flags: dflags };
    // Linux reloads the segment registers that hold this entry's selector (RPL 3); a
    // load of an entry just emptied fails, and its fixup loads the null selector.
    let selector = ((tls_min + idx) << 3 | 3) as u16;
    for s in [seg::FS, seg::GS] {
        if cpu.sel[s] == selector {
            if !present {
                cpu.sel[s] = 0;
            }
            cpu.seg_base[s] = if present { base } else { 0 };
        }
    }
    Ok(0)
}
