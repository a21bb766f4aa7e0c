//! The inbox's Ed25519 check decides what `verify_strict` decides, without its square root:
//! signatures that only the plain (lenient) check accepts are refused, and every other
//! signature gets the same verdict from both.

use curve25519_dalek::constants::{ED25519_BASEPOINT_POINT, EIGHT_TORSION};
use curve25519_dalek::{EdwardsPoint, Scalar};
use ed25519_dalek::{Signature, Signer, Verifier, VerifyingKey};
use gatehouse_epp::crypto::verify_signature;
use proptest::prelude::*;
use sha2::{Digest, Sha512};

fn challenge(r: &[u8; 32], a: &[u8; 32], msg: &[u8]) -> Scalar {
    let mut h = Sha512::new();
    h.update(r);
    h.update(a);
    h.update(msg);
    Scalar::from_bytes_mod_order_wide(&h.finalize().into())
}

fn signature(r: &[u8; 32], s: &Scalar) -> Signature {
    let mut bytes = [0u8; 64];
    bytes[..32].copy_from_slice(r);
    bytes[32..].copy_from_slice(s.as_bytes());
    Signature::from_bytes(&bytes)
}

/// A key of small order signs every message with R = identity and s = 0: anyone can forge
/// it. The plain check lets it through; the strict one and ours do not.
#[test]
fn a_small_order_key_forges_nothing() {
    for t in EIGHT_TORSION {
        let key = VerifyingKey::from_bytes(&t.compress().to_bytes()).unwrap();
        let forged = signature(&EdwardsPoint::default().compress().to_bytes(), &Scalar::ZERO);
        let msg = b"pay the forger";
        if key.verify(msg, &forged).is_ok() {
            assert!(key.verify_strict(msg, &forged).is_err());
        }
        assert!(!verify_signature(&key, msg, &forged), "a small-order key's forgery was accepted");
    }
    // The plain check really does accept the identity key's forgery: the test above can fail.
    let identity = VerifyingKey::from_bytes(&EdwardsPoint::default().compress().to_bytes()).unwrap();
    assert!(identity.verify(b"x", &signature(&EdwardsPoint::default().compress().to_bytes(), &Scalar::ZERO)).is_ok());
}

/// A good key with R = identity: the equation holds when s = k·a, so the plain check accepts
/// it, but R is of small order and the strict check refuses it. So do we.
#[test]
fn a_small_order_r_is_refused_even_when_the_equation_holds() {
    let a = Scalar::from_bytes_mod_order([7u8; 32]);
    let public = (ED25519_BASEPOINT_POINT * a).compress().to_bytes();
    let key = VerifyingKey::from_bytes(&public).unwrap();
    let r = EdwardsPoint::default().compress().to_bytes();
    let msg = b"an envelope";
    let sig = signature(&r, &(challenge(&r, &public, msg) * a));
    assert!(key.verify(msg, &sig).is_ok(), "the plain check accepts it (so this test can fail)");
    assert!(key.verify_strict(msg, &sig).is_err());
    assert!(!verify_signature(&key, msg, &sig));
}

fn signing_key(seed: [u8; 32]) -> ed25519_dalek::SigningKey {
    ed25519_dalek::SigningKey::from_bytes(&seed)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    /// Honest signatures, and the same signatures with one byte changed (in R, in s, in the
    /// message or in the key), get the same verdict from both checks.
    #[test]
    fn same_verdict_as_verify_strict(seed in any::<[u8; 32]>(), msg in proptest::collection::vec(any::<u8>(), 0..200),
                                     flip in 0usize..160, bit in 0u8..8, small_r in 0usize..9) {
        let sk = signing_key(seed);
        let mut sig = sk.sign(&msg).to_bytes();
        let mut msg = msg;
        let mut key = sk.verifying_key().to_bytes();
        match flip {
            0..64 => sig[flip] ^= 1 << bit,
            64..96 => key[flip - 64] ^= 1 << bit,
            96..128 if !msg.is_empty() => { let i = (flip - 96) % msg.len(); msg[i] ^= 1 << bit }
            _ => {}
        }
        // Now and then R is replaced by a small-order point's encoding.
        if small_r < 8 && flip % 5 == 0 {
            sig[..32].copy_from_slice(&EIGHT_TORSION[small_r].compress().to_bytes());
        }
        if let Ok(key) = VerifyingKey::from_bytes(&key) {
            let sig = Signature::from_bytes(&sig);
            prop_assert_eq!(verify_signature(&key, &msg, &sig), key.verify_strict(&msg, &sig).is_ok());
        }
    }
}
