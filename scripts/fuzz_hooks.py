"""Schemathesis hooks for `npm run fuzz` (scripts/fuzz.mjs sets SCHEMATHESIS_HOOKS to this module).

Three things the generated traffic needs so that it reaches the logic (issue 20):

- Every request comes from its own client address. The gateway under test trusts 127.0.0.1 as
  a proxy (TRUSTED_PROXIES), so an X-Forwarded-For drawn per request is the caller's address:
  the failure throttle (docs/api.md) then limits each generated identity as it would a real
  caller, instead of one machine's address answering 429 to everything after 30 wrong secrets.
- The fuzzer's own admin client is never deleted or rewritten by a generated request. It
  authenticates every request; once a stateful sequence listed the clients and deleted it, every
  later answer was 401 and then 429. Such a request is sent for another client id instead, and
  so is one deleting the user that the hostile payloads below are given to.
- Every third right created carries one of the payloads that once answered 500 (issue 20,
  finding 3: keys a database treats specially, a NUL in a key, an operator inside an array), in
  an otherwise valid request for the seeded user and SKU, so that it reaches the store.
"""

import os
import random

import schemathesis

FUZZ_ADMIN = os.environ["FUZZ_ADMIN_ID"]
FUZZ_USER, FUZZ_SKU, FUZZ_GRANTOR = os.environ["FUZZ_RIGHT_OWNER"].split(":")
_addresses = random.Random(os.environ.get("FUZZ_SEED", "0"))
_rights_created = 0

HOSTILE_PAYLOADS = [
    {"$gt": 1},
    {"a.b": 1},
    {"_bsontype": "Code", "code": "x"},
    {"k\u0000ey": 1},
    [1, {"$in": []}],
    {"$where": "sleep(1000)", "nested": {"$ne": None, "x.y": [{"$regex": ".*"}]}},
    {"__proto__": {"admin": True}, "constructor": {"prototype": {"admin": True}}},
]


def _client_address() -> str:
    # Documentation ranges (RFC 5737, RFC 3849): addresses no real caller has.
    if _addresses.random() < 0.5:
        return f"198.51.100.{_addresses.randrange(1, 255)}"
    return f"2001:db8::{_addresses.randrange(1, 0xFFFF):x}"


@schemathesis.hook
def before_call(context, case, kwargs):
    case.headers = {**(case.headers or {}), "X-Forwarded-For": _client_address()}
    if (
        case.operation.path == "/admin/clients/{clientId}"
        and case.method.upper() in ("PUT", "DELETE")
        and (case.path_parameters or {}).get("clientId") == FUZZ_ADMIN
    ):
        case.path_parameters = {**case.path_parameters, "clientId": f"{FUZZ_ADMIN}-generated"}
    if (
        case.operation.path == "/id/users/{connectId}"
        and case.method.upper() == "DELETE"
        and (case.path_parameters or {}).get("connectId") == FUZZ_USER
    ):
        case.path_parameters = {**case.path_parameters, "connectId": f"{FUZZ_USER}-generated"}
    if case.operation.path == "/id/users/{connectId}/rights" and case.method.upper() == "POST":
        global _rights_created
        _rights_created += 1
        if _rights_created % 3 == 0:
            case.path_parameters = {"connectId": FUZZ_USER}
            # A generated Idempotency-Key may have been used for another body already (422).
            case.headers = {k: v for k, v in case.headers.items() if k.lower() != "idempotency-key"}
            case.body = {
                "sku": FUZZ_SKU,
                "grantorId": FUZZ_GRANTOR,
                "timeInterval": "2026-01-01T00:00:00Z/2027-01-01T00:00:00Z",
                "payload": HOSTILE_PAYLOADS[(_rights_created // 3) % len(HOSTILE_PAYLOADS)],
            }
