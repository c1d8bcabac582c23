//! Signals: dispositions, masks, delivery frames and sigreturn; queued signals,
//! timers, and signals read from a descriptor (`signalfd`, at the end).
//!
//! Delivery happens on the way back to user mode (before the scheduler lets a process
//! run, and after each system call): the lowest deliverable signal either takes its
//! default action or gets a handler frame built on the guest stack, exactly as Linux
//! i386 lays it out, so that glibc's restorers (`__restore`, `__restore_rt`) and
//! programs that read `ucontext` work unmodified:
//!
//! ```text
//! rt frame (SA_SIGINFO)              legacy frame
//!   +0   pretcode (restorer)           +0   pretcode
//!   +4   sig                           +4   sig
//!   +8   &info                         +8   struct sigcontext (88 bytes)
//!   +12  &uc                           +96  struct _fpstate (unused, 624)
//!   +16  siginfo_t (128 bytes)         +720 extramask (high 32 signals)
//!   +144 ucontext: flags, link,        +724 retcode (8)
//!        stack_t, sigcontext, sigmask
//!   +260 retcode (8)
//! ```
//!
//! The x87/SSE state goes in a separate `_fpstate` (112-byte legacy header, then the
//! 512-byte FXSAVE image) below the frame; `sigcontext.fpstate` points at it.

use morph_cpu::state::{flags, seg};

use super::common::*;
use super::wait;
use std::cell::Cell;
use std::time::{Duration, Instant};

use crate::files::{Served, ServedKind};
use crate::process::{Blocked, IntervalTimer, SigInfo, Wait};

table! {
    /// Signals.
    pub(super) TABLE: Task {
        27 alarm "u" sys_alarm;
        29 pause "" sys_pause;
        37 kill "dd" sys_kill;
        48 signal "dx" sys_signal;
        67 sigaction "dpp" sys_sigaction;
        68 sgetmask "" |_, p, _| Ok(p.sigmask as u32);
        69 ssetmask "x" sys_ssetmask;
        72 sigsuspend "ddx" |_, p, a| suspend(p, u64::from(a[2]));
        73 sigpending "p" sys_sigpending;
        104 setitimer "dpp" sys_setitimer;
        105 getitimer "dp" sys_getitimer;
        119 sigreturn "" sys_sigreturn;
        126 sigprocmask "dpp" sys_sigprocmask;
        173 rt_sigreturn "" sys_rt_sigreturn;
        174 rt_sigaction "dppu" sys_rt_sigaction;
        175 rt_sigprocmask "dppu" sys_rt_sigprocmask;
        176 rt_sigpending "pu" sys_rt_sigpending;
        177 rt_sigtimedwait "pppu" sys_rt_sigtimedwait;
        178 rt_sigqueueinfo "ddp" sys_rt_sigqueueinfo;
        179 rt_sigsuspend "pu" sys_rt_sigsuspend;
        186 sigaltstack "pp" sys_sigaltstack;
        238 tkill "dd" sys_tkill;
        259 timer_create "dpp" sys_timer_create;
        260 timer_settime "dxpp" sys_timer_settime;
        261 timer_gettime "dp" sys_timer_gettime;
        262 timer_getoverrun "d" sys_timer_getoverrun;
        263 timer_delete "d" sys_timer_delete;
        270 tgkill "ddd" sys_tgkill;
        321 signalfd "fpu" |_, p, a| signalfd(p, a[0], a[1], a[2], 0);
        327 signalfd4 "fpux" |_, p, a| signalfd(p, a[0], a[1], a[2], a[3]);
        335 rt_tgsigqueueinfo "dddp" sys_rt_tgsigqueueinfo;
        408 timer_gettime64 "dp" sys_timer_gettime64;
        409 timer_settime64 "dxpp" sys_timer_settime64;
        421 rt_sigtimedwait_time64 "pppu" sys_rt_sigtimedwait_time64;
    }
}

const SIGCONTEXT_SIZE: u32 = 88;
const FPSTATE_SIZE: u32 = 112 + 512;
const SIGINFO_SIZE: u32 = 128;
const UCONTEXT_SIZE: u32 = 20 + SIGCONTEXT_SIZE + 8;
const RT_FRAME_SIZE: u32 = 16 + SIGINFO_SIZE + UCONTEXT_SIZE + 8;
const FRAME_SIZE: u32 = 8 + SIGCONTEXT_SIZE + FPSTATE_SIZE + 4 + 8;

fn sigbit(sig: i32) -> u64 {
    1u64 << (sig - 1)
}

impl TaskCtx<'_> {
    /// Delivers pending, unblocked signals to `p`: default actions, or one handler
    /// frame per call. A blocked system call is interrupted (`EINTR`) or, with
    /// `SA_RESTART` on a restartable call, re-run after the handler. A stop signal's
    /// default action stops the group (see [`crate::process::JobControl`]); a call it
    /// interrupts goes on waiting once the group is continued, as Linux restarts it.
    pub(crate) fn deliver_signals(&mut self, p: &mut Process) {
        if matches!(p.blocked.as_ref().map(|b| &b.wait), Some(Wait::Vfork(_))) {
            return; // the parent of a vfork waits, signals and all, for its child
        }
        if std::mem::take(&mut p.job.notify_continued) {
            let (pid, ppid) = (p.pid, p.ppid);
            self.tasks.notify_job_change(p, pid, ppid, CLD_CONTINUED, SIGCONT);
        }
        while p.exit.is_none() {
            // A stopped group takes nothing but `SIGKILL` until it is continued.
            let ready = p.deliverable() & if p.job.stopped { sigbit(SIGKILL) } else { u64::MAX };
            if ready == 0 {
                return;
            }
            // `SIGKILL` first: Linux makes it end the group as it is sent.
            let sig = if ready & sigbit(SIGKILL) != 0 { SIGKILL } else { ready.trailing_zeros() as i32 + 1 };
            p.pending &= !sigbit(sig);
            let info = p.siginfo[(sig - 1) as usize];
            let act = p.sigactions[(sig - 1) as usize];
            let action = if sig == SIGKILL || sig == SIGSTOP {
                default_action(sig)
            } else if act.handler == SIG_IGN {
                DefaultAction::Ignore
            } else if act.handler == SIG_DFL {
                default_action(sig)
            } else {
                self.enter_handler(p, sig, &act, &info);
                return;
            };
            match action {
                DefaultAction::Terminate => {
                    p.exit = Some(ExitStatus::Signal(sig));
                    p.blocked = None;
                }
                // A stop from a terminal or `kill` other than `SIGSTOP`, in an orphaned
                // group, is discarded (no one is left to continue it).
                DefaultAction::Stop if sig != SIGSTOP && crate::process::pgrp_orphaned(p, &self.tasks.procs) => {}
                DefaultAction::Stop => {
                    p.job = crate::process::JobControl { stopped: true, stop_report: sig, ..Default::default() };
                    let (pid, ppid) = (p.pid, p.ppid);
                    self.tasks.notify_job_change(p, pid, ppid, CLD_STOPPED, sig);
                }
                // Discarded; a wait in pause/sigsuspend goes on (only a handled signal
                // ends it). `SIGCONT` did its work when it was sent.
                DefaultAction::Ignore | DefaultAction::Continue => {}
            }
        }
    }

    fn enter_handler(&mut self, p: &mut Process, sig: i32, act: &crate::process::SigAction, info: &SigInfo) {
        // A call waiting for something ends now: with EINTR, or re-run later.
        if let Some(b) = p.blocked.take() {
            p.resumed = None;
            if matches!(b.wait, Wait::Futex) {
                self.futexes.cancel(p.tid);
            }
            if let Some(n) = b.partial {
                // A write that had written some bytes returns their count.
                p.partial_write = None;
                p.cpu.eip = p.cpu.eip.wrapping_add(2);
                p.cpu.gpr[reg::EAX] = n;
            } else if !(b.restartable && act.flags & SA_RESTART != 0) {
                p.cpu.eip = p.cpu.eip.wrapping_add(2);
                p.cpu.gpr[reg::EAX] = (-EINTR) as u32;
            }
        }
        // A restartable sequence the handler interrupts is aborted first (Linux's
        // `rseq_signal_deliver`): the frame returns to its abort handler.
        super::rseq::resume(p);
        let oldmask = p.saved_mask.take().unwrap_or(p.sigmask);
        if build_frame(p, sig, act, info, oldmask).is_err() {
            // No room for the frame: Linux forces SIGSEGV.
            eprintln!("morph: pid {} killed by SIGSEGV: cannot build the frame for {}", p.pid, signal_name(sig));
            p.exit = Some(ExitStatus::Signal(SIGSEGV));
            return;
        }
        p.sigmask |= act.mask & !UNBLOCKABLE;
        if act.flags & SA_NODEFER == 0 {
            p.sigmask |= sigbit(sig);
        }
        if act.flags & SA_RESETHAND != 0 {
            // Only the handler: the flags and mask stay, as `sigaction` reads them back.
            p.sigactions[(sig - 1) as usize].handler = SIG_DFL;
        }
    }
}

/// Writes a `siginfo_t` for `sig` at `at`, in the layout Linux's 32-bit copy chooses
/// by signal and `si_code` (`siginfo_layout`): a fault's address for a fault signal the
/// CPU raised (a code between `SI_USER` and `SI_KERNEL`); else the sender's pid and uid
/// (`kill`, `tkill`, `SI_KERNEL`), with, for `SIGCHLD`'s codes, the status, and for
/// negative codes (a timer, `sigqueue`), the `si_value` word after them. A fault signal
/// sent by `kill` carries the sender's pid and uid, as any other.
fn put_siginfo(p: &mut Process, at: u32, sig: i32, info: &SigInfo) -> Result<(), MemFault> {
    let mut b = [0u8; SIGINFO_SIZE as usize];
    let mut put = |off: usize, v: u32| b[off..off + 4].copy_from_slice(&v.to_le_bytes());
    put(0, sig as u32);
    put(8, info.code as u32);
    let raised = info.code > SI_USER && info.code < SI_KERNEL;
    match sig {
        SIGSEGV | SIGBUS | SIGILL | SIGFPE | SIGTRAP if raised => put(12, info.pid_or_addr),
        _ => {
            put(12, info.pid_or_addr);
            put(16, info.uid);
            if (sig == SIGCHLD && raised) || info.code < 0 {
                put(20, info.status as u32);
            }
        }
    }
    p.aspace.write_bytes(at, &b)
}

/// Writes `struct sigcontext` of the current registers at `at`.
fn put_sigcontext(p: &mut Process, at: u32, fpstate: u32, oldmask: u32, rf: bool) -> Result<(), MemFault> {
    let c = &p.cpu;
    let g = &c.gpr;
    let words = [
        u32::from(c.sel[seg::GS]),
        u32::from(c.sel[seg::FS]),
        u32::from(c.sel[seg::ES]),
        u32::from(c.sel[seg::DS]),
        g[reg::EDI],
        g[reg::ESI],
        g[reg::EBP],
        g[reg::ESP],
        g[reg::EBX],
        g[reg::EDX],
        g[reg::ECX],
        g[reg::EAX],
        c.trap.vector,
        c.trap.error_code,
        c.eip,
        u32::from(c.sel[seg::CS]),
        c.eflags | if rf { flags::RF } else { 0 },
        g[reg::ESP], // esp_at_signal
        u32::from(c.sel[seg::SS]),
        fpstate,
        oldmask,
        c.trap.cr2,
    ];
    let mut b = Vec::with_capacity(SIGCONTEXT_SIZE as usize);
    for w in words {
        b.extend_from_slice(&w.to_le_bytes());
    }
    p.aspace.write_bytes(at, &b)
}

/// Writes the x87/SSE state at `at` (64-byte aligned): the legacy `fsave`-format header
/// Linux makes from the FXSAVE image (`convert_from_fxsr` for a 32-bit task on a 64-bit
/// kernel: control, status and full tag words with their high halves set, FIP, the
/// task's CS, FDP, its DS with the high half set, the eight registers in stack order;
/// then the status word again and magic 0, FXSR state follows) and the FXSAVE image.
fn put_fpstate(p: &mut Process, at: u32) -> Result<(), MemFault> {
    let mut fx = p.cpu.fpu.0;
    // The kernel saves the state with the host's `xsave`, which on a host whose
    // `fxsave` hides the x87 pointers unless an exception is pending (AMD's) leaves FOP,
    // FIP and FDP zero: in the frame, and so in the state sigreturn restores.
    if morph_cpu::state::host_fxsave_hides_pointers() && fx[2] & 0x80 == 0 {
        fx[6..12].fill(0);
        fx[16..20].fill(0);
    }
    let fx = &fx;
    let word = |i: usize| u32::from(u16::from_le_bytes([fx[i], fx[i + 1]]));
    let dword = |i: usize| u32::from_le_bytes([fx[i], fx[i + 1], fx[i + 2], fx[i + 3]]);
    let mut hdr = [0u8; 112];
    let high = 0xffff_0000;
    let env = [
        word(0) | high,
        word(2) | high,
        full_tag(fx) | high,
        dword(8),
        u32::from(p.cpu.sel[seg::CS]),
        dword(16),
        u32::from(p.cpu.sel[seg::DS]) | high,
    ];
    for (i, v) in env.iter().enumerate() {
        hdr[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
    }
    for r in 0..8 {
        hdr[28 + 10 * r..38 + 10 * r].copy_from_slice(&fx[32 + 16 * r..42 + 16 * r]);
    }
    hdr[108..110].copy_from_slice(&fx[2..4]); // status; magic 0 (at 110)
    // What a 32-bit task's image holds: no XMM8-15 (the host's 64-bit `fxsave` stored
    // morph's own there), and no XMM registers at all on a model without SSE (the host's
    // again): zeros, so that no host state reaches the guest.
    let mut img = fx.to_vec();
    img[288..].fill(0);
    if !p.cpu.model.has_sse() {
        img[160..288].fill(0);
    }
    p.aspace.write_bytes(at, &hdr)?;
    p.aspace.write_bytes(at + 112, &img)
}

/// The x87 tag word (two bits per physical register: valid 0, zero 1, special 2, empty
/// 3) of an FXSAVE image, whose abridged tag has one bit per register (1: not empty):
/// a register not empty is classified by its contents, which the image keeps in stack
/// order from TOP (as Linux's `twd_fxsr_to_i387`).
fn full_tag(fx: &[u8; 512]) -> u32 {
    let top = usize::from(fx[3] >> 3) & 7;
    let abridged = fx[4];
    let mut tag = 0;
    for phys in 0..8 {
        let t = if abridged & (1 << phys) == 0 {
            3
        } else {
            let st = 32 + 16 * ((phys + 8 - top) & 7);
            let word = |i: usize| u32::from_le_bytes([fx[i], fx[i + 1], fx[i + 2], fx[i + 3]]);
            let (lo, hi) = (word(st), word(st + 4));
            let exp = u16::from_le_bytes([fx[st + 8], fx[st + 9]]) & 0x7fff;
            match exp {
                0x7fff => 2,
                0 if lo | hi == 0 => 1,
                0 => 2,
                _ if hi >> 31 == 0 => 2,
                _ => 0,
            }
        };
        tag |= t << (2 * phys);
    }
    tag
}

fn build_frame(
    p: &mut Process,
    sig: i32,
    act: &crate::process::SigAction,
    info: &SigInfo,
    oldmask: u64,
) -> Result<(), MemFault> {
    let mut sp = p.cpu.gpr[reg::ESP];
    let (ss_sp, ss_size, ss_flags) = p.altstack;
    let on_alt = ss_flags & SS_DISABLE == 0 && sp.wrapping_sub(ss_sp) < ss_size;
    if act.flags & SA_ONSTACK != 0 && ss_flags & SS_DISABLE == 0 && !on_alt {
        sp = ss_sp.wrapping_add(ss_size);
    }
    let fpstate = (sp.wrapping_sub(FPSTATE_SIZE)) & !63;
    put_fpstate(p, fpstate)?;
    let rt = act.flags & SA_SIGINFO != 0;
    let size = if rt { RT_FRAME_SIZE } else { FRAME_SIZE };
    // As Linux: ((sp - size) + 4) is 16-byte aligned, as after a call.
    let frame = ((fpstate.wrapping_sub(size).wrapping_add(4)) & !15).wrapping_sub(4);
    let restorer = if act.flags & SA_RESTORER != 0 { act.restorer } else { 0 };
    if rt {
        let info_at = frame + 16;
        let uc = frame + 16 + SIGINFO_SIZE;
        let retcode = uc + UCONTEXT_SIZE;
        let pretcode = if restorer != 0 { restorer } else { retcode };
        for (off, v) in [(0, pretcode), (4, sig as u32), (8, info_at), (12, uc)] {
            p.aspace.write_u32(frame + off, v)?;
        }
        put_siginfo(p, info_at, sig, info)?;
        // ucontext: uc_flags, uc_link, uc_stack {ss_sp, ss_flags, ss_size}.
        let stack_flags = if ss_flags & SS_DISABLE != 0 {
            SS_DISABLE
        } else if on_alt {
            SS_ONSTACK
        } else {
            0
        };
        for (off, v) in [(0, 0), (4, 0), (8, ss_sp), (12, stack_flags), (16, ss_size)] {
            p.aspace.write_u32(uc + off, v)?;
        }
        put_sigcontext(p, uc + 20, fpstate, oldmask as u32, info.fault)?;
        p.aspace.write_u64(uc + 20 + SIGCONTEXT_SIZE, oldmask)?;
        // mov $173, %eax; int $0x80 (only used without SA_RESTORER).
        p.aspace.write_bytes(retcode, &[0xb8, 173, 0, 0, 0, 0xcd, 0x80, 0])?;
        p.cpu.gpr[reg::EDX] = info_at;
        p.cpu.gpr[reg::ECX] = uc;
    } else {
        let retcode = frame + FRAME_SIZE - 8;
        let pretcode = if restorer != 0 { restorer } else { retcode };
        p.aspace.write_u32(frame, pretcode)?;
        p.aspace.write_u32(frame + 4, sig as u32)?;
        put_sigcontext(p, frame + 8, fpstate, oldmask as u32, info.fault)?;
        p.aspace.write_u32(frame + FRAME_SIZE - 12, (oldmask >> 32) as u32)?;
        // pop %eax; mov $119, %eax; int $0x80.
        p.aspace.write_bytes(retcode, &[0x58, 0xb8, 119, 0, 0, 0, 0xcd, 0x80])?;
    }
    p.cpu.gpr[reg::ESP] = frame;
    p.cpu.gpr[reg::EAX] = sig as u32;
    p.cpu.eip = act.handler;
    p.cpu.eflags &= !(flags::DF | flags::TF);
    // The handler runs with the flat data segments in DS, ES and SS (FS and GS kept).
    for s in [seg::DS, seg::ES, seg::SS] {
        (p.cpu.sel[s], p.cpu.seg_base[s]) = (p.cpu.segs.ds, 0);
    }
    // The handler starts with a fresh x87 state (as after `fninit`); the interrupted
    // one is in the frame's `_fpstate`, which sigreturn restores.
    *p.cpu.fpu = morph_cpu::FpuState::new();
    Ok(())
}

/// Loads a segment register from a selector as the `sigreturn` path does: with RPL 3
/// (a null selector kept as it is), and the null selector where the load fails (the
/// kernel's fixup for a faulting segment load).
fn load_segment(p: &mut Process, s: usize, sel: u16) {
    let sel = if sel <= 3 { sel } else { sel | 3 };
    if !p.cpu.load_segment(s, sel) {
        (p.cpu.sel[s], p.cpu.seg_base[s]) = (0, 0);
    }
}

/// Restores registers (and the FPU, if saved) from the `sigcontext` at `sc`.
fn restore_sigcontext(p: &mut Process, sc: u32) -> Result<(), MemFault> {
    let mut b = [0u8; SIGCONTEXT_SIZE as usize];
    p.aspace.read_bytes(sc, &mut b)?;
    let w = |i: usize| u32::from_le_bytes([b[i * 4], b[i * 4 + 1], b[i * 4 + 2], b[i * 4 + 3]]);
    load_segment(p, seg::GS, w(0) as u16);
    load_segment(p, seg::FS, w(1) as u16);
    load_segment(p, seg::DS, w(3) as u16);
    load_segment(p, seg::ES, w(2) as u16);
    let g = &mut p.cpu.gpr;
    g[reg::EDI] = w(4);
    g[reg::ESI] = w(5);
    g[reg::EBP] = w(6);
    g[reg::ESP] = w(7);
    g[reg::EBX] = w(8);
    g[reg::EDX] = w(9);
    g[reg::ECX] = w(10);
    g[reg::EAX] = w(11);
    p.cpu.eip = w(14);
    let writable = flags::USER_WRITABLE & !flags::NT;
    p.cpu.eflags = (p.cpu.eflags & !writable) | (w(16) & writable);
    let fpstate = w(19);
    if fpstate != 0 {
        let mut img = [0u8; 512];
        p.aspace.read_bytes(fpstate + 112, &mut img)?;
        // Reserved MXCSR bits would fault FXRSTOR: Linux clears them (mxcsr_feature_mask).
        let mxcsr = u32::from_le_bytes([img[24], img[25], img[26], img[27]]) & morph_cpu::x87::mxcsr_feature_mask();
        img[24..28].copy_from_slice(&mxcsr.to_le_bytes());
        // The legacy header is folded in over the image, as Linux's `convert_to_fxsr`
        // does for a 32-bit task (a handler may have changed either): control, status
        // and tag words (the tag abridged: a register is empty or not), the opcode from
        // the high half of the CS word, FIP and FDP (their selectors ignored: a 64-bit
        // kernel keeps none), the eight registers.
        let mut hdr = [0u8; 108];
        p.aspace.read_bytes(fpstate, &mut hdr)?;
        let h = |i: usize| u32::from_le_bytes([hdr[4 * i], hdr[4 * i + 1], hdr[4 * i + 2], hdr[4 * i + 3]]);
        img[0..2].copy_from_slice(&hdr[0..2]);
        img[2..4].copy_from_slice(&hdr[4..6]);
        let twd = h(2);
        img[4] = (0..8).filter(|r| (twd >> (2 * r)) & 3 != 3).fold(0u8, |t, r| t | 1 << r);
        img[6..8].copy_from_slice(&((h(4) >> 16) as u16).to_le_bytes());
        img[8..16].copy_from_slice(&u64::from(h(3)).to_le_bytes());
        img[16..24].copy_from_slice(&u64::from(h(5)).to_le_bytes());
        for r in 0..8 {
            img[32 + 16 * r..42 + 16 * r].copy_from_slice(&hdr[28 + 10 * r..38 + 10 * r]);
        }
        p.cpu.fpu.0 = img;
    }
    Ok(())
}

fn sys_sigreturn(_: &mut TaskCtx<'_>, p: &mut Process, _: &[u32; 6]) -> SysResult {
    // The restorer popped pretcode (by `ret`) and sig (by `pop %eax`).
    let frame = p.cpu.gpr[reg::ESP].wrapping_sub(8);
    let sc = frame + 8;
    // sigcontext's `oldmask`, its 21st word (`cr2` follows).
    let low = p.aspace.read_u32(sc + 80).map_err(efault);
    let high = p.aspace.read_u32(frame + FRAME_SIZE - 12).map_err(efault);
    match (low, high, restore_sigcontext(p, sc)) {
        (Ok(low), Ok(high), Ok(())) => {
            p.sigmask = (u64::from(high) << 32 | u64::from(low)) & !UNBLOCKABLE;
            Err(EJUSTRETURN)
        }
        _ => bad_frame(p),
    }
}

fn sys_rt_sigreturn(_: &mut TaskCtx<'_>, p: &mut Process, _: &[u32; 6]) -> SysResult {
    // The handler's `ret` popped pretcode.
    let frame = p.cpu.gpr[reg::ESP].wrapping_sub(4);
    let uc = frame + 16 + SIGINFO_SIZE;
    let mask = p.aspace.read_u64(uc + 20 + SIGCONTEXT_SIZE);
    match (mask, restore_sigcontext(p, uc + 20)) {
        (Ok(mask), Ok(())) => {
            p.sigmask = mask & !UNBLOCKABLE;
            Err(EJUSTRETURN)
        }
        _ => bad_frame(p),
    }
}

fn bad_frame(p: &mut Process) -> SysResult {
    eprintln!("morph: pid {} killed by SIGSEGV: bad signal frame at esp {:#010x}", p.pid, p.cpu.gpr[reg::ESP]);
    p.exit = Some(ExitStatus::Signal(SIGSEGV));
    Err(EJUSTRETURN)
}

/// Makes `act` the action of `sig` (Linux's `do_sigaction`, after the caller read it).
fn set_action(p: &mut Process, sig: i32, mut act: crate::process::SigAction) {
    // SIGKILL and SIGSTOP are never blocked: left out of the mask kept.
    act.mask &= !UNBLOCKABLE;
    p.sigactions[(sig - 1) as usize] = act;
    // Setting SIG_IGN (or SIG_DFL for a signal ignored by default) discards a
    // pending instance.
    if act.handler == SIG_IGN || (act.handler == SIG_DFL && default_action(sig) == DefaultAction::Ignore) {
        p.pending &= !sigbit(sig);
    }
}

/// Whether `sig` may be given an action (`set`) or have it read: 1 to 64, and not
/// `SIGKILL` or `SIGSTOP` for a new one.
fn action_allowed(sig: i32, set: bool) -> Result<(), Errno> {
    if !(1..=64).contains(&sig) || (set && (sig == SIGKILL || sig == SIGSTOP)) { Err(EINVAL) } else { Ok(()) }
}

fn sys_rt_sigaction(_: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let sig = a[0] as i32;
    if a[3] != 8 {
        return Err(EINVAL);
    }
    action_allowed(sig, a[1] != 0)?;
    let old = p.sigactions[(sig - 1) as usize];
    if a[1] != 0 {
        let mut b = [0u8; 20];
        p.aspace.read_bytes(a[1], &mut b).map_err(efault)?;
        let w = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let act = crate::process::SigAction {
            handler: w(0),
            flags: w(4),
            restorer: w(8),
            mask: u64::from(w(12)) | (u64::from(w(16)) << 32),
        };
        set_action(p, sig, act);
    }
    if a[2] != 0 {
        let mut b = Vec::with_capacity(20);
        for v in [old.handler, old.flags, old.restorer, old.mask as u32, (old.mask >> 32) as u32] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        p.aspace.write_bytes(a[2], &b).map_err(efault)?;
    }
    Ok(0)
}

// ----- the old calls of the first i386 ABI -------------------------------------------------
//
// Before the `rt_` calls (Linux 2.2) a signal set was one word: signals 1 to 32. A
// 64-bit kernel still serves these calls to 32-bit processes (`compat_sys_sigaction`
// and the rest), so a program built against an old C library runs as it did; glibc
// uses none of them.

/// `signal(sig, handler)`: `handler` with `SA_RESETHAND | SA_NODEFER` and an empty mask
/// (System V's semantics); the old handler is returned.
fn sys_signal(_: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    const SA_NODEFER: u32 = 0x4000_0000;
    const SA_RESETHAND: u32 = 0x8000_0000;
    let sig = a[0] as i32;
    action_allowed(sig, true)?;
    let old = p.sigactions[(sig - 1) as usize];
    let act = crate::process::SigAction { handler: a[1], flags: SA_RESETHAND | SA_NODEFER, restorer: 0, mask: 0 };
    set_action(p, sig, act);
    Ok(old.handler)
}

/// `sigaction(sig, act, oact)` with `struct old_sigaction { handler, mask, flags,
/// restorer }` and a one-word mask (signals 33 to 64 left out of the new mask).
fn sys_sigaction(_: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let sig = a[0] as i32;
    action_allowed(sig, a[1] != 0)?;
    let old = p.sigactions[(sig - 1) as usize];
    if a[1] != 0 {
        let mut b = [0u8; 16];
        p.aspace.read_bytes(a[1], &mut b).map_err(efault)?;
        let act = crate::process::SigAction {
            handler: le_u32(&b, 0),
            mask: u64::from(le_u32(&b, 4)),
            flags: le_u32(&b, 8),
            restorer: le_u32(&b, 12),
        };
        set_action(p, sig, act);
    }
    if a[2] != 0 {
        let mut b = [0u8; 16];
        for (i, v) in [old.handler, old.mask as u32, old.flags, old.restorer].into_iter().enumerate() {
            b[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
        }
        p.aspace.write_bytes(a[2], &b).map_err(efault)?;
    }
    Ok(0)
}

/// `sigprocmask(how, set, oset)` on the first word of the mask: `SIG_SETMASK` replaces
/// signals 1 to 32 and keeps the others blocked as they were.
fn sys_sigprocmask(_: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let old = p.sigmask;
    if a[1] != 0 {
        let set = u64::from(p.aspace.read_u32(a[1]).map_err(efault)?) & !UNBLOCKABLE;
        p.sigmask = match a[0] {
            0 => old | set,
            1 => old & !set,
            2 => (old & !0xffff_ffff) | set,
            _ => return Err(EINVAL),
        };
    }
    if a[2] != 0 {
        p.aspace.write_u32(a[2], old as u32).map_err(efault)?;
    }
    Ok(0)
}

/// `sigpending(set)`: the first word of the pending and blocked signals.
fn sys_sigpending(_: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    p.aspace.write_u32(a[0], (p.pending & p.sigmask) as u32).map_err(efault)?;
    Ok(0)
}

/// `ssetmask(mask)`: the whole mask becomes `mask` (signals 33 to 64 unblocked); the old
/// first word is returned.
fn sys_ssetmask(_: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let old = p.sigmask as u32;
    p.sigmask = u64::from(a[0]) & !UNBLOCKABLE;
    Ok(old)
}

fn sys_rt_sigprocmask(_: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    if a[3] != 8 {
        return Err(EINVAL);
    }
    let old = p.sigmask;
    if a[1] != 0 {
        let set = p.aspace.read_u64(a[1]).map_err(efault)?;
        p.sigmask = match a[0] {
            0 => old | set,
            1 => old & !set,
            2 => set,
            _ => return Err(EINVAL),
        } & !UNBLOCKABLE;
    }
    if a[2] != 0 {
        p.aspace.write_u64(a[2], old).map_err(efault)?;
    }
    Ok(0)
}

fn sys_rt_sigpending(_: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    if a[1] > 8 {
        return Err(EINVAL);
    }
    let set = p.pending & p.sigmask;
    let b = set.to_le_bytes();
    p.aspace.write_bytes(a[0], &b[..a[1] as usize]).map_err(efault)?;
    Ok(0)
}

/// Waits for a handled signal; always ends with `EINTR` (set by delivery).
fn wait_for_signal(p: &mut Process) -> SysResult {
    p.blocked = Some(Blocked { wait: Wait::Signal, deadline: None, restartable: false, partial: None });
    Err(ERESTARTSYS)
}

fn sys_pause(_: &mut TaskCtx<'_>, p: &mut Process, _: &[u32; 6]) -> SysResult {
    wait_for_signal(p)
}

fn sys_rt_sigsuspend(_: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    if a[1] != 8 {
        return Err(EINVAL);
    }
    let mask = p.aspace.read_u64(a[0]).map_err(efault)?;
    suspend(p, mask)
}

/// Waits for a handled signal with `mask` blocked meanwhile (`rt_sigsuspend`; the old
/// `sigsuspend(0, 0, mask)` gives one word).
fn suspend(p: &mut Process, mask: u64) -> SysResult {
    if p.saved_mask.is_none() {
        p.saved_mask = Some(p.sigmask);
    }
    p.sigmask = mask & !UNBLOCKABLE;
    wait_for_signal(p)
}

fn sys_rt_sigtimedwait(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    sigtimedwait(m, p, a, false)
}

fn sys_rt_sigtimedwait_time64(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    sigtimedwait(m, p, a, true)
}

/// `rt_sigtimedwait(set, info, timeout, sigsetsize)`: takes a pending signal of `set`
/// (which the caller normally blocks), else waits for one; `EAGAIN` at the timeout.
fn sigtimedwait(_: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6], wide: bool) -> SysResult {
    if a[3] != 8 {
        return Err(EINVAL);
    }
    let set = p.aspace.read_u64(a[0]).map_err(efault)? & !UNBLOCKABLE;
    if let Some((sig, info)) = p.take_signal(set) {
        if a[1] != 0 {
            put_siginfo(p, a[1], sig, &info).map_err(efault)?;
        }
        return Ok(sig as u32);
    }
    if p.resumed == Some(true) {
        return Err(EAGAIN);
    }
    let deadline = if a[2] == 0 {
        None
    } else {
        let t = wait::read_timespec(p, a[2], wide)?;
        if t.is_zero() {
            return Err(EAGAIN);
        }
        Some(Instant::now() + t)
    };
    p.blocked = Some(Blocked { wait: Wait::SigWait(set), deadline, restartable: false, partial: None });
    Err(ERESTARTSYS)
}

fn sys_sigaltstack(_: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let (sp, size, fl) = p.altstack;
    let on = fl & SS_DISABLE == 0 && p.cpu.gpr[reg::ESP].wrapping_sub(sp) < size;
    if a[0] != 0 {
        if on {
            return Err(EPERM);
        }
        let nsp = p.aspace.read_u32(a[0]).map_err(efault)?;
        let nfl = p.aspace.read_u32(a[0] + 4).map_err(efault)?;
        let nsize = p.aspace.read_u32(a[0] + 8).map_err(efault)?;
        p.altstack = match nfl {
            SS_DISABLE => (0, 0, SS_DISABLE),
            0 | SS_ONSTACK => {
                if nsize < 2048 {
                    return Err(ENOMEM);
                }
                (nsp, nsize, 0)
            }
            _ => return Err(EINVAL),
        };
    }
    if a[1] != 0 {
        let f = if fl & SS_DISABLE != 0 {
            SS_DISABLE
        } else if on {
            SS_ONSTACK
        } else {
            0
        };
        for (off, v) in [(0, sp), (4, f), (8, size)] {
            p.aspace.write_u32(a[1] + off, v).map_err(efault)?;
        }
    }
    Ok(0)
}

fn sys_kill(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let sig = a[1] as i32;
    if !(0..=64).contains(&sig) {
        return Err(EINVAL);
    }
    if m.tasks.kill(p, a[0] as i32, sig)? == 0 { Err(ESRCH) } else { Ok(0) }
}

fn sys_tkill(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    if a[0] as i32 <= 0 {
        return Err(EINVAL);
    }
    thread_kill(m, p, None, a[0], a[1] as i32)
}

fn sys_tgkill(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    if a[0] as i32 <= 0 || a[1] as i32 <= 0 {
        return Err(EINVAL);
    }
    thread_kill(m, p, Some(a[0]), a[1], a[2] as i32)
}

/// Sends `sig` to thread `tid` (of group `tgid`, if given).
fn thread_kill(m: &mut TaskCtx<'_>, p: &mut Process, tgid: Option<u32>, tid: u32, sig: i32) -> SysResult {
    if !(0..=64).contains(&sig) {
        return Err(EINVAL);
    }
    let pid = *m.tasks.tids.get(&tid).ok_or(ESRCH)?;
    if tgid.is_some_and(|g| g != pid) {
        return Err(ESRCH);
    }
    let info = SigInfo { code: SI_TKILL, pid_or_addr: p.pid, uid: p.attrs.creds.uid, ..SigInfo::default() };
    let (sender, sid) = (p.attrs, p.sid);
    let q = if pid == p.pid { &mut *p } else { m.tasks.procs.get_mut(&pid).ok_or(ESRCH)? };
    let target = q.thread_attrs(tid).ok_or(ESRCH)?.creds;
    if !sender.caps.may_signal(&sender.creds, sid, &target, q.sid, sig) {
        return Err(EPERM);
    }
    if sig != 0 && !q.raise_thread(tid, sig, info) {
        return Err(ESRCH);
    }
    if pid != p.pid {
        m.tasks.notify_continued(p, pid);
    }
    Ok(0)
}

/// The `siginfo_t` a `rt_sigqueueinfo` caller gave at `at` (all 128 bytes must be
/// readable, as Linux copies them whole): its code, and the three words after it —
/// pid, uid and `si_value` for `sigqueue`'s `SI_QUEUE` — delivered as given (`si_signo`
/// becomes the signal sent). The rest of a caller's structure is not kept: no signal
/// layout Linux copies to a 32-bit process has fields past the sixth word for the
/// codes a caller may use.
pub(super) fn queued_info(p: &Process, at: u32) -> Result<SigInfo, Errno> {
    let mut b = [0u8; SIGINFO_SIZE as usize];
    p.aspace.read_bytes(at, &mut b).map_err(efault)?;
    let word = |off: usize| u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]]);
    Ok(SigInfo { code: word(8) as i32, pid_or_addr: word(12), uid: word(16), status: word(20) as i32, fault: false })
}

/// Whether a caller may send a signal with `info` to `target` (a pid or thread id) that
/// is not its own: not with a code the kernel or `kill`/`tkill` would give (Linux:
/// "not even root can pretend to send signals from the kernel").
fn may_queue(info: &SigInfo, caller: Pid, target: i32) -> Result<(), Errno> {
    if (info.code >= 0 || info.code == SI_TKILL) && caller as i32 != target { Err(EPERM) } else { Ok(()) }
}

/// `rt_sigqueueinfo(tgid, sig, info)`: `sig` with the caller's `siginfo_t` to the
/// thread group `tgid` (a thread id names its group, as for `kill`); `sig` 0 checks
/// that it exists. Errors in Linux's order: the copy (`EFAULT`), the code (`EPERM`),
/// the target (`ESRCH`), the signal (`EINVAL`).
fn sys_rt_sigqueueinfo(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let (target, sig) = (a[0] as i32, a[1] as i32);
    let info = queued_info(p, a[2])?;
    may_queue(&info, p.pid, target)?;
    if target <= 0 {
        return Err(ESRCH);
    }
    let target = target as Pid;
    // A zombie exists until it is reaped, and takes no signal.
    let pid = match m.tasks.tids.get(&target) {
        Some(&pid) => Some(pid),
        None if target == p.pid => Some(p.pid),
        None if m.tasks.zombies.contains_key(&target) => None,
        None => return Err(ESRCH),
    };
    if !(0..=64).contains(&sig) {
        return Err(EINVAL);
    }
    match pid {
        Some(_) if sig == 0 => {}
        Some(pid) if pid == p.pid => p.raise_group(sig, info),
        Some(pid) => m.tasks.procs.get_mut(&pid).ok_or(ESRCH)?.raise_group(sig, info),
        None => {}
    }
    Ok(0)
}

/// `rt_tgsigqueueinfo(tgid, tid, sig, info)`: as `rt_sigqueueinfo`, to thread `tid` of
/// group `tgid` only (both must be positive: `EINVAL`).
fn sys_rt_tgsigqueueinfo(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let (tgid, tid, sig) = (a[0] as i32, a[1] as i32, a[2] as i32);
    let info = queued_info(p, a[3])?;
    if tgid <= 0 || tid <= 0 {
        return Err(EINVAL);
    }
    may_queue(&info, p.tid, tid)?;
    let pid = if tid as Pid == p.tid { p.pid } else { *m.tasks.tids.get(&(tid as Pid)).ok_or(ESRCH)? };
    if pid != tgid as Pid {
        return Err(ESRCH);
    }
    if !(0..=64).contains(&sig) {
        return Err(EINVAL);
    }
    let q = if pid == p.pid { &mut *p } else { m.tasks.procs.get_mut(&pid).ok_or(ESRCH)? };
    if sig != 0 && !q.raise_thread(tid as Pid, sig, info) {
        return Err(ESRCH);
    }
    Ok(0)
}

fn sys_alarm(_: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let now = std::time::Instant::now();
    let left = p.alarm.map_or(0, |t| {
        let d = t.saturating_duration_since(now);
        (d.as_secs() + u64::from(d.subsec_nanos() >= 500_000_000)).max(1) as u32
    });
    p.alarm = (a[0] != 0).then(|| now + std::time::Duration::from_secs(u64::from(a[0])));
    p.alarm_interval = Duration::ZERO;
    Ok(left)
}

// ----- setitimer and getitimer ------------------------------------------------------------

const ITIMER_REAL: u32 = 0;
const ITIMER_VIRTUAL: u32 = 1;
const ITIMER_PROF: u32 = 2;

/// The `ITIMER_REAL` timer (`alarm`'s) as `struct itimerval`: the period, then what is
/// left (a timer due but not yet fired has 1 µs left, as Linux reports an expired one
/// not yet delivered).
fn itimer_real(p: &Process) -> [u8; 16] {
    let left = p.alarm.map(|t| t.saturating_duration_since(Instant::now()).max(Duration::from_micros(1)));
    let tv = |d: Duration| {
        let usec = d.as_nanos().div_ceil(1000).min(i32::MAX as u128 * 1_000_000);
        [(usec / 1_000_000) as u32, (usec % 1_000_000) as u32]
    };
    let [is, iu] = tv(p.alarm_interval);
    let [vs, vu] = tv(left.unwrap_or_default());
    let mut b = [0u8; 16];
    for (i, w) in [is, iu, vs, vu].into_iter().enumerate() {
        b[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
    }
    b
}

/// A CPU-time timer (`ITIMER_VIRTUAL`, `ITIMER_PROF`) as `struct itimerval`: its period
/// and what is left, in guest CPU time (`INSNS_PER_TICK` instructions per 10 ms).
fn itimer_cpu(p: &Process, i: usize) -> [u8; 16] {
    let t = p.cpu_timers[i];
    let left = t.due.map_or(0, |d| d.saturating_sub(p.group_icount()).max(1));
    let tv = |insns: u64| {
        let usec = u128::from(insns) * 10_000 / u128::from(INSNS_PER_TICK);
        let usec = usec.min(i32::MAX as u128 * 1_000_000);
        [(usec / 1_000_000) as u32, (usec % 1_000_000) as u32]
    };
    let mut b = [0u8; 16];
    for (k, w) in tv(t.interval).into_iter().chain(tv(left)).enumerate() {
        b[4 * k..4 * k + 4].copy_from_slice(&w.to_le_bytes());
    }
    b
}

/// Which timer: `ITIMER_REAL` on host time, or the index of a CPU-time one, which run
/// on the group's guest instructions (its CPU time, as `times` counts it).
fn itimer_which(which: u32) -> Result<Option<usize>, Errno> {
    match which {
        ITIMER_REAL => Ok(None),
        ITIMER_VIRTUAL => Ok(Some(0)),
        ITIMER_PROF => Ok(Some(1)),
        _ => Err(EINVAL),
    }
}

fn sys_setitimer(_: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let cpu = itimer_which(a[0])?;
    // A null new value disarms the timer (Linux reads it as zeros).
    let mut b = [0u8; 16];
    if a[1] != 0 {
        p.aspace.read_bytes(a[1], &mut b).map_err(efault)?;
    }
    let w = |i: usize| le_u32(&b, 4 * i) as i32;
    let tv = |s: i32, us: i32| {
        (s >= 0 && (0..1_000_000).contains(&us))
            .then(|| Duration::from_secs(s as u64) + Duration::from_micros(us as u64))
            .ok_or(EINVAL)
    };
    let (interval, value) = (tv(w(0), w(1))?, tv(w(2), w(3))?);
    if a[2] != 0 {
        let old = cpu.map_or_else(|| itimer_real(p), |i| itimer_cpu(p, i));
        p.aspace.write_bytes(a[2], &old).map_err(efault)?;
    }
    if let Some(i) = cpu {
        // Guest CPU time in instructions, a partial instruction rounded up.
        let insns = |d: Duration| (d.as_micros() * u128::from(INSNS_PER_TICK)).div_ceil(10_000) as u64;
        // Linux adds a tick to the value (`set_cpu_itimer`'s `TICK_NSEC`): morph's
        // kernel ticks at 100 Hz of guest CPU time.
        let due = (!value.is_zero()).then(|| p.group_icount() + insns(value) + INSNS_PER_TICK);
        p.cpu_timers[i] = crate::process::CpuTimer { due, interval: if due.is_some() { insns(interval) } else { 0 } };
        return Ok(0);
    }
    p.alarm = (!value.is_zero()).then(|| Instant::now() + value);
    p.alarm_interval = if value.is_zero() { Duration::ZERO } else { interval };
    Ok(0)
}

fn sys_getitimer(_: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let v = itimer_which(a[0])?.map_or_else(|| itimer_real(p), |i| itimer_cpu(p, i));
    p.aspace.write_bytes(a[1], &v).map_err(efault)?;
    Ok(0)
}

// ----- POSIX interval timers ----------------------------------------------------------

/// The most timers a process may create (Linux bounds them by `RLIMIT_SIGPENDING`).
const MAX_TIMERS: usize = 256;

fn sys_timer_create(_: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let clock = a[0] as i32;
    // CPU-time clocks are not modeled: guest CPU time is not host time.
    if ![libc::CLOCK_REALTIME, libc::CLOCK_MONOTONIC, libc::CLOCK_BOOTTIME].contains(&clock) {
        return Err(EINVAL);
    }
    let id = p.timers.iter().position(Option::is_none).unwrap_or(p.timers.len());
    if id >= MAX_TIMERS {
        return Err(EAGAIN);
    }
    // struct sigevent: sigev_value, sigev_signo, sigev_notify, _tid.
    let (signo, value) = if a[1] == 0 {
        (SIGALRM, id as u32)
    } else {
        let mut b = [0u8; 16];
        p.aspace.read_bytes(a[1], &mut b).map_err(efault)?;
        let w = |i: usize| le_u32(&b, i);
        match w(8) {
            SIGEV_NONE => (0, w(0)),
            SIGEV_SIGNAL => (w(4) as i32, w(0)),
            // One thread per process: the only thread is the process.
            SIGEV_THREAD_ID if p.tids().any(|t| t == w(12)) => (w(4) as i32, w(0)),
            _ => return Err(EINVAL),
        }
    };
    if signo != 0 && !(1..=64).contains(&signo) {
        return Err(EINVAL);
    }
    p.aspace.write_u32(a[2], id as u32).map_err(efault)?;
    let t = IntervalTimer { clock, signo, value, next: None, interval: Duration::ZERO, overrun: 0 };
    if id == p.timers.len() {
        p.timers.push(Some(t));
    } else {
        p.timers[id] = Some(t);
    }
    Ok(0)
}

fn timer_mut(p: &mut Process, id: u32) -> Result<&mut IntervalTimer, Errno> {
    p.timers.get_mut(id as usize).and_then(Option::as_mut).ok_or(EINVAL)
}

/// Writes an `itimerspec` (interval, then value) with 32- or 64-bit fields.
fn put_itimerspec(p: &mut Process, ptr: u32, interval: Duration, value: Duration, wide: bool) -> SysResult {
    let mut b = Vec::with_capacity(32);
    for d in [interval, value] {
        if wide {
            b.extend_from_slice(&d.as_secs().to_le_bytes());
            b.extend_from_slice(&u64::from(d.subsec_nanos()).to_le_bytes());
        } else {
            b.extend_from_slice(&(d.as_secs().min(i32::MAX as u64) as u32).to_le_bytes());
            b.extend_from_slice(&d.subsec_nanos().to_le_bytes());
        }
    }
    p.aspace.write_bytes(ptr, &b).map_err(efault)?;
    Ok(0)
}

fn timer_gettime(p: &mut Process, id: u32, ptr: u32, wide: bool) -> SysResult {
    let t = *timer_mut(p, id)?;
    let left = t.next.map_or(Duration::ZERO, |n| n.saturating_duration_since(Instant::now()));
    // An armed timer never reads as zero, which would mean "disarmed".
    let left = if t.next.is_some() && left.is_zero() { Duration::from_nanos(1) } else { left };
    put_itimerspec(p, ptr, t.interval, left, wide)
}

fn timer_settime(p: &mut Process, a: &[u32; 6], wide: bool) -> SysResult {
    let (id, flags, new, old) = (a[0], a[1], a[2], a[3]);
    let half = if wide { 16 } else { 8 };
    let interval = wait::read_timespec(p, new, wide)?;
    let value = wait::read_timespec(p, new + half, wide)?;
    let clock = timer_mut(p, id)?.clock;
    if old != 0 {
        timer_gettime(p, id, old, wide)?;
    }
    let now = Instant::now();
    let next = if value.is_zero() {
        None
    } else if flags & TIMER_ABSTIME != 0 {
        // The clock id was checked at create.
        let ts = host::clock_gettime(clock).unwrap_or(libc::timespec { tv_sec: 0, tv_nsec: 0 });
        Some(now + value.saturating_sub(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)))
    } else {
        Some(now + value)
    };
    let t = timer_mut(p, id)?;
    t.next = next;
    t.interval = interval;
    t.overrun = 0;
    // A timer already due fires before the process runs again.
    p.fire_timers(now);
    Ok(0)
}

fn sys_timer_settime(_: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    timer_settime(p, a, false)
}

fn sys_timer_settime64(_: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    timer_settime(p, a, true)
}

fn sys_timer_gettime(_: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    timer_gettime(p, a[0], a[1], false)
}

fn sys_timer_gettime64(_: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    timer_gettime(p, a[0], a[1], true)
}

fn sys_timer_getoverrun(_: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    Ok(timer_mut(p, a[0])?.overrun.min(i32::MAX as u32))
}

fn sys_timer_delete(_: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    timer_mut(p, a[0])?;
    p.timers[a[0] as usize] = None;
    Ok(0)
}

// ----- signalfd ------------------------------------------------------------------------
//
// A signalfd is a descriptor morph serves itself (`crate::files::Served`): it holds
// a set of signals, and a `read` (or `readv`) takes pending signals of that set from
// the *reader* (the calling thread's own, then those sent to its process that another
// thread holds blocked, as Linux takes the thread's queue then the shared one) and
// copies out one 128-byte `struct signalfd_siginfo` each, as Linux's
// `signalfd_copyinfo` fills it from the `siginfo`. A signal is taken whatever the
// thread's mask (programs block the set so that no handler takes them first, as on
// Linux). With nothing pending a read fails with `EAGAIN` (`O_NONBLOCK`) or waits
// like `sigtimedwait` (`Wait::SigWait`: a signal sent to the process goes to the
// waiting thread), a restartable wait that a handled signal interrupts (`EINTR`, or a
// re-run under `SA_RESTART`). The descriptor is readable (`poll`, `select`, `epoll`)
// while a signal of its set is pending for the thread that looks.

/// `struct signalfd_siginfo`'s size: a read takes as many signals as whole records
/// fit.
const RECORD: usize = 128;

/// `si_code` of a `SIGIO` queued for a descriptor (`SI_SIGIO`).
const SI_SIGIO: i32 = -5;

/// `signalfd4(ufd, mask, sizemask, flags)` (`signalfd` is flags 0): a new signalfd
/// reading `mask` (`ufd` -1), or a new mask for signalfd `ufd`. Linux's checks in its
/// order: the mask's size (8: `EINVAL`), the mask (`EFAULT`), the flags
/// (`SFD_NONBLOCK`, `SFD_CLOEXEC`: `EINVAL`), then the descriptor (`EBADF`, and
/// `EINVAL` for one that is not a signalfd; its flags stay as they were). `SIGKILL`
/// and `SIGSTOP` are left out of the mask silently.
fn signalfd(p: &mut Process, ufd: u32, mask: u32, size: u32, flags: u32) -> SysResult {
    if size != 8 {
        return Err(EINVAL);
    }
    let mask = p.aspace.read_u64(mask).map_err(efault)? & !UNBLOCKABLE;
    if flags & !(O_CLOEXEC | O_NONBLOCK) != 0 {
        return Err(EINVAL);
    }
    if ufd as i32 == -1 {
        let file = OpenFile::served(ServedKind::Signal(Cell::new(mask)), flags & O_NONBLOCK != 0)?;
        let fd = p.fds.install(FdEntry::of(file, flags & O_CLOEXEC != 0), 0).ok_or(EMFILE)?;
        refresh_signalfds(p);
        return Ok(fd);
    }
    match &p.fds.get(ufd).ok_or(EBADF)?.host.served {
        Some(Served { what: ServedKind::Signal(m), .. }) => m.set(mask),
        _ => return Err(EINVAL),
    }
    refresh_signalfds(p);
    Ok(ufd)
}

/// A `read` or `readv` of guest descriptor `fd` into `bufs` (of which the first
/// `valid` bytes may be written): `None` if `fd` is not a signalfd. Linux's order: a
/// buffer with no room for one record is `EINVAL`; with nothing pending `EAGAIN` (or a
/// wait); a record that cannot be copied out is `EFAULT` (its signal lost, as on
/// Linux) unless records before it were, whose length is returned.
pub(crate) fn signalfd_read(p: &mut Process, fd: u32, bufs: &[InPlace], valid: u32) -> Option<SysResult> {
    let e = p.fds.get(fd)?;
    let Some(Served { what: ServedKind::Signal(mask), .. }) = &e.host.served else { return None };
    let (mask, nonblock) = (mask.get(), e.host.guest_nonblock());
    let total: usize = bufs.iter().map(InPlace::len).sum();
    let count = total / RECORD;
    if count == 0 {
        return Some(Err(EINVAL));
    }
    let mut done = 0;
    while done < count {
        let Some((sig, info)) = dequeue(p, mask) else { break };
        let record = record(sig, &info);
        if write_record(p, bufs, valid, done * RECORD, &record).is_err() {
            refresh_signalfds(p);
            return Some(if done == 0 { Err(EFAULT) } else { Ok((done * RECORD) as u32) });
        }
        done += 1;
    }
    refresh_signalfds(p);
    if done > 0 {
        return Some(Ok((done * RECORD) as u32));
    }
    if nonblock {
        return Some(Err(EAGAIN));
    }
    p.blocked = Some(Blocked { wait: Wait::SigWait(mask), deadline: None, restartable: true, partial: None });
    Some(Err(ERESTARTSYS))
}

/// Copies `record` into the guest buffers `bufs` at byte `at` of their concatenation;
/// nothing past the first `valid` bytes (the rest lies after a fault).
fn write_record(p: &mut Process, bufs: &[InPlace], valid: u32, at: usize, record: &[u8]) -> Result<(), MemFault> {
    if at + record.len() > valid as usize {
        // Linux copies what it can before the fault; the call's result is the same.
        return Err(MemFault { addr: 0, write: true, kind: MemFaultKind::Unmapped });
    }
    let (mut skip, mut rest) = (at, record);
    for b in bufs {
        if rest.is_empty() {
            break;
        }
        if skip >= b.len() {
            skip -= b.len();
            continue;
        }
        let n = (b.len() - skip).min(rest.len());
        let va = b.va(&p.aspace).wrapping_add(skip as u32);
        p.aspace.write_bytes(va, &rest[..n])?;
        rest = &rest[n..];
        skip = 0;
    }
    Ok(())
}

/// The signal of `set` Linux takes first (`next_signal`): a synchronous one (a
/// fault's: `SIGSEGV`, `SIGBUS`, `SIGILL`, `SIGTRAP`, `SIGFPE`, `SIGSYS`), else the
/// lowest.
fn next_signal(set: u64) -> Option<i32> {
    let sync = [SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE, SIGSYS].iter().fold(0, |m, &s| m | sigbit(s));
    let s = if set & sync != 0 { set & sync } else { set };
    (s != 0).then(|| s.trailing_zeros() as i32 + 1)
}

/// Signals of `mask` sent to `p`'s process that a thread other than the running one
/// holds blocked (morph's form of Linux's shared queue, as `Process::take_signal`
/// has it): each thread's, thread-directed ones (`tkill`) left out.
fn shared(t: &crate::process::Thread, mask: u64) -> u64 {
    let mut set = t.pending & mask & t.sigmask;
    let mut s = set;
    while s != 0 {
        let sig = s.trailing_zeros() as i32 + 1;
        s &= s - 1;
        if t.siginfo[(sig - 1) as usize].code == SI_TKILL {
            set &= !sigbit(sig);
        }
    }
    set
}

/// Takes the pending signal of `mask` a read returns next, with its `siginfo`.
fn dequeue(p: &mut Process, mask: u64) -> Option<(i32, SigInfo)> {
    if let Some(sig) = next_signal(p.pending & mask) {
        p.pending &= !sigbit(sig);
        return Some((sig, p.siginfo[(sig - 1) as usize]));
    }
    for t in &mut p.threads {
        if let Some(sig) = next_signal(shared(t, mask)) {
            t.pending &= !sigbit(sig);
            return Some((sig, t.siginfo[(sig - 1) as usize]));
        }
    }
    None
}

/// Whether a read by `p`'s running thread would find a signal of `mask` (Linux's
/// `signalfd_poll`).
pub(super) fn signalfd_ready(p: &Process, mask: u64) -> bool {
    p.pending & mask != 0 || p.threads.iter().any(|t| shared(t, mask) != 0)
}

/// Brings the readiness of `p`'s signalfds up to date for its running thread.
fn refresh_signalfds(p: &Process) {
    if !crate::files::any_served() {
        return;
    }
    for (_, e) in p.fds.iter() {
        if let Some(s @ Served { what: ServedKind::Signal(mask), .. }) = &e.host.served {
            s.set_ready(signalfd_ready(p, mask.get()));
        }
    }
}

/// Which fields of a `siginfo` a signal and code carry (Linux's `siginfo_layout`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    Kill,
    Timer,
    Poll,
    Fault,
    FaultMce,
    Chld,
    Rt,
    Sys,
}

fn layout(sig: i32, code: i32) -> Layout {
    if code > SI_USER && code < SI_KERNEL {
        // The codes each signal has of its own (`sig_specific_sicodes`): up to its
        // `NSIG*`.
        let own = match sig {
            SIGILL => Some((11, Layout::Fault)),
            SIGFPE => Some((15, Layout::Fault)),
            SIGSEGV => Some((10, Layout::Fault)),
            SIGBUS => Some((5, Layout::Fault)),
            SIGTRAP => Some((6, Layout::Fault)),
            SIGCHLD => Some((6, Layout::Chld)),
            SIGIO => Some((6, Layout::Poll)),
            SIGSYS => Some((2, Layout::Sys)),
            _ => None,
        };
        match own {
            // BUS_MCEERR_AR and BUS_MCEERR_AO carry the address's low bit too; the
            // other special fault codes are read as plain faults by signalfd.
            Some((limit, l)) if code <= limit => {
                if sig == SIGBUS && (4..=5).contains(&code) {
                    Layout::FaultMce
                } else {
                    l
                }
            }
            _ if code <= 6 => Layout::Poll,
            _ => Layout::Kill,
        }
    } else if code == SI_TIMER {
        Layout::Timer
    } else if code == SI_SIGIO {
        Layout::Poll
    } else if code < 0 {
        Layout::Rt
    } else {
        Layout::Kill
    }
}

/// The `struct signalfd_siginfo` of `sig` with `info`, as Linux's `signalfd_copyinfo`
/// fills it. morph's `SigInfo` keeps the three words after `si_code` of the 32-bit
/// `siginfo_t` (see `signal.rs`): by layout, the sender's pid, uid and value; a timer's
/// id, overrun and value; a fault's address; `SIGCHLD`'s pid, uid and status; a
/// `SIGIO`'s band and descriptor; a `SIGSYS`'s call address, number and architecture.
/// The CPU times of `SIGCHLD` (`ssi_utime`, `ssi_stime`) and `ssi_errno` are not kept:
/// zeros. A 64-bit field holding a 32-bit value (`ssi_ptr`, `ssi_addr`) has it
/// zero-extended, as the 64-bit kernel reads a 32-bit process's.
fn record(sig: i32, info: &SigInfo) -> [u8; RECORD] {
    let mut b = [0u8; RECORD];
    let mut put = |off: usize, v: u32| b[off..off + 4].copy_from_slice(&v.to_le_bytes());
    put(0, sig as u32);
    put(8, info.code as u32);
    let (word1, word2, word3) = (info.pid_or_addr, info.uid, info.status as u32);
    // ssi_pid 12, ssi_uid 16, ssi_fd 20, ssi_tid 24, ssi_band 28, ssi_overrun 32,
    // ssi_status 40, ssi_int 44, ssi_ptr 48 (u64), ssi_addr 72 (u64), ssi_addr_lsb 80
    // (u16), ssi_syscall 84, ssi_call_addr 88 (u64), ssi_arch 96.
    match layout(sig, info.code) {
        Layout::Kill => {
            put(12, word1);
            put(16, word2);
        }
        Layout::Timer => {
            put(24, word1);
            put(32, word2);
            put(44, word3);
            put(48, word3);
        }
        Layout::Poll => {
            put(28, word1);
            put(20, word2);
        }
        Layout::Fault => put(72, word1),
        Layout::FaultMce => {
            put(72, word1);
            b[80..82].copy_from_slice(&(word2 as u16).to_le_bytes());
        }
        Layout::Chld => {
            put(12, word1);
            put(16, word2);
            put(40, word3);
        }
        Layout::Rt => {
            put(12, word1);
            put(16, word2);
            put(44, word3);
            put(48, word3);
        }
        Layout::Sys => {
            put(88, word1);
            put(84, word2);
            put(96, word3);
        }
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_are_linuxs() {
        assert_eq!(layout(SIGUSR1, SI_USER), Layout::Kill);
        assert_eq!(layout(SIGUSR1, SI_KERNEL), Layout::Kill);
        assert_eq!(layout(SIGUSR1, SI_TKILL), Layout::Rt);
        assert_eq!(layout(SIGUSR1, -1), Layout::Rt);
        assert_eq!(layout(SIGALRM, SI_TIMER), Layout::Timer);
        assert_eq!(layout(SIGIO, SI_SIGIO), Layout::Poll);
        assert_eq!(layout(SIGUSR1, 3), Layout::Poll);
        assert_eq!(layout(SIGUSR1, 7), Layout::Kill);
        assert_eq!(layout(SIGSEGV, 1), Layout::Fault);
        assert_eq!(layout(SIGSEGV, 11), Layout::Kill);
        assert_eq!(layout(SIGBUS, 4), Layout::FaultMce);
        assert_eq!(layout(SIGCHLD, 1), Layout::Chld);
        assert_eq!(layout(SIGSYS, 1), Layout::Sys);
        assert_eq!(layout(SIGSYS, 3), Layout::Poll);
    }

    #[test]
    fn synchronous_signals_come_first() {
        assert_eq!(next_signal(sigbit(SIGUSR1) | sigbit(SIGSEGV)), Some(SIGSEGV));
        assert_eq!(next_signal(sigbit(SIGUSR2) | sigbit(SIGINT)), Some(SIGINT));
        assert_eq!(next_signal(0), None);
    }

    #[test]
    fn a_queued_value_lands_in_int_and_ptr() {
        let info = SigInfo { code: -1, pid_or_addr: 7, uid: 1000, status: -7, fault: false };
        let r = record(SIGUSR1, &info);
        let w = |o: usize| u32::from_le_bytes(r[o..o + 4].try_into().expect("4 bytes"));
        assert_eq!((w(0), w(8) as i32, w(12), w(16), w(44) as i32), (SIGUSR1 as u32, -1, 7, 1000, -7));
        assert_eq!(u64::from_le_bytes(r[48..56].try_into().expect("8 bytes")), 0xffff_fff9);
    }
}
