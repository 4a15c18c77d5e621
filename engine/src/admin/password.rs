//! Passwords: a plaintext one checked or generated, and its argon2id hash computed and verified
//! on a blocking thread, at most [`CONCURRENT_HASHES`] at once.

use argon2::Argon2;
use argon2::password_hash::phc::PasswordHash as Phc;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use rand::distr::{Alphanumeric, SampleString};

use crate::{Error, Result};

pub const MIN_PASSWORD_LEN: usize = 12;

/// A plaintext password on its way to being hashed; not `Debug`, not `Serialize`.
pub struct Password {
    text: String,
    /// Printed once for someone to sign in with: its account must then choose its own.
    pub(super) one_time: bool,
}

impl Password {
    /// A password its account chose.
    pub fn parse(password: String) -> Result<Self> {
        if password.chars().count() < MIN_PASSWORD_LEN {
            return Err(Error::Invalid(format!("a password needs at least {MIN_PASSWORD_LEN} characters")));
        }
        Ok(Password { text: password, one_time: false })
    }

    /// A random 24-character one-time password, for first start and resets.
    pub fn generate() -> Self {
        Password { text: Alphanumeric.sample_string(&mut rand::rng(), 24), one_time: true }
    }

    pub fn expose(&self) -> &str {
        &self.text
    }

    pub fn one_time(&self) -> bool {
        self.one_time
    }
}

/// An argon2id PHC string. Deliberately neither `Serialize` nor `Debug`.
pub struct PasswordHash(pub(super) String);

/// The most argon2 computations running at once; more wait.
pub const CONCURRENT_HASHES: usize = 2;

static HASHING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(CONCURRENT_HASHES);

/// What a session keeps of the password it was opened with: it changes with the password, so
/// a new password ends the sessions opened before.
pub(super) fn password_stamp(hash: Option<&str>) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(hash.unwrap_or("none").as_bytes()).iter().take(8).map(|b| format!("{b:02x}")).collect()
}

impl PasswordHash {
    /// Hashes on a blocking thread: argon2id is deliberately slow.
    pub async fn new(password: &Password) -> Self {
        let _place = HASHING.acquire().await.expect("the hashing semaphore is never closed");
        let password = password.text.clone();
        tokio::task::spawn_blocking(move || {
            let hash = Argon2::default()
                .hash_password(password.as_bytes())
                .expect("argon2 with default parameters hashes any password");
            PasswordHash(hash.to_string())
        })
        .await
        .expect("password hashing task panicked")
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// Checks a password against this hash on a blocking thread.
    pub async fn verify(&self, password: &str) -> bool {
        let _place = HASHING.acquire().await.expect("the hashing semaphore is never closed");
        let (hash, password) = (self.0.clone(), password.to_string());
        tokio::task::spawn_blocking(move || {
            Phc::new(&hash)
                .is_ok_and(|phc| Argon2::default().verify_password(password.as_bytes(), &phc).is_ok())
        })
        .await
        .expect("password verification task panicked")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hash_verifies_its_own_password_only() {
        let password = Password::parse("correct horse battery".into()).unwrap();
        let hash = PasswordHash::new(&password).await;
        assert!(hash.0.starts_with("$argon2id$"), "argon2id PHC string expected");
        assert!(hash.verify("correct horse battery").await);
        assert!(!hash.verify("correct horse battery!").await);
        assert!(!hash.verify("").await);
    }

    #[tokio::test]
    async fn same_password_hashes_differently_each_time() {
        let password = Password::parse("the same password".into()).unwrap();
        assert_ne!(PasswordHash::new(&password).await.0, PasswordHash::new(&password).await.0);
    }

    #[test]
    fn short_password_is_rejected() {
        assert!(matches!(Password::parse("short".into()), Err(Error::Invalid(_))));
        assert!(Password::parse("twelve chars".into()).is_ok());
    }

    #[test]
    fn generated_passwords_are_long_and_distinct() {
        let (a, b) = (Password::generate(), Password::generate());
        assert_eq!(a.expose().len(), 24);
        assert_ne!(a.expose(), b.expose());
    }
}
