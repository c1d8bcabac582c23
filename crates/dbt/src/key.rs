//! The translation cache's key policy: the experiment's independent variable.
//!
//! [`KeyPolicy`] is the one place that knows what each policy means: it parses and
//! prints the policy names, makes keys, and answers every question the engine asks of a
//! policy (whether a key names the frame, whether a process's translations die at exec,
//! which jump-cache tag a process uses). No other code branches on the policy.

use morph_mem::{AddressSpace, Frame, PAGE_SIZE};

/// Guest bytes hashed into a `content` identity (the rest is compared on reuse).
const IDENTITY_BYTES: u32 = 32;

/// What the translation cache is keyed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyPolicy {
    /// Guest virtual address, validated against the frame.
    Virtual,
    /// Guest physical address.
    Physical,
    /// A private cache per process, keyed by virtual address.
    Process,
    /// Dispatch by physical address; a block about to be translated first looks for a
    /// translation of the same file page (device, inode, change stamp, page index) at
    /// the same page offset, made from any frame, and copies it. Code that is not an
    /// unmodified file page is translated as under `physical`.
    File,
    /// Dispatch by physical address; a block about to be translated first looks for a
    /// translation of the same guest bytes at the same page offset, made anywhere, and
    /// copies it.
    Content,
}

impl KeyPolicy {
    /// Every policy, in the order reports list them.
    pub const ALL: [KeyPolicy; 5] =
        [KeyPolicy::Virtual, KeyPolicy::Physical, KeyPolicy::Process, KeyPolicy::File, KeyPolicy::Content];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            KeyPolicy::Virtual => "virtual",
            KeyPolicy::Physical => "physical",
            KeyPolicy::Process => "process",
            KeyPolicy::File => "file",
            KeyPolicy::Content => "content",
        }
    }

    /// What the key is, for `--help` and documentation.
    pub fn describe(self) -> &'static str {
        match self {
            KeyPolicy::Virtual => "guest virtual address, validated against the frame it maps",
            KeyPolicy::Physical => "guest physical address (frame and offset)",
            KeyPolicy::Process => "(process, virtual address): a private cache per process, dropped at exec and exit",
            KeyPolicy::File => "physical address; translations reused across frames by (file, offset in it)",
            KeyPolicy::Content => "physical address; translations reused across frames by the guest bytes",
        }
    }

    /// The key of `eip` (in `frame`) for process `ctx`.
    #[inline]
    pub(crate) fn key(self, eip: u32, frame: Frame, ctx: u32) -> Key {
        Key(match self {
            KeyPolicy::Virtual => u64::from(eip),
            KeyPolicy::Physical | KeyPolicy::File | KeyPolicy::Content => {
                frame.addr().0 + u64::from(eip & (PAGE_SIZE - 1))
            }
            KeyPolicy::Process => (u64::from(ctx) << 32) | u64::from(eip),
        })
    }

    /// The identity under which a translation of the block at `eip` (in `frame`) may be
    /// reused from another frame, if the policy reuses and the block has one: a hash of
    /// the file page and the page offset (`file`, for an unmodified file-backed page),
    /// or of the first guest bytes and the page offset (`content`). Only a hint that
    /// names candidates: a candidate is reused only if its guest bytes are the block's.
    pub(crate) fn identity(self, eip: u32, frame: Frame, mem: &AddressSpace) -> Option<u64> {
        use std::hash::{Hash, Hasher};
        let mut h = rustc_hash::FxHasher::default();
        let offset = eip & (PAGE_SIZE - 1);
        match self {
            KeyPolicy::Virtual | KeyPolicy::Physical | KeyPolicy::Process => return None,
            KeyPolicy::File => (mem.phys().file_page(frame)?, offset).hash(&mut h),
            KeyPolicy::Content => {
                let n = IDENTITY_BYTES.min(PAGE_SIZE - offset);
                let mut bytes = [0u8; IDENTITY_BYTES as usize];
                mem.read_bytes(eip, &mut bytes[..n as usize]).ok()?;
                (offset, &bytes[..n as usize]).hash(&mut h);
            }
        }
        Some(h.finish())
    }

    /// Whether a process's translations are dropped when it execs or exits (its keys can
    /// never be dispatched again).
    pub fn drops_at_exec(self) -> bool {
        self == KeyPolicy::Process
    }

    /// The process part of the jump-cache tag of process `ctx`: processes that share a
    /// mapping share jump-cache entries, unless each has its own cache.
    #[inline]
    pub(crate) fn jump_cache_ctx(self, ctx: u32) -> u32 {
        if self == KeyPolicy::Process { ctx } else { 0 }
    }

    /// The process a key belongs to, if the policy keys per process.
    pub(crate) fn owner(self, key: Key) -> Option<u32> {
        (self == KeyPolicy::Process).then_some((key.0 >> 32) as u32)
    }
}

impl std::fmt::Display for KeyPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A policy name that is not one of [`KeyPolicy::ALL`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownKey(pub String);

impl std::fmt::Display for UnknownKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = KeyPolicy::ALL.iter().map(|k| k.name()).collect();
        write!(f, "unknown key policy `{}` (one of: {})", self.0, names.join(", "))
    }
}

impl std::error::Error for UnknownKey {}

impl std::str::FromStr for KeyPolicy {
    type Err = UnknownKey;

    fn from_str(s: &str) -> Result<KeyPolicy, UnknownKey> {
        KeyPolicy::ALL.into_iter().find(|k| k.name() == s).ok_or_else(|| UnknownKey(s.to_string()))
    }
}

/// A translation-cache key under the engine's policy: the guest VA (`virtual`), the
/// guest PA (`physical`), or the process in the high half and the VA in the low half
/// (`process`). One word, so that a key's slot stays small.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) struct Key(pub(crate) u64);

impl Key {
    /// The offset of the key's code in its page (the low bits under every policy).
    #[inline]
    pub(crate) fn page_offset(self) -> u32 {
        self.0 as u32 & (PAGE_SIZE - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_policy_parses_from_its_name() {
        for k in KeyPolicy::ALL {
            assert_eq!(k.name().parse::<KeyPolicy>(), Ok(k));
            assert_eq!(k.to_string(), k.name());
        }
        let err = "nope".parse::<KeyPolicy>().unwrap_err().to_string();
        assert!(err.contains("nope") && err.contains("physical"), "{err}");
    }

    #[test]
    fn keys_keep_the_page_offset() {
        let f = Frame(3);
        for k in KeyPolicy::ALL {
            assert_eq!(k.key(0x0804_8123, f, 9).page_offset(), 0x123, "{k}");
        }
        assert_eq!(KeyPolicy::Process.owner(KeyPolicy::Process.key(0x1000, f, 9)), Some(9));
        assert_eq!(KeyPolicy::Physical.owner(KeyPolicy::Physical.key(0x1000, f, 9)), None);
    }
}
