#!/usr/bin/env python3
"""IntentWeb attribution vectors from an implementation independent of Gatehouse.

Python's `cryptography` and `json` only. For objects of strings, integers, booleans and
short decimals (0.95), RFC 8785 (JCS) is
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

def query_hash(iid, initial):
    return hashlib.sha256(jcs({"flow_type": "intent_request", "interaction_id": iid, "message": initial, "protocol_version": "1.0"})).hexdigest()

def first_scheme(flow, iid, initial, message, nonce, ts):
    """Gatehouse's first scheme: the message's hash, the ids, the nonce and timestamps."""
    qh = query_hash(iid, initial)
    signed = jcs({"actor_id": kid, "actor_type": "ai_agent", "attribution_timestamp": ts, "chain_timestamp": ts,
                  "flow_type": flow, "interaction_id": iid, "message_sha256": hashlib.sha256(message.encode()).hexdigest(),
                  "nonce": nonce, "query_hash": qh})
    env = {"protocol_version": "1.0", "flow_type": flow, "message": message, "interaction_id": iid,
           "attribution": {"query_hash": qh, "nonce": nonce, "timestamp": ts,
                           "chain": [{"actor_type": "ai_agent", "actor_id": kid, "timestamp": ts,
                                      "signature": b64u(key.sign(signed)), "alg": "EdDSA", "kid": kid}]},
           "locale": "fr-FR", "timestamp": ts}
    return env, signed.decode()

def whole_bytes(env, index):
    """The current scheme: the whole envelope, the chain cut after entry `index`, that
    entry's signature member left out."""
    e = json.loads(json.dumps(env))
    e["attribution"]["chain"] = e["attribution"]["chain"][: index + 1]
    del e["attribution"]["chain"][index]["signature"]
    return jcs(e)

def sign_whole(env, signer, signer_kid, actor_type, ts):
    env["attribution"]["chain"].append({"actor_type": actor_type, "actor_id": signer_kid, "timestamp": ts,
                                        "signature": "", "alg": "EdDSA", "kid": signer_kid})
    index = len(env["attribution"]["chain"]) - 1
    signed = whole_bytes(env, index)
    env["attribution"]["chain"][index]["signature"] = b64u(signer.sign(signed))
    return index, signed.decode()

site = ed25519.Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"intentweb-site").digest())
site_raw = site.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
site_kid = "did:key:z" + b58(b"\xed\x01" + site_raw)

initial = "Réserve une table pour 2 sous le nom Zoë Müller, le 15 octobre à 19h — « fenêtre » si possible 🍝"
iid = "conv-zoë-1"
e1, s1 = first_scheme("intent_request", iid, initial, initial, "n-1", "2025-10-15T19:23:41Z")
e2, s2 = first_scheme("information_response", iid, initial, "Line\nbreak \"quoted\" \\ tab\t end", "n-2", "2025-10-15T19:24:00Z")
tampered = json.loads(json.dumps(e2))
tampered["message"] = "changed"

# The current scheme: the user's intent, signed whole by the agent.
w1 = {"protocol_version": "1.0", "flow_type": "intent_request", "message": initial, "interaction_id": iid,
      "attribution": {"query_hash": query_hash(iid, initial), "nonce": "n-3", "timestamp": "2025-10-15T19:25:00Z", "chain": []},
      "locale": "fr-FR", "timestamp": "2025-10-15T19:25:00Z"}
i1, ws1 = sign_whole(w1, key, kid, "ai_agent", "2025-10-15T19:25:00Z")
# The site's outcome: the agent's entry carried over, then the site's own over everything.
w2 = {"protocol_version": "1.0", "flow_type": "execution_result", "message": "Table réservée ✔ — 2 personnes, 19h",
      "interaction_id": iid,
      "attribution": {"query_hash": query_hash(iid, initial), "nonce": "s-1", "timestamp": "2025-10-15T19:25:02Z",
                      "chain": json.loads(json.dumps(w1["attribution"]["chain"]))},
      "status": "confirmed", "external_id": "RES-2025-1015", "required_information": [],
      "collected_information": {"name": "Zoë Müller", "party": 2, "window": True},
      "explicability": [{"actor": "intent_site", "interpretation": "Dinner for two", "confidence": 0.95}],
      "locale": "fr-FR", "timestamp": "2025-10-15T19:25:02Z", "x-site-note": "fields Gatehouse does not read are signed too"}
i2, ws2 = sign_whole(w2, site, site_kid, "intent_site", "2025-10-15T19:25:02Z")
forged = json.loads(json.dumps(w2))
forged["external_id"] = "RES-FORGED"
forged_status = json.loads(json.dumps(w2))
forged_status["status"] = "cancelled"
forged_needs = json.loads(json.dumps(w2))
forged_needs["required_information"] = ["Card number"]

print(json.dumps({"generator": "python cryptography + json (make_vectors.py)", "kid": kid, "site_kid": site_kid, "vectors": [
    {"name": "first scheme: intent_request with non-ASCII text", "envelope": e1, "index": 0, "signed_bytes": s1, "valid": True, "covers": "message_only"},
    {"name": "first scheme: information_response with escapes", "envelope": e2, "index": 0, "signed_bytes": s2, "valid": True, "covers": "message_only"},
    {"name": "first scheme: message changed after signing", "envelope": tampered, "index": 0, "signed_bytes": None, "valid": False, "covers": None},
    {"name": "whole envelope: intent_request", "envelope": w1, "index": i1, "signed_bytes": ws1, "valid": True, "covers": "whole"},
    {"name": "whole envelope: the site's outcome over the agent's entry", "envelope": w2, "index": i2, "signed_bytes": ws2, "valid": True, "covers": "whole"},
    {"name": "whole envelope: the agent's entry inside the site's answer", "envelope": w2, "index": 0, "signed_bytes": None, "valid": False, "covers": None},
    {"name": "whole envelope: external_id changed after signing", "envelope": forged, "index": i2, "signed_bytes": None, "valid": False, "covers": None},
    {"name": "whole envelope: status changed after signing", "envelope": forged_status, "index": i2, "signed_bytes": None, "valid": False, "covers": None},
    {"name": "whole envelope: required_information changed after signing", "envelope": forged_needs, "index": i2, "signed_bytes": None, "valid": False, "covers": None},
]}, ensure_ascii=False, indent=1))
