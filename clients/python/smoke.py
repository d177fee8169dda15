"""The client's own check against a running service, run by tests/clients/clients.outer.test.ts.

Reads MESSAGING_BASE_URL, MESSAGING_API_KEY and a webhook test vector (WEBHOOK_SECRET, WEBHOOK_ID,
WEBHOOK_TIMESTAMP, WEBHOOK_BODY, WEBHOOK_SIGNATURE) from the environment and prints one JSON object
of what it saw; the test judges it.
"""

import base64
import json
import os

from prepaid_messaging import MessagingClient, MessagingError, ValidationError, WebhookVerificationError, verify_webhook

env = os.environ
client = MessagingClient(env["MESSAGING_BASE_URL"], env["MESSAGING_API_KEY"])
out = {}

out["balance_before"] = client.balance()["wa_balance"]
sent = client.send({"to": "081234567890", "body": "hello from Python"})
out["sent"] = {"status": sent["status"], "cost": sent["cost"]}
out["quote_total"] = client.quote({"to": "081234567891", "body": "what would this cost?"})["total_cost"]

messages = [{"to": to, "body": "bulk from Python"} for to in ("081234567892", "081234567893", "081234567894")]
out["bulk_first"] = client.bulk(messages, idempotency_key="py-bulk-1")
out["bulk_repeat"] = client.bulk(messages, idempotency_key="py-bulk-1")
out["balance_after"] = client.balance()["wa_balance"]

first = client.list_messages(limit=2, offset=0)
second = client.list_messages(limit=2, offset=2)
out["paging"] = {
    "total": first["total"],
    "first": [m["id"] for m in first["items"]],
    "second": [m["id"] for m in second["items"]],
    "walked": [m["id"] for m in client.iter_messages(page_size=2)],
}

try:
    client.send({"to": "12345", "body": "not a phone"})
    out["error"] = None
except MessagingError as error:
    out["error"] = {
        "validation": isinstance(error, ValidationError),
        "status": error.status,
        "code": error.code,
        "request_id": error.request_id,
    }

out["templates_total"] = client.list_templates(limit=10)["total"]

headers = {"Webhook-Id": env["WEBHOOK_ID"], "Webhook-Timestamp": env["WEBHOOK_TIMESTAMP"], "Webhook-Signature": env["WEBHOOK_SIGNATURE"]}
body = env["WEBHOOK_BODY"]


def refused(secret, text, now=None):
    try:
        verify_webhook(secret, headers, text, now=now)
        return False
    except WebhookVerificationError:
        return True


out["webhook"] = {
    "event": verify_webhook(env["WEBHOOK_SECRET"], headers, body.encode("utf-8"))["event"],
    "forged_body_refused": refused(env["WEBHOOK_SECRET"], body + " "),
    "other_secret_refused": refused("whsec_" + base64.b64encode(b"not the secret").decode(), body),
    "stale_refused": refused(env["WEBHOOK_SECRET"], body, now=int(env["WEBHOOK_TIMESTAMP"]) + 301),
}

print(json.dumps(out))
