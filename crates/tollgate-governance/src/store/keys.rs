//! Virtual key generation, hashing and masking (litellm-surface §4.2).
//!
//! - A key is `sk-` + 22 URL-safe base64 characters of 16 random bytes (Python's
//!   `secrets.token_urlsafe(16)`), e.g. `sk-kdEXbIqZRwEeEiHwdg7sFA`.
//! - It is stored only as the **hex SHA-256 of the full key string including `sk-`**
//!   (`LiteLLM_VerificationToken.token`), so an existing LiteLLM database keeps working.
//! - Its display form is `sk-...` + the last 4 characters (`key_name`).

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use sha2::{Digest, Sha256};

/// A plaintext virtual key, shown once at creation. `Debug` and `Display` print the masked
/// form only; [`SecretKey::expose`] gives the plaintext for the one response that returns it.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretKey(String);

impl SecretKey {
    /// Wraps a plaintext key (e.g. a custom `key` passed to `/key/generate`).
    pub fn new(plaintext: impl Into<String>) -> Self {
        Self(plaintext.into())
    }

    /// A fresh random key: `sk-` + 22 URL-safe base64 chars (16 bytes from the OS RNG).
    pub fn generate() -> Self {
        let mut bytes = [0u8; 16];
        rand::rng().fill_bytes(&mut bytes);
        Self(format!("sk-{}", URL_SAFE_NO_PAD.encode(bytes)))
    }

    /// The plaintext. Only for the single response that shows a new key to its owner.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Hex SHA-256 of the full key (the stored `token`).
    pub fn hash(&self) -> String {
        hash_key(&self.0)
    }

    /// `sk-...` + last 4 characters.
    pub fn masked(&self) -> String {
        mask_key(&self.0)
    }
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretKey({})", self.masked())
    }
}

impl fmt::Display for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.masked())
    }
}

/// Hex (lowercase) SHA-256 of `key` as given, `sk-` included.
pub fn hash_key(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// `sk-...` + the last 4 characters of `key` (`sk-...` alone for keys of 4 characters or fewer).
pub fn mask_key(key: &str) -> String {
    let chars: Vec<char> = key.chars().collect();
    if chars.len() <= 4 {
        return "sk-...".to_owned();
    }
    let tail: String = chars[chars.len() - 4..].iter().collect();
    format!("sk-...{tail}")
}

/// True when `s` looks like a stored key hash (64 lowercase hex digits), as `/key/info?key=`
/// and `/key/update` accept either the key or its hash.
pub fn is_key_hash(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_matches_sha256_of_the_full_key() {
        // sha256("sk-1234"), the key LiteLLM's docs use
        assert_eq!(
            hash_key("sk-1234"),
            "88dc28d0f030c55ed4ab77ed8faf098196cb1c05df778539800c9f1243fe6b4b"
        );
        assert!(is_key_hash(&hash_key("sk-anything")));
        assert!(!is_key_hash("sk-anything"));
    }

    #[test]
    fn generated_keys_have_litellm_shape() {
        let a = SecretKey::generate();
        let b = SecretKey::generate();
        assert_ne!(a, b);
        let s = a.expose();
        assert!(s.starts_with("sk-"));
        assert_eq!(s.len(), 3 + 22);
        assert!(
            s[3..]
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        );
    }

    #[test]
    fn masked_everywhere_it_prints() {
        let k = SecretKey::new("sk-test-CANARY2");
        assert_eq!(k.masked(), "sk-...ARY2");
        assert_eq!(format!("{k:?}"), "SecretKey(sk-...ARY2)");
        assert_eq!(format!("{k}"), "sk-...ARY2");
        assert_eq!(mask_key("abc"), "sk-...");
    }
}
