#!/usr/bin/env python3
"""Client-certificate vectors for mTLS, made with Python's `cryptography` (independent of
the Rust code): self-signed certificates and the did:key each one's key must map to.
Re-run to regenerate certs.json:
    python3 crates/uamp/tests/data/make_certs.py > crates/uamp/tests/data/certs.json
"""
import base64, datetime, hashlib, json
from cryptography import x509
from cryptography.x509.oid import NameOID
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, ec, rsa

B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

def b58(data):
    n = int.from_bytes(data, "big")
    out = ""
    while n:
        n, r = divmod(n, 58)
        out = B58[r] + out
    return "1" * (len(data) - len(data.lstrip(b"\0"))) + out

def cert(key, cn):
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    t = datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc)
    b = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
         .serial_number(int.from_bytes(hashlib.sha256(cn.encode()).digest()[:8], "big"))
         .not_valid_before(t).not_valid_after(t + datetime.timedelta(days=3650)))
    algo = None if isinstance(key, ed25519.Ed25519PrivateKey) else hashes.SHA256()
    return base64.b64encode(b.sign(key, algo).public_bytes(serialization.Encoding.DER)).decode()

ed = ed25519.Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"mtls-ed25519").digest())
ed_raw = ed.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
p = ec.derive_private_key(int.from_bytes(hashlib.sha256(b"mtls-p256").digest(), "big") % (2**255), ec.SECP256R1())
p_comp = p.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.CompressedPoint)
p384 = ec.derive_private_key(12345678901234567890, ec.SECP384R1())
r = rsa.generate_private_key(public_exponent=65537, key_size=2048)

print(json.dumps({
    "generator": "python cryptography " + __import__("cryptography").__version__ + " (make_certs.py)",
    "certs": [
        {"name": "ed25519", "der_b64": cert(ed, "agent ed25519"), "did": "did:key:z" + b58(b"\xed\x01" + ed_raw)},
        {"name": "p256", "der_b64": cert(p, "agent p256"), "did": "did:key:z" + b58(b"\x80\x24" + p_comp)},
        {"name": "p384", "der_b64": cert(p384, "agent p384"), "error": "P-256"},
        {"name": "rsa", "der_b64": cert(r, "agent rsa"), "error": "neither Ed25519 nor P-256"},
        {"name": "not a certificate", "der_b64": base64.b64encode(b"\x30\x03\x02\x01\x00").decode(), "error": "not an X.509 certificate"},
    ],
}, indent=1))
