//! [`SecretBox`]: LiteLLM's encryption of stored credentials (`litellm_params` of models added
//! through `/model/new`), so values written by either gateway are readable by the other.
//!
//! The scheme is LiteLLM's `encrypt_value` / `decrypt_value`
//! (`litellm/proxy/common_utils/encrypt_decrypt_utils.py`): the 32-byte key is
//! `sha256(LITELLM_SALT_KEY, or the master key when no salt key is set)`; the cipher is NaCl's
//! `crypto_secretbox` (XSalsa20-Poly1305, PyNaCl's `nacl.secret.SecretBox`), whose output is
//! `nonce (24 bytes) || tag (16 bytes) || ciphertext`; the stored text is that, URL-safe base64
//! with `=` padding (Python's `base64.urlsafe_b64encode`).

use base64::Engine;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use crypto_secretbox::aead::{Aead, KeyInit};
use crypto_secretbox::{Nonce, XSalsa20Poly1305};
use sha2::{Digest, Sha256};

/// Nonce length, bytes (NaCl `crypto_secretbox_NONCEBYTES`).
pub const NONCE_LEN: usize = 24;
/// Authentication tag length, bytes (`crypto_secretbox_MACBYTES`).
pub const TAG_LEN: usize = 16;

/// URL-safe alphabet; decoding accepts padded and unpadded text.
const B64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(true)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Why a stored value could not be decrypted. Messages never contain the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretBoxError {
    /// Not URL-safe base64.
    #[error("not URL-safe base64")]
    NotBase64,
    /// Shorter than a nonce and a tag.
    #[error("too short to be a secret box ({0} bytes)")]
    TooShort(usize),
    /// The tag does not verify: another key, or not an encrypted value.
    #[error("authentication failed (another key, or not an encrypted value)")]
    Forged,
    /// The plaintext is not UTF-8.
    #[error("plaintext is not UTF-8")]
    NotUtf8,
}

/// The key and cipher; `Debug` never shows the key.
#[derive(Clone)]
pub struct SecretBox {
    cipher: XSalsa20Poly1305,
}

impl std::fmt::Debug for SecretBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretBox(..)")
    }
}

impl SecretBox {
    /// The box keyed by `sha256(salt)`; `salt` is `LITELLM_SALT_KEY`, else the master key.
    pub fn from_salt(salt: &str) -> Self {
        let key: [u8; 32] = Sha256::digest(salt.as_bytes()).into();
        Self {
            cipher: XSalsa20Poly1305::new(&key.into()),
        }
    }

    /// Encrypts `plaintext` under a fresh random nonce: URL-safe base64 (padded) of
    /// `nonce || tag || ciphertext`.
    pub fn encrypt(&self, plaintext: &str) -> String {
        let nonce: [u8; NONCE_LEN] = rand::random();
        self.encrypt_with_nonce(plaintext, nonce)
    }

    /// [`SecretBox::encrypt`] with a given nonce (test vectors). A nonce must never be reused
    /// with the same key.
    pub(crate) fn encrypt_with_nonce(&self, plaintext: &str, nonce: [u8; NONCE_LEN]) -> String {
        let n = Nonce::from(nonce);
        // Encryption with a 24-byte nonce and an in-memory buffer cannot fail.
        let sealed = self
            .cipher
            .encrypt(&n, plaintext.as_bytes())
            .unwrap_or_default();
        let mut out = Vec::with_capacity(NONCE_LEN + sealed.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        B64.encode(out)
    }

    /// Decrypts a value written by [`SecretBox::encrypt`] or by LiteLLM.
    ///
    /// Errors: [`SecretBoxError`] (not base64, too short, wrong key or not encrypted, not UTF-8).
    pub fn decrypt(&self, value: &str) -> Result<String, SecretBoxError> {
        let raw = B64
            .decode(value.trim())
            .map_err(|_| SecretBoxError::NotBase64)?;
        if raw.len() < NONCE_LEN + TAG_LEN {
            return Err(SecretBoxError::TooShort(raw.len()));
        }
        let (nonce, sealed) = raw.split_at(NONCE_LEN);
        let mut n = [0u8; NONCE_LEN];
        n.copy_from_slice(nonce);
        let plain = self
            .cipher
            .decrypt(&Nonce::from(n), sealed)
            .map_err(|_| SecretBoxError::Forged)?;
        String::from_utf8(plain).map_err(|_| SecretBoxError::NotUtf8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Vectors computed with PyNaCl 1.6.2, as LiteLLM does it:
    //   box = nacl.secret.SecretBox(hashlib.sha256(salt.encode()).digest())
    //   base64.urlsafe_b64encode(box.encrypt(plaintext.encode(), nonce)).decode()
    const V1: &str =
        "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXaHNU-8oaWPK1xDSJjdJGnYSczcpuHhhtpJWDqnAulhjJdXjz";
    const V2: &str = "________________________________VmOxuCMu_uqruxq3G9QxyBoY1aKnACvbuPHG1ZwN48h32CEVdwupJ7TQkw==";
    const V3: &str = "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHpUJbAXZCHjRK6lExvTrqxw==";

    fn nonce_0_to_23() -> [u8; NONCE_LEN] {
        let mut n = [0u8; NONCE_LEN];
        for (i, b) in n.iter_mut().enumerate() {
            *b = i as u8;
        }
        n
    }

    #[test]
    fn matches_pynacl_vectors() {
        let b = SecretBox::from_salt("sk-1234");
        assert_eq!(
            b.encrypt_with_nonce("sk-test-upstream-key", nonce_0_to_23()),
            V1
        );
        assert_eq!(
            b.encrypt_with_nonce("https://mock.local/v1 ünï", [0xff; NONCE_LEN]),
            V2
        );
        assert_eq!(
            SecretBox::from_salt("my-salt-key").encrypt_with_nonce("", [7; NONCE_LEN]),
            V3
        );
    }

    #[test]
    fn decrypts_pynacl_output() {
        let b = SecretBox::from_salt("sk-1234");
        assert_eq!(b.decrypt(V1).unwrap(), "sk-test-upstream-key");
        assert_eq!(b.decrypt(V2).unwrap(), "https://mock.local/v1 ünï");
        // unpadded input is accepted too
        assert_eq!(
            b.decrypt(V2.trim_end_matches('=')).unwrap(),
            "https://mock.local/v1 ünï"
        );
        assert_eq!(SecretBox::from_salt("my-salt-key").decrypt(V3).unwrap(), "");
    }

    #[test]
    fn random_nonces_round_trip_and_differ() {
        let b = SecretBox::from_salt("salt");
        let a1 = b.encrypt("sk-upstream");
        let a2 = b.encrypt("sk-upstream");
        assert_ne!(a1, a2);
        assert!(!a1.contains("sk-upstream"));
        // 24 nonce + 16 tag + 11 plaintext = 51 bytes → 68 base64 characters
        assert_eq!(a1.len(), 68);
        assert_eq!(b.decrypt(&a1).unwrap(), "sk-upstream");
        assert_eq!(b.decrypt(&a2).unwrap(), "sk-upstream");
    }

    #[test]
    fn refuses_wrong_key_and_plain_text() {
        let b = SecretBox::from_salt("sk-1234");
        assert_eq!(
            SecretBox::from_salt("other").decrypt(V1),
            Err(SecretBoxError::Forged)
        );
        assert_eq!(b.decrypt("openai/gpt-4o"), Err(SecretBoxError::NotBase64));
        assert_eq!(b.decrypt("abcd"), Err(SecretBoxError::TooShort(3)));
        let mut tampered = V1.as_bytes().to_vec();
        tampered[40] = if tampered[40] == b'A' { b'B' } else { b'A' };
        assert_eq!(
            b.decrypt(std::str::from_utf8(&tampered).unwrap()),
            Err(SecretBoxError::Forged)
        );
        assert_eq!(format!("{b:?}"), "SecretBox(..)");
    }
}
