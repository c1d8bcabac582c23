//! Clocks: `time`, `gettimeofday`, `clock_gettime`.

use super::common::*;

table! {
    /// Clocks.
    pub(super) TABLE: Files {
        13 time "p" sys_time;
        78 gettimeofday "pp" sys_gettimeofday;
        265 clock_gettime "dp" sys_clock_gettime;
        403 clock_gettime64 "dp" sys_clock_gettime64;
    }
}

pub(super) fn host_clock(clock: u32) -> Result<libc::timespec, Errno> {
    // An invalid clock id is reported as EINVAL.
    host::clock_gettime(clock as i32).map_err(|_| EINVAL)
}

pub(super) fn sys_time(_: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let t = host_clock(libc::CLOCK_REALTIME as u32)?.tv_sec as u32;
    if a[0] != 0 {
        p.aspace.write_u32(a[0], t).map_err(efault)?;
    }
    Ok(t)
}

pub(super) fn sys_gettimeofday(_: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let ts = host_clock(libc::CLOCK_REALTIME as u32)?;
    if a[0] != 0 {
        let mut b = (ts.tv_sec as u32).to_le_bytes().to_vec();
        b.extend_from_slice(&((ts.tv_nsec / 1000) as u32).to_le_bytes());
        p.aspace.write_bytes(a[0], &b).map_err(efault)?;
    }
    if a[1] != 0 {
        p.aspace.write_u64(a[1], 0).map_err(efault)?;
    }
    Ok(0)
}

pub(super) fn sys_clock_gettime(_: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let ts = host_clock(a[0])?;
    let mut b = (ts.tv_sec as u32).to_le_bytes().to_vec();
    b.extend_from_slice(&(ts.tv_nsec as u32).to_le_bytes());
    p.aspace.write_bytes(a[1], &b).map_err(efault)?;
    Ok(0)
}

pub(super) fn sys_clock_gettime64(_: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let ts = host_clock(a[0])?;
    let mut b = ts.tv_sec.to_le_bytes().to_vec();
    b.extend_from_slice(&ts.tv_nsec.to_le_bytes());
    p.aspace.write_bytes(a[1], &b).map_err(efault)?;
    Ok(0)
}
