//! The hand-written host glue that translated code runs between: the entry and exit
//! trampolines, the jump-cache lookup, and the fallback helper call, assembled with
//! dynasm-rs into byte vectors that the engine appends to its code buffer (the state
//! block, the register assignment and the fixed-layout glue are in `runtime`).

use dynasmrt::x64::X64Relocation;
use dynasmrt::{DynasmApi, DynasmLabelApi, VecAssembler, dynasm};

use crate::runtime::{EXIT_INDIRECT, JC_ENTRIES, JC_HOSTS, JC_KEYS, off};

/// The assembler of the hand-written glue below: dynasm-rs turns each `dynasm!`
/// template into byte pushes at compile time, so emitting glue costs next to nothing
/// at run time (see docs/engine.md, "The host glue").
type Glue = VecAssembler<X64Relocation>;

/// Assembles 64-bit glue with dynasm.
fn assemble(f: impl FnOnce(&mut Glue)) -> Vec<u8> {
    let mut a = Glue::new(0);
    f(&mut a);
    a.finalize().expect("glue assembles")
}

// dynasm encodes a displacement it cannot evaluate itself (a Rust constant) with 32 bits,
// so the glue writes the state block's offsets as literals (with 8 bits where they fit,
// as an assembler would): this ties those literals to `off`.
const _: () = assert!(
    off::GPR == 0
        && off::EIP == 32
        && off::EFLAGS == 36
        && off::PAGE_VA == 40
        && off::EXIT == 44
        && off::BUDGET_PTR == 48
        && off::ICOUNT == 56
        && off::HELPER_K == 88
        && off::IBT == 96
        && off::FPU == 104
        && off::FPU_LIVE == 112
        && off::JC_TAG == 120
        && off::HOST_FCW == 128
        && off::HOST_MXCSR == 132
        && off::HOST_RSP == 144
        && off::RAS_SP == 152
        && off::RAS_EMPTY == 160
        && off::RAS_EMPTY_NEG == 168
        && off::RAS_MISSES == 176
        && off::SCRATCH == 192
        && off::FPU_IN_HOST == 113
        && off::FPU_LEFT == 114
);

/// Stores the guest flags (through r13) and registers (see [`crate::runtime::host_gpr`])
/// into `JitState`.
fn store_flags_gprs(a: &mut Glue) {
    dynasm!(a
        ; .arch x64
        ; pushfq
        ; pop r13
        ; mov [r15 + 36], r13d // eflags
        ; mov [r15], eax
        ; mov [r15 + 4], ecx
        ; mov [r15 + 8], edx
        ; mov [r15 + 12], ebx
        ; mov [r15 + 16], r12d
        ; mov [r15 + 20], ebp
        ; mov [r15 + 24], esi
        ; mov [r15 + 28], edi
    );
}

/// Loads the guest registers from `JitState::gpr`.
fn load_gprs(a: &mut Glue) {
    dynasm!(a
        ; .arch x64
        ; mov eax, [r15]
        ; mov ecx, [r15 + 4]
        ; mov edx, [r15 + 8]
        ; mov ebx, [r15 + 12]
        ; mov r12d, [r15 + 16]
        ; mov ebp, [r15 + 20]
        ; mov esi, [r15 + 24]
        ; mov edi, [r15 + 28]
    );
}

/// If the guest FPU state is live in translated code, load it into the host FPU; at an
/// entry from the dispatcher (`entry`), not if the host FPU still holds it, left there
/// by the last exit (`JitState::fpu_in_host`). Clobbers r13 and the flags.
fn fpu_load(a: &mut Glue, entry: bool) {
    dynasm!(a
        ; .arch x64
        ; cmp BYTE [r15 + 112], 0 // fpu_live (0 or 1)
        ; je BYTE >skip
    );
    if entry {
        dynasm!(a
            ; .arch x64
            ; cmp BYTE [r15 + 113], 0 // fpu_in_host
            ; jne BYTE >skip
        );
    }
    dynasm!(a
        ; .arch x64
        ; mov r13, [r15 + 104] // fpu
        ; fxrstor [r13]
        ; skip:
    );
}

/// At an exit to the dispatcher: if the guest FPU state is live, leave it in the host
/// FPU and say so (`JitState::fpu_left`), the dispatcher storing it only when something
/// needs it (`morph_cpu::x87::fpu_from_host`: an x87 instruction interpreted, or the end of the
/// run), so that a program that touched x87 once does not pay an `fxsave`, `fninit`,
/// `fldcw` and `fxrstor` (63 ns on the Intel host of docs/results.md) at every exit and
/// entry. Unless the guest's MXCSR (which its FXSAVE image carries, and a signal
/// handler may rewrite) is not morph's: then it is saved as before ([`fpu_save`]), since
/// morph's own code must not run with it. Clobbers r13 and the flags.
fn fpu_exit(a: &mut Glue) {
    dynasm!(a
        ; .arch x64
        ; cmp BYTE [r15 + 112], 0 // fpu_live (0 or 1)
        ; je BYTE >done
        ; stmxcsr [r15 + 192] // scratch
        ; mov r13d, [r15 + 192]
        ; cmp r13d, [r15 + 132] // host.mxcsr
        ; jne BYTE >save
        ; mov BYTE [r15 + 114], 1 // fpu_left
        ; jmp BYTE >done
        ; save:
    );
    fpu_save(a);
    dynasm!(a
        ; .arch x64
        ; done:
    );
}

/// If the guest FPU state is live, save it from the host FPU and leave morph's own
/// control state behind: `fninit` and morph's control word, and morph's MXCSR, which
/// `fninit` leaves alone and the guest's image (loaded by `fxrstor`) may have changed
/// (a signal frame rewritten by its handler): reloaded only if it differs, since a
/// guest rarely has another. Clobbers r13 and the flags.
fn fpu_save(a: &mut Glue) {
    dynasm!(a
        ; .arch x64
        ; cmp BYTE [r15 + 112], 0 // fpu_live (0 or 1)
        ; je BYTE >skip
        ; mov r13, [r15 + 104] // fpu
        ; fxsave [r13]
        ; fninit
        ; fldcw [r15 + 128] // host.fcw
        ; mov r13d, [r13 + 24] // the guest's MXCSR in the image
        ; cmp r13d, [r15 + 132] // host.mxcsr
        ; je BYTE >skip
        ; ldmxcsr [r15 + 132]
        ; skip:
    );
}

/// Back to the dispatcher: the return stack's pointer kept, the dispatcher's stack
/// taken back, `add rsp, 8`, the callee-saved registers popped, `ret`.
fn leave(a: &mut Glue) {
    dynasm!(a
        ; .arch x64
        ; cld
        ; mov [r15 + 152], rsp // ras_sp
        ; mov rsp, [r15 + 144] // host_rsp
        ; add rsp, 8
        ; pop r15
        ; pop r14
        ; pop r13
        ; pop r12
        ; pop rbp
        ; pop rbx
        ; ret
    );
}

/// `enter(state: *mut JitState, code: *const u8)`: loads guest state and jumps to `code`.
pub fn enter_trampoline() -> Vec<u8> {
    assemble(|a| {
        dynasm!(a
            ; .arch x64
            ; push rbx
            ; push rbp
            ; push r12
            ; push r13
            ; push r14
            ; push r15
            ; sub rsp, 8
            ; mov r15, rdi
        );
        fpu_load(a, true); // clobbers r13
        dynasm!(a
            ; .arch x64
            ; mov r13, rsi
            ; mov r11, [r15 + 56] // icount
            ; mov r10, [r15 + 48] // budget_ptr
            ; mov eax, [r15 + 36] // eflags
            ; push rax
            ; popfq
        );
        load_gprs(a);
        dynasm!(a
            ; .arch x64
            ; mov r14d, [r15 + 40] // page_va
            ; mov [r15 + 144], rsp // host_rsp
            ; mov rsp, [r15 + 152] // ras_sp: translated code runs on the return stack
            ; jmp r13
        );
    })
}

/// Saves guest state and returns to the dispatcher (EIP and exit already stored). With
/// `sse` (a model with SSE), a live guest FPU state is saved at every exit instead of left
/// in the host FPU ([`fpu_exit`]): its XMM registers would not survive morph's own code,
/// which uses them freely.
pub fn exit_common(sse: bool) -> Vec<u8> {
    assemble(|a| {
        store_flags_gprs(a);
        dynasm!(a
            ; .arch x64
            ; mov [r15 + 40], r14d // page_va
            ; mov [r15 + 56], r11 // icount
        );
        if sse {
            fpu_save(a);
        } else {
            fpu_exit(a);
        }
        leave(a);
    })
}

/// Returns to the dispatcher when the state is already saved (after the helper).
pub fn exit_nosave() -> Vec<u8> {
    assemble(leave)
}

/// The helper call assembled once (see [`helper_call`]), and where its operands go:
/// `at` = [k, eip_off, ins, helper].
struct HelperTemplate {
    before: Vec<u8>,
    after: Vec<u8>,
    at: [usize; 4],
}

fn helper_template() -> &'static HelperTemplate {
    // Assembled once, then copied and patched: a block with a helper call is translated
    // thousands of times a second at start-up, and copying is cheaper than assembling
    // even with dynasm. The operands are 32-bit (the displacement is a Rust value, which
    // dynasm encodes with 32 bits) and 64-bit immediates, which any value fits.
    static T: std::sync::OnceLock<HelperTemplate> = std::sync::OnceLock::new();
    T.get_or_init(|| {
        let mut at = [0; 4];
        let eip_off = 0i32;
        let before = assemble(|a| {
            store_flags_gprs(a);
            dynasm!(a
                ; .arch x64
                ; lea r13d, [r14 + eip_off]
            );
            at[1] = a.offset().0 - 4;
            dynasm!(a
                ; .arch x64
                ; mov [r15 + 32], r13d // eip
                ; mov [r15 + 40], r14d // page_va
                ; mov [r15 + 56], r11 // icount
                ; mov [r15 + 48], r10 // budget_ptr
                ; mov DWORD [r15 + 88], 0 // helper_k
            );
            at[0] = a.offset().0 - 4;
            fpu_save(a);
            dynasm!(a
                ; .arch x64
                ; cld
                ; mov rdi, r15
                ; mov rsi, QWORD 0 // the boxed instruction
            );
            at[2] = a.offset().0 - 8;
            dynasm!(a
                ; .arch x64
                ; mov rax, QWORD 0 // the helper
            );
            at[3] = a.offset().0 - 8;
            dynasm!(a
                ; .arch x64
                ; call rax
                ; test eax, eax
            );
        });
        let after = assemble(|a| {
            dynasm!(a
                ; .arch x64
                ; mov r11, [r15 + 56] // icount
                ; mov r10, [r15 + 48] // budget_ptr
            );
            fpu_load(a, false);
            load_gprs(a);
            dynasm!(a
                ; .arch x64
                ; mov r13d, [r15 + 36] // eflags
                ; push r13
                ; popfq
            );
        });
        HelperTemplate { before, after, at }
    })
}

/// Where a helper call (the first part [`helper_call`] returns) holds its two absolute
/// host addresses, the boxed instruction's and the helper function's: the relocations
/// of a translation kept across runs (`tcache`).
pub fn helper_call_relocs() -> (usize, usize) {
    let t = helper_template();
    (t.at[2], t.at[3])
}

/// Spills guest state, calls `helper(state, ins)`, and reloads it. Followed by a
/// `jnz rel32` to `exit_nosave` that the caller emits (the helper returns non-zero to
/// leave). `k` is the number of the block's instructions completed before this one,
/// `eip_off` the instruction's offset from the page start (r14d).
pub fn helper_call(helper: usize, ins: usize, k: u32, eip_off: i32) -> (Vec<u8>, Vec<u8>) {
    let t = helper_template();
    let mut before = t.before.clone();
    let mut put = |at: usize, b: &[u8]| before[at..at + b.len()].copy_from_slice(b);
    put(t.at[0], &k.to_le_bytes());
    put(t.at[1], &eip_off.to_le_bytes());
    put(t.at[2], &(ins as u64).to_le_bytes());
    put(t.at[3], &(helper as u64).to_le_bytes());
    (before, t.after.clone())
}

/// Host code decoded, for the tests and tools that read it back (the goldens, checks of
/// the glue): iced-x86 is built without its VEX tables (`Cargo.toml`: the modeled CPUs
/// have no AVX, and building the tables cost every start of morph a few tenths of a
/// millisecond), so the one VEX instruction morph emits, BMI2's `rorx` (the jump cache's
/// index, [`indirect_lookup`]), is recognized here from its encoding: `c4`, map 0F3A,
/// opcode `f0`, register operands, an 8-bit rotate.
pub fn decode_host(code: &[u8], ip: u64) -> Vec<iced_x86::Instruction> {
    use iced_x86::{Code, Decoder, DecoderOptions, Instruction, OpKind, Register};
    let mut d = Decoder::with_ip(64, code, ip, DecoderOptions::NONE);
    let mut out = Vec::new();
    while d.can_decode() {
        let at = d.position();
        match code.get(at..at + 6) {
            Some(&[0xc4, p1, p2, 0xf0, modrm, imm]) if p1 & 0x1f == 3 && p2 & 0x7f == 0x7b && modrm >> 6 == 3 => {
                // Inverted R and B extend ModRM's reg and rm; W selects 64 bits.
                let reg = usize::from((modrm >> 3) & 7) | usize::from(!p1 >> 7 & 1) << 3;
                let rm = usize::from(modrm & 7) | usize::from(!p1 >> 5 & 1) << 3;
                use Register::*;
                let (code, regs) = if p2 >> 7 == 1 {
                    let r = [RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8, R9, R10, R11, R12, R13, R14, R15];
                    (Code::VEX_Rorx_r64_rm64_imm8, r)
                } else {
                    let r = [EAX, ECX, EDX, EBX, ESP, EBP, ESI, EDI, R8D, R9D, R10D, R11D, R12D, R13D, R14D, R15D];
                    (Code::VEX_Rorx_r32_rm32_imm8, r)
                };
                let mut i = Instruction::default();
                i.set_code(code);
                i.set_op0_kind(OpKind::Register);
                i.set_op0_register(regs[reg]);
                i.set_op1_kind(OpKind::Register);
                i.set_op1_register(regs[rm]);
                i.set_op2_kind(OpKind::Immediate8);
                i.set_immediate8(imm);
                i.set_len(6);
                i.set_ip(ip + at as u64);
                i.set_next_ip(ip + at as u64 + 6);
                out.push(i);
                let _ = d.set_position(at + 6);
                d.set_ip(ip + at as u64 + 6);
            }
            _ => out.push(d.decode()),
        }
    }
    out
}

/// Whether the host CPU has BMI2: two `cpuid`s (leaves 0 and 7) rather than the
/// standard library's detection of every feature at once, a dozen `cpuid`s, each a
/// trap to the hypervisor on a virtual machine, at every start of morph.
pub fn host_has_bmi2() -> bool {
    use std::arch::x86_64::{__cpuid, __cpuid_count};
    // Leaf 7 is asked only if leaf 0 says it exists.
    __cpuid(0).eax >= 7 && __cpuid_count(7, 0).ebx & (1 << 8) != 0
}

/// The indirect-branch path, entered with the target EIP in r13d (and r11 counted):
/// look the target up in the jump cache under the current tag and, on a hit, jump to the
/// target's jump-cache entry (`runtime::jc_entry`), which sets r14d to its page and
/// counts the hit against the budget on its way into the body; otherwise store EIP and
/// an indirect exit and leave through the `jmp rel32` at the end (to `exit_common`).
///
/// The guest flags stay live in EFLAGS across it and nothing here touches them: the
/// index is folded with BMI2 `rorx`, `lea` and `movzx` (and doubled: an entry is 16
/// bytes, addressed with scale 8), the key compared with `lea`
/// (`tag << 32 | target` plus the entry's negated key: zero iff equal; the tag half is
/// summed while the entry loads) and `jrcxz`, and the hit counter incremented with one
/// `lea` (the low bits of r11). The entries are addressed from r15 (`runtime::JitFrame`),
/// with no base to load. Every path here writes r13d with a 32-bit operation first, so
/// its high half is zero and no `mov r13d, r13d` is needed. (`pushfq`/`popfq` around
/// ordinary instructions cost most of the time of call-heavy code; without BMI2 they are
/// kept around the masking only.) The code is emitted inline at every indirect site, so
/// the host predicts each site's final `jmp` on its own.
pub fn indirect_lookup() -> &'static [u8] {
    static CODE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    CODE.get_or_init(|| {
        let bmi2 = host_has_bmi2();
        let mut v = assemble(|a| {
            // The index (see `jc_index`): the target's low bits.
            if bmi2 {
                dynasm!(a
                    ; .arch x64
                    ; rorx r9d, r13d, 16
                    ; lea r9d, [r9 + r13]
                    ; movzx r9d, r9w
                    ; lea r9d, [r9 + r9] // 16-byte entries, addressed in 8-byte units
                );
            } else {
                dynasm!(a
                    ; .arch x64
                    ; pushfq
                    ; mov r9d, r13d
                    ; shr r9d, 16
                    ; add r9d, r13d
                    ; and r9d, (JC_ENTRIES - 1) as i32
                    ; add r9d, r9d // 16-byte entries, addressed in 8-byte units
                    ; popfq
                );
            }
            // r8 keeps the guest's rcx while rcx holds what jrcxz tests; r14 is free
            // (the target's jump-cache entry sets it).
            dynasm!(a
                ; .arch x64
                ; mov r8, rcx
                ; mov rcx, [r15 + 120] // jc_tag
                ; lea rcx, [rcx + r13] // tag << 32 | target (r13's high half is zero)
                ; mov r14, [r15 + r9 * 8 + JC_KEYS] // -(tag << 32 | target) of the entry
                ; lea rcx, [rcx + r14]
                ; jrcxz >hit
                ; mov rcx, r8
                ; jmp BYTE >miss
                ; hit:
                ; mov rcx, r8
                ; lea r11, [r11 + 1] // a hit (see runtime::ICOUNT_SHIFT)
                ; jmp QWORD [r15 + r9 * 8 + JC_HOSTS]
                ; miss:
                ; mov [r15 + 32], r13d // eip
                ; mov DWORD [r15 + 44], EXIT_INDIRECT as i32 // exit
            );
        });
        v.extend_from_slice(&[0xe9, 0, 0, 0, 0]);
        v
    })
}

/// The return-stack half of a guest return ([`crate::ras`]), entered with the popped
/// EIP in r13d (and r11 counted), followed by the jump-cache lookup ([`indirect_lookup`])
/// for a return it does not predict. If the entry on top holds the same EIP (its key is
/// `!EIP`, so that `key + EIP + 1` is zero exactly then) a host `ret 8` pops it into the
/// landing pad after the call; otherwise the miss is counted in the state block, the
/// entry popped (unless the stack is empty) and the code after this continues. Flags
/// untouched.
pub fn ras_return() -> &'static [u8] {
    static CODE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    CODE.get_or_init(|| {
        assemble(|a| {
            dynasm!(a
                ; .arch x64
                ; mov r8, rcx
                ; mov rcx, [rsp + 8] // !EIP of the call
                ; lea rcx, [rcx + r13 + 1] // EIP - EIP of the call
                ; jrcxz >hit
                ; mov r9, [r15 + 176] // ras_misses
                ; lea r9, [r9 + 1]
                ; mov [r15 + 176], r9
                ; mov rcx, [r15 + 168] // -ras_empty
                ; lea rcx, [rcx + rsp]
                ; jrcxz >keep
                ; lea rsp, [rsp + 16]
                ; keep:
                ; mov rcx, r8
                ; jmp >miss
                ; hit:
                ; mov rcx, r8
                ; ret 8
                ; miss:
            );
        })
    })
}

/// The jump-cache lookup of the target EIP in r13d as a shared routine, for exit stubs
/// whose target cannot be chained to (a translation that straddles into the next page:
/// a chain would skip the check of that page's mapping, while a jump-cache entry is
/// per mapping). `rel` is the offset of the miss path's rel32 to `exit_common`.
pub fn shared_lookup() -> (Vec<u8>, usize) {
    let v = indirect_lookup().to_vec();
    let rel = v.len() - 4;
    (v, rel)
}

/// The indirect-branch table's miss routine (see `crate::ibt`), where an entry never set
/// leads: `lea r11, [r11 - 1]` (the table's path counted a hit) and the jump-cache
/// lookup. `rel` is the offset of the miss path's rel32 to `exit_common`.
pub fn table_miss() -> (Vec<u8>, usize) {
    let mut v = vec![0x4d, 0x8d, 0x5b, 0xff]; // lea r11, [r11 - 1]
    v.extend_from_slice(indirect_lookup());
    let rel = v.len() - 4;
    (v, rel)
}

/// The indirect-branch path through the indirect-branch table (see `crate::ibt`),
/// entered with the target EIP in r13d (its high half zero) and r11 counted: the
/// table's entry for the target, relative to the miss routine's address, is where to go
/// (the target's jump-cache entry, `runtime::jc_entry`, or the miss routine for an entry
/// never set), and a hit counted in r11 (`lea r11, [r11 + 1]`, see
/// `runtime::ICOUNT_SHIFT`) unless the caller folded it into the instruction count just
/// before (`hit_counted`). Flags untouched; r8 and r9 are scratch here.
///
/// ```text
/// mov    r9, [r15 + ibt]              ; the running mapping's table
/// movsxd r9, dword [r9 + r13 * 4]     ; its entry for the target
/// lea    r8, [rip + miss]             ; the miss routine (a rel32 the caller resolves)
/// lea    r9, [r9 + r8]
/// jmp    r9
/// ```
///
/// Returns the code and the offset of the `lea`'s rel32 to the miss routine, which the
/// translator records as a `translate::Fixup::TableMiss`. (Until stop 41 the code buffer
/// lay in the low 2 GiB and the miss routine's address was the `lea`'s immediate; a
/// guest window holds the low 4 GiB now, see `morph_mem::window`.)
pub fn table_lookup(hit_counted: bool) -> (&'static [u8], usize) {
    let (code, at) = &table_lookups()[usize::from(hit_counted)];
    (code, *at)
}

/// The lookups of [`table_lookup`] (without and with the hit counted), each with the
/// offset of its rel32.
fn table_lookups() -> &'static [(Vec<u8>, usize); 2] {
    static CODE: std::sync::OnceLock<[(Vec<u8>, usize); 2]> = std::sync::OnceLock::new();
    CODE.get_or_init(|| {
        let lookup = |counted: bool| {
            let mut code = assemble(|a| {
                dynasm!(a
                    ; .arch x64
                    ; mov r9, [r15 + off::IBT]
                    ; movsxd r9, DWORD [r9 + r13 * 4]
                );
            });
            // lea r8, [rip + rel32]: the rel32 last, so that it counts from the end of
            // the field, as every rel32 the placement resolves does.
            code.extend_from_slice(&[0x4c, 0x8d, 0x05, 0, 0, 0, 0]);
            let at = code.len() - 4;
            code.extend(assemble(|a| {
                dynasm!(a
                    ; .arch x64
                    ; lea r9, [r9 + r8]
                );
                if !counted {
                    dynasm!(a
                        ; .arch x64
                        ; lea r11, [r11 + 1]
                    );
                }
                dynasm!(a
                    ; .arch x64
                    ; jmp r9
                );
            }));
            (code, at)
        };
        [lookup(false), lookup(true)]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_host_recognizes_rorx_without_vex_tables() {
        use iced_x86::{Code, Mnemonic, Register};
        let code = assemble(|a| {
            dynasm!(a
                ; .arch x64
                ; rorx r9d, r13d, 16
                ; rorx rax, rbx, 3
                ; rorx r15, r8, 63
                ; nop
            )
        });
        let d = decode_host(&code, 0x1000);
        let got: Vec<_> = d.iter().map(|i| (i.code(), i.op0_register(), i.op1_register(), i.ip(), i.len())).collect();
        assert_eq!(
            got[..3],
            [
                (Code::VEX_Rorx_r32_rm32_imm8, Register::R9D, Register::R13D, 0x1000, 6),
                (Code::VEX_Rorx_r64_rm64_imm8, Register::RAX, Register::RBX, 0x1006, 6),
                (Code::VEX_Rorx_r64_rm64_imm8, Register::R15, Register::R8, 0x100c, 6),
            ]
        );
        assert_eq!(d.iter().map(|i| i.immediate8()).take(3).collect::<Vec<_>>(), [16, 3, 63]);
        // The decoder goes on after them.
        assert_eq!((d.len(), d[3].mnemonic(), d[3].ip()), (4, Mnemonic::Nop, 0x1012));
    }

    #[test]
    fn the_table_lookup_forms_the_miss_routine_address_from_its_own() {
        use iced_x86::{Mnemonic, Register};
        for counted in [false, true] {
            let (code, at) = table_lookup(counted);
            let mut patched = code.to_vec();
            patched[at..at + 4].copy_from_slice(&0x1234_5678i32.to_le_bytes());
            let decoded = decode_host(&patched, 0);
            assert!(decoded.iter().all(|i| !i.is_invalid()), "{decoded:?}");
            let lea = decoded.iter().find(|i| i.mnemonic() == Mnemonic::Lea && i.memory_base() == Register::RIP);
            // The rel32 counts from the end of its field (the lea's end), as placement's do.
            assert_eq!(
                lea.map(|i| (i.op0_register(), i.memory_displacement64())),
                Some((Register::R8, at as u64 + 4 + 0x1234_5678))
            );
            assert_eq!(decoded.last().map(|i| i.mnemonic()), Some(Mnemonic::Jmp));
            // No load but the table's and its entry's.
            assert_eq!(
                decoded.iter().filter(|i| i.mnemonic() == Mnemonic::Mov || i.mnemonic() == Mnemonic::Movsxd).count(),
                2
            );
        }
    }

    #[test]
    fn a_helper_call_carries_its_operands() {
        use iced_x86::{Mnemonic, Register};
        for (helper, ins, k, eip_off) in
            [(0x5555_0000_1234usize, 0x7fff_0000_0008usize, 0u32, 0i32), (1, 2, 31, -8), (0x10, 0x20, 7, 0xffc)]
        {
            let (before, after) = helper_call(helper, ins, k, eip_off);
            let decoded = decode_host(&before, 0);
            assert!(decoded.iter().all(|i| !i.is_invalid()));
            let lea = decoded.iter().find(|i| i.mnemonic() == Mnemonic::Lea && i.memory_base() == Register::R14);
            assert_eq!(lea.map(|i| i.memory_displacement32() as i32), Some(eip_off));
            let store_k = decoded.iter().find(|i| {
                i.mnemonic() == Mnemonic::Mov
                    && i.memory_base() == Register::R15
                    && i.memory_displacement32() == off::HELPER_K as u32
            });
            assert_eq!(store_k.map(|i| i.immediate32()), Some(k));
            let imm_to = |r: Register| {
                decoded.iter().find(|i| i.mnemonic() == Mnemonic::Mov && i.op0_register() == r).map(|i| i.immediate64())
            };
            assert_eq!(imm_to(Register::RSI), Some(ins as u64));
            assert_eq!(imm_to(Register::RAX), Some(helper as u64));
            assert_eq!(after, helper_call(0, 0, 0, 0).1);
        }
    }
}
