//! Sockets: socketcall and the direct socket calls, loopback only.

#[allow(unused_imports)]
use super::*;

table! {
    /// Sockets: socketcall and the direct socket calls, loopback only.
    pub(super) TABLE {}
}
