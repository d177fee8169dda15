<?php
// The error answers of the service as exceptions: MessagingError carries the service's `code`, the
// HTTP status and the request id; a subclass per kind of answer, to catch what you can handle.

namespace PrepaidMessaging;

class MessagingError extends \RuntimeException
{
    /** @var int */
    public $status;
    /** @var string the service's code: VALIDATION_ERROR, INSUFFICIENT_BALANCE, ... */
    public $errorCode;
    /** @var string|null names the request in the service's log */
    public $requestId;
    /** @var array the whole error body (some codes add fields) */
    public $body;
    /** @var int|null seconds, from Retry-After */
    public $retryAfter;

    public function __construct(string $message, int $status, string $errorCode, ?string $requestId, array $body = [], ?int $retryAfter = null)
    {
        parent::__construct($message, $status);
        $this->status = $status;
        $this->errorCode = $errorCode;
        $this->requestId = $requestId;
        $this->body = $body;
        $this->retryAfter = $retryAfter;
    }

    /** The service's code (Exception::getCode() is the HTTP status). */
    public function errorCode(): string
    {
        return $this->errorCode;
    }
}

/** 400 or 422: the request is malformed or a value is not acceptable (the message names the field). */
class ValidationError extends MessagingError {}
/** 401: the API key is missing, unknown or deactivated. */
class AuthenticationError extends MessagingError {}
/** 402: the balance cannot pay (INSUFFICIENT_BALANCE) or the key's daily spend cap is reached. */
class BalanceError extends MessagingError {}
/** 404: no such thing in this account. */
class NotFoundError extends MessagingError {}
/** 409: a duplicate, or the same Idempotency-Key still in flight (repeat later). */
class ConflictError extends MessagingError {}
/** 429: slow down; retryAfter in seconds when the service said. */
class RateLimitError extends MessagingError {}
/** 502: the messaging provider refused or failed (nothing charged). */
class ProviderError extends MessagingError {}
/** Any other status (500, 503, ...), or no answer at all (status 0). */
class ServiceError extends MessagingError {}

/** A delivery whose signature, id or timestamp does not check out: answer 4xx, do not act on it. */
class WebhookVerificationError extends \RuntimeException {}
