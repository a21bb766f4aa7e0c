#!/usr/bin/env python3
"""UAMP signature vectors from an implementation independent of Gatehouse.

Written with Python's `cryptography` only (its own base64url, base58 and canonical JSON
below, nothing shared with the Rust code). Re-run to regenerate vectors.json:
    python3 crates/uamp/tests/data/make_vectors.py > crates/uamp/tests/data/vectors.json
Keys are derived from fixed seeds so the file is stable apart from ES256's random nonces.
"""
import base64, hashlib, json, sys
from cryptography.hazmat.primitives.asymmetric import ed25519, ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.hazmat.primitives import hashes, serialization

B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

def b58(data):
    n = int.from_bytes(data, "big")
    out = ""
    while n:
        n, r = divmod(n, 58)
        out = B58[r] + out
    return "1" * (len(data) - len(data.lstrip(b"\0"))) + out

def b64u(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()

def canonical(env, ensure_ascii=False):
    body = {k: v for k, v in env.items() if k != "sig"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=ensure_ascii).encode()

def ed_key(seed):
    k = ed25519.Ed25519PrivateKey.from_private_bytes(hashlib.sha256(seed).digest())
    raw = k.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return k, "did:key:z" + b58(b"\xed\x01" + raw), {"kty": "OKP", "crv": "Ed25519", "x": b64u(raw)}

def p256_key(seed):
    k = ec.derive_private_key(int.from_bytes(hashlib.sha256(seed).digest(), "big") % (2**256 - 2**224), ec.SECP256R1())
    pub = k.public_key()
    comp = pub.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.CompressedPoint)
    nums = pub.public_numbers()
    jwk = {"kty": "EC", "crv": "P-256", "x": b64u(nums.x.to_bytes(32, "big")), "y": b64u(nums.y.to_bytes(32, "big"))}
    return k, "did:key:z" + b58(b"\x80\x24" + comp), jwk

def jws(alg, key, kid, payload, detached=True):
    header = b64u(json.dumps({"alg": alg, "kid": kid}, separators=(",", ":")).encode())
    inp = (header + "." + b64u(payload)).encode()
    if alg == "EdDSA" or isinstance(key, ed25519.Ed25519PrivateKey):
        sig = key.sign(inp)
    else:
        r, s = decode_dss_signature(key.sign(inp, ec.ECDSA(hashes.SHA256())))
        sig = r.to_bytes(32, "big") + s.to_bytes(32, "big")
    return header + "." + ("" if detached else b64u(payload)) + "." + b64u(sig)

def envelope(frm, **extra):
    env = {
        "id": "urn:uuid:6f1b1f0e-8a43-4c59-9d3e-2b7c1c3e9a10",
        "ts": "2026-11-22T10:00:00Z",
        "from": frm,
        "to": ["did:web:gatehouse.example"],
        "intent": "ask",
        "body": {"type": "text/plain", "content": "2+2"},
    }
    env.update(extra)
    return env

def signed(env, alg, key, kid, payload_fn=None, ascii=False):
    digest = hashlib.sha256(canonical(env, ascii)).hexdigest()
    payload = payload_fn(digest) if payload_fn else json.dumps({"sha256": digest}, separators=(",", ":")).encode()
    out = dict(env)
    out["sig"] = jws(alg, key, kid, payload)
    return out, digest

vectors = []
ed, ed_did, ed_jwk = ed_key(b"gatehouse-uamp-vector-ed25519")
p, p_did, p_jwk = p256_key(b"gatehouse-uamp-vector-p256")
ed_kid = ed_did + "#" + ed_did[len("did:key:"):]
p_kid = p_did + "#" + p_did[len("did:key:"):]

def add(name, env, expect, digest=None, **meta):
    vectors.append(dict(name=name, envelope=env, expect=expect, canonical_sha256=digest, **meta))

e, d = signed(envelope(ed_did), "EdDSA", ed, ed_kid); add("eddsa_did_key", e, "valid", d)
e, d = signed(envelope(p_did), "ES256", p, p_kid); add("es256_did_key", e, "valid", d)
e, d = signed(envelope(ed_did, stream_id="str-42", delta_window=8, reply_to="6f1b1f0e-8a43-4c59-9d3e-2b7c1c3e9a11",
                       context=[{"id": "urn:uuid:6f1b1f0e-8a43-4c59-9d3e-2b7c1c3e9a12", "hash": "sha256:" + "0" * 64}],
                       ext={"x-trace": "b3:abc", "nested": {"z": 1, "a": [1.5, -0, 1e3]}}), "EdDSA", ed, ed_kid)
add("eddsa_all_fields_nested_ext", e, "valid", d)
e, d = signed(envelope(ed_did, body={"type": "text/markdown", "content": "# Zeichne mir ein Schaf \u2014 \U0001F411 \u00e9"}), "EdDSA", ed, ed_kid)
add("eddsa_non_ascii_utf8", e, "valid", d)
e, d = signed(envelope(p_did, body={"type": "text/plain", "content": "caf\u00e9"}), "ES256", p, p_kid, ascii=True)
add("es256_non_ascii_signed_ascii_escaped", e, "valid", d, note="canonical JSON written with Python's default ensure_ascii=True")
e, d = signed(envelope(ed_did), "EdDSA", ed, ed_kid, payload_fn=lambda h: json.dumps({"sha256": h}).encode())
add("eddsa_payload_default_separators", e, "valid", d, note='JWS payload written as json.dumps({"sha256": h}) with a space')
# did:web sender: the key is found through the DID document the user's inbox fetched.
web_doc = {"id": "did:web:agent.example", "verificationMethod": [
    {"id": "#key-1", "type": "JsonWebKey2020", "controller": "did:web:agent.example", "publicKeyJwk": p_jwk},
    {"id": "did:web:agent.example#key-2", "type": "JsonWebKey2020", "controller": "did:web:agent.example", "publicKeyJwk": ed_jwk}]}
e, d = signed(envelope("did:web:agent.example"), "ES256", p, "did:web:agent.example#key-1"); add("es256_did_web", e, "valid", d, did_document=web_doc)
e, d = signed(envelope("did:web:agent.example"), "EdDSA", ed, "did:web:agent.example#key-2"); add("eddsa_did_web", e, "valid", d, did_document=web_doc)

# Failures
e, d = signed(envelope(ed_did), "EdDSA", ed, ed_kid); e["body"] = {"type": "text/plain", "content": "2+3"}
add("eddsa_body_changed_after_signing", e, "invalid_signature")
e, d = signed(envelope(p_did), "ES256", p, p_kid); e["to"] = ["did:web:someone.else"]
add("es256_recipient_changed_after_signing", e, "invalid_signature")
e, d = signed(envelope(ed_did), "EdDSA", ed, ed_kid); e["ext"] = {"added": True}
add("eddsa_member_added_after_signing", e, "invalid_signature")
e, d = signed(envelope(p_did), "EdDSA", ed, p_kid)
add("eddsa_signature_under_p256_kid", e, "invalid_signature")
e, d = signed(envelope(ed_did), "EdDSA", ed, ed_kid, payload_fn=lambda h: json.dumps({"sha256": h.upper()}, separators=(",", ":")).encode())
add("eddsa_payload_upper_case_hex", e, "invalid_signature")
e, d = signed(envelope(ed_did), "EdDSA", ed, ed_kid, payload_fn=lambda h: hashlib.sha256(canonical(envelope(ed_did))).digest())
add("eddsa_payload_raw_digest", e, "invalid_signature")
e, d = signed(envelope(p_did), "ES256", p, p_kid)
add("es256_from_is_a_different_did", dict(e, **{"from": ed_did}), "kid_mismatch")
e = envelope(ed_did); e["sig"] = b64u(json.dumps({"alg": "HS256", "kid": ed_kid}).encode()) + ".." + b64u(b"\0" * 32)
add("hs256_not_allowed", e, "invalid_envelope", field="/sig")
e, d = signed(envelope(ed_did), "EdDSA", ed, ed_kid); e["sig"] = e["sig"].split(".")[0] + "." + b64u(b"x") + "." + e["sig"].split(".")[2]
add("attached_payload_not_detached", e, "invalid_envelope", field="/sig")

json.dump({
    "generator": "crates/uamp/tests/data/make_vectors.py (Python cryptography " + __import__("cryptography").__version__ + ")",
    "keys": {"ed25519": {"did": ed_did, "jwk": ed_jwk}, "p256": {"did": p_did, "jwk": p_jwk}},
    "vectors": vectors,
}, sys.stdout, indent=1, ensure_ascii=False)
print()
