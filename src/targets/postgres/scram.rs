//! SCRAM-SHA-256 for loadrig's own login (RFC 5802 with RFC 7677's hash; no channel binding:
//! plain TCP only), keeping each password's derived keys for the run.
//!
//! The key derivation (`Hi`: PBKDF2 with HMAC-SHA-256, 4,096 rounds by PostgreSQL's default)
//! was 65 % of the client's CPU per new connection, and it depends only on the password, the
//! salt and the round count, which a server keeps per role. RFC 5802 (section 5.1) lets a
//! client store the derived ClientKey and ServerKey instead of deriving them each time, so a
//! run that opens a connection per operation measures the server's handshake, not its own
//! PBKDF2. The messages and proofs are those of every other client; the server sees no
//! difference. HMAC and SHA-256 are RustCrypto's (`hmac`, `sha2`), the password is prepared
//! with SASLprep (`stringprep`) where it is valid UTF-8, as libpq and tokio-postgres do.

use std::sync::{Mutex, OnceLock};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use rand::Rng;
use sha2::{Digest, Sha256};

type Key = [u8; 32];

/// The keys derived from one (password, salt, rounds): ClientKey and ServerKey.
#[derive(Clone, Copy)]
struct Derived {
    client: Key,
    server: Key,
}

/// Derived keys by the SHA-256 of the prepared password, the salt and the round count. A run
/// logs in as a handful of roles at most; the bound only keeps a hostile server that sends a
/// new salt each time from growing it.
type Cache = Vec<(Key, Vec<u8>, u32, Derived)>;
const CACHE_MAX: usize = 16;

fn cache() -> &'static Mutex<Cache> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(Vec::new()))
}

/// One exchange, from the client's first message to the check of the server's signature.
pub struct Scram {
    /// `n=,r=NONCE`: the first message without its GS2 header.
    first_bare: String,
    nonce: String,
    /// What the server's final message must carry, once the proof is sent.
    server_signature: Option<Key>,
}

/// The GS2 header: no channel binding, no authorization identity. Its base64 is `biws`.
const GS2: &str = "n,,";

impl Scram {
    /// Start an exchange; returns it and the client's first message. PostgreSQL takes the
    /// user from the startup message, so the SCRAM user name is empty, as libpq sends it.
    pub fn start() -> (Scram, Vec<u8>) {
        let nonce: String = (0..24)
            .map(|_| {
                // Printable ASCII without ',' (RFC 5802's `printable`).
                let c = rand::rng().random_range(0x21u8..0x7e);
                if c == b',' {
                    '~'
                } else {
                    char::from(c)
                }
            })
            .collect();
        let first_bare = format!("n=,r={nonce}");
        let message = format!("{GS2}{first_bare}").into_bytes();
        let scram = Scram {
            first_bare,
            nonce,
            server_signature: None,
        };
        (scram, message)
    }

    /// The client's final message (with its proof) in answer to the server's first.
    /// With `cached` false the keys are derived afresh, as libpq and JDBC derive them.
    pub fn answer(
        &mut self,
        server_first: &[u8],
        password: &[u8],
        cached: bool,
    ) -> Result<Vec<u8>, String> {
        let text = std::str::from_utf8(server_first)
            .map_err(|_| "the server's first message is not UTF-8".to_string())?;
        let (mut nonce, mut salt, mut rounds) = (None, None, None);
        for part in text.split(',') {
            match part.split_at_checked(2) {
                Some(("r=", v)) => nonce = Some(v),
                Some(("s=", v)) => salt = Some(v),
                Some(("i=", v)) => rounds = Some(v),
                _ => {}
            }
        }
        let (Some(nonce), Some(salt), Some(rounds)) = (nonce, salt, rounds) else {
            return Err("the server's first message lacks its nonce, salt or rounds".into());
        };
        if !nonce.starts_with(&self.nonce) || nonce.len() == self.nonce.len() {
            return Err("the server's nonce does not extend the client's".into());
        }
        let salt = STANDARD
            .decode(salt)
            .map_err(|_| "the server's salt is not base64".to_string())?;
        let rounds: u32 = match rounds.parse() {
            Ok(n) if n > 0 => n,
            _ => {
                return Err(format!(
                    "the server's round count {rounds:?} is not a count"
                ))
            }
        };
        let keys = if cached {
            derived(&prepared(password), &salt, rounds)
        } else {
            derive(&prepared(password), &salt, rounds)
        };
        let without_proof = format!("c=biws,r={nonce}");
        let auth = format!("{},{text},{without_proof}", self.first_bare);
        let stored: Key = Sha256::digest(keys.client).into();
        let signature = hmac(&stored, auth.as_bytes());
        let proof: Vec<u8> = keys
            .client
            .iter()
            .zip(signature)
            .map(|(k, s)| k ^ s)
            .collect();
        self.server_signature = Some(hmac(&keys.server, auth.as_bytes()));
        Ok(format!("{without_proof},p={}", STANDARD.encode(proof)).into_bytes())
    }

    /// Check the server's final message: it proves the server knew the password too.
    pub fn verify(&self, server_final: &[u8]) -> Result<(), String> {
        let want = self
            .server_signature
            .ok_or_else(|| "the server's final message came before the proof".to_string())?;
        let text = std::str::from_utf8(server_final).unwrap_or("");
        if let Some(e) = text.strip_prefix("e=") {
            return Err(format!("the server refused: {e}"));
        }
        let got = text
            .split(',')
            .find_map(|p| p.strip_prefix("v="))
            .and_then(|v| STANDARD.decode(v).ok());
        if got.as_deref() == Some(&want[..]) {
            Ok(())
        } else {
            Err("the server's signature does not match: it does not know the password".into())
        }
    }
}

/// SASLprep where the password is valid UTF-8 and prepares; otherwise its bytes as they are.
fn prepared(password: &[u8]) -> Vec<u8> {
    match std::str::from_utf8(password) {
        Ok(s) => match stringprep::saslprep(s) {
            Ok(p) => p.into_owned().into_bytes(),
            Err(_) => password.to_vec(),
        },
        Err(_) => password.to_vec(),
    }
}

fn hmac(key: &[u8], data: &[u8]) -> Key {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    mac.update(data);
    mac.finalize().into_bytes().into()
}

/// The cached keys for (password, salt, rounds), derived on first use.
fn derived(password: &[u8], salt: &[u8], rounds: u32) -> Derived {
    derived_in(cache(), password, salt, rounds).0
}

/// The keys from `cache`, and whether they had to be derived.
fn derived_in(cache: &Mutex<Cache>, password: &[u8], salt: &[u8], rounds: u32) -> (Derived, bool) {
    let id: Key = Sha256::digest(password).into();
    let found = cache.lock().ok().and_then(|c| {
        c.iter()
            .find(|(p, s, r, _)| *p == id && s == salt && *r == rounds)
            .map(|e| e.3)
    });
    if let Some(keys) = found {
        return (keys, false);
    }
    let keys = derive(password, salt, rounds);
    if let Ok(mut c) = cache.lock() {
        if c.len() >= CACHE_MAX {
            c.remove(0);
        }
        c.push((id, salt.to_vec(), rounds, keys));
    }
    (keys, true)
}

/// ClientKey and ServerKey from the password, without the cache.
fn derive(password: &[u8], salt: &[u8], rounds: u32) -> Derived {
    let salted = hi(password, salt, rounds);
    Derived {
        client: hmac(&salted, b"Client Key"),
        server: hmac(&salted, b"Server Key"),
    }
}

/// RFC 5802's Hi(): PBKDF2 with HMAC-SHA-256 and one output block. The keyed HMAC state is
/// cloned for each round instead of keyed again.
fn hi(password: &[u8], salt: &[u8], rounds: u32) -> Key {
    let keyed = <Hmac<Sha256> as KeyInit>::new_from_slice(password)
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    let mut mac = keyed.clone();
    mac.update(salt);
    mac.update(&1u32.to_be_bytes());
    let mut u: Key = mac.finalize().into_bytes().into();
    let mut out = u;
    for _ in 1..rounds {
        let mut mac = keyed.clone();
        mac.update(&u);
        u = mac.finalize().into_bytes().into();
        out.iter_mut().zip(u).for_each(|(o, b)| *o ^= b);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677's example exchange (user "user", password "pencil"), with its client nonce.
    #[test]
    fn reproduces_rfc_7677s_example() {
        let mut s = Scram {
            first_bare: "n=user,r=rOprNGfwEbeRWgbNEkqO".into(),
            nonce: "rOprNGfwEbeRWgbNEkqO".into(),
            server_signature: None,
        };
        let server_first =
            b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let answer = s.answer(server_first, b"pencil", true).unwrap();
        assert_eq!(
            String::from_utf8(answer).unwrap(),
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        s.verify(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
            .unwrap();
        assert!(s.verify(b"v=AAAA").is_err());
        assert!(s.verify(b"e=invalid-proof").is_err());
    }

    #[test]
    fn keys_are_derived_once_per_password_salt_and_rounds() {
        let cache = Mutex::new(Vec::new());
        let (a, fresh) = derived_in(&cache, b"secret-1", b"salt", 64);
        assert!(fresh);
        let (b, fresh) = derived_in(&cache, b"secret-1", b"salt", 64);
        assert!(!fresh);
        assert_eq!(a.client, b.client);
        assert!(derived_in(&cache, b"secret-1", b"salt", 65).1);
        assert!(derived_in(&cache, b"secret-1", b"pepper", 64).1);
        let (c, fresh) = derived_in(&cache, b"secret-2", b"salt", 64);
        assert!(fresh && a.client != c.client);
        for i in 0..CACHE_MAX as u32 {
            derived_in(&cache, b"secret-3", b"salt", 100 + i);
        }
        assert_eq!(cache.lock().unwrap().len(), CACHE_MAX);
    }

    #[test]
    fn a_server_nonce_that_does_not_extend_ours_is_refused() {
        let (mut s, first) = Scram::start();
        let first = String::from_utf8(first).unwrap();
        assert!(first.starts_with("n,,n=,r=") && !first[8..].contains(','));
        let e = s
            .answer(b"r=someone-else,s=c2FsdA==,i=4096", b"pw", true)
            .unwrap_err();
        assert!(e.contains("nonce"), "{e}");
    }
}
