"""Python client of the prepaid messaging API (standard library only, Python 3.8+).

Every call unwraps the ``{success, data}`` envelope and returns ``data`` as plain dicts and lists;
every error answer raises a MessagingError subclass carrying the service's ``code``, the HTTP
``status`` and the ``request_id``. ``verify_webhook`` checks a delivery's Standard Webhooks signature.
The operations and their fields are those of the service's OpenAPI document (/docs/json).
"""

import base64
import hashlib
import hmac
import json
import time
import urllib.error
import urllib.parse
import urllib.request

__all__ = [
    "MessagingClient",
    "MessagingError",
    "ValidationError",
    "AuthenticationError",
    "BalanceError",
    "NotFoundError",
    "ConflictError",
    "RateLimitError",
    "ProviderError",
    "ServiceError",
    "WebhookVerificationError",
    "verify_webhook",
]


class MessagingError(Exception):
    """An error answer: ``code`` is the service's (VALIDATION_ERROR, INSUFFICIENT_BALANCE, ...)."""

    def __init__(self, message, status, code, request_id=None, body=None, retry_after=None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.request_id = request_id
        self.body = body or {}
        self.retry_after = retry_after


class ValidationError(MessagingError):
    """400 or 422: the request is malformed or a value is not acceptable (the message names the field)."""


class AuthenticationError(MessagingError):
    """401: the API key is missing, unknown or deactivated."""


class BalanceError(MessagingError):
    """402: the balance cannot pay (INSUFFICIENT_BALANCE) or the key's daily spend cap is reached."""


class NotFoundError(MessagingError):
    """404: no such thing in this account."""


class ConflictError(MessagingError):
    """409: a duplicate, or the same Idempotency-Key still in flight (repeat later)."""


class RateLimitError(MessagingError):
    """429: slow down; ``retry_after`` in seconds when the service said."""


class ProviderError(MessagingError):
    """502: the messaging provider refused or failed (nothing charged)."""


class ServiceError(MessagingError):
    """Any other status (500, 503, ...)."""


_ERROR_CLASSES = {
    400: ValidationError,
    401: AuthenticationError,
    402: BalanceError,
    404: NotFoundError,
    409: ConflictError,
    422: ValidationError,
    429: RateLimitError,
    502: ProviderError,
}


class MessagingClient:
    """``base_url``: the service's root, e.g. ``https://messaging.example.com`` (paths carry /api/v1)."""

    def __init__(self, base_url, api_key, timeout=30):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout

    def balance(self):
        return self._request("GET", "/api/v1/balance")

    def send(self, message, idempotency_key=None):
        """One message (a dict: ``to`` and ``body``, or ``template_id`` and ``variables``, ...).

        Pass an ``idempotency_key`` to make a retry safe: a repeat within 24 h replays the first
        answer and is charged once. Answers ``status: "sent"`` (with ``message_id``) or ``"queued"``.
        """
        return self._request("POST", "/api/v1/messages/send", body=message, idempotency_key=idempotency_key)

    def bulk(self, messages, idempotency_key=None, **options):
        """Up to 1000 messages; entries fail on their own (``results[i]["code"]``)."""
        body = dict(options, messages=messages)
        return self._request("POST", "/api/v1/messages/bulk", body=body, idempotency_key=idempotency_key)

    def quote(self, request):
        """What a send or bulk body would cost now; nothing is charged, sent or reserved."""
        return self._request("POST", "/api/v1/messages/quote", body=request)

    def list_messages(self, limit=None, offset=None, **filters):
        """One page ``{items, total, limit, offset}``, newest first; ``offset`` counts records.

        Filters: ``status``, ``date_from``, ``date_to`` (``YYYY-MM-DD HH:MM:SS``), ``sender_id``.
        """
        return self._request("GET", "/api/v1/messages", query=dict(filters, limit=limit, offset=offset))

    def iter_messages(self, page_size=200, **filters):
        """Every message matching the filters, page after page."""
        offset = 0
        while True:
            page = self.list_messages(limit=page_size, offset=offset, **filters)
            for item in page["items"]:
                yield item
            offset += len(page["items"])
            if not page["items"] or offset >= page["total"]:
                return

    def message(self, message_sid):
        return self._request("GET", "/api/v1/messages/{message_sid}", path={"message_sid": message_sid})

    def list_templates(self, limit=None, offset=None, **filters):
        """The WhatsApp templates the account may send; filters ``status``, ``name``, ``language``."""
        return self._request("GET", "/api/v1/templates", query=dict(filters, limit=limit, offset=offset))

    def template(self, template_id):
        return self._request("GET", "/api/v1/templates/{id}", path={"id": template_id})

    def _request(self, method, template, path=None, query=None, body=None, idempotency_key=None):
        url = self.base_url + template.format(**{k: urllib.parse.quote(str(v), safe="") for k, v in (path or {}).items()})
        query = {k: v for k, v in (query or {}).items() if v is not None}
        if query:
            url += "?" + urllib.parse.urlencode(query)
        headers = {"Authorization": "Bearer " + self.api_key, "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if idempotency_key:
            headers["Idempotency-Key"] = idempotency_key
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return json.loads(response.read().decode("utf-8"))["data"]
        except urllib.error.HTTPError as answer:
            raise _error_of(answer) from None


def _error_of(answer):
    try:
        envelope = json.loads(answer.read().decode("utf-8"))
    except ValueError:
        envelope = {}
    if not isinstance(envelope, dict):
        envelope = {}
    retry_after = answer.headers.get("Retry-After")
    error_class = _ERROR_CLASSES.get(answer.code, ServiceError)
    return error_class(
        envelope.get("error") or "HTTP %d" % answer.code,
        answer.code,
        envelope.get("code") or "HTTP_ERROR",
        envelope.get("request_id") or answer.headers.get("x-request-id"),
        envelope,
        int(retry_after) if retry_after and retry_after.isdigit() else None,
    )


class WebhookVerificationError(Exception):
    """A delivery whose signature, id or timestamp does not check out: answer 4xx, do not act on it."""


def verify_webhook(secret, headers, body, tolerance_seconds=300, now=None):
    """Checks a webhook delivery (Standard Webhooks) and returns the parsed event.

    ``webhook-signature`` holds ``v1,`` + base64 HMAC-SHA256 of ``webhook-id.webhook-timestamp.body``
    keyed with the secret's bytes (``whsec_`` + base64, from POST /webhook); the timestamp must be
    within ``tolerance_seconds`` of now. ``headers``: a mapping (any case); ``body``: the raw body
    (bytes or str) exactly as received. Raises WebhookVerificationError otherwise.
    """
    lower = {str(k).lower(): v for k, v in dict(headers).items()}
    webhook_id = lower.get("webhook-id")
    timestamp = lower.get("webhook-timestamp")
    signatures = lower.get("webhook-signature")
    if not webhook_id or not timestamp or not signatures:
        raise WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature")
    if not timestamp.isdigit():
        raise WebhookVerificationError("webhook-timestamp is not a number of seconds")
    now = int(time.time() if now is None else now)
    if abs(now - int(timestamp)) > tolerance_seconds:
        raise WebhookVerificationError("webhook-timestamp too old or too new")
    raw = body.encode("utf-8") if isinstance(body, str) else body
    key = base64.b64decode(secret[len("whsec_"):] if secret.startswith("whsec_") else secret)
    expected = hmac.new(key, webhook_id.encode() + b"." + timestamp.encode() + b"." + raw, hashlib.sha256).digest()
    # The header may list several signatures (a secret being rotated), space-separated.
    for entry in signatures.split(" "):
        version, _, signature = entry.partition(",")
        if version != "v1":
            continue
        try:
            given = base64.b64decode(signature, validate=True)
        except ValueError:
            continue
        if hmac.compare_digest(given, expected):
            return json.loads(raw.decode("utf-8"))
    raise WebhookVerificationError("no valid v1 signature")
