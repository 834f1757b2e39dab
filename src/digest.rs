//! Content identities: the SHA-256 digest the primary approves, and git blob ids that pin pre- and post-images.

use sha1::Sha1;
use sha2::{Digest, Sha256};

/// Lower-case hex SHA-256 of `bytes`: the digest of a canonical patch.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// The git blob id of `bytes` (what `git hash-object` prints): sha1 over `blob <len>\0<bytes>`.
pub fn git_blob_id(bytes: &[u8]) -> String {
    let mut h = Sha1::new();
    h.update(format!("blob {}\0", bytes.len()).as_bytes());
    h.update(bytes);
    hex(&h.finalize())
}

/// The blob id git uses for "no file" in `index` lines.
pub const NULL_BLOB_ID: &str = "0000000000000000000000000000000000000000";

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 15) as usize] as char);
    }
    out
}

/// Compare two digests in time independent of where they first differ.
pub fn digests_equal(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_id_matches_git_for_empty_and_small_files() {
        // Values printed by `git hash-object` for the same bytes.
        assert_eq!(git_blob_id(b""), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
        assert_eq!(
            git_blob_id(b"hello\n"),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
    }

    #[test]
    fn sha256_is_lower_hex() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn digest_comparison_rejects_any_difference() {
        assert!(digests_equal("abc", "abc"));
        assert!(!digests_equal("abc", "abd"));
        assert!(!digests_equal("abc", "ab"));
    }
}
