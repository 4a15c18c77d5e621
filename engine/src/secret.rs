//! Secrets at rest: secret preset values and upstream credentials are stored encrypted with
//! XChaCha20-Poly1305 (authenticated; a random 192-bit nonce per value) under one key.
//!
//! The key comes from `TOOLGATE_SECRET_KEY` (32 bytes, base64), or is generated once into
//! `<data dir>/secret.key` (mode 0600). Replicas sharing a database must share the key.
//! No read path returns a decrypted secret to a client: only execution decrypts.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};

/// A bearer secret shown once and stored only as [`digest`]: `prefix` and 40 random letters
/// and digits (238 bits). API keys, admin tokens, OAuth codes and tokens, invitation links.
pub fn random_token(prefix: &str) -> String {
    use rand::distr::{Alphanumeric, SampleString};
    format!("{prefix}{}", Alphanumeric.sample_string(&mut rand::rng(), 40))
}

/// What is stored of a bearer secret: its SHA-256.
pub fn digest(token: &str) -> Vec<u8> {
    use sha2::{Digest, Sha256};
    Sha256::digest(token.as_bytes()).to_vec()
}

/// Marks the format of a stored value, so the scheme can change later.
const VERSION: &str = "v1:";
const KEY_FILE: &str = "secret.key";
const NONCE_LEN: usize = 24;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `TOOLGATE_SECRET_KEY` is not 32 bytes of base64.
    #[error("TOOLGATE_SECRET_KEY must be 32 bytes encoded as base64 (e.g. `openssl rand -base64 32`)")]
    BadKey,
    /// The key file could not be read or created.
    #[error("secret key file {path}: {source}")]
    KeyFile { path: String, source: std::io::Error },
    /// A stored value is damaged or was encrypted under another key.
    #[error("a stored secret cannot be decrypted (damaged, or encrypted under another key)")]
    Undecryptable,
}

/// The cipher under Toolgate's key. Cloning shares nothing mutable.
#[derive(Clone)]
pub struct SecretBox {
    cipher: XChaCha20Poly1305,
}

impl std::fmt::Debug for SecretBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretBox(..)")
    }
}

impl SecretBox {
    pub fn from_key(key: &[u8]) -> Result<Self, Error> {
        let cipher = XChaCha20Poly1305::new_from_slice(key).map_err(|_| Error::BadKey)?;
        Ok(SecretBox { cipher })
    }

    /// The key from `TOOLGATE_SECRET_KEY` when given, else from the data folder's key file,
    /// created on first use.
    pub fn load(env_key: Option<&str>, data_dir: &Path) -> Result<Self, Error> {
        if let Some(encoded) = env_key {
            let key = BASE64.decode(encoded.trim()).map_err(|_| Error::BadKey)?;
            return Self::from_key(&key);
        }
        let path = data_dir.join(KEY_FILE);
        let key_file_error = |source| Error::KeyFile { path: path.display().to_string(), source };
        let read = |path: &Path| -> Result<Self, Error> {
            let encoded = std::fs::read_to_string(path).map_err(key_file_error)?;
            let key = BASE64.decode(encoded.trim()).map_err(|_| Error::BadKey)?;
            Self::from_key(&key)
        };
        if path.exists() {
            return read(&path);
        }
        std::fs::create_dir_all(data_dir).map_err(key_file_error)?;
        // Write to a private temporary file, then link it into place: a process starting at
        // the same moment either wins or reads the winner's key, never a half-written one.
        let key = XChaCha20Poly1305::generate_key(&mut OsRng);
        let temporary = data_dir.join(format!("{KEY_FILE}.{}", uuid::Uuid::new_v4()));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temporary)
            .map_err(key_file_error)?;
        file.write_all(BASE64.encode(key).as_bytes()).map_err(key_file_error)?;
        drop(file);
        let linked = std::fs::hard_link(&temporary, &path);
        let _ = std::fs::remove_file(&temporary);
        match linked {
            Ok(()) => {
                tracing::info!(path = %path.display(), "generated a new secret key");
                Self::from_key(&key)
            }
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => read(&path),
            Err(err) => Err(key_file_error(err)),
        }
    }

    pub fn encrypt(&self, plaintext: &str) -> String {
        let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
        let ciphertext = self
            .cipher
            .encrypt(&nonce, plaintext.as_bytes())
            .expect("XChaCha20-Poly1305 encrypts any message that fits in memory");
        let mut sealed = nonce.to_vec();
        sealed.extend_from_slice(&ciphertext);
        format!("{VERSION}{}", BASE64.encode(sealed))
    }

    pub fn decrypt(&self, stored: &str) -> Result<String, Error> {
        let sealed = stored
            .strip_prefix(VERSION)
            .and_then(|b64| BASE64.decode(b64).ok())
            .filter(|bytes| bytes.len() > NONCE_LEN)
            .ok_or(Error::Undecryptable)?;
        let (nonce, ciphertext) = sealed.split_at(NONCE_LEN);
        let plaintext =
            self.cipher.decrypt(XNonce::from_slice(nonce), ciphertext).map_err(|_| Error::Undecryptable)?;
        String::from_utf8(plaintext).map_err(|_| Error::Undecryptable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret_box() -> SecretBox {
        SecretBox::from_key(&[7u8; 32]).unwrap()
    }

    #[test]
    fn round_trip() {
        let sealed = secret_box().encrypt("Bearer abc");
        assert!(sealed.starts_with("v1:"));
        assert!(!sealed.contains("Bearer"));
        assert_eq!(secret_box().decrypt(&sealed).unwrap(), "Bearer abc");
    }

    #[test]
    fn same_plaintext_encrypts_differently() {
        assert_ne!(secret_box().encrypt("x"), secret_box().encrypt("x"));
    }

    #[test]
    fn tampering_or_another_key_is_detected() {
        let sealed = secret_box().encrypt("secret");
        let other = SecretBox::from_key(&[8u8; 32]).unwrap();
        assert!(matches!(other.decrypt(&sealed), Err(Error::Undecryptable)));
        let mut bytes = BASE64.decode(&sealed[3..]).unwrap();
        *bytes.last_mut().unwrap() ^= 1;
        let tampered = format!("v1:{}", BASE64.encode(bytes));
        assert!(matches!(secret_box().decrypt(&tampered), Err(Error::Undecryptable)));
        assert!(matches!(secret_box().decrypt("plaintext"), Err(Error::Undecryptable)));
    }

    #[test]
    fn key_file_is_created_once_and_reused() {
        let dir = std::env::temp_dir().join(format!("toolgate-key-{}", uuid::Uuid::new_v4()));
        let first = SecretBox::load(None, &dir).unwrap();
        let second = SecretBox::load(None, &dir).unwrap();
        assert_eq!(second.decrypt(&first.encrypt("kept")).unwrap(), "kept");
        let mode = std::fs::metadata(dir.join(KEY_FILE)).unwrap().permissions();
        assert_eq!(std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777, 0o600);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn env_key_must_be_32_bytes_of_base64() {
        assert!(matches!(SecretBox::load(Some("short"), Path::new("/nonexistent")), Err(Error::BadKey)));
        let key = BASE64.encode([1u8; 32]);
        assert!(SecretBox::load(Some(&key), Path::new("/nonexistent")).is_ok());
    }
}
