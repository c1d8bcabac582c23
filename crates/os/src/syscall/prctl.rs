//! `prctl`: the options real programs use at start-up and around their children.
//!
//! | option | what it does here |
//! |---|---|
//! | `PR_SET_NAME`, `PR_GET_NAME` | the calling thread's name (16 bytes with the NUL, cut silently), shown in `/proc/<pid>/comm`, `stat`, `status` and `task/<tid>/` |
//! | `PR_SET_PDEATHSIG`, `PR_GET_PDEATHSIG` | the signal the caller's process gets when the parent thread that made it exits |
//! | `PR_SET_DUMPABLE`, `PR_GET_DUMPABLE` | 0 or 1, kept and reported (morph writes no core files) |
//! | `PR_SET_NO_NEW_PRIVS`, `PR_GET_NO_NEW_PRIVS` | the one-way flag, inherited and kept across exec |
//! | `PR_SET_TIMERSLACK`, `PR_GET_TIMERSLACK` | the thread's timer slack (0 restores its default), kept and reported |
//! | `PR_SET_CHILD_SUBREAPER`, `PR_GET_CHILD_SUBREAPER` | orphaned descendants are reparented to the caller's process |
//!
//! Any other option is `EINVAL`, Linux's answer to an option it does not know. The
//! per-thread attributes live in [`crate::process::ThreadAttrs`]; dumpable and the
//! subreaper flag are the process's.

use super::common::*;

table! {
    /// Process and thread attributes.
    pub(super) TABLE: Task {
        172 prctl "dxxxx" sys_prctl;
    }
}

const PR_SET_PDEATHSIG: u32 = 1;
const PR_GET_PDEATHSIG: u32 = 2;
const PR_GET_DUMPABLE: u32 = 3;
const PR_SET_DUMPABLE: u32 = 4;
const PR_SET_NAME: u32 = 15;
const PR_GET_NAME: u32 = 16;
const PR_SET_TIMERSLACK: u32 = 29;
const PR_GET_TIMERSLACK: u32 = 30;
const PR_SET_CHILD_SUBREAPER: u32 = 36;
const PR_GET_CHILD_SUBREAPER: u32 = 37;
const PR_SET_NO_NEW_PRIVS: u32 = 38;
const PR_GET_NO_NEW_PRIVS: u32 = 39;

/// `prctl(option, arg2, arg3, arg4, arg5)`.
fn sys_prctl(_: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let [option, arg2, arg3, arg4, arg5, _] = *a;
    match option {
        PR_SET_NAME => {
            // Up to 15 bytes are read (a name that is longer need not be readable past
            // them), as Linux's `strncpy_from_user` reads them.
            let name = p.aspace.read_cstr(arg2, 15).map_err(efault)?;
            p.attrs.comm = crate::process::Comm::new(&name);
            Ok(0)
        }
        PR_GET_NAME => {
            p.aspace.write_bytes(arg2, &p.attrs.comm.raw()).map_err(efault)?;
            Ok(0)
        }
        PR_SET_PDEATHSIG => {
            if arg2 > 64 {
                return Err(EINVAL);
            }
            p.attrs.pdeath_signal = arg2 as i32;
            Ok(0)
        }
        PR_GET_PDEATHSIG => {
            p.aspace.write_u32(arg2, p.attrs.pdeath_signal as u32).map_err(efault)?;
            Ok(0)
        }
        PR_GET_DUMPABLE => Ok(u32::from(p.dumpable)),
        PR_SET_DUMPABLE => {
            // 2 (`SUID_DUMP_ROOT`) is for the kernel's own use: `EINVAL`.
            if arg2 > 1 {
                return Err(EINVAL);
            }
            p.dumpable = arg2 == 1;
            Ok(0)
        }
        PR_SET_TIMERSLACK => {
            // Linux leaves a real-time thread's slack at 0.
            if !p.attrs.is_realtime() {
                p.attrs.timer_slack_ns = if arg2 == 0 { p.attrs.default_timer_slack_ns } else { arg2 };
            }
            Ok(0)
        }
        PR_GET_TIMERSLACK => Ok(p.attrs.timer_slack_ns),
        PR_SET_CHILD_SUBREAPER => {
            p.child_subreaper = arg2 != 0;
            Ok(0)
        }
        PR_GET_CHILD_SUBREAPER => {
            p.aspace.write_u32(arg2, u32::from(p.child_subreaper)).map_err(efault)?;
            Ok(0)
        }
        PR_SET_NO_NEW_PRIVS => {
            if arg2 != 1 || arg3 != 0 || arg4 != 0 || arg5 != 0 {
                return Err(EINVAL);
            }
            p.attrs.no_new_privs = true;
            Ok(0)
        }
        PR_GET_NO_NEW_PRIVS => {
            if arg2 != 0 || arg3 != 0 || arg4 != 0 || arg5 != 0 {
                return Err(EINVAL);
            }
            Ok(u32::from(p.attrs.no_new_privs))
        }
        _ => Err(EINVAL),
    }
}
