"""Makes tests/data/epp-reference-1.1/envelopes.json with the EPP reference library
(elliptic1/external-prompt-protocol, commit 3b83997, installed from a local clone in a
throwaway virtualenv; none of its code is in this repository). Run:
    python make.py > envelopes.json
Keys are fixed test seeds, timestamps fixed, so the signed bytes are reproducible except
for the random nonces and ids (which are recorded as produced)."""

import base64
import json
import os
import subprocess
import tempfile
import uuid

from epp.capabilities import Capabilities, FilesystemCapabilities, NetworkCapabilities
from epp.crypto.integrity import Integrity, create_integrity, verify_integrity
from epp.crypto.keys import PublicKey
from epp.crypto.signing import verify_envelope_signature
from epp.crypto.keys import KeyPair
from epp.crypto.signing import sign_envelope
from epp.models import Envelope, Payload
from epp.payment import PaymentRequest, StakeReference
from epp.provenance import Provenance, add_attestation, verify_provenance_chain

SEEDS = {"sender": 1, "recipient": 2, "author": 3, "auditor": 4}
KEYS = {name: KeyPair.from_private_bytes(bytes([n]) * 32) for name, n in SEEDS.items()}
# Valid until 2099, like the shared vectors, so the inbox tests can post them as they are.
TS, EXP = "2026-06-01T00:00:00Z", "2099-01-01T00:00:00Z"


def sign_func(kp):
    return lambda data: base64.b64encode(kp.private_key.sign(data)).decode()


def envelope(name, prompt, **extra):
    payload = Payload(prompt=prompt, payload_type="order-update").model_dump(exclude_none=True)
    sender, recipient = KEYS["sender"], KEYS["recipient"]
    e = {
        "version": "1",
        "envelope_id": str(uuid.uuid4()),
        "sender": sender.public_key_hex(),
        "recipient": recipient.public_key_hex(),
        "timestamp": TS,
        "expires_at": EXP,
        "nonce": base64.b64encode(uuid.uuid4().bytes + uuid.uuid4().bytes).decode(),
        "scope": "orders",
        "payload": payload,
    }
    e["signature"] = sign_envelope(sender, e["version"], e["envelope_id"], e["sender"], e["recipient"], e["timestamp"], e["expires_at"], e["nonce"], e["scope"], payload)
    for k, v in extra.items():
        e[k] = v(payload) if callable(v) else v
    Envelope(**e)  # the reference's own model accepts it
    return {"name": name, "envelope": e, "reference_says": verdicts(e)}


def verify_func(identity, data, signature):
    try:
        PublicKey.from_hex(identity).public_key.verify(base64.b64decode(signature), data)
        return True
    except Exception:
        return False


def verdicts(e):
    """What the reference library itself says of each part."""
    sig = verify_envelope_signature(
        PublicKey.from_hex(e["sender"]), e["signature"], e["version"], e["envelope_id"], e["sender"], e["recipient"], e["timestamp"], e["expires_at"], e["nonce"], e["scope"],
        Payload(**e["payload"]).model_dump(exclude_none=True), conversation_id=e.get("conversation_id"), in_reply_to=e.get("in_reply_to"),
    )
    out = {"signature": sig}
    if "integrity" in e:
        out["integrity"] = verify_integrity(e["payload"], Integrity(**e["integrity"]))
    if "provenance" in e:
        ok, errors = verify_provenance_chain(Provenance(**e["provenance"]), verify_func)
        out["provenance"] = ok
        out["provenance_errors"] = errors
    return out


def provenance(payload, break_it=False):
    content = create_integrity(payload).hash
    p = Provenance(content_hash=content)
    p = add_attestation(p, "author", KEYS["author"].public_key_hex(), sign_func(KEYS["author"]), statement="I wrote this order update")
    p = add_attestation(p, "auditor", KEYS["auditor"].public_key_hex(), sign_func(KEYS["auditor"]), statement="Reviewed: no instructions to the assistant")
    d = p.model_dump(exclude_none=True)
    if break_it:
        d["entries"][1]["statement"] = "Reviewed: all fine (altered after signing)"
    return d


def by_eppctl(name, prompt):
    """An envelope from the reference's own command line (v1 fields only: eppctl cannot
    add the v1.1 ones), valid until about 2099."""
    with tempfile.TemporaryDirectory() as d:
        key = os.path.join(d, "sender.pem")
        with open(key, "wb") as f:
            f.write(KEYS["sender"].private_key_pem())
        ctx = os.path.join(d, "context.json")
        with open(ctx, "w") as f:
            json.dump({"order": 1042, "total": 19.9, "note": "livraison à domicile"}, f)
        out = subprocess.run(
            ["eppctl", "envelope", "create", "-k", key, "-r", KEYS["recipient"].public_key_hex(), "-s", "orders", "-p", prompt,
             "-c", ctx, "-e", "38000000", "--payload-type", "order-update", "--new-conversation"],
            check=True, capture_output=True, text=True,
        ).stdout
    e = json.loads(out[out.index("{"):])
    return {"name": name, "envelope": e, "reference_says": verdicts(e)}


caps = Capabilities(
    filesystem=FilesystemCapabilities(read=["~/Documents/orders"], write=[]),
    network=NetworkCapabilities(domains=["shop.example"], protocols=["https"], ports=[443]),
    actions=["notify", "create_calendar_event"],
    data_access=["contacts"],
).model_dump(exclude_none=True)

out = {
    "made_with": "elliptic1/external-prompt-protocol 3b83997 (epp library: sign_envelope, create_integrity, add_attestation, Capabilities, PaymentRequest, StakeReference)",
    "now": "2026-12-01T00:00:00Z",
    "keys": {name: {"seed_hex": (bytes([n]) * 32).hex(), "public_hex": KEYS[name].public_key_hex()} for name, n in SEEDS.items()},
    "envelopes": [
        by_eppctl("eppctl", "Your order 1042 has shipped (made by eppctl)."),
        envelope("plain", "Your order 1042 has shipped."),
        envelope("integrity", "Your order 1042 has shipped.", integrity=lambda p: create_integrity(p).model_dump()),
        envelope("integrity-sha512", "Your order 1042 has shipped.", integrity=lambda p: create_integrity(p, "sha512").model_dump()),
        envelope("integrity-mismatch", "Your order 1042 has shipped.", integrity=lambda p: {**create_integrity(p).model_dump(), "hash": create_integrity({**p, "prompt": "Refund approved."}).hash}),
        envelope("unicode-integrity", "Votre commande n°1042 est expédiée — merci ✓", integrity=lambda p: create_integrity(p).model_dump()),
        envelope("capabilities", "Add the delivery to my calendar.", capabilities=caps),
        envelope("provenance", "Your order 1042 has shipped.", integrity=lambda p: create_integrity(p).model_dump(), provenance=provenance),
        envelope("provenance-broken", "Your order 1042 has shipped.", provenance=lambda p: provenance(p, break_it=True)),
        envelope(
            "payment-stake",
            "Your order 1042 has shipped.",
            payment=PaymentRequest(required=True, amount="0.50", currency="USDC", recipient="8xQ1exampleRecipient", chain="solana", memo="order 1042").model_dump(exclude_none=True),
            stake=StakeReference(contract="StakeProgram1111", chain="solana", amount="100", currency="USDC", staker=KEYS["sender"].public_key_hex()).model_dump(exclude_none=True),
        ),
    ],
}
print(json.dumps(out, indent=2, ensure_ascii=False))
