#!/usr/bin/env python3
"""IntentWeb attribution vectors from an implementation independent of Gatehouse.

Python's `cryptography` and `json` only. For objects of strings, RFC 8785 (JCS) is
json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False) in UTF-8.
Re-run: python3 crates/intentweb/tests/data/make_vectors.py > crates/intentweb/tests/data/vectors.json
"""
import base64, hashlib, json
from cryptography.hazmat.primitives.asymmetric import ed25519
from cryptography.hazmat.primitives import serialization

B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

def b58(data):
    n = int.from_bytes(data, "big")
    out = ""
    while n:
        n, r = divmod(n, 58)
        out = B58[r] + out
    return "1" * (len(data) - len(data.lstrip(b"\0"))) + out

def jcs(o):
    return json.dumps(o, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

def b64u(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()

key = ed25519.Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"intentweb-agent").digest())
raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
kid = "did:key:z" + b58(b"\xed\x01" + raw)

def envelope(flow, iid, initial, message, nonce, ts):
    qh = hashlib.sha256(jcs({"flow_type": "intent_request", "interaction_id": iid, "message": initial, "protocol_version": "1.0"})).hexdigest()
    signed = jcs({"actor_id": kid, "actor_type": "ai_agent", "attribution_timestamp": ts, "chain_timestamp": ts,
                  "flow_type": flow, "interaction_id": iid, "message_sha256": hashlib.sha256(message.encode()).hexdigest(),
                  "nonce": nonce, "query_hash": qh})
    env = {"protocol_version": "1.0", "flow_type": flow, "message": message, "interaction_id": iid,
           "attribution": {"query_hash": qh, "nonce": nonce, "timestamp": ts,
                           "chain": [{"actor_type": "ai_agent", "actor_id": kid, "timestamp": ts,
                                      "signature": b64u(key.sign(signed)), "alg": "EdDSA", "kid": kid}]},
           "locale": "fr-FR", "timestamp": ts}
    return env, signed.decode()

initial = "Réserve une table pour 2 sous le nom Zoë Müller, le 15 octobre à 19h — « fenêtre » si possible 🍝"
e1, s1 = envelope("intent_request", "conv-zoë-1", initial, initial, "n-1", "2025-10-15T19:23:41Z")
e2, s2 = envelope("information_response", "conv-zoë-1", initial, "Line\nbreak \"quoted\" \\ tab\t end", "n-2", "2025-10-15T19:24:00Z")
tampered = json.loads(json.dumps(e2))
tampered["message"] = "changed"
print(json.dumps({"generator": "python cryptography + json (make_vectors.py)", "kid": kid, "vectors": [
    {"name": "intent_request with non-ASCII text", "envelope": e1, "signed_bytes": s1, "valid": True},
    {"name": "information_response with escapes", "envelope": e2, "signed_bytes": s2, "valid": True},
    {"name": "message changed after signing", "envelope": tampered, "signed_bytes": None, "valid": False},
]}, ensure_ascii=False, indent=1))
