//! yoi's domain vocabulary and file formats.
//!
//! Everything here is pure: parsing and rendering of ticket files, the state machine, relation
//! and blocker rules, and the brief sections. No filesystem, no clock, no async — callers pass
//! text, times and ids in, and the store crate does the I/O.

pub mod brief;
pub mod class;
pub mod decision;
pub mod finding;
pub mod flow;
pub mod forge;
pub mod id;
pub mod inbox;
pub mod item;
pub mod packet;
pub mod plan;
pub mod principal;
pub mod relation;
pub mod report;
pub mod resolution;
pub mod role;
pub mod scope;
pub mod state;
pub mod text;
pub mod thread;
pub mod time;
pub mod yaml;

pub use class::ErrorClass;
pub use id::TicketId;
pub use item::Item;
pub use principal::{Principal, PrincipalKind};
pub use role::{Role, ServiceStep};
pub use state::{Operation, State};
pub use time::Timestamp;

/// Hex HMAC-SHA-256 (RFC 2104) of `msg` under `key`: the signature of the short-lived
/// tokens the server derives instead of storing (a pod's agent's token).
pub fn hmac_sha256_hex(key: &[u8], msg: &[u8]) -> String {
    use sha2::Digest;
    let mut k = [0u8; 64];
    if key.len() > 64 {
        k[..32].copy_from_slice(&sha2::Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let pad = |b: u8| k.iter().map(|x| x ^ b).collect::<Vec<u8>>();
    let inner = sha2::Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(msg)
        .finalize();
    let outer = sha2::Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize();
    outer.iter().map(|b| format!("{b:02x}")).collect()
}

/// Hex SHA-256 of some bytes: content hashes and operation fingerprints.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn hmac_matches_rfc_4231_test_cases() {
        // RFC 4231 §4.2 (test case 1) and §4.3 (test case 2).
        assert_eq!(
            super::hmac_sha256_hex(&[0x0b; 20], b"Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
        assert_eq!(
            super::hmac_sha256_hex(b"Jefe", b"what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // §4.7 (test case 6): a key longer than the block is hashed first.
        assert_eq!(
            super::hmac_sha256_hex(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            ),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }
}
